// Package greet is a sibling plugin kind: one tool, greet, that says hello
// to a name. It is written against the public host API only.
//
//	# cordis.yml
//	- id: hello
//	  name: greet
//	  config:
//	    greeting: Hi   # what to say (default Hello)
package greet

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/harness-go/harness/host"
	"github.com/harness-go/harness/plugins/tools"
)

func init() {
	host.Register(host.Kind{
		Name: "greet",                // `name:` in cordis.yml
		Doc:  "says hello to a name", // harness schema shows it
		// Applied once the tools service exists.
		Inject: []string{tools.Service},
		// A fresh value holding the defaults; config: is decoded into it.
		New: func() host.Plugin { return &Plugin{Greeting: "Hello"} },
	})
}

// Plugin is one greet instance; its exported fields are its configuration.
type Plugin struct {
	Greeting string `yaml:"greeting" desc:"what to say"`
}

// Validate is optional; a FieldError points the message at the key.
func (p *Plugin) Validate() error {
	if p.Greeting == "" {
		return host.FieldErrorf("greeting", "must not be empty")
	}
	return nil
}

// Apply registers the tool. It is unregistered when the instance's fiber
// is disposed: when the entry is removed or changed, or the harness stops.
func (p *Plugin) Apply(ctx *host.Context) error {
	reg, err := tools.From(ctx)
	if err != nil {
		return err
	}
	_, err = reg.Register(ctx.Fiber(), tools.Tool{
		Name:        "greet",
		Description: "Greet someone by name.",
		Parameters:  json.RawMessage(`{"type":"object","properties":{"name":{"type":"string"}},"required":["name"]}`),
		Execute: func(_ context.Context, args json.RawMessage) (tools.Result, error) {
			var in struct {
				Name string `json:"name"`
			}
			if err := json.Unmarshal(args, &in); err != nil || in.Name == "" {
				return tools.Result{}, fmt.Errorf("greet needs a name")
			}
			return tools.Result{Text: p.Greeting + ", " + in.Name + "!"}, nil
		},
	})
	return err
}

var (
	_ host.Plugin    = (*Plugin)(nil)
	_ host.Validator = (*Plugin)(nil)
)
