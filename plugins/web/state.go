package web

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/harness-go/harness/host"
	"github.com/harness-go/harness/host/conffile"
	"github.com/harness-go/harness/plugins/agent"
	"github.com/harness-go/harness/plugins/prompts"
	"github.com/harness-go/harness/plugins/resources"
	"github.com/harness-go/harness/plugins/tools"
)

// state is what the server keeps for the pages beside what it reads fresh
// for each snapshot: the last reload lines (encoded, redacted), and the
// generation of the last rebuild (see [Server.refresh]).
type state struct {
	events []json.RawMessage // oldest first
	gen    uint64
}

// eventRing is how many reload lines a page gets when it opens.
const eventRing = 200

// coalesce is how long Run gathers changes before it sends them: a reload
// that touches many entries costs one message.
const coalesce = 50 * time.Millisecond

// Run keeps the pages up to date until ctx ends: it watches the host's
// events (the registry's and the agents' changes among them) and the logs,
// and sends what changed to every stream.
func (s *Server) Run(ctx context.Context) error {
	events := s.o.Host.Subscribe()
	defer events.Close()
	var logs chan Record
	if s.o.Logs != nil {
		detach := s.o.Logs.attach()
		defer detach()
		logs = make(chan Record, 256)
		defer s.o.Logs.watch(logs)()
	}
	var dirty parts
	var timer *time.Timer
	var fire <-chan time.Time
	mark := func(p parts) {
		dirty = dirty.or(p)
		if fire == nil {
			timer = time.NewTimer(coalesce)
			fire = timer.C
		}
	}
	// One stream: the entries' events, the reloads, and the changes of the
	// services (tools, agents) the host was given.
	for {
		select {
		case <-ctx.Done():
			if timer != nil {
				timer.Stop()
			}
			return nil
		case <-s.life.Done():
			return nil
		case ev, ok := <-events.C:
			if !ok {
				return nil
			}
			if ev.Type != host.ServiceChanged { // the Events view shows entries and reloads
				s.hostEvent(ev)
			}
			mark(affected(ev))
		case rec := <-logs:
			s.broadcast(wrap("log", "log", s.redact(mustJSON(rec))), nil)
			if rec.Entry != "" {
				mark(parts{entries: true}) // a server's stderr line: its tail
			}
		case <-fire:
			fire = nil
			s.refresh(dirty)
			dirty = parts{}
		}
	}
}

// affected is what an event of the host changes on the page: an entry's
// event its entries and agents; a reload the file too; a change of the
// tools the tools, the entries (their tool counts) and the agents (theirs);
// one of the agents the agents.
func affected(ev host.Event) parts {
	switch {
	case ev.Type == host.EntryChanged:
		return parts{entries: true, agents: true}
	case ev.Type != host.ServiceChanged:
		return parts{entries: true, agents: true, file: true}
	case ev.Service == tools.Service:
		return parts{tools: true, entries: true, agents: true}
	case ev.Service == agent.DirectoryService:
		return parts{agents: true}
	case ev.Service == resources.Service:
		return parts{resources: true}
	case ev.Service == prompts.Service:
		return parts{prompts: true}
	}
	return parts{}
}

// parts says which parts of the state to rebuild.
type parts struct{ entries, tools, agents, file, resources, prompts bool }

func (p parts) or(q parts) parts {
	return parts{p.entries || q.entries, p.tools || q.tools, p.agents || q.agents, p.file || q.file, p.resources || q.resources, p.prompts || q.prompts}
}

// refresh rebuilds the parts p names and sends them to every stream that
// opened before the rebuild began: a stream opened since then has a
// snapshot at least as new.
func (s *Server) refresh(p parts) {
	s.mu.Lock()
	s.state.gen++
	gen := s.state.gen
	s.mu.Unlock()
	var out []json.RawMessage
	if p.entries {
		out = append(out, wrap("entries", "entries", s.redact(s.entriesJSON())))
	}
	if p.tools {
		out = append(out, wrap("tools", "tools", s.redact(s.toolsJSON())))
	}
	if p.agents {
		out = append(out, wrap("agents", "agents", s.redact(s.agentsJSON())))
	}
	if p.file {
		out = append(out, wrap("file", "file", s.redact(s.fileJSON())))
	}
	if p.resources && s.o.Resources != nil {
		out = append(out, wrap("resources", "resources", s.redact(s.resourcesJSON())))
	}
	if p.prompts && s.o.Prompts != nil {
		out = append(out, wrap("prompts", "prompts", s.redact(s.promptsJSON())))
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for st := range s.streams {
		if st.since < gen {
			for _, m := range out {
				st.send(m)
			}
		}
	}
}

// hostEvent keeps a reload line for the Events view and sends it.
func (s *Server) hostEvent(ev host.Event) {
	kind := "entry"
	switch ev.Type {
	case host.Reloaded:
		kind = "reload"
	case host.ReloadRejected:
		kind = "rejected"
	}
	line := s.redact(mustJSON(map[string]any{"time": ev.Time, "kind": kind, "text": ev.String(), "entry": ev.Entry, "state": ev.State.String()}))
	m := wrap("event", "event", line)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.state.events = append(s.state.events, line)
	if n := len(s.state.events); n > eventRing {
		s.state.events = append([]json.RawMessage(nil), s.state.events[n-eventRing:]...)
	}
	s.broadcastLocked(m, nil)
	if ev.Type == host.ReloadRejected {
		s.lastProblems = problemsOf(ev.Err)
	} else if ev.Type == host.Reloaded {
		s.lastProblems = nil
	}
}

// problemsOf lists a rejected load's problems, each with its position.
func problemsOf(err error) []map[string]string {
	if err == nil {
		return nil
	}
	var le *host.LoadError
	if !errors.As(err, &le) {
		return []map[string]string{{"msg": err.Error()}}
	}
	out := make([]map[string]string, len(le.Problems))
	for i, p := range le.Problems {
		out[i] = map[string]string{"pos": p.Pos.String(), "msg": p.Error()}
	}
	return out
}

// entriesJSON is every entry as `status --json` shows it, with where it
// is in the file and what a page may do with it.
func (s *Server) entriesJSON() json.RawMessage {
	snap := s.o.Host.Snapshot()
	out := make([]map[string]any, 0, len(snap))
	for _, e := range snap {
		m := map[string]any{}
		if e.Details != nil {
			if d, err := json.Marshal(e.Details); err == nil {
				if json.Unmarshal(d, &m) != nil {
					m = map[string]any{"details": json.RawMessage(d)}
				}
			}
		}
		m["id"], m["plugin"], m["state"], m["settled"], m["since"] = e.ID, e.Plugin, e.State.String(), e.Settled, e.Since
		if e.Pos.Line > 0 {
			m["pos"] = e.Pos.String()
		}
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
		var actions []string
		if e.State != host.Disabled && e.ID != s.o.Self {
			actions = append(actions, "restart")
		}
		if _, oauth := m["oauth"]; s.o.Login != nil && (oauth || e.State == host.NeedsLogin) {
			actions = append(actions, "login")
		}
		m["actions"] = actions
		out = append(out, m)
	}
	return mustJSON(out)
}

// toolsJSON is the registry's tools, sorted by name: name, description,
// schema, the server it comes from, and what the server listed beside it
// (title, annotations).
func (s *Server) toolsJSON() json.RawMessage {
	list := s.o.Tools.List()
	type tool struct {
		Name        string          `json:"name"`
		Description string          `json:"description"`
		Parameters  json.RawMessage `json:"parameters"`
		Server      string          `json:"server,omitempty"`
		Definition  json.RawMessage `json:"definition,omitempty"`
	}
	out := make([]tool, len(list))
	for i, t := range list {
		params := t.Parameters
		if len(bytes.TrimSpace(params)) == 0 || !json.Valid(params) {
			params = json.RawMessage(`{"type":"object","properties":{}}`)
		}
		def := t.Definition
		if !json.Valid(def) {
			def = nil
		}
		out[i] = tool{Name: t.Name, Description: t.Description, Parameters: params, Server: serverOf(t.Name), Definition: def}
	}
	return mustJSON(out)
}

// serverOf is the serverName part of a bridged tool's public name
// (mcp__<server>__<tool>, docs/rfc/0003), or "".
func serverOf(name string) string {
	rest, ok := strings.CutPrefix(name, "mcp__")
	if !ok {
		return ""
	}
	server, _, ok := strings.Cut(rest, "__")
	if !ok {
		return ""
	}
	return server
}

// resourcesJSON is every server's resources and resource templates, each
// naming its server, sorted as the registry sorts them.
func (s *Server) resourcesJSON() json.RawMessage {
	list, tpls := s.o.Resources.List(""), s.o.Resources.Templates("")
	if list == nil {
		list = []resources.Resource{}
	}
	out := make([]pageTemplate, len(tpls))
	for i, t := range tpls {
		out[i] = pageTemplate{Template: t, Completes: s.o.Resources.Completes(t.Server)}
	}
	return mustJSON(map[string]any{"resources": list, "templates": out})
}

// pageTemplate is a resource template as the page gets it: completes says
// that its server suggests values of its variables
// (/api/template/complete).
type pageTemplate struct {
	resources.Template
	Completes bool `json:"completes,omitempty"`
}

// promptsJSON is every prompt by its public name, with its arguments.
func (s *Server) promptsJSON() json.RawMessage {
	list := s.o.Prompts.List()
	out := make([]pagePrompt, len(list))
	for i, p := range list {
		out[i] = pagePrompt{Prompt: p, Completes: p.Complete != nil}
	}
	return mustJSON(out)
}

// pagePrompt is a prompt as the page gets it: completes says that its
// server suggests argument values (/api/prompt/complete).
type pagePrompt struct {
	prompts.Prompt
	Completes bool `json:"completes,omitempty"`
}

// agentsJSON is every agent entry: its agent's description when it runs,
// else the entry's state.
func (s *Server) agentsJSON() json.RawMessage {
	out := []map[string]any{}
	for _, e := range s.o.Host.Snapshot() {
		if e.Plugin != agent.KindName || e.State == host.Disabled {
			continue
		}
		m := map[string]any{"id": e.ID, "state": e.State.String()}
		if e.Error != "" {
			m["error"] = e.Error
		}
		if s.o.Agents != nil {
			if a, ok := s.o.Agents.Get(e.ID); ok {
				m["info"] = a.Info()
			}
		}
		out = append(out, m)
	}
	return mustJSON(out)
}

// fileJSON is cordis.yml as it is on disk now, and the problems of the
// last load that was refused (none after one that applied).
func (s *Server) fileJSON() json.RawMessage {
	m := map[string]any{"path": s.o.Config}
	text, err := readConfig(s.o.Config)
	if err != nil {
		m["error"] = err.Error()
	} else {
		m["text"] = text
	}
	s.mu.Lock()
	if s.lastProblems != nil {
		m["problems"] = s.lastProblems
	}
	s.mu.Unlock()
	if f := s.o.Host.File(); f != nil {
		m["running"] = f.Hash
	}
	return mustJSON(m)
}

// readConfig reads the file for the Config view as the host reads it
// (host/conffile: without blocking, a regular file, at most 4 MiB).
func readConfig(path string) (string, error) {
	b, err := conffile.Read(path)
	if err != nil {
		return "", fmt.Errorf("reading %s: %w", path, err)
	}
	return string(b), nil
}

// redact redacts encoded JSON with the host's secret set: every string of
// it, whatever its form (the set knows JSON's escapes). If the redaction
// ever broke the JSON (a secret spanning a string's end), each string is
// redacted apart instead.
func (s *Server) redact(b json.RawMessage) json.RawMessage {
	out := json.RawMessage(s.secrets.Redact(string(b)))
	if json.Valid(out) {
		return out
	}
	var v any
	if json.Unmarshal(b, &v) != nil {
		return json.RawMessage(`null`)
	}
	return mustJSON(s.redactValue(v))
}

func (s *Server) redactValue(v any) any {
	switch x := v.(type) {
	case string:
		return s.secrets.Redact(x)
	case []any:
		for i := range x {
			x[i] = s.redactValue(x[i])
		}
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[s.secrets.Redact(k)] = s.redactValue(e)
		}
		return out
	}
	return v
}

// mustJSON encodes v, one of our own types: it cannot fail.
func mustJSON(v any) json.RawMessage {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		panic(fmt.Sprintf("web: encoding %T: %v", v, err))
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n"))
}

// wrap is a message {"type": typ, key: raw}.
func wrap(typ, key string, raw json.RawMessage) json.RawMessage {
	var b bytes.Buffer
	b.WriteString(`{"type":`)
	b.Write(mustJSON(typ))
	b.WriteString(`,"` + key + `":`)
	b.Write(raw)
	b.WriteByte('}')
	return b.Bytes()
}

// message is wrap of v, encoded.
func message(typ, key string, v any) json.RawMessage { return wrap(typ, key, mustJSON(v)) }
