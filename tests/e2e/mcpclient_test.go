package e2e

// Issue "mcp-client through the binary": the MCP bridge as the harness
// binary exposes it, against our fixture and the pinned npm servers.

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/harness-go/harness/internal/testkit/fixture"
	"github.com/harness-go/harness/internal/testkit/hosttest"
	"github.com/harness-go/harness/internal/testkit/npmtest"
	"github.com/harness-go/harness/internal/testkit/proctest"
)

// jsonArg encodes v as a command-line JSON argument.
func jsonArg(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// A dotted tool name and a 100-character one get the exact public names of
// docs/rfc/0003-mcp-client.md ("Names"), and calls through those names reach the right raw tools.
func TestFixtureRewrittenToolNames(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	writeConfig(t, dir, fixtureEntry("fx", "fx", "--only", "echo,admin.reset,"+fixture.LongToolName))

	dotted := publicName("fx", "admin.reset")
	long := publicName("fx", fixture.LongToolName)
	// Checked by hand: sha256("fx\x00admin.reset") starts with b885577a4582.
	if dotted != "mcp__fx__admin_reset_b885577a4582" {
		t.Fatalf("test's naming helper: %q", dotted)
	}
	if len(long) != 64 || !strings.HasPrefix(long, "mcp__fx__long_xxx") {
		t.Fatalf("test's naming helper: %q", long)
	}

	r := harness(t, dir, "tools")
	expectCode(t, r, 0)
	want := []string{
		dotted + "  Pretend to reset (a dotted tool name).",
		"mcp__fx__echo  Echo a message back.",
		long + "  A tool whose name is exactly 100 characters.",
	}
	if got := lines(r.stdout); !slices.Equal(got, want) {
		t.Fatalf("tools:\n%s\nwant:\n%s\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"), r)
	}

	for name, text := range map[string]string{dotted: "reset done", long: "long ok"} {
		r := harness(t, dir, "call", name, "{}")
		expectCode(t, r, 0)
		if r.stdout != text+"\n" {
			t.Errorf("call %s printed %q, want %q\n%s", name, r.stdout, text+"\n", r)
		}
	}

	// status shows which raw name each rewritten public name stands for.
	r = harness(t, dir, "status", "--json")
	expectCode(t, r, 0)
	st := parseStatus(t, r)
	tools := st.entry(t, "fx").Tools
	if tools[dotted] != "admin.reset" || tools[long] != fixture.LongToolName || tools["mcp__fx__echo"] != "echo" {
		t.Errorf("status tools map = %v\n%s", tools, r)
	}
}

// checkEverything runs the checks every transport of server-everything
// must pass: exact texts for echo, get-sum and get-tiny-image.
func checkEverything(t *testing.T, dir string) {
	t.Helper()
	for _, c := range []struct{ tool, args, want string }{
		{"mcp__ev__echo", `{"message":"hello"}`, "Echo: hello\n"},
		{"mcp__ev__get-sum", `{"a":2,"b":3}`, "The sum of 2 and 3 is 5.\n"},
		{"mcp__ev__get-tiny-image", `{}`, "Here's the image you requested:\n" +
			"[image: image/png, content discarded]\n" +
			"The image above is the MCP logo.\n"},
	} {
		r := harness(t, dir, "call", c.tool, c.args)
		expectCode(t, r, 0)
		if r.stdout != c.want {
			t.Errorf("call %s %s printed %q, want %q\n%s", c.tool, c.args, r.stdout, c.want, r)
		}
	}
}

func TestEverythingStdio(t *testing.T) {
	t.Parallel()
	bin := npmtest.Bin(t, "mcp-server-everything")
	dir := t.TempDir()
	writeConfig(t, dir, stdioEntry("ev", "mcp-client", "ev", bin, "stdio"))
	checkEverything(t, dir)
}

func TestEverythingStreamableHTTP(t *testing.T) {
	t.Parallel()
	bin := npmtest.Bin(t, "mcp-server-everything")
	url := startEverythingHTTP(t, bin)
	dir := t.TempDir()
	writeConfig(t, dir, "- id: ev\n  name: mcp-client\n  config:\n    serverName: ev\n"+
		"    transport: streamable-http\n    url: "+yq(url)+"\n")
	checkEverything(t, dir)

	r := harness(t, dir, "status", "--json")
	expectCode(t, r, 0)
	e := parseStatus(t, r).entry(t, "ev")
	if e.Transport != "streamable-http" || e.Server == nil || e.Server.Name != "mcp-servers/everything" {
		t.Errorf("status of the HTTP entry: %+v\n%s", e, r)
	}
}

func TestFilesystemServer(t *testing.T) {
	t.Parallel()
	bin := npmtest.Bin(t, "mcp-server-filesystem")
	root, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	writeConfig(t, dir, stdioEntry("fs", "mcp-client", "fs", bin, root))

	file := filepath.Join(root, "note.txt")
	r := harness(t, dir, "call", "mcp__fs__write_file", jsonArg(t, map[string]string{"path": file, "content": "hi there\n"}))
	expectCode(t, r, 0)
	if b, err := os.ReadFile(file); err != nil || string(b) != "hi there\n" {
		t.Fatalf("after write_file the file holds %q (%v)\n%s", b, err, r)
	}

	r = harness(t, dir, "call", "mcp__fs__read_text_file", jsonArg(t, map[string]string{"path": file}))
	expectCode(t, r, 0)
	if r.stdout != "hi there\n" {
		t.Errorf("read_text_file printed %q, want %q\n%s", r.stdout, "hi there\n", r)
	}

	outside := filepath.Join(t.TempDir(), "outside.txt")
	if err := os.WriteFile(outside, []byte("not yours\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	r = harness(t, dir, "call", "mcp__fs__read_text_file", jsonArg(t, map[string]string{"path": outside}))
	expectCode(t, r, 1)
	if !strings.HasPrefix(r.stdout, "Error: ") || !strings.Contains(r.stdout, "Access denied") || strings.Contains(r.stdout, "not yours") {
		t.Errorf("reading outside the allowed folder printed %q, want Error: Access denied …\n%s", r.stdout, r)
	}
}

func TestMemoryServer(t *testing.T) {
	t.Parallel()
	bin := npmtest.Bin(t, "mcp-server-memory")
	dir := t.TempDir()
	memory := filepath.Join(t.TempDir(), "memory.jsonl")
	writeConfig(t, dir, stdioEntry("mem", "mcp-client", "mem", bin)+
		"    env:\n      MEMORY_FILE_PATH: "+yq(memory)+"\n")

	entities := `{"entities":[{"name":"Alice","entityType":"person","observations":["likes Go"]}]}`
	r := harness(t, dir, "call", "mcp__mem__create_entities", entities)
	expectCode(t, r, 0)
	if !strings.Contains(r.stdout, `"Alice"`) {
		t.Errorf("create_entities printed %q\n%s", r.stdout, r)
	}
	b, err := os.ReadFile(memory)
	if err != nil || !strings.Contains(string(b), `"name":"Alice"`) {
		t.Fatalf("MEMORY_FILE_PATH %s after create_entities: %q (%v)", memory, b, err)
	}

	// A second harness process reads the graph back from the file.
	r = harness(t, dir, "call", "mcp__mem__read_graph", "{}")
	expectCode(t, r, 0)
	if !strings.Contains(r.stdout, "Alice") || !strings.Contains(r.stdout, "likes Go") {
		t.Errorf("read_graph printed %q, want the entity Alice\n%s", r.stdout, r)
	}
}

// Two servers exposing the same raw names live side by side, and each call
// reaches its own server.
func TestSameRawNameOnTwoServers(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	writeConfig(t, dir,
		fixtureEntry("fx-a", "a", "--only", "echo,env")+"    env:\n      WHO: server-a\n"+
			fixtureEntry("fx-b", "b", "--only", "echo,env")+"    env:\n      WHO: server-b\n")

	r := harness(t, dir, "tools")
	expectCode(t, r, 0)
	want := []string{"mcp__a__echo", "mcp__a__env", "mcp__b__echo", "mcp__b__env"}
	if got := toolNames(lines(r.stdout)); !slices.Equal(got, want) {
		t.Fatalf("tools = %v, want %v\n%s", got, want, r)
	}
	for _, s := range []string{"a", "b"} {
		r := harness(t, dir, "call", "mcp__"+s+"__echo", `{"message":"hi `+s+`"}`)
		expectCode(t, r, 0)
		if r.stdout != "echo: hi "+s+"\n" {
			t.Errorf("mcp__%s__echo printed %q\n%s", s, r.stdout, r)
		}
		r = harness(t, dir, "call", "mcp__"+s+"__env", `{"name":"WHO"}`)
		expectCode(t, r, 0)
		if r.stdout != "server-"+s+"\n" {
			t.Errorf("mcp__%s__env reached the wrong server: printed %q, want %q\n%s", s, r.stdout, "server-"+s+"\n", r)
		}
	}
}

// A seeds-style cordis.yml edited while `harness` runs: renaming the server
// replaces the tool names; renaming it back gives identical names.
func TestSeedsConfigLiveRename(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	config := func(serverName string) string {
		return stdioEntry("mcp-fx", "@deepseek-ai/dsh-mcp-client", serverName, fixtureBin,
			"--only", "echo,admin.reset,"+fixture.LongToolName)
	}
	writeConfig(t, dir, config("alpha"))
	s := startSession(t, runConfig{dir: dir})

	first := s.do("/tools")
	wantNames := func(server string) []string {
		names := []string{publicName(server, "admin.reset"), publicName(server, "echo"), publicName(server, fixture.LongToolName)}
		slices.Sort(names)
		return names
	}
	if got := toolNames(first); !slices.Equal(got, wantNames("alpha")) {
		t.Fatalf("first /tools = %v, want %v\n%s", got, wantNames("alpha"), s.dump())
	}
	// The start's own ready line may come after the console settled: let it
	// come before the first mark, or a rename would take it for its own.
	s.waitErr(0, `"mcp-fx ready" of the start`, hasPrefix("harness: mcp-fx ready"))

	rename := func(to string) []string {
		t.Helper()
		mark := s.mark()
		writeConfig(t, dir, config(to))
		s.waitErr(mark, `"reloaded … mcp-fx"`, containsAll("reloaded", "mcp-fx"))
		s.waitErr(mark, `"mcp-fx ready"`, hasPrefix("harness: mcp-fx ready"))
		return s.do("/tools")
	}

	second := rename("beta")
	if got := toolNames(second); !slices.Equal(got, wantNames("beta")) {
		t.Fatalf("/tools after renaming to beta = %v, want %v\n%s", got, wantNames("beta"), s.dump())
	}

	third := rename("alpha")
	if !slices.Equal(third, first) {
		t.Fatalf("/tools after renaming back:\n%s\nwant exactly the first listing:\n%s\n%s",
			strings.Join(third, "\n"), strings.Join(first, "\n"), s.dump())
	}
	if r := s.do("/call " + publicName("alpha", "admin.reset")); !slices.Equal(r, []string{"reset done"}) {
		t.Errorf("/call after the renames printed %q\n%s", r, s.dump())
	}

	s.send("/quit\n")
	if code := s.waitExit(); code != 0 {
		t.Fatalf("/quit: exit code %d, want 0\n%s", code, s.dump())
	}
}

// seedsExample is the specification's two-entry cordis.yml, unchanged.
const seedsExample = hosttest.SeedsExample

func TestSeedsExampleValidates(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	writeConfig(t, dir, seedsExample)
	ghToken, mcpToken := secret(t, "gh-"), secret(t, "mcp-")

	t.Run("variables set", func(t *testing.T) {
		r := harnessWith(t, runConfig{dir: dir, env: []string{"GITHUB_TOKEN=" + ghToken, "MCP_TOKEN=" + mcpToken}}, "validate")
		expectCode(t, r, 0)
		if r.stdout != "ok\n" || r.stderr != "" {
			t.Errorf("want exactly ok on stdout and nothing on stderr\n%s", r)
		}
		assertNoSecret(t, r, ghToken, mcpToken)
	})
	t.Run("MCP_TOKEN unset", func(t *testing.T) {
		r := harnessWith(t, runConfig{dir: dir, env: []string{"GITHUB_TOKEN=" + ghToken}}, "validate")
		expectCode(t, r, 0)
		if r.stdout != "ok\n" {
			t.Errorf("want ok on stdout\n%s", r)
		}
		if !strings.Contains(strings.ToLower(r.stderr), "warning") || !strings.Contains(r.stderr, "MCP_TOKEN") ||
			!strings.Contains(r.stderr, "cordis.yml:17:") {
			t.Errorf("want a warning on stderr naming MCP_TOKEN at cordis.yml:17\n%s", r)
		}
		assertNoSecret(t, r, ghToken)
	})
}

// assertNoSecret fails when any of the values appears in the output.
func assertNoSecret(t *testing.T, r result, secrets ...string) {
	t.Helper()
	for _, s := range secrets {
		// Every spelling: raw, JSON-escaped, URL-encoded, and its start (a
		// secret cut at a clip boundary must not leak its prefix).
		forms := proctest.Spellings(s)
		for stream, out := range map[string]string{"stdout": r.stdout, "stderr": r.stderr} {
			for _, f := range forms {
				if strings.Contains(out, f) {
					t.Errorf("secret %q appears on %s of `harness %s` (as %q):\n%s", s, stream, strings.Join(r.args, " "), f, r)
					break
				}
			}
		}
	}
}

// A server that pings its client before every answer (as @playwright/mcp
// does) works through call and run, over stdio and Streamable HTTP: every
// ping is answered {}.
func TestServerThatPingsWorks(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	url := startFixtureHTTP(t, "--ping-first", "--only", "echo")
	writeConfig(t, dir, fixtureEntry("p", "p", "--ping-first", "--only", "echo")+
		"- id: h\n  name: mcp-client\n  config:\n    serverName: h\n    transport: streamable-http\n    url: "+yq(url)+"\n")
	for _, server := range []string{"p", "h"} {
		r := harness(t, dir, "call", "mcp__"+server+"__echo", `{"message":"hi"}`)
		expectCode(t, r, 0)
		if r.stdout != "echo: hi\n" {
			t.Fatalf("call printed %q\n%s", r.stdout, r)
		}
		r = harness(t, dir, "call", "mcp__"+server+"__pings", `{}`)
		expectCode(t, r, 0)
		if n := strings.TrimSpace(r.stdout); n == "0" || n == "" {
			t.Fatalf("pings answered: %q\n%s", r.stdout, r)
		}
	}
	r := harnessWith(t, runConfig{dir: dir, stdin: "/call mcp__p__echo {\"message\":\"one\"}\n/call mcp__h__echo {\"message\":\"two\"}\n/quit\n"}, "run")
	expectCode(t, r, 0)
	if !strings.Contains(r.stdout, "echo: one\n") || !strings.Contains(r.stdout, "echo: two\n") {
		t.Fatalf("run printed:\n%s", r)
	}

	// Through the gateway: mcp-go's client calls harness serve, whose
	// backends ping it... the harness, which answers.
	ctx, cancel := context.WithTimeout(context.Background(), 2*waitTimeout)
	defer cancel()
	cl := client.NewClient(stdioServe(t, "-c", filepath.Join(dir, "cordis.yml")))
	if err := cl.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	init := mcp.InitializeRequest{}
	init.Params.ClientInfo = mcp.Implementation{Name: "e2e", Version: "0"}
	if _, err := cl.Initialize(ctx, init); err != nil {
		t.Fatalf("initialize: %v", err)
	}
	for _, name := range []string{"mcp__p__echo", "mcp__h__echo"} {
		req := mcp.CallToolRequest{}
		req.Params.Name = name
		req.Params.Arguments = map[string]any{"message": "via serve"}
		res, err := cl.CallTool(ctx, req)
		if err != nil || res.IsError || len(res.Content) == 0 || res.Content[0].(mcp.TextContent).Text != "echo: via serve" {
			t.Fatalf("serve, %s: %+v, %v", name, res, err)
		}
	}
}

// A server of 2026-07-28 only, which refuses initialize as the conformance
// suite's mock does (HTTP 400, -32020), is reached with protocol: auto (the
// default): call works, and status says which revision it speaks.
func TestStatelessOnlyServerThroughAuto(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	url := startFixtureHTTP(t, "--refuse-initialize", "-32020", "--only", "echo")
	writeConfig(t, dir, "- id: m\n  name: mcp-client\n  config:\n    serverName: m\n    transport: streamable-http\n    url: "+yq(url)+"\n")
	r := harness(t, dir, "call", "mcp__m__echo", `{"message":"hi"}`)
	expectCode(t, r, 0)
	if r.stdout != "echo: hi\n" {
		t.Fatalf("call printed %q\n%s", r.stdout, r)
	}
	r = harness(t, dir, "status")
	expectCode(t, r, 0)
	if !strings.Contains(r.stdout, "protocol 2026-07-28 (stateless)") {
		t.Fatalf("status:\n%s", r)
	}
}
