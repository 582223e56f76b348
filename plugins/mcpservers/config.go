package mcpservers

import (
	"fmt"
	"path/filepath"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"
)

// server is one server as a client's file describes it, before it becomes
// an mcp-client configuration: every format is read into this.
type server struct {
	s    *Server
	x    *expander
	bare bool // Options.Strict is false

	transport        string
	command, cwd     *value
	args             []*value
	env, headers     []pair
	url              *value
	enabledTools     []string
	disabledTools    []string
	toolCallTimeout  int // ms; 0: the default
	startupTimeout   int // ms; 0: the default
	alwaysLoad       bool
	oauth            *oauthConfig // oauth.go
	enabledToolsPos  Pos
	disabledToolsPos Pos
}

// value is a string of the file with where it is. optional: a variable
// alone in it leaves the key out when it is unset, whatever the options (a
// Codex env_vars or env_http_headers name).
type value struct {
	text     string
	pos      Pos
	optional bool
	path     bool // a path: relative to the file's project folder (a cwd; a command given as a path)
	literal  bool // the text as it is, no variables (Codex expands none)
}

type pair struct {
	key string
	val *value
}

func (sv *server) problem(pos Pos, field, format string, args ...any) {
	sv.s.Problems = append(sv.s.Problems, Problem{Pos: pos, Server: sv.s.Name, Field: field, Msg: fmt.Sprintf(format, args...)})
}

func (sv *server) note(pos Pos, field, format string, args ...any) {
	sv.s.Notes = append(sv.s.Notes, Note{Pos: pos, Server: sv.s.Name, Field: field, Msg: fmt.Sprintf(format, args...)})
}

// build makes the mcp-client configuration, or records why it cannot.
func (sv *server) build() {
	if len(sv.s.Problems) > 0 {
		return
	}
	pos := sv.s.Pos
	m := &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map", Line: pos.Line, Column: pos.Col}
	add := func(key string, v *yaml.Node) {
		k := &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: key, Line: v.Line, Column: v.Column}
		m.Content = append(m.Content, k, v)
	}
	str := func(field string, v *value, bare bool) *yaml.Node {
		n, err := sv.scalar(v, bare)
		if err != nil {
			sv.problem(v.pos, field, "%v", err)
		}
		return n
	}
	sv.checkNUL()
	if len(sv.s.Problems) > 0 {
		return
	}
	add("transport", plain("!!str", sv.transport, pos))
	if sv.command != nil {
		if sv.cwd == nil {
			// A command given as a relative path is the project's: the
			// clients start it in the project folder.
			sv.command.path = strings.ContainsAny(sv.command.text, `/\`)
		}
		add("command", str("command", sv.command, false))
	}
	if len(sv.args) > 0 {
		seq := &yaml.Node{Kind: yaml.SequenceNode, Tag: "!!seq", Line: sv.args[0].pos.Line, Column: sv.args[0].pos.Col}
		for i, a := range sv.args {
			seq.Content = append(seq.Content, str(fmt.Sprintf("args[%d]", i), a, false))
		}
		add("args", seq)
	}
	if len(sv.env) > 0 {
		add("env", sv.mapping("env", sv.env))
	}
	if sv.cwd != nil {
		add("cwd", str("cwd", sv.cwd, false))
	}
	if sv.url != nil {
		add("url", str("url", sv.url, false))
	}
	if len(sv.headers) > 0 {
		add("headers", sv.mapping("headers", sv.headers))
	}
	sv.addOAuth(add)
	if sv.toolCallTimeout > 0 {
		add("toolCallTimeoutMs", plain("!!int", strconv.Itoa(sv.toolCallTimeout), pos))
	}
	if sv.startupTimeout > 0 {
		add("startupTimeoutMs", plain("!!int", strconv.Itoa(sv.startupTimeout), pos))
	}
	if len(sv.enabledTools) > 0 {
		add("enabledTools", stringList(sv.enabledTools, sv.enabledToolsPos))
	}
	if len(sv.disabledTools) > 0 {
		add("disabledTools", stringList(sv.disabledTools, sv.disabledToolsPos))
	}
	if sv.alwaysLoad {
		add("alwaysLoad", plain("!!bool", "true", pos))
	}
	if len(sv.s.Problems) == 0 {
		sv.s.Config = m
	}
}

// checkNUL refuses a NUL in what starts the program — the command, an
// argument, the cwd, a name or value of env: exec cannot pass one, so the
// server could never start, whatever cordis.yml says.
func (sv *server) checkNUL() {
	const why = "holds a NUL byte (\\0): no program can be started with one"
	check := func(field string, v *value) {
		if v != nil && strings.ContainsRune(v.text, 0) {
			sv.problem(v.pos, field, why)
		}
	}
	check("command", sv.command)
	for i, a := range sv.args {
		check(fmt.Sprintf("args[%d]", i), a)
	}
	check("cwd", sv.cwd)
	for _, p := range sv.env {
		if strings.ContainsRune(p.key, 0) {
			sv.problem(p.val.pos, "env", "the name %q %s", p.key, why)
			continue
		}
		check("env."+p.key, p.val)
	}
}

// mapping is env or headers: each value expanded; a value that is one
// variable alone may be left out when unset (Options.Strict false, or a
// value the format itself marks optional).
func (sv *server) mapping(field string, pairs []pair) *yaml.Node {
	m := &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map", Line: pairs[0].val.pos.Line, Column: pairs[0].val.pos.Col}
	for _, p := range pairs {
		v, err := sv.scalar(p.val, sv.bare || p.val.optional)
		if err != nil {
			sv.problem(p.val.pos, field+"."+p.key, "%v", err)
			continue
		}
		k := &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: p.key, Line: p.val.pos.Line, Column: p.val.pos.Col}
		m.Content = append(m.Content, k, v)
	}
	return m
}

// scalar is a value's node: a plain string, or a !!js expression when it
// reads a variable.
func (sv *server) scalar(v *value, bare bool) (*yaml.Node, error) {
	parts := []part{{lit: v.text}}
	if !v.literal {
		var err error
		if parts, err = sv.x.split(v.text); err != nil {
			return plain("!!str", v.text, v.pos), err
		}
	}
	if v.path {
		parts = sv.x.relative(parts)
	}
	expr, lit := expression(parts, bare)
	if expr == "" {
		return plain("!!str", lit, v.pos), nil
	}
	return plain("!!js", expr, v.pos), nil
}

func plain(tag, val string, pos Pos) *yaml.Node {
	return &yaml.Node{Kind: yaml.ScalarNode, Tag: tag, Value: val, Line: pos.Line, Column: pos.Col}
}

func stringList(list []string, pos Pos) *yaml.Node {
	seq := &yaml.Node{Kind: yaml.SequenceNode, Tag: "!!seq", Line: pos.Line, Column: pos.Col}
	for _, s := range list {
		seq.Content = append(seq.Content, plain("!!str", s, pos))
	}
	return seq
}

// setServerName puts serverName first in a configuration.
func setServerName(m *yaml.Node, name string, pos Pos) {
	k := plain("!!str", "serverName", pos)
	v := plain("!!str", name, pos)
	m.Content = append([]*yaml.Node{k, v}, m.Content...)
}

// relative makes the text of a relative cwd start at the file's project
// folder, where the clients that accept one resolve it: the entry may live
// in a cordis.yml elsewhere.
func (x *expander) relative(parts []part) []part {
	if len(parts) == 0 || parts[0].env != "" || filepath.IsAbs(parts[0].lit) {
		return parts // empty, absolute, or a variable first (it may be absolute itself)
	}
	out := append([]part(nil), parts...)
	out[0].lit = x.workspace + string(filepath.Separator) + strings.TrimPrefix(out[0].lit, "."+string(filepath.Separator))
	if out[0].lit == x.workspace+string(filepath.Separator)+"." {
		out[0].lit = x.workspace
	}
	return out
}
