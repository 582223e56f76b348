package servertools

import (
	"context"
	"encoding/json"
	"strings"

	"github.com/harness-go/harness/host"
	"github.com/harness-go/harness/plugins/prompts"
)

// registerPrompts registers the prompts the suite's prompts and completion
// scenarios get, natively: under their own names, as the tools are
// (docs/rfc/0008-resources-prompts.md, "Native prompts").
// test_input_required_result_prompt asks the user through tools.Ask, as
// the input_required tools do; the gateway relays the question.
func registerPrompts(ctx *host.Context) error {
	reg, err := prompts.From(ctx)
	if err != nil {
		return err
	}
	fixed := func(messages ...string) func(context.Context, map[string]string) (prompts.Result, error) {
		return func(context.Context, map[string]string) (prompts.Result, error) {
			var res prompts.Result
			for _, m := range messages {
				res.Messages = append(res.Messages, prompts.Message{Role: "user", Content: json.RawMessage(m)})
			}
			return res, nil
		}
	}
	text := func(s string) string {
		b, _ := json.Marshal(map[string]string{"type": "text", "text": s})
		return string(b)
	}
	_, err = reg.Register(ctx.Fiber(),
		prompts.Prompt{
			RawName: "test_simple_prompt", Description: "A simple prompt without arguments.",
			Get: fixed(text("This is a simple prompt for testing.")),
		},
		prompts.Prompt{
			RawName: "test_prompt_with_arguments", Description: "A prompt with two required arguments.",
			Arguments: []prompts.Argument{
				{Name: "arg1", Description: "First test argument", Required: true},
				{Name: "arg2", Description: "Second test argument", Required: true},
			},
			Get: func(_ context.Context, args map[string]string) (prompts.Result, error) {
				return prompts.Result{Messages: []prompts.Message{prompts.TextMessage("user", "Prompt with arguments: arg1='"+args["arg1"]+"', arg2='"+args["arg2"]+"'")}}, nil
			},
			Complete: completeFrom("paris", "park", "party", "test", "testing"),
		},
		prompts.Prompt{
			RawName: "test_prompt_with_embedded_resource", Description: "A prompt that embeds a resource.",
			Arguments: []prompts.Argument{{Name: "resourceUri", Description: "URI of the resource to embed", Required: true}},
			Get: func(_ context.Context, args map[string]string) (prompts.Result, error) {
				block, _ := json.Marshal(map[string]any{"type": "resource", "resource": map[string]string{
					"uri": args["resourceUri"], "mimeType": "text/plain", "text": "Embedded resource content for testing.",
				}})
				return prompts.Result{Messages: []prompts.Message{
					{Role: "user", Content: block},
					prompts.TextMessage("user", "Please process the embedded resource above."),
				}}, nil
			},
		},
		prompts.Prompt{
			RawName: "test_prompt_with_image", Description: "A prompt with an image.",
			Get: fixed(`{"type":"image","data":"`+png+`","mimeType":"image/png"}`, text("Please analyze the image above.")),
		},
		prompts.Prompt{
			RawName: "test_input_required_result_prompt", Description: "A prompt that asks the user for its context first.",
			Get: func(ctx context.Context, _ map[string]string) (prompts.Result, error) {
				given, err := askText(ctx, "user_context", "What context should the prompt use?",
					`{"type":"object","properties":{"context":{"type":"string"}},"required":["context"]}`, "context")
				if err != nil {
					return prompts.Result{}, err
				}
				return prompts.Result{Messages: []prompts.Message{prompts.TextMessage("user", "Use this context: "+given)}}, nil
			},
		},
	)
	return err
}

// completeFrom completes an argument from values: those that start with
// what was typed.
func completeFrom(values ...string) func(context.Context, json.RawMessage) (json.RawMessage, error) {
	return func(_ context.Context, params json.RawMessage) (json.RawMessage, error) {
		var p struct {
			Argument struct {
				Value string `json:"value"`
			} `json:"argument"`
		}
		if err := json.Unmarshal(params, &p); err != nil {
			return nil, err
		}
		out := []string{}
		for _, v := range values {
			if strings.HasPrefix(v, p.Argument.Value) {
				out = append(out, v)
			}
		}
		return json.Marshal(map[string]any{"completion": map[string]any{"values": out, "total": len(out), "hasMore": false}})
	}
}
