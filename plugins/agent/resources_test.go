package agent_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/harness-go/harness/internal/testkit/fakellm"
	"github.com/harness-go/harness/plugins/agent"
	"github.com/harness-go/harness/plugins/resources"
	"github.com/harness-go/harness/plugins/tools"
)

// toolNames are the names of a request's tools.
func toolNames(t *testing.T, raw json.RawMessage) []string {
	t.Helper()
	var list []struct {
		Function struct {
			Name string `json:"name"`
		} `json:"function"`
	}
	if err := json.Unmarshal(raw, &list); err != nil {
		t.Fatalf("the tools are not a list: %v\n%s", err, raw)
	}
	out := make([]string, len(list))
	for i, f := range list {
		out[i] = f.Function.Name
	}
	return out
}

// withDocs gives the fixture a resources registry holding server docs:
// a text resource, a binary one and a template.
func withDocs(x *fixture) {
	x.res = resources.New()
	text := "# Notes\nship on Friday"
	if _, err := x.res.Register(x.f, resources.Source{
		Server:    "docs",
		Resources: []resources.Resource{{URI: "file:///notes.md", Name: "notes", MIMEType: "text/markdown"}, {URI: "file:///logo.png", Name: "logo", MIMEType: "image/png"}},
		Templates: []resources.Template{{URITemplate: "file:///{path}", Name: "file"}},
		Read: func(_ context.Context, uri string) (resources.ReadResult, error) {
			if uri == "file:///logo.png" {
				return resources.ReadResult{Contents: []resources.Content{{URI: uri, MIMEType: "image/png", Blob: "iVBORw0KGgo="}}}, nil
			}
			return resources.ReadResult{Contents: []resources.Content{{URI: uri, MIMEType: "text/markdown", Text: &text}}}, nil
		},
	}); err != nil {
		x.t.Fatal(err)
	}
}

// TestResourceTools: with resources, the model gets the three tools, lists
// and reads through them (text inline, binary described, an unknown server
// an error it can read), and the results are cut at toolResultBytes.
func TestResourceTools(t *testing.T) {
	t.Parallel()
	x := newFixture(t, nil,
		fakellm.Call(
			fakellm.ToolCallSpec{ID: "c1", Name: agent.ReadResourceTool, Arguments: `{"server":"docs","uri":"file:///notes.md"}`},
			fakellm.ToolCallSpec{ID: "c2", Name: agent.ReadResourceTool, Arguments: `{"server":"docs","uri":"file:///logo.png"}`},
			fakellm.ToolCallSpec{ID: "c3", Name: agent.ListResourcesTool, Arguments: `{"server":"nope"}`},
		),
		fakellm.Say("read"))
	withDocs(x)
	x.register(tools.Tool{Name: "echo", Execute: func(context.Context, json.RawMessage) (tools.Result, error) { return tools.Result{}, nil }})
	var conv agent.Conversation
	o := x.turn(&conv, "what do the notes say?")
	if o.err != nil {
		t.Fatal(o.err)
	}
	reqs := x.srv.Requests()
	if got := strings.Join(toolNames(t, reqs[0].Tools), ","); got != "echo,list_mcp_resources,list_mcp_resource_templates,read_mcp_resource" {
		t.Fatalf("tools sent: %s", got)
	}
	results := map[string]string{}
	for _, m := range reqs[1].Messages {
		if m.Role == "tool" {
			results[m.ToolCallID] = m.Content
		}
	}
	if results["c1"] != "# Notes\nship on Friday" {
		t.Fatalf("text read: %q", results["c1"])
	}
	if results["c2"] != "[binary content: image/png, 8 bytes, not shown]" {
		t.Fatalf("binary read: %q", results["c2"])
	}
	if !strings.HasPrefix(results["c3"], `Error: no server "nope" has resources; servers with resources: docs`) {
		t.Fatalf("unknown server: %q", results["c3"])
	}
}

func TestResourceToolsList(t *testing.T) {
	t.Parallel()
	x := newFixture(t, func(c *agent.Config) { c.ToolResultBytes = 40 },
		fakellm.Call(
			fakellm.ToolCallSpec{ID: "c1", Name: agent.ListResourcesTool, Arguments: `{}`},
			fakellm.ToolCallSpec{ID: "c2", Name: agent.ListTemplatesTool, Arguments: `{"server":"docs"}`},
		),
		fakellm.Say("listed"))
	withDocs(x)
	var conv agent.Conversation
	if o := x.turn(&conv, "list"); o.err != nil {
		t.Fatal(o.err)
	}
	results := map[string]string{}
	for _, m := range x.srv.Requests()[1].Messages {
		if m.Role == "tool" {
			results[m.ToolCallID] = m.Content
		}
	}
	// toolResultBytes 40 cuts them, and says so.
	if !strings.HasPrefix(results["c1"], `{"resources":[{"server":"docs","uri":"`) || !strings.Contains(results["c1"], "(toolResultBytes)") {
		t.Fatalf("list: %q", results["c1"])
	}
	if !strings.HasPrefix(results["c2"], `{"resourceTemplates":[{"server":"docs"`) {
		t.Fatalf("templates: %q", results["c2"])
	}
}

// TestResourceToolsCount: without resources there are none; the filters
// hide them like any tool; maxTools counts them.
func TestResourceToolsCount(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		docs  bool
		edit  func(*agent.Config)
		tools string
		err   string
	}{
		{"no resources", false, nil, "echo", ""},
		{"resources", true, nil, "echo,list_mcp_resources,list_mcp_resource_templates,read_mcp_resource", ""},
		{"disabledTools", true, func(c *agent.Config) { c.DisabledTools = []string{"list_mcp_resource_templates"} }, "echo,list_mcp_resources,read_mcp_resource", ""},
		{"maxTools", true, func(c *agent.Config) { c.MaxTools = 3; c.ToolSearch = agent.ToolSearchOff }, "", "4 tools"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			x := newFixture(t, tc.edit, fakellm.Say("ok"))
			if tc.docs {
				withDocs(x)
			}
			x.register(tools.Tool{Name: "echo", Execute: func(context.Context, json.RawMessage) (tools.Result, error) { return tools.Result{}, nil }})
			var conv agent.Conversation
			o := x.turn(&conv, "hi")
			if tc.err != "" {
				if o.err == nil || !strings.Contains(o.err.Error(), tc.err) {
					t.Fatalf("err = %v, want %q", o.err, tc.err)
				}
				return
			}
			if o.err != nil {
				t.Fatal(o.err)
			}
			if got := strings.Join(toolNames(t, x.srv.Requests()[0].Tools), ","); got != tc.tools {
				t.Fatalf("tools %s, want %s", got, tc.tools)
			}
		})
	}
}
