package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"
)

// MCP servers that ask their client something, end to end through the
// harness: the fixture with --ask (its tools elicit, and report progress),
// through harness call, the console (harness run) and harness serve. A
// server that pings first is TestServerThatPingsWorks.

// A server whose tool asks: harness call declines (the server gets the
// decline, stderr says what was asked) and shows its progress; harness
// serve relays the form to its client — the TypeScript SDK's, and mcp-go's
// on 2026-07-28, where the gateway's input_required carries the backend's
// question — and the answer reaches the server.
func TestAskingServerThroughCallAndServe(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	file := writeConfig(t, dir, fixtureEntry("fx", "fx", "--only", "echo", "--ask"))

	r := harness(t, dir, "call", "mcp__fx__elicit")
	expectCode(t, r, 0)
	if r.stdout != `elicit: {"action":"decline"}`+"\n" {
		t.Fatalf("call elicit:\n%s", r)
	}
	if !strings.Contains(r.stderr, `server "fx" (tool mcp__fx__elicit) asks to fill a form: "Who are you?" — declined: harness call has nobody to ask`) {
		t.Fatalf("no note of the declined question:\n%s", r)
	}
	r = harness(t, dir, "call", "mcp__fx__progress", `{"steps":3}`)
	expectCode(t, r, 0)
	if n := strings.Count(r.stderr, "harness: progress of mcp__fx__progress: "); n != 3 || !strings.HasPrefix(r.stdout, "progress: sent 3") {
		t.Fatalf("call progress: %d progress lines\n%s", n, r)
	}

	ts := startTS(t)
	ts.mustDo(map[string]any{"op": "connect", "command": harnessBin, "args": []string{"serve", "-c", file}, "cwd": dir, "env": raceEnv(),
		"elicit": map[string]any{"action": "accept", "content": map[string]any{"name": "Grace", "age": 85}}})
	if got := ts.call("mcp__fx__elicit", nil); !strings.Contains(got, `elicit: {\"action\":\"accept\",\"content\":{\"age\":85,\"name\":\"Grace\"}}`) {
		t.Fatalf("serve, the TypeScript client: %s", got)
	}
	ts.mustDo(map[string]any{"op": "close"})

	ctx, cancel := context.WithTimeout(context.Background(), 2*waitTimeout)
	t.Cleanup(cancel)
	cl := client.NewClient(stdioServe(t, "-c", file), client.WithElicitationHandler(elicitFunc(func(_ context.Context, req mcp.ElicitationRequest) (*mcp.ElicitationResult, error) {
		return &mcp.ElicitationResult{ElicitationResponse: mcp.ElicitationResponse{Action: mcp.ElicitationResponseActionAccept, Content: map[string]any{"name": "Hedy"}}}, nil
	})))
	if err := cl.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cl.Close() })
	init := mcp.InitializeRequest{}
	init.Params.ClientInfo = mcp.Implementation{Name: "e2e", Version: "0"}
	if _, err := cl.Initialize(ctx, init); err != nil {
		t.Fatalf("initialize: %v", err)
	}
	req := mcp.CallToolRequest{}
	req.Params.Name = "mcp__fx__elicit"
	if res, err := cl.CallTool(ctx, req); err != nil || !strings.Contains(res.Content[0].(mcp.TextContent).Text, `"name":"Hedy"`) {
		t.Fatalf("serve, mcp-go's client on 2026-07-28: %+v, %v", res, err)
	}

	// The backend's progress reaches the gateway's client before the
	// answer, with the client's own token. (The TypeScript SDK's client
	// drops a notification that arrives in the same read as its result,
	// and the three here come at once; tests/conformance/relay_ts_test.go
	// covers that client's progress.) mcp-go's client runs a notification's
	// handler on its reader, so all three are in before CallTool returns.
	var mu sync.Mutex
	var progress []string
	cl.OnNotification(func(n mcp.JSONRPCNotification) {
		if n.Method != string(mcp.MethodNotificationProgress) {
			return
		}
		b, _ := json.Marshal(n.Params.AdditionalFields)
		mu.Lock()
		progress = append(progress, string(b))
		mu.Unlock()
	})
	req = mcp.CallToolRequest{}
	req.Params.Name = "mcp__fx__progress"
	req.Params.Arguments = map[string]any{"steps": 3}
	req.Params.Meta = &mcp.Meta{ProgressToken: "mine"}
	if res, err := cl.CallTool(ctx, req); err != nil || !strings.HasPrefix(res.Content[0].(mcp.TextContent).Text, "progress: sent 3") {
		t.Fatalf("serve, progress: %+v, %v", res, err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(progress) != 3 {
		t.Fatalf("serve, the progress mcp-go's client saw: %q", progress)
	}
	for i, p := range progress {
		if !strings.Contains(p, `"progressToken":"mine"`) || !strings.Contains(p, fmt.Sprintf(`"progress":%d`, i+1)) {
			t.Fatalf("serve, progress %d: %s", i+1, p)
		}
	}
}

// A server's form in the console, on a terminal: its fields asked one at a
// time with their defaults, and the answer reaches the server.
//
// A page to open is shown with its host, and opened only after a yes
// ($BROWSER, here a script that records what it was given).
func TestAskingServerInTheConsole(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	writeConfig(t, dir, fixtureEntry("fx", "fx", "--only", "echo", "--ask"))
	opened := filepath.Join(dir, "opened")
	browser := filepath.Join(dir, "browser.sh")
	if err := os.WriteFile(browser, []byte("#!/bin/sh\necho \"$1\" >> "+opened+"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	s := startTTY(t, runConfig{dir: dir, env: []string{"XDG_STATE_HOME=" + t.TempDir(), "BROWSER=" + browser}})
	s.prompt("")
	s.keys("/call mcp__fx__elicit" + keyEnter)
	s.waitLines(`server "fx" (tool mcp__fx__elicit) asks: Who are you?`, 1)
	s.scr.waitFor(t, "the name field", func(v view) bool { return v.line() == "  name (text; required; Enter for Ada):" })
	s.keys("Lin" + keyEnter)
	s.scr.waitFor(t, "the age field", func(v view) bool { return v.line() == "  age (whole number; Enter for 36):" })
	s.keys("x" + keyEnter)
	s.waitLines(`    "x" is not a number`, 1)
	s.keys("41" + keyEnter)
	s.scr.waitFor(t, "the question to send", func(v view) bool { return v.line() == "  send? [Y]es, [d]ecline, [c]ancel:" })
	s.keys(keyEnter)
	s.waitLines(`elicit: {"action":"accept","content":{"age":41,"name":"Lin"}}`, 1)
	s.prompt("")

	open := "  open it in your browser? [y]es, [N]o, [c]ancel:"
	s.keys(`/call mcp__fx__elicit {"mode":"url"}` + keyEnter)
	s.waitLines(`server "fx" (tool mcp__fx__elicit) asks you to open a page: Connect your account`, 1)
	s.waitLines("  https://auth.example.com/connect?session=fixture", 1)
	s.waitLines("  host: auth.example.com", 1)
	s.scr.waitFor(t, "the question to open it", func(v view) bool { return v.line() == open })
	s.keys(keyEnter) // no
	s.waitLines(`elicit: {"action":"decline"}`, 1)
	if _, err := os.Stat(opened); err == nil {
		t.Fatal("the page was opened without a yes")
	}
	s.prompt("")
	s.keys(`/call mcp__fx__elicit {"mode":"url"}` + keyEnter)
	s.scr.waitFor(t, "the question to open it again", func(v view) bool { return v.line() == open })
	s.keys("y" + keyEnter)
	s.waitLines(`elicit: {"action":"accept"}`, 1)
	s.prompt("")
	s.quitWith(ctrlD, "Ctrl-D")
	if b, err := os.ReadFile(opened); err != nil || string(b) != "https://auth.example.com/connect?session=fixture\n" {
		t.Fatalf("the browser was given %q (%v)", b, err)
	}
}
