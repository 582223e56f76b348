package servertools

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"sync"

	"github.com/harness-go/harness/fiber"
	"github.com/harness-go/harness/host"
	"github.com/harness-go/harness/plugins/prompts"
	"github.com/harness-go/harness/plugins/resources"
	"github.com/harness-go/harness/plugins/tools"
)

// SourceName is the server name of the conformance resources.
const SourceName = "conformance"

// templateURI is what test://template/{id}/data expands to.
var templateURI = regexp.MustCompile(`^test://template/([^/]+)/data$`)

// registerResources registers the resources and the template the suite's
// resources scenarios read, on the resources service; the gateway serves
// them (docs/rfc/0008-resources-prompts.md, "Through the gateway"). Reads
// answer raw, as an MCP server's would; subscribing is accepted (the
// scenarios check the answers, not updates).
func registerResources(ctx *host.Context) error {
	reg, err := resources.From(ctx)
	if err != nil {
		return err
	}
	text := func(uri, mime, s string) resources.ReadResult {
		b, _ := json.Marshal(map[string]any{"contents": []map[string]any{{"uri": uri, "mimeType": mime, "text": s}}})
		return resources.ReadResult{Raw: b}
	}
	_, err = reg.Register(ctx.Fiber(), resources.Source{
		Server: SourceName,
		Resources: []resources.Resource{
			{URI: "test://static-text", Name: "static-text", Description: "A static text resource.", MIMEType: "text/plain"},
			{URI: "test://static-binary", Name: "static-binary", Description: "A 1x1 PNG.", MIMEType: "image/png"},
			{URI: "test://watched-resource", Name: "watched-resource", Description: "A resource to subscribe to.", MIMEType: "text/plain"},
		},
		Templates: []resources.Template{
			{URITemplate: "test://template/{id}/data", Name: "template-data", Description: "Data for an id.", MIMEType: "application/json"},
		},
		Read: func(_ context.Context, uri string) (resources.ReadResult, error) {
			switch uri {
			case "test://static-text":
				return text(uri, "text/plain", "This is the content of the static text resource."), nil
			case "test://static-binary":
				return resources.ReadResult{Raw: json.RawMessage(`{"contents":[{"uri":"test://static-binary","mimeType":"image/png","blob":"` + png + `"}]}`)}, nil
			case "test://watched-resource":
				return text(uri, "text/plain", "Watched resource content."), nil
			}
			if m := templateURI.FindStringSubmatch(uri); m != nil {
				data, _ := json.Marshal(map[string]any{"id": m[1], "templateTest": true, "data": "Data for ID: " + m[1]})
				return text(uri, "application/json", string(data)), nil
			}
			return resources.ReadResult{}, fmt.Errorf("resource %q not found", uri)
		},
		Subscribe:   func(context.Context, string) error { return nil },
		Unsubscribe: func(context.Context, string) error { return nil },
	})
	return err
}

// promptToggle is test_trigger_prompt_change: it replaces the prompt
// test_dynamic_prompt_N by the next, so that the gateway's prompt list
// changes (the suite waits for notifications/prompts/list_changed).
type promptToggle struct {
	reg *prompts.Registry
	f   *fiber.Fiber

	mu  sync.Mutex
	n   int
	set *prompts.Set
}

func (t *promptToggle) flip() (tools.Result, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.n++
	name := fmt.Sprintf("test_dynamic_prompt_%d", t.n)
	set, err := t.reg.Replace(t.f, t.set, prompts.Prompt{
		RawName: name, Description: "A prompt test_trigger_prompt_change added.",
		Get: func(context.Context, map[string]string) (prompts.Result, error) {
			return prompts.Result{Messages: []prompts.Message{prompts.TextMessage("user", "dynamic")}}, nil
		},
	})
	if err != nil {
		return tools.Result{}, fmt.Errorf("adding the prompt %s: %w", name, err)
	}
	t.set = set
	return tools.Result{Text: name + " is served now"}, nil
}

// promptTrigger is the tool test_trigger_prompt_change.
func promptTrigger(ctx *host.Context) (tools.Tool, error) {
	reg, err := prompts.From(ctx)
	if err != nil {
		return tools.Tool{}, err
	}
	t := &promptToggle{reg: reg, f: ctx.Fiber()}
	return tools.Tool{
		Name: "test_trigger_prompt_change", Description: "Change the prompt list: replace test_dynamic_prompt_N by the next.",
		Parameters: json.RawMessage(`{"type":"object","properties":{}}`),
		Execute:    func(context.Context, json.RawMessage) (tools.Result, error) { return t.flip() },
	}, nil
}
