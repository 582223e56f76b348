package mcpserver

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/harness-go/harness/plugins/tools"
	"github.com/harness-go/harness/plugins/tools/search"
)

// The tools of mode meta. Their names, descriptions and schemas never
// change, so a client that ignores list_changed still reaches every tool
// the harness has now.
const (
	SearchTools  = "search_tools"
	DescribeTool = "describe_tool"
	CallTool     = "call_tool"
)

// searchLimit is how many tools search_tools lists when the call names no
// limit.
const searchLimit = 50

func (g *Gateway) metaTools() []server.ServerTool {
	return []server.ServerTool{
		{
			Tool: mcp.Tool{
				Name: SearchTools,
				Description: "Search the harness's tools. Returns one line per matching tool, best first: its name and the first line of its description. " +
					"Tools are ranked by how well they match the query's words (BM25 over names, descriptions and parameter names; any case); an empty query lists every tool. " +
					"The set of tools changes while the harness runs: search again rather than remembering. Then use describe_tool for a tool's parameters and call_tool to call it.",
				RawInputSchema: json.RawMessage(`{"type":"object","properties":{"query":{"type":"string","description":"Words to look for; empty lists every tool."},"limit":{"type":"integer","minimum":1,"description":"The most tools to list (default 50)."}}}`),
				Annotations:    mcp.ToolAnnotation{ReadOnlyHint: mcp.ToBoolPtr(true), OpenWorldHint: mcp.ToBoolPtr(false)},
			},
			Handler: g.searchTools,
		},
		{
			Tool: mcp.Tool{
				Name:           DescribeTool,
				Description:    "Describe one of the harness's tools: its full description and the JSON Schema of its arguments (inputSchema), as JSON.",
				RawInputSchema: json.RawMessage(`{"type":"object","properties":{"name":{"type":"string","description":"The tool's name, as search_tools lists it."}},"required":["name"]}`),
				Annotations:    mcp.ToolAnnotation{ReadOnlyHint: mcp.ToBoolPtr(true), OpenWorldHint: mcp.ToBoolPtr(false)},
			},
			Handler: g.describeTool,
		},
		{
			Tool: mcp.Tool{
				Name:           CallTool,
				Description:    "Call one of the harness's tools by name with its arguments (an object matching the schema describe_tool gives). Returns the tool's own result.",
				RawInputSchema: json.RawMessage(`{"type":"object","properties":{"name":{"type":"string","description":"The tool's name, as search_tools lists it."},"arguments":{"type":"object","description":"The tool's arguments."}},"required":["name"]}`),
			},
			Handler: g.callTool,
		},
	}
}

func errorResult(format string, args ...any) *mcp.CallToolResult {
	return &mcp.CallToolResult{Content: []mcp.Content{mcp.NewTextContent(fmt.Sprintf(format, args...))}, IsError: true}
}

func (g *Gateway) searchTools(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	var in struct {
		Query string `json:"query"`
		Limit int    `json:"limit"`
	}
	if err := json.Unmarshal(arguments(req), &in); err != nil {
		return errorResult("search_tools: the arguments do not match the schema: %v", err), nil
	}
	if in.Limit <= 0 {
		in.Limit = searchLimit
	}
	g.waitReady(ctx)
	empty := strings.TrimSpace(in.Query) == ""
	var lines []string
	matched := 0
	if empty {
		list := g.reg.List()
		matched = len(list)
		for _, t := range list[:min(len(list), in.Limit)] {
			lines = append(lines, searchLine(t.Name, firstLine(t.Description)))
		}
	} else {
		var hits []search.Hit
		hits, matched = g.index.of(g.reg).Search(in.Query, in.Limit)
		for _, h := range hits {
			lines = append(lines, searchLine(h.Name, h.Line))
		}
	}
	var b strings.Builder
	switch {
	case matched == 0 && empty:
		b.WriteString("The harness has no tools right now.")
	case matched == 0:
		fmt.Fprintf(&b, "No tool matches %q. An empty query lists every tool.", in.Query)
	default:
		b.WriteString(strings.Join(lines, "\n"))
		if matched > len(lines) {
			fmt.Fprintf(&b, "\n… and %d more: narrow the query, or raise the limit.", matched-len(lines))
		}
	}
	return mcp.NewToolResultText(b.String()), nil
}

func searchLine(name, first string) string {
	if first == "" {
		return name
	}
	return name + "  " + first
}

// metaIndex is the ranked search of meta mode's search_tools
// (plugins/tools/search, as the agent's tool search), kept until the
// registry changes.
type metaIndex struct {
	mu      sync.Mutex
	version uint64
	index   *search.Index
}

// of returns the index of reg's tools now.
func (m *metaIndex) of(reg *tools.Registry) *search.Index {
	v := reg.Version()
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.index == nil || m.version != v {
		// Listed after the version: a change in between makes the index
		// newer than its version says, and the next search builds it again.
		m.index, m.version = search.New(reg.List()), v
	}
	return m.index
}

func (g *Gateway) describeTool(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	var in struct {
		Name string `json:"name"`
	}
	if err := json.Unmarshal(arguments(req), &in); err != nil || in.Name == "" {
		return errorResult("describe_tool: give the tool's name: {\"name\": \"…\"}"), nil
	}
	g.waitRegistered(ctx, in.Name)
	t, ok := g.reg.Lookup(in.Name)
	if !ok {
		return errorResult("unknown tool %q: search_tools lists the tools the harness has now", in.Name), nil
	}
	b, err := json.Marshal(servedTool(t))
	if err != nil {
		return errorResult("describe_tool %q: %v", in.Name, err), nil
	}
	return mcp.NewToolResultText(string(b)), nil
}

func (g *Gateway) callTool(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	var in struct {
		Name      string          `json:"name"`
		Arguments json.RawMessage `json:"arguments"`
	}
	if err := json.Unmarshal(arguments(req), &in); err != nil || in.Name == "" {
		return errorResult("call_tool: give the tool's name and its arguments: {\"name\": \"…\", \"arguments\": {…}}"), nil
	}
	args := tools.ObjectArgs(in.Arguments)
	g.waitRegistered(ctx, in.Name)
	if _, ok := g.reg.Lookup(in.Name); !ok {
		return errorResult("unknown tool %q: search_tools lists the tools the harness has now", in.Name), nil
	}
	return g.execute(ctx, req, in.Name, args)
}

// waitRegistered waits until name is registered or the gateway is ready,
// or ctx ends.
func (g *Gateway) waitRegistered(ctx context.Context, name string) {
	g.waitUntil(ctx, func() (bool, <-chan struct{}) {
		ch := g.reg.Changed()
		_, ok := g.reg.Lookup(name)
		return ok, ch
	})
}
