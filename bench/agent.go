package bench

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"runtime"
	"strings"
	"sync/atomic"
	"time"

	"github.com/harness-go/harness/fiber"
	"github.com/harness-go/harness/internal/testkit/fakellm"
	"github.com/harness-go/harness/plugins/agent"
	"github.com/harness-go/harness/plugins/tools"
)

// AgentOptions size the agent measurement.
type AgentOptions struct {
	Tools  int // tools in the registry, all sent with every step (toolSearch: off)
	Warmup int // turns not recorded
	Turns  int // turns of two steps for the per-step cost
	TTFB   int // first-text measurements per client
	// Search sizes the tool search measurement.
	Search SearchOptions
}

// AgentResult is what the agent measurement found.
type AgentResult struct {
	Tools int
	// Step is the harness's own time per step: a turn of two steps (a tool
	// call, then the answer) against a model that answers from memory and
	// tools that return at once, divided by two.
	Step []time.Duration
	// StepAllocs and StepBytes are the allocations per step.
	StepAllocs, StepBytes float64
	// TTFBHarness is Run called → the first text event; TTFBServer is the
	// same request sent by a bare HTTP client → the first content line read.
	// Both against the same fake server over loopback, interleaved.
	TTFBHarness, TTFBServer []time.Duration
	// Search is the tool search measurement (nil when not run).
	Search *SearchResult
}

// Added is the harness's time to first text byte minus the server's own,
// median against median.
func (r *AgentResult) Added() time.Duration { return Median(r.TTFBHarness) - Median(r.TTFBServer) }

// RunAgent measures the agent's own cost per step and what it adds to the
// time to the first byte of an answer.
func RunAgent(ctx context.Context, o AgentOptions, progress func(string)) (*AgentResult, error) {
	say := func(s string) {
		if progress != nil {
			progress(s)
		}
	}
	res := &AgentResult{Tools: o.Tools}
	say(fmt.Sprintf("agent: %d turns of two steps, %d tools, model and tools answering at once", o.Turns, o.Tools))
	sb, err := NewStepBench(o.Tools)
	if err != nil {
		return nil, err
	}
	defer sb.Close()
	for i := range o.Warmup + o.Turns {
		d, err := sb.Turn(ctx)
		if err != nil {
			return nil, err
		}
		if i >= o.Warmup {
			res.Step = append(res.Step, d/2)
		}
	}
	res.StepAllocs, res.StepBytes = sb.Allocs(ctx, 200)

	say(fmt.Sprintf("agent: time to first text byte, %d × harness and bare client, interleaved", o.TTFB))
	tb, err := NewTTFBBench(o.Tools)
	if err != nil {
		return nil, err
	}
	defer tb.Close()
	for i := range o.Warmup/10 + o.TTFB {
		// Alternate who goes first, so a slow moment is shared out.
		first, second := tb.Harness, tb.Raw
		if i%2 == 1 {
			first, second = tb.Raw, tb.Harness
		}
		a, err := first(ctx)
		if err != nil {
			return nil, err
		}
		b, err := second(ctx)
		if err != nil {
			return nil, err
		}
		if i%2 == 1 {
			a, b = b, a
		}
		if i >= o.Warmup/10 {
			res.TTFBHarness = append(res.TTFBHarness, a)
			res.TTFBServer = append(res.TTFBServer, b)
		}
	}
	if o.Search.Tools > 0 {
		if res.Search, err = RunToolSearch(ctx, o.Search, progress); err != nil {
			return nil, err
		}
	}
	return res, nil
}

// benchTools registers n tools of realistic size (a description, a schema
// of three properties) that answer at once.
func benchTools(f *fiber.Fiber, n int) (*tools.Registry, error) {
	reg := tools.New()
	batch := make([]tools.Tool, n)
	for i := range batch {
		batch[i] = tools.Tool{
			Name:        fmt.Sprintf("mcp__bench__tool_%03d", i),
			Description: fmt.Sprintf("Tool number %d of the benchmark: it takes a query, a limit and a flag, and answers at once with a short text.", i),
			Parameters: json.RawMessage(`{"type":"object","properties":{"query":{"type":"string","description":"What to look for."},` +
				`"limit":{"type":"integer","minimum":1,"maximum":100,"description":"How many results."},"exact":{"type":"boolean"}},"required":["query"]}`),
			Execute: func(context.Context, json.RawMessage) (tools.Result, error) {
				return tools.Result{Text: "ok: 3 results"}, nil
			},
		}
	}
	_, err := reg.Register(f, batch...)
	return reg, err
}

// StepBench runs turns against a model that answers from memory: an HTTP
// transport that returns canned streams, alternately a tool call and an
// answer. What a turn costs is then the harness's own work: the request
// (tool list, body), the library's request and stream decoding, assembling
// the call, running it through the registry, the conversation.
type StepBench struct {
	f   *fiber.Fiber
	a   *agent.Agent
	req atomic.Int64
}

// NewStepBench sets up a registry of n tools and an agent with the canned
// transport.
func NewStepBench(n int) (*StepBench, error) {
	b := &StepBench{f: fiber.New(context.Background(), "bench-agent")}
	reg, err := benchTools(b.f, n)
	if err != nil {
		return nil, err
	}
	cfg := agent.DefaultConfig()
	cfg.BaseURL = "http://model.invalid" // never dialled
	cfg.ToolSearch = agent.ToolSearchOff // every tool in every request: 43 KB would turn auto's search on
	b.a = agent.New(cfg, reg, agent.Options{ID: "bench", Logger: slog.New(slog.DiscardHandler),
		HTTPClient: &http.Client{Transport: cannedModel{n: &b.req}}})
	return b, nil
}

// Turn runs one turn of two steps and returns its wall time.
func (b *StepBench) Turn(ctx context.Context) (time.Duration, error) {
	var conv agent.Conversation
	start := time.Now()
	u, err := b.a.Run(ctx, &conv, "look up the benchmark, then answer", func(agent.Event) {})
	d := time.Since(start)
	if err == nil && u.Steps != 2 {
		err = fmt.Errorf("the turn made %d steps, want 2", u.Steps)
	}
	return d, err
}

// Allocs returns the allocations and bytes per step over turns turns.
func (b *StepBench) Allocs(ctx context.Context, turns int) (allocs, bytes float64) {
	var before, after runtimeMem
	before.read()
	for range turns {
		if _, err := b.Turn(ctx); err != nil {
			return 0, 0
		}
	}
	after.read()
	steps := float64(2 * turns)
	return float64(after.mallocs-before.mallocs) / steps, float64(after.bytes-before.bytes) / steps
}

// Close disposes the tools.
func (b *StepBench) Close() { _ = b.f.Dispose(context.Background()) }

// The canned model's two answers, as a DeepSeek stream sends them.
var (
	cannedCall = sse(fakellm.Stream(
		[]string{fakellm.CallDelta(0, "call_0", "mcp__bench__tool_042", `{"query":"benchmarks",`)},
		[]string{fakellm.CallDelta(0, "", "", `"limit":3}`)},
		fakellm.Finish("tool_calls"), fakellm.Usage(3000, 20, 2900)))
	cannedAnswer = sse(fakellm.Stream(
		fakellm.Text("There are "), fakellm.Text("three results."),
		fakellm.Finish("stop"), fakellm.Usage(3050, 10, 3000)))
)

func sse(r fakellm.Reply) []byte {
	var b bytes.Buffer
	for _, c := range r.Chunks {
		b.WriteString("data: " + c + "\n\n")
	}
	b.WriteString("data: [DONE]\n\n")
	return b.Bytes()
}

// cannedModel answers odd requests with a tool call and even ones with the
// answer, from memory.
type cannedModel struct{ n *atomic.Int64 }

func (m cannedModel) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Body != nil {
		_, _ = io.Copy(io.Discard, req.Body)
		req.Body.Close()
	}
	body := cannedAnswer
	if m.n.Add(1)%2 == 1 {
		body = cannedCall
	}
	return &http.Response{
		StatusCode: http.StatusOK,
		Header:     http.Header{"Content-Type": {"text/event-stream"}},
		Body:       io.NopCloser(bytes.NewReader(body)),
		Request:    req,
	}, nil
}

// TTFBBench measures the time to the first text of an answer, through the
// agent and through a bare HTTP client, against one fake server.
type TTFBBench struct {
	f    *fiber.Fiber
	srv  *fakellm.Server
	a    *agent.Agent
	raw  *http.Client
	body []byte // the agent's request, sent as it is by the bare client
	n    int
}

// NewTTFBBench starts the fake server and an agent with n tools.
func NewTTFBBench(n int) (*TTFBBench, error) {
	b := &TTFBBench{f: fiber.New(context.Background(), "bench-ttfb"), srv: fakellm.New(), raw: &http.Client{}}
	b.srv.Func(func(*fakellm.Request) fakellm.Reply { return fakellm.Say("Hello from the model.") })
	reg, err := benchTools(b.f, n)
	if err != nil {
		b.Close()
		return nil, err
	}
	cfg := agent.DefaultConfig()
	cfg.BaseURL = b.srv.URL
	cfg.ToolSearch = agent.ToolSearchOff // every tool in every request, as in the step's measurement
	b.a = agent.New(cfg, reg, agent.Options{ID: "bench", Logger: slog.New(slog.DiscardHandler)})
	if _, err := b.Harness(context.Background()); err != nil { // also captures the body
		b.Close()
		return nil, err
	}
	return b, nil
}

// Harness runs a turn and returns the time from Run to its first text.
func (b *TTFBBench) Harness(ctx context.Context) (time.Duration, error) {
	var conv agent.Conversation
	var first time.Duration
	start := time.Now()
	_, err := b.a.Run(ctx, &conv, "say hello", func(e agent.Event) {
		if e.Type == agent.EventText && first == 0 {
			first = time.Since(start)
		}
	})
	if b.body == nil {
		if reqs := b.srv.Requests(); len(reqs) > 0 {
			b.body = reqs[0].Body
		}
	}
	b.forget()
	if err == nil && first == 0 {
		err = errors.New("no text")
	}
	return first, err
}

// Raw sends the agent's request with a bare client and returns the time to
// the first line of the stream that carries content.
func (b *TTFBBench) Raw(ctx context.Context) (time.Duration, error) {
	start := time.Now()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, b.srv.URL+"/chat/completions", bytes.NewReader(b.body))
	if err != nil {
		return 0, err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := b.raw.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	var first time.Duration
	for sc.Scan() {
		if first == 0 && strings.HasPrefix(sc.Text(), "data: ") && strings.Contains(sc.Text(), `"content":`) {
			first = time.Since(start)
		}
	}
	b.forget()
	if first == 0 {
		return 0, fmt.Errorf("no content in the stream (status %d, %v)", resp.StatusCode, sc.Err())
	}
	return first, nil
}

// forget keeps the fake server from holding every request of a long run.
func (b *TTFBBench) forget() {
	if b.n++; b.n%100 == 0 {
		b.srv.Forget()
	}
}

// Close stops the server and disposes the tools.
func (b *TTFBBench) Close() {
	b.srv.Close()
	_ = b.f.Dispose(context.Background())
}

// runtimeMem is the allocation counters of the runtime.
type runtimeMem struct{ mallocs, bytes uint64 }

func (m *runtimeMem) read() {
	var s runtime.MemStats
	runtime.ReadMemStats(&s)
	m.mallocs, m.bytes = s.Mallocs, s.TotalAlloc
}
