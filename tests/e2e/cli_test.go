package e2e

// Issue "the harness as people meet it": the command-line contract of
// The README, command by command.

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/harness-go/harness/internal/testkit/fixture"
)

// echoEntry is the native echo plugin (tools echo and clock).
const echoEntry = "- id: echo\n  name: echo\n"

// toolsConfig is echo plus a fixture server with a handful of tools.
func toolsConfig() string {
	return echoEntry + fixtureEntry("fx", "fx", "--only", "echo,fail,add,admin.reset,schema_verbatim")
}

type modelTool struct {
	Type     string `json:"type"`
	Function struct {
		Name        string          `json:"name"`
		Description string          `json:"description"`
		Parameters  json.RawMessage `json:"parameters"`
	} `json:"function"`
}

func TestToolsListing(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	writeConfig(t, dir, toolsConfig())
	want := []string{"clock", "echo", "mcp__fx__add", publicName("fx", "admin.reset"), "mcp__fx__echo", "mcp__fx__fail", "mcp__fx__schema_verbatim"}

	t.Run("text", func(t *testing.T) {
		r := harness(t, dir, "tools")
		expectCode(t, r, 0)
		got := lines(r.stdout)
		if names := toolNames(got); !slices.Equal(names, want) {
			t.Fatalf("tools = %v, want %v (sorted)\n%s", names, want, r)
		}
		for _, l := range got {
			if _, desc, ok := strings.Cut(l, "  "); !ok || desc == "" {
				t.Errorf("line %q is not <name>  <first line of the description>", l)
			}
		}
		if !contains(got, "mcp__fx__echo  Echo a message back.") {
			t.Errorf("no line for mcp__fx__echo with its description\n%s", r)
		}
	})

	t.Run("json", func(t *testing.T) {
		r := harness(t, dir, "tools", "--json")
		expectCode(t, r, 0)
		var list []modelTool
		dec := json.NewDecoder(strings.NewReader(r.stdout))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&list); err != nil {
			t.Fatalf("tools --json is not the function-calling array: %v\n%s", err, r)
		}
		var names []string
		for _, tl := range list {
			names = append(names, tl.Function.Name)
			if tl.Type != "function" {
				t.Errorf("%s: type %q, want function", tl.Function.Name, tl.Type)
			}
			var schema map[string]any
			if err := json.Unmarshal(tl.Function.Parameters, &schema); err != nil {
				t.Errorf("%s: parameters are not a JSON object: %v", tl.Function.Name, err)
			}
		}
		if !slices.Equal(names, want) {
			t.Fatalf("tools --json names = %v, want %v (sorted)\n%s", names, want, r)
		}
		for _, tl := range list {
			if tl.Function.Name == "mcp__fx__schema_verbatim" && string(tl.Function.Parameters) != fixture.SchemaVerbatim {
				t.Errorf("schema_verbatim's parameters changed on the way:\n got %s\nwant %s", tl.Function.Parameters, fixture.SchemaVerbatim)
			}
		}
	})

	t.Run("empty", func(t *testing.T) {
		empty := t.TempDir()
		writeConfig(t, empty, "[]\n")
		for _, args := range [][]string{{"tools"}, {"tools", "--json"}} {
			r := harness(t, empty, args...)
			expectCode(t, r, 0)
			if want := map[bool]string{false: "", true: "[]\n"}[len(args) == 2]; r.stdout != want {
				t.Errorf("an empty registry printed %q, want %q\n%s", r.stdout, want, r)
			}
		}
	})
}

func TestCall(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	writeConfig(t, dir, toolsConfig())

	t.Run("inline JSON", func(t *testing.T) {
		t.Parallel()
		r := harness(t, dir, "call", "mcp__fx__echo", `{"message":"hi there"}`)
		expectCode(t, r, 0)
		if r.stdout != "echo: hi there\n" {
			t.Errorf("stdout %q\n%s", r.stdout, r)
		}
		r = harness(t, dir, "call", "mcp__fx__add", `{"a":2,"b":0.5}`)
		expectCode(t, r, 0)
		if r.stdout != "2.5\n" {
			t.Errorf("add printed %q\n%s", r.stdout, r)
		}
	})
	t.Run("arguments from stdin", func(t *testing.T) {
		t.Parallel()
		r := harnessWith(t, runConfig{dir: dir, stdin: `{"message": "from stdin"}` + "\n"}, "call", "mcp__fx__echo", "-")
		expectCode(t, r, 0)
		if r.stdout != "echo: from stdin\n" {
			t.Errorf("stdout %q\n%s", r.stdout, r)
		}
	})
	t.Run("no arguments", func(t *testing.T) {
		t.Parallel()
		r := harness(t, dir, "call", "mcp__fx__echo")
		expectCode(t, r, 0)
		if r.stdout != "echo: \n" {
			t.Errorf("call without arguments (sent as {}) printed %q\n%s", r.stdout, r)
		}
	})
	t.Run("json output", func(t *testing.T) {
		t.Parallel()
		r := harness(t, dir, "call", "mcp__fx__echo", `{"message":"hi"}`, "--json")
		expectCode(t, r, 0)
		var got map[string]any
		if err := json.Unmarshal([]byte(r.stdout), &got); err != nil {
			t.Fatalf("call --json does not parse: %v\n%s", err, r)
		}
		if want := map[string]any{"text": "echo: hi", "isError": false}; fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("call --json = %v, want %v", got, want)
		}
	})
	t.Run("error result", func(t *testing.T) {
		t.Parallel()
		r := harness(t, dir, "call", "mcp__fx__fail", `{"message":"boom"}`)
		expectCode(t, r, 1)
		if r.stdout != "Error: boom\n" {
			t.Errorf("stdout %q, want %q\n%s", r.stdout, "Error: boom\n", r)
		}
		r = harness(t, dir, "call", "--json", "mcp__fx__fail", `{"message":"boom"}`)
		expectCode(t, r, 1)
		var got struct {
			Text    string `json:"text"`
			IsError bool   `json:"isError"`
		}
		if err := json.Unmarshal([]byte(r.stdout), &got); err != nil || !got.IsError || got.Text != "Error: boom" {
			t.Errorf("call --json of an error result = %+v (%v), want text \"Error: boom\", isError true\n%s", got, err, r)
		}
	})
	t.Run("unknown tool", func(t *testing.T) {
		t.Parallel()
		for _, name := range []string{"mcp__fx__nope", "no_such_tool", "mcp__ghost__echo"} {
			r := harness(t, dir, "call", name, "{}")
			expectCode(t, r, 2)
			if r.stdout != "" || !strings.Contains(r.stderr, `"`+name+`"`) {
				t.Errorf("want nothing on stdout and a message naming %q on stderr\n%s", name, r)
			}
		}
	})
	t.Run("invalid JSON", func(t *testing.T) {
		t.Parallel()
		for _, args := range []string{`{"message":`, `{bad}`, `hello`} {
			r := harness(t, dir, "call", "mcp__fx__echo", args)
			expectCode(t, r, 2)
			if r.stdout != "" || !strings.Contains(r.stderr, "JSON") {
				t.Errorf("arguments %q: want nothing on stdout and a JSON error on stderr\n%s", args, r)
			}
		}
		r := harnessWith(t, runConfig{dir: dir, stdin: "{nope"}, "call", "mcp__fx__echo", "-")
		expectCode(t, r, 2)
	})
	t.Run("non-object JSON is sent as {}", func(t *testing.T) {
		t.Parallel()
		// The fixture answers a call with arguments {} with "echo: "; a
		// non-object would be refused by the server as invalid params.
		for _, args := range []string{`[1,2]`, `"text"`, `42`, `null`, `true`} {
			r := harness(t, dir, "call", "mcp__fx__echo", args)
			expectCode(t, r, 0)
			if r.stdout != "echo: \n" {
				t.Errorf("arguments %s: stdout %q, want %q (the call made with {})\n%s", args, r.stdout, "echo: \n", r)
			}
		}
	})
}

func TestStatus(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	// The stderr lines come from a shell before the server starts: the
	// harness reads stderr and the protocol on separate pipes, so lines a
	// server writes just before its handshake answer may not be read yet
	// when a one-shot status prints.
	writeConfig(t, dir, echoEntry+stdioEntry("fx", "mcp-client", "fx", "/bin/sh", "-c",
		`echo "stderr line 1/2" >&2; echo "stderr line 2/2" >&2; exec `+shq(fixtureBin)+
			` --only echo,admin.reset --name e2e-fixture --version 9.8.7`))

	t.Run("text", func(t *testing.T) {
		t.Parallel()
		r := harness(t, dir, "status")
		expectCode(t, r, 0)
		for _, want := range []string{
			"echo  echo  ready",
			"fx  mcp-client  ready",
			"e2e-fixture 9.8.7",
			"2025-11-25",
			"stdio",
			publicName("fx", "admin.reset") + " ← admin.reset",
			"mcp__fx__echo",
			"stderr line 1/2",
			"stderr line 2/2",
		} {
			if !strings.Contains(r.stdout, want) {
				t.Errorf("status does not show %q\n%s", want, r)
			}
		}
	})
	t.Run("json", func(t *testing.T) {
		t.Parallel()
		r := harness(t, dir, "status", "--json")
		expectCode(t, r, 0)
		doc := parseStatus(t, r)
		if doc.Tools != 4 || len(doc.Entries) != 2 {
			t.Errorf("tools %d, entries %d; want 4 tools and 2 entries\n%s", doc.Tools, len(doc.Entries), r)
		}
		e := doc.entry(t, "fx")
		wantTools := map[string]string{"mcp__fx__echo": "echo", publicName("fx", "admin.reset"): "admin.reset"}
		switch {
		case e.State != "ready" || !e.Settled:
			t.Errorf("state %q settled %v", e.State, e.Settled)
		case e.ServerName != "fx" || e.Transport != "stdio":
			t.Errorf("serverName %q transport %q", e.ServerName, e.Transport)
		case e.Server == nil || *e.Server != (serverInfo{"e2e-fixture", "9.8.7"}):
			t.Errorf("server %+v", e.Server)
		case e.ProtocolVersion != "2025-11-25":
			t.Errorf("protocolVersion %q", e.ProtocolVersion)
		case e.ToolCount != 2 || fmt.Sprint(e.Tools) != fmt.Sprint(wantTools):
			t.Errorf("toolCount %d tools %v, want 2 and %v", e.ToolCount, e.Tools, wantTools)
		case !slices.Contains(e.Stderr, "stderr line 1/2") || !slices.Contains(e.Stderr, "stderr line 2/2"):
			t.Errorf("stderr %q", e.Stderr)
		default:
			return
		}
		t.Log(r)
	})
}

// A failing entry (a command that does not exist) is shown with its reason
// next to a healthy one, and makes the exit code 1.
func TestStatusFailingEntry(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	writeConfig(t, dir, fixtureEntry("good", "good", "--only", "echo")+
		stdioEntry("bad", "mcp-client", "bad", "no-such-command-e2e")+
		fixtureEntry("crash", "crash", "--stderr-lines", "2", "--exit-on", "initialize"))

	r := harness(t, dir, "status")
	expectCode(t, r, 1)
	var goodLine, badLine string
	for _, l := range lines(r.stdout) {
		switch {
		case strings.HasPrefix(l, "good  "):
			goodLine = l
		case strings.HasPrefix(l, "bad  "):
			badLine = l
		}
	}
	if !strings.Contains(goodLine, "ready") {
		t.Errorf("healthy entry line %q, want ready\n%s", goodLine, r)
	}
	if !strings.Contains(badLine, "failed") || !strings.Contains(badLine, "no-such-command-e2e") || !strings.Contains(badLine, "not found") {
		t.Errorf("failing entry line %q, want failed with the reason (command not found)\n%s", badLine, r)
	}

	r = harness(t, dir, "status", "--json")
	expectCode(t, r, 1)
	doc := parseStatus(t, r)
	if g := doc.entry(t, "good"); g.State != "ready" || g.ToolCount != 1 {
		t.Errorf("good: %+v", g)
	}
	if b := doc.entry(t, "bad"); b.State != "failed" || !strings.Contains(b.Error, "no-such-command-e2e") {
		t.Errorf("bad: state %q error %q, want failed naming the command", b.State, b.Error)
	}
	// A server that exits: the reason has its exit status and last words,
	// and its stderr tail is there.
	c := doc.entry(t, "crash")
	if c.State != "failed" || !strings.Contains(c.Error, "3") || !strings.Contains(c.Error, "stderr line 2/2") ||
		!slices.Contains(c.Stderr, "stderr line 1/2") || !slices.Contains(c.Stderr, "stderr line 2/2") {
		t.Errorf("crash: state %q error %q stderr %q, want failed with exit status 3 and its stderr", c.State, c.Error, c.Stderr)
	}

	// tools and call report the failure on stderr and exit 1 too.
	r = harness(t, dir, "tools")
	expectCode(t, r, 1)
	if r.stdout != "mcp__good__echo  Echo a message back.\n" || !strings.Contains(r.stderr, `"bad"`) || !strings.Contains(r.stderr, `"crash"`) {
		t.Errorf("tools with a failed entry\n%s", r)
	}
	r = harness(t, dir, "call", "mcp__bad__anything")
	expectCode(t, r, 2)
	if !strings.Contains(r.stderr, "mcp__bad__anything") || !strings.Contains(r.stderr, "failed") {
		t.Errorf("calling a tool of the failed server should name it and its entry's state\n%s", r)
	}
}

var problemPos = regexp.MustCompile(`cordis\.yml:\d+:\d+: `)

func TestValidate(t *testing.T) {
	t.Parallel()

	t.Run("ok", func(t *testing.T) {
		t.Parallel()
		dir := t.TempDir()
		writeConfig(t, dir, toolsConfig())
		r := harness(t, dir, "validate")
		expectCode(t, r, 0)
		if r.stdout != "ok\n" || r.stderr != "" {
			t.Errorf("want exactly ok\n%s", r)
		}
	})

	t.Run("starts nothing", func(t *testing.T) {
		t.Parallel()
		dir := t.TempDir()
		pidfile := filepath.Join(dir, "pids")
		writeConfig(t, dir, fixtureEntry("fx", "fx", "--pidfile", pidfile))
		r := harness(t, dir, "validate")
		expectCode(t, r, 0)
		if _, err := os.Stat(pidfile); err == nil {
			t.Errorf("validate started the server")
		}
	})

	t.Run("every problem", func(t *testing.T) {
		t.Parallel()
		dir := t.TempDir()
		writeConfig(t, dir, `- id: a
  name: mcp-client
  config:
    serverName: fx
    transport: stdio
    command: x
    bogus: 1
- id: b
  name: nosuchkind
- id: c
  name: mcp-client
  config:
    serverName: web
    transport: sse
    url: http://localhost:1/mcp
- id: d
  name: mcp-client
  config:
    serverName: dup
    transport: stdio
    command: x
- id: e
  name: mcp-client
  config:
    serverName: dup
    transport: stdio
    command: y
- id: f
  name: mcp-client
  config:
    serverName: bad__name
    transport: stdio
    command: z
`)
		r := harness(t, dir, "validate")
		expectCode(t, r, 2)
		checkProblems(t, r, map[string]string{
			"cordis.yml:7:5:":   "bogus",
			"cordis.yml:9:9:":   "nosuchkind",
			"cordis.yml:14:16:": "sse",
			"cordis.yml:25:17:": "dup",
			"cordis.yml:31:17:": "bad__name",
		})
	})

	// Problems of the file as a whole (a duplicate id, a !!js expression
	// outside the subset) do not hide the problems of the other entries.
	t.Run("every problem, file-level ones included", func(t *testing.T) {
		t.Parallel()
		dir := t.TempDir()
		writeConfig(t, dir, `- id: a
  name: echo
  config:
    bogus: 1
- id: a
  name: echo
- id: c
  name: echo
  config:
    prefix: !!js process.exit(1)
- id: d
  name: nosuchkind
`)
		r := harness(t, dir, "validate")
		expectCode(t, r, 2)
		checkProblems(t, r, map[string]string{
			"cordis.yml:4:5:":  "bogus",
			"cordis.yml:5:3:":  "duplicate id",
			"cordis.yml:10:":   "process.exit",
			"cordis.yml:12:9:": "nosuchkind",
		})
	})
}

// checkProblems wants every problem (position → a word of its message) in
// the output of a failed validate, and every problem line to carry a
// file:line:column.
func checkProblems(t *testing.T, r result, want map[string]string) {
	t.Helper()
	out := r.stdout + r.stderr
	if strings.Contains(r.stdout, "ok") {
		t.Errorf("validate printed ok for a bad file\n%s", r)
	}
	for pos, word := range want {
		found := false
		for _, l := range lines(out) {
			if strings.Contains(l, pos) && strings.Contains(l, word) {
				found = true
			}
		}
		if !found {
			t.Errorf("validate does not report %q at %s\n%s", word, pos, r)
		}
	}
	n := len(problemPos.FindAllString(out, -1))
	if n < len(want) {
		t.Errorf("%d problems with file:line:column, want %d\n%s", n, len(want), r)
	}
}

func TestSchemaAndVersion(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	r := harness(t, dir, "schema")
	expectCode(t, r, 0)
	var schema map[string]any
	if err := json.Unmarshal([]byte(r.stdout), &schema); err != nil {
		t.Fatalf("schema is not JSON: %v\n%s", err, r)
	}
	if s, _ := schema["$schema"].(string); !strings.Contains(s, "2020-12") {
		t.Errorf("$schema = %v, want draft 2020-12", schema["$schema"])
	}
	for _, kind := range []string{"@deepseek-ai/dsh-mcp-client", "mcp-client", "echo", "serverName"} {
		if !strings.Contains(r.stdout, kind) {
			t.Errorf("schema does not mention %q", kind)
		}
	}

	r = harness(t, dir, "version")
	expectCode(t, r, 0)
	if !regexp.MustCompile(`^harness \S+`).MatchString(r.stdout) || len(lines(r.stdout)) != 1 || r.stderr != "" {
		t.Errorf("version\n%s", r)
	}
}

func TestHelpAndUsageErrors(t *testing.T) {
	t.Parallel()
	dir := t.TempDir() // no cordis.yml: help must not need one
	commands := []string{"run", "tools", "call", "status", "validate", "schema", "version"}

	for _, args := range [][]string{{"--help"}, {"-h"}, {"help"}} {
		r := harness(t, dir, args...)
		expectCode(t, r, 0)
		if !strings.Contains(r.stdout, "Usage:") || r.stderr != "" {
			t.Errorf("help on stdout, nothing on stderr\n%s", r)
		}
		for _, c := range commands {
			if !strings.Contains(r.stdout, "harness "+c) && !strings.Contains(r.stdout, "harness ["+c+"]") {
				t.Errorf("the usage does not list %q\n%s", c, r)
			}
		}
	}
	for _, c := range commands {
		a := harness(t, dir, "help", c)
		b := harness(t, dir, c, "--help")
		expectCode(t, a, 0)
		expectCode(t, b, 0)
		if !strings.Contains(a.stdout, "Usage: harness") || !strings.Contains(a.stdout, c) || a.stderr != "" {
			t.Errorf("help %s\n%s", c, a)
		}
		if a.stdout != b.stdout {
			t.Errorf("`help %s` and `%s --help` differ\n%s\n%s", c, c, a, b)
		}
	}

	for _, args := range [][]string{
		{"frobnicate"},
		{"--frobnicate"},
		{"tools", "--frobnicate"},
		{"help", "frobnicate"},
		{"tools", "extra"},
		{"call"},
		{"call", "a", "{}", "extra"},
		{"tools", "--wait"},
		{"tools", "--wait", "soon"},
		{"tools", "--wait", "-1s"},
		{"tools", "--log-level", "loud"},
		{"tools", "--log-format", "xml"},
		{"version", "now"},
	} {
		r := harness(t, dir, args...)
		expectCode(t, r, 2)
		if r.stdout != "" || !strings.Contains(r.stderr, "Usage:") {
			t.Errorf("a usage error prints the usage on stderr only\n%s", r)
		}
	}
}

// Flags may stand before or after the command and its arguments.
func TestFlagsAnywhere(t *testing.T) {
	t.Parallel()
	dir := t.TempDir() // the working directory has no cordis.yml
	conf := filepath.Join(t.TempDir(), "my.yml")
	writeFile(t, conf, toolsConfig())

	for _, args := range [][]string{
		{"-c", conf, "tools"},
		{"tools", "-c", conf},
		{"--config", conf, "tools"},
		{"tools", "--config=" + conf},
		{"--wait", "20s", "tools", "-c", conf, "--log-level", "error"},
	} {
		r := harness(t, dir, args...)
		expectCode(t, r, 0)
		if !strings.Contains(r.stdout, "mcp__fx__echo") {
			t.Errorf("tools did not list mcp__fx__echo\n%s", r)
		}
	}
	for _, args := range [][]string{
		{"call", "mcp__fx__echo", `{"message":"x"}`, "-c", conf},
		{"-c", conf, "call", "mcp__fx__echo", `{"message":"x"}`},
		{"call", "-c", conf, "mcp__fx__echo", `{"message":"x"}`},
		{"call", "mcp__fx__echo", "-c", conf, `{"message":"x"}`, "--wait", "20s"},
	} {
		r := harness(t, dir, args...)
		expectCode(t, r, 0)
		if r.stdout != "echo: x\n" {
			t.Errorf("stdout %q\n%s", r.stdout, r)
		}
	}
	// Without -c the default ./cordis.yml is used; here there is none.
	r := harness(t, dir, "tools")
	expectCode(t, r, 2)
	if !strings.Contains(r.stderr, "cordis.yml") {
		t.Errorf("a missing ./cordis.yml should be named\n%s", r)
	}
}

// --wait 0 does not wait for entries to settle; an entry still starting is
// reported and makes the exit code 1.
func TestWaitZero(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	writeConfig(t, dir, echoEntry+fixtureEntry("slow", "slow", "--only", "echo", "--hang-on", "initialize")+
		"    startupTimeoutMs: 120000\n")

	for _, args := range [][]string{{"tools", "--wait", "0"}, {"tools", "--wait", "300ms"}} {
		start := time.Now()
		r := harness(t, dir, args...)
		took := time.Since(start)
		expectCode(t, r, 1)
		if r.stdout != "clock  Tell the current date and time.\necho  Echo a message back unchanged.\n" {
			t.Errorf("stdout %q, want the settled entry's tools only\n%s", r.stdout, r)
		}
		if !strings.Contains(r.stderr, `"slow"`) {
			t.Errorf("the unsettled entry is not reported on stderr\n%s", r)
		}
		if took > 15*time.Second {
			t.Errorf("%v took %s", args, took)
		}
	}

	r := harness(t, dir, "status", "--wait", "0", "--json")
	expectCode(t, r, 1)
	if e := parseStatus(t, r).entry(t, "slow"); e.Settled || e.State != "starting" {
		t.Errorf("slow entry: state %q settled %v, want starting, not settled\n%s", e.State, e.Settled, r)
	}

	// A tool that exists is called at once.
	r = harness(t, dir, "call", "echo", `{"message":"now"}`, "--wait", "0")
	if r.stdout != "now\n" {
		t.Errorf("call echo --wait 0: stdout %q\n%s", r.stdout, r)
	}

	only := t.TempDir()
	writeConfig(t, only, echoEntry)
	r = harness(t, only, "tools", "--wait", "0")
	expectCode(t, r, 0)
	if len(lines(r.stdout)) != 2 {
		t.Errorf("tools --wait 0 with a native plugin only\n%s", r)
	}
}

// call returns as soon as its tool is registered. Another entry that is
// still starting at that moment has not failed, and has not "not settled
// within --wait" either: the call never waited that long.
func TestCallDoesNotBlameEntriesStillStarting(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	writeConfig(t, dir, echoEntry+fixtureEntry("slow", "slow", "--only", "echo", "--hang-on", "initialize")+
		"    startupTimeoutMs: 120000\n")
	start := time.Now()
	r := harness(t, dir, "call", "echo", `{"message":"quick"}`)
	took := time.Since(start)
	if r.stdout != "quick\n" {
		t.Errorf("stdout %q, want %q\n%s", r.stdout, "quick\n", r)
	}
	if took > 15*time.Second {
		t.Errorf("call took %s: it waited for an entry its tool does not need", took)
	}
	if strings.Contains(r.stderr, "after 30s") {
		t.Errorf("stderr claims an entry is still starting after 30s, but the command ran for %s\n%s", took.Round(time.Millisecond), r)
	}
	expectCode(t, r, 0)
}

// --log-format json: every line the harness writes to stderr is a JSON
// object (a log record).
func TestLogFormatJSON(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	writeConfig(t, dir, echoEntry+fixtureEntry("fx", "fx", "--only", "echo", "--stderr-lines", "2"))

	check := func(t *testing.T, stderr string) {
		t.Helper()
		n := 0
		for _, l := range lines(stderr) {
			var rec map[string]any
			if err := json.Unmarshal([]byte(l), &rec); err != nil {
				t.Errorf("stderr line is not JSON: %q", l)
				continue
			}
			if rec["level"] == nil || rec["msg"] == nil {
				t.Errorf("log record without level or msg: %q", l)
			}
			n++
		}
		if n == 0 {
			t.Errorf("no log lines at --log-level debug")
		}
	}
	t.Run("tools", func(t *testing.T) {
		t.Parallel()
		r := harness(t, dir, "tools", "--log-format", "json", "--log-level", "debug")
		expectCode(t, r, 0)
		check(t, r.stderr)
	})
	t.Run("call", func(t *testing.T) {
		t.Parallel()
		r := harness(t, dir, "--log-format=json", "--log-level=debug", "call", "mcp__fx__echo", `{"message":"x"}`)
		expectCode(t, r, 0)
		check(t, r.stderr)
	})
	t.Run("run", func(t *testing.T) {
		t.Parallel()
		s := startSession(t, runConfig{dir: dir}, "--log-format", "json", "--log-level", "debug")
		s.do("/tools")
		s.send("/quit\n")
		if code := s.waitExit(); code != 0 {
			t.Fatalf("exit code %d\n%s", code, s.dump())
		}
		check(t, s.err.Text())
	})
}

// A configuration that does not load at boot is exit code 2 for every
// command, with the problem on stderr.
func TestConfigThatDoesNotLoad(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ name, content, want string }{
		{"missing", "", "cordis.yml"},
		{"yaml syntax", "- id: [\n", "cordis.yml:"},
		{"empty file", " \n", "cordis.yml"},
		{"not a list", "id: x\n", "cordis.yml:"},
		{"unknown key", "- id: e\n  name: echo\n  config:\n    bogus: 1\n", "cordis.yml:4:5"},
		{"unknown plugin", "- id: e\n  name: nope\n", "cordis.yml:2:"},
		{"duplicate id", "- id: e\n  name: echo\n- id: e\n  name: echo\n", "cordis.yml:3:"},
		{"bad !!js", "- id: e\n  name: echo\n  config:\n    prefix: !!js require('fs')\n", "cordis.yml:4:"},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			if c.name != "missing" {
				writeConfig(t, dir, c.content)
			}
			for _, args := range [][]string{{"tools"}, {"tools", "--json"}, {"status"}, {"status", "--json"}, {"call", "echo", "{}"}, {"run"}, {"validate"}} {
				r := harness(t, dir, args...) // run gets EOF at once: a loaded config would exit 0
				expectCode(t, r, 2)
				if r.stdout != "" || !strings.Contains(r.stderr, c.want) {
					t.Errorf("want nothing on stdout and the problem (%q) on stderr\n%s", c.want, r)
				}
			}
		})
	}
}
