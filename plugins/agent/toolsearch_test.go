package agent_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/harness-go/harness/internal/testkit/fakellm"
	"github.com/harness-go/harness/internal/testkit/toolgen"
	"github.com/harness-go/harness/plugins/agent"
	"github.com/harness-go/harness/plugins/tools"
)

// weather is the tool the scripted model has to find among the others.
func weather(calls *atomic.Int32) tools.Tool {
	return tools.Tool{
		Name:        "mcp__weather__get_forecast",
		Description: "Get the weather forecast for a city: temperature, rain and wind, hour by hour.\nUses the national service.",
		Parameters:  json.RawMessage(`{"type":"object","properties":{"city":{"type":"string"},"days":{"type":"integer"}},"required":["city"]}`),
		Execute: func(_ context.Context, args json.RawMessage) (tools.Result, error) {
			calls.Add(1)
			return tools.Result{Text: "sunny in " + string(args)}, nil
		},
	}
}

// topHit reads the first tool a search_tools result names.
func topHit(result string) string {
	lines := strings.Split(result, "\n")
	if len(lines) < 2 {
		return ""
	}
	name, _, _ := strings.Cut(lines[1], "  ")
	return name
}

// A scripted model finds and calls a tool among 500 through search_tools:
// the first request carries search_tools alone, the model searches, the
// next request carries the tools it found with their schemas, byte for
// byte, and the model calls the one it wanted by name.
func TestToolSearchFindsAndCallsATool(t *testing.T) {
	t.Parallel()
	var ran atomic.Int32
	x := newFixture(t, nil)
	x.register(append(toolgen.Tools(499), weather(&ran))...)
	x.srv.Func(func(req *fakellm.Request) fakellm.Reply {
		switch last := req.Last(); {
		case last.Role == "user":
			return fakellm.Call(fakellm.ToolCallSpec{ID: "s1", Name: agent.SearchToolName, Arguments: `{"query":"weather forecast for a city"}`})
		case last.ToolCallID == "s1":
			name := topHit(last.Content)
			if !slices.Contains(req.ToolNames, name) {
				return fakellm.Say(fmt.Sprintf("%s was found but not sent: %v", name, req.ToolNames))
			}
			return fakellm.Call(fakellm.ToolCallSpec{ID: "c1", Name: name, Arguments: `{"city":"Lyon"}`})
		}
		return fakellm.Say("It is sunny in Lyon.")
	})
	var conv agent.Conversation
	o := x.turn(&conv, "what is the weather in Lyon tomorrow?")
	if o.err != nil || o.text() != "It is sunny in Lyon." {
		t.Fatalf("err %v, text %q", o.err, o.text())
	}
	if ran.Load() != 1 {
		t.Fatalf("the weather tool ran %d times", ran.Load())
	}
	reqs := x.srv.Requests()
	if len(reqs) != 3 {
		t.Fatalf("%d requests", len(reqs))
	}
	if !slices.Equal(reqs[0].ToolNames, []string{agent.SearchToolName}) {
		t.Fatalf("first request's tools: %v", reqs[0].ToolNames)
	}
	// The tools found are sent as the registry holds them, after
	// search_tools, in the registry's order.
	found := reqs[1].ToolNames[1:]
	if reqs[1].ToolNames[0] != agent.SearchToolName || len(found) != agent.DefaultSearchLimit || found[0] != "mcp__weather__get_forecast" && !slices.Contains(found, "mcp__weather__get_forecast") {
		t.Fatalf("second request's tools: %v", reqs[1].ToolNames)
	}
	want, _ := x.reg.ModelSubset(func(n string) bool { return slices.Contains(found, n) })
	if !bytes.HasSuffix(reqs[1].Tools, want[1:]) {
		t.Fatal("the tools found are not the registry's bytes")
	}
	if !slices.Equal(conv.Loaded(), found) && len(conv.Loaded()) != len(found) {
		t.Fatalf("conversation loaded %v, sent %v", conv.Loaded(), found)
	}
	// The search's answer: the best first, with scores and first lines.
	res := o.of(agent.EventToolResult)[0].Text
	if topHit(res) != "mcp__weather__get_forecast" || !strings.Contains(res, "Get the weather forecast for a city: temperature, rain and wind, hour by hour.\n") ||
		strings.Contains(res, "national service") || !strings.HasPrefix(res, "8 of ") {
		t.Fatalf("search result:\n%s", res)
	}
	// One tool_search event per request: 500 tools, 1 sent, then 9.
	var ev []string
	for _, e := range o.of(agent.EventToolSearch) {
		b, _ := e.MarshalJSON()
		ev = append(ev, string(b))
	}
	wantEv := []string{
		`{"type":"tool_search","available":500,"sent":1,"loaded":0}`,
		`{"type":"tool_search","available":500,"sent":9,"loaded":8}`,
		`{"type":"tool_search","available":500,"sent":9,"loaded":8}`,
	}
	if !slices.Equal(ev, wantEv) {
		t.Fatalf("events\n%s\nwant\n%s", strings.Join(ev, "\n"), strings.Join(wantEv, "\n"))
	}
	// The prompt's tools in search mode against every schema: the figure
	// the bench records, here only bounded.
	all := x.reg.ModelJSON()
	if len(reqs[1].Tools)*100 > len(all)*15 {
		t.Fatalf("search mode sent %d bytes of tools, full %d", len(reqs[1].Tools), len(all))
	}
	// The next turn of the conversation keeps what was found.
	x.srv.Func(func(req *fakellm.Request) fakellm.Reply { return fakellm.Say("again") })
	x.turn(&conv, "and now?")
	if got := x.srv.Requests()[3].ToolNames; !slices.Equal(got, reqs[2].ToolNames) {
		t.Fatalf("next turn sends %v", got)
	}
	conv.Reset()
	x.turn(&conv, "new")
	if got := x.srv.Requests()[4].ToolNames; !slices.Equal(got, []string{agent.SearchToolName}) {
		t.Fatalf("after Reset: %v", got)
	}
}

// When tool search is on: toolSearch on always; auto when the schemas
// would take more than toolSearchTokens or there are more than maxTools;
// off never.
func TestToolSearchModes(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		tools  int
		edit   func(*agent.Config)
		search bool
		reason string
	}{
		{"auto, few tools", 5, nil, false, ""},
		{"auto, 30 tools: about 3 400 tokens", 30, nil, false, ""},
		{"auto, 100 tools: past 10 000 tokens", 100, nil, true, "their schemas take about"},
		{"auto, a lower threshold", 30, func(c *agent.Config) { c.ToolSearchTokens = 1000 }, true, "more than toolSearchTokens (1000)"},
		{"auto, more than maxTools", 30, func(c *agent.Config) { c.MaxTools = 20 }, true, "30 tools, more than maxTools (20)"},
		{"on", 5, func(c *agent.Config) { c.ToolSearch = agent.ToolSearchOn }, true, "toolSearch: on"},
		{"off", 100, func(c *agent.Config) { c.ToolSearch = agent.ToolSearchOff }, false, ""},
		{"filters count", 100, func(c *agent.Config) { c.EnabledTools = []string{"mcp__files__*"} }, false, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			x := newFixture(t, tc.edit, fakellm.Say("ok"))
			x.register(toolgen.Tools(tc.tools)...)
			info := x.agent().Info()
			if info.Searching != tc.search || !strings.Contains(info.SearchReason, tc.reason) {
				t.Fatalf("info %+v", info)
			}
			var conv agent.Conversation
			o := x.turn(&conv, "hi")
			if o.err != nil {
				t.Fatal(o.err)
			}
			names := x.srv.Wait(1, waitFor).ToolNames
			if searched := slices.Equal(names, []string{agent.SearchToolName}); searched != tc.search {
				t.Fatalf("sent %d tools (%v…)", len(names), names[:min(3, len(names))])
			}
			if len(o.of(agent.EventToolSearch)) > 0 != tc.search {
				t.Fatal("tool_search event")
			}
		})
	}
}

// Always-loaded tools (the agent's alwaysLoad patterns, a tool's
// AlwaysLoad) are sent at every step in search mode; search_tools does not
// load them twice.
func TestToolSearchAlwaysLoad(t *testing.T) {
	t.Parallel()
	x := newFixture(t, func(c *agent.Config) {
		c.ToolSearch = agent.ToolSearchOn
		c.AlwaysLoad = []string{"mcp__chat__*_message"}
	})
	ts := toolgen.Tools(200)
	for i := range ts {
		if ts[i].Name == "mcp__files__get_document" {
			ts[i].AlwaysLoad = true
		}
	}
	x.register(ts...)
	x.srv.Func(func(req *fakellm.Request) fakellm.Reply {
		if req.Last().Role == "user" {
			return fakellm.Call(fakellm.ToolCallSpec{ID: "s", Name: agent.SearchToolName, Arguments: `{"query":"files get document","limit":3}`})
		}
		return fakellm.Say("ok")
	})
	var conv agent.Conversation
	if o := x.turn(&conv, "hi"); o.err != nil {
		t.Fatal(o.err)
	}
	first := x.srv.Requests()[0].ToolNames
	want := []string{agent.SearchToolName, "mcp__chat__add_message", "mcp__chat__archive_message", "mcp__chat__copy_message", "mcp__chat__export_message",
		"mcp__chat__get_message", "mcp__chat__list_message", "mcp__chat__move_message", "mcp__chat__remove_message", "mcp__chat__rename_message",
		"mcp__chat__update_message", "mcp__files__get_document"}
	if !slices.Equal(first, want) {
		t.Fatalf("first request %v", first)
	}
	// get_document ranks first but is loaded already: the other two found
	// are added.
	second := x.srv.Requests()[1].ToolNames
	if len(second) != len(want)+2 || len(conv.Loaded()) != 2 || slices.Contains(conv.Loaded(), "mcp__files__get_document") {
		t.Fatalf("second request %v, loaded %v", second, conv.Loaded())
	}
}

// maxTools bounds what search mode sends: the tools found longest ago make
// room for new ones, and the search result says which went.
func TestToolSearchStaysWithinMaxTools(t *testing.T) {
	t.Parallel()
	x := newFixture(t, func(c *agent.Config) { c.ToolSearch = agent.ToolSearchOn; c.MaxTools = 6 })
	x.register(toolgen.Tools(200)...)
	queries := []string{"document", "folder"}
	x.srv.Func(func(req *fakellm.Request) fakellm.Reply {
		if req.N <= len(queries) {
			return fakellm.Call(fakellm.ToolCallSpec{ID: fmt.Sprint("s", req.N), Name: agent.SearchToolName, Arguments: fmt.Sprintf(`{"query":%q,"limit":4}`, queries[req.N-1])})
		}
		return fakellm.Say("ok")
	})
	var conv agent.Conversation
	o := x.turn(&conv, "hi")
	if o.err != nil {
		t.Fatal(o.err)
	}
	for _, r := range x.srv.Requests() {
		if len(r.ToolNames) > 6 {
			t.Fatalf("request %d sent %d tools", r.N, len(r.ToolNames))
		}
	}
	loaded := conv.Loaded()
	if len(loaded) != 5 || !strings.Contains(loaded[4], "folder") || !strings.Contains(loaded[0], "document") {
		t.Fatalf("loaded %v", loaded)
	}
	if res := o.of(agent.EventToolResult)[1].Text; !strings.Contains(res, "To stay within maxTools (6), these are no longer loaded (search again to load them): mcp__") {
		t.Fatalf("second search:\n%s", res)
	}
}

// A tool the model calls by name without having been sent (it knew it)
// runs, and is sent from the next step on; search_tools is the agent's own
// only in search mode.
func TestToolSearchCallsByName(t *testing.T) {
	t.Parallel()
	var ran atomic.Int32
	x := newFixture(t, func(c *agent.Config) { c.ToolSearch = agent.ToolSearchOn },
		fakellm.Call(fakellm.ToolCallSpec{ID: "c", Name: "mcp__weather__get_forecast", Arguments: `{"city":"Oslo"}`}),
		fakellm.Call(fakellm.ToolCallSpec{ID: "s", Name: agent.SearchToolName, Arguments: `{"query":""}`}),
		fakellm.Say("ok"))
	x.register(weather(&ran))
	var conv agent.Conversation
	o := x.turn(&conv, "hi")
	if o.err != nil || ran.Load() != 1 {
		t.Fatalf("err %v, ran %d", o.err, ran.Load())
	}
	if got := x.srv.Requests()[1].ToolNames; !slices.Equal(got, []string{agent.SearchToolName, "mcp__weather__get_forecast"}) {
		t.Fatalf("second request %v", got)
	}
	if r := o.of(agent.EventToolResult)[1]; !r.IsError || !strings.Contains(r.Text, "search_tools needs a query") {
		t.Fatalf("empty query: %+v", r)
	}
	// toolSearch off: search_tools is an unknown tool like any other.
	y := newFixture(t, func(c *agent.Config) { c.ToolSearch = agent.ToolSearchOff },
		fakellm.Call(fakellm.ToolCallSpec{ID: "s", Name: agent.SearchToolName, Arguments: `{"query":"x"}`}), fakellm.Say("ok"))
	o = y.turn(&conv, "hi")
	if r := o.of(agent.EventToolResult); len(r) != 1 || r[0].Text != `Error: unknown tool "search_tools"` {
		t.Fatalf("off: %+v", r)
	}
}

// The always-loaded tools and search_tools must fit maxTools: an error
// naming them otherwise, before any request.
func TestToolSearchAlwaysLoadPastMaxTools(t *testing.T) {
	t.Parallel()
	x := newFixture(t, func(c *agent.Config) {
		c.ToolSearch = agent.ToolSearchOn
		c.MaxTools = 3
		c.AlwaysLoad = []string{"*"}
	})
	x.register(toolgen.Tools(5)...)
	var conv agent.Conversation
	o := x.turn(&conv, "hi")
	if !errors.Is(o.err, agent.ErrTooManyTools) || !strings.Contains(o.err.Error(), "5 always-loaded tools and search_tools") || len(x.srv.Requests()) != 0 {
		t.Fatalf("err %v, %d requests", o.err, len(x.srv.Requests()))
	}
	if conv.Len() != 0 {
		t.Fatalf("the refused turn left %d messages", conv.Len())
	}
}

// In search mode a registry tool named search_tools is hidden by the
// agent's own: one tool of that name is sent, and a call of it searches.
func TestToolSearchHidesARegistryToolOfItsName(t *testing.T) {
	t.Parallel()
	x := newFixture(t, func(c *agent.Config) { c.ToolSearch = agent.ToolSearchOn; c.AlwaysLoad = []string{"*"} },
		fakellm.Call(fakellm.ToolCallSpec{ID: "s", Name: agent.SearchToolName, Arguments: `{"query":"forecast"}`}), fakellm.Say("ok"))
	var ran atomic.Int32
	x.register(tools.Tool{Name: agent.SearchToolName, Execute: says("the registry's")}, weather(&ran))
	var conv agent.Conversation
	o := x.turn(&conv, "hi")
	if names := x.srv.Wait(1, waitFor).ToolNames; !slices.Equal(names, []string{agent.SearchToolName, "mcp__weather__get_forecast"}) {
		t.Fatalf("sent %v", names)
	}
	if r := o.of(agent.EventToolResult); len(r) != 1 || !strings.HasPrefix(r[0].Text, "1 of 1 matching tools") {
		t.Fatalf("results %+v", r)
	}
}
