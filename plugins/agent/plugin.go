// Package agent sends the live tool set to a DeepSeek-compatible model and
// runs the tool-call loop: kind `agent`, one entry per model endpoint.
//
// An instance injects the tools service and the agents [Directory], and
// registers its [Agent] in the directory under its entry id; the harness's
// command line finds it there (`harness ask --agent ID`, the console's
// `/agent ID`). The conversation is not the agent's: the caller keeps a
// [Conversation], so it survives an edit of the agent's entry.
//
// A turn ([Agent.Run]):
//
//  1. The user's message joins the conversation.
//  2. Each step takes the registry's model-visible list at that moment
//     (after the entry's enabledTools/disabledTools), in its stable sorted
//     order, byte for byte. With toolSearch (auto, the default, when the
//     schemas would take more than toolSearchTokens or there are more than
//     maxTools) the step sends search_tools, the always-loaded tools and
//     those search_tools found in the conversation instead; more than
//     maxTools sent is an error naming the count.
//     Messages that would pass maxConversationBytes end the turn (checked
//     before each request and before a response's calls run).
//  3. The request streams (chat completions, stream_options.include_usage).
//     Text and reasoning are emitted as they arrive, whole characters only;
//     tool calls are assembled by their index. A stream silent for
//     streamIdleTimeoutMs is an error.
//  4. 429, 5xx, a reset connection or stream and DeepSeek's
//     insufficient_system_resource are retried with backoff (500 ms
//     doubling to 10 s, jitter), up to retries times, but only while nothing
//     of the answer reached the caller. 401/403 say the key was refused.
//  5. The assistant message joins the conversation, its reasoning_content
//     kept for the requests to come when it carries tool calls. No tool
//     calls: the turn is answered.
//  6. The step's calls run concurrently through the registry (at most
//     maxParallelToolCalls at once); each result, cut at toolResultBytes,
//     goes back as a tool message. Arguments that are not JSON, or a tool
//     the filters hide, become error results the model can recover from.
//     Then the next step, up to maxSteps.
//  7. Cancelling the turn's context stops the stream and the step's calls
//     (an MCP server is told); calls cut short answer "Error: cancelled".
//     Disposing the entry ends its turns the same way.
//
// Usage per turn: prompt and completion tokens, cache-hit tokens, steps,
// tool calls, wall time.
package agent

import (
	"errors"
	"fmt"

	"github.com/harness-go/harness/host"
	"github.com/harness-go/harness/plugins/resources"
	"github.com/harness-go/harness/plugins/tools"
)

// KindName is the kind's `name:` in cordis.yml.
const KindName = "agent"

func init() {
	host.Register(host.Kind{
		Name:   KindName,
		Doc:    "sends the tools to a DeepSeek-compatible model and runs the tool-call loop (harness ask, the console)",
		Inject: []string{tools.Service, DirectoryService, resources.Service},
		New:    func() host.Plugin { return &Plugin{Config: DefaultConfig()} },
	})
}

// Plugin is one agent entry. Its configuration is [Config].
type Plugin struct {
	Config `yaml:",inline"`
}

// Apply creates the agent and registers it in the directory. It opens no
// connection: an agent is ready at once, a keyless one with a note.
func (p *Plugin) Apply(ctx *host.Context) error {
	reg, err := tools.From(ctx)
	if err != nil {
		return err
	}
	dir, err := DirectoryFrom(ctx)
	if err != nil {
		return err
	}
	res, err := resources.From(ctx)
	if err != nil {
		return err
	}
	var keyVars []string
	for _, u := range ctx.Unset() {
		if u.Field == "config.apiKey" {
			keyVars = u.Vars
		}
	}
	a := New(p.Config, reg, Options{ID: ctx.ID(), Secrets: ctx.Secrets(), Logger: ctx.Logger(), Life: ctx.Context(), KeyVars: keyVars, Resources: res})
	if _, err := ctx.Defer("close idle connections", a.close); err != nil {
		return err
	}
	if err := dir.Register(ctx.Fiber(), ctx.ID(), a); err != nil {
		return err
	}
	if n := note(&p.Config); n != "" {
		ctx.Logger().Info("agent ready: " + n)
	}
	return nil
}

// Status describes the entry for `harness status`.
type Status struct {
	Model    string `json:"model"`
	Endpoint string `json:"endpoint"`
	APIKey   string `json:"apiKey"` // "set" or "none": never the key
	Thinking string `json:"thinking,omitempty"`
	Note     string `json:"note,omitempty"`
}

// Status reports the model, the endpoint and whether a key is set.
func (p *Plugin) Status() any {
	key := "none"
	if p.APIKey != "" {
		key = "set"
	}
	return &Status{Model: p.Model, Endpoint: p.endpoint(), APIKey: key, Thinking: p.Thinking, Note: note(&p.Config)}
}

// StatusLines renders the status for people.
func (s *Status) StatusLines() []string {
	line := fmt.Sprintf("model %s at %s, API key %s", s.Model, s.Endpoint, s.APIKey)
	if s.Thinking != "" {
		line += ", thinking " + s.Thinking
	}
	lines := []string{line}
	if s.Note != "" {
		lines = append(lines, s.Note)
	}
	return lines
}

// Validate checks the configuration.
func (p *Plugin) Validate() error { return p.Config.Validate() }

// IsKeyMissing reports whether err is a turn refused for a missing key.
func IsKeyMissing(err error) bool { return errors.Is(err, ErrNoKey) }

var (
	_ host.Plugin         = (*Plugin)(nil)
	_ host.Validator      = (*Plugin)(nil)
	_ host.StatusReporter = (*Plugin)(nil)
	_ host.TextStatus     = (*Status)(nil)
)
