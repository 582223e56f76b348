package agent_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/harness-go/harness/internal/testkit/fakellm"
	"github.com/harness-go/harness/plugins/agent"
	"github.com/harness-go/harness/plugins/tools"
)

func TestTextAnswer(t *testing.T) {
	t.Parallel()
	x := newFixture(t, func(c *agent.Config) { c.Model = "m1"; c.System = "Be brief." }, fakellm.Say("Hello <there> & 👋"))
	var conv agent.Conversation
	o := x.turn(&conv, "hi")
	if o.err != nil {
		t.Fatal(o.err)
	}
	if got := o.text(); got != "Hello <there> & 👋" {
		t.Fatalf("text %q", got)
	}
	if d := o.of(agent.EventDone); len(d) != 1 || d[0].FinishReason != "stop" {
		t.Fatalf("done events %+v", d)
	}
	req := x.srv.Wait(1, waitFor)
	if req.Model != "m1" || !req.Stream || !req.IncludeUsage {
		t.Errorf("request: model %q stream %v include_usage %v", req.Model, req.Stream, req.IncludeUsage)
	}
	if req.Tools != nil {
		t.Errorf("an empty registry sent tools %s", req.Tools)
	}
	if len(req.Messages) != 2 || req.Messages[0].Role != "system" || req.Messages[0].Content != "Be brief." || req.Messages[1].Content != "hi" {
		t.Errorf("messages %+v", req.Messages)
	}
	if req.Auth() != "" {
		t.Errorf("a keyless agent sent Authorization %q", req.Auth())
	}
	msgs := conv.Messages()
	if len(msgs) != 2 || msgs[1].Role != agent.RoleAssistant || msgs[1].Content != "Hello <there> & 👋" {
		t.Fatalf("conversation %+v", msgs)
	}
}

// A tool loop: the model calls a tool, gets its result, answers. The tools
// array reaches the server as the registry's bytes, identical at each step.
func TestToolLoop(t *testing.T) {
	t.Parallel()
	x := newFixture(t, nil,
		fakellm.Call(fakellm.ToolCallSpec{ID: "c1", Name: "add", Arguments: `{"a": 6, "b": 7}`}),
		fakellm.Say("13"))
	rec := &recorder{}
	x.register(
		tools.Tool{Name: "add", Description: "Add <a> & <b>.", Parameters: json.RawMessage(`{"type":"object",  "properties":{"a":{"type":"number"},"b":{"type":"number"}}}`), Execute: rec.exec},
		tools.Tool{Name: "other", Execute: says("x")},
	)
	var conv agent.Conversation
	o := x.turn(&conv, "add 6 and 7")
	if o.err != nil {
		t.Fatal(o.err)
	}
	if got := rec.got(); !slices.Equal(got, []string{`{"a": 6, "b": 7}`}) {
		t.Fatalf("the tool got %q", got)
	}
	calls, results := o.of(agent.EventToolCall), o.of(agent.EventToolResult)
	if len(calls) != 1 || calls[0].ID != "c1" || calls[0].Name != "add" || string(calls[0].Arguments) != `{"a": 6, "b": 7}` {
		t.Fatalf("tool_call events %+v", calls)
	}
	if len(results) != 1 || results[0].Text != `got {"a": 6, "b": 7}` || results[0].IsError {
		t.Fatalf("tool_result events %+v", results)
	}
	r1, r2 := x.srv.Wait(1, waitFor), x.srv.Wait(2, waitFor)
	want := x.reg.ModelJSON()
	if !bytes.Equal(r1.Tools, want) || !bytes.Equal(r2.Tools, want) {
		t.Fatalf("tools not byte for byte:\nregistry %s\nstep 1   %s\nstep 2   %s", want, r1.Tools, r2.Tools)
	}
	if !bytes.Contains(r1.Body, []byte(`"tools":`+string(want))) {
		t.Fatalf("the body does not hold the registry's bytes verbatim:\n%s", r1.Body)
	}
	m := r2.Messages
	if len(m) != 3 || m[1].Role != "assistant" || len(m[1].ToolCalls) != 1 || m[1].ToolCalls[0].ID != "c1" ||
		m[1].ToolCalls[0].Function.Arguments != `{"a": 6, "b": 7}` || m[2].Role != "tool" || m[2].ToolCallID != "c1" || m[2].Content != `got {"a": 6, "b": 7}` {
		t.Fatalf("second request's messages %+v", m)
	}
	if o.usage.Steps != 2 || o.usage.ToolCalls != 1 || o.usage.PromptTokens != 20 || o.usage.CompletionTokens != 10 {
		t.Fatalf("usage %+v", o.usage)
	}
}

// Deltas cut at random byte positions — inside tool-argument JSON, inside
// multi-byte characters — and the stream written in random pieces: the
// text arrives whole, each event whole characters, the tools get their
// arguments exactly.
func TestDeltasSplitAnywhere(t *testing.T) {
	t.Parallel()
	const (
		reasoning = "Let me think — 6×7 is… ✓"
		text      = "héllo wörld 😀 — 結果は 42 ✓"
		argsA     = `{"text":"naïve 😀 café","n":1}`
		argsB     = `{"text":"日本語","list":[1,2,{"k":"v"}]}`
	)
	for seed := range uint64(40) {
		t.Run(fmt.Sprint("seed ", seed), func(t *testing.T) {
			t.Parallel()
			rng := rand.New(rand.NewPCG(seed, 7))
			x := newFixture(t, func(c *agent.Config) { c.Thinking = agent.ThinkingOn },
				fakellm.Reply{Pieces: rng, Chunks: slices.Concat(
					fakellm.ReasoningSplit(rng, reasoning),
					fakellm.CallsSplit(rng,
						fakellm.ToolCallSpec{ID: "a", Name: "ta", Arguments: argsA},
						fakellm.ToolCallSpec{ID: "b", Name: "tb", Arguments: argsB}),
					fakellm.Finish("tool_calls"), fakellm.Usage(3, 4, 1))},
				fakellm.Reply{Pieces: rng, Chunks: slices.Concat(fakellm.TextSplit(rng, text), fakellm.Finish("stop"), fakellm.Usage(5, 6, 2))})
			ra, rb := &recorder{}, &recorder{}
			x.register(tools.Tool{Name: "ta", Execute: ra.exec}, tools.Tool{Name: "tb", Execute: rb.exec})
			var conv agent.Conversation
			o := x.turn(&conv, "go")
			if o.err != nil {
				t.Fatal(o.err)
			}
			if got := o.text(); got != text {
				t.Fatalf("text %q, want %q", got, text)
			}
			if got := o.joined(agent.EventReasoning); got != reasoning {
				t.Fatalf("reasoning %q, want %q", got, reasoning)
			}
			for _, e := range o.events {
				if (e.Type == agent.EventText || e.Type == agent.EventReasoning) && !utf8.ValidString(e.Delta) {
					t.Fatalf("a %s event cut a character: %q", e.Type, e.Delta)
				}
			}
			if a, b := ra.got(), rb.got(); !slices.Equal(a, []string{argsA}) || !slices.Equal(b, []string{argsB}) {
				t.Fatalf("arguments: ta got %q, tb got %q", a, b)
			}
			second := x.srv.Wait(2, waitFor)
			am := second.Messages[1]
			if len(am.ToolCalls) != 2 || am.ToolCalls[0].ID != "a" || am.ToolCalls[1].ID != "b" || am.Reasoning == nil || *am.Reasoning != reasoning {
				t.Fatalf("assistant message sent back: %+v", am)
			}
			if o.usage.CacheHitTokens != 3 || o.usage.PromptTokens != 8 {
				t.Fatalf("usage %+v", o.usage)
			}
		})
	}
}

// Parallel calls run concurrently, at most maxParallelToolCalls at once;
// their results go back in the order of the calls.
func TestParallelCallsAreBounded(t *testing.T) {
	t.Parallel()
	var specs []fakellm.ToolCallSpec
	for i := range 6 {
		specs = append(specs, fakellm.ToolCallSpec{ID: fmt.Sprint("c", i), Name: "work", Arguments: fmt.Sprintf(`{"i":%d}`, i)})
	}
	x := newFixture(t, func(c *agent.Config) { c.MaxParallelToolCalls = 2 }, fakellm.Call(specs...), fakellm.Say("done"))
	var running, peak atomic.Int32
	bothIn := make(chan struct{})
	var once sync.Once
	x.register(tools.Tool{Name: "work", Execute: func(ctx context.Context, args json.RawMessage) (tools.Result, error) {
		n := running.Add(1)
		defer running.Add(-1)
		for {
			p := peak.Load()
			if n <= p || peak.CompareAndSwap(p, n) {
				break
			}
		}
		if n == 2 {
			once.Do(func() { close(bothIn) })
		}
		<-bothIn // the first call waits until a second one runs beside it
		return tools.Result{Text: "did " + string(args)}, nil
	}})
	var conv agent.Conversation
	o := x.turn(&conv, "work")
	if o.err != nil {
		t.Fatal(o.err)
	}
	if p := peak.Load(); p != 2 {
		t.Fatalf("peak concurrency %d, want 2", p)
	}
	// Every call is announced before the first result.
	var order []string
	for _, e := range o.events {
		if e.Type == agent.EventToolCall || e.Type == agent.EventToolResult {
			order = append(order, e.Type)
		}
	}
	if want := slices.Concat(slices.Repeat([]string{agent.EventToolCall}, 6), slices.Repeat([]string{agent.EventToolResult}, 6)); !slices.Equal(order, want) {
		t.Fatalf("event order %v", order)
	}
	m := x.srv.Wait(2, waitFor).Messages
	for i := range 6 {
		tm := m[2+i]
		if tm.ToolCallID != fmt.Sprint("c", i) || tm.Content != fmt.Sprintf(`did {"i":%d}`, i) {
			t.Fatalf("tool message %d: %+v", i, tm)
		}
	}
}

// DeepSeek's thinking mode refuses a tool-call history without
// reasoning_content (a 400): the agent sends it back on every assistant
// message with tool calls, for the whole conversation, "" when empty.
func TestReasoningSentBack(t *testing.T) {
	t.Parallel()
	t.Run("sent back across turns", func(t *testing.T) {
		t.Parallel()
		x := newFixture(t, func(c *agent.Config) { c.Thinking = agent.ThinkingHigh },
			fakellm.Stream(fakellm.Reasoning("I need the tool."), []string{fakellm.CallDelta(0, "c1", "t", `{}`)}, fakellm.Finish("tool_calls")),
			fakellm.Stream(fakellm.Reasoning("Done."), fakellm.Text("first"), fakellm.Finish("stop")),
			// Second turn: a call with no reasoning at all.
			fakellm.Call(fakellm.ToolCallSpec{ID: "c2", Name: "t", Arguments: `{}`}),
			fakellm.Say("second"))
		x.srv.RequireReasoning()
		x.register(tools.Tool{Name: "t", Execute: says("ok")})
		var conv agent.Conversation
		for _, prompt := range []string{"one", "two"} {
			if o := x.turn(&conv, prompt); o.err != nil {
				t.Fatalf("turn %q: %v", prompt, o.err)
			}
		}
		r := x.srv.Wait(4, waitFor)
		var got []string
		for _, m := range r.Messages {
			if m.Role == "assistant" && len(m.ToolCalls) > 0 {
				got = append(got, *m.Reasoning)
			}
			if m.Role == "assistant" && len(m.ToolCalls) == 0 && m.Reasoning != nil {
				t.Errorf("reasoning sent back on an answer without tool calls: %+v", m)
			}
		}
		if !slices.Equal(got, []string{"I need the tool.", ""}) {
			t.Fatalf("reasoning_content sent back: %q", got)
		}
		if req := x.srv.Wait(1, waitFor); string(req.Thinking) != `{"type":"enabled"}` || req.ReasoningEffort != "high" {
			t.Fatalf("thinking %s, effort %q", req.Thinking, req.ReasoningEffort)
		}
	})
	t.Run("a server that requires it and did not get it answers 400", func(t *testing.T) {
		t.Parallel()
		// Not DeepSeek's host and no thinking asked: an empty reasoning is
		// not sent (other servers may refuse the field). A server that
		// wants it then refuses, and the turn says so.
		x := newFixture(t, nil, fakellm.Call(fakellm.ToolCallSpec{ID: "c1", Name: "t", Arguments: `{}`}))
		x.srv.RequireReasoning()
		x.register(tools.Tool{Name: "t", Execute: says("ok")})
		var conv agent.Conversation
		o := x.turn(&conv, "go")
		if !errors.Is(o.err, agent.ErrRefused) || !strings.Contains(o.err.Error(), "HTTP 400") || !strings.Contains(o.err.Error(), "reasoning_content") {
			t.Fatalf("err = %v, want a refused request naming reasoning_content", o.err)
		}
		if n := len(x.srv.Requests()); n != 2 {
			t.Fatalf("%d requests, want 2 (a 400 is not retried)", n)
		}
	})
}

func TestRetries(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name     string
		retries  int
		script   []fakellm.Reply
		requests int
		err      error  // nil: the turn answers "ok"
		says     string // in the error
	}{
		{"429 then success", 5, []fakellm.Reply{fakellm.Status(429, "Rate limit reached"), fakellm.Say("ok")}, 2, nil, ""},
		{"500s until the retries run out", 2, []fakellm.Reply{fakellm.Status(500, "boom"), fakellm.Status(502, "boom"), fakellm.Status(503, "Server Overloaded")}, 3, agent.ErrUnavailable, "HTTP 503: Server Overloaded"},
		{"no retries", 0, []fakellm.Reply{fakellm.Status(500, "boom")}, 1, agent.ErrUnavailable, "HTTP 500"},
		{"connection cut before the answer", 5, []fakellm.Reply{{Cut: true}, fakellm.Say("ok")}, 2, nil, ""},
		{"stream cut after a tool-call delta (nothing shown)", 5, []fakellm.Reply{{Cut: true, Chunks: []string{fakellm.CallDelta(0, "c", "t", `{"a`)}}, fakellm.Say("ok")}, 2, nil, ""},
		{"stream ends without a finish reason", 5, []fakellm.Reply{{Chunks: fakellm.Usage(1, 1, 0)}, fakellm.Say("ok")}, 2, nil, ""},
		{"insufficient_system_resource before any text", 5, []fakellm.Reply{fakellm.Stream(fakellm.Finish("insufficient_system_resource")), fakellm.Say("ok")}, 2, nil, ""},
		{"insufficient_system_resource after text", 5, []fakellm.Reply{fakellm.Stream(fakellm.Text("partial"), fakellm.Finish("insufficient_system_resource"))}, 1, agent.ErrUnavailable, "insufficient_system_resource"},
		{"stream cut after text", 5, []fakellm.Reply{{Cut: true, Chunks: fakellm.Text("partial")}}, 1, agent.ErrUnavailable, "reset"},
		{"in-stream error, retryable", 5, []fakellm.Reply{fakellm.Stream(fakellm.StreamError("insufficient_system_resource", "busy")), fakellm.Say("ok")}, 2, nil, ""},
		{"400 is not retried", 5, []fakellm.Reply{fakellm.Status(400, "Invalid Format")}, 1, agent.ErrRefused, "HTTP 400: Invalid Format"},
		{"402 is not retried", 5, []fakellm.Reply{fakellm.Status(402, "Insufficient Balance")}, 1, agent.ErrRefused, "HTTP 402: Insufficient Balance"},
		// A proxy's page, not OpenAI's JSON: the status decides, the text is
		// the message.
		{"an HTML 502 is retried", 1, []fakellm.Reply{{Status: 502, Body: "<html><body>502 Bad Gateway</body></html>"}, fakellm.Say("ok")}, 2, nil, ""},
		{"an HTML 502 says so", 0, []fakellm.Reply{{Status: 502, Body: "<html><body>502 Bad Gateway</body></html>"}}, 1, agent.ErrUnavailable, "HTTP 502: <html><body>502 Bad Gateway</body></html>"},
		{"an empty 503", 0, []fakellm.Reply{{Status: 503}}, 1, agent.ErrUnavailable, "(HTTP 503)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			x := newFixture(t, func(c *agent.Config) { c.Retries = tc.retries }, tc.script...)
			var conv agent.Conversation
			o := x.turn(&conv, "go")
			if n := len(x.srv.Requests()); n != tc.requests {
				t.Errorf("%d requests, want %d", n, tc.requests)
			}
			if tc.err == nil {
				if o.err != nil || o.text() != "ok" {
					t.Fatalf("err %v, text %q", o.err, o.text())
				}
				if r := o.of(agent.EventRetry); len(r) != tc.requests-1 {
					t.Fatalf("%d retry events, want %d", len(r), tc.requests-1)
				}
				return
			}
			if !errors.Is(o.err, tc.err) || !strings.Contains(o.err.Error(), tc.says) || !strings.Contains(o.err.Error(), `entry "model"`) {
				t.Fatalf("err = %v, want %v saying %q and naming the entry", o.err, tc.err, tc.says)
			}
		})
	}
}

// A 401 says the key was refused, naming the entry, never printing the
// key, even when the server echoes it.
func TestKeyRefused(t *testing.T) {
	t.Parallel()
	const key = "sk-test-9f8e7d6c5b4a"
	for _, tc := range []struct {
		name  string
		reply fakellm.Reply
	}{
		{"401", fakellm.Status(401, "Authentication Fails, your api key: "+key+" is invalid")},
		{"403", fakellm.Status(403, "forbidden for "+key)},
		{"in the stream", fakellm.Stream(fakellm.StreamError("invalid_api_key", "Incorrect API key provided: "+key))},
		// The message is cut at 300 bytes, in the middle of the key: the
		// key is redacted before the cut, or its first half would show.
		{"401, cut in the key", fakellm.Status(401, strings.Repeat("x", 290)+key)},
		{"in the stream, cut in the key", fakellm.Stream(fakellm.StreamError("invalid_api_key", strings.Repeat("x", 292)+key))},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			x := newFixture(t, func(c *agent.Config) { c.APIKey = key }, tc.reply)
			var conv agent.Conversation
			o := x.turn(&conv, "hi")
			if !errors.Is(o.err, agent.ErrKeyRefused) || !strings.Contains(o.err.Error(), `entry "model": the API key was refused`) {
				t.Fatalf("err = %v", o.err)
			}
			if strings.Contains(o.err.Error(), key[:10]) {
				t.Fatalf("the error prints the key: %v", o.err)
			}
			for _, e := range o.of(agent.EventError) {
				if strings.Contains(e.Message, key[:10]) {
					t.Fatalf("the error event prints the key: %s", e.Message)
				}
			}
			if got := x.srv.Wait(1, waitFor).Auth(); got != "Bearer "+key {
				t.Fatalf("Authorization %q", got)
			}
			if n := len(x.srv.Requests()); n != 1 {
				t.Fatalf("%d requests: a refused key is not retried", n)
			}
		})
	}
	t.Run("keyless against a server that wants one", func(t *testing.T) {
		t.Parallel()
		x := newFixture(t, nil, fakellm.Status(401, "no key"))
		var conv agent.Conversation
		o := x.turn(&conv, "hi")
		if !errors.Is(o.err, agent.ErrKeyRefused) || !strings.Contains(o.err.Error(), "asks for an API key and the entry has no apiKey (HTTP 401: no key)") {
			t.Fatalf("err = %v", o.err)
		}
	})
}

// DeepSeek's API without a key: the turn is refused before any request.
func TestNoKeyForDeepSeek(t *testing.T) {
	t.Parallel()
	x := newFixture(t, func(c *agent.Config) { c.BaseURL = agent.DefaultBaseURL })
	var conv agent.Conversation
	o := x.turn(&conv, "hi")
	if !errors.Is(o.err, agent.ErrNoKey) || !agent.IsKeyMissing(o.err) {
		t.Fatalf("err = %v", o.err)
	}
	if conv.Len() != 0 {
		t.Fatalf("the refused turn left %d messages", conv.Len())
	}
	if info := x.agent().Info(); info.HasKey || !info.NeedsKey || !strings.Contains(info.Note, "no API key") {
		t.Fatalf("info %+v", info)
	}
}

// A stream that falls silent past streamIdleTimeoutMs is an error, and the
// server sees the request go away.
func TestStreamIdleTimeout(t *testing.T) {
	t.Parallel()
	x := newFixture(t, func(c *agent.Config) { c.StreamIdleTimeoutMs = 100 }, fakellm.Reply{Chunks: fakellm.Text("thinking…"), Stall: true})
	var conv agent.Conversation
	o := x.turn(&conv, "hi")
	if !errors.Is(o.err, agent.ErrIdle) || !strings.Contains(o.err.Error(), "streamIdleTimeoutMs") {
		t.Fatalf("err = %v", o.err)
	}
	req := x.srv.Wait(1, waitFor)
	<-req.Done()
	if !req.Cancelled() {
		t.Fatal("the server did not see the stream end")
	}
	// What the user saw is kept.
	if m := conv.Messages(); len(m) != 2 || m[1].Content != "thinking…" {
		t.Fatalf("conversation %+v", m)
	}
}

func TestUsage(t *testing.T) {
	t.Parallel()
	x := newFixture(t, nil,
		fakellm.Stream([]string{fakellm.CallDelta(0, "c", "t", "{}")}, fakellm.Finish("tool_calls"), fakellm.Usage(1000, 20, 900)),
		fakellm.Stream(fakellm.Text("ok"), fakellm.Finish("stop"), fakellm.Usage(1100, 30, 1000)),
		fakellm.Stream(fakellm.Text("again"), fakellm.Finish("stop"), fakellm.Usage(1200, 5, 1100)))
	x.register(tools.Tool{Name: "t", Execute: says("r")})
	var conv agent.Conversation
	o := x.turn(&conv, "one")
	want := agent.Usage{PromptTokens: 2100, CompletionTokens: 50, CacheHitTokens: 1900, Steps: 2, ToolCalls: 1}
	got := o.usage
	got.Duration = 0
	if got != want {
		t.Fatalf("usage %+v, want %+v", got, want)
	}
	if u := o.of(agent.EventUsage); len(u) != 1 || u[0].Usage != o.usage {
		t.Fatalf("usage events %+v", u)
	}
	j, _ := o.of(agent.EventUsage)[0].MarshalJSON()
	if !strings.HasPrefix(string(j), `{"type":"usage","promptTokens":2100,"completionTokens":50,"cacheHitTokens":1900,"steps":2,"toolCalls":1,"ms":`) {
		t.Fatalf("usage JSON %s", j)
	}
	x.turn(&conv, "two")
	if total := conv.Usage(); total.PromptTokens != 3300 || total.Steps != 3 || conv.Turns() != 2 {
		t.Fatalf("conversation usage %+v, turns %d", total, conv.Turns())
	}
}

// With toolSearch off, more tools than maxTools is an error naming the
// count and the limit (what to change is the front's advice); the filters bring the list under the limit. (With
// the default, auto, tool search takes over: toolsearch_test.go.)
func TestMaxTools(t *testing.T) {
	t.Parallel()
	var many []tools.Tool
	for i := range 130 {
		many = append(many, tools.Tool{Name: fmt.Sprintf("t%03d", i), Execute: says("x")})
	}
	t.Run("too many", func(t *testing.T) {
		t.Parallel()
		x := newFixture(t, func(c *agent.Config) { c.ToolSearch = agent.ToolSearchOff })
		x.register(many...)
		var conv agent.Conversation
		o := x.turn(&conv, "hi")
		if !errors.Is(o.err, agent.ErrTooManyTools) || !strings.Contains(o.err.Error(), "130 tools") || !strings.Contains(o.err.Error(), "at most 128") {
			t.Fatalf("err = %v", o.err)
		}
		if n := len(x.srv.Requests()); n != 0 {
			t.Fatalf("%d requests sent", n)
		}
	})
	t.Run("filtered under the limit", func(t *testing.T) {
		t.Parallel()
		x := newFixture(t, func(c *agent.Config) { c.DisabledTools = []string{"t12?"} }, fakellm.Call(fakellm.ToolCallSpec{ID: "c", Name: "t125", Arguments: "{}"}), fakellm.Say("ok"))
		x.register(many...)
		var conv agent.Conversation
		o := x.turn(&conv, "hi")
		if o.err != nil {
			t.Fatal(o.err)
		}
		req := x.srv.Wait(1, waitFor)
		if len(req.ToolNames) != 120 || slices.Contains(req.ToolNames, "t125") {
			t.Fatalf("%d tools sent: %v", len(req.ToolNames), req.ToolNames)
		}
		want, _ := x.reg.ModelSubset(func(n string) bool { return !strings.HasPrefix(n, "t12") })
		if !bytes.Equal(req.Tools, want) {
			t.Fatal("the filtered list is not the registry's bytes")
		}
		// The model called a hidden tool: unknown to it.
		if r := o.of(agent.EventToolResult); len(r) != 1 || r[0].Text != `Error: unknown tool "t125"` || !r[0].IsError {
			t.Fatalf("results %+v", r)
		}
		if x.agent().Info().Tools != 120 {
			t.Fatalf("info tools %d", x.agent().Info().Tools)
		}
	})
	t.Run("lower maxTools", func(t *testing.T) {
		t.Parallel()
		x := newFixture(t, func(c *agent.Config) { c.MaxTools = 2; c.ToolSearch = agent.ToolSearchOff })
		x.register(many[:3]...)
		var conv agent.Conversation
		if o := x.turn(&conv, "hi"); !errors.Is(o.err, agent.ErrTooManyTools) || !strings.Contains(o.err.Error(), "3 tools") {
			t.Fatalf("err = %v", o.err)
		}
	})
}

func TestMaxSteps(t *testing.T) {
	t.Parallel()
	x := newFixture(t, func(c *agent.Config) { c.MaxSteps = 3 })
	x.srv.Func(func(r *fakellm.Request) fakellm.Reply {
		return fakellm.Call(fakellm.ToolCallSpec{ID: fmt.Sprint("c", r.N), Name: "t", Arguments: "{}"})
	})
	x.register(tools.Tool{Name: "t", Execute: says("again")})
	var conv agent.Conversation
	o := x.turn(&conv, "loop")
	if !errors.Is(o.err, agent.ErrMaxSteps) || !strings.Contains(o.err.Error(), "3 requests") {
		t.Fatalf("err = %v", o.err)
	}
	if n := len(x.srv.Requests()); n != 3 {
		t.Fatalf("%d requests, want 3", n)
	}
}

// Arguments that are not JSON, an unknown tool, arguments that are not an
// object: results the model can recover from, never a crash.
func TestBadCalls(t *testing.T) {
	t.Parallel()
	x := newFixture(t, nil,
		fakellm.Call(
			fakellm.ToolCallSpec{ID: "a", Name: "echo", Arguments: `{"x": tru`},
			fakellm.ToolCallSpec{ID: "b", Name: "nope", Arguments: `{}`},
			fakellm.ToolCallSpec{ID: "c", Name: "echo", Arguments: `[1,2]`},
			fakellm.ToolCallSpec{ID: "d", Name: "echo", Arguments: ``},
			fakellm.ToolCallSpec{ID: "e", Name: "fails", Arguments: `{}`}),
		fakellm.Say("recovered"))
	rec := &recorder{}
	x.register(tools.Tool{Name: "echo", Execute: rec.exec},
		tools.Tool{Name: "fails", Execute: func(context.Context, json.RawMessage) (tools.Result, error) {
			return tools.Result{Text: "disk full", IsError: true}, nil
		}})
	var conv agent.Conversation
	o := x.turn(&conv, "go")
	if o.err != nil || o.text() != "recovered" {
		t.Fatalf("err %v text %q", o.err, o.text())
	}
	res := map[string]agent.Event{}
	for _, e := range o.of(agent.EventToolResult) {
		res[e.ID] = e
	}
	for id, want := range map[string]string{"a": "Error: the arguments are not valid JSON", "b": `Error: unknown tool "nope"`, "c": "got {}", "d": "got {}", "e": "Error: disk full"} {
		if !strings.HasPrefix(res[id].Text, want) {
			t.Errorf("call %s: %q, want %q…", id, res[id].Text, want)
		}
	}
	if got := rec.got(); len(got) != 2 {
		t.Errorf("echo ran with %q, want twice with {}", got)
	}
}

func TestToolResultBudget(t *testing.T) {
	t.Parallel()
	x := newFixture(t, func(c *agent.Config) { c.ToolResultBytes = 10 }, fakellm.Call(fakellm.ToolCallSpec{ID: "c", Name: "big", Arguments: "{}"}), fakellm.Say("ok"))
	x.register(tools.Tool{Name: "big", Execute: says("123456789é0123456789")})
	var conv agent.Conversation
	if o := x.turn(&conv, "go"); o.err != nil {
		t.Fatal(o.err)
	}
	got := x.srv.Wait(2, waitFor).Messages[2].Content
	if want := "123456789\n[the agent cut this result to 9 of its 21 bytes (toolResultBytes)]"; got != want {
		t.Fatalf("result %q, want %q", got, want)
	}
}

// Cancelling the turn stops the stream (the server sees it) and the step's
// tool calls (they see their context end); the conversation keeps what
// completed.
func TestCancel(t *testing.T) {
	t.Parallel()
	t.Run("during the stream", func(t *testing.T) {
		t.Parallel()
		x := newFixture(t, nil, fakellm.Reply{Chunks: fakellm.Text("Once upon"), Stall: true})
		ctx, cancel := context.WithCancel(context.Background())
		// Cancel once the text is out: the server stalls after it.
		x.onEvent = func(e agent.Event) {
			if e.Type == agent.EventText {
				cancel()
			}
		}
		var conv agent.Conversation
		o := x.turnCtx(ctx, &conv, "tell a story")
		if !errors.Is(o.err, agent.ErrCancelled) {
			t.Fatalf("err = %v", o.err)
		}
		req := x.srv.Wait(1, waitFor)
		<-req.Done()
		if !req.Cancelled() {
			t.Fatal("the server did not see the cancellation")
		}
		if m := conv.Messages(); len(m) != 2 || m[1].Content != "Once upon" {
			t.Fatalf("conversation %+v", m)
		}
	})
	t.Run("during the tool calls", func(t *testing.T) {
		t.Parallel()
		x := newFixture(t, nil, fakellm.Call(
			fakellm.ToolCallSpec{ID: "fast", Name: "fast", Arguments: "{}"},
			fakellm.ToolCallSpec{ID: "slow", Name: "slow", Arguments: "{}"}))
		started := make(chan struct{})
		sawCancel := make(chan struct{})
		x.register(tools.Tool{Name: "fast", Execute: says("quick")},
			tools.Tool{Name: "slow", Execute: func(ctx context.Context, _ json.RawMessage) (tools.Result, error) {
				close(started)
				<-ctx.Done()
				close(sawCancel)
				return tools.Result{}, ctx.Err()
			}})
		ctx, cancel := context.WithCancel(context.Background())
		var conv agent.Conversation
		done := make(chan outcome)
		go func() { done <- x.turnCtx(ctx, &conv, "go") }()
		<-started
		cancel()
		o := <-done
		<-sawCancel
		if !errors.Is(o.err, agent.ErrCancelled) {
			t.Fatalf("err = %v", o.err)
		}
		m := conv.Messages()
		if len(m) != 4 || m[3].ToolCallID != "slow" || m[3].Content != "Error: cancelled" {
			t.Fatalf("conversation %+v", m)
		}
		if m[2].ToolCallID != "fast" || m[2].Content != "quick" && m[2].Content != "Error: cancelled" {
			t.Fatalf("the fast call: %+v", m[2])
		}
	})
	t.Run("the entry goes away", func(t *testing.T) {
		t.Parallel()
		life, stop := context.WithCancel(context.Background())
		x := newFixture(t, nil, fakellm.Reply{Chunks: fakellm.Text("Once"), Stall: true})
		x.life = life
		x.onEvent = func(e agent.Event) {
			if e.Type == agent.EventText {
				stop()
			}
		}
		var conv agent.Conversation
		if o := x.turn(&conv, "go"); !errors.Is(o.err, agent.ErrStopped) {
			t.Fatalf("err = %v", o.err)
		}
	})
}

// The request carries what the configuration asks for, and nothing it does
// not.
func TestRequestOptions(t *testing.T) {
	t.Parallel()
	temp := 0.25
	for _, tc := range []struct {
		name string
		edit func(*agent.Config)
		has  []string
		not  []string
	}{
		{"defaults", nil, []string{`"model":"deepseek-v4-flash"`, `"stream_options":{"include_usage":true}`}, []string{"thinking", "max_tokens", "temperature", "reasoning_effort", `"role":"system"`}},
		{"thinking off", func(c *agent.Config) { c.Thinking = agent.ThinkingOff }, []string{`"thinking":{"type":"disabled"}`}, []string{"reasoning_effort"}},
		{"thinking on", func(c *agent.Config) { c.Thinking = agent.ThinkingOn }, []string{`"thinking":{"type":"enabled"}`}, []string{"reasoning_effort"}},
		{"thinking max", func(c *agent.Config) { c.Thinking = agent.ThinkingMax }, []string{`"thinking":{"type":"enabled"}`, `"reasoning_effort":"max"`}, nil},
		{"limits", func(c *agent.Config) { c.MaxTokens = 512; c.Temperature = &temp }, []string{`"max_tokens":512`, `"temperature":0.25`}, nil},
		{"system", func(c *agent.Config) { c.System = "You are <terse> & exact." }, []string{`{"role":"system","content":"You are <terse> & exact."}`}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			x := newFixture(t, tc.edit, fakellm.Say("ok"))
			var conv agent.Conversation
			if o := x.turn(&conv, "hi"); o.err != nil {
				t.Fatal(o.err)
			}
			body := string(x.srv.Wait(1, waitFor).Body)
			for _, s := range tc.has {
				if !strings.Contains(body, s) {
					t.Errorf("the body lacks %s:\n%s", s, body)
				}
			}
			for _, s := range tc.not {
				if strings.Contains(body, s) {
					t.Errorf("the body has %s:\n%s", s, body)
				}
			}
		})
	}
}

func TestEventJSON(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		e    agent.Event
		want string
	}{
		{agent.Event{Type: agent.EventText, Delta: "a<b>"}, `{"type":"text","delta":"a<b>"}`},
		{agent.Event{Type: agent.EventReasoning, Delta: "hm"}, `{"type":"reasoning","delta":"hm"}`},
		{agent.Event{Type: agent.EventToolCall, ID: "c", Name: "n", Arguments: json.RawMessage(`{"x": 1}`)}, `{"type":"tool_call","id":"c","name":"n","arguments":{"x": 1}}`},
		{agent.Event{Type: agent.EventToolResult, ID: "c", Name: "n", Text: "42", Duration: 1500000}, `{"type":"tool_result","id":"c","name":"n","text":"42","isError":false,"ms":1}`},
		{agent.Event{Type: agent.EventDone, FinishReason: "stop"}, `{"type":"done","finishReason":"stop"}`},
		{agent.Event{Type: agent.EventError, Message: "boom"}, `{"type":"error","message":"boom"}`},
	} {
		b, err := tc.e.MarshalJSON()
		if err != nil || string(b) != tc.want {
			t.Errorf("%s: %s (%v), want %s", tc.e.Type, b, err, tc.want)
		}
	}
}

// The API key never goes to another origin: an endpoint that redirects
// elsewhere gets a refusal naming where, and the other origin sees nothing;
// a redirect within the endpoint's origin is followed.
func TestRedirectToAnotherOriginIsRefused(t *testing.T) {
	t.Parallel()
	const key = "sk-test-redirect-0123456789"
	var leaked atomic.Int32
	elsewhere := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "" {
			leaked.Add(1)
		}
		http.Error(w, "not here", http.StatusNotFound)
	}))
	t.Cleanup(elsewhere.Close)
	x := newFixture(t, func(c *agent.Config) { c.APIKey = key }, fakellm.Say("hello"))
	front := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, elsewhere.URL+r.URL.Path, http.StatusTemporaryRedirect)
	}))
	t.Cleanup(front.Close)
	x.cfg.BaseURL = front.URL
	var conv agent.Conversation
	o := x.turn(&conv, "hi")
	u, _ := url.Parse(elsewhere.URL)
	if o.err == nil || !strings.Contains(o.err.Error(), "redirected to another origin, http://"+u.Host) || strings.Contains(o.err.Error(), key) {
		t.Fatalf("err = %v", o.err)
	}
	if n := leaked.Load(); n > 0 {
		t.Fatalf("%d request(s) carried the key to another origin", n)
	}
}

// One model response may hold at most MaxReplyCallBytes of tool calls (all
// its calls together), MaxReplyTextBytes of text and reasoning together,
// and MaxReplyToolCalls calls: a stream that brings more ends the turn at
// once with ErrTooLarge naming the bound, is not sent again, and runs none
// of its calls. (Without the bounds each of these streams would be
// assembled whole, its calls run, and the turn answered.)
func TestReplyBounds(t *testing.T) {
	t.Parallel()
	mib := strings.Repeat("x", 1<<20)
	// Two calls of 9 MiB each, their fragments interleaved: each is under
	// the bound, together they are not.
	var calls []string
	calls = append(calls, fakellm.CallDelta(0, "c0", "t", `{"a":"`), fakellm.CallDelta(1, "c1", "t", `{"a":"`))
	for range 9 {
		calls = append(calls, fakellm.CallDelta(0, "", "", mib), fakellm.CallDelta(1, "", "", mib))
	}
	calls = append(calls, fakellm.CallDelta(0, "", "", `"}`), fakellm.CallDelta(1, "", "", `"}`))
	// 9 MiB of reasoning, then 9 MiB of text.
	var text []string
	for range 9 {
		text = append(text, fakellm.Reasoning(mib)...)
	}
	for range 9 {
		text = append(text, fakellm.Text(mib)...)
	}
	var many []string
	for i := range agent.MaxReplyToolCalls + 1 {
		many = append(many, fakellm.CallDelta(i, fmt.Sprint("c", i), "t", `{}`))
	}
	for _, tc := range []struct {
		name   string
		chunks []string
		says   string
		text   int // bytes of text and reasoning emitted
	}{
		{"arguments", calls, "its tool calls' arguments passed 16 MiB, the most one response may carry", 0},
		{"text", text, "its text and reasoning passed 16 MiB, the most one response may carry", 16 << 20},
		{"calls", many, fmt.Sprintf("it made more than %d tool calls", agent.MaxReplyToolCalls), 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			x := newFixture(t, func(c *agent.Config) { c.Thinking = agent.ThinkingOn },
				fakellm.Stream(tc.chunks, fakellm.Finish("tool_calls"), fakellm.Usage(10, 5, 0)),
				fakellm.Say("the calls ran"))
			ran := &recorder{}
			x.register(tools.Tool{Name: "t", Execute: ran.exec})
			var conv agent.Conversation
			o := x.turn(&conv, "go")
			if !errors.Is(o.err, agent.ErrTooLarge) || !strings.Contains(o.err.Error(), tc.says) ||
				!strings.HasPrefix(o.err.Error(), `entry "model": the model's response is too large: `) {
				t.Fatalf("err = %v, want ErrTooLarge saying %q", o.err, tc.says)
			}
			if n := len(x.srv.Requests()); n != 1 {
				t.Errorf("%d requests, want 1 (no retry)", n)
			}
			if got := ran.got(); len(got) > 0 || len(o.of(agent.EventToolCall)) > 0 {
				t.Errorf("%d calls ran", len(got))
			}
			if got := len(o.text()) + len(o.joined(agent.EventReasoning)); got != tc.text {
				t.Errorf("%d bytes of text and reasoning emitted, want %d", got, tc.text)
			}
		})
	}
}

// A turn's conversation is bounded by maxConversationBytes: the step that
// would pass it ends the turn with ErrConversationTooLarge, saying so. The
// hostile test's model sent 12 MiB of tool arguments at every step (each
// response under the per-response bound); unbounded, the re-sent
// conversation grew by 12 MiB a step, to 2 GiB by step 21. Now the second
// response's calls would take the messages past 16 MiB: they do not run
// and the turn ends.
func TestConversationBound(t *testing.T) {
	t.Parallel()
	t.Run("12 MiB of arguments a step", func(t *testing.T) {
		t.Parallel()
		mib := fakellm.CallDelta(0, "", "", strings.Repeat("x", 1<<20))
		x := newFixture(t, nil)
		x.within = 2 * time.Minute
		x.srv.Func(func(req *fakellm.Request) fakellm.Reply {
			chunks := []string{fakellm.CallDelta(0, fmt.Sprint("c", req.N), "t", `{"a":"`)}
			for range 12 {
				chunks = append(chunks, mib)
			}
			chunks = append(chunks, fakellm.CallDelta(0, "", "", `"}`))
			return fakellm.Stream(chunks, fakellm.Finish("tool_calls"))
		})
		ran := &recorder{}
		x.register(tools.Tool{Name: "t", Execute: func(ctx context.Context, args json.RawMessage) (tools.Result, error) {
			_, _ = ran.exec(ctx, json.RawMessage(fmt.Sprint(len(args))))
			return tools.Result{Text: "ok"}, nil
		}})
		var conv agent.Conversation
		o := x.turn(&conv, "go")
		want := `entry "model": the conversation is too large: the model's tool calls would take the messages to 24.0 MiB of messages, more than maxConversationBytes (16.0 MiB); its calls did not run`
		if !errors.Is(o.err, agent.ErrConversationTooLarge) || o.err.Error() != want {
			t.Fatalf("err = %v\nwant %s", o.err, want)
		}
		if n := len(x.srv.Requests()); n != 2 {
			t.Fatalf("%d requests, want 2", n)
		}
		if got := ran.got(); len(got) != 1 {
			t.Fatalf("%d calls ran, want 1 (the second response's call did not run)", len(got))
		}
		for _, r := range x.srv.Requests() {
			if len(r.Body) > agent.DefaultMaxConversationBytes+1024 {
				t.Errorf("request %d carried %d bytes", r.N, len(r.Body))
			}
		}
		// The conversation ends with the first step's call and its result.
		if msgs := conv.Messages(); len(msgs) != 3 || msgs[2].Role != agent.RoleTool {
			t.Fatalf("the conversation holds %d messages", len(msgs))
		}
	})
	t.Run("tool results", func(t *testing.T) {
		t.Parallel()
		x := newFixture(t, func(c *agent.Config) { c.MaxConversationBytes = 4096 })
		x.srv.Func(func(req *fakellm.Request) fakellm.Reply {
			return fakellm.Call(fakellm.ToolCallSpec{ID: fmt.Sprint("c", req.N), Name: "t", Arguments: `{}`})
		})
		x.register(tools.Tool{Name: "t", Execute: says(strings.Repeat("r", 3000))})
		var conv agent.Conversation
		o := x.turn(&conv, "go")
		if !errors.Is(o.err, agent.ErrConversationTooLarge) || !strings.Contains(o.err.Error(), "the next request would carry 6.2 KiB of messages, more than maxConversationBytes (4.0 KiB)") {
			t.Fatalf("err = %v", o.err)
		}
		if n := len(x.srv.Requests()); n != 2 {
			t.Fatalf("%d requests, want 2", n)
		}
		if n := len(o.of(agent.EventToolResult)); n != 2 {
			t.Fatalf("%d results, want 2", n)
		}
		for _, r := range x.srv.Requests() {
			if len(r.Body) > 4096+256 {
				t.Errorf("request %d carried %d bytes", r.N, len(r.Body))
			}
		}
		// The next turn is refused before any request, and leaves no
		// question behind.
		n := conv.Len()
		o = x.turn(&conv, "and again")
		if !errors.Is(o.err, agent.ErrConversationTooLarge) || len(x.srv.Requests()) != 2 || conv.Len() != n {
			t.Fatalf("second turn: err %v, %d requests, %d messages (was %d)", o.err, len(x.srv.Requests()), conv.Len(), n)
		}
	})
}

// answerFront answers every question and counts them.
type answerFront struct {
	mu    sync.Mutex
	asked int
}

func (f *answerFront) Ask(context.Context, tools.Question) (json.RawMessage, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.asked++
	return json.RawMessage(`{"action":"accept","content":{"ok":true}}`), nil
}
func (f *answerFront) Notify(context.Context, tools.Notification) {}
func (f *answerFront) Offers() tools.Offers                       { return tools.Offers{Elicitation: true} }

// The tools the agent calls ask the front of whoever runs the turn (the
// console, ask): the turn's context carries it to every call, those that
// run in parallel included.
func TestToolCallsCarryTheCallersFront(t *testing.T) {
	t.Parallel()
	x := newFixture(t, nil,
		fakellm.Call(fakellm.ToolCallSpec{ID: "c1", Name: "confirm", Arguments: `{}`}, fakellm.ToolCallSpec{ID: "c2", Name: "confirm", Arguments: `{}`}),
		fakellm.Say("done"))
	x.register(tools.Tool{Name: "confirm", Execute: func(ctx context.Context, _ json.RawMessage) (tools.Result, error) {
		a, err := tools.Ask(ctx, tools.Question{Tool: "confirm", Method: tools.MethodElicit, Params: json.RawMessage(`{"message":"ok?"}`)})
		return tools.Result{Text: string(a)}, err
	}})
	f := &answerFront{}
	var conv agent.Conversation
	o := x.turnCtx(tools.WithFront(context.Background(), f), &conv, "confirm twice")
	if o.err != nil {
		t.Fatal(o.err)
	}
	results := o.of(agent.EventToolResult)
	if f.asked != 2 || len(results) != 2 || results[0].Text != `{"action":"accept","content":{"ok":true}}` {
		t.Fatalf("asked %d times; results %+v", f.asked, results)
	}
}
