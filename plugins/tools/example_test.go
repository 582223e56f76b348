package tools_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/harness-go/harness/fiber"
	"github.com/harness-go/harness/plugins/tools"
)

// A plugin registers its tools on its fiber; the model sees them sorted by
// name, and every call gives back a result, never a Go error.
func Example() {
	ctx := context.Background()
	reg := tools.New()
	plugin := fiber.New(ctx, "greeter")

	_, err := reg.Register(plugin,
		tools.Tool{
			Name:        "greet",
			Description: "Greet someone.",
			Parameters:  json.RawMessage(`{"type":"object","properties":{"who":{"type":"string"}},"required":["who"]}`),
			Execute: func(_ context.Context, args json.RawMessage) (tools.Result, error) {
				var in struct{ Who string }
				if err := json.Unmarshal(args, &in); err != nil || in.Who == "" {
					return tools.Result{Text: `expected {"who": "<name>"}`, IsError: true}, nil
				}
				return tools.Result{Text: "Hello, " + in.Who + "!"}, nil
			},
		},
		tools.Tool{
			Name:        "forget",
			Description: "Always fails.",
			Execute: func(context.Context, json.RawMessage) (tools.Result, error) {
				return tools.Result{}, errors.New("nothing to forget")
			},
		},
	)
	if err != nil {
		fmt.Println(err)
		return
	}

	fmt.Println(string(reg.ModelJSON()))
	for _, call := range []struct {
		name string
		args json.RawMessage
	}{{"greet", json.RawMessage(`{"who":"Ada"}`)}, {"greet", json.RawMessage(`{}`)}, {"forget", nil}, {"fly", nil}} {
		res := reg.Execute(ctx, call.name, call.args)
		fmt.Println(res.Text, res.IsError)
	}

	// Disposing the plugin's fiber takes its tools away.
	_ = plugin.Dispose(ctx)
	fmt.Println(string(reg.ModelJSON()))

	// Output:
	// [{"type":"function","function":{"name":"forget","description":"Always fails.","parameters":{"type":"object","properties":{}}}},{"type":"function","function":{"name":"greet","description":"Greet someone.","parameters":{"type":"object","properties":{"who":{"type":"string"}},"required":["who"]}}}]
	// Hello, Ada! false
	// Error: expected {"who": "<name>"} true
	// Error: nothing to forget true
	// Error: unknown tool "fly" true
	// []
}

// A name is owned by one registration at a time; a batch is registered whole
// or not at all.
func ExampleRegistry_Register() {
	ctx := context.Background()
	reg := tools.New()
	nop := func(context.Context, json.RawMessage) (tools.Result, error) { return tools.Result{}, nil }

	native := fiber.New(ctx, "native")
	defer native.Dispose(ctx)
	release, _ := reg.Register(native, tools.Tool{Name: "search", Execute: nop})

	mcp := fiber.New(ctx, "mcp")
	defer mcp.Dispose(ctx)
	_, err := reg.Register(mcp,
		tools.Tool{Name: "mcp__srv__search", Execute: nop},
		tools.Tool{Name: "search", Execute: nop},
	)
	fmt.Println(err)
	fmt.Println(reg.Names())

	_, err = reg.Register(mcp, tools.Tool{Name: "mcp__srv__search", Execute: nop})
	fmt.Println(err, reg.Names())

	// The release function unregisters before the fiber ends.
	_ = release(ctx)
	fmt.Println(reg.Names())

	// Output:
	// tool "search" is already registered
	// [search]
	// <nil> [mcp__srv__search search]
	// [mcp__srv__search]
}

// Execute turns every problem into an error result the model reads.
func ExampleRegistry_Execute() {
	ctx := context.Background()
	reg := tools.New()
	f := fiber.New(ctx, "plugin")
	defer f.Dispose(ctx)
	_, _ = reg.Register(f, tools.Tool{
		Name: "divide",
		Parameters: json.RawMessage(`{"type":"object","properties":{"a":{"type":"number"},"b":{"type":"number"}},
  "required":["a","b"]}`),
		Execute: func(_ context.Context, args json.RawMessage) (tools.Result, error) {
			var in struct{ A, B int }
			if err := json.Unmarshal(args, &in); err != nil {
				return tools.Result{}, errors.New("a and b must be integers")
			}
			if in.B == 0 {
				return tools.Result{Text: "division by zero", IsError: true}, nil
			}
			return tools.Result{Text: fmt.Sprint(in.A / in.B)}, nil
		},
	})
	for _, args := range []string{`{"a":7,"b":2}`, `{"a":1,"b":0}`, `{"a":"x"}`} {
		res := reg.Execute(ctx, "divide", json.RawMessage(args))
		fmt.Printf("%-14s → isError=%v %s\n", args, res.IsError, res.Text)
	}

	// Output:
	// {"a":7,"b":2}  → isError=false 3
	// {"a":1,"b":0}  → isError=true Error: division by zero
	// {"a":"x"}      → isError=true Error: a and b must be integers
}
