package cli

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/harness-go/harness/host"
	"github.com/harness-go/harness/internal/safe"
	"github.com/harness-go/harness/plugins/prompts"
	"github.com/harness-go/harness/plugins/resources"
	"github.com/harness-go/harness/plugins/tools"
)

// The commands of resources and prompts (docs/rfc/0008-resources-prompts.md):
// `harness resources`, `harness read`, `harness prompts`, `harness prompt`.

// listResources is `harness resources`.
func listResources(ctx context.Context, hs *harness, progress *reporter) error {
	return printList(ctx, hs, progress, func(w io.Writer) { writeResources(w, hs.resources, hs.o.json) })
}

// writeResources prints one line per resource, `<server>  <uri>  <name or
// title>  <mimeType>`, then one per template (its uriTemplate, marked);
// --json: {"resources": [...], "resourceTemplates": [...]}, the MCP objects
// with "server". One write, as for tools.
func writeResources(w io.Writer, reg *resources.Registry, asJSON bool) {
	list, tpl := reg.List(""), reg.Templates("")
	if asJSON {
		out := struct {
			Resources []json.RawMessage `json:"resources"`
			Templates []json.RawMessage `json:"resourceTemplates"`
		}{Resources: []json.RawMessage{}, Templates: []json.RawMessage{}}
		for _, r := range list {
			out.Resources = append(out.Resources, r.JSON())
		}
		for _, t := range tpl {
			out.Templates = append(out.Templates, t.JSON())
		}
		b, _ := json.Marshal(out)
		w.Write(append(b, '\n'))
		return
	}
	var b strings.Builder
	line := func(cols ...string) {
		for len(cols) > 0 && cols[len(cols)-1] == "" {
			cols = cols[:len(cols)-1]
		}
		for i, c := range cols {
			if i > 0 {
				b.WriteString("  ")
			}
			b.WriteString(safe.Line(c))
		}
		b.WriteByte('\n')
	}
	for _, r := range list {
		line(r.Server, r.URI, orElse(r.Name, r.Title), r.MIMEType)
	}
	for _, t := range tpl {
		line(t.Server, t.URITemplate, orElse(t.Name, t.Title), t.MIMEType, "(template)")
	}
	io.WriteString(w, b.String())
}

func orElse(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// waitFor waits until ok holds or every entry has settled, bounded by
// --wait. It looks again at every event of the host: the services' changes
// are on the same stream as the entries' (a tool registered, a server's
// resources).
func (hs *harness) waitFor(ctx context.Context, ok func() bool) bool {
	var deadline <-chan time.Time
	if hs.o.wait > 0 {
		t := time.NewTimer(hs.o.wait)
		defer t.Stop()
		deadline = t.C
	}
	events := hs.host.Subscribe()
	defer events.Close()
	for {
		// Settled is read before ok: an entry registers what it offers
		// before it settles, so what settled by then is in ok's view. The
		// other order misses what registers and settles between the two.
		settled := host.AllSettled(hs.host.Snapshot())
		if ok() {
			return true
		}
		if hs.o.wait <= 0 || settled {
			return false
		}
		select {
		case _, open := <-events.C:
			if !open {
				return ok()
			}
		case <-deadline:
			return ok()
		case <-ctx.Done():
			return false
		}
	}
}

// unknownServer explains why server has no resources: the state of the
// entry that claims its names, if any.
func (hs *harness) unknownServer(cmd, server string) error {
	msg := fmt.Sprintf("harness %s: no server %q has resources", cmd, safe.Line(server))
	snap := hs.host.Snapshot()
	msg += entryHint(snap, prompts.PublicName(server, "x"), "offers no resources", hs.o.wait)
	if servers := hs.resources.Servers(); len(servers) > 0 {
		msg += "; servers with resources: " + safe.Line(strings.Join(servers, ", "))
	}
	if !host.AllSettled(snap) {
		return exit(ExitFailure, "%s; not every entry settled within --wait %s", msg, hs.o.wait)
	}
	return exit(ExitUsage, "%s", msg)
}

// entryHint is the parenthesis of a name nobody registered: the state of
// the entry whose plugin claims the name (mcp__<server>__…), saying what it
// lacks when it is fine; "" when no entry claims it.
func entryHint(snap []host.EntryStatus, name, lacks string, wait time.Duration) string {
	for _, e := range snap {
		c, ok := e.Details.(tools.Claimer)
		if !ok {
			continue
		}
		who, mine := c.ClaimTool(name)
		switch {
		case !mine:
		case e.State == host.Failed:
			return fmt.Sprintf(" (entry %q, %s, failed: %s)", e.ID, who, safe.Text(e.Error))
		case !e.Settled:
			return fmt.Sprintf(" (entry %q, %s, is still %s after %s)", e.ID, who, e.State, wait)
		default:
			return fmt.Sprintf(" (entry %q, %s, is %s and %s)", e.ID, who, e.State, lacks)
		}
	}
	return ""
}

// readResource is `harness read SERVER URI [-o FILE]`.
func readResource(ctx context.Context, hs *harness, progress *reporter) error {
	server, uri := hs.o.args[0], hs.o.args[1]
	found := hs.waitFor(ctx, func() bool { return hs.resources.Has(server) })
	progress.stop()
	if err := interrupted(ctx); err != nil {
		return err
	}
	if !found {
		return hs.unknownServer("read", server)
	}
	res, err := hs.resources.Read(ctx, server, uri)
	if err != nil {
		if err := interrupted(ctx); err != nil {
			return err
		}
		if _, listed := hs.resources.Lookup(server, uri); !listed {
			return exit(ExitUsage, "harness read: %s has no resource %q: %s", safe.Line(server), safe.Line(uri), safe.Text(err.Error()))
		}
		return exit(ExitFailure, "harness read: %s", safe.Text(err.Error()))
	}
	return writeRead(hs, uri, res)
}

// writeRead prints a read: --json the result; -o FILE every content's
// bytes (texts as they are, blobs decoded), in order; else the texts,
// separated by a blank line, and a note on stderr for each binary one.
func writeRead(hs *harness, uri string, res resources.ReadResult) error {
	if hs.o.json {
		raw := res.Raw
		if len(raw) == 0 {
			raw, _ = json.Marshal(map[string]any{"contents": res.Contents})
		}
		if hs.o.output == "" {
			hs.env.Stdout.Write(append(compactJSON(raw), '\n'))
			return nil
		}
		return writeFile(hs.o.output, append(compactJSON(raw), '\n'))
	}
	if hs.o.output != "" {
		var data []byte
		for _, c := range res.Contents {
			b, err := contentBytes(c)
			if err != nil {
				return exit(ExitFailure, "harness read: %s: %v", safe.Line(c.URI), err)
			}
			data = append(data, b...)
		}
		return writeFile(hs.o.output, data)
	}
	var texts []string
	binary := false
	for _, c := range res.Contents {
		if c.IsText() {
			texts = append(texts, *c.Text)
			continue
		}
		binary = true
		b, _ := base64.StdEncoding.DecodeString(c.Blob)
		say(hs.env.Stderr, hs.o, "warn", fmt.Sprintf("harness read: %s is binary (%s, %d bytes); not printed: use -o FILE, or --json for base64", safe.Line(orElse(c.URI, uri)), safe.Line(orElse(c.MIMEType, "unknown type")), len(b)))
	}
	if len(texts) > 0 {
		out := strings.Join(texts, "\n\n")
		if !strings.HasSuffix(out, "\n") {
			out += "\n"
		}
		io.WriteString(hs.env.Stdout, out) // the server's words, unchanged
	}
	if binary {
		return exit(ExitFailure, "")
	}
	return nil
}

func contentBytes(c resources.Content) ([]byte, error) {
	if c.IsText() {
		return []byte(*c.Text), nil
	}
	b, err := base64.StdEncoding.DecodeString(c.Blob)
	if err != nil {
		return nil, fmt.Errorf("the blob is not base64: %w", err)
	}
	return b, nil
}

func writeFile(path string, data []byte) error {
	if err := os.WriteFile(path, data, 0o644); err != nil {
		return exit(ExitFailure, "harness read: %v", err)
	}
	return nil
}

func compactJSON(raw json.RawMessage) []byte {
	var b bytes.Buffer
	if err := json.Compact(&b, raw); err != nil {
		return raw
	}
	return b.Bytes()
}

// listPrompts is `harness prompts`.
func listPrompts(ctx context.Context, hs *harness, progress *reporter) error {
	return printList(ctx, hs, progress, func(w io.Writer) { writePrompts(w, hs.prompts.List(), hs.o.json) })
}

// writePrompts prints `<public name>  <first description line>` per
// prompt, and under it one line per argument; --json: the MCP objects under
// their public names, with "server".
func writePrompts(w io.Writer, list []prompts.Prompt, asJSON bool) {
	if asJSON {
		out := make([]json.RawMessage, 0, len(list))
		for _, p := range list {
			out = append(out, p.JSON())
		}
		b, _ := json.Marshal(out)
		w.Write(append(b, '\n'))
		return
	}
	var b strings.Builder
	for _, p := range list {
		b.WriteString(p.Name)
		if first := safe.FirstLine(orElse(p.Description, p.Title)); first != "" {
			b.WriteString("  " + safe.Line(first))
		}
		b.WriteByte('\n')
		for _, a := range p.Arguments {
			line := "    " + safe.Line(a.Name)
			if a.Required {
				line += " (required)"
			}
			if d := safe.FirstLine(orElse(a.Description, a.Title)); d != "" {
				line += "  " + safe.Line(d)
			}
			b.WriteString(line + "\n")
		}
	}
	io.WriteString(w, b.String())
}

// promptArgs reads a prompt's arguments: one JSON object (its values made
// strings: MCP's arguments are strings), or key=value words.
func promptArgs(words []string) (map[string]string, error) {
	args := map[string]string{}
	if len(words) == 1 && strings.HasPrefix(strings.TrimSpace(words[0]), "{") {
		var obj map[string]any
		if err := json.Unmarshal([]byte(words[0]), &obj); err != nil {
			return nil, fmt.Errorf("the arguments are not a JSON object: %v", err)
		}
		for k, v := range obj {
			if s, ok := v.(string); ok {
				args[k] = s
			} else {
				b, _ := json.Marshal(v)
				args[k] = string(b)
			}
		}
		return args, nil
	}
	for _, w := range words {
		k, v, ok := strings.Cut(w, "=")
		if !ok || k == "" {
			return nil, fmt.Errorf("argument %q is not key=value (or give one JSON object)", w)
		}
		if _, twice := args[k]; twice {
			return nil, fmt.Errorf("argument %q is given twice", k)
		}
		args[k] = v
	}
	return args, nil
}

// getPrompt is `harness prompt NAME [key=value…|JSON]`.
func getPrompt(ctx context.Context, hs *harness, progress *reporter) error {
	name := hs.o.args[0]
	args, err := promptArgs(hs.o.args[1:])
	if err != nil {
		return exit(ExitUsage, "harness prompt: %v", err)
	}
	found := hs.waitFor(ctx, func() bool { _, ok := hs.prompts.Lookup(name); return ok })
	progress.stop()
	if err := interrupted(ctx); err != nil {
		return err
	}
	if !found {
		return hs.unknownPrompt(name)
	}
	p, _ := hs.prompts.Lookup(name)
	if err := checkPromptArgs(p, args); err != nil {
		return exit(ExitUsage, "harness prompt: %v", err)
	}
	res, err := hs.prompts.Get(ctx, name, args)
	if err != nil {
		if err := interrupted(ctx); err != nil {
			return err
		}
		return exit(ExitFailure, "harness prompt: %s", safe.Text(err.Error()))
	}
	if hs.o.json {
		raw := res.Raw
		if len(raw) == 0 {
			raw, _ = json.Marshal(res)
		}
		hs.env.Stdout.Write(append(compactJSON(raw), '\n'))
		return nil
	}
	io.WriteString(hs.env.Stdout, promptText(res))
	return nil
}

// checkPromptArgs refuses an argument the prompt does not take, and a
// required one that is missing, naming them and what it takes.
func checkPromptArgs(p prompts.Prompt, args map[string]string) error {
	var names []string
	for _, a := range p.Arguments {
		names = append(names, a.Name)
		if _, ok := args[a.Name]; a.Required && !ok {
			return fmt.Errorf("%s needs the argument %q (it takes %s)", p.Name, a.Name, safe.Line(strings.Join(names, ", ")+rest(p, len(names))))
		}
	}
	for k := range args {
		if !slices.Contains(names, k) {
			if len(names) == 0 {
				return fmt.Errorf("%s takes no arguments, not %q", p.Name, safe.Line(k))
			}
			return fmt.Errorf("%s takes no argument %q (it takes %s)", p.Name, safe.Line(k), safe.Line(strings.Join(names, ", ")))
		}
	}
	return nil
}

func rest(p prompts.Prompt, shown int) string {
	var more []string
	for _, a := range p.Arguments[shown:] {
		more = append(more, a.Name)
	}
	if len(more) == 0 {
		return ""
	}
	return ", " + strings.Join(more, ", ")
}

// promptText renders a prompt's messages for people: `<role>: <text>`,
// separated by a blank line.
func promptText(res prompts.Result) string {
	var parts []string
	for _, m := range res.Messages {
		parts = append(parts, m.Role+": "+m.Text())
	}
	out := strings.Join(parts, "\n\n")
	if !strings.HasSuffix(out, "\n") {
		out += "\n"
	}
	return out
}

// unknownPrompt says why name is not there.
func (hs *harness) unknownPrompt(name string) error {
	msg := fmt.Sprintf("harness prompt: unknown prompt %q", safe.Line(name))
	snap := hs.host.Snapshot()
	msg += entryHint(snap, name, "lists no such prompt", hs.o.wait)
	if names := promptNamesOf(hs.prompts.List()); len(names) > 0 {
		msg += "; prompts: " + safe.Line(strings.Join(names, ", "))
	}
	if !host.AllSettled(snap) {
		return exit(ExitFailure, "%s; not every entry settled within --wait %s", msg, hs.o.wait)
	}
	return exit(ExitUsage, "%s", msg)
}

func promptNamesOf(list []prompts.Prompt) []string {
	out := make([]string, len(list))
	for i, p := range list {
		out[i] = p.Name
	}
	return out
}
