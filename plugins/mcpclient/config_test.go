package mcpclient

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"gopkg.in/yaml.v3"

	"github.com/harness-go/harness/host"
	"github.com/harness-go/harness/host/jsexpr"
	"github.com/harness-go/harness/internal/testkit/hosttest"
)

// problems flattens what Validate returns into "field: message" lines.
func problems(t *testing.T, err error) []string {
	t.Helper()
	if err == nil {
		return nil
	}
	var out []string
	var walk func(error)
	walk = func(err error) {
		if j, ok := err.(interface{ Unwrap() []error }); ok {
			for _, e := range j.Unwrap() {
				walk(e)
			}
			return
		}
		var fe *host.FieldError
		if !errors.As(err, &fe) {
			t.Fatalf("%v is not a *host.FieldError", err)
		}
		out = append(out, fe.Field+": "+fe.Err.Error())
	}
	walk(err)
	return out
}

func TestValidate(t *testing.T) {
	t.Parallel()
	stdio := func(mod func(*Config)) Config {
		c := defaultConfig()
		c.Transport, c.ServerName, c.Command = TransportStdio, "srv", "server"
		if mod != nil {
			mod(&c)
		}
		return c
	}
	web := func(mod func(*Config)) Config {
		c := defaultConfig()
		c.Transport, c.ServerName, c.URL = TransportHTTP, "web", "http://localhost:3000/mcp"
		if mod != nil {
			mod(&c)
		}
		return c
	}
	for _, tc := range []struct {
		name string
		cfg  Config
		want []string
	}{
		{"stdio minimal", stdio(nil), nil},
		{"stdio complete", stdio(func(c *Config) {
			c.Args, c.Env, c.Cwd = []string{"-y", "x"}, map[string]string{"GITHUB_TOKEN": "t", "lower_case": "v"}, "sub"
			c.ToolCallTimeoutMs, c.StartupTimeoutMs, c.Protocol = 1, 1, ProtocolLegacy
		}), nil},
		{"http minimal", web(nil), nil},
		{"https with headers", web(func(c *Config) {
			c.URL, c.Headers, c.Protocol = "https://example.com:8443/mcp?x=1", map[string]string{"Authorization": "Bearer x", "X-Api-Key": "k"}, ProtocolModern
		}), nil},
		{"serverName with every allowed character", stdio(func(c *Config) { c.ServerName = "Az09-_x" }), nil},
		{"serverName of 32 characters", stdio(func(c *Config) { c.ServerName = strings.Repeat("s", 32) }), nil},

		{"serverName missing", stdio(func(c *Config) { c.ServerName = "" }),
			[]string{"serverName: is required"}},
		{"serverName of 33 characters", stdio(func(c *Config) { c.ServerName = strings.Repeat("s", 33) }),
			[]string{`serverName: "` + strings.Repeat("s", 33) + `" must match ^[A-Za-z0-9_-]{1,32}$`}},
		{"serverName with a dot", stdio(func(c *Config) { c.ServerName = "gh.com" }),
			[]string{`serverName: "gh.com" must match ^[A-Za-z0-9_-]{1,32}$`}},
		{"serverName with a space", stdio(func(c *Config) { c.ServerName = "my server" }),
			[]string{`serverName: "my server" must match ^[A-Za-z0-9_-]{1,32}$`}},
		{"serverName non-ASCII", stdio(func(c *Config) { c.ServerName = "sérveur" }),
			[]string{`serverName: "sérveur" must match ^[A-Za-z0-9_-]{1,32}$`}},
		{"serverName with __", stdio(func(c *Config) { c.ServerName = "git__hub" }),
			[]string{`serverName: "git__hub" must not contain "__": it separates the server from the tool in mcp__<server>__<tool>`}},
		{"serverName of underscores", stdio(func(c *Config) { c.ServerName = "___" }),
			[]string{`serverName: "___" must not contain "__": it separates the server from the tool in mcp__<server>__<tool>`}},
		{"serverName with a leading _", stdio(func(c *Config) { c.ServerName = "_gh" }),
			[]string{`serverName: "_gh" must not start or end with "_": mcp__<server>__<tool> would be ambiguous`}},
		{"serverName with a trailing _", stdio(func(c *Config) { c.ServerName = "gh_" }),
			[]string{`serverName: "gh_" must not start or end with "_": mcp__<server>__<tool> would be ambiguous`}},
		{"serverName _", stdio(func(c *Config) { c.ServerName = "_" }),
			[]string{`serverName: "_" must not start or end with "_": mcp__<server>__<tool> would be ambiguous`}},

		{"transport missing", stdio(func(c *Config) { c.Transport = "" }),
			[]string{`transport: is required: "stdio" or "streamable-http"`}},
		{"transport sse", web(func(c *Config) { c.Transport = "sse" }),
			[]string{`transport: "sse" is not supported; use "stdio" or "streamable-http" (the legacy HTTP+SSE transport is not)`}},
		{"transport http", web(func(c *Config) { c.Transport = "http" }),
			[]string{`transport: "http" is not supported; use "stdio" or "streamable-http" (the legacy HTTP+SSE transport is not)`}},
		{"transport in capitals", stdio(func(c *Config) { c.Transport = "STDIO" }),
			[]string{`transport: "STDIO" is not supported; use "stdio" or "streamable-http" (the legacy HTTP+SSE transport is not)`}},

		{"stdio without command", stdio(func(c *Config) { c.Command = "" }),
			[]string{`command: is required for transport "stdio"`}},
		{"stdio with url and headers", stdio(func(c *Config) {
			c.URL, c.Headers = "http://x/mcp", map[string]string{"A": "b"}
		}), []string{`headers: is only for transport "streamable-http"`, `url: is only for transport "streamable-http"`}},
		{"stdio env name with =", stdio(func(c *Config) { c.Env = map[string]string{"A=B": "x"} }),
			[]string{`env: "A=B" is not a valid environment variable name`}},
		{"stdio env name empty", stdio(func(c *Config) { c.Env = map[string]string{"": "x"} }),
			[]string{`env: "" is not a valid environment variable name`}},
		{"stdio env name with NUL", stdio(func(c *Config) { c.Env = map[string]string{"A\x00": "x"} }),
			[]string{`env: "A\x00" is not a valid environment variable name`}},

		{"http without url", web(func(c *Config) { c.URL = "" }),
			[]string{`url: is required for transport "streamable-http"`}},
		{"http with a ftp url", web(func(c *Config) { c.URL = "ftp://example.com/mcp" }),
			[]string{`url: "ftp://example.com/mcp" is not an http:// or https:// URL`}},
		{"http with a relative url", web(func(c *Config) { c.URL = "/mcp" }),
			[]string{`url: "/mcp" is not an http:// or https:// URL`}},
		{"http url without host", web(func(c *Config) { c.URL = "http:///mcp" }),
			[]string{`url: "http:///mcp" is not an http:// or https:// URL`}},
		{"http url that does not parse", web(func(c *Config) { c.URL = "http://[::1" }),
			[]string{`url: "http://[::1" is not an http:// or https:// URL`}},
		{"http header name with a space", web(func(c *Config) { c.Headers = map[string]string{"X Token": "v"} }),
			[]string{`headers: "X Token" is not a valid header name`}},
		{"http header name with a colon", web(func(c *Config) { c.Headers = map[string]string{"X:": "v"} }),
			[]string{`headers: "X:" is not a valid header name`}},
		{"http header name empty", web(func(c *Config) { c.Headers = map[string]string{"": "v"} }),
			[]string{`headers: "" is not a valid header name`}},
		{"http header value with CRLF", web(func(c *Config) { c.Headers = map[string]string{"X-Trace": "a\r\nInjected: 1"} }),
			[]string{`headers.X-Trace: the value must not contain line breaks`}},
		{"http header value with LF", web(func(c *Config) { c.Headers = map[string]string{"X-Trace": "a\nb"} }),
			[]string{`headers.X-Trace: the value must not contain line breaks`}},
		{"http header value with NUL", web(func(c *Config) { c.Headers = map[string]string{"X-Trace": "a\x00"} }),
			[]string{`headers.X-Trace: the value must not contain line breaks`}},
		{"http with every stdio key", web(func(c *Config) {
			c.Command, c.Args, c.Env, c.Cwd = "x", []string{"a"}, map[string]string{"A": "b"}, "d"
		}), []string{
			`args: is only for transport "stdio"`, `command: is only for transport "stdio"`,
			`cwd: is only for transport "stdio"`, `env: is only for transport "stdio"`,
		}},

		{"toolCallTimeoutMs zero", stdio(func(c *Config) { c.ToolCallTimeoutMs = 0 }),
			[]string{"toolCallTimeoutMs: must be a positive number of milliseconds"}},
		{"toolCallTimeoutMs negative", stdio(func(c *Config) { c.ToolCallTimeoutMs = -5 }),
			[]string{"toolCallTimeoutMs: must be a positive number of milliseconds"}},
		{"startupTimeoutMs zero", stdio(func(c *Config) { c.StartupTimeoutMs = 0 }),
			[]string{"startupTimeoutMs: must be a positive number of milliseconds"}},
		{"startupTimeoutMs negative", web(func(c *Config) { c.StartupTimeoutMs = -1 }),
			[]string{"startupTimeoutMs: must be a positive number of milliseconds"}},
		{"protocol unknown", stdio(func(c *Config) { c.Protocol = "2025-06-18" }),
			[]string{`protocol: "2025-06-18" is not one of "auto", "legacy", "modern"`}},
		{"tool filters", stdio(func(c *Config) { c.EnabledTools, c.DisabledTools = []string{"get-*", "echo"}, []string{"get-env"} }), nil},
		{"a malformed tool pattern", stdio(func(c *Config) { c.EnabledTools, c.DisabledTools = []string{"ok", "[a-"}, []string{""} }),
			[]string{`enabledTools[1]: "[a-" is not a valid name pattern (* and ? wildcards, [a-z] classes)`, `disabledTools[0]: "" is not a valid name pattern (* and ? wildcards, [a-z] classes)`}},
		{"roots", web(func(c *Config) { c.Roots = []string{"src", "/abs/dir", "file:///srv/data"} }), nil},
		{"bad roots", stdio(func(c *Config) { c.Roots = []string{" ", "https://example.com/x", "file://%zz", "a\x00b"} }),
			[]string{"roots[0]: is empty", `roots[1]: "https://example.com/x" is neither a path nor a file:// URI`, `roots[2]: "file://%zz" is not a valid file:// URI`, `roots[3]: "a\x00b" holds a NUL byte`}},
		{"a negative result budget", stdio(func(c *Config) { c.MaxResultBytes = -1 }),
			[]string{"maxResultBytes: must not be negative (0 keeps results whole)"}},
		{"reconnect off ignores its numbers", stdio(func(c *Config) { c.Reconnect = Reconnect{Enabled: false, InitialDelayMs: -1} }), nil},
		{"reconnect with no initial delay", stdio(func(c *Config) { c.Reconnect.InitialDelayMs = 0 }),
			[]string{"reconnect.initialDelayMs: must be a positive number of milliseconds"}},
		{"reconnect with a ceiling under the first delay", web(func(c *Config) { c.Reconnect.InitialDelayMs, c.Reconnect.MaxDelayMs = 500, 100 }),
			[]string{"reconnect.maxDelayMs: must be at least initialDelayMs (500)"}},
		{"reconnect with no attempts", stdio(func(c *Config) { c.Reconnect.MaxAttempts = 0 }),
			[]string{"reconnect.maxAttempts: must be at least 1 (set enabled: false to never reconnect)"}},
		{"protocol empty", stdio(func(c *Config) { c.Protocol = "" }),
			[]string{`protocol: "" is not one of "auto", "legacy", "modern"`}},

		{"everything wrong at once", Config{Transport: "sse", ServerName: "a__b", Protocol: "x"}, []string{
			`serverName: "a__b" must not contain "__": it separates the server from the tool in mcp__<server>__<tool>`,
			`transport: "sse" is not supported; use "stdio" or "streamable-http" (the legacy HTTP+SSE transport is not)`,
			"toolCallTimeoutMs: must be a positive number of milliseconds",
			"startupTimeoutMs: must be a positive number of milliseconds",
			`protocol: "x" is not one of "auto", "legacy", "modern"`,
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c := tc.cfg
			got := problems(t, c.Validate())
			if !slices.Equal(got, tc.want) {
				t.Fatalf("Validate:\n got %q\nwant %q", got, tc.want)
			}
		})
	}
}

func TestDefaults(t *testing.T) {
	t.Parallel()
	c := defaultConfig()
	if c.toolCallTimeout() != 60*time.Second || c.startupTimeout() != 30*time.Second || c.Protocol != ProtocolAuto {
		t.Fatalf("defaults: %+v", c)
	}
	p, ok := host.LookupKind(KindName)
	if !ok {
		t.Fatalf("kind %q is not registered", KindName)
	}
	alias, ok := host.LookupKind(KindAlias)
	if !ok || alias != p {
		t.Fatalf("alias %q does not name kind %q", KindAlias, KindName)
	}
	plugin, ok := p.New().(*Plugin)
	if !ok || plugin.ToolCallTimeoutMs != 60000 || plugin.StartupTimeoutMs != 30000 || plugin.Protocol != ProtocolAuto {
		t.Fatalf("New() = %#v", p.New())
	}
	if !slices.Equal(p.Inject, []string{"tools", "resources", "prompts"}) {
		t.Fatalf("Inject = %q", p.Inject)
	}
	if got := (&Config{ServerName: "gh"}).Unique(); len(got) != 1 || got["serverName"] != "gh" {
		t.Fatalf("Unique() = %v", got)
	}
}

func TestDescribe(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		cfg  Config
		want string
	}{
		{Config{Transport: TransportStdio, Command: "npx", Args: []string{"-y", "pkg"}}, "npx -y pkg"},
		{Config{Transport: TransportStdio, Command: "server"}, "server"},
		{Config{Transport: TransportHTTP, URL: "http://h/mcp"}, "http://h/mcp"},
	} {
		if got := tc.cfg.describe(); got != tc.want {
			t.Errorf("describe(%+v) = %q, want %q", tc.cfg, got, tc.want)
		}
	}
	if redacted(nil) != nil || redacted(map[string]string{}) != nil {
		t.Error("redacted of nothing is not nil")
	}
	if got := redacted(map[string]string{"A": "secret", "B": ""}); len(got) != 2 || got["A"] != "<redacted>" || got["B"] != "<redacted>" {
		t.Errorf("redacted = %v", got)
	}
}

// checkFile runs host.Check on src as cordis.yml with the given variables.
func checkFile(t *testing.T, src string, vars map[string]string) host.Report {
	t.Helper()
	f, err := host.ParseFile("cordis.yml", []byte(src))
	if err != nil {
		t.Fatalf("ParseFile: %v", err)
	}
	env := jsexpr.Env{Lookup: func(k string) (string, bool) { v, ok := vars[k]; return v, ok }, Cwd: t.TempDir()}
	return host.Check(f, env, nil)
}

func problemLines(ps []host.Problem) []string {
	out := make([]string, len(ps))
	for i, p := range ps {
		out[i] = p.Error()
	}
	return out
}

// seedsExample is the two-entry cordis.yml of docs/rfc/0003-mcp-client.md
// ("Kind and configuration"), unchanged.
const seedsExample = hosttest.SeedsExample

func TestSeedsExampleChecks(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name     string
		vars     map[string]string
		warnings []string
	}{
		{"every variable set", map[string]string{"GITHUB_TOKEN": "ghp_x", "MCP_TOKEN": "tok"}, nil},
		{"MCP_TOKEN unset", map[string]string{"GITHUB_TOKEN": "ghp_x"}, []string{"cordis.yml:17:22", "MCP_TOKEN"}},
		{"GITHUB_TOKEN unset", map[string]string{"MCP_TOKEN": "tok"}, []string{"cordis.yml:9:21", "GITHUB_TOKEN", "left out"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r := checkFile(t, seedsExample, tc.vars)
			if len(r.Errors) > 0 {
				t.Fatalf("errors: %q", problemLines(r.Errors))
			}
			if len(tc.warnings) == 0 {
				if len(r.Warnings) > 0 {
					t.Fatalf("warnings: %q", problemLines(r.Warnings))
				}
				return
			}
			if len(r.Warnings) != 1 {
				t.Fatalf("warnings: %q, want one", problemLines(r.Warnings))
			}
			for _, part := range tc.warnings {
				if w := r.Warnings[0].Error(); !strings.Contains(w, part) {
					t.Fatalf("warning %q does not contain %q", w, part)
				}
			}
		})
	}
}

func TestCheckReportsDuplicateServerNames(t *testing.T) {
	t.Parallel()
	r := checkFile(t, `- id: a
  name: mcp-client
  config: {serverName: gh, transport: stdio, command: x}
- id: b
  name: '@deepseek-ai/dsh-mcp-client'
  config: {serverName: gh, transport: streamable-http, url: 'http://h/mcp'}
- id: c
  name: mcp-client
  disabled: true
  config: {serverName: gh, transport: stdio, command: x}
`, nil)
	want := []string{`cordis.yml:6:24: entry "b": config.serverName: "gh" is already used by entry "a" (cordis.yml:3:24); it must be unique among enabled entries`}
	if got := problemLines(r.Errors); !slices.Equal(got, want) {
		t.Fatalf("errors:\n got %q\nwant %q", got, want)
	}
}

// TestConfigErrorsThroughHost loads broken entries into a running host: the
// file is refused as a whole, and each message names file:line:column, the
// entry and the key.
func TestConfigErrorsThroughHost(t *testing.T) {
	t.Parallel()
	const head = "- id: e\n  name: mcp-client\n  config:\n"
	for _, tc := range []struct {
		name   string
		config string // lines of the config mapping, indented by 4
		want   []string
	}{
		{"serverName pattern", "    serverName: gh.com\n    transport: stdio\n    command: x\n",
			[]string{`cordis.yml:4:17: entry "e": config.serverName: "gh.com" must match ^[A-Za-z0-9_-]{1,32}$`}},
		{"serverName with __", "    serverName: git__hub\n    transport: stdio\n    command: x\n",
			[]string{`cordis.yml:4:17: entry "e": config.serverName: "git__hub" must not contain "__": it separates the server from the tool in mcp__<server>__<tool>`}},
		{"serverName with a leading _", "    transport: stdio\n    command: x\n    serverName: _gh\n",
			[]string{`cordis.yml:6:17: entry "e": config.serverName: "_gh" must not start or end with "_": mcp__<server>__<tool> would be ambiguous`}},
		{"serverName with a trailing _", "    transport: stdio\n    command: x\n    serverName: 'gh_'\n",
			[]string{`cordis.yml:6:17: entry "e": config.serverName: "gh_" must not start or end with "_": mcp__<server>__<tool> would be ambiguous`}},
		{"serverName missing", "    transport: stdio\n    command: x\n",
			[]string{`cordis.yml:4:5: entry "e": config.serverName: is required`}},
		{"command missing", "    serverName: s\n    transport: stdio\n",
			[]string{`cordis.yml:4:5: entry "e": config.command: is required for transport "stdio"`}},
		{"url missing", "    serverName: s\n    transport: streamable-http\n",
			[]string{`cordis.yml:4:5: entry "e": config.url: is required for transport "streamable-http"`}},
		{"url scheme", "    serverName: s\n    transport: streamable-http\n    url: ws://localhost/mcp\n",
			[]string{`cordis.yml:6:10: entry "e": config.url: "ws://localhost/mcp" is not an http:// or https:// URL`}},
		{"a key of the other transport", "    serverName: s\n    transport: stdio\n    command: x\n    url: http://h/mcp\n",
			[]string{`cordis.yml:7:10: entry "e": config.url: is only for transport "streamable-http"`}},
		{"headers on stdio", "    serverName: s\n    transport: stdio\n    command: x\n    headers:\n      A: b\n",
			[]string{`cordis.yml:8:7: entry "e": config.headers: is only for transport "streamable-http"`}},
		{"env and cwd on http", "    serverName: s\n    transport: streamable-http\n    url: http://h/mcp\n    env: {A: b}\n    cwd: /tmp\n", []string{
			`cordis.yml:8:10: entry "e": config.cwd: is only for transport "stdio"`,
			`cordis.yml:7:10: entry "e": config.env: is only for transport "stdio"`,
		}},
		{"transport sse", "    serverName: s\n    transport: sse\n    url: http://h/sse\n",
			[]string{`cordis.yml:5:16: entry "e": config.transport: "sse" is not supported; use "stdio" or "streamable-http" (the legacy HTTP+SSE transport is not)`}},
		{"transport missing", "    serverName: s\n    command: x\n",
			[]string{`cordis.yml:4:5: entry "e": config.transport: is required: "stdio" or "streamable-http"`}},
		{"toolCallTimeoutMs zero", "    serverName: s\n    transport: stdio\n    command: x\n    toolCallTimeoutMs: 0\n",
			[]string{`cordis.yml:7:24: entry "e": config.toolCallTimeoutMs: must be a positive number of milliseconds`}},
		{"startupTimeoutMs negative", "    serverName: s\n    transport: stdio\n    command: x\n    startupTimeoutMs: -1\n",
			[]string{`cordis.yml:7:23: entry "e": config.startupTimeoutMs: must be a positive number of milliseconds`}},
		{"protocol", "    serverName: s\n    transport: stdio\n    command: x\n    protocol: newest\n",
			[]string{`cordis.yml:7:15: entry "e": config.protocol: "newest" is not one of "auto", "legacy", "modern"`}},
		{"header name", "    serverName: s\n    transport: streamable-http\n    url: http://h/mcp\n    headers:\n      'X Bad': v\n",
			[]string{`cordis.yml:8:7: entry "e": config.headers: "X Bad" is not a valid header name`}},
		{"header value", "    serverName: s\n    transport: streamable-http\n    url: http://h/mcp\n    headers:\n      X-Trace: \"a\\r\\nInjected: 1\"\n",
			[]string{`cordis.yml:8:16: entry "e": config.headers.X-Trace: the value must not contain line breaks`}},
		{"env name", "    serverName: s\n    transport: stdio\n    command: x\n    env:\n      'A=B': v\n",
			[]string{`cordis.yml:8:7: entry "e": config.env: "A=B" is not a valid environment variable name`}},
		{"unknown key", "    serverName: s\n    transport: stdio\n    command: x\n    timeout: 5\n",
			[]string{`cordis.yml:7:5: entry "e": config.timeout: unknown key "timeout" (known keys: alwaysLoad, args, command, cwd, disabledTools, enabledTools, env, headers, maxResultBytes, oauth, prompts, protocol, reconnect, resources, roots, serverName, startupTimeoutMs, toolCallTimeoutMs, transport, url)`}},
		{"wrong type", "    serverName: s\n    transport: stdio\n    command: x\n    toolCallTimeoutMs: soon\n",
			[]string{`cordis.yml:7:24: entry "e": config.toolCallTimeoutMs: cannot unmarshal !!str ` + "`soon`" + ` into int`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			hx := newHarness(t)
			src := head + tc.config
			f, err := host.ParseFile("cordis.yml", []byte(src))
			if err != nil {
				t.Fatalf("ParseFile: %v", err)
			}
			_, err = hx.H.Load(context.Background(), f)
			var le *host.LoadError
			if !errors.As(err, &le) {
				t.Fatalf("Load = %v, want a *host.LoadError", err)
			}
			got := problemLines(le.Problems)
			if !slices.Equal(got, tc.want) {
				t.Fatalf("problems:\n got %q\nwant %q\nin\n%s", got, tc.want, src)
			}
			if snap := hx.H.Snapshot(); len(snap) != 0 {
				t.Fatalf("a refused file started entries: %s", hx.States())
			}
			// host.Check (harness validate) reports the same.
			r := checkFile(t, src, nil)
			if got := problemLines(r.Errors); !slices.Equal(got, tc.want) {
				t.Fatalf("Check:\n got %q\nwant %q", got, tc.want)
			}
		})
	}
}

// TestSeedsExampleMatchesTheSchema checks the seeds' file against the JSON
// Schema that `harness schema` prints, as an editor would; and a config with
// a typo against it.
func TestSeedsExampleMatchesTheSchema(t *testing.T) {
	t.Parallel()
	raw, err := host.Schema()
	if err != nil {
		t.Fatal(err)
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		t.Fatal(err)
	}
	c := jsonschema.NewCompiler()
	if err := c.AddResource("cordis.schema.json", doc); err != nil {
		t.Fatal(err)
	}
	schema, err := c.Compile("cordis.schema.json")
	if err != nil {
		t.Fatal(err)
	}
	validate := func(src string) error {
		var v any
		if err := yaml.Unmarshal([]byte(src), &v); err != nil {
			t.Fatal(err)
		}
		j, _ := json.Marshal(v)
		inst, _ := jsonschema.UnmarshalJSON(bytes.NewReader(j))
		return schema.Validate(inst)
	}
	if err := validate(seedsExample); err != nil {
		t.Fatalf("the seeds' example does not match the schema: %v", err)
	}
	if err := validate(strings.Replace(seedsExample, "serverName: web", "servername: web", 1)); err == nil {
		t.Fatal("a misspelt key matched the schema")
	}
	if err := validate(strings.Replace(seedsExample, "transport: stdio", "transport: sse", 1)); err == nil {
		t.Fatal("transport sse matched the schema")
	}
	web := "    url: http://localhost:3000/mcp\n"
	for src, ok := range map[string]bool{
		"    oauth: false\n": true,
		"    oauth: {clientId: app, scopes: [repo], callbackPort: 8976}\n": true,
		"    oauth: {clientID: app}\n":                                     false,
		"    oauth: [x]\n":                                                 false,
	} {
		if err := validate(strings.Replace(seedsExample, web, web+src, 1)); (err == nil) != ok {
			t.Errorf("%q against the schema: %v", src, err)
		}
	}
}
