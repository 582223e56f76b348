package mcpservers

import (
	"fmt"
	"math"
	"path/filepath"
	"strconv"
)

// json reads the formats written in JSON: every one but Codex.
func (r *reader) json() error {
	root, err := parseJSON(r.file.Path, r.data)
	if err != nil {
		return err
	}
	if root.kind != jObject {
		return r.fail(root.off, "the file must hold a JSON object (with mcpServers, or servers for VS Code), not %s", root.kind)
	}
	format, list, err := r.detect(root)
	if err != nil {
		return err
	}
	r.file.Format = format
	if list.kind != jObject {
		return r.fail(list.off, "the servers must be an object of name → server, not %s", list.kind)
	}
	x := &expander{format: format, workspace: r.file.Workspace, home: r.opts.Home}
	allowed, excluded := r.geminiLists(root, format)
	for _, m := range list.members {
		s := &Server{Name: m.key, Pos: r.pos(m.keyOff)}
		r.file.Servers = append(r.file.Servers, s)
		switch {
		case excluded[m.key]:
			s.Off, s.Why = true, "mcp.excluded names it"
		case allowed != nil && !allowed[m.key]:
			s.Off, s.Why = true, "mcp.allowed does not name it"
		}
		if m.val.kind != jObject {
			s.Problems = append(s.Problems, Problem{Pos: r.pos(m.val.off), Server: m.key, Msg: fmt.Sprintf("a server must be an object, not %s", m.val.kind)})
			continue
		}
		sv := &server{s: s, x: x, bare: !r.opts.Strict}
		r.jsonServer(sv, m.val, format)
		sv.build()
	}
	return nil
}

func (r *reader) pos(off int) Pos { return position(r.file.Path, r.data, off) }

func (r *reader) fail(off int, format string, args ...any) error {
	return &fileError{[]Problem{{Pos: r.pos(off), Msg: fmt.Sprintf(format, args...)}}}
}

// detect decides the format of a JSON file (Options.Format, or by its name
// and shape) and finds its servers.
func (r *reader) detect(root *jnode) (string, *jnode, error) {
	format := r.opts.Format
	mcpServers := root.get("mcpServers")
	vscode := root.get("servers")
	if vscode == nil {
		// VS Code's user settings.json nests them: "mcp": {"servers": …}.
		vscode = root.get("mcp").get("servers")
	}
	switch {
	case format == FormatVSCode:
		if vscode == nil {
			return "", nil, r.fail(root.off, "no servers in this file: the vscode format reads \"servers\" (and \"inputs\")%s", r.hint(mcpServers != nil))
		}
		return format, vscode, nil
	case format != FormatAuto:
		if mcpServers == nil {
			return "", nil, r.fail(root.off, "no mcpServers in this file: the %s format reads \"mcpServers\"%s", format, r.hint(vscode != nil))
		}
		return format, mcpServers, nil
	case mcpServers != nil:
		return r.guess(mcpServers), mcpServers, nil
	case vscode != nil:
		return FormatVSCode, vscode, nil
	}
	return "", nil, r.fail(root.off, "no MCP servers in this file: expected \"mcpServers\" (Claude Desktop, Claude Code, Cursor, Windsurf, Gemini CLI), \"servers\" (VS Code) or, in a .toml file, [mcp_servers.NAME] tables (Codex)")
}

func (r *reader) hint(other bool) string {
	if other {
		return "; this file looks like another format: try format auto"
	}
	return ""
}

// guess tells the clients that write mcpServers apart: by the file's name,
// then by fields only one of them has.
func (r *reader) guess(list *jnode) string {
	base := filepath.Base(r.file.Path)
	dir := filepath.Base(filepath.Dir(r.file.Path))
	switch {
	case base == "claude_desktop_config.json":
		return FormatClaudeDesktop
	case base == ".mcp.json":
		return FormatClaudeCode
	case dir == ".cursor":
		return FormatCursor
	case dir == ".gemini", base == "settings.json":
		return FormatGemini
	case base == "mcp_config.json", dir == "windsurf":
		return FormatWindsurf
	}
	has := func(fields ...string) bool {
		for _, m := range list.members {
			for _, f := range fields {
				if m.val.get(f) != nil {
					return true
				}
			}
		}
		return false
	}
	switch {
	case has("httpUrl", "includeTools", "excludeTools", "trust"):
		return FormatGemini
	case has("serverUrl"):
		return FormatWindsurf
	case has("type"):
		return FormatClaudeCode
	}
	return FormatClaudeDesktop
}

// geminiLists are Gemini CLI's mcp.allowed and mcp.excluded: names of
// servers to connect, or not.
func (r *reader) geminiLists(root *jnode, format string) (allowed, excluded map[string]bool) {
	if format != FormatGemini {
		return nil, nil
	}
	names := func(n *jnode) map[string]bool {
		if n == nil || n.kind != jArray {
			return nil
		}
		out := map[string]bool{}
		for _, e := range n.elems {
			if e.kind == jString {
				out[e.text] = true
			}
		}
		return out
	}
	mcp := root.get("mcp")
	return names(mcp.get("allowed")), names(mcp.get("excluded"))
}

// Fields a JSON server may have that the harness reads past, and why.
var jsonNotes = map[string]string{
	"trust":                "tool confirmations are the client's: the harness asks for none",
	"alwaysAllow":          "tool approval is the client's: the harness asks for none",
	"autoApprove":          "tool approval is the client's: the harness asks for none",
	"description":          "a description for the client's own list",
	"envFile":              "it is not read: write the variables in env (or in the harness's environment)",
	"headersHelper":        "it is not run: write the headers, with ${VAR} for what must stay out of the file",
	"authProviderType":     "Google credentials are not supported here: give the token in headers (the harness logs in by OAuth itself when the server asks)",
	"targetAudience":       "Google credentials are not supported here: give the token in headers (the harness logs in by OAuth itself when the server asks)",
	"targetServiceAccount": "Google credentials are not supported here: give the token in headers (the harness logs in by OAuth itself when the server asks)",
	"dev":                  "VS Code's development mode (restart on change, debugging) is the editor's",
	"gallery":              "where VS Code installed it from",
	"version":              "where VS Code installed it from",
	"extension":            "a Gemini CLI extension's own field",
	"extensionName":        "a Gemini CLI extension's own field",
}

// jsonServer reads one server of a JSON format into sv.
func (r *reader) jsonServer(sv *server, n *jnode, format string) {
	f := &fields{r: r, sv: sv, n: n}
	typ := f.str("type")
	sv.command = f.value("command")
	sv.args = f.values("args")
	sv.env = f.pairs("env")
	sv.cwd = f.value("cwd")
	if sv.cwd != nil {
		sv.cwd.path = true
	}
	sv.headers = f.pairs("headers")
	var urls []*value
	var urlFields []string
	for _, k := range []string{"url", "httpUrl", "serverUrl"} {
		if v := f.value(k); v != nil {
			urls = append(urls, v)
			urlFields = append(urlFields, k)
		}
	}
	if f.boolean("disabled") {
		sv.s.Off, sv.s.Why = true, "\"disabled\": true"
	}
	sv.alwaysLoad = f.boolean("alwaysLoad")
	f.jsonOAuth()
	if v := f.list("includeTools"); v != nil {
		sv.enabledTools, sv.enabledToolsPos = v, f.at("includeTools")
	}
	var disabled []string
	for _, k := range []string{"excludeTools", "disabledTools"} {
		if v := f.list(k); v != nil {
			disabled = append(disabled, v...)
			sv.disabledToolsPos = f.at(k)
		}
	}
	sv.disabledTools = disabled
	if t := n.get("timeout"); t != nil {
		if format == FormatGemini {
			sv.toolCallTimeout = f.millis("timeout", 1)
		} else {
			f.seen["timeout"] = true
			sv.note(r.pos(t.off), "timeout", "the clients do not agree on its unit: set toolCallTimeoutMs in a cordis.yml entry instead (harness import)")
		}
	}
	if tcp := n.get("tcp"); tcp != nil {
		f.seen["tcp"] = true
		sv.problem(r.pos(tcp.off), "tcp", "a WebSocket server is not supported: only stdio and Streamable HTTP are")
	}
	for _, m := range n.members {
		if f.seen[m.key] {
			continue
		}
		why, known := jsonNotes[m.key]
		if !known {
			why = "it is not a field the harness knows"
		}
		if why != "" {
			sv.note(r.pos(m.keyOff), m.key, "%s", why)
		}
	}

	switch typ {
	case "", "stdio", "http", "streamable-http", "streamableHttp", "streamable_http":
	case "sse":
		sv.problem(f.at("type"), "type", "the legacy HTTP+SSE transport is not supported, only Streamable HTTP (many servers serve both: try the server's /mcp URL)")
		return
	default:
		sv.problem(f.at("type"), "type", "%q is not a transport the harness knows: stdio or http", typ)
		return
	}
	if len(urls) > 1 {
		sv.problem(urls[1].pos, urlFields[1], "a server has one URL: %s and %s are both given", urlFields[0], urlFields[1])
		return
	}
	switch {
	case typ == "stdio" || (typ == "" && sv.command != nil):
		if sv.command == nil {
			sv.problem(sv.s.Pos, "command", "is required for a stdio server")
			return
		}
		if len(urls) > 0 {
			sv.problem(urls[0].pos, urlFields[0], "a stdio server (it has a command) takes no URL")
			return
		}
		if len(sv.headers) > 0 {
			sv.problem(f.at("headers"), "headers", "are only for a server reached by URL, not a stdio one")
			return
		}
		sv.transport = "stdio"
	case len(urls) == 1:
		if sv.command != nil || len(sv.args) > 0 {
			sv.problem(f.at("command", "args"), "command", "a server reached by URL takes no command or args")
			return
		}
		if len(sv.env) > 0 || sv.cwd != nil {
			sv.problem(f.at("env", "cwd"), "env", "env and cwd are only for a stdio server")
			return
		}
		sv.url = urls[0]
		sv.transport = "streamable-http"
	default:
		sv.problem(sv.s.Pos, "", "neither command (a stdio server) nor url (a Streamable HTTP server)")
	}
}

// fields reads the typed fields of one JSON server, recording the ones it
// read and a problem for each of the wrong type.
type fields struct {
	r    *reader
	sv   *server
	n    *jnode
	seen map[string]bool
}

func (f *fields) get(key string) *jnode {
	if f.seen == nil {
		f.seen = map[string]bool{}
	}
	f.seen[key] = true
	v := f.n.get(key)
	if v != nil && v.kind == jNull {
		return nil // as if absent, as JavaScript's clients read it
	}
	return v
}

func (f *fields) wrong(v *jnode, key, want string) {
	f.sv.problem(f.r.pos(v.off), key, "must be %s, not %s", want, v.kind)
}

// at is where the first of the keys present is, else the server.
func (f *fields) at(keys ...string) Pos {
	for _, k := range keys {
		if v := f.n.get(k); v != nil {
			return f.r.pos(v.off)
		}
	}
	return f.sv.s.Pos
}

func (f *fields) str(key string) string {
	v := f.get(key)
	if v == nil {
		return ""
	}
	if v.kind != jString {
		f.wrong(v, key, "a string")
		return ""
	}
	return v.text
}

func (f *fields) value(key string) *value {
	v := f.get(key)
	if v == nil {
		return nil
	}
	if v.kind != jString {
		f.wrong(v, key, "a string")
		return nil
	}
	return &value{text: v.text, pos: f.r.pos(v.off)}
}

func (f *fields) values(key string) []*value {
	v := f.get(key)
	if v == nil {
		return nil
	}
	if v.kind != jArray {
		f.wrong(v, key, "an array of strings")
		return nil
	}
	out := make([]*value, 0, len(v.elems))
	for i, e := range v.elems {
		if e.kind != jString {
			f.wrong(e, fmt.Sprintf("%s[%d]", key, i), "a string")
			continue
		}
		out = append(out, &value{text: e.text, pos: f.r.pos(e.off)})
	}
	return out
}

func (f *fields) list(key string) []string {
	vals := f.values(key)
	if vals == nil {
		return nil
	}
	out := make([]string, len(vals))
	for i, v := range vals {
		out[i] = v.text
	}
	return out
}

func (f *fields) pairs(key string) []pair {
	v := f.get(key)
	if v == nil {
		return nil
	}
	if v.kind != jObject {
		f.wrong(v, key, "an object of name → string")
		return nil
	}
	out := make([]pair, 0, len(v.members))
	for _, m := range v.members {
		val := m.val
		switch val.kind {
		case jString:
		case jNumber, jBool:
			// Written without quotes, the value is still the text a
			// process or a header gets.
		default:
			f.wrong(val, key+"."+m.key, "a string")
			continue
		}
		out = append(out, pair{key: m.key, val: &value{text: val.text, pos: f.r.pos(val.off)}})
	}
	return out
}

func (f *fields) boolean(key string) bool {
	v := f.get(key)
	if v == nil {
		return false
	}
	if v.kind != jBool {
		f.wrong(v, key, "true or false")
		return false
	}
	return v.text == "true"
}

// millis reads a positive number of units of ms milliseconds.
func (f *fields) millis(key string, unit float64) int {
	v := f.get(key)
	if v == nil {
		return 0
	}
	if v.kind != jNumber {
		f.wrong(v, key, "a number")
		return 0
	}
	x, err := strconv.ParseFloat(v.text, 64)
	ms := x * unit
	if err != nil || ms < 1 || ms > math.MaxInt32 || math.IsNaN(ms) {
		f.sv.problem(f.r.pos(v.off), key, "must be a positive number, at most %d milliseconds", math.MaxInt32)
		return 0
	}
	return int(math.Round(ms))
}
