// Package toolgen makes tool sets of realistic size for tests and
// benchmarks: the tools of several MCP servers, each with a description of
// a sentence or two and a schema of two to four parameters, as ordinary
// npm servers list them (about 450 bytes a tool in the model's list).
package toolgen

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/harness-go/harness/plugins/tools"
)

var (
	servers = []string{"files", "chat", "tracker", "cloud", "browser"}
	verbs   = []string{"list", "get", "add", "update", "remove", "archive", "copy", "move", "rename", "export"}
	objects = []string{"document", "folder", "message", "channel", "ticket", "label", "bucket", "instance",
		"page", "tab", "comment", "attachment", "member", "role", "snapshot", "schedule", "report", "template",
		"webhook", "secret"}
	params = []string{"id", "name", "path", "limit", "cursor", "owner", "target", "recursive", "format", "note"}
)

// Tools returns n tools named mcp__<server>__<verb>_<object>[_<k>], sorted
// by nothing in particular, each answering "ok" at once. Their words avoid
// "issue", "weather", "forecast", "query" and "sql", so a test can add a
// tool that only those words find.
func Tools(n int) []tools.Tool {
	out := make([]tools.Tool, 0, n)
	for i := 0; len(out) < n; i++ {
		server := servers[i%len(servers)]
		verb := verbs[(i/len(servers))%len(verbs)]
		object := objects[(i/(len(servers)*len(verbs)))%len(objects)]
		round := i / (len(servers) * len(verbs) * len(objects))
		name := fmt.Sprintf("mcp__%s__%s_%s", server, verb, object)
		if round > 0 {
			name += fmt.Sprintf("_%d", round+1)
		}
		var props []string
		for k := range 2 + i%3 {
			p := params[(i+k*3)%len(params)]
			props = append(props, fmt.Sprintf(`%q:{"type":"string","description":"The %s of the %s."}`, p, p, object))
		}
		schema := `{"type":"object","properties":{` + strings.Join(props, ",") + `},"required":[` + fmt.Sprintf("%q", params[i%len(params)]) + `]}`
		out = append(out, tools.Tool{
			Name: name,
			Description: fmt.Sprintf("%s %s %s in the %s service. Returns the %s as JSON, with its id and when it last changed; fails when the %s does not exist or you may not see it.",
				strings.ToUpper(verb[:1])+verb[1:], article(object), object, server, object, object),
			Parameters: json.RawMessage(schema),
			Execute: func(context.Context, json.RawMessage) (tools.Result, error) {
				return tools.Result{Text: "ok"}, nil
			},
		})
	}
	return out
}

func article(word string) string {
	if strings.ContainsRune("aeiou", rune(word[0])) {
		return "an"
	}
	return "a"
}
