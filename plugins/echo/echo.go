// Package echo is a small native tool plugin: it registers an `echo` tool and
// a `clock` tool on the tools service, and, as the example of the other two
// services, one resource (echo://about on the resources service) and one
// prompt (repeat on the prompts service: a native prompt, under its own
// name as the tools are). It
// is written only against the public host API and is the model to copy for a
// new plugin: a config struct with defaults, validation that points at the
// key, tools (resources, prompts) tied to the instance's fiber, and a status.
//
//	# cordis.yml
//	- id: echo
//	  name: echo
//	  config:
//	    prefix: demo_       # optional: tools become demo_echo, demo_clock,
//	                        # the prompt demo_repeat, the resource's
//	                        # server demo_echo
//	    timezone: UTC       # default zone of the clock tool
//	    greet: true         # optional: a greet tool that asks your name
//
// The greet tool shows how a native tool asks whoever drives the harness
// while it runs (tools.Ask): the console on a terminal shows the form,
// `harness serve` relays it to its MCP client, anything else declines.
package echo

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/harness-go/harness/host"
	"github.com/harness-go/harness/plugins/prompts"
	"github.com/harness-go/harness/plugins/resources"
	"github.com/harness-go/harness/plugins/tools"
)

func init() {
	host.Register(host.Kind{
		Name:   "echo",
		Doc:    "native example tools: echo a message back, tell the time",
		Inject: []string{tools.Service, resources.Service, prompts.Service},
		New:    func() host.Plugin { return &Plugin{Timezone: "UTC"} },
	})
}

// Plugin is one echo instance; its exported fields are its configuration.
type Plugin struct {
	// Prefix is put in front of both tool names.
	Prefix string `yaml:"prefix" json:"prefix,omitempty" desc:"Put in front of both tool names."`
	// Timezone is the IANA zone the clock uses when the call names none.
	Timezone string `yaml:"timezone" json:"timezone,omitempty" desc:"IANA time zone of the clock tool (default UTC)."`
	// Greet adds the tool greet, which asks the person's name.
	Greet bool `yaml:"greet" json:"greet,omitempty" desc:"Add the tool greet, which asks your name (a form) before it answers: a native tool asking whoever drives the harness."`

	// mu guards names: the host calls Status from any goroutine (a
	// Snapshot), even while Apply runs.
	mu    sync.Mutex
	names []string
}

// Validate checks the configuration; host turns the FieldErrors into
// file:line:column messages.
func (p *Plugin) Validate() error {
	if p.Prefix != "" && !tools.NamePattern.MatchString(p.Prefix+"repeat") { // the longest name
		return host.FieldErrorf("prefix", "%q would make invalid tool names (letters, digits, _ and - only)", p.Prefix)
	}
	if _, err := time.LoadLocation(p.Timezone); err != nil {
		return host.FieldErrorf("timezone", "unknown time zone %q", p.Timezone)
	}
	return nil
}

// Apply registers the tools. They are unregistered when the instance's fiber
// is disposed; nothing else needs cleaning up.
func (p *Plugin) Apply(ctx *host.Context) error {
	reg, err := tools.From(ctx)
	if err != nil {
		return err
	}
	zone, _ := time.LoadLocation(p.Timezone)
	batch := []tools.Tool{
		{
			Name:        p.Prefix + "echo",
			Description: "Echo a message back unchanged.",
			Parameters:  json.RawMessage(`{"type":"object","properties":{"message":{"type":"string","description":"The text to echo."}},"required":["message"]}`),
			Annotations: tools.ReadOnly(),
			Execute:     echo,
		},
		{
			Name:        p.Prefix + "clock",
			Description: "Tell the current date and time.",
			Parameters:  json.RawMessage(`{"type":"object","properties":{"timezone":{"type":"string","description":"An IANA time zone such as Europe/Paris; default ` + p.Timezone + `."}}}`),
			Annotations: tools.ReadOnly(),
			Execute:     func(ctx context.Context, args json.RawMessage) (tools.Result, error) { return clock(zone, args) },
		},
	}
	if p.Greet {
		batch = append(batch, tools.Tool{
			Name:        p.Prefix + "greet",
			Description: "Greet the person, after asking how to call them.",
			Parameters:  json.RawMessage(`{"type":"object","properties":{}}`),
			// It asks the person, and changes nothing.
			Annotations: tools.ReadOnly(),
			Execute:     greet(p.Prefix + "greet"),
		})
	}
	if _, err := reg.Register(ctx.Fiber(), batch...); err != nil {
		return err
	}
	if err := p.registerExtras(ctx); err != nil {
		return err
	}
	names := make([]string, len(batch))
	for i, t := range batch {
		names[i] = t.Name
	}
	p.mu.Lock()
	p.names = names
	p.mu.Unlock()
	ctx.Logger().Debug("tools registered", "tools", strings.Join(names, ", "))
	return nil
}

// AboutURI is the uri of the echo plugin's resource.
const AboutURI = "echo://about"

// registerExtras registers the resource echo://about of the server
// <prefix>echo and the native prompt <prefix>repeat: the example of a
// native plugin on the resources and prompts services. Both go with the
// instance's fiber.
func (p *Plugin) registerExtras(ctx *host.Context) error {
	res, err := resources.From(ctx)
	if err != nil {
		return err
	}
	pr, err := prompts.From(ctx)
	if err != nil {
		return err
	}
	server, echoTool := p.Prefix+"echo", p.Prefix+"echo"
	about := "The echo plugin registers the tools " + p.Prefix + "echo and " + p.Prefix + "clock (time zone " + p.Timezone + "), this resource, and the prompt " + p.Prefix + "repeat.\n"
	if _, err := res.Register(ctx.Fiber(), resources.Source{
		Server:    server,
		Resources: []resources.Resource{{URI: AboutURI, Name: "about", Title: "About the echo plugin", Description: "What the echo plugin offers.", MIMEType: "text/plain"}},
		Read: func(_ context.Context, uri string) (resources.ReadResult, error) {
			if uri != AboutURI {
				return resources.ReadResult{}, fmt.Errorf("resource %q not found", uri)
			}
			return resources.ReadResult{Contents: []resources.Content{{URI: uri, MIMEType: "text/plain", Text: &about}}}, nil
		},
	}); err != nil {
		return err
	}
	_, err = pr.Register(ctx.Fiber(), prompts.Prompt{
		RawName: p.Prefix + "repeat", Description: "Ask the model to repeat a message through the echo tool.",
		Arguments: []prompts.Argument{{Name: "message", Description: "What to repeat.", Required: true}},
		Get: func(_ context.Context, args map[string]string) (prompts.Result, error) {
			return prompts.Result{Messages: []prompts.Message{prompts.TextMessage("user", "Call the tool "+echoTool+" with the message "+strconv.Quote(args["message"])+", and tell me what it answered.")}}, nil
		},
		// Suggested messages (completion/complete): those that start with
		// what is typed.
		Complete: prompts.CompleteWith(func(arg, value string, _ map[string]string) []string {
			var out []string
			for _, m := range []string{"hello", "hello world", "good morning"} {
				if arg == "message" && strings.HasPrefix(m, value) {
					out = append(out, m)
				}
			}
			return out
		}),
	})
	return err
}

// Status reports the registered tool names.
func (p *Plugin) Status() any {
	p.mu.Lock()
	defer p.mu.Unlock()
	return map[string]any{"tools": p.names, "timezone": p.Timezone}
}

func echo(_ context.Context, args json.RawMessage) (tools.Result, error) {
	var in struct {
		Message *string `json:"message"`
	}
	if err := json.Unmarshal(args, &in); err != nil || in.Message == nil {
		return tools.Result{Text: `expected {"message": "<text>"}`, IsError: true}, nil
	}
	return tools.Result{Text: *in.Message}, nil
}

// greetForm is what greet asks: a name (required) and a manner, which
// defaults to plain.
const greetForm = `{"message":"How should I greet you?","requestedSchema":{"type":"object","properties":{"name":{"type":"string","title":"Your name","minLength":1},"manner":{"type":"string","title":"Manner","enum":["plain","cheerful"],"default":"plain"}},"required":["name"]}}`

// greet asks the person's name, through the call's front, and greets.
func greet(name string) tools.Executor {
	return func(ctx context.Context, _ json.RawMessage) (tools.Result, error) {
		raw, err := tools.Ask(ctx, tools.Question{Tool: name, Method: tools.MethodElicit, Params: json.RawMessage(greetForm)})
		if err != nil {
			return tools.Result{}, err
		}
		var a struct {
			Action  string `json:"action"`
			Content struct {
				Name   string `json:"name"`
				Manner string `json:"manner"`
			} `json:"content"`
		}
		if err := json.Unmarshal(raw, &a); err != nil {
			return tools.Result{}, fmt.Errorf("the answer %s: %w", raw, err)
		}
		switch {
		case a.Action != "accept":
			return tools.Result{Text: "Hello, whoever you are (you chose to " + a.Action + ")."}, nil
		case a.Content.Manner == "cheerful":
			return tools.Result{Text: "Hello, " + a.Content.Name + "! Lovely to meet you!"}, nil
		}
		return tools.Result{Text: "Hello, " + a.Content.Name + "."}, nil
	}
}

func clock(zone *time.Location, args json.RawMessage) (tools.Result, error) {
	var in struct {
		Timezone string `json:"timezone"`
	}
	_ = json.Unmarshal(args, &in)
	if in.Timezone != "" {
		z, err := time.LoadLocation(in.Timezone)
		if err != nil {
			return tools.Result{Text: fmt.Sprintf("unknown time zone %q", in.Timezone), IsError: true}, nil
		}
		zone = z
	}
	return tools.Result{Text: time.Now().In(zone).Format(time.RFC3339)}, nil
}

var (
	_ host.Plugin         = (*Plugin)(nil)
	_ host.Validator      = (*Plugin)(nil)
	_ host.StatusReporter = (*Plugin)(nil)
)
