package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/harness-go/harness/internal/testkit/fakellm"
	"github.com/harness-go/harness/plugins/agent"
)

// agentEntry is a cordis.yml entry for an agent at url.
func agentEntry(id, url string, extra ...string) string {
	s := fmt.Sprintf("- id: %s\n  name: agent\n  config:\n    baseURL: %s\n", id, url)
	for _, e := range extra {
		s += "    " + e + "\n"
	}
	return s
}

// askRun is one in-process run of the harness with captured streams.
type askRun struct {
	code   int
	stdout string
	stderr string
}

// runMain runs the harness in-process on config with args and the
// environment vars (for !!js), and returns what it did. tty makes every
// stream a terminal. during, when set, runs beside the command with its
// streams and signals.
func runMain(t *testing.T, config string, vars map[string]string, tty bool, during func(out, errOut *lines, sigs chan<- os.Signal), args ...string) askRun {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "cordis.yml"), []byte(config), 0o644); err != nil {
		t.Fatal(err)
	}
	out, errOut := newLines(), newLines()
	sigs := make(chan os.Signal, 4)
	lookup := func(k string) (string, bool) { v, ok := vars[k]; return v, ok }
	env := Env{Stdin: strings.NewReader("piped prompt"), Stdout: out, Stderr: errOut, Signals: sigs, Lookup: lookup,
		StdinTTY: tty, StdoutTTY: tty, StderrTTY: tty}
	done := make(chan int, 1)
	go func() {
		done <- Main(context.Background(), append([]string{"-c", filepath.Join(dir, "cordis.yml")}, args...), env)
	}()
	if during != nil {
		during(out, errOut, sigs)
	}
	select {
	case code := <-done:
		return askRun{code: code, stdout: out.String(), stderr: errOut.String()}
	case <-time.After(30 * time.Second):
		t.Fatalf("the harness did not exit; stdout:\n%s\nstderr:\n%s", out, errOut)
		return askRun{}
	}
}

func (r askRun) String() string {
	return fmt.Sprintf("exit %d\n--- stdout ---\n%s--- stderr ---\n%s", r.code, r.stdout, r.stderr)
}

func TestAskStreamsTheAnswer(t *testing.T) {
	t.Parallel()
	srv := fakellm.Start(t,
		fakellm.Call(fakellm.ToolCallSpec{ID: "c1", Name: "echo", Arguments: `{"message":"forty-two"}`}),
		fakellm.Stream(fakellm.Text("The answer "), fakellm.Text("is 42."), fakellm.Finish("stop"), fakellm.Usage(1200, 30, 1000)))
	r := runMain(t, "- id: echo\n  name: echo\n"+agentEntry("model", srv.URL), nil, false, nil, "ask", "what is it?")
	if r.code != 0 {
		t.Fatal(r)
	}
	if r.stdout != "The answer is 42.\n" {
		t.Fatalf("stdout %q", r.stdout)
	}
	for _, want := range []string{`→ echo {"message":"forty-two"}`, "← forty-two", "[1,210 prompt tokens (1,000 cached), 35 completion, 2 steps, 1 tool call, "} {
		if !strings.Contains(r.stderr, want) {
			t.Errorf("stderr lacks %q\n%s", want, r)
		}
	}
	if last := srv.Wait(2, time.Second).Last(); last.Role != "tool" || last.Content != "forty-two" {
		t.Fatalf("the tool's result sent back: %+v", last)
	}
}

// Arguments that are not JSON show as the model sent them on the → line
// (the call is not made with {}), and the error comes back.
func TestAskShowsArgumentsThatAreNotJSON(t *testing.T) {
	t.Parallel()
	srv := fakellm.Start(t,
		fakellm.Call(fakellm.ToolCallSpec{ID: "c1", Name: "echo", Arguments: `{"message": `}),
		fakellm.Stream(fakellm.Text("sorry"), fakellm.Finish("stop")))
	r := runMain(t, "- id: echo\n  name: echo\n"+agentEntry("model", srv.URL), nil, false, nil, "ask", "go")
	if r.code != 0 || !strings.Contains(r.stderr, "→ echo {\"message\":\n") || !strings.Contains(r.stderr, "← Error: the arguments are not valid JSON") {
		t.Fatal(r)
	}
	r = runMain(t, "- id: echo\n  name: echo\n"+agentEntry("model", fakellm.Start(t,
		fakellm.Call(fakellm.ToolCallSpec{ID: "c1", Name: "echo", Arguments: `{"message": `}),
		fakellm.Stream(fakellm.Text("sorry"), fakellm.Finish("stop"))).URL), nil, false, nil, "ask", "go", "--json")
	if !strings.Contains(r.stdout, `{"type":"tool_call","id":"c1","name":"echo","arguments":{}}`) {
		t.Fatalf("the JSON event's arguments are not {}:\n%s", r)
	}
}

func TestAskJSON(t *testing.T) {
	t.Parallel()
	srv := fakellm.Start(t,
		fakellm.Stream(fakellm.Reasoning("hmm"), []string{fakellm.CallDelta(0, "c1", "echo", `{"message":"x"}`)}, fakellm.Finish("tool_calls")),
		fakellm.Say("done"))
	r := runMain(t, "- id: echo\n  name: echo\n"+agentEntry("model", srv.URL, "thinking: on"), nil, false, nil, "ask", "go", "--json")
	if r.code != 0 {
		t.Fatal(r)
	}
	var types []string
	for _, l := range strings.Split(strings.TrimSpace(r.stdout), "\n") {
		var e map[string]any
		if err := json.Unmarshal([]byte(l), &e); err != nil {
			t.Fatalf("line %q: %v", l, err)
		}
		if !strings.HasPrefix(l, `{"type":`) {
			t.Fatalf("type is not first: %s", l)
		}
		types = append(types, e["type"].(string))
	}
	if want := []string{"reasoning", "tool_call", "tool_result", "text", "usage", "done"}; !slices.Equal(types, want) {
		t.Fatalf("events %v, want %v", types, want)
	}
	if strings.Contains(r.stderr, "→") {
		t.Fatalf("--json printed tool lines on stderr:\n%s", r)
	}
}

func TestAskExitCodes(t *testing.T) {
	t.Parallel()
	srv := fakellm.Start(t)
	srv.Func(func(req *fakellm.Request) fakellm.Reply {
		switch {
		case req.Auth() == "Bearer sk-wrong-key-123456":
			return fakellm.Status(401, "Authentication Fails")
		case strings.Contains(req.Last().Content, "loop") || req.Last().Role == "tool":
			return fakellm.Call(fakellm.ToolCallSpec{ID: fmt.Sprint("c", req.N), Name: "echo", Arguments: `{"message":"again"}`})
		}
		return fakellm.Say("fine")
	})
	echo := "- id: echo\n  name: echo\n"
	wantsKey := fakellm.Start(t, fakellm.Status(401, "Authentication Fails"))
	for _, tc := range []struct {
		name   string
		config string
		vars   map[string]string
		args   []string
		code   int
		says   string
	}{
		{"answered", agentEntry("m", srv.URL), nil, []string{"ask", "hi"}, 0, ""},
		{"prompt from stdin", agentEntry("m", srv.URL), nil, []string{"ask", "-"}, 0, ""},
		{"no agent entry", echo, nil, []string{"ask", "hi"}, 2, "no agent entry in"},
		{"several, none picked", agentEntry("a", srv.URL) + agentEntry("b", srv.URL), nil, []string{"ask", "hi"}, 2, "several agent entries (a, b): pick one with --agent ID"},
		{"several, one picked", agentEntry("a", srv.URL) + agentEntry("b", srv.URL), nil, []string{"ask", "hi", "--agent", "b"}, 0, ""},
		{"unknown agent", agentEntry("a", srv.URL), nil, []string{"ask", "hi", "--agent", "zz"}, 2, `no agent entry "zz" (agent entries: a)`},
		{"no key for DeepSeek", "- id: ds\n  name: agent\n  config:\n    apiKey: !!js process.env.DEEPSEEK_API_KEY\n", nil, []string{"ask", "hi"}, 2,
			`agent entry "ds" has no API key: set DEEPSEEK_API_KEY (export DEEPSEEK_API_KEY=…) and run again`},
		{"key refused", agentEntry("m", srv.URL, "apiKey: !!js process.env.K"), map[string]string{"K": "sk-wrong-key-123456"}, []string{"ask", "hi"}, 1, `entry "m": the API key was refused (HTTP 401`},
		{"missing key refused", agentEntry("m", wantsKey.URL, "apiKey: !!js process.env.BAR_KEY"), nil, []string{"ask", "hi"}, 1,
			`entry "m": the API key was refused: ` + wantsKey.URL + ` asks for an API key and apiKey reads BAR_KEY, which is not set (HTTP 401: Authentication Fails)`},
		{"maxSteps", echo + agentEntry("m", srv.URL, "maxSteps: 2"), nil, []string{"ask", "loop"}, 1, "maxSteps"},
		{"conversation too large", agentEntry("m", srv.URL, "maxConversationBytes: 1024"), nil, []string{"ask", strings.Repeat("word ", 300)}, 1,
			`entry "m": the conversation is too large: the next request would carry 1.5 KiB of messages, more than maxConversationBytes (1.0 KiB); raise maxConversationBytes`},
		{"empty prompt", agentEntry("m", srv.URL), nil, []string{"ask", " "}, 2, "the prompt is empty"},
		{"two prompts", agentEntry("m", srv.URL), nil, []string{"ask", "a", "b"}, 2, "ask takes one prompt"},
		{"--agent elsewhere", agentEntry("m", srv.URL), nil, []string{"tools", "--agent", "m"}, 2, "flag --agent is for run and ask, not tools"},
		{"bad config", "- id: m\n  name: agent\n  config: {thinking: medium}\n", nil, []string{"ask", "hi"}, 2, "thinking"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r := runMain(t, tc.config, tc.vars, false, nil, tc.args...)
			if r.code != tc.code || !strings.Contains(r.stderr, tc.says) {
				t.Fatalf("want exit %d saying %q\n%s", tc.code, tc.says, r)
			}
			if tc.code == 2 && tc.args[0] == "ask" && tc.name != "empty prompt" && tc.name != "two prompts" && tc.name != "bad config" &&
				strings.Count(strings.TrimSpace(r.stderr), "\n") > 0 {
				t.Fatalf("the message is not one line:\n%s", r)
			}
			if strings.Contains(r.stdout+r.stderr, "sk-wrong-key-123456") {
				t.Fatalf("the key was printed\n%s", r)
			}
		})
	}
}

// Ctrl-C during the answer ends ask with 130, and so does SIGTERM (any
// signal, as the help says); the server sees the stream go away.
func TestAskInterrupted(t *testing.T) {
	t.Parallel()
	for _, sig := range []os.Signal{os.Interrupt, syscall.SIGTERM} {
		t.Run(sig.String(), func(t *testing.T) {
			t.Parallel()
			srv := fakellm.Start(t, fakellm.Reply{Chunks: fakellm.Text("Once upon a time"), Stall: true})
			r := runMain(t, agentEntry("m", srv.URL), nil, false, func(out, _ *lines, sigs chan<- os.Signal) {
				out.waitFor(t, "Once upon a time")
				sigs <- sig
			}, "ask", "story")
			if r.code != ExitInterrupted || !strings.Contains(r.stderr, "harness ask: cancelled") {
				t.Fatal(r)
			}
			req := srv.Wait(1, time.Second)
			<-req.Done()
			if !req.Cancelled() {
				t.Fatal("the server did not see the cancellation")
			}
		})
	}
}

// On a terminal the model's text cannot drive it: control characters other
// than newline and tab are escaped. In a pipe the text passes as it is.
// Our own lines are redacted; the stream is not.
func TestAskOutputSafety(t *testing.T) {
	t.Parallel()
	const key = "sk-live-0123456789abcdef"
	text := "line one\n\x1b[31mred\x1b[0m\tand a bell\a"
	for _, tty := range []bool{false, true} {
		t.Run(fmt.Sprint("tty=", tty), func(t *testing.T) {
			t.Parallel()
			srv := fakellm.Start(t,
				fakellm.Call(fakellm.ToolCallSpec{ID: "c", Name: "echo", Arguments: `{"message":"my key is ` + key + `"}`}),
				fakellm.Say(text))
			r := runMain(t, "- id: echo\n  name: echo\n"+agentEntry("m", srv.URL, "apiKey: !!js process.env.K"), map[string]string{"K": key}, tty, nil, "ask", "go")
			if r.code != 0 {
				t.Fatal(r)
			}
			want := text + "\n"
			if tty {
				want = "line one\n\\x1b[31mred\\x1b[0m\tand a bell\\x07\n"
			}
			if r.stdout != want {
				t.Fatalf("stdout %q, want %q", r.stdout, want)
			}
			if strings.Contains(r.stderr, key) || !strings.Contains(r.stderr, `→ echo {"message":"my key is <redacted>"}`) {
				t.Fatalf("stderr:\n%s", r.stderr)
			}
			if got := srv.Wait(1, time.Second).Auth(); got != "Bearer "+key {
				t.Fatalf("Authorization %q", got)
			}
		})
	}
}

// The console: plain lines talk to the agent and the conversation goes on
// from line to line; /agent shows the agent and the usage; /new starts over.
func TestConsoleTalks(t *testing.T) {
	t.Parallel()
	srv := fakellm.Start(t, fakellm.Say("first answer"), fakellm.Say("second answer"), fakellm.Say("fresh answer"))
	s := start(t, "- id: echo\n  name: echo\n"+agentEntry("model", srv.URL, "model: m-1"), false)
	s.send("hello there")
	s.out.waitFor(t, "first answer\n")
	s.send("and again")
	s.out.waitFor(t, "second answer\n")
	if r := srv.Wait(2, time.Second); len(r.Messages) != 3 || r.Messages[1].Content != "first answer" {
		t.Fatalf("the second request: %+v", r.Messages)
	}
	s.send("/agent")
	s.out.waitFor(t, "* model: m-1 at "+srv.URL+", 5 tools") // echo, clock and the resource tools (echo has a resource)
	s.out.waitFor(t, "conversation: 2 turns, 4 messages, [20 prompt tokens")
	s.send("/new")
	s.out.waitFor(t, "new conversation\n")
	s.send("anew")
	s.out.waitFor(t, "fresh answer\n")
	if r := srv.Wait(3, time.Second); len(r.Messages) != 1 {
		t.Fatalf("after /new the request holds %d messages", len(r.Messages))
	}
	s.send("/agent nope")
	s.errOut.waitFor(t, `no agent entry "nope" (agent entries: model)`)
	s.send("/quit")
	if code := s.exit(); code != 0 {
		t.Fatalf("exit %d", code)
	}
}

// A turn the console cannot send says why, and what the console offers:
// /new, or a larger maxConversationBytes; /new then starts over.
func TestConsoleSaysWhatToDoWhenTheConversationIsTooLarge(t *testing.T) {
	t.Parallel()
	srv := fakellm.Start(t, fakellm.Say("short"))
	s := start(t, agentEntry("model", srv.URL, "maxConversationBytes: 1024"), false)
	s.send(strings.Repeat("word ", 300))
	s.errOut.waitFor(t, "more than maxConversationBytes (1.0 KiB); start a new conversation (/new) or raise maxConversationBytes")
	s.send("/new")
	s.out.waitFor(t, "new conversation\n")
	s.send("hi")
	s.out.waitFor(t, "short\n")
	s.send("/quit")
	if code := s.exit(); code != 0 {
		t.Fatalf("exit %d", code)
	}
}

// Ctrl-C during an answer on a terminal cancels that answer only: the
// server sees it, the console goes on, the conversation keeps what was
// shown.
func TestConsoleCtrlCCancelsTheAnswer(t *testing.T) {
	t.Parallel()
	srv := fakellm.Start(t, fakellm.Reply{Chunks: fakellm.Text("Once upon"), Stall: true}, fakellm.Say("still here"))
	s := start(t, agentEntry("model", srv.URL), true)
	s.send("tell a story")
	s.out.waitFor(t, "Once upon")
	s.sigs <- os.Interrupt
	s.errOut.waitFor(t, "answer cancelled")
	req := srv.Wait(1, time.Second)
	<-req.Done()
	if !req.Cancelled() {
		t.Fatal("the server did not see the cancellation")
	}
	s.send("go on")
	s.out.waitFor(t, "still here\n")
	if r := srv.Wait(2, time.Second); len(r.Messages) != 3 || r.Messages[1].Content != "Once upon" {
		t.Fatalf("the next request: %+v", r.Messages)
	}
	s.idle()
	s.sigs <- os.Interrupt // at idle: quit
	if code := s.exit(); code != 0 {
		t.Fatalf("exit %d", code)
	}
}

// run --agent picks the agent that plain lines talk to; /agent ID switches
// to another, and the conversation goes on with it.
func TestConsoleAgentSwitchKeepsTheConversation(t *testing.T) {
	t.Parallel()
	a := fakellm.Start(t, fakellm.Say("from a"))
	b := fakellm.Start(t, fakellm.Say("from b"))
	s := start(t, agentEntry("a", a.URL)+agentEntry("b", b.URL), false, "--agent", "b")
	s.send("hello")
	s.out.waitFor(t, "from b\n")
	s.send("/agent a")
	s.out.waitFor(t, "talking to a\n")
	s.send("and you?")
	s.out.waitFor(t, "from a\n")
	r := a.Wait(1, time.Second)
	if r == nil || len(r.Messages) != 3 || r.Messages[0].Content != "hello" || r.Messages[1].Content != "from b" || r.Messages[2].Content != "and you?" {
		t.Fatalf("a's request does not carry the conversation: %+v", r)
	}
	if n := len(b.Requests()); n != 1 {
		t.Fatalf("b got %d requests, want 1", n)
	}
	s.send("/agent")
	s.out.waitFor(t, "* a: ")
	s.out.waitFor(t, "\n  b: ")
	s.out.waitFor(t, "conversation: 2 turns, 4 messages, ")
	s.send("/quit")
	if code := s.exit(); code != 0 {
		t.Fatalf("exit %d", code)
	}
}

func TestConsoleWithoutAnAgent(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, config, says string
	}{
		{"no entry", "- id: echo\n  name: echo\n", "no agent entry in"},
		{"no key", "- id: ds\n  name: agent\n  config:\n    apiKey: !!js process.env.DEEPSEEK_API_KEY\n", `agent entry "ds" has no API key: set DEEPSEEK_API_KEY`},
		{"several", agentEntry("a", "http://127.0.0.1:1") + agentEntry("b", "http://127.0.0.1:1"), "pick one with /agent ID"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s := start(t, tc.config, false)
			s.send("hello")
			s.errOut.waitFor(t, tc.says)
			s.send("/quit")
			if code := s.exit(); code != 0 {
				t.Fatalf("exit %d", code)
			}
		})
	}
}

func TestUsageLine(t *testing.T) {
	t.Parallel()
	var b bytes.Buffer
	b.WriteString(count(0) + " " + count(999) + " " + count(1000) + " " + count(1234567))
	if b.String() != "0 999 1,000 1,234,567" {
		t.Fatal(b.String())
	}
	for _, tc := range []struct {
		u    agent.Usage
		want string
	}{
		{agent.Usage{PromptTokens: 1200, CompletionTokens: 30, CacheHitTokens: 1000, Steps: 2, ToolCalls: 1, Duration: 1904 * time.Millisecond},
			"[1,200 prompt tokens (1,000 cached), 30 completion, 2 steps, 1 tool call, 1.9s]"},
		{agent.Usage{PromptTokens: 5, Steps: 1, Duration: 1234 * time.Millisecond}, "[5 prompt tokens, 0 completion, 1 step, 0 tool calls, 1.23s]"},
		// A server that reports no tokens: the line counts none.
		{agent.Usage{Steps: 1, Duration: 20 * time.Millisecond}, "[1 step, 0 tool calls, 20ms]"},
	} {
		if got := usageLine(tc.u); got != tc.want {
			t.Errorf("usageLine(%+v) = %q, want %q", tc.u, got, tc.want)
		}
	}
}

// A request the endpoint refused for a moment is sent again, and a line on
// stderr says so (with --json only the log would); an answer cut at the
// token limit says so too (with --json, the done event's finishReason).
func TestAskRetryAndCutAnswer(t *testing.T) {
	t.Parallel()
	for _, asJSON := range []bool{false, true} {
		t.Run(fmt.Sprint("json=", asJSON), func(t *testing.T) {
			t.Parallel()
			srv := fakellm.Start(t, fakellm.Status(503, "busy"),
				fakellm.Stream(fakellm.Text("the answer is cu"), fakellm.Finish("length"), fakellm.Usage(10, 5, 0)))
			args := []string{"ask", "go"}
			if asJSON {
				args = append(args, "--json")
			}
			r := runMain(t, agentEntry("model", srv.URL), nil, false, nil, args...)
			if r.code != 0 || srv.Wait(2, time.Second) == nil {
				t.Fatal(r)
			}
			if asJSON {
				if strings.Contains(r.stdout, `"type":"retry"`) || !strings.Contains(r.stdout, `{"type":"done","finishReason":"length"}`) ||
					strings.Contains(r.stderr, "retrying") || strings.Contains(r.stderr, "the answer was cut") {
					t.Fatal(r)
				}
				return
			}
			if r.stdout != "the answer is cu\n" {
				t.Fatalf("stdout %q", r.stdout)
			}
			for _, want := range []string{"retrying in ", ` (attempt 1): entry "model": `, "(HTTP 503: busy)\n",
				"\nthe answer was cut: the model reached its token limit (maxTokens)\n"} {
				if !strings.Contains(r.stderr, want) {
					t.Errorf("stderr lacks %q\n%s", want, r)
				}
			}
		})
	}
}

// With --json a failure is the error event; stderr carries logs only.
func TestAskJSONFailure(t *testing.T) {
	t.Parallel()
	srv := fakellm.Start(t, fakellm.Status(401, "Authentication Fails"))
	r := runMain(t, agentEntry("model", srv.URL), nil, false, nil, "ask", "go", "--json")
	if r.code != ExitFailure {
		t.Fatal(r)
	}
	lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
	if last := lines[len(lines)-1]; !strings.HasPrefix(last, `{"type":"error","message":"entry \"model\": the API key was refused`) {
		t.Fatalf("the last event is not the error:\n%s", r)
	}
	if strings.Contains(r.stderr, "harness ask:") {
		t.Fatalf("--json printed the failure on stderr too:\n%s", r)
	}
}

// With --json, a failure before the turn (no agent entry) is the error
// event too; with --log-format json, every stderr line of a failing command
// is a JSON record.
func TestFailuresKeepTheirFormat(t *testing.T) {
	t.Parallel()
	r := runMain(t, "- id: e\n  name: echo\n", nil, false, nil, "ask", "go", "--json")
	if r.code != ExitUsage || !strings.HasPrefix(r.stdout, `{"type":"error","message":"no agent entry in `) || strings.Contains(r.stderr, "harness ask:") {
		t.Fatalf("ask --json without an agent:\n%s", r)
	}
	for _, args := range [][]string{
		{"call", "nope", "--log-format", "json"},
		{"call", "echo", "[1]", "--log-format", "json"},
		{"ask", "go", "--log-format", "json"},
		{"status", "--frob", "--log-format", "json"},
	} {
		r := runMain(t, "- id: e\n  name: echo\n", nil, false, nil, args...)
		if r.code == ExitOK || strings.TrimSpace(r.stderr) == "" {
			t.Fatalf("%v: %s", args, r)
		}
		for _, l := range strings.Split(strings.TrimSpace(r.stderr), "\n") {
			var rec struct{ Level, Msg string }
			if err := json.Unmarshal([]byte(l), &rec); err != nil || rec.Level == "" || rec.Msg == "" {
				t.Errorf("%v: a stderr line is not a JSON record: %q", args, l)
			}
		}
	}
}

// Reasoning goes to stderr with --show-reasoning, and nowhere without it.
func TestAskShowReasoning(t *testing.T) {
	t.Parallel()
	for _, show := range []bool{false, true} {
		srv := fakellm.Start(t, fakellm.Stream(fakellm.Reasoning("let me think"), fakellm.Text("done"), fakellm.Finish("stop")))
		args := []string{"ask", "go"}
		if show {
			args = append(args, "--show-reasoning")
		}
		r := runMain(t, agentEntry("model", srv.URL, "thinking: on"), nil, false, nil, args...)
		if r.code != 0 || r.stdout != "done\n" {
			t.Fatal(r)
		}
		if got := strings.Contains(r.stderr, "let me think"); got != show {
			t.Errorf("--show-reasoning %v: reasoning on stderr %v\n%s", show, got, r)
		}
	}
}

// The lines about tool calls are ours: one line each, control characters
// escaped, cut at 200 bytes.
func TestAskToolLinesAreInert(t *testing.T) {
	t.Parallel()
	msg := "\x1b[31mred\x1b]0;title\a" + strings.Repeat("x", 500)
	args, _ := json.Marshal(map[string]string{"message": msg})
	srv := fakellm.Start(t,
		fakellm.Call(fakellm.ToolCallSpec{ID: "c1", Name: "echo", Arguments: string(args)}),
		fakellm.Say("ok"))
	r := runMain(t, "- id: echo\n  name: echo\n"+agentEntry("model", srv.URL), nil, false, nil, "ask", "go")
	if r.code != 0 {
		t.Fatal(r)
	}
	if strings.ContainsAny(r.stderr, "\x1b\a") {
		t.Fatalf("a raw control character reached stderr:\n%q", r.stderr)
	}
	var call, result string
	for _, l := range strings.Split(r.stderr, "\n") {
		switch {
		case strings.HasPrefix(l, "→ "):
			call = l
		case strings.HasPrefix(l, "← "):
			result = l
		}
	}
	for l, prefix := range map[string]string{call: "→ echo ", result: "← "} {
		if !strings.HasSuffix(l, "…") || len(l) > len(prefix)+previewBytes+len("…") {
			t.Errorf("tool line not cut at %d bytes (%d): %q", previewBytes, len(l), l)
		}
	}
	if !strings.Contains(result, `\x1b[31mred`) {
		t.Errorf("the result line does not show the escape as text: %q", result)
	}
}

// A plugin's own status lines are escaped like the rest of the status, in
// `harness status` and in /status, and so is /agent: an agent's model name
// is the file's words.
func TestStatusLinesAreEscaped(t *testing.T) {
	t.Parallel()
	config := agentEntry("m", "http://127.0.0.1:1", `model: "m\e]0;title\a"`)
	const want = `model m\x1b]0;title`
	r := runMain(t, config, nil, false, nil, "status")
	if r.code != 0 || !strings.Contains(r.stdout, want) || strings.ContainsAny(r.stdout, "\x1b\a") {
		t.Fatalf("want %q, escaped:\n%q", want, r.stdout)
	}
	s := start(t, config, false)
	s.send("/status")
	s.out.waitFor(t, want)
	s.send("/agent")
	s.out.waitFor(t, `* m: m\x1b]0;title`)
	s.send("/quit")
	if code := s.exit(); code != 0 {
		t.Fatalf("exit %d", code)
	}
	if strings.ContainsAny(s.out.String(), "\x1b\a") {
		t.Fatalf("a raw escape reached stdout:\n%q", s.out)
	}
}

// hostileName is a tool name a model may ask for: an OSC 52 clipboard
// write and a window title, each ended by BEL; a C1 CSI and a DEL.
const hostileName = "\x1b]52;c;cHduZWQ=\a\x1b]0;OWNED\a\u009b2J\x7f"

// The model's words in our lines (the name of a tool it asks for, shown
// reasoning, a retry's reason) are escaped in ask, in a pipe and on a
// terminal, and in the console; with --json they are JSON strings, whose
// control characters are escaped (C1 and DEL too: encoding/json leaves
// them raw).
func TestAskModelNamesAreInert(t *testing.T) {
	t.Parallel()
	script := func() *fakellm.Server {
		return fakellm.Start(t,
			fakellm.Status(503, "busy \x1b]0;OWNED\a"),
			fakellm.Stream(fakellm.Reasoning("think \x1b]0;OWNED\a"),
				[]string{fakellm.CallDelta(0, "c1", hostileName, `{"message":"\u001b]0;OWNED\u0007"}`)}, fakellm.Finish("tool_calls")),
			fakellm.Say("done"))
	}
	inert := func(t *testing.T, where, s string) {
		t.Helper()
		s = strings.ReplaceAll(s, "\r\x1b[K", "") // ours: the progress line on a terminal, erased
		if strings.ContainsAny(s, "\x1b\a\u009b\x7f") {
			t.Errorf("a raw ESC, BEL, CSI or DEL reached %s:\n%q", where, s)
		}
	}
	const shown = `→ \x1b]52;c;cHduZWQ=\x07\x1b]0;OWNED\x07\u009b2J\x7f {"message":"\u001b]0;OWNED\u0007"}`
	for _, tty := range []bool{false, true} {
		t.Run(fmt.Sprint("tty=", tty), func(t *testing.T) {
			t.Parallel()
			args := []string{"ask", "go"}
			if !tty {
				args = append(args, "--show-reasoning") // on a terminal it is dimmed with escapes of ours
			}
			r := runMain(t, agentEntry("model", script().URL, "thinking: on"), nil, tty, nil, args...)
			inert(t, "stdout", r.stdout)
			inert(t, "stderr", r.stderr)
			if r.code != 0 || r.stdout != "done\n" || !strings.Contains(r.stderr, shown+"\n") {
				t.Fatalf("want %q on stderr\n%s", shown, r)
			}
			if !strings.Contains(r.stderr, `(HTTP 503: busy \x1b]0;OWNED\x07)`) {
				t.Errorf("the retry line:\n%s", r)
			}
			if !strings.Contains(r.stderr, `← Error: unknown tool "\x1b]52;c;cHduZWQ=\a\x1b]0;OWNED\a\u009b2J\x7f"`) {
				t.Errorf("the result line:\n%s", r)
			}
			if !tty && !strings.Contains(r.stderr, `think \x1b]0;OWNED\x07`) {
				t.Errorf("the reasoning is not shown escaped:\n%s", r)
			}
		})
	}
	t.Run("json", func(t *testing.T) {
		t.Parallel()
		r := runMain(t, agentEntry("model", script().URL, "thinking: on"), nil, false, nil, "ask", "go", "--json")
		if r.code != 0 {
			t.Fatal(r)
		}
		inert(t, "stdout", r.stdout)
		inert(t, "stderr", r.stderr)
		var names []string
		for _, l := range strings.Split(strings.TrimSpace(r.stdout), "\n") {
			var e struct{ Type, Name, Delta string }
			if err := json.Unmarshal([]byte(l), &e); err != nil {
				t.Fatalf("line %q: %v", l, err)
			}
			switch e.Type {
			case "tool_call", "tool_result":
				names = append(names, e.Name)
			case "reasoning":
				if e.Delta != "think \x1b]0;OWNED\a" {
					t.Errorf("reasoning %q", e.Delta)
				}
			}
		}
		if !slices.Equal(names, []string{hostileName, hostileName}) {
			t.Errorf("the events' names %q", names)
		}
	})
	t.Run("console", func(t *testing.T) {
		t.Parallel()
		s := start(t, agentEntry("model", script().URL, "thinking: on"), false)
		s.send("go")
		s.out.waitFor(t, "done\n")
		s.errOut.waitFor(t, shown+"\n")
		s.send("/quit")
		if code := s.exit(); code != 0 {
			t.Fatalf("exit %d", code)
		}
		inert(t, "stdout", s.out.String())
		inert(t, "stderr", s.errOut.String())
	})
}

// A prompt on stdin is read up to 16 MiB: more is refused with exit 2
// before anything starts (an endless stdin would otherwise be read into
// memory until the process died).
func TestAskPromptFromStdinIsBounded(t *testing.T) {
	t.Parallel()
	srv := fakellm.Start(t)
	srv.Func(func(*fakellm.Request) fakellm.Reply { return fakellm.Say("read it") })
	dir := t.TempDir()
	config := filepath.Join(dir, "cordis.yml")
	// A conversation may carry more than the prompt's bound here, so the
	// prompt at the bound is sent.
	if err := os.WriteFile(config, []byte(agentEntry("m", srv.URL, "maxConversationBytes: 33554432")), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		size int
		code int
		says string
	}{
		{"at the bound", maxPrompt, 0, ""},
		{"one byte more", maxPrompt + 1, ExitUsage, "harness ask: the prompt on stdin is larger than 16 MiB, the most a prompt may be"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, errOut := newLines(), newLines()
			stdin := io.LimitReader(repeatReader('a'), int64(tc.size))
			code := Main(context.Background(), []string{"-c", config, "ask", "-"}, Env{Stdin: stdin, Stdout: out, Stderr: errOut,
				Signals: make(chan os.Signal, 1), Lookup: func(string) (string, bool) { return "", false }})
			if code != tc.code || !strings.Contains(errOut.String(), tc.says) {
				t.Fatalf("exit %d, want %d saying %q\nstdout: %s\nstderr: %s", code, tc.code, tc.says, out, errOut)
			}
		})
	}
	if n := len(srv.Requests()); n != 1 {
		t.Fatalf("%d requests, want 1 (the prompt at the bound)", n)
	}
}

// repeatReader reads as an endless run of one byte.
type repeatReader byte

func (r repeatReader) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = byte(r)
	}
	return len(p), nil
}

// Tool search shows: a line on stderr when what a step sends changes, a
// tool_search event per request with --json, and /agent says the mode and
// what the conversation loaded.
func TestToolSearchShows(t *testing.T) {
	t.Parallel()
	script := func() *fakellm.Server {
		srv := fakellm.Start(t)
		srv.Func(func(req *fakellm.Request) fakellm.Reply {
			switch last := req.Last(); {
			case last.Role == "user":
				return fakellm.Call(fakellm.ToolCallSpec{ID: "s", Name: agent.SearchToolName, Arguments: `{"query":"echo a message"}`})
			case last.ToolCallID == "s":
				return fakellm.Call(fakellm.ToolCallSpec{ID: "c", Name: "echo", Arguments: `{"message":"found"}`})
			}
			return fakellm.Say("done")
		})
		return srv
	}
	config := func(srv *fakellm.Server) string {
		return "- id: echo\n  name: echo\n" + agentEntry("model", srv.URL, "toolSearch: on")
	}
	r := runMain(t, config(script()), nil, false, nil, "ask", "say found")
	if r.code != 0 {
		t.Fatal(r)
	}
	for _, want := range []string{
		"[tool search: 4 of 5 tools sent: search_tools, 3 always loaded]\n→ search_tools {\"query\":\"echo a message\"}\n← 1 of 1 matching tools, best first;",
		"[tool search: 5 of 5 tools sent: search_tools, 3 always loaded, 1 found]\n→ echo {\"message\":\"found\"}\n← found\n",
	} {
		if !strings.Contains(r.stderr, want) {
			t.Errorf("stderr lacks %q\n%s", want, r)
		}
	}
	if n := strings.Count(r.stderr, "[tool search:"); n != 2 {
		t.Errorf("%d tool search lines, want 2 (the third step sends what the second did)\n%s", n, r)
	}
	r = runMain(t, config(script()), nil, false, nil, "ask", "say found", "--json")
	for _, want := range []string{
		`{"type":"tool_search","available":5,"sent":4,"loaded":0}`,
		`{"type":"tool_search","available":5,"sent":5,"loaded":1}`,
	} {
		if !strings.Contains(r.stdout, want+"\n") {
			t.Errorf("stdout lacks %s\n%s", want, r)
		}
	}
	s := start(t, config(script()), false)
	s.send("say found")
	s.out.waitFor(t, "done\n")
	s.send("/agent")
	s.out.waitFor(t, ", 5 tools, tool search on (toolSearch: on)")
	s.out.waitFor(t, "conversation: 1 turn, 6 messages, 1 tool loaded by search_tools, [")
	s.send("/quit")
	if code := s.exit(); code != 0 {
		t.Fatalf("exit %d", code)
	}
}
