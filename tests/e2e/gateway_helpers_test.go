package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/harness-go/harness/internal/testkit/npmtest"
	"github.com/harness-go/harness/internal/testkit/proctest"
	"github.com/mark3labs/mcp-go/client/transport"
)

// tsClient drives testdata/tsclient.mjs: the TypeScript SDK's client, one
// JSON command and one JSON answer per line.
type tsClient struct {
	t      *testing.T
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	out    *bufio.Reader
	stderr *lockedBuffer
}

// startTS starts the TypeScript client (node and the pinned SDK from
// internal/testkit/npmtest: without them the test skips, in CI it fails).
func startTS(t *testing.T) *tsClient {
	t.Helper()
	npm := npmtest.Dir(t)
	node := npmtest.Node(t)
	cmd := exec.Command(node, filepath.Join(repoRoot, "tests", "e2e", "testdata", "tsclient.mjs"))
	cmd.Env = append(environ(nil, nil), "SDK_DIR="+filepath.Join(npm, "node_modules", "@modelcontextprotocol", "sdk"))
	stderr := &lockedBuffer{}
	cmd.Stderr = stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	c := &tsClient{t: t, cmd: cmd, stdin: stdin, out: bufio.NewReaderSize(stdout, 1<<20), stderr: stderr}
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
		proctest.NoRaceOrPanic(t, c.stderr.String())
	})
	return c
}

// do sends one command and returns its answer; an answer carrying "error"
// is returned too (see mustDo).
func (c *tsClient) do(cmd map[string]any) map[string]any {
	c.t.Helper()
	line, _ := json.Marshal(cmd)
	if _, err := c.stdin.Write(append(line, '\n')); err != nil {
		c.t.Fatalf("ts client: %v\nstderr:\n%s", err, c.stderr.String())
	}
	type answer struct {
		line string
		err  error
	}
	ch := make(chan answer, 1)
	go func() {
		l, err := c.out.ReadString('\n')
		ch <- answer{l, err}
	}()
	select {
	case a := <-ch:
		if a.err != nil {
			c.t.Fatalf("ts client %s: %v\nstderr:\n%s", line, a.err, c.stderr.String())
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(a.line), &m); err != nil {
			c.t.Fatalf("ts client answered %q: %v", a.line, err)
		}
		return m
	case <-time.After(waitTimeout):
		c.t.Fatalf("ts client: no answer to %s within %s\nstderr:\n%s", line, waitTimeout, c.stderr.String())
		return nil
	}
}

// mustDo is do, failing the test on an error answer.
func (c *tsClient) mustDo(cmd map[string]any) map[string]any {
	c.t.Helper()
	m := c.do(cmd)
	if e, ok := m["error"]; ok {
		c.t.Fatalf("ts client %v: %v\nstderr:\n%s", cmd, e, c.stderr.String())
	}
	return m
}

// names lists the tools' names.
func (c *tsClient) names() []string {
	c.t.Helper()
	var out []string
	for _, tool := range c.mustDo(map[string]any{"op": "list"})["tools"].([]any) {
		out = append(out, tool.(map[string]any)["name"].(string))
	}
	return out
}

// call returns the result of a tool call as JSON.
func (c *tsClient) call(name string, args map[string]any) string {
	c.t.Helper()
	m := c.mustDo(map[string]any{"op": "call", "name": name, "arguments": args})
	b, _ := json.Marshal(m["result"])
	return string(b)
}

// waitChanges waits until n list_changed notifications have arrived.
func (c *tsClient) waitChanges(n int) {
	c.t.Helper()
	c.mustDo(map[string]any{"op": "changes", "atLeast": n})
}

// lockedBuffer collects a process's stderr while the test reads it.
type lockedBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// serving is a `harness serve --http` process.
type serving struct {
	url    string
	stderr *stream
	cmd    *exec.Cmd
}

// serveHTTP starts `harness serve --http 127.0.0.1:0 args…` in dir and
// waits for its "listening URL" line.
func serveHTTP(t *testing.T, rc runConfig, args ...string) *serving {
	t.Helper()
	if !contains(args, "--http") {
		args = append([]string{"--http", "127.0.0.1:0"}, args...)
	}
	s := startSession(t, rc, append([]string{"serve"}, args...)...)
	url, ok := listeningURL(s.out)
	if !ok {
		t.Fatalf("harness serve --http did not listen\n%s", s.dump())
	}
	return &serving{url: url, stderr: s.err, cmd: s.cmd}
}

// stdioServe is an mcp-go stdio transport that starts `harness serve
// args…` itself. The harness's stderr is read line by line; at cleanup
// (after the test's own defers have closed the client) it is checked for
// data races and given to the sweep, as startSession does.
func stdioServe(t *testing.T, args ...string) *transport.Stdio {
	t.Helper()
	stderrR, stderrW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	stderr := proctest.ReadLines(stderrR, 0)
	args = append([]string{"serve"}, args...)
	t.Cleanup(func() {
		stderrW.Close() // the test's copy: the pipe ends once no process holds it
		if !stderr.WaitClosed(waitTimeout) {
			t.Errorf("`harness %s` is gone but its stderr stayed open (a leaked process holds it)\n%s", strings.Join(args, " "), stderr.Text())
		}
		stderrR.Close()
		proctest.NoRaceOrPanic(t, stderr.Text())
		printed.Output(fmt.Sprintf("the stdio gateway `harness %s` of %s", strings.Join(args, " "), t.Name()), stderr.Text())
	})
	return transport.NewStdioWithOptions(harnessBin, environ(nil, nil), args,
		transport.WithCommandFunc(func(ctx context.Context, command string, env, args []string) (*exec.Cmd, error) {
			cmd := exec.CommandContext(ctx, command, args...)
			cmd.Env = env
			cmd.Stderr = stderrW
			return cmd, nil
		}))
}
