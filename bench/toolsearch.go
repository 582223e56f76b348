package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/harness-go/harness/fiber"
	"github.com/harness-go/harness/internal/testkit/fakellm"
	"github.com/harness-go/harness/internal/testkit/toolgen"
	"github.com/harness-go/harness/plugins/agent"
	"github.com/harness-go/harness/plugins/tools"
)

// SearchOptions size the tool search measurement.
type SearchOptions struct {
	Tools     int // tools for the prompt tokens, search against full (500)
	StepTools int // tools for the agent's own time per step in search mode (1000)
	Warmup    int
	Turns     int // turns of three steps for the time per step
}

// SearchResult is what the tool search measurement found.
type SearchResult struct {
	Tools, StepTools int
	// SearchTokens and FullTokens are the prompt of each step, estimated
	// as the request body's bytes / 4: one task (find the weather tool,
	// call it, answer) with tool search on (three steps: search, call,
	// answer) and off (two: call, answer; every schema in each).
	SearchTokens, FullTokens []int
	// Found says the scripted model found the tool through search_tools
	// (its name in the search result, its schema in the next request) and
	// called it.
	Found bool
	// Step is the agent's own time per step in search mode with StepTools
	// tools: a turn of three steps against a model that answers from memory.
	Step []time.Duration
}

// Ratio is the mean prompt per step with tool search against without.
func (r *SearchResult) Ratio() float64 { return mean(r.SearchTokens) / mean(r.FullTokens) }

func mean(v []int) float64 {
	if len(v) == 0 {
		return 0
	}
	s := 0
	for _, x := range v {
		s += x
	}
	return float64(s) / float64(len(v))
}

// searchTarget is the tool the scripted model looks for.
var searchTarget = tools.Tool{
	Name:        "mcp__weather__get_forecast",
	Description: "Get the weather forecast for a city: temperature, rain and wind, hour by hour.",
	Parameters:  json.RawMessage(`{"type":"object","properties":{"city":{"type":"string","description":"The city."},"days":{"type":"integer","description":"How many days, 1 to 7."}},"required":["city"]}`),
	Execute: func(context.Context, json.RawMessage) (tools.Result, error) {
		return tools.Result{Text: "sunny, 21 °C"}, nil
	},
}

// RunToolSearch measures tool search: the prompt per step with o.Tools
// tools, search against every schema, and the agent's own time per step in
// search mode with o.StepTools tools.
func RunToolSearch(ctx context.Context, o SearchOptions, progress func(string)) (*SearchResult, error) {
	say := func(s string) {
		if progress != nil {
			progress(s)
		}
	}
	res := &SearchResult{Tools: o.Tools, StepTools: o.StepTools}
	say(fmt.Sprintf("agent, tool search: one task with %d tools, search on and off", o.Tools))
	for _, mode := range []string{agent.ToolSearchOn, agent.ToolSearchOff} {
		sizes, found, err := searchTask(ctx, o.Tools, mode)
		if err != nil {
			return nil, err
		}
		if mode == agent.ToolSearchOn {
			res.SearchTokens, res.Found = sizes, found
		} else {
			res.FullTokens = sizes
		}
	}
	say(fmt.Sprintf("agent, tool search: %d turns of three steps, %d tools, model and tools answering at once", o.Turns, o.StepTools))
	sb, err := NewSearchStepBench(o.StepTools)
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
			res.Step = append(res.Step, d/3)
		}
	}
	return res, nil
}

// searchTask runs the task once with toolSearch mode and returns each
// request's estimated prompt tokens, and whether the model found the tool
// through search_tools and called it.
func searchTask(ctx context.Context, n int, mode string) ([]int, bool, error) {
	f := fiber.New(context.Background(), "bench-search")
	defer f.Dispose(context.Background())
	reg := tools.New()
	if _, err := reg.Register(f, append(toolgen.Tools(n-1), searchTarget)...); err != nil {
		return nil, false, err
	}
	m := &scriptedModel{}
	cfg := agent.DefaultConfig()
	cfg.BaseURL = "http://model.invalid" // never dialled
	cfg.ToolSearch = mode
	cfg.MaxTools = n + 1 // off sends every tool: the measure, not DeepSeek's 128
	a := agent.New(cfg, reg, agent.Options{ID: "bench", Logger: slog.New(slog.DiscardHandler), HTTPClient: &http.Client{Transport: m}})
	var conv agent.Conversation
	_, err := a.Run(ctx, &conv, "What will the weather be in Lyon tomorrow?", func(agent.Event) {})
	if err != nil {
		return nil, false, err
	}
	return m.tokens, m.found, nil
}

// scriptedModel does the task from what each request carries: with
// search_tools among the tools and no result yet, it searches; with the
// search's answer, it calls the first tool named there if the request
// carries its schema; with the tool's result, it answers. Without
// search_tools it calls the weather tool at once.
type scriptedModel struct {
	mu     sync.Mutex
	tokens []int
	found  bool
}

func (m *scriptedModel) RoundTrip(req *http.Request) (*http.Response, error) {
	body, _ := io.ReadAll(req.Body)
	req.Body.Close()
	var b struct {
		Messages []struct {
			Role       string `json:"role"`
			Content    string `json:"content"`
			ToolCallID string `json:"tool_call_id"`
		} `json:"messages"`
		Tools []struct {
			Function struct {
				Name string `json:"name"`
			} `json:"function"`
		} `json:"tools"`
	}
	if err := json.Unmarshal(body, &b); err != nil || len(b.Messages) == 0 {
		return nil, fmt.Errorf("the request is not a chat completion: %v", err)
	}
	sent := map[string]bool{}
	for _, t := range b.Tools {
		sent[t.Function.Name] = true
	}
	m.mu.Lock()
	m.tokens = append(m.tokens, len(body)/4)
	m.mu.Unlock()
	last := b.Messages[len(b.Messages)-1]
	var reply fakellm.Reply
	switch {
	case last.Role == "user" && sent[agent.SearchToolName]:
		reply = fakellm.Call(fakellm.ToolCallSpec{ID: "search", Name: agent.SearchToolName, Arguments: `{"query":"weather forecast for a city"}`})
	case last.Role == "user":
		reply = fakellm.Call(fakellm.ToolCallSpec{ID: "call", Name: searchTarget.Name, Arguments: `{"city":"Lyon","days":1}`})
	case last.ToolCallID == "search":
		lines := strings.Split(last.Content, "\n")
		name := ""
		if len(lines) > 1 {
			name, _, _ = strings.Cut(lines[1], "  ")
		}
		if !sent[name] {
			reply = fakellm.Say("the tool was not found")
			break
		}
		m.mu.Lock()
		m.found = name == searchTarget.Name
		m.mu.Unlock()
		reply = fakellm.Call(fakellm.ToolCallSpec{ID: "call", Name: name, Arguments: `{"city":"Lyon","days":1}`})
	default:
		reply = fakellm.Say("Sunny in Lyon tomorrow, 21 °C.")
	}
	return &http.Response{
		StatusCode: http.StatusOK,
		Header:     http.Header{"Content-Type": {"text/event-stream"}},
		Body:       io.NopCloser(bytes.NewReader(sse(reply))),
		Request:    req,
	}, nil
}

// SearchStepBench runs turns in search mode against a model answering from
// memory: search_tools, then the weather tool, then the answer. What a
// turn costs is the harness's own work: deciding on tool search, the
// search (its index built once), the request with the tools found, the
// stream, the calls.
type SearchStepBench struct {
	f *fiber.Fiber
	a *agent.Agent
	n int
}

var (
	cannedSearch = sse(fakellm.Call(fakellm.ToolCallSpec{ID: "s", Name: agent.SearchToolName, Arguments: `{"query":"weather forecast for a city"}`}))
	cannedUse    = sse(fakellm.Call(fakellm.ToolCallSpec{ID: "c", Name: searchTarget.Name, Arguments: `{"city":"Lyon"}`}))
	cannedDone   = sse(fakellm.Say("Sunny in Lyon."))
)

// NewSearchStepBench sets up n tools (the default toolSearch, auto, turns
// search on) and an agent with the canned transport.
func NewSearchStepBench(n int) (*SearchStepBench, error) {
	b := &SearchStepBench{f: fiber.New(context.Background(), "bench-search-step")}
	reg := tools.New()
	if _, err := reg.Register(b.f, append(toolgen.Tools(n-1), searchTarget)...); err != nil {
		b.Close()
		return nil, err
	}
	cfg := agent.DefaultConfig()
	cfg.BaseURL = "http://model.invalid"
	b.a = agent.New(cfg, reg, agent.Options{ID: "bench", Logger: slog.New(slog.DiscardHandler), HTTPClient: &http.Client{Transport: b}})
	return b, nil
}

func (b *SearchStepBench) RoundTrip(req *http.Request) (*http.Response, error) {
	_, _ = io.Copy(io.Discard, req.Body)
	req.Body.Close()
	body := [][]byte{cannedSearch, cannedUse, cannedDone}[b.n%3]
	b.n++
	return &http.Response{
		StatusCode: http.StatusOK,
		Header:     http.Header{"Content-Type": {"text/event-stream"}},
		Body:       io.NopCloser(bytes.NewReader(body)),
		Request:    req,
	}, nil
}

// Turn runs one turn of three steps (in search mode: auto, with 1000
// tools) and returns its wall time.
func (b *SearchStepBench) Turn(ctx context.Context) (time.Duration, error) {
	var conv agent.Conversation
	searched := false
	start := time.Now()
	u, err := b.a.Run(ctx, &conv, "What will the weather be in Lyon tomorrow?", func(e agent.Event) {
		if e.Type == agent.EventToolSearch {
			searched = true
		}
	})
	d := time.Since(start)
	switch {
	case err != nil:
	case u.Steps != 3:
		err = fmt.Errorf("the turn made %d steps, want 3", u.Steps)
	case !searched:
		err = fmt.Errorf("the turn did not use tool search")
	}
	return d, err
}

// Close disposes the tools.
func (b *SearchStepBench) Close() { _ = b.f.Dispose(context.Background()) }
