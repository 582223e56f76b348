package mcpservers

import (
	"errors"
	"fmt"
	"math"
	"regexp"
	"sort"
	"strings"

	"github.com/BurntSushi/toml"
)

// codex reads a Codex config.toml: its [mcp_servers.NAME] tables. The rest
// of the file (Codex's own settings) is not ours and is not looked at.
func (r *reader) codex() error {
	var root map[string]any
	md, err := toml.Decode(string(r.data), &root)
	if err != nil {
		var pe toml.ParseError
		if errors.As(err, &pe) {
			p := Pos{File: r.file.Path, Line: pe.Position.Line, Col: pe.Position.Col}
			return &fileError{[]Problem{{Pos: p, Msg: "invalid TOML: " + pe.Message}}}
		}
		return &fileError{[]Problem{{Pos: Pos{File: r.file.Path}, Msg: "invalid TOML: " + err.Error()}}}
	}
	at := tomlPositions(r.file.Path, r.data)
	raw, ok := root["mcp_servers"]
	if !ok {
		return &fileError{[]Problem{{Pos: Pos{File: r.file.Path}, Msg: "no MCP servers in this file: Codex lists them as [mcp_servers.NAME] tables"}}}
	}
	list, ok := raw.(map[string]any)
	if !ok {
		return &fileError{[]Problem{{Pos: at.of("mcp_servers"), Field: "mcp_servers", Msg: "must be a table of [mcp_servers.NAME] tables"}}}
	}
	x := &expander{format: FormatCodex, workspace: r.file.Workspace, home: r.opts.Home}
	for _, name := range tomlOrder(md, list) {
		s := &Server{Name: name, Pos: at.of("mcp_servers", name)}
		r.file.Servers = append(r.file.Servers, s)
		t, ok := list[name].(map[string]any)
		if !ok {
			s.Problems = append(s.Problems, Problem{Pos: s.Pos, Server: name, Msg: "a server must be a table ([mcp_servers." + name + "])"})
			continue
		}
		sv := &server{s: s, x: x, bare: !r.opts.Strict}
		c := &tomlFields{sv: sv, t: t, at: at, path: []string{"mcp_servers", name}, seen: map[string]bool{}}
		c.read()
		sv.build()
	}
	return nil
}

// tomlOrder is the servers' names in the order the file gives them.
func tomlOrder(md toml.MetaData, list map[string]any) []string {
	var out []string
	seen := map[string]bool{}
	for _, k := range md.Keys() {
		if len(k) >= 2 && k[0] == "mcp_servers" && !seen[k[1]] {
			if _, ok := list[k[1]]; ok {
				seen[k[1]] = true
				out = append(out, k[1])
			}
		}
	}
	var rest []string
	for name := range list {
		if !seen[name] {
			rest = append(rest, name)
		}
	}
	sort.Strings(rest)
	return append(out, rest...)
}

// Codex fields the harness reads past, and why.
var codexNotes = map[string]string{
	"required":                    "codex exec stops when such a server does not start; the harness runs the others and shows this one failed",
	"default_tools_approval_mode": "tool approval is the client's: the harness asks for none",
	"tools":                       "per-tool approval is the client's: the harness asks for none",
	"oauth_resource":              "the harness asks for a token for the resource the server names in its metadata (RFC 9728), not another",
	"oauth":                       "it is not read: write the client the server needs in the entry's oauth: (clientId, callbackPort; README); scopes are read",
}

type tomlFields struct {
	sv   *server
	t    map[string]any
	at   tomlPos
	path []string
	seen map[string]bool
}

func (c *tomlFields) pos(key ...string) Pos { return c.at.of(append(c.path, key...)...) }

func (c *tomlFields) get(key string) (any, bool) {
	c.seen[key] = true
	v, ok := c.t[key]
	return v, ok
}

func (c *tomlFields) wrong(key, want string, v any) {
	c.sv.problem(c.pos(key), key, "must be %s, not %s", want, tomlType(v))
}

func (c *tomlFields) str(key string) *value {
	v, ok := c.get(key)
	if !ok {
		return nil
	}
	s, ok := v.(string)
	if !ok {
		c.wrong(key, "a string", v)
		return nil
	}
	return &value{text: s, pos: c.pos(key), literal: true}
}

func (c *tomlFields) strs(key string) []string {
	v, ok := c.get(key)
	if !ok {
		return nil
	}
	list, ok := v.([]any)
	if !ok {
		c.wrong(key, "an array of strings", v)
		return nil
	}
	out := make([]string, 0, len(list))
	for i, e := range list {
		s, ok := e.(string)
		if !ok {
			c.sv.problem(c.pos(key), fmt.Sprintf("%s[%d]", key, i), "must be a string, not %s", tomlType(e))
			continue
		}
		out = append(out, s)
	}
	return out
}

// table reads a table of name → string, in the order of the names.
func (c *tomlFields) table(key string) []pair {
	v, ok := c.get(key)
	if !ok {
		return nil
	}
	m, ok := v.(map[string]any)
	if !ok {
		c.wrong(key, "a table of name = \"string\"", v)
		return nil
	}
	names := make([]string, 0, len(m))
	for k := range m {
		names = append(names, k)
	}
	sort.Strings(names)
	out := make([]pair, 0, len(m))
	for _, k := range names {
		s, ok := m[k].(string)
		if !ok {
			c.sv.problem(c.pos(key, k), key+"."+k, "must be a string, not %s", tomlType(m[k]))
			continue
		}
		out = append(out, pair{key: k, val: &value{text: s, pos: c.pos(key, k), literal: true}})
	}
	return out
}

// seconds reads a positive number of seconds (or of milliseconds, scale
// 1) as milliseconds.
func (c *tomlFields) millis(key string, scale float64) int {
	v, ok := c.get(key)
	if !ok {
		return 0
	}
	var x float64
	switch n := v.(type) {
	case int64:
		x = float64(n)
	case float64:
		x = n
	default:
		c.wrong(key, "a number", v)
		return 0
	}
	ms := x * scale
	if ms < 1 || ms > math.MaxInt32 || math.IsNaN(ms) {
		c.sv.problem(c.pos(key), key, "must be a positive number, at most %d milliseconds", math.MaxInt32)
		return 0
	}
	return int(math.Round(ms))
}

func (c *tomlFields) read() {
	sv := c.sv
	sv.command = c.str("command")
	for _, a := range c.strs("args") {
		sv.args = append(sv.args, &value{text: a, pos: c.pos("args"), literal: true})
	}
	sv.env = c.table("env")
	for _, name := range c.strs("env_vars") {
		if !varName.MatchString(name) {
			sv.problem(c.pos("env_vars"), "env_vars", "%q is not a variable name", name)
			continue
		}
		// Forwarded when set, as Codex does.
		sv.env = setPair(sv.env, pair{key: name, val: &value{text: "${" + name + "}", pos: c.pos("env_vars"), optional: true}}, false)
	}
	sv.cwd = c.str("cwd")
	if sv.cwd != nil {
		sv.cwd.path = true
	}
	sv.url = c.str("url")
	sv.headers = c.table("http_headers")
	for _, p := range c.table("env_http_headers") {
		if !varName.MatchString(p.val.text) {
			sv.problem(p.val.pos, "env_http_headers."+p.key, "%q is not a variable name", p.val.text)
			continue
		}
		// Sent when the variable is set, as Codex does.
		p.val = &value{text: "${" + p.val.text + "}", pos: p.val.pos, optional: true}
		sv.headers = setPair(sv.headers, p, true)
	}
	if v := c.str("bearer_token_env_var"); v != nil {
		if !varName.MatchString(v.text) {
			sv.problem(v.pos, "bearer_token_env_var", "%q is not a variable name", v.text)
		} else {
			sv.headers = setPair(sv.headers, pair{key: "Authorization", val: &value{text: "Bearer ${" + v.text + "}", pos: v.pos}}, true)
		}
	}
	if v := c.str("bearer_token"); v != nil {
		sv.headers = setPair(sv.headers, pair{key: "Authorization", val: &value{text: "Bearer " + v.text, pos: v.pos, literal: true}}, true)
	}
	if scopes := c.strs("scopes"); len(scopes) > 0 {
		sv.oauth = &oauthConfig{field: "scopes", pos: c.pos("scopes")}
		sv.oauth.setScopes(scopes, c.pos("scopes"))
	}
	if v, ok := c.get("enabled"); ok {
		if b, isBool := v.(bool); !isBool {
			c.wrong("enabled", "true or false", v)
		} else if !b {
			sv.s.Off, sv.s.Why = true, "enabled = false"
		}
	}
	if _, ok := c.t["startup_timeout_sec"]; ok {
		sv.startupTimeout = c.millis("startup_timeout_sec", 1000)
	} else {
		sv.startupTimeout = c.millis("startup_timeout_ms", 1)
	}
	c.seen["startup_timeout_ms"] = true
	sv.toolCallTimeout = c.millis("tool_timeout_sec", 1000)
	if v := c.strs("enabled_tools"); v != nil {
		sv.enabledTools, sv.enabledToolsPos = v, c.pos("enabled_tools")
	}
	if v := c.strs("disabled_tools"); v != nil {
		sv.disabledTools, sv.disabledToolsPos = v, c.pos("disabled_tools")
	}
	keys := make([]string, 0, len(c.t))
	for k := range c.t {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if c.seen[k] {
			continue
		}
		why, known := codexNotes[k]
		if !known {
			why = "it is not a Codex field the harness knows"
		}
		sv.note(c.pos(k), k, "%s", why)
	}

	switch {
	case sv.command != nil:
		for _, k := range []string{"url", "http_headers", "env_http_headers", "bearer_token_env_var", "bearer_token"} {
			if _, ok := c.t[k]; ok {
				sv.problem(c.pos(k), k, "is not for a stdio server (it has a command)")
				return
			}
		}
		sv.transport = "stdio"
	case sv.url != nil:
		for _, k := range []string{"args", "env", "env_vars", "cwd"} {
			if _, ok := c.t[k]; ok {
				sv.problem(c.pos(k), k, "is only for a stdio server, not one reached by url")
				return
			}
		}
		sv.transport = "streamable-http"
	default:
		sv.problem(sv.s.Pos, "", "neither command (a stdio server) nor url (a Streamable HTTP server)")
	}
}

// setPair sets p in pairs, replacing one of the same key (in any case, for
// a header).
func setPair(pairs []pair, p pair, header bool) []pair {
	for i, q := range pairs {
		if q.key == p.key || header && strings.EqualFold(q.key, p.key) {
			pairs[i] = p
			return pairs
		}
	}
	return append(pairs, p)
}

func tomlType(v any) string {
	switch v.(type) {
	case string:
		return "a string"
	case int64, float64:
		return "a number"
	case bool:
		return "a boolean"
	case []any:
		return "an array"
	case map[string]any:
		return "a table"
	}
	return fmt.Sprintf("%T", v)
}

// tomlPos finds where keys are in a TOML file. BurntSushi/toml gives a
// position for its own errors only, so the file is scanned for table
// headers and key assignments, line by line: enough for the layouts
// people write (a table per server, a key per line), and a problem
// elsewhere falls back to the nearest table that was found.
type tomlPos struct {
	file string
	keys map[string]Pos
}

var (
	tomlKeyPart = `(?:[A-Za-z0-9_-]+|"(?:[^"\\]|\\.)*"|'[^']*')`
	tomlDotted  = tomlKeyPart + `(?:\s*\.\s*` + tomlKeyPart + `)*`
	tomlHeader  = regexp.MustCompile(`^(\s*)\[\[?\s*(` + tomlDotted + `)\s*\]\]?`)
	tomlAssign  = regexp.MustCompile(`^(\s*)(` + tomlDotted + `)\s*=`)
	tomlPartRe  = regexp.MustCompile(tomlKeyPart)
)

func tomlPositions(file string, data []byte) tomlPos {
	p := tomlPos{file: file, keys: map[string]Pos{}}
	var table []string
	inMulti := ""
	for i, line := range strings.Split(string(data), "\n") {
		if inMulti != "" {
			if strings.Count(line, inMulti)%2 == 1 {
				inMulti = ""
			}
			continue
		}
		if m := tomlHeader.FindStringSubmatch(line); m != nil {
			table = tomlKey(m[2])
			p.add(table, Pos{File: file, Line: i + 1, Col: len(m[1]) + 1})
			continue
		}
		if m := tomlAssign.FindStringSubmatch(line); m != nil {
			key := append(append([]string(nil), table...), tomlKey(m[2])...)
			p.add(key, Pos{File: file, Line: i + 1, Col: len([]rune(m[1])) + 1})
			rest := line[len(m[0]):]
			for _, q := range []string{`"""`, `'''`} {
				if strings.Count(rest, q)%2 == 1 {
					inMulti = q
				}
			}
		}
	}
	return p
}

func tomlKey(dotted string) []string {
	var out []string
	for _, part := range tomlPartRe.FindAllString(dotted, -1) {
		switch {
		case strings.HasPrefix(part, `"`):
			s := part[1 : len(part)-1]
			s = strings.NewReplacer(`\"`, `"`, `\\`, `\`).Replace(s)
			out = append(out, s)
		case strings.HasPrefix(part, `'`):
			out = append(out, part[1:len(part)-1])
		default:
			out = append(out, part)
		}
	}
	return out
}

// add records where key is, and where each key around it is first seen:
// [mcp_servers.s.tools.t] is where mcp_servers.s.tools starts too.
func (p tomlPos) add(key []string, pos Pos) {
	for n := len(key); n > 0; n-- {
		k := strings.Join(key[:n], "\x00")
		if _, ok := p.keys[k]; !ok {
			p.keys[k] = pos
		}
	}
}

// of is where key is, or the nearest table around it that was found.
func (p tomlPos) of(key ...string) Pos {
	for n := len(key); n > 0; n-- {
		if pos, ok := p.keys[strings.Join(key[:n], "\x00")]; ok {
			return pos
		}
	}
	return Pos{File: p.file}
}
