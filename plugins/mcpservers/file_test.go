package mcpservers

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"

	"github.com/harness-go/harness/host"
	"github.com/harness-go/harness/host/jsexpr"

	_ "github.com/harness-go/harness/plugins/mcpclient" // the kind the entries name
)

var update = flag.Bool("update", false, "rewrite the golden files of testdata/")

// fixtures are one file of each client, as its documentation writes them.
var fixtures = []struct {
	path, format string
}{
	{"claude-desktop/claude_desktop_config.json", FormatClaudeDesktop},
	{"claude-code/.mcp.json", FormatClaudeCode},
	{"cursor/.cursor/mcp.json", FormatCursor},
	{"vscode/.vscode/mcp.json", FormatVSCode},
	{"windsurf/mcp_config.json", FormatWindsurf},
	{"gemini/.gemini/settings.json", FormatGemini},
	{"codex/.codex/config.toml", FormatCodex},
}

// render is what a test compares: the entries harness import prints, then
// the notes and problems, with the fixture's project folder and the home
// folder written as $WORKSPACE and $HOME.
func render(t *testing.T, f *File) string {
	t.Helper()
	out, problems := Entries([]*File{f})
	var b strings.Builder
	b.Write(out)
	for _, s := range f.Servers {
		for _, n := range s.Notes {
			fmt.Fprintf(&b, "# note: %s\n", n)
		}
	}
	for _, p := range problems {
		fmt.Fprintf(&b, "# problem: %s\n", p.Error())
	}
	return strings.NewReplacer(f.Workspace, "$WORKSPACE", "/home/u", "$HOME").Replace(b.String())
}

// Each fixture reads as its format, by auto and when named, into the
// entries of its golden file; those entries load in cordis.yml (harness
// validate's check, with every variable unset and with every one set).
func TestFixtures(t *testing.T) {
	for _, fx := range fixtures {
		t.Run(fx.format, func(t *testing.T) {
			path := filepath.Join("testdata", fx.path)
			f, err := Read(path, Options{Home: "/home/u"})
			if err != nil {
				t.Fatal(err)
			}
			if f.Format != fx.format {
				t.Fatalf("auto read it as %s, want %s", f.Format, fx.format)
			}
			named, err := Read(path, Options{Home: "/home/u", Format: fx.format})
			if err != nil {
				t.Fatal(err)
			}
			got := render(t, f)
			if again := render(t, named); again != got {
				t.Fatalf("read as %s:\n%s\nread as auto:\n%s", fx.format, again, got)
			}
			golden := filepath.Join("testdata", fx.format+".golden")
			if *update {
				if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatal(err)
			}
			if got != string(want) {
				t.Fatalf("%s: got\n%s\nwant (%s)\n%s", path, got, golden, want)
			}
			checkLoads(t, f)
		})
	}
}

// checkLoads appends the entries of f to a cordis.yml and checks it as
// harness validate does.
func checkLoads(t *testing.T, f *File) {
	t.Helper()
	out, _ := Entries([]*File{f})
	vars := map[string]bool{}
	for _, s := range f.Servers {
		if s.Config != nil {
			collectVars(s.Config, vars)
		}
	}
	for _, set := range []bool{false, true} {
		env := map[string]string{}
		if set {
			for v := range vars {
				env[v] = "value-of-" + strings.ToLower(v)
				if strings.Contains(v, "URL") {
					env[v] = "https://h.example"
				}
			}
		}
		file, err := host.ParseFile("cordis.yml", append([]byte("- {id: other, name: mcp-client, config: {serverName: other, transport: stdio, command: x}}\n"), out...))
		if err != nil {
			t.Fatalf("the entries do not parse: %v\n%s", err, out)
		}
		r := host.Check(file, mapEnv(env), nil)
		if len(r.Errors) > 0 {
			t.Fatalf("variables set %v: %v\n%s", set, r.Errors, out)
		}
		if set && len(r.Warnings) > 0 {
			t.Fatalf("every variable set, still warnings: %v", r.Warnings)
		}
	}
}

func collectVars(n *yaml.Node, into map[string]bool) {
	if n.Tag == "!!js" {
		x, err := jsexpr.Parse(n.Value)
		if err == nil {
			for _, v := range x.Vars() {
				into[v] = true
			}
		}
	}
	for _, c := range n.Content {
		collectVars(c, into)
	}
}

// The positions of a server and of its values are the file's: a problem
// the entry's check finds points at the line people wrote.
func TestPositions(t *testing.T) {
	f, err := Parse("mcp.json", []byte("{\n  \"mcpServers\": {\n    \"a\": {\n      \"command\": \"x\",\n      \"args\": [\"-v\", \"${HOME_DIR}\"]\n    }\n  }\n}\n"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	s := f.Servers[0]
	if s.Pos.String() != "mcp.json:3:5" {
		t.Fatalf("server at %s", s.Pos)
	}
	args := field(s.Config, "args")
	if args.Content[1].Line != 5 || args.Content[1].Column != 22 {
		t.Fatalf("args[1] at %d:%d", args.Content[1].Line, args.Content[1].Column)
	}
}

// Strict (the mcp-servers kind): a variable alone in env is required too,
// so that an unset one fails the server naming it instead of starting it
// without.
func TestStrict(t *testing.T) {
	data := []byte(`{"mcpServers": {"gh": {"command": "x", "env": {"TOKEN": "${GH_TOKEN}", "LEVEL": "${LEVEL:-info}"}}}}`)
	for _, tc := range []struct {
		strict      bool
		token, lvel string
	}{
		{false, "process.env.GH_TOKEN", `process.env.LEVEL ?? "info"`},
		{true, "`${process.env.GH_TOKEN}`", `process.env.LEVEL ?? "info"`},
	} {
		f, err := Parse(".mcp.json", data, Options{Strict: tc.strict})
		if err != nil {
			t.Fatal(err)
		}
		env := field(f.Servers[0].Config, "env")
		if got := env.Content[1].Value; got != tc.token {
			t.Errorf("strict %v: TOKEN %s, want %s", tc.strict, got, tc.token)
		}
		if got := env.Content[3].Value; got != tc.lvel {
			t.Errorf("strict %v: LEVEL %s, want %s", tc.strict, got, tc.lvel)
		}
	}
}

// Malformed files: each is refused with where and why; nothing of it is
// used.
func TestMalformed(t *testing.T) {
	for _, tc := range []struct {
		name, file, data, format string
		want                     string
	}{
		{name: "empty", file: "a.json", data: " \n", want: "a.json: the file is empty"},
		{name: "not JSON", file: "a.json", data: "{\n  \"mcpServers\": {\n    \"a\": {\"command\": \"x\",}\n    \"b\": 1\n}", want: "a.json:4:5: invalid JSON"},
		{name: "truncated", file: "a.json", data: "{\"mcpServers\": {\"a\": {\"command\": \"x\"", want: "the file ends before the value does"},
		{name: "an array", file: "a.json", data: "[1]", want: "a.json:1:1: the file must hold a JSON object"},
		{name: "two values", file: "a.json", data: "{} {}", want: "a.json:1:4: more than one JSON value"},
		{name: "no servers", file: "a.json", data: `{"servers2": {}}`, want: `a.json:1:1: no MCP servers in this file: expected "mcpServers"`},
		{name: "servers not an object", file: "a.json", data: `{"mcpServers": []}`, want: "a.json:1:16: the servers must be an object of name → server, not an array"},
		{name: "a key twice", file: "a.json", data: "{\"mcpServers\": {\n\"a\": {\"command\": \"x\"},\n\"a\": {\"command\": \"y\"}}}", want: `a.json:3:1: the key "a" is given twice in this object (first at 2:1)`},
		{name: "names that become one", file: "a.json", data: "{\"mcpServers\": {\n\"my.server\": {\"command\": \"x\"},\n\"my_server\": {\"command\": \"y\"}}}", want: `a.json:3:1: server "my_server": its serverName would be "my_server", as that of server "my.server" (2:1): rename one`},
		{name: "a name without letters", file: "a.json", data: `{"mcpServers": {"..": {"command": "x"}}}`, want: `server "..": the name has no letter or digit`},
		{name: "deep", file: "a.json", data: `{"mcpServers": ` + strings.Repeat("[", 100) + strings.Repeat("]", 100) + `}`, want: "nested more than 64 levels deep"},
		{name: "an unterminated comment", file: "a.json", data: "{/* x\n", want: "a.json:1:2: invalid JSON"},
		{name: "vscode without servers", file: "mcp.json", format: FormatVSCode, data: `{"mcpServers": {}}`, want: `no servers in this file: the vscode format reads "servers" (and "inputs"); this file looks like another format: try format auto`},
		{name: "cursor without mcpServers", file: "mcp.json", format: FormatCursor, data: `{"servers": {}}`, want: `no mcpServers in this file: the cursor format reads "mcpServers"`},
		{name: "bad TOML", file: "config.toml", data: "[mcp_servers.a]\ncommand = \"x\nargs = []\n", want: "config.toml:2:"},
		{name: "TOML without servers", file: "config.toml", data: "model = \"x\"\n", want: "config.toml: no MCP servers in this file: Codex lists them as [mcp_servers.NAME] tables"},
		{name: "TOML servers not a table", file: "config.toml", data: "mcp_servers = 3\n", want: "config.toml:1:1: mcp_servers: must be a table"},
		{name: "a format we do not know", file: "a.json", format: "zed", data: "{}", want: `format "zed" is not one of auto, claude-desktop`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse(tc.file, []byte(tc.data), Options{Format: tc.format})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want %q", err, tc.want)
			}
		})
	}
}

// Malformed servers: the file reads, the server carries its problem, with
// where it is.
func TestServerProblems(t *testing.T) {
	for _, tc := range []struct {
		name, file, data string
		want             string
	}{
		{name: "not an object", file: "a.json", data: `{"mcpServers": {"a": "npx x"}}`, want: `a.json:1:22: server "a": a server must be an object, not a string`},
		{name: "no transport", file: "a.json", data: `{"mcpServers": {"a": {"env": {}}}}`, want: `a.json:1:17: server "a": neither command (a stdio server) nor url`},
		{name: "sse", file: ".mcp.json", data: `{"mcpServers": {"a": {"type": "sse", "url": "http://h/sse"}}}`, want: `.mcp.json:1:31: server "a": type: the legacy HTTP+SSE transport is not supported`},
		{name: "an unknown type", file: ".mcp.json", data: `{"mcpServers": {"a": {"type": "ws", "url": "ws://h"}}}`, want: `type: "ws" is not a transport the harness knows`},
		{name: "websocket", file: "settings.json", data: `{"mcpServers": {"a": {"tcp": "localhost:9"}}}`, want: `tcp: a WebSocket server is not supported`},
		{name: "args a string", file: "a.json", data: `{"mcpServers": {"a": {"command": "x", "args": "-v"}}}`, want: `a.json:1:47: server "a": args: must be an array of strings, not a string`},
		{name: "an arg a number", file: "a.json", data: `{"mcpServers": {"a": {"command": "x", "args": ["-p", 80]}}}`, want: `args[1]: must be a string, not a number`},
		{name: "env an array", file: "a.json", data: `{"mcpServers": {"a": {"command": "x", "env": ["A=1"]}}}`, want: `env: must be an object of name → string, not an array`},
		{name: "both command and url", file: "a.json", data: `{"mcpServers": {"a": {"command": "x", "url": "http://h/mcp"}}}`, want: `url: a stdio server (it has a command) takes no URL`},
		{name: "two urls", file: "settings.json", data: `{"mcpServers": {"a": {"url": "http://h/a", "httpUrl": "http://h/b"}}}`, want: `httpUrl: a server has one URL: url and httpUrl are both given`},
		{name: "headers on stdio", file: "a.json", data: `{"mcpServers": {"a": {"command": "x", "headers": {"A": "b"}}}}`, want: `headers: are only for a server reached by URL`},
		{name: "env on http", file: "a.json", data: `{"mcpServers": {"a": {"url": "http://h/mcp", "env": {"A": "b"}}}}`, want: `env: env and cwd are only for a stdio server`},
		{name: "a gemini timeout not a number", file: "settings.json", data: `{"mcpServers": {"a": {"command": "x", "timeout": "5s"}}}`, want: `timeout: must be a number, not a string`},
		{name: "a negative timeout", file: "settings.json", data: `{"mcpServers": {"a": {"command": "x", "timeout": -1}}}`, want: `timeout: must be a positive number`},
		{name: "an unsupported variable", file: ".vscode/mcp.json", data: `{"servers": {"a": {"command": "x", "args": ["${command:pick}"]}}}`, want: `args[0]: ${command:pick} is not supported`},
		{name: "an env: without a name", file: "a.json", data: `{"mcpServers": {"a": {"command": "x", "args": ["${env:}"]}}}`, want: `${env:}: "" is not a variable name`},
		{name: "codex: both", file: "config.toml", data: "[mcp_servers.a]\ncommand = \"x\"\nurl = \"http://h\"\n", want: `config.toml:3:1: server "a": url: is not for a stdio server`},
		{name: "codex: neither", file: "config.toml", data: "[mcp_servers.a]\nenabled = true\n", want: `config.toml:1:1: server "a": neither command`},
		{name: "codex: args a string", file: "config.toml", data: "[mcp_servers.a]\ncommand = \"x\"\nargs = \"-v\"\n", want: `config.toml:3:1: server "a": args: must be an array of strings, not a string`},
		{name: "codex: env on http", file: "config.toml", data: "[mcp_servers.a]\nurl = \"http://h\"\n[mcp_servers.a.env]\nA = \"1\"\n", want: `config.toml:3:1: server "a": env: is only for a stdio server`},
		{name: "codex: a bad variable name", file: "config.toml", data: "[mcp_servers.a]\nurl = \"http://h\"\nbearer_token_env_var = \"MY-TOKEN\"\n", want: `bearer_token_env_var: "MY-TOKEN" is not a variable name`},
		{name: "codex: a timeout of words", file: "config.toml", data: "[mcp_servers.a]\ncommand = \"x\"\ntool_timeout_sec = \"long\"\n", want: `config.toml:3:1: server "a": tool_timeout_sec: must be a number, not a string`},
		{name: "codex: a server not a table", file: "config.toml", data: "[mcp_servers]\na = 1\n", want: `server "a": a server must be a table`},
		{name: "oauth a string", file: ".mcp.json", data: `{"mcpServers": {"a": {"type": "http", "url": "http://h/mcp", "oauth": "yes"}}}`, want: `oauth: must be an object (or false), not a string`},
		{name: "oauth callbackPort out of range", file: ".mcp.json", data: `{"mcpServers": {"a": {"type": "http", "url": "http://h/mcp", "oauth": {"callbackPort": 70000}}}}`, want: `oauth.callbackPort: must be a port, 1 to 65535`},
		{name: "oauth clientId a number", file: ".mcp.json", data: `{"mcpServers": {"a": {"type": "http", "url": "http://h/mcp", "oauth": {"clientId": 7}}}}`, want: `oauth.clientId: must be a string, not a number`},
		{name: "oauth scopes an object", file: "settings.json", data: `{"mcpServers": {"a": {"httpUrl": "http://h/mcp", "oauth": {"scopes": {}}}}}`, want: `oauth.scopes: must be an array of strings, not an object`},
		{name: "codex: scopes a string", file: "config.toml", data: "[mcp_servers.a]\nurl = \"http://h\"\nscopes = \"read\"\n", want: `scopes: must be an array of strings, not a string`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f, err := Parse(tc.file, []byte(tc.data), Options{})
			if err != nil {
				t.Fatal(err)
			}
			s := f.Servers[0]
			if len(s.Problems) == 0 || s.Config != nil {
				t.Fatalf("no problem; config %v", s.Config)
			}
			if got := s.Problems[0].Error(); !strings.Contains(got, tc.want) {
				t.Fatalf("got %q, want %q", got, tc.want)
			}
		})
	}
}

// auto tells the formats apart by the file's name, then by its shape.
func TestDetect(t *testing.T) {
	for _, tc := range []struct {
		file, data, want string
	}{
		{"claude_desktop_config.json", `{"mcpServers": {"a": {"command": "x", "type": "stdio"}}}`, FormatClaudeDesktop},
		{"proj/.mcp.json", `{"mcpServers": {"a": {"command": "x"}}}`, FormatClaudeCode},
		{"proj/.cursor/mcp.json", `{"mcpServers": {"a": {"command": "x"}}}`, FormatCursor},
		{"proj/.gemini/settings.json", `{"mcpServers": {"a": {"command": "x"}}}`, FormatGemini},
		{"settings.json", `{"mcpServers": {"a": {"command": "x"}}}`, FormatGemini},
		{".codeium/windsurf/mcp_config.json", `{"mcpServers": {"a": {"command": "x"}}}`, FormatWindsurf},
		{"servers.json", `{"mcpServers": {"a": {"httpUrl": "http://h/mcp"}}}`, FormatGemini},
		{"servers.json", `{"mcpServers": {"a": {"command": "x", "excludeTools": ["y"]}}}`, FormatGemini},
		{"servers.json", `{"mcpServers": {"a": {"serverUrl": "http://h/mcp"}}}`, FormatWindsurf},
		{"servers.json", `{"mcpServers": {"a": {"type": "http", "url": "http://h/mcp"}}}`, FormatClaudeCode},
		{"servers.json", `{"mcpServers": {"a": {"command": "x"}}}`, FormatClaudeDesktop},
		{"proj/.vscode/mcp.json", `{"servers": {"a": {"command": "x"}}}`, FormatVSCode},
		{"mcp.json", `{"servers": {"a": {"command": "x"}}, "inputs": []}`, FormatVSCode},
		{"Code/User/settings.json", `{"editor.fontSize": 12, "mcp": {"servers": {"a": {"command": "x"}}}}`, FormatVSCode},
		{"proj/.codex/config.toml", "[mcp_servers.a]\ncommand = \"x\"\n", FormatCodex},
		{"codex.TOML", "[mcp_servers.a]\ncommand = \"x\"\n", FormatCodex},
	} {
		f, err := Parse(tc.file, []byte(tc.data), Options{})
		if err != nil {
			t.Errorf("%s: %v", tc.file, err)
			continue
		}
		if f.Format != tc.want {
			t.Errorf("%s %s: read as %s, want %s", tc.file, tc.data, f.Format, tc.want)
		}
	}
}

// ${workspaceFolder} is the folder of the file's project.
func TestWorkspace(t *testing.T) {
	for file, want := range map[string]string{
		"/p/.vscode/mcp.json":      "/p",
		"/p/.cursor/mcp.json":      "/p",
		"/p/.gemini/settings.json": "/p",
		"/p/.codex/config.toml":    "/p",
		"/p/.mcp.json":             "/p",
		"/p/q/servers.json":        "/p/q",
	} {
		if got := workspace(filepath.FromSlash(file)); got != filepath.FromSlash(want) {
			t.Errorf("%s: %s, want %s", file, got, want)
		}
	}
}

// The names of a client's file become serverNames.
func TestNormalizeServerName(t *testing.T) {
	for in, want := range map[string]string{
		"github":                       "github",
		"sequential-thinking":          "sequential-thinking",
		"my.server":                    "my_server",
		"My Server (beta)":             "My_Server_beta",
		"__x__y__":                     "x_y",
		"héllo":                        "h_llo",
		"a__b":                         "a_b",
		"@scope/pkg":                   "scope_pkg",
		strings.Repeat("a", 40):        strings.Repeat("a", 32),
		strings.Repeat("a", 31) + ".b": strings.Repeat("a", 31),
		"---":                          "---",
		"":                             "",
		"..":                           "",
	} {
		got, ok := NormalizeServerName(in)
		if got != want || ok != (want != "") {
			t.Errorf("%q: %q %v, want %q", in, got, ok, want)
			continue
		}
		if ok {
			if _, err := Parse("a.json", []byte(fmt.Sprintf(`{"mcpServers": {%q: {"command": "x"}}}`, in)), Options{}); err != nil {
				t.Errorf("%q: %v", in, err)
			}
		}
	}
}

// Every variable form, in the formats that know it, and its !!js.
func TestExpand(t *testing.T) {
	x := &expander{format: FormatCursor, workspace: "/p", home: "/home/u"}
	g := &expander{format: FormatGemini, workspace: "/p", home: "/home/u"}
	for _, tc := range []struct {
		x         *expander
		in        string
		bare      bool
		expr, lit string
		wantErr   string
	}{
		{x: x, in: "plain", lit: "plain"},
		{x: x, in: "${A}", bare: true, expr: "process.env.A"},
		{x: x, in: "${A}", expr: "`${process.env.A}`"},
		{x: x, in: "${env:A}", bare: true, expr: "process.env.A"},
		{x: x, in: "${A:-x y}", expr: `process.env.A ?? "x y"`},
		{x: x, in: `${A:-say "hi"}`, expr: `process.env.A ?? "say \"hi\""`},
		{x: x, in: "${A:-}", expr: `process.env.A ?? ""`},
		{x: x, in: "Bearer ${A}", bare: true, expr: "`Bearer ${process.env.A}`"},
		{x: x, in: "${A}:${B:-2}", expr: "`${process.env.A}:${process.env.B ?? \"2\"}`"},
		{x: x, in: "`${A}` \\ $", expr: "`\\`${process.env.A}\\` \\\\ $`"},
		{x: x, in: "${input:api-key}", bare: true, expr: "process.env.HARNESS_INPUT_API_KEY"},
		{x: x, in: "${userHome}/.config", lit: "/home/u/.config"},
		{x: x, in: "${workspaceFolder}${/}src", lit: "/p" + string(filepath.Separator) + "src"},
		{x: x, in: "${workspaceFolderBasename}", lit: "p"},
		{x: x, in: "$A and $", lit: "$A and $"},
		{x: x, in: "${ not a var }", lit: "${ not a var }"},
		{x: x, in: "open ${", lit: "open ${"},
		{x: x, in: "${command:x}", wantErr: "${command:x} is not supported"},
		{x: x, in: "${A:?required}", wantErr: "${A:?required} is not supported"},
		{x: x, in: "${env:A-B}", wantErr: `"A-B" is not a variable name`},
		{x: x, in: "${input:}", wantErr: "the input has no id"},
		{x: g, in: "$A", bare: true, expr: "process.env.A"},
		{x: g, in: "$A/$B_1x", expr: "`${process.env.A}/${process.env.B_1x}`"},
		{x: g, in: "cost: $5", lit: "cost: $5"},
	} {
		parts, err := tc.x.split(tc.in)
		if tc.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("%s: %v, want %q", tc.in, err, tc.wantErr)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", tc.in, err)
			continue
		}
		expr, lit := expression(parts, tc.bare)
		if expr != tc.expr || lit != tc.lit {
			t.Errorf("%s (bare %v): %q %q, want %q %q", tc.in, tc.bare, expr, lit, tc.expr, tc.lit)
			continue
		}
		if expr != "" {
			// The expression is one jsexpr reads back to the same text.
			e, err := jsexpr.Parse(expr)
			if err != nil {
				t.Errorf("%s: %s does not parse: %v", tc.in, expr, err)
				continue
			}
			env := mapEnv(map[string]string{"A": "1", "B": "2", "B_1x": "3", "HARNESS_INPUT_API_KEY": "k"})
			got, _, err := e.Eval(env)
			want := strings.NewReplacer("${A}", "1", "$A", "1", "${env:A}", "1", "${B:-2}", "2", "$B_1x", "3", "${input:api-key}", "k", "${A:-x y}", "1", `${A:-say "hi"}`, "1", "${A:-}", "1").Replace(tc.in)
			if err != nil || got != want {
				t.Errorf("%s: evaluates to %q (%v), want %q", tc.in, got, err, want)
			}
		}
	}
}

// InputVar names the variable that answers a VS Code input.
func TestInputVar(t *testing.T) {
	for in, want := range map[string]string{"api-key": "HARNESS_INPUT_API_KEY", "token": "HARNESS_INPUT_TOKEN", "a.b c": "HARNESS_INPUT_A_B_C"} {
		if got := InputVar(in); got != want {
			t.Errorf("%s: %s, want %s", in, got, want)
		}
	}
}

// JSONC: comments and trailing commas are blanked, keeping every offset.
func TestStripJSONC(t *testing.T) {
	in := "\ufeff{ // c\n \"a\": \"x // not a comment\", /* b\n */ \"b\": [1, 2,],\n}"
	got := stripJSONC([]byte(in))
	if len(got) != len(in) {
		t.Fatalf("length %d, want %d", len(got), len(in))
	}
	want := "   {     \n \"a\": \"x // not a comment\",     \n    \"b\": [1, 2 ] \n}"
	if string(got) != want {
		t.Fatalf("got %q\nwant %q", got, want)
	}
	if !bytes.Equal(bytes.Fields(got)[1], []byte(`"a":`)) {
		t.Fatal("fields moved")
	}
}

// The Codex scan finds tables and keys, quoted ones included.
func TestTOMLPositions(t *testing.T) {
	data := "model = \"x\"\n[mcp_servers.\"my server\"]\n  command = \"a\"\ndescription = '''\nnot = a key\n'''\n[mcp_servers.'b'.env]\nK = \"v\"\n"
	p := tomlPositions("c.toml", []byte(data))
	for _, tc := range []struct {
		key  []string
		want string
	}{
		{[]string{"mcp_servers", "my server"}, "c.toml:2:1"},
		{[]string{"mcp_servers", "my server", "command"}, "c.toml:3:3"},
		{[]string{"mcp_servers", "my server", "not"}, "c.toml:2:1"},
		{[]string{"mcp_servers", "b"}, "c.toml:7:1"},
		{[]string{"mcp_servers", "b", "env", "K"}, "c.toml:8:1"},
		{[]string{"other"}, "c.toml"},
	} {
		if got := p.of(tc.key...).String(); got != tc.want {
			t.Errorf("%q: %s, want %s", tc.key, got, tc.want)
		}
	}
}

func mapEnv(m map[string]string) jsexpr.Env {
	return jsexpr.Env{Lookup: func(k string) (string, bool) { v, ok := m[k]; return v, ok }, Cwd: "/"}
}

// field is the value of key in a mapping.
func field(m *yaml.Node, key string) *yaml.Node {
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			return m.Content[i+1]
		}
	}
	return nil
}

// The kind's configuration: a path, a format it knows, no empty name in
// only or except; each problem names its key.
func TestPluginValidate(t *testing.T) {
	for i, tc := range []struct {
		p    *Plugin
		want string
	}{
		{&Plugin{Path: ".mcp.json", Format: FormatAuto, Only: []string{"a"}, Except: []string{"b"}}, ""},
		{&Plugin{Format: FormatAuto}, "path: is required"},
		{&Plugin{Path: "x.json", Format: "zed"}, `format: "zed" is not one of auto, claude-desktop`},
		{&Plugin{Path: "x.json", Format: FormatCodex, Except: []string{"a", " "}}, "except[1]: is empty"},
	} {
		err := tc.p.Validate()
		if (tc.want == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("case %d: %v, want %q", i, err, tc.want)
		}
	}
}

// The malformed files of testdata/malformed, one per format as its client
// would save it broken: each is refused with its file's line:column and
// why (TestMalformed has the smaller cases).
func TestMalformedFixtures(t *testing.T) {
	for file, want := range map[string]string{
		"claude_desktop_config.json": "claude_desktop_config.json:7:5: invalid JSON",
		".mcp.json":                  `.mcp.json:4:5: the key "github" is given twice in this object (first at 3:5)`,
		".vscode/mcp.json":           ".vscode/mcp.json:3:14: the servers must be an object of name → server, not an array",
		".codex/config.toml":         ".codex/config.toml:4:",
		".gemini/settings.json":      `settings.json:5:5: server "my_server": its serverName would be "my_server", as that of server "my.server" (4:5): rename one`,
		"mcp_config.json":            "the file ends before the value does",
	} {
		_, err := Read(filepath.Join("testdata", "malformed", file), Options{})
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want %q", file, err, want)
		}
	}
}

// OAuth settings that have no equivalent are notes; a redirect that is not
// a loopback one is not used; space-separated scopes are a list.
func TestOAuthNotes(t *testing.T) {
	f, err := Parse("settings.json", []byte(`{"mcpServers": {"a": {"httpUrl": "http://h/mcp", "oauth": {"scopes": "read write", "redirectUri": "https://app.example/cb", "tokenParamName": "t", "wat": 1}}}}`), Options{})
	if err != nil {
		t.Fatal(err)
	}
	s := f.Servers[0]
	if len(s.Problems) > 0 {
		t.Fatalf("problems: %v", s.Problems)
	}
	out, _ := Entries([]*File{f})
	if !strings.Contains(string(out), "oauth:\n      scopes:\n        - read\n        - write\n") || strings.Contains(string(out), "callbackPort") {
		t.Errorf("entry:\n%s", out)
	}
	var notes []string
	for _, n := range s.Notes {
		notes = append(notes, n.String())
	}
	for _, want := range []string{`oauth.redirectUri has no effect here: the harness's login redirect is always to a loopback port`, `oauth.tokenParamName has no effect here: the harness sends the token in the Authorization header only`, `oauth.wat has no effect here: it is not an OAuth setting the harness knows`} {
		if !strings.Contains(strings.Join(notes, "\n"), want) {
			t.Errorf("notes %q lack %q", notes, want)
		}
	}
}
