package mcpclient

import (
	"bufio"
	"context"
	"encoding/json"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/harness-go/harness/host"
	"github.com/harness-go/harness/internal/testkit/npmtest"
	"github.com/harness-go/harness/plugins/tools"
)

// The TypeScript SDK's own example servers (the pinned
// @modelcontextprotocol/sdk of tests/npm), as a real peer for the server's
// questions and notifications.

// sdkExample returns the path of one of the SDK's example servers.
func sdkExample(t *testing.T, name string) string {
	t.Helper()
	p := filepath.Join(npmtest.Dir(t), "node_modules", "@modelcontextprotocol", "sdk", "dist", "esm", "examples", "server", name)
	if _, err := os.Stat(p); err != nil {
		t.Fatalf("the pinned SDK has no %s: %v", name, err)
	}
	return p
}

// progressExample.js over stdio: its tool count reports progress for its
// own call, with our progressToken, to the call's front.
func TestSDKProgressExample(t *testing.T) {
	t.Parallel()
	node, example := npmtest.Node(t), sdkExample(t, "progressExample.js")
	hx := newHarness(t)
	hx.mustLoad(yml(cfg{ID: "p", Config: map[string]any{"serverName": "pe", "transport": TransportStdio, "command": node, "args": []string{example}}}))
	hx.wantState("p", host.Ready)
	front := &recordingFront{offers: tools.Offers{Progress: true}}
	res := hx.callWith(front, "mcp__pe__count", `{"n":3}`)
	if res.IsError || res.Text != "Counted to 3" {
		t.Fatalf("count: %+v", res)
	}
	var steps []string
	for _, n := range front.told() {
		if n.Method == tools.MethodProgress && n.Tool == "mcp__pe__count" {
			var p struct {
				Message string `json:"message"`
			}
			_ = json.Unmarshal(n.Params, &p)
			steps = append(steps, p.Message)
		}
	}
	if strings.Join(steps, ", ") != "Counting: 1/3, Counting: 2/3, Counting: 3/3" {
		t.Fatalf("progress %q", steps)
	}
}

// elicitationFormExample.js over Streamable HTTP: its tool register_user
// asks for a form (on its listening stream: the SDK sends a request made
// without a related request there); the call's front fills it, and without
// a front the question is declined.
func TestSDKElicitationFormExample(t *testing.T) {
	t.Parallel()
	node, example := npmtest.Node(t), sdkExample(t, "elicitationFormExample.js")
	port := freePort(t)
	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, node, example)
	cmd.Env = append(os.Environ(), "PORT="+strconv.Itoa(port))
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = nil
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cancel(); _ = cmd.Wait() })
	ready := make(chan bool, 1)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			if strings.Contains(sc.Text(), "is running on") {
				ready <- true
				break
			}
		}
		for sc.Scan() { // keep the pipe drained
		}
		ready <- false
	}()
	select {
	case ok := <-ready:
		if !ok {
			t.Fatal("the example server did not start")
		}
	case <-time.After(waitTimeout):
		t.Fatal("the example server did not say it runs")
	}
	hx := newHarness(t)
	hx.mustLoad(yml(httpEntry("e", "ef", "http://127.0.0.1:"+strconv.Itoa(port)+"/mcp", nil)))
	hx.wantState("e", host.Ready)
	front := &recordingFront{offers: tools.Offers{Elicitation: true},
		answer: func(q tools.Question) (json.RawMessage, error) {
			return json.RawMessage(`{"action":"accept","content":{"username":"ada","email":"ada@example.com","password":"correct horse","newsletter":true}}`), nil
		}}
	res := hx.callWith(front, "mcp__ef__register_user", `{}`)
	if res.IsError || !strings.HasPrefix(res.Text, "Registration successful!\n\nUsername: ada\nEmail: ada@example.com\nNewsletter: Yes") {
		t.Fatalf("with a front: %+v", res)
	}
	if qs := front.asked(); len(qs) != 1 || qs[0].Tool != "mcp__ef__register_user" || !strings.Contains(string(qs[0].Params), `"requestedSchema"`) {
		t.Fatalf("questions %+v", qs)
	}
	hx.wantCall("mcp__ef__register_user", `{}`, "Registration cancelled by user.", false)
}

// freePort returns a TCP port nothing listens on at the moment.
func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}
