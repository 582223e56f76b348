package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/harness-go/harness/host"
	"github.com/harness-go/harness/internal/safe"
	"github.com/harness-go/harness/plugins/tools"
)

// printList is the one-shot commands that print a list once the entries
// have settled (or the --wait bound passed): `harness tools`, `resources`
// and `prompts`. They fail (exit 1) when an entry did, after the list.
func printList(ctx context.Context, hs *harness, progress *reporter, write func(io.Writer)) error {
	settled := hs.settle(ctx)
	progress.stop()
	if err := interrupted(ctx); err != nil {
		return err
	}
	write(hs.ourStdout())
	if hs.reportProblems(!settled) {
		return exit(ExitFailure, "")
	}
	return nil
}

// listTools is `harness tools`.
func listTools(ctx context.Context, hs *harness, progress *reporter) error {
	return printList(ctx, hs, progress, func(w io.Writer) { writeTools(w, hs.tools, hs.o.json) })
}

// writeTools prints the tool list. Names and descriptions are the servers'
// words, but the list is our output, not a tool result: callers pass a
// redacting writer, and a write is the whole list, so a secret is never
// split between two writes.
func writeTools(w io.Writer, reg *tools.Registry, asJSON bool) {
	if asJSON {
		w.Write(append(slices.Clip(reg.ModelJSON()), '\n'))
		return
	}
	var b strings.Builder
	for _, t := range reg.List() {
		b.WriteString(t.Name)
		if first := safe.FirstLine(t.Description); first != "" {
			b.WriteString("  ")
			b.WriteString(safe.Line(first))
		}
		b.WriteByte('\n')
	}
	io.WriteString(w, b.String())
}

// ourStdout is stdout for text of ours (the tool list, status, /agent):
// redacted, in case a secret reached it. A tool result or the model's words
// go to stdout as they are.
func (hs *harness) ourStdout() io.Writer { return hs.env.secrets.Writer(hs.env.Stdout) }

func interrupted(ctx context.Context) error {
	if ctx.Err() != nil {
		return exit(ExitFailure, "harness: %v", context.Cause(ctx))
	}
	return nil
}

// callTool is `harness call NAME [JSON|-]`.
func callTool(ctx context.Context, hs *harness, progress *reporter) error {
	name := hs.o.args[0]
	args, err := readArgs(hs.o.args[1:], hs.env.Stdin, func(note string) { say(hs.env.Stderr, hs.o, "warn", "harness call: "+note) })
	if err != nil {
		return err
	}
	found := hs.waitForTool(ctx, name)
	progress.stop()
	if err := interrupted(ctx); err != nil {
		return err
	}
	if !found {
		return hs.unknownTool(name)
	}
	// Nobody can answer what the tool asks: it is declined, and said;
	// its progress shows on stderr while it runs.
	progressLine := newProgressLine(hs, hs.env.Stderr)
	res := hs.tools.Execute(tools.WithFront(ctx, &noteFront{hs: hs, who: "harness call", progress: progressLine}), name, args)
	progressLine.clear()
	if ctx.Err() != nil {
		// A signal ended the call: the tool's "cancelled" is no result of
		// its own to print.
		return exit(ExitFailure, "harness call: the call to %q was cancelled: %v", safe.Line(name), context.Cause(ctx))
	}
	writeResult(hs.env.Stdout, res, hs.o.json)
	// The call did not wait for the other entries: only failures count.
	bad := hs.report(false, true)
	if res.IsError || bad {
		return exit(ExitFailure, "")
	}
	return nil
}

// readArgs reads the call's arguments: none means {}, "-" reads stdin.
func readArgs(rest []string, stdin io.Reader, notify func(note string)) (json.RawMessage, error) {
	var raw []byte
	if len(rest) > 0 {
		raw = []byte(rest[0])
	}
	if len(rest) > 0 && rest[0] == "-" {
		var err error
		if raw, err = io.ReadAll(stdin); err != nil {
			return nil, exit(ExitUsage, "harness call: reading the arguments from stdin: %v", err)
		}
	}
	args, note, err := parseArgs(raw)
	if err != nil {
		return nil, exit(ExitUsage, "harness call: %v", err)
	}
	if note != "" {
		notify(note)
	}
	return args, nil
}

// parseArgs returns a call's arguments from their text, for call and the
// console's /call: empty means {}; JSON that is not an object is sent as {}
// (the seeds), which note says.
func parseArgs(raw []byte) (args json.RawMessage, note string, err error) {
	trimmed := bytes.TrimSpace(raw)
	switch {
	case len(trimmed) == 0:
		return json.RawMessage("{}"), "", nil
	case !json.Valid(trimmed):
		var v any
		return nil, "", fmt.Errorf("the arguments are not valid JSON: %v", json.Unmarshal(trimmed, &v))
	case trimmed[0] != '{':
		return json.RawMessage("{}"), "the arguments are not a JSON object; sending {}", nil
	}
	return trimmed, "", nil
}

// waitForTool waits until name is registered or every entry has settled,
// bounded by --wait.
func (hs *harness) waitForTool(ctx context.Context, name string) bool {
	return hs.waitFor(ctx, func() bool { _, ok := hs.tools.Lookup(name); return ok })
}

// unknownTool explains why name is not there: the state of the entry that
// would provide it, when its plugin can tell that from the name
// ([tools.Claimer]).
func (hs *harness) unknownTool(name string) error {
	msg := fmt.Sprintf("harness call: unknown tool %q", safe.Line(name))
	snap := hs.host.Snapshot()
	for _, e := range snap {
		// Exit 1, not 2: the entry is settled, and the tool comes once
		// someone logs in.
		if c, ok := e.Details.(tools.Claimer); ok && e.State == host.NeedsLogin {
			if who, mine := c.ClaimTool(name); who != "" && mine {
				return exit(ExitFailure, "%s (entry %q, %s, needs a login: %s)", msg, e.ID, who, loginHint(e.ID))
			}
		}
	}
	msg += claimHint(snap, name, hs.o.wait)
	for _, e := range snap {
		if !e.Settled {
			// It may have been on its way: not settled within --wait.
			return exit(ExitFailure, "%s; not every entry settled within --wait %s", msg, hs.o.wait)
		}
	}
	return exit(ExitUsage, "%s", msg)
}

// claimHint is unknownTool's parenthesis: the entry whose plugin claims
// name, and why it does not list it; or that no entry is what the name
// points at; or "" when no plugin reads anything into the name.
func claimHint(snap []host.EntryStatus, name string, wait time.Duration) string {
	hint := ""
	for _, e := range snap {
		c, ok := e.Details.(tools.Claimer)
		if !ok {
			continue
		}
		who, mine := c.ClaimTool(name)
		switch {
		case who == "":
		case !mine:
			if hint == "" {
				hint = fmt.Sprintf(" (no entry has %s)", who)
			}
		case e.State == host.Failed:
			return fmt.Sprintf(" (entry %q, %s, failed: %s)", e.ID, who, safe.Text(e.Error))
		case !e.Settled:
			return fmt.Sprintf(" (entry %q, %s, is still %s after %s)", e.ID, who, e.State, wait)
		default:
			return fmt.Sprintf(" (entry %q, %s, is %s and lists no such tool)", e.ID, who, e.State)
		}
	}
	return hint
}

// writeResult prints what the model would see of res: its text, or with
// asJSON the result as one JSON line.
func writeResult(w io.Writer, res tools.Result, asJSON bool) {
	if asJSON {
		b, _ := json.Marshal(res)
		w.Write(append(b, '\n'))
		return
	}
	// One write, its newline included: on a terminal an event printed
	// between the text and its newline would land on the result's line.
	text := res.Text
	if !strings.HasSuffix(text, "\n") {
		text += "\n"
	}
	io.WriteString(w, text)
}

// showStatus is `harness status`.
func showStatus(ctx context.Context, hs *harness, progress *reporter) error {
	hs.settle(ctx)
	progress.stop()
	if err := interrupted(ctx); err != nil {
		return err
	}
	snap := hs.host.Snapshot()
	out := hs.ourStdout()
	if hs.o.json {
		writeStatusJSON(out, hs.o.config, snap, hs.tools)
	} else {
		writeStatusText(out, snap, hs.tools)
	}
	// status waited: an entry not settled by now counts, as the others.
	for _, e := range snap {
		if _, counts := hs.problem(e, true, false); counts {
			return exit(ExitFailure, "")
		}
	}
	return nil
}

// writeStatusText prints the status for people, one write. What comes
// from outside (ids, errors, the plugins' lines) is escaped: an entry id may
// hold characters that drive a terminal (a bidi override is a valid id).
func writeStatusText(w io.Writer, snap []host.EntryStatus, reg *tools.Registry) {
	var b strings.Builder
	depth := map[string]int{}
	for _, e := range snap {
		// A child entry (an mcp-servers entry's server) stands under its
		// parent, indented.
		indent := ""
		if e.Parent != "" {
			depth[e.ID] = depth[e.Parent] + 1
			indent = strings.Repeat("  ", depth[e.ID])
		}
		line := fmt.Sprintf("%s%s  %s  %s", indent, safe.Line(e.ID), safe.Line(e.Plugin), e.State)
		switch {
		case e.State == host.NeedsLogin:
			line += ": " + safe.Line(e.Error) + "; " + loginHint(e.ID)
		case e.State == host.Failed, e.State == host.Reconnecting:
			line += ": " + safe.Line(e.Error)
		case e.Reloading:
			line += " (reloading: the new instance is starting)"
		case e.State == host.Pending:
			line += ": waiting for " + safe.Line(strings.Join(e.Missing, ", "))
		case !e.Settled:
			line += " (not settled)"
		}
		b.WriteString(line + "\n")
		if e.Note != "" {
			b.WriteString(indent + "    " + safe.Line(e.Note) + "\n")
		}
		if ts, ok := e.Details.(host.TextStatus); ok {
			for _, l := range ts.StatusLines() {
				b.WriteString(indent + "    " + safe.Line(l) + "\n")
			}
		} else if e.Details != nil {
			d, _ := json.Marshal(e.Details)
			b.WriteString(indent + "    " + safe.Line(string(d)) + "\n")
		}
	}
	fmt.Fprintf(&b, "%d tools registered\n", len(reg.Names()))
	io.WriteString(w, b.String())
}

// writeStatusJSON prints {"config": ..., "tools": N, "entries": [...]}; each
// entry holds the host's fields and, flattened in, the plugin's own status.
func writeStatusJSON(w io.Writer, path string, snap []host.EntryStatus, reg *tools.Registry) {
	entries := make([]map[string]any, 0, len(snap))
	for _, e := range snap {
		m := map[string]any{}
		if e.Details != nil {
			if d, err := json.Marshal(e.Details); err == nil {
				_ = json.Unmarshal(d, &m)
			}
		}
		m["id"] = e.ID
		if e.Parent != "" {
			m["parent"] = e.Parent
		}
		m["plugin"] = e.Plugin
		m["state"] = e.State.String()
		m["settled"] = e.Settled
		m["since"] = e.Since
		if e.Error != "" {
			m["error"] = e.Error
		}
		if len(e.Missing) > 0 {
			m["missing"] = e.Missing
		}
		if e.Note != "" {
			m["note"] = e.Note
		}
		if e.Reloading {
			m["reloading"] = true
		}
		entries = append(entries, m)
	}
	out := map[string]any{"config": path, "tools": len(reg.Names()), "entries": entries}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	_ = enc.Encode(out)
}

// validate is `harness validate`.
func validate(o *options, env Env) error {
	f, err := host.ReadFile(o.config)
	var le *host.LoadError
	if err != nil && (f == nil || !errors.As(err, &le)) {
		return exit(ExitUsage, "%s", safe.Text(err.Error()))
	}
	// Every problem at once: the file's own, then each entry's.
	var problems []host.Problem
	if le != nil {
		problems = append(problems, le.Problems...)
	}
	report := host.Check(f, *jsEnv(env), env.secrets)
	problems = append(problems, report.Errors...)
	for _, w := range report.Warnings {
		say(env.Stderr, o, "warn", "warning: "+safe.Line(w.Error()))
	}
	for _, w := range serversWarnings(f, *jsEnv(env), env.secrets) {
		say(env.Stderr, o, "warn", "warning: "+safe.Line(w))
	}
	if len(problems) > 0 {
		sort.SliceStable(problems, func(i, j int) bool {
			a, b := problems[i].Pos, problems[j].Pos
			return a.Line < b.Line || a.Line == b.Line && a.Col < b.Col
		})
		lines := make([]string, len(problems))
		for i, p := range problems {
			lines[i] = safe.Line(p.Error())
		}
		return exit(ExitUsage, "%s", strings.Join(lines, "\n"))
	}
	fmt.Fprintln(env.Stdout, "ok")
	return nil
}
