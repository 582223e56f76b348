package conformance_test

import (
	"bufio"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/harness-go/harness/internal/testkit/npmtest"
)

// The TypeScript SDK's client (the pinned @modelcontextprotocol/sdk,
// 2025-11-25) starts `harness serve` over stdio — the suite's scenarios
// only speak HTTP — and calls tools of the conformance kind that report
// progress and ask: the progress comes with the client's token (the SDK
// hands a call only the progress of its token), the elicitation reaches
// its handler and its answer the tool. The
// client is tests/e2e's driver (tests/e2e/testdata/tsclient.mjs).
func TestGatewayStdioRelaysToTSClient(t *testing.T) {
	t.Parallel()
	npm := npmtest.Dir(t)
	node := npmtest.Node(t)
	bin := buildPackage(t, "./harness", "harness")
	dir := t.TempDir()
	file := filepath.Join(dir, "cordis.yml")
	if err := os.WriteFile(file, []byte("- id: tools\n  name: conformance-tools\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	script, err := filepath.Abs(filepath.Join("..", "e2e", "testdata", "tsclient.mjs"))
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(node, script)
	cmd.Env = append(os.Environ(), "SDK_DIR="+filepath.Join(npm, "node_modules", "@modelcontextprotocol", "sdk"))
	var stderr strings.Builder
	cmd.Stderr = &stderr
	stdin, _ := cmd.StdinPipe()
	stdout, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		stdin.Close()
		done := make(chan struct{})
		go func() { _ = cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(20 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
		if strings.Contains(stderr.String(), "DATA RACE") {
			t.Errorf("the gateway hit a data race:\n%s", stderr.String())
		}
	})
	out := bufio.NewReader(stdout)
	do := func(c map[string]any) map[string]any {
		t.Helper()
		line, _ := json.Marshal(c)
		if _, err := stdin.Write(append(line, '\n')); err != nil {
			t.Fatal(err)
		}
		got := make(chan string, 1)
		go func() { l, _ := out.ReadString('\n'); got <- l }()
		select {
		case l := <-got:
			var m map[string]any
			if err := json.Unmarshal([]byte(l), &m); err != nil || m["error"] != nil {
				t.Fatalf("%s: %q %v\nstderr:\n%s", line, l, err, stderr.String())
			}
			return m
		case <-time.After(2 * time.Minute):
			t.Fatalf("no answer to %s\nstderr:\n%s", line, stderr.String())
			return nil
		}
	}
	env := map[string]string{}
	if raceEnabled {
		env["GORACE"] = "atexit_sleep_ms=0"
	}
	do(map[string]any{"op": "connect", "command": bin, "args": []string{"serve", "-c", file}, "cwd": dir, "env": env,
		"elicit": map[string]any{"action": "accept", "content": map[string]any{"username": "ts", "email": "ts@example.com"}}})

	// The gateway writes all three before the result. The SDK runs a
	// notification's handler a microtask later but a response's at once,
	// and drops its progress handler with the response: a progress line
	// that arrives in the same read as the result is lost by the client
	// (over HTTP each comes in a write of its own). So the last may be
	// missing, never any other.
	m := do(map[string]any{"op": "call", "name": "test_tool_with_progress", "progress": true})
	progress, _ := json.Marshal(m["progress"])
	if got := string(progress); !strings.HasPrefix(got, `[{"progress":0,"total":100},{"progress":50,"total":100}`) {
		t.Fatalf("progress the client saw: %s", got)
	}
	m = do(map[string]any{"op": "call", "name": "test_elicitation", "arguments": map[string]any{"message": "Who are you?"}})
	result, _ := json.Marshal(m["result"])
	if !strings.Contains(string(result), `User response: {\"action\":\"accept\",\"content\":{\"email\":\"ts@example.com\",\"username\":\"ts\"}}`) {
		t.Fatalf("test_elicitation: %s", result)
	}
	asked, _ := json.Marshal(do(map[string]any{"op": "elicited"})["elicited"])
	if !strings.Contains(string(asked), `"message":"Who are you?"`) {
		t.Fatalf("the client was asked %s", asked)
	}
	do(map[string]any{"op": "close"})
}
