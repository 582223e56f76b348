package agent

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/harness-go/harness/plugins/resources"
	"github.com/harness-go/harness/plugins/tools"
)

// The resource tools (docs/rfc/0008-resources-prompts.md, "For the model"):
// while any server has resources or templates, a step offers three tools of
// the agent's own, beside the registry's: list_mcp_resources {server?},
// list_mcp_resource_templates {server?} and read_mcp_resource {server, uri}.
// The agent's filters and maxTools count them like any tool; a tool of the
// registry with one of their names is hidden by ours.
const (
	ListResourcesTool = "list_mcp_resources"
	ListTemplatesTool = "list_mcp_resource_templates"
	ReadResourceTool  = "read_mcp_resource"
)

// resourceToolNames are the resource tools, in the model list's order.
var resourceToolNames = []string{ListResourcesTool, ListTemplatesTool, ReadResourceTool}

// resourceToolDefs are their elements of the model's list.
var resourceToolDefs = map[string][]byte{
	ListResourcesTool: toolDef(ListResourcesTool,
		"List the resources the MCP servers offer (files, records, pages): each one's server, uri, name, title, description, mimeType and size, as JSON. Read one with "+ReadResourceTool+".",
		`{"type":"object","properties":{"server":{"type":"string","description":"Only this server's resources (default: every server's)."}}}`),
	ListTemplatesTool: toolDef(ListTemplatesTool,
		"List the resource templates the MCP servers offer: uriTemplate patterns (RFC 6570) of resources you can read with "+ReadResourceTool+" once you fill in the variables, as JSON.",
		`{"type":"object","properties":{"server":{"type":"string","description":"Only this server's templates (default: every server's)."}}}`),
	ReadResourceTool: toolDef(ReadResourceTool,
		"Read one resource of an MCP server by its uri (from "+ListResourcesTool+", or a template filled in). Text comes back as it is; binary content is described (mimeType, size).",
		`{"type":"object","properties":{"server":{"type":"string","description":"The server, as list_mcp_resources names it."},"uri":{"type":"string","description":"The resource's uri."}},"required":["server","uri"]}`),
}

func toolDef(name, desc string, params string) []byte {
	return marshal(map[string]any{
		"type":     "function",
		"function": map[string]any{"name": name, "description": desc, "parameters": json.RawMessage(params)},
	})
}

// offeredResourceTools returns the resource tools a step offers now: none
// without resources, else those the filters let through.
func (a *Agent) offeredResourceTools() []string {
	if a.res == nil || a.res.Len() == 0 {
		return nil
	}
	var out []string
	for _, n := range resourceToolNames {
		if a.keep == nil || a.keep(n) {
			out = append(out, n)
		}
	}
	return out
}

// isResourceTool reports whether name is one of ours offered now.
func (a *Agent) isResourceTool(name string) bool {
	for _, n := range a.offeredResourceTools() {
		if n == name {
			return true
		}
	}
	return false
}

// withResourceTools appends the offered resource tools to a model list of
// n tools, and returns the list and its count.
func withResourceTools(list []byte, n int, offered []string) ([]byte, int) {
	if len(offered) == 0 {
		return list, n
	}
	b := make([]byte, 0, len(list)+len(offered)*600)
	b = append(b, list[:len(list)-1]...) // without its ]
	for _, name := range offered {
		if n > 0 {
			b = append(b, ',')
		}
		b = append(b, resourceToolDefs[name]...)
		n++
	}
	return append(b, ']'), n
}

// keepRegistry is the filter of the registry's tools when the resource
// tools are offered: ours hide a registry tool of the same name.
func (a *Agent) keepRegistry(offered []string) func(string) bool {
	if len(offered) == 0 {
		return a.keep
	}
	return func(name string) bool {
		for _, n := range offered {
			if n == name {
				return false
			}
		}
		return a.keep == nil || a.keep(name)
	}
}

// resourceCall runs one of the resource tools.
func (a *Agent) resourceCall(ctx context.Context, name string, args json.RawMessage) tools.Result {
	var in struct {
		Server string `json:"server"`
		URI    string `json:"uri"`
	}
	if err := json.Unmarshal(args, &in); err != nil {
		return errorResult("the arguments do not fit: %v", err)
	}
	if in.Server != "" && !a.res.Has(in.Server) {
		return errorResult("no server %q has resources; servers with resources: %s", in.Server, strings.Join(a.res.Servers(), ", "))
	}
	switch name {
	case ListResourcesTool:
		list := a.res.List(in.Server)
		if list == nil {
			list = []resources.Resource{}
		}
		return tools.Result{Text: string(marshal(map[string]any{"resources": list}))}
	case ListTemplatesTool:
		list := a.res.Templates(in.Server)
		if list == nil {
			list = []resources.Template{}
		}
		return tools.Result{Text: string(marshal(map[string]any{"resourceTemplates": list}))}
	}
	if in.Server == "" || in.URI == "" {
		return errorResult(`%s needs {"server": ..., "uri": ...}`, ReadResourceTool)
	}
	res, err := a.res.Read(ctx, in.Server, in.URI)
	if err != nil {
		if errors.Is(err, resources.ErrUnknownServer) {
			return errorResult("%v", err)
		}
		return errorResult("reading %s of %s: %v", in.URI, in.Server, a.secrets.Redact(err.Error()))
	}
	return tools.Result{Text: readText(res)}
}

// readText is a read as the model reads it: each text as it is, each
// binary content described; several contents one after the other, each
// under its uri.
func readText(res resources.ReadResult) string {
	if len(res.Contents) == 0 {
		return "(the resource has no content)"
	}
	part := func(c resources.Content) string {
		if c.IsText() {
			return *c.Text
		}
		n := base64.StdEncoding.DecodedLen(len(c.Blob)) - strings.Count(c.Blob, "=")
		mime := c.MIMEType
		if mime == "" {
			mime = "unknown type"
		}
		return fmt.Sprintf("[binary content: %s, %d bytes, not shown]", mime, n)
	}
	if len(res.Contents) == 1 {
		return part(res.Contents[0])
	}
	parts := make([]string, len(res.Contents))
	for i, c := range res.Contents {
		parts[i] = fmt.Sprintf("--- %s ---\n%s", c.URI, part(c))
	}
	return strings.Join(parts, "\n\n")
}

func errorResult(format string, args ...any) tools.Result {
	return tools.Result{Text: "Error: " + fmt.Sprintf(format, args...), IsError: true}
}
