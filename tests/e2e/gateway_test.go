package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/harness-go/harness/internal/testkit/fixture"
	"github.com/harness-go/harness/internal/testkit/mcptest"
	"github.com/harness-go/harness/internal/testkit/npmtest"
	"github.com/harness-go/harness/internal/testkit/proctest"
)

// The gateway through the TypeScript SDK's client, over stdio and HTTP:
// connect, list, call a tool of our fixture and of server-everything, edit
// cordis.yml while connected, see list_changed, call the new tool, and get
// a clear error from a removed one.
func TestGatewayTSClient(t *testing.T) {
	t.Parallel()
	everything := npmtest.Bin(t, "mcp-server-everything")
	for _, transport := range []string{"stdio", "http"} {
		t.Run(transport, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			file := writeConfig(t, dir, "- id: echo\n  name: echo\n"+fixtureEntry("fx", "fx", "--only", "echo,image,structured,hologram,sleep,cancellations"))
			ts := startTS(t)
			if transport == "stdio" {
				ts.mustDo(map[string]any{"op": "connect", "command": harnessBin, "args": []string{"serve", "-c", file}, "cwd": dir, "env": raceEnv()})
			} else {
				srv := serveHTTP(t, runConfig{dir: dir}, "-c", file)
				ts.mustDo(map[string]any{"op": "connect", "url": srv.url})
			}

			if got, want := ts.names(), []string{"clock", "echo", "mcp__fx__cancellations", "mcp__fx__echo", "mcp__fx__hologram", "mcp__fx__image", "mcp__fx__sleep", "mcp__fx__structured"}; !slices.Equal(got, want) {
				t.Fatalf("tools %q, want %q", got, want)
			}
			if got := ts.call("mcp__fx__echo", map[string]any{"message": "hi"}); !sameJSON(got, `{"content":[{"type":"text","text":"echo: hi"}]}`) {
				t.Fatalf("mcp__fx__echo: %s", got)
			}
			if got := ts.call("echo", map[string]any{"message": "native"}); !sameJSON(got, `{"content":[{"type":"text","text":"native"}]}`) {
				t.Fatalf("echo: %s", got)
			}
			// The server's result passes through: the image block, the
			// structured content; a block type MCP does not define comes
			// as text holding its JSON.
			if got := ts.call("mcp__fx__image", nil); !sameJSON(got, `{"content":[{"type":"text","text":"here is an image"},{"type":"image","data":"`+fixture.ImagePNGBase64+`","mimeType":"image/png"}]}`) {
				t.Fatalf("mcp__fx__image: %s", got)
			}
			if got := ts.call("mcp__fx__structured", nil); !sameJSON(got, `{"content":[],"structuredContent":{"answer":42,"unit":"none"}}`) {
				t.Fatalf("mcp__fx__structured: %s", got)
			}
			if got := ts.call("mcp__fx__hologram", nil); !sameJSON(got, `{"content":[{"type":"text","text":"{\"type\":\"hologram\",\"data\":\"x\"}"},{"type":"text","text":"visible"}]}`) {
				t.Fatalf("mcp__fx__hologram: %s", got)
			}

			// The client gives up on a call: the cancellation reaches the
			// fixture, through the gateway and the mcp-client entry.
			m := ts.do(map[string]any{"op": "call", "name": "mcp__fx__sleep", "arguments": map[string]any{"ms": 60000}, "timeoutMs": 300})
			if e, _ := m["error"].(string); !strings.Contains(e, "timed out") {
				t.Fatalf("a call the client gave up on: %v", m)
			}
			if got := ts.call("mcp__fx__cancellations", map[string]any{"waitMs": 20000}); !regexp.MustCompile(`\\"cancelled\\":\[[^\]]`).MatchString(got) {
				t.Fatalf("the fixture saw no cancellation: %s", got)
			}

			// An edit while connected: server-everything comes, the fixture goes.
			writeConfig(t, dir, "- id: echo\n  name: echo\n"+stdioEntry("ev", "mcp-client", "ev", everything, "stdio"))
			deadline := time.Now().Add(waitTimeout)
			for seen := 1; ; seen++ {
				ts.waitChanges(seen)
				names := ts.names()
				if slices.Contains(names, "mcp__ev__echo") && !slices.Contains(names, "mcp__fx__echo") {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("after the edit: %q", names)
				}
			}
			if got := ts.call("mcp__ev__echo", map[string]any{"message": "hello"}); !sameJSON(got, `{"content":[{"type":"text","text":"Echo: hello"}]}`) {
				t.Fatalf("mcp__ev__echo: %s", got)
			}
			m = ts.do(map[string]any{"op": "call", "name": "mcp__fx__echo", "arguments": map[string]any{"message": "x"}})
			if e, _ := m["error"].(string); !strings.Contains(e, "mcp__fx__echo") || !strings.Contains(e, "not found") {
				t.Fatalf("a removed tool: %v", m)
			}
			ts.mustDo(map[string]any{"op": "close"})
		})
	}
}

// raceEnv is what a race-enabled harness started by node needs so that it
// exits at once.
func raceEnv() map[string]string {
	if !raceEnabled {
		return nil
	}
	return map[string]string{"GORACE": strings.TrimSpace(os.Getenv("GORACE") + " atexit_sleep_ms=0")}
}

// The README's snippets work: the JSON one (Claude Code's .mcp.json, and
// Cursor's, VS Code's and Gemini CLI's files) through the TypeScript SDK's
// client, the TOML one (Codex) says the same.
func TestReadmeGatewaySnippets(t *testing.T) {
	t.Parallel()
	readme, err := os.ReadFile(filepath.Join(repoRoot, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	const heading = "## Use the harness from Claude Code, Codex, Cursor, VS Code or Gemini CLI"
	_, section, ok := strings.Cut(string(readme), heading)
	if !ok {
		t.Fatalf("README has no section %q", heading)
	}
	section, _, _ = strings.Cut(section, "\n## ")
	blocks := regexp.MustCompile("(?s)```(json|toml)\n(.*?)```").FindAllStringSubmatch(section, -1)
	type server struct {
		Command string   `json:"command"`
		Args    []string `json:"args"`
	}
	var jsonServers []server
	var toml []string
	for _, b := range blocks {
		switch b[1] {
		case "json":
			var cfg struct {
				MCPServers map[string]server `json:"mcpServers"`
				Servers    map[string]server `json:"servers"` // VS Code's key
			}
			if err := json.Unmarshal([]byte(b[2]), &cfg); err != nil {
				t.Fatalf("a JSON snippet of the README does not parse: %v\n%s", err, b[2])
			}
			s, ok := cfg.MCPServers["harness"]
			if vs, vok := cfg.Servers["harness"]; vok && !ok {
				s, ok = vs, true
			}
			if !ok {
				t.Fatalf("a JSON snippet has no mcpServers.harness (or VS Code's servers.harness):\n%s", b[2])
			}
			jsonServers = append(jsonServers, s)
		case "toml":
			toml = append(toml, b[2])
		}
	}
	if len(jsonServers) < 4 || len(toml) < 1 {
		t.Fatalf("want JSON snippets for Claude Code, Cursor, VS Code and Gemini CLI and a TOML one for Codex; found %d JSON, %d TOML", len(jsonServers), len(toml))
	}
	want := jsonServers[0]
	for _, s := range jsonServers[1:] {
		if s.Command != want.Command || !slices.Equal(s.Args, want.Args) {
			t.Fatalf("the JSON snippets differ: %+v and %+v", want, s)
		}
	}
	quoted := make([]string, len(want.Args))
	for i, a := range want.Args {
		quoted[i] = fmt.Sprintf("%q", a)
	}
	if !strings.Contains(toml[0], `[mcp_servers.harness]`) || !strings.Contains(toml[0], fmt.Sprintf("command = %q", want.Command)) ||
		!strings.Contains(toml[0], "args = ["+strings.Join(quoted, ", ")+"]") {
		t.Fatalf("the Codex snippet does not say what the JSON one says (%+v):\n%s", want, toml[0])
	}
	placeholder := "/absolute/path/to/cordis.yml"
	if want.Command != "harness" || !slices.Contains(want.Args, placeholder) {
		t.Fatalf("the snippet is %+v: the test expects command \"harness\" and %s", want, placeholder)
	}

	// Run it: harness on PATH, a real cordis.yml in place of the placeholder.
	dir := t.TempDir()
	file := writeConfig(t, dir, "- id: echo\n  name: echo\n")
	args := slices.Clone(want.Args)
	args[slices.Index(args, placeholder)] = file
	env := raceEnv()
	if env == nil {
		env = map[string]string{}
	}
	env["PATH"] = filepath.Dir(harnessBin) + string(os.PathListSeparator) + os.Getenv("PATH")
	ts := startTS(t)
	ts.mustDo(map[string]any{"op": "connect", "command": want.Command, "args": args, "env": env})
	if got := ts.call("echo", map[string]any{"message": "from the README"}); !sameJSON(got, `{"content":[{"type":"text","text":"from the README"}]}`) {
		t.Fatalf("echo through the README's snippet: %s", got)
	}
}

// From a fresh clone, `go run ./cmd/harness serve` is a working command for
// an MCP client.
func TestGoRunServe(t *testing.T) {
	t.Parallel()
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go on PATH")
	}
	dir := t.TempDir()
	file := writeConfig(t, dir, "- id: echo\n  name: echo\n")
	ts := startTS(t)
	ts.mustDo(map[string]any{"op": "connect", "command": goBin, "args": []string{"run", "./cmd/harness", "serve", "-c", file}, "cwd": repoRoot})
	if got := ts.names(); !slices.Equal(got, []string{"clock", "echo"}) {
		t.Fatalf("tools %q", got)
	}
	ts.mustDo(map[string]any{"op": "close"})
}

// mcp-go's client, over stdio and HTTP, on both protocol eras, with our
// fixture and server-everything behind the gateway.
func TestGatewayMcpGoClient(t *testing.T) {
	t.Parallel()
	ev := stdioEntry("ev", "mcp-client", "ev", npmtest.Bin(t, "mcp-server-everything"), "stdio") + "    enabledTools: [echo]\n"
	served := func(fixture string) []string { return []string{"mcp__ev__echo", fixture} }
	for _, tc := range []struct {
		name         string
		http, legacy bool
	}{{"stdio", false, false}, {"stdio legacy", false, true}, {"http", true, false}, {"http legacy", true, true}} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			file := writeConfig(t, dir, fixtureEntry("fx", "fx", "--only", "echo")+ev)
			var tr transport.Interface
			if tc.http {
				srv := serveHTTP(t, runConfig{dir: dir}, "-c", file)
				var opts []transport.StreamableHTTPCOption
				if tc.legacy {
					opts = append(opts, transport.WithContinuousListening())
				}
				h, err := transport.NewStreamableHTTP(srv.url, opts...)
				if err != nil {
					t.Fatal(err)
				}
				tr = h
			} else {
				tr = stdioServe(t, "-c", file)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 2*waitTimeout)
			t.Cleanup(cancel) // after the client's close: ctx ends the stdio harness
			cl := mcptest.Connect(t, ctx, tr, tc.legacy)
			list := func() []string {
				res, err := cl.ListTools(ctx, mcp.ListToolsRequest{})
				if err != nil {
					t.Fatalf("tools/list: %v", err)
				}
				var out []string
				for _, tool := range res.Tools {
					out = append(out, tool.Name)
				}
				return out
			}
			call := func(name string) (*mcp.CallToolResult, error) {
				req := mcp.CallToolRequest{}
				req.Params.Name = name
				req.Params.Arguments = map[string]any{"message": "hi"}
				return cl.CallTool(ctx, req)
			}
			callEv := func() {
				t.Helper()
				if res, err := call("mcp__ev__echo"); err != nil || len(res.Content) != 1 || res.Content[0].(mcp.TextContent).Text != "Echo: hi" {
					t.Fatalf("mcp__ev__echo: %v %+v", err, res)
				}
			}
			if got := list(); !slices.Equal(got, served("mcp__fx__echo")) {
				t.Fatalf("tools %q, want %q", got, served("mcp__fx__echo"))
			}
			if res, err := call("mcp__fx__echo"); err != nil || res.Content[0].(mcp.TextContent).Text != "echo: hi" {
				t.Fatalf("call: %v %+v", err, res)
			}
			callEv()
			writeConfig(t, dir, fixtureEntry("fy", "fy", "--only", "echo")+ev)
			for {
				select {
				case <-cl.Changed:
				case <-ctx.Done():
					t.Fatal("no list_changed after the edit")
				}
				if slices.Equal(list(), served("mcp__fy__echo")) {
					break
				}
			}
			if res, err := call("mcp__fy__echo"); err != nil || res.Content[0].(mcp.TextContent).Text != "echo: hi" {
				t.Fatalf("the new tool: %v %+v", err, res)
			}
			callEv() // the entry the edit left alone still answers
			if _, err := call("mcp__fx__echo"); err == nil || !strings.Contains(err.Error(), "not found") {
				t.Fatalf("the removed tool: %v", err)
			}
		})
	}
}

// --tools meta: three tools that never change reach every tool, so an edit
// reaches a client that ignores list_changed.
func TestGatewayMetaMode(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	file := writeConfig(t, dir, "- id: echo\n  name: echo\n")
	ts := startTS(t)
	ts.mustDo(map[string]any{"op": "connect", "command": harnessBin, "args": []string{"serve", "--tools", "meta", "-c", file}, "cwd": dir, "env": raceEnv()})
	if got := ts.names(); !slices.Equal(got, []string{"call_tool", "describe_tool", "search_tools"}) {
		t.Fatalf("tools %q", got)
	}
	writeConfig(t, dir, "- id: echo\n  name: echo\n"+fixtureEntry("fx", "fx", "--only", "echo"))
	deadline := time.Now().Add(waitTimeout)
	for !strings.Contains(ts.call("search_tools", map[string]any{"query": "mcp__fx"}), "mcp__fx__echo  Echo a message back.") {
		if time.Now().After(deadline) {
			t.Fatal("search_tools never found the new tool")
		}
		time.Sleep(20 * time.Millisecond) // the harness reloads on its own; nothing to wait on from here
	}
	if got := ts.call("describe_tool", map[string]any{"name": "mcp__fx__echo"}); !strings.Contains(got, `\"inputSchema\":{`) {
		t.Fatalf("describe_tool: %s", got)
	}
	if got := ts.call("call_tool", map[string]any{"name": "mcp__fx__echo", "arguments": map[string]any{"message": "meta"}}); !sameJSON(got, `{"content":[{"type":"text","text":"echo: meta"}]}`) {
		t.Fatalf("call_tool: %s", got)
	}
	if m := ts.mustDo(map[string]any{"op": "changes", "atLeast": 0}); m["changes"] != float64(0) {
		t.Fatalf("meta mode sent list_changed: %v", m)
	}
}

// The HTTP gateway's refusals, as a client sees them.
func TestGatewayHTTPRefusals(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	file := writeConfig(t, dir, "- id: echo\n  name: echo\n")
	srv := serveHTTP(t, runConfig{dir: dir, env: []string{"HARNESS_TOKEN=e2e-gateway-token"}}, "-c", file)
	post := func(header map[string]string) (int, string) {
		return mcptest.Post(t, srv.url, "", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"0"}}}`), header)
	}
	for _, tc := range []struct {
		name   string
		header map[string]string
		status int
		says   string
	}{
		{"no token", nil, 401, "a Bearer token is required"},
		{"a wrong token", map[string]string{"Authorization": "Bearer nope-nope-nope"}, 401, "the Bearer token is wrong"},
		{"a web page", map[string]string{"Authorization": "Bearer e2e-gateway-token", "Origin": "https://evil.example"}, 403, "is not accepted"},
		{"the token", map[string]string{"Authorization": "Bearer e2e-gateway-token"}, 200, `"serverInfo"`},
	} {
		if status, body := post(tc.header); status != tc.status || !strings.Contains(body, tc.says) {
			t.Errorf("%s: HTTP %d %s, want %d and %q", tc.name, status, body, tc.status, tc.says)
		}
	}
	// The TypeScript client, with and without the token.
	ts := startTS(t)
	if m := ts.do(map[string]any{"op": "connect", "url": srv.url}); m["code"] != float64(401) || !strings.Contains(fmt.Sprint(m["error"]), "a Bearer token is required") {
		t.Fatalf("connect without the token: %v", m)
	}
	ts2 := startTS(t)
	ts2.mustDo(map[string]any{"op": "connect", "url": srv.url, "headers": map[string]string{"Authorization": "Bearer e2e-gateway-token"}})
	if got := ts2.names(); !slices.Equal(got, []string{"clock", "echo"}) {
		t.Fatalf("tools %q", got)
	}
	if strings.Contains(srv.stderr.Text(), "e2e-gateway-token") {
		t.Fatal("the token reached stderr")
	}
}

// A cordis.yml whose entry runs harness serve on that same file: the entry
// fails with a named loop message, and no process is left.
func TestGatewayLoopSameFile(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	file := filepath.Join(dir, "cordis.yml")
	writeConfig(t, dir, "- id: echo\n  name: echo\n"+stdioEntry("self", "mcp-client", "self", harnessBin, "serve", "-c", file))
	r := harnessWith(t, runConfig{dir: dir, timeout: 2 * runTimeout}, "status", "--wait", "60s")
	expectCode(t, r, 1)
	if !strings.Contains(r.stdout, "self  mcp-client  failed") || !strings.Contains(r.stdout, "harness loop") || !strings.Contains(r.stdout, "is already run by a harness in front of this one") {
		t.Fatalf("the loop entry:\n%s", r)
	}
	if left := proctest.WaitMentioning(t, file, 0, waitTimeout); len(left) > 0 {
		t.Fatalf("processes still running whose command lines mention %s: %s", file, proctest.Describe(left))
	}
}

// An HTTP gateway whose cordis.yml points an mcp-client entry at itself:
// the request is refused, the entry fails, the gateway never lists itself.
func TestGatewayLoopHTTP(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	port := freePort(t)
	url := fmt.Sprintf("http://127.0.0.1:%d/mcp", port)
	file := writeConfig(t, dir, "- id: echo\n  name: echo\n- id: self\n  name: mcp-client\n  config:\n    serverName: self\n    transport: streamable-http\n    url: "+yq(url)+"\n")
	srv := serveHTTP(t, runConfig{dir: dir}, "--http", fmt.Sprintf("127.0.0.1:%d", port), "-c", file)
	if _, ok := srv.stderr.Find(0, waitTimeout, containsAll(`entry "self" failed`, "harness loop: this request came from this harness itself")); !ok {
		t.Fatalf("no loop failure on stderr:\n%s", srv.stderr.Text())
	}
	ts := startTS(t)
	ts.mustDo(map[string]any{"op": "connect", "url": srv.url})
	if got := ts.names(); !slices.Equal(got, []string{"clock", "echo"}) {
		t.Fatalf("the gateway lists %q", got)
	}
}

// A harness serving another cordis.yml behind a harness works.
func TestGatewayHarnessBehindHarness(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	inner := writeFile(t, filepath.Join(dir, "inner.yml"), "- id: echo\n  name: echo\n")
	writeConfig(t, dir, stdioEntry("inner", "mcp-client", "inner", harnessBin, "serve", "-c", inner))
	r := harness(t, dir, "call", "mcp__inner__echo", `{"message":"through two harnesses"}`)
	expectCode(t, r, 0)
	if r.stdout != "through two harnesses\n" {
		t.Fatalf("call printed %q\n%s", r.stdout, r)
	}
}

// sameJSON reports whether two JSON texts hold the same value.
func sameJSON(a, b string) bool {
	var x, y any
	if json.Unmarshal([]byte(a), &x) != nil || json.Unmarshal([]byte(b), &y) != nil {
		return false
	}
	xb, _ := json.Marshal(x)
	yb, _ := json.Marshal(y)
	return string(xb) == string(yb)
}

// harness run serves an mcp-server entry beside its console; an mcp-client
// entry pointing at that very gateway is refused as a loop.
func TestGatewayKindUnderRun(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	port := freePort(t)
	url := fmt.Sprintf("http://127.0.0.1:%d/mcp", port)
	writeConfig(t, dir, fmt.Sprintf(`- id: gw
  name: mcp-server
  config: {listen: "127.0.0.1:%d"}
- id: echo
  name: echo
- id: self
  name: mcp-client
  config: {serverName: self, transport: streamable-http, url: %s}
`, port, yq(url)))
	s := startSession(t, runConfig{dir: dir})
	status := strings.Join(s.do("/status"), "\n")
	if !strings.Contains(status, "serving "+url+" (tools full, no token)") {
		t.Fatalf("the mcp-server entry's status:\n%s\n%s", status, s.dump())
	}
	if !strings.Contains(status, "self  mcp-client  failed") || !strings.Contains(status, "harness loop: this request came from this harness itself") {
		t.Fatalf("the self entry:\n%s", status)
	}
	ts := startTS(t)
	ts.mustDo(map[string]any{"op": "connect", "url": url})
	if got := ts.names(); !slices.Equal(got, []string{"clock", "echo"}) {
		t.Fatalf("the gateway of harness run lists %q", got)
	}
	if got := ts.call("echo", map[string]any{"message": "from run"}); !sameJSON(got, `{"content":[{"type":"text","text":"from run"}]}`) {
		t.Fatalf("echo: %s", got)
	}
	s.send("/quit\n")
	if code := s.waitExit(); code != 0 {
		t.Fatalf("/quit: exit code %d\n%s", code, s.dump())
	}
}

// One-shot commands (status, tools) ignore mcp-server entries: they must not
// take the port of a running harness. With the entry's port taken they
// still exit 0, and status says why the entry does nothing.
func TestOneShotCommandsIgnoreMcpServerEntries(t *testing.T) {
	t.Parallel()
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	dir := t.TempDir()
	writeConfig(t, dir, fmt.Sprintf("- id: gw\n  name: mcp-server\n  config: {listen: %s}\n- id: echo\n  name: echo\n", yq(taken.Addr().String())))
	const note = "ignored: only harness run serves mcp-server entries"

	r := harness(t, dir, "status")
	expectCode(t, r, 0)
	if !regexp.MustCompile(`(?m)^gw  mcp-server  ready\n    ` + regexp.QuoteMeta(note) + `$`).MatchString(r.stdout) {
		t.Fatalf("status does not show the mcp-server entry ready and ignored:\n%s", r)
	}
	r = harness(t, dir, "status", "--json")
	expectCode(t, r, 0)
	var doc struct {
		Entries []struct {
			ID, State, Note string
		}
	}
	if err := json.Unmarshal([]byte(r.stdout), &doc); err != nil {
		t.Fatalf("status --json: %v\n%s", err, r)
	}
	if i := slices.IndexFunc(doc.Entries, func(e struct{ ID, State, Note string }) bool { return e.ID == "gw" }); i < 0 || doc.Entries[i].State != "ready" || doc.Entries[i].Note != note {
		t.Fatalf("status --json, entry gw:\n%s", r)
	}
	r = harness(t, dir, "tools")
	expectCode(t, r, 0)
	if got := toolNames(lines(r.stdout)); !slices.Equal(got, []string{"clock", "echo"}) {
		t.Fatalf("tools %q\n%s", got, r)
	}
}

// What a real client acts on, through the TypeScript SDK's client: tool
// annotations (a native tool's own, a bridged tool's as its server listed
// them, meta mode's read-only search_tools and describe_tool), and, for a
// client that answers the 401 by trying OAuth, the gateway's 404s that say
// it takes a Bearer token.
func TestGatewayAnnotationsAndNoOAuth(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	file := writeConfig(t, dir, "- id: echo\n  name: echo\n"+stdioEntry("demo", "mcp-client", "demo", harnessBin, "mcp-demo"))
	srv := serveHTTP(t, runConfig{dir: dir, env: []string{"HARNESS_TOKEN=e2e-gateway-token"}}, "-c", file)

	// OAuth: discovery finds nothing, registration is refused, and the
	// error the client reports says what to send instead.
	ts := startTS(t)
	m := ts.do(map[string]any{"op": "connect", "url": srv.url, "oauth": true})
	if e := fmt.Sprint(m["error"]); !strings.Contains(e, `this gateway takes "Authorization: Bearer <token>"`) || !strings.Contains(e, "it offers no OAuth") {
		t.Fatalf("a client that tries OAuth: %v", m)
	}
	// Without OAuth, the 401's body says the same.
	ts = startTS(t)
	// (The SDK shows the body as it came: JSON, its quotes escaped.)
	if m := ts.do(map[string]any{"op": "connect", "url": srv.url}); !strings.Contains(fmt.Sprint(m["error"]), `a Bearer token is required: this gateway takes \"Authorization: Bearer <token>\"`) {
		t.Fatalf("connect without the token: %v", m)
	}

	ts = startTS(t)
	ts.mustDo(map[string]any{"op": "connect", "url": srv.url, "headers": map[string]string{"Authorization": "Bearer e2e-gateway-token"}})
	annotations := func(ts *tsClient) map[string]map[string]any {
		out := map[string]map[string]any{}
		for _, tool := range ts.mustDo(map[string]any{"op": "list"})["tools"].([]any) {
			tm := tool.(map[string]any)
			a, _ := tm["annotations"].(map[string]any)
			out[tm["name"].(string)] = a
		}
		return out
	}
	got := annotations(ts)
	for name, want := range map[string]map[string]any{
		"echo":            {"readOnlyHint": true, "openWorldHint": false},
		"clock":           {"readOnlyHint": true, "openWorldHint": false},
		"mcp__demo__calc": {"title": "Calculator", "readOnlyHint": true, "destructiveHint": false, "idempotentHint": true, "openWorldHint": false},
		"mcp__demo__uuid": {"readOnlyHint": true},
		"mcp__demo__now":  {"readOnlyHint": true},
	} {
		a, ok := got[name]
		if !ok {
			t.Errorf("%s is not served (tools: %v)", name, got)
			continue
		}
		for k, v := range want {
			if a[k] != v {
				t.Errorf("%s: annotations %v, want %s = %v", name, a, k, v)
			}
		}
	}

	meta := startTS(t)
	meta.mustDo(map[string]any{"op": "connect", "command": harnessBin, "args": []string{"serve", "--tools", "meta", "-c", file}, "cwd": dir, "env": raceEnv()})
	mg := annotations(meta)
	for _, name := range []string{"search_tools", "describe_tool"} {
		if mg[name]["readOnlyHint"] != true {
			t.Errorf("meta %s: annotations %v, want readOnlyHint", name, mg[name])
		}
	}
	if mg["call_tool"]["readOnlyHint"] == true {
		t.Errorf("meta call_tool is marked read-only: %v", mg["call_tool"])
	}
}
