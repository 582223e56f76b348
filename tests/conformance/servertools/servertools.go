// Package servertools is a test-only plugin kind, conformance-tools: the
// tools the MCP conformance suite's server scenarios call, registered
// natively on the tools service. Those that answer more than text set the
// result's Raw, the way an MCP server's tools do, so the gateway passes
// their content blocks on unchanged. It also registers the resources the
// resources scenarios read (resources.go) and, natively, the prompts the
// prompts scenarios get (prompts.go).
package servertools

import (
	"context"
	"encoding/json"

	"github.com/harness-go/harness/host"
	"github.com/harness-go/harness/plugins/prompts"
	"github.com/harness-go/harness/plugins/resources"
	"github.com/harness-go/harness/plugins/tools"
)

// KindName is the kind's name in cordis.yml.
const KindName = "conformance-tools"

func init() {
	host.Register(host.Kind{
		Name:   KindName,
		Doc:    "test only: the tools of the MCP conformance suite's server scenarios",
		Inject: []string{tools.Service, resources.Service, prompts.Service},
		New:    func() host.Plugin { return plugin{} },
	})
}

type plugin struct{}

// A 1x1 red PNG and eight silent samples of 8-bit WAV.
const (
	png = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAIAAACQd1PeAAAADElEQVR4nGP4z8AAAAMBAQDJ/pLvAAAAAElFTkSuQmCC"
	wav = "UklGRiwAAABXQVZFZm10IBAAAAABAAEAQB8AAEAfAAABAAgAZGF0YQgAAACAgICAgICAgA=="
)

// raw answers an MCP result, and text for the model.
func raw(text, result string) tools.Executor {
	return func(context.Context, json.RawMessage) (tools.Result, error) {
		return tools.Result{Text: text, Raw: json.RawMessage(result)}, nil
	}
}

func (plugin) Apply(ctx *host.Context) error {
	reg, err := tools.From(ctx)
	if err != nil {
		return err
	}
	noArgs := json.RawMessage(`{"type":"object","properties":{}}`)
	_, err = reg.Register(ctx.Fiber(),
		tools.Tool{
			Name: "test_simple_text", Description: "Answer a simple text.", Parameters: noArgs,
			Execute: func(context.Context, json.RawMessage) (tools.Result, error) {
				return tools.Result{Text: "This is a simple text response for testing."}, nil
			},
		},
		tools.Tool{
			Name: "test_image_content", Description: "Answer a 1x1 PNG.", Parameters: noArgs,
			Execute: raw("[image]", `{"content":[{"type":"image","data":"`+png+`","mimeType":"image/png"}]}`),
		},
		tools.Tool{
			Name: "test_audio_content", Description: "Answer a tiny WAV.", Parameters: noArgs,
			Execute: raw("[audio]", `{"content":[{"type":"audio","data":"`+wav+`","mimeType":"audio/wav"}]}`),
		},
		tools.Tool{
			Name: "test_embedded_resource", Description: "Answer an embedded text resource.", Parameters: noArgs,
			Execute: raw("[resource]", `{"content":[{"type":"resource","resource":{"uri":"test://embedded-resource","mimeType":"text/plain","text":"This is an embedded resource content."}}]}`),
		},
		tools.Tool{
			Name: "test_multiple_content_types", Description: "Answer text, an image and a resource.", Parameters: noArgs,
			Execute: raw("Multiple content types test:", `{"content":[{"type":"text","text":"Multiple content types test:"},{"type":"image","data":"`+png+`","mimeType":"image/png"},{"type":"resource","resource":{"uri":"test://mixed-content-resource","mimeType":"application/json","text":"{\"test\":\"data\",\"value\":123}"}}]}`),
		},
		tools.Tool{
			Name: "test_error_handling", Description: "Always fail.", Parameters: noArgs,
			Execute: func(context.Context, json.RawMessage) (tools.Result, error) {
				return tools.Result{Text: "This tool intentionally returns an error for testing", IsError: true}, nil
			},
		},
		tools.Tool{
			Name: "json_schema_2020_12_tool", Description: "Tool with JSON Schema 2020-12 features",
			Parameters: json.RawMessage(`{"$schema":"https://json-schema.org/draft/2020-12/schema","type":"object","$defs":{"address":{"$anchor":"addressDef","type":"object","properties":{"street":{"type":"string"},"city":{"type":"string"}}}},"properties":{"name":{"type":"string"},"address":{"$ref":"#/$defs/address"},"contactMethod":{"type":"string","enum":["phone","email"]},"phone":{"type":"string"},"email":{"type":"string"}},"allOf":[{"anyOf":[{"required":["phone"]},{"required":["email"]}]}],"if":{"properties":{"contactMethod":{"const":"phone"}},"required":["contactMethod"]},"then":{"required":["phone"]},"else":{"required":["email"]},"additionalProperties":false}`),
			Execute:    func(context.Context, json.RawMessage) (tools.Result, error) { return tools.Result{Text: "ok"}, nil },
		},
	)
	if err != nil {
		return err
	}
	trigger, err := promptTrigger(ctx)
	if err != nil {
		return err
	}
	if _, err = reg.Register(ctx.Fiber(), append(askingTools(reg, ctx), trigger)...); err != nil {
		return err
	}
	if err := registerPrompts(ctx); err != nil {
		return err
	}
	return registerResources(ctx)
}
