package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/harness-go/harness/host"
	"github.com/harness-go/harness/host/jsexpr"
	"github.com/harness-go/harness/internal/safe"
	"github.com/harness-go/harness/plugins/agent"
	"github.com/harness-go/harness/plugins/tools"
)

// ExitInterrupted is ask's exit code when a signal ends it: Ctrl-C, and
// SIGTERM or SIGHUP alike (128 + SIGINT, as shells report Ctrl-C).
const ExitInterrupted = 130

// maxPrompt bounds a prompt read from stdin (ask -), as maxLine bounds a
// console line: an endless stdin is refused, not read into memory.
const maxPrompt = 16 << 20

// noAgentHint says how to add an agent entry, on one line.
const noAgentHint = "add an entry with name: agent to cordis.yml (README: \"Talk to a model\")"

// ask is `harness ask PROMPT|-`: boot, settle, one turn.
func ask(ctx context.Context, o *options, env Env) error {
	prompt := o.args[0]
	if prompt == "-" {
		b, err := io.ReadAll(io.LimitReader(env.Stdin, maxPrompt+1))
		switch {
		case err != nil:
			return exit(ExitUsage, "harness ask: reading the prompt from stdin: %v", err)
		case len(b) > maxPrompt:
			return exit(ExitUsage, "harness ask: the prompt on stdin is larger than %d MiB, the most a prompt may be", maxPrompt>>20)
		}
		prompt = string(b)
	}
	if strings.TrimSpace(prompt) == "" {
		return usagef("the prompt is empty")
	}
	return oneShot(ctx, o, env, func(ctx context.Context, hs *harness, progress *reporter) error {
		// A failure is said once: as the error event with --json (stderr
		// carries logs only, docs/rfc/0004-agent.md), else on stderr.
		fail := func(code int, msg string) error {
			if o.json {
				b, _ := agent.Event{Type: agent.EventError, Message: msg}.MarshalJSON()
				hs.ourStdout().Write(append(b, '\n'))
				return exit(code, "")
			}
			return exit(code, "harness ask: %s", msg)
		}
		// Agent entries start at once (no connection): a missing entry or
		// key is told before waiting for the MCP servers.
		a, ee := hs.pickAgent(o.agent, "--agent ID")
		if ee != nil {
			progress.stop()
			return fail(ee.code, ee.msg)
		}
		settled := hs.settle(ctx)
		progress.stop()
		if ctx.Err() != nil {
			return fail(ExitInterrupted, context.Cause(ctx).Error())
		}
		// Entries that failed do not stop a turn: the tools that exist
		// are sent. Say what is missing.
		hs.reportProblems(!settled)
		var conv agent.Conversation
		view := newTranscript(hs)
		// The tools the agent calls ask nobody: declined, and said.
		_, err := a.Run(tools.WithFront(ctx, &noteFront{hs: hs, who: "harness ask"}), &conv, prompt, view.event)
		code, msg := ExitFailure, ""
		switch {
		case err == nil:
			return nil
		case errors.Is(err, agent.ErrCancelled):
			code, msg = ExitInterrupted, "cancelled"
		default:
			msg = withHint(safe.Text(err.Error()), err, false)
		}
		if view.saidError {
			return exit(code, "") // the error event said it
		}
		return fail(code, msg)
	})
}

// agentEntries returns the enabled agent entries, in file order.
func (hs *harness) agentEntries() []host.EntryStatus {
	var out []host.EntryStatus
	for _, e := range hs.host.Snapshot() {
		if e.Plugin == agent.KindName && e.State != host.Disabled {
			out = append(out, e)
		}
	}
	return out
}

// pickAgent is selectAgent, then the key check: a keyless agent whose
// endpoint needs a key is exit code 2, with how to set it. An agent it
// returns never fails a turn for its key ([agent.ErrNoKey]): the check is
// the same, on the same configuration.
func (hs *harness) pickAgent(id, how string) (*agent.Agent, *exitError) {
	a, ee := hs.selectAgent(id, how)
	if ee == nil {
		ee = hs.keyProblem(a)
	}
	return a, ee
}

// keyProblem says how to give a its key when its endpoint needs one.
func (hs *harness) keyProblem(a *agent.Agent) *exitError {
	if c := a.Config(); c.MissingKey() {
		return &exitError{code: ExitUsage, msg: keyHowTo(a.ID(), hs.keyVars(a.ID()))}
	}
	return nil
}

// selectAgent returns the agent to talk to: id, or the only agent entry.
// The error's code is 2 when there is none, or several and no id (how says
// how to pick one); 1 when the entry failed.
func (hs *harness) selectAgent(id, how string) (*agent.Agent, *exitError) {
	entries := hs.agentEntries()
	var ids []string
	for _, e := range entries {
		ids = append(ids, e.ID)
	}
	fail := func(code int, format string, args ...any) (*agent.Agent, *exitError) {
		return nil, &exitError{code: code, msg: fmt.Sprintf(format, args...)}
	}
	switch {
	case len(entries) == 0:
		return fail(ExitUsage, "no agent entry in %s; %s", hs.o.config, noAgentHint)
	case id == "" && len(entries) > 1:
		return fail(ExitUsage, "several agent entries (%s): pick one with %s", strings.Join(ids, ", "), how)
	case id == "":
		id = ids[0]
	case !slices.Contains(ids, id):
		return fail(ExitUsage, "no agent entry %q (agent entries: %s)", safe.Line(id), strings.Join(ids, ", "))
	}
	a, ok := hs.agents.Get(id)
	if !ok {
		for _, e := range entries {
			if e.ID == id {
				reason := e.State.String()
				if e.Error != "" {
					reason += ": " + safe.Line(e.Error)
				}
				return fail(ExitFailure, "agent entry %q is %s", id, reason)
			}
		}
	}
	return a, nil
}

// keyVars returns the environment variables the apiKey of entry id reads
// (`apiKey: !!js process.env.DEEPSEEK_API_KEY` → DEEPSEEK_API_KEY), so a
// person can be told which one to set.
func (hs *harness) keyVars(id string) []string {
	f := hs.host.File()
	if f == nil {
		return nil
	}
	for _, e := range f.Entries {
		if e.ID != id || e.Config == nil || e.Config.Kind != yaml.MappingNode {
			continue
		}
		for i := 0; i+1 < len(e.Config.Content); i += 2 {
			k, v := e.Config.Content[i], e.Config.Content[i+1]
			if k.Value != "apiKey" || v.Tag != "!!js" {
				continue
			}
			if x, err := jsexpr.Parse(v.Value); err == nil {
				return x.Vars()
			}
		}
	}
	return nil
}

// agentLine describes an agent in one inert line: model, endpoint, tools,
// and a note (a missing key). The model is the file's words: escaped.
func agentLine(a *agent.Agent) string {
	info := a.Info()
	line := fmt.Sprintf("%s: %s at %s, %s", info.ID, info.Model, info.Endpoint, plural(info.Tools, "tool"))
	if info.Thinking != "" {
		line += ", thinking " + info.Thinking
	}
	switch {
	case info.Searching:
		line += ", tool search on (" + info.SearchReason + ")"
	case info.ToolSearch == agent.ToolSearchAuto:
		line += ", tool search auto (off now)"
	case info.ToolSearch == agent.ToolSearchOff:
		line += ", tool search off"
	}
	if info.Note != "" {
		line += "; " + info.Note
	}
	return safe.Line(line)
}
