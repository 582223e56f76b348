package servertools

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"

	"github.com/harness-go/harness/host"
	"github.com/harness-go/harness/plugins/resources"
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
