package servertools

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/harness-go/harness/fiber"
	"github.com/harness-go/harness/host"
	"github.com/harness-go/harness/plugins/tools"
)

// The tools of the scenarios where the server asks its client (elicitation,
// sampling, roots, input_required results), reports progress or logs, or
// changes its list. They are native tools that ask through tools.Ask and
// tools.AskAll, and report through tools.Notify: how the gateway relays
// such questions to its client — a request on 2025-11-25, an
// input_required result on 2026-07-28 — is the gateway's business, and is
// what the scenarios test.

// askingTools are those tools; reg and the plugin's context serve
// test_trigger_tool_change.
func askingTools(reg *tools.Registry, hctx *host.Context) []tools.Tool {
	noArgs := json.RawMessage(`{"type":"object","properties":{}}`)
	nameSchema := `{"type":"object","properties":{"name":{"type":"string"}},"required":["name"]}`
	trigger := &toggle{reg: reg, f: hctx.Fiber()}
	return []tools.Tool{
		{
			Name: "test_tool_with_progress", Description: "Report progress 0, 50 and 100 of 100.", Parameters: noArgs,
			Execute: func(ctx context.Context, _ json.RawMessage) (tools.Result, error) {
				for i, p := range []int{0, 50, 100} {
					if i > 0 {
						if err := pause(ctx, 50*time.Millisecond); err != nil {
							return tools.Result{}, err
						}
					}
					tools.Notify(ctx, tools.Notification{Tool: "test_tool_with_progress", Method: tools.MethodProgress,
						Params: json.RawMessage(fmt.Sprintf(`{"progressToken":"native","progress":%d,"total":100}`, p))})
				}
				return tools.Result{Text: "progress reported"}, nil
			},
		},
		logging("test_tool_with_logging", noArgs),
		logging("test_logging_tool", noArgs),
		{
			Name: "test_elicitation", Description: "Ask the user for a username and an email.",
			Parameters: json.RawMessage(`{"type":"object","properties":{"message":{"type":"string"}},"required":["message"]}`),
			Execute: func(ctx context.Context, args json.RawMessage) (tools.Result, error) {
				var in struct {
					Message string `json:"message"`
				}
				_ = json.Unmarshal(args, &in)
				params, _ := json.Marshal(map[string]any{"message": in.Message, "requestedSchema": json.RawMessage(
					`{"type":"object","properties":{"username":{"type":"string","description":"User's response"},"email":{"type":"string","description":"User's email address"}},"required":["username","email"]}`)})
				answer, err := tools.Ask(ctx, tools.Question{Tool: "test_elicitation", Method: tools.MethodElicit, Params: params})
				if err != nil {
					return tools.Result{}, err
				}
				return tools.Result{Text: "User response: " + string(answer)}, nil
			},
		},
		{
			Name: "test_sampling", Description: "Ask the client's model to answer a prompt.",
			Parameters: json.RawMessage(`{"type":"object","properties":{"prompt":{"type":"string"}},"required":["prompt"]}`),
			Execute: func(ctx context.Context, args json.RawMessage) (tools.Result, error) {
				var in struct {
					Prompt string `json:"prompt"`
				}
				_ = json.Unmarshal(args, &in)
				answer, err := tools.Ask(ctx, tools.Question{Tool: "test_sampling", Method: tools.MethodSample, Params: sampling(in.Prompt, 100)})
				if err != nil {
					return tools.Result{}, err
				}
				return tools.Result{Text: "LLM response: " + sampled(answer)}, nil
			},
		},
		elicitation("test_elicitation_sep1034_defaults", "Please review and update the form fields with defaults",
			`{"type":"object","properties":{"name":{"type":"string","description":"User name","default":"John Doe"},"age":{"type":"integer","description":"User age","default":30},"score":{"type":"number","description":"User score","default":95.5},"status":{"type":"string","description":"User status","enum":["active","inactive","pending"],"default":"active"},"verified":{"type":"boolean","description":"Verification status","default":true}},"required":[]}`),
		elicitation("test_elicitation_sep1330_enums", "Please select options from the enum fields",
			`{"type":"object","properties":{"untitledSingle":{"type":"string","description":"Select one option","enum":["option1","option2","option3"]},"titledSingle":{"type":"string","description":"Select one option with titles","oneOf":[{"const":"value1","title":"First Option"},{"const":"value2","title":"Second Option"},{"const":"value3","title":"Third Option"}]},"legacyEnum":{"type":"string","description":"Select one option (legacy)","enum":["opt1","opt2","opt3"],"enumNames":["Option One","Option Two","Option Three"]},"untitledMulti":{"type":"array","description":"Select multiple options","minItems":1,"maxItems":3,"items":{"type":"string","enum":["option1","option2","option3"]}},"titledMulti":{"type":"array","description":"Select multiple options with titles","minItems":1,"maxItems":3,"items":{"anyOf":[{"const":"value1","title":"First Choice"},{"const":"value2","title":"Second Choice"},{"const":"value3","title":"Third Choice"}]}}},"required":[]}`),
		{
			Name: "test_input_required_result_elicitation", Description: "Ask the user's name, then greet.", Parameters: noArgs,
			Execute: func(ctx context.Context, _ json.RawMessage) (tools.Result, error) {
				name, err := askText(ctx, "user_name", "What is your name?", nameSchema, "name")
				if err != nil {
					return tools.Result{}, err
				}
				return tools.Result{Text: "Hello, " + name + "!"}, nil
			},
		},
		{
			Name: "test_input_required_result_sampling", Description: "Ask the client's model a question.", Parameters: noArgs,
			Execute: func(ctx context.Context, _ json.RawMessage) (tools.Result, error) {
				answer, err := tools.Ask(ctx, tools.Question{ID: "capital_question", Method: tools.MethodSample, Params: sampling("What is the capital of France?", 100)})
				if err != nil {
					return tools.Result{}, err
				}
				return tools.Result{Text: "The model said: " + sampled(answer)}, nil
			},
		},
		{
			Name: "test_input_required_result_list_roots", Description: "Ask the client for its roots.", Parameters: noArgs,
			Execute: func(ctx context.Context, _ json.RawMessage) (tools.Result, error) {
				answer, err := tools.Ask(ctx, tools.Question{ID: "client_roots", Method: tools.MethodRoots, Params: json.RawMessage(`{}`)})
				if err != nil {
					return tools.Result{}, err
				}
				return tools.Result{Text: "The client's roots: " + string(answer)}, nil
			},
		},
		{
			Name: "test_input_required_result_request_state", Description: "Ask for a confirmation; the state is checked.", Parameters: noArgs,
			Execute: confirm("confirm", "state-ok: the request state came back intact and the user answered "),
		},
		{
			Name: "test_input_required_result_tampered_state", Description: "Ask for a confirmation with integrity-protected state.", Parameters: noArgs,
			Execute: confirm("confirm", "state-ok: confirmed "),
		},
		{
			Name: "test_input_required_result_multiple_inputs", Description: "Ask for a name, a greeting and the roots at once.", Parameters: noArgs,
			Execute: func(ctx context.Context, _ json.RawMessage) (tools.Result, error) {
				answers := tools.AskAll(ctx, []tools.Question{
					{ID: "user_name", Method: tools.MethodElicit, Params: elicit("What is your name?", nameSchema)},
					{ID: "greeting", Method: tools.MethodSample, Params: sampling("Generate a greeting", 50)},
					{ID: "client_roots", Method: tools.MethodRoots, Params: json.RawMessage(`{}`)},
				})
				var parts []string
				for _, a := range answers {
					if a.Err != nil {
						return tools.Result{}, a.Err
					}
					parts = append(parts, string(a.Result))
				}
				return tools.Result{Text: fmt.Sprintf("name %s, greeting %s, roots %s", parts[0], parts[1], parts[2])}, nil
			},
		},
		{
			Name: "test_input_required_result_multi_round", Description: "Ask a name, then a colour.", Parameters: noArgs,
			Execute: func(ctx context.Context, _ json.RawMessage) (tools.Result, error) {
				name, err := askText(ctx, "step1", "Step 1: What is your name?", nameSchema, "name")
				if err != nil {
					return tools.Result{}, err
				}
				color, err := askText(ctx, "step2", "Step 2: What is your favorite color?", `{"type":"object","properties":{"color":{"type":"string"}},"required":["color"]}`, "color")
				if err != nil {
					return tools.Result{}, err
				}
				return tools.Result{Text: fmt.Sprintf("%s likes %s", name, color)}, nil
			},
		},
		{
			Name: "test_input_required_result_capabilities", Description: "Ask only what the client can answer.", Parameters: noArgs,
			Execute: func(ctx context.Context, _ json.RawMessage) (tools.Result, error) {
				// The gateway declines, at once, what the client did not
				// declare; the rest reaches the client.
				answers := tools.AskAll(ctx, []tools.Question{
					{ID: "user_name", Method: tools.MethodElicit, Params: elicit("What is your name?", nameSchema)},
					{ID: "summary", Method: tools.MethodSample, Params: sampling("Summarise the day", 50)},
				})
				return tools.Result{Text: fmt.Sprintf("elicitation: %s; sampling: %s", answerText(answers[0]), answerText(answers[1]))}, nil
			},
		},
		{
			Name: "test_missing_capability", Description: "Needs sampling: fails without it.", Parameters: noArgs,
			Execute: func(ctx context.Context, _ json.RawMessage) (tools.Result, error) {
				answer, err := tools.Ask(ctx, tools.Question{ID: "needed", Method: tools.MethodSample, Params: sampling("Say hello", 20)})
				if err != nil {
					return tools.Result{}, fmt.Errorf("this tool needs sampling: %w", err)
				}
				return tools.Result{Text: sampled(answer)}, nil
			},
		},
		{
			Name: "test_streaming_elicitation", Description: "Ask the user while the call runs.", Parameters: noArgs,
			Execute: func(ctx context.Context, _ json.RawMessage) (tools.Result, error) {
				name, err := askText(ctx, "user_name", "What is your name?", nameSchema, "name")
				if err != nil {
					return tools.Result{}, err
				}
				return tools.Result{Text: "Hello, " + name + "!"}, nil
			},
		},
		{
			// A parameter that travels in a header too (SEP-2243): mcp-go's
			// server checks the header against the body.
			Name: "test_header_param", Description: "Echo a region given in the body and the Mcp-Param-Region header.",
			Parameters: json.RawMessage(`{"type":"object","properties":{"region":{"type":"string","x-mcp-header":"Region"}},"required":["region"]}`),
			Execute: func(_ context.Context, args json.RawMessage) (tools.Result, error) {
				return tools.Result{Text: "region: " + string(args)}, nil
			},
		},
		{
			Name: "test_trigger_tool_change", Description: "Change the tool list: replace test_dynamic_tool_N by the next.", Parameters: noArgs,
			Execute: func(context.Context, json.RawMessage) (tools.Result, error) {
				return trigger.flip()
			},
		},
	}
}

// logging is a tool that logs three messages at info level, 50 ms apart.
func logging(name string, params json.RawMessage) tools.Tool {
	return tools.Tool{
		Name: name, Description: "Log three messages while it runs.", Parameters: params,
		Execute: func(ctx context.Context, _ json.RawMessage) (tools.Result, error) {
			for i, msg := range []string{"Tool execution started", "Tool processing data", "Tool execution completed"} {
				if i > 0 {
					if err := pause(ctx, 50*time.Millisecond); err != nil {
						return tools.Result{}, err
					}
				}
				params, _ := json.Marshal(map[string]any{"level": "info", "logger": "conformance", "data": msg})
				tools.Notify(ctx, tools.Notification{Tool: name, Method: tools.MethodLog, Params: params})
			}
			return tools.Result{Text: "logged three messages"}, nil
		},
	}
}

// elicitation is a tool that asks one form and answers with the result.
func elicitation(name, message, schema string) tools.Tool {
	return tools.Tool{
		Name: name, Description: "Ask the user to fill a form.", Parameters: json.RawMessage(`{"type":"object","properties":{}}`),
		Execute: func(ctx context.Context, _ json.RawMessage) (tools.Result, error) {
			answer, err := tools.Ask(ctx, tools.Question{Tool: name, Method: tools.MethodElicit, Params: elicit(message, schema)})
			if err != nil {
				return tools.Result{}, err
			}
			var r struct {
				Action  string          `json:"action"`
				Content json.RawMessage `json:"content"`
			}
			_ = json.Unmarshal(answer, &r)
			return tools.Result{Text: fmt.Sprintf("Elicitation completed: action=%s, content=%s", r.Action, r.Content)}, nil
		},
	}
}

// confirm is a tool that asks for a yes and answers prefix and the answer.
func confirm(id, prefix string) tools.Executor {
	return func(ctx context.Context, _ json.RawMessage) (tools.Result, error) {
		answer, err := tools.Ask(ctx, tools.Question{ID: id, Method: tools.MethodElicit, Params: elicit("Please confirm",
			`{"type":"object","properties":{"ok":{"type":"boolean"}},"required":["ok"]}`)})
		if err != nil {
			return tools.Result{}, err
		}
		return tools.Result{Text: prefix + string(answer)}, nil
	}
}

// askText asks one string field and returns it; a decline or cancel is an
// error.
func askText(ctx context.Context, id, message, schema, field string) (string, error) {
	answer, err := tools.Ask(ctx, tools.Question{ID: id, Method: tools.MethodElicit, Params: elicit(message, schema)})
	if err != nil {
		return "", err
	}
	var r struct {
		Action  string         `json:"action"`
		Content map[string]any `json:"content"`
	}
	if err := json.Unmarshal(answer, &r); err != nil {
		return "", err
	}
	if r.Action != "accept" {
		return "", fmt.Errorf("the user chose %q", r.Action)
	}
	return fmt.Sprint(r.Content[field]), nil
}

func elicit(message, schema string) json.RawMessage {
	b, _ := json.Marshal(map[string]any{"message": message, "requestedSchema": json.RawMessage(schema)})
	return b
}

func sampling(prompt string, maxTokens int) json.RawMessage {
	b, _ := json.Marshal(map[string]any{
		"messages":  []any{map[string]any{"role": "user", "content": map[string]any{"type": "text", "text": prompt}}},
		"maxTokens": maxTokens,
	})
	return b
}

// sampled is the text of a sampling result.
func sampled(raw json.RawMessage) string {
	var r struct {
		Content struct {
			Text string `json:"text"`
		} `json:"content"`
	}
	if json.Unmarshal(raw, &r) == nil && r.Content.Text != "" {
		return r.Content.Text
	}
	return string(raw)
}

func answerText(a tools.Answer) string {
	if a.Err != nil {
		return "not answered (" + a.Err.Error() + ")"
	}
	return string(a.Result)
}

// pause waits d or until ctx ends.
func pause(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return context.Cause(ctx)
	}
}

// toggle replaces the tool test_dynamic_tool_N by test_dynamic_tool_N+1:
// every call changes the served list (a tool added then removed within the
// gateway's coalescing window would leave it as it was, and announce
// nothing).
type toggle struct {
	reg *tools.Registry
	f   *fiber.Fiber

	mu      sync.Mutex
	n       int
	release fiber.Disposer
}

func (t *toggle) flip() (tools.Result, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.release != nil {
		if err := t.release(context.Background()); err != nil {
			return tools.Result{}, err
		}
		t.release = nil
	}
	t.n++
	name := fmt.Sprintf("test_dynamic_tool_%d", t.n)
	rel, err := t.reg.Register(t.f, tools.Tool{
		Name: name, Description: "A tool test_trigger_tool_change added.",
		Parameters: json.RawMessage(`{"type":"object","properties":{}}`),
		Execute: func(context.Context, json.RawMessage) (tools.Result, error) {
			return tools.Result{Text: "dynamic"}, nil
		},
	})
	if err != nil {
		return tools.Result{}, errors.Join(fmt.Errorf("adding %s", name), err)
	}
	t.release = rel
	return tools.Result{Text: name + " is served now"}, nil
}
