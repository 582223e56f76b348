// Package completion is MCP's completion/complete as the prompts and
// resources services ask it of a server and read its answer
// (docs/rfc/0008-resources-prompts.md, "Completion").
package completion

import (
	"encoding/json"
	"fmt"
)

// Result is what a server suggests for the value of an argument (MCP's
// CompleteResult.completion): at most Max values, best first; Total and
// HasMore say whether there are more.
type Result struct {
	Values  []string `json:"values"`
	Total   int      `json:"total,omitempty"`
	HasMore bool     `json:"hasMore,omitempty"`
}

// Max is MCP's bound on the values of one completion.
const Max = 100

// Params are the params of completion/complete for ref (a prompt's
// {"type": "ref/prompt", "name"} or a template's {"type": "ref/resource",
// "uri"}): the argument, its value so far, and the arguments already given
// as the context, when there are any.
func Params(ref map[string]string, arg, value string, given map[string]string) json.RawMessage {
	p := map[string]any{"ref": ref, "argument": map[string]string{"name": arg, "value": value}}
	if len(given) > 0 {
		p["context"] = map[string]any{"arguments": given}
	}
	b, _ := json.Marshal(p) // strings and maps of strings always encode
	return b
}

// Parse reads a server's CompleteResult; Values is never nil.
func Parse(raw json.RawMessage) (Result, error) {
	var res struct {
		Completion Result `json:"completion"`
	}
	if err := json.Unmarshal(raw, &res); err != nil {
		return Result{}, fmt.Errorf("completion/complete: the result is not a completion: %w", err)
	}
	if res.Completion.Values == nil {
		res.Completion.Values = []string{}
	}
	return res.Completion, nil
}

// Request is what a completion/complete asks: the argument, its value so
// far and the arguments already given.
type Request struct {
	Arg, Value string
	Given      map[string]string
}

// ReadParams reads the params of a completion/complete.
func ReadParams(params json.RawMessage) (Request, error) {
	var in struct {
		Argument struct {
			Name  string `json:"name"`
			Value string `json:"value"`
		} `json:"argument"`
		Context struct {
			Arguments map[string]string `json:"arguments"`
		} `json:"context"`
	}
	if err := json.Unmarshal(params, &in); err != nil {
		return Request{}, fmt.Errorf("completion/complete: the params are not a completion request: %w", err)
	}
	return Request{Arg: in.Argument.Name, Value: in.Argument.Value, Given: in.Context.Arguments}, nil
}

// Answer is the CompleteResult of values: the first Max of them, the rest
// counted in Total.
func Answer(values []string) json.RawMessage {
	r := Result{Values: values}
	if r.Values == nil {
		r.Values = []string{}
	}
	if len(values) > Max {
		r.Values, r.Total, r.HasMore = values[:Max], len(values), true
	}
	b, _ := json.Marshal(map[string]Result{"completion": r})
	return b
}
