package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/harness-go/harness/internal/testkit/npmtest"
	"github.com/harness-go/harness/internal/testkit/oauthtest"
)

// startSDKOAuthExample starts the TypeScript SDK's example server with its
// demo authorization server beside it (simpleStreamableHttp.js --oauth of
// the pinned @modelcontextprotocol/sdk), through
// testdata/sdk-oauth-refresh.mjs, which gives the demo's in-memory provider
// the refresh grant it lacks (and runs the example unchanged otherwise). It
// returns the MCP endpoint and the server's stdout, where each refresh
// grant prints "refresh-grant N".
func startSDKOAuthExample(t *testing.T) (string, *syncLines) {
	t.Helper()
	node := npmtest.Node(t)
	examples := filepath.Join(npmtest.Dir(t), "node_modules", "@modelcontextprotocol", "sdk", "dist", "esm", "examples", "server")
	for _, f := range []string{"simpleStreamableHttp.js", "demoInMemoryOAuthProvider.js"} {
		if _, err := os.Stat(filepath.Join(examples, f)); err != nil {
			t.Fatalf("the pinned SDK has no %s: %v", f, err)
		}
	}
	wrapper, err := filepath.Abs(filepath.Join("testdata", "sdk-oauth-refresh.mjs"))
	if err != nil {
		t.Fatal(err)
	}
	mcpPort, authPort := freePort(t), freePort(t)
	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, node, wrapper, examples)
	cmd.Env = append(os.Environ(), "MCP_PORT="+strconv.Itoa(mcpPort), "MCP_AUTH_PORT="+strconv.Itoa(authPort))
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cancel(); _ = cmd.Wait() })
	ready := make(chan bool, 1)
	lines := &syncLines{}
	go func() {
		sc := bufio.NewScanner(out)
		seen := 0
		for sc.Scan() {
			lines.add(sc.Text())
			if strings.Contains(sc.Text(), "listening on port") {
				if seen++; seen == 2 { // the MCP server and its authorization server
					ready <- true
				}
			}
		}
		ready <- false
	}()
	select {
	case ok := <-ready:
		if !ok {
			t.Fatal("the SDK's example server did not start")
		}
	case <-time.After(waitTimeout):
		t.Fatal("the SDK's example server did not say it listens")
	}
	// The example names itself localhost: its resource metadata says so.
	return "http://localhost:" + strconv.Itoa(mcpPort) + "/mcp", lines
}

// syncLines are the lines of a process's output, read on another goroutine.
type syncLines struct {
	mu    sync.Mutex
	lines []string
}

func (l *syncLines) add(s string) {
	l.mu.Lock()
	l.lines = append(l.lines, s)
	l.mu.Unlock()
}

func (l *syncLines) count(prefix string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for _, s := range l.lines {
		if strings.HasPrefix(s, prefix) {
			n++
		}
	}
	return n
}

// The person's flow through the binary against a real OAuth-protected
// server nobody here wrote: the TypeScript SDK's example and its demo
// authorization server (dynamic registration, PKCE, the resource
// indicator). status says needs-login → `harness login ID --no-browser
// --json`, the test following the printed URL as a browser would → the
// tools appear in an already running `harness run`, no restart → a token
// that expired is refreshed at the SDK's token endpoint, with no one asked,
// and the call goes through → `harness logout` → the running harness needs
// a login again. The token file is 0600, and no token, code or verifier is
// in any output, at debug level included.
func TestOAuthLoginAgainstTheSDKExample(t *testing.T) {
	t.Parallel()
	url, server := startSDKOAuthExample(t)
	dir := t.TempDir()
	state := filepath.Join(dir, "state")
	writeConfig(t, dir, "- id: sdk\n  name: mcp-client\n  config: {serverName: sdk, transport: streamable-http, url: "+yq(url)+"}\n")
	rc := runConfig{dir: dir, env: []string{"XDG_STATE_HOME=" + state}, unset: []string{"BROWSER", "SSH_CONNECTION"}}

	r := harnessWith(t, rc, "status", "--wait", "20s")
	expectCode(t, r, 1)
	if !strings.Contains(r.stdout, "needs-login") || !strings.Contains(r.stdout, "run `harness login sdk`") {
		t.Fatalf("status before the login:\n%s", r)
	}

	s := startSession(t, rc, "run", "--log-level", "debug")
	s.waitErr(0, "saying the entry needs a login", containsAll("sdk needs a login", "harness login sdk"))

	login := func() map[string]any {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, harnessBin, "login", "sdk", "--no-browser", "--json", "--log-level", "debug")
		cmd.Dir = dir
		cmd.Env = environ(rc.env, rc.unset)
		var stderr strings.Builder
		cmd.Stderr = &stderr
		out, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		var done map[string]any
		var printedOut strings.Builder
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			printedOut.WriteString(sc.Text() + "\n")
			var ev map[string]any
			if err := json.Unmarshal(sc.Bytes(), &ev); err != nil {
				t.Fatalf("login --json printed %q", sc.Text())
			}
			switch ev["type"] {
			case "authorize":
				if _, err := oauthtest.FollowHeadless(ev["url"].(string)); err != nil {
					t.Fatalf("following the login URL: %v", err)
				}
			case "done":
				done = ev
			}
		}
		err = cmd.Wait()
		printed.Output("`harness login sdk` in "+t.Name(), printedOut.String()+"\n"+stderr.String())
		if err != nil || done == nil {
			t.Fatalf("harness login: %v\nstdout:\n%s\nstderr:\n%s", err, printedOut.String(), stderr.String())
		}
		return done
	}
	done := login()
	if done["server"] != url || done["issuer"] == "" {
		t.Fatalf("login: %v", done)
	}
	file := done["store"].(string)
	if fi, err := os.Stat(file); err != nil || (runtime.GOOS != "windows" && fi.Mode().Perm() != 0o600) {
		t.Fatalf("the token file: %v, %v", fi, err)
	}

	// The running harness picks the login up: the entry is ready, with the
	// example's tools.
	s.waitErr(0, "saying the entry is ready", containsAll("sdk ready"))
	if got := s.do("/tools"); !contains(toolNames(got), "mcp__sdk__greet") {
		t.Fatalf("/tools after the login: %q", got)
	}
	if got := s.do(`/call mcp__sdk__greet {"name":"e2e"}`); len(got) == 0 || !strings.Contains(strings.Join(got, "\n"), "Hello, e2e!") {
		t.Fatalf("greet: %q\n%s", got, s.dump())
	}

	// The token expires (the store says so, as it would an hour from
	// now): the next call refreshes it at the SDK's token endpoint, with
	// the rotated refresh token saved, and goes through; nobody is asked.
	var rec map[string]any
	b, _ := os.ReadFile(file)
	if err := json.Unmarshal(b, &rec); err != nil {
		t.Fatal(err)
	}
	if rec["refreshToken"] == nil {
		t.Fatalf("the login has no refresh token: %v", rec)
	}
	rec["expiry"] = time.Now().Add(-time.Minute).UTC().Format(time.RFC3339Nano)
	b, _ = json.Marshal(rec)
	if err := os.WriteFile(file, b, 0o600); err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(s.do(`/call mcp__sdk__greet {"name":"again"}`), "\n"); !strings.Contains(got, "Hello, again!") {
		t.Fatalf("a call with an expired token: %q\n%s", got, s.dump())
	}
	if n := server.count("refresh-grant"); n != 1 {
		t.Fatalf("%d refresh grants at the SDK's token endpoint, want 1", n)
	}
	var after map[string]any
	b, _ = os.ReadFile(file)
	if err := json.Unmarshal(b, &after); err != nil || after["accessToken"] == rec["accessToken"] || after["refreshToken"] == rec["refreshToken"] {
		t.Fatalf("the token file after the refresh: %v (%v)", after, err)
	}

	from := s.mark()
	r = harnessWith(t, rc, "logout", "sdk")
	expectCode(t, r, 0)
	if !strings.Contains(r.stdout, "logged out of sdk") {
		t.Fatalf("logout:\n%s", r)
	}
	s.waitErr(from, "saying the entry needs a login after the logout", containsAll("sdk needs a login"))
	if got := s.do("/tools"); contains(toolNames(got), "mcp__sdk__greet") {
		t.Fatalf("/tools after the logout: %q", got)
	}
	s.send("/quit\n")
	if code := s.waitExit(); code != 0 {
		t.Fatalf("run exited %d\n%s", code, s.dump())
	}
	r = harnessWith(t, rc, "status", "--wait", "20s")
	expectCode(t, r, 1)
	if !strings.Contains(r.stdout, "needs-login") {
		t.Fatalf("status after the logout:\n%s", r)
	}
	for _, v := range []any{rec["accessToken"], rec["refreshToken"], after["accessToken"], after["refreshToken"]} {
		if v, _ := v.(string); v == "" || strings.Contains(s.out.Text()+s.err.Text(), v) {
			t.Fatalf("the session's output holds a token (%q)", v)
		}
	}
}
