package mcpclient

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/harness-go/harness/host/secret"
	"github.com/harness-go/harness/internal/jsonrpc"
	"github.com/harness-go/harness/internal/proc"
	"github.com/harness-go/harness/internal/testkit/hosttest"
	"github.com/harness-go/harness/internal/testkit/testlog"
	"github.com/harness-go/harness/plugins/tools"
)

// The stdio transport on its own, against servers written as shell scripts:
// the shapes a real server rarely produces on demand.

type scriptConn struct {
	*rpc
	f     *lineFraming
	watch *hosttest.LogWatch
	log   *testlog.Recorder
	notes chan *inMsg // the notifications, in order
}

// startScript runs script with /bin/sh as a stdio server, behind the rpc
// layer with no handler of the server's requests. Secrets listed are
// redacted from its stderr.
func startScript(t *testing.T, script string, secrets ...string) *scriptConn {
	t.Helper()
	return startScriptWith(t, script, nil, secrets...)
}

// startScriptWith is startScript with h answering the server's requests.
func startScriptWith(t *testing.T, script string, h requestHandler, secrets ...string) *scriptConn {
	t.Helper()
	log, rec := testlog.New(t)
	watch := hosttest.NewLogWatch(log.Handler())
	set := secret.New()
	set.Add(secrets...)
	p, err := startProcess(testSpawner(t), "/bin/sh", []string{"-c", script}, []string{"PATH=/usr/bin:/bin"}, t.TempDir(), slog.New(watch), set)
	if err != nil {
		t.Fatal(err)
	}
	f := newLineFraming(p, slog.New(watch), set)
	c := &scriptConn{f: f, watch: watch, log: rec, notes: make(chan *inMsg, 100)}
	c.rpc = newRPC(f, slog.New(watch), func(m *inMsg) { c.notes <- m }, h)
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// testSpawner returns a spawner closed at cleanup, after the cleanups
// registered later (which close the connections).
func testSpawner(t *testing.T) *proc.Spawner {
	t.Helper()
	sp, err := proc.NewSpawner()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := sp.Close(); err != nil {
			t.Errorf("closing the spawner: %v", err)
		}
	})
	return sp
}

// lost waits until the connection ends and returns why.
func (c *scriptConn) lost(t *testing.T) error {
	t.Helper()
	select {
	case <-c.Done():
		return c.Err()
	case <-time.After(20 * time.Second):
		t.Fatal("the connection did not end")
		return nil
	}
}

// SendRequest sends a request with id and method and waits for its answer.
func (c *scriptConn) SendRequest(ctx context.Context, id any, method string) (*inMsg, error) {
	rid := json.RawMessage(mustJSON(id))
	data := mustJSON(map[string]any{"jsonrpc": "2.0", "id": rid, "method": method})
	return c.call(ctx, &outMsg{data: data, id: rid, method: method})
}

// SendNotification sends a notification with method.
func (c *scriptConn) SendNotification(ctx context.Context, method string) error {
	return c.notify(ctx, &outMsg{data: mustJSON(map[string]string{"jsonrpc": "2.0", "method": method}), method: method})
}

// Stderr is the server's stderr tail.
func (c *scriptConn) Stderr() []string { return c.f.p.Stderr() }

func TestStdioConnRequestsFromTheServer(t *testing.T) {
	t.Parallel()
	// The script waits for a line (so the handler is in place), sends a
	// request, and writes our answer to stderr before it exits.
	const script = `read go
printf '%s\n' '{"jsonrpc":"2.0","id":"s1","method":"roots/list"}'
read -r reply
printf '%s\n' "$reply" >&2`
	for _, tc := range []struct {
		name    string
		handler requestHandler
		want    string
	}{
		{"answered", func(context.Context, *inMsg) (json.RawMessage, *wireError) {
			return json.RawMessage(`{"roots":[]}`), nil
		}, `{"jsonrpc":"2.0","id":"s1","result":{"roots":[]}}`},
		{"an empty result", func(context.Context, *inMsg) (json.RawMessage, *wireError) {
			return nil, nil
		}, `{"jsonrpc":"2.0","id":"s1","result":{}}`},
		{"handler error", func(context.Context, *inMsg) (json.RawMessage, *wireError) {
			return nil, &wireError{Code: -32601, Message: "no roots here"}
		}, `{"jsonrpc":"2.0","id":"s1","error":{"code":-32601,"message":"no roots here"}}`},
		{"no handler", nil, `{"jsonrpc":"2.0","id":"s1","error":{"code":-32601,"message":"method \"roots/list\" is not supported"}}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c := startScriptWith(t, script, tc.handler)
			if err := c.SendNotification(context.Background(), "go"); err != nil {
				t.Fatal(err)
			}
			err := c.lost(t)
			want := "connection lost: the server exited with status 0; last stderr: " + tc.want
			if err == nil || err.Error() != want {
				t.Fatalf("got %v\nwant %s", err, want)
			}
			if got := c.Stderr(); len(got) != 1 || got[0] != tc.want {
				t.Fatalf("stderr %q", got)
			}
		})
	}
}

func TestStdioConnRequestHandlerLifetime(t *testing.T) {
	t.Parallel()
	const script = `read go
printf '%s\n' '{"jsonrpc":"2.0","id":1,"method":"sampling/createMessage"}'
read -r next`
	t.Run("cancelled by the server: no answer", func(t *testing.T) {
		t.Parallel()
		c := startScriptWith(t, `read go
printf '%s\n' '{"jsonrpc":"2.0","id":1,"method":"sampling/createMessage"}'
printf '%s\n' '{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1}}'
read -r next
printf '%s\n' "$next" >&2`, func(ctx context.Context, _ *inMsg) (json.RawMessage, *wireError) {
			<-ctx.Done()
			return nil, &wireError{Code: -32603, Message: "cancelled"}
		})
		if err := c.SendNotification(context.Background(), "go"); err != nil {
			t.Fatal(err)
		}
		c.watch.Wait(t, waitTimeout, "the cancellation", 1, msg("", "the server cancelled its request; not answered"))
		// The next line the server reads is ours, not an answer.
		if err := c.SendNotification(context.Background(), "after"); err != nil {
			t.Fatal(err)
		}
		if err := c.lost(t); !strings.Contains(err.Error(), `"method":"after"`) {
			t.Fatalf("the server read %v", err)
		}
	})
	t.Run("the connection ends while the handler runs", func(t *testing.T) {
		t.Parallel()
		started, cancelled := make(chan struct{}), make(chan error, 1)
		c := startScriptWith(t, script, func(ctx context.Context, _ *inMsg) (json.RawMessage, *wireError) {
			close(started)
			<-ctx.Done()
			cancelled <- ctx.Err()
			return nil, nil
		})
		if err := c.SendNotification(context.Background(), "go"); err != nil {
			t.Fatal(err)
		}
		select {
		case <-started:
		case <-time.After(20 * time.Second):
			t.Fatal("the handler did not start")
		}
		if err := c.Close(); err != nil {
			t.Fatal(err)
		}
		select {
		case err := <-cancelled:
			if !errors.Is(err, context.Canceled) {
				t.Fatal(err)
			}
		case <-time.After(20 * time.Second):
			t.Fatal("the handler was not cancelled")
		}
	})
}

// A notifications/cancelled from the server naming a request of ours ends
// that request with an error saying so.
func TestStdioConnServerCancelsOurRequest(t *testing.T) {
	t.Parallel()
	c := startScript(t, `read r
printf '%s\n' '{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"r1","reason":"too busy"}}'
exec cat >/dev/null`)
	resp, err := c.SendRequest(context.Background(), "r1", "tools/call")
	if err != nil || resp.Error == nil || resp.Error.Message != "the server cancelled the request: too busy" {
		t.Fatalf("got %+v, %v", resp, err)
	}
}

func TestStdioConnDispatch(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("g", 300)
	c := startScript(t, `printf '%s\n' 'not json at all' '{"jsonrpc":"2.0"}' '`+long+`' '' '{"jsonrpc":"2.0","id":"nobody","result":{}}' \
  '{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"hello"}}' \
  '{"jsonrpc":"2.0","id":null,"method":"notifications/progress","params":{"progress":1}}' \
  '{"jsonrpc":"2.0","method":"notifications/bad","params":5}' \
  '{"jsonrpc":"2.0","id":{"an":"object"},"method":"ping"}' \
  '{"jsonrpc":"2.0","method":"notifications/done"}'
exec cat >/dev/null`)
	var methods []string
	for len(methods) < 3 {
		select {
		case m := <-c.notes:
			methods = append(methods, m.Method)
		case <-time.After(20 * time.Second):
			t.Fatalf("notifications so far: %q", methods)
		}
	}
	if want := []string{"notifications/message", "notifications/progress", "notifications/done"}; strings.Join(methods, " ") != strings.Join(want, " ") {
		t.Fatalf("notifications %q, want %q", methods, want)
	}
	// Every line that is not JSON-RPC was logged (clipped), and ignored;
	// blank lines are skipped silently.
	warned := c.watch.Find(msg("", "server wrote a line that is not JSON-RPC to stdout; ignored"))
	line := func(i int) string { return strings.TrimSuffix(warned[i].Attrs["line"], `\n`) } // escaped by safe.Line
	if len(warned) != 5 || line(0) != "not json at all" || line(1) != `{"jsonrpc":"2.0"}` ||
		warned[2].Attrs["line"] != strings.Repeat("g", 200)+"…" || warned[2].Attrs["count"] != "3" ||
		!strings.Contains(line(3), "notifications/bad") || !strings.Contains(line(4), `"an":"object"`) {
		t.Fatalf("warnings %+v", warned)
	}
}

func TestStdioConnResponses(t *testing.T) {
	t.Parallel()
	// The script answers the requests it reads, in order, with canned
	// lines: ids in other spellings, an error, and one it never answers.
	c := startScript(t, `read a; printf '%s\n' '{"jsonrpc":"2.0","id":7.0,"result":{"n":7}}'
read b; printf '%s\n' '{"id" : "x\u0031", "jsonrpc":"2.0", "error":{"code":-32602,"message":"bad params"}}'
read c; read d; printf '%s\n' '{"jsonrpc":"2.0","id":"late","result":{}}' '{"jsonrpc":"2.0","id":"after","result":{"ok":true}}'
exec cat >/dev/null`)
	ctx := context.Background()
	resp, err := c.SendRequest(ctx, 7, "a")
	if err != nil || string(resp.Result) != `{"n":7}` {
		t.Fatalf("numeric id: %+v, %v", resp, err)
	}
	resp, err = c.SendRequest(ctx, "x1", "b")
	if err != nil || resp.Error == nil || resp.Error.Code != -32602 || resp.Error.Message != "bad params" || resp.key() != idKey([]byte(`"x1"`)) {
		t.Fatalf("escaped string id and an error: %+v, %v", resp, err)
	}
	// A request we give up on: its answer, when it comes, is dropped.
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := c.SendRequest(cctx, "late", "c"); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled request: %v", err)
	}
	resp, err = c.SendRequest(ctx, "after", "d")
	if err != nil || string(resp.Result) != `{"ok":true}` {
		t.Fatalf("after a dropped answer: %+v, %v", resp, err)
	}
}

func TestStdioConnOversizedMessage(t *testing.T) {
	if testing.Short() {
		t.Skip("writes 64 MiB through a pipe")
	}
	t.Parallel()
	// An answer over the limit fails its request, and the stream goes on; a
	// non-JSON line over the limit is skipped.
	size := MaxMessageBytes + 10
	c := startScript(t, fmt.Sprintf(`read a
printf '{"jsonrpc":"2.0","id":"big","result":"'; head -c %d /dev/zero | tr '\0' x; printf '"}\n'
head -c %d /dev/zero | tr '\0' y; printf '\n'
read b; printf '%%s\n' '{"jsonrpc":"2.0","id":"after","result":{}}'
exec cat >/dev/null`, size, size))
	ctx := context.Background()
	if _, err := c.SendRequest(ctx, "big", "a"); !errors.Is(err, errTooLarge) {
		t.Fatalf("oversized answer: %v", err)
	}
	if resp, err := c.SendRequest(ctx, "after", "b"); err != nil || string(resp.Result) != `{}` {
		t.Fatalf("after the oversized lines: %+v, %v", resp, err)
	}
	warned := c.watch.Find(msg("", "server sent a message over the size limit; discarded"))
	if len(warned) != 2 || !strings.HasPrefix(warned[0].Attrs["start"], `{"jsonrpc":"2.0","id":"big","result":"xxx`) || !strings.HasPrefix(warned[1].Attrs["start"], "yyy") {
		t.Fatalf("warnings %+v", warned)
	}
	if errTooLarge.Error() != "the server's response exceeded the 32 MiB message limit" {
		t.Fatal(errTooLarge)
	}
}

func TestStdioConnEnds(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, script string
		secrets      []string
		want         string
	}{
		{"exit 0", `exit 0`, nil, "connection lost: the server exited with status 0"},
		{"exit with a status and stderr", `echo 'first' >&2; echo 'second' >&2; echo 'third' >&2; echo 'fourth' >&2; exit 9`, nil,
			"connection lost: the server exited with status 9; last stderr: second | third | fourth"},
		{"killed", `kill -KILL $$`, nil, "connection lost: the server was killed by signal killed"},
		{"stdout closed, still running", `exec 1>&-; exec sleep 30`, nil, "connection lost: the server closed its stdout"},
		{"a grandchild keeps stderr open", `echo 'going' >&2; sleep 30 </dev/null >/dev/null & exit 3`, nil,
			"connection lost: the server exited with status 3; last stderr: going"},
		{"escapes and secrets in stderr", `printf '\033[2J%s\n' 'key=hunter2-secret' >&2; exit 1`, []string{"hunter2-secret"},
			`connection lost: the server exited with status 1; last stderr: \x1b[2Jkey=<redacted>`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c := startScript(t, tc.script, tc.secrets...)
			err := c.lost(t)
			var lost *ConnectionLostError
			if !errors.As(err, &lost) || err.Error() != tc.want {
				t.Fatalf("got %v\nwant %s", err, tc.want)
			}
			// Everything fails the same way from now on.
			if _, err := c.SendRequest(context.Background(), "x", "ping"); err == nil || err.Error() != tc.want {
				t.Fatalf("SendRequest after the end: %v", err)
			}
			if err := c.SendNotification(context.Background(), "x"); err == nil || err.Error() != tc.want {
				t.Fatalf("SendNotification after the end: %v", err)
			}
		})
	}
}

func TestStdioConnStderrTail(t *testing.T) {
	t.Parallel()
	c := startScript(t, `i=1; while [ $i -le 45 ]; do echo "line $i" >&2; i=$((i+1)); done
head -c 3000 /dev/zero | tr '\0' e >&2; printf '\n' >&2
printf 'no newline at the end' >&2; exit 0`)
	c.lost(t)
	lines := c.Stderr()
	if len(lines) != stderrLines {
		t.Fatalf("%d lines kept, want %d", len(lines), stderrLines)
	}
	if lines[0] != "line 8" || lines[37] != "line 45" || lines[38] != strings.Repeat("e", stderrLineBytes)+"…" || lines[39] != "no newline at the end" {
		t.Fatalf("tail: first %q, then %q %q %q", lines[0], lines[37], clip(lines[38], 10), lines[39])
	}
}

func TestStdioConnWriteToAClosedStdin(t *testing.T) {
	t.Parallel()
	c := startScript(t, `exec 0<&-; echo ready >&2; exec sleep 30`)
	c.watch.Wait(t, waitTimeout, "the server's ready line", 1, msg("", "server stderr"))
	_, err := c.SendRequest(context.Background(), "r1", "ping")
	// The server runs on: the broken pipe is the reason, with its last words.
	if err == nil || err.Error() != "connection lost: write to the server: write |1: broken pipe; last stderr: ready" {
		t.Fatalf("write to a closed pipe: %v", err)
	}
	if lost := c.lost(t); !errors.Is(err, lost) || !notSent(err) {
		t.Fatalf("the connection ended with %v, want the write error", lost)
	}
	start := time.Now()
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if err := c.Close(); err != nil { // again: nothing more to do
		t.Fatal(err)
	}
	if d := time.Since(start); d > stdinGrace+termGrace {
		t.Fatalf("close took %s", d)
	}
}

// A server that exits at start: whether our first write finds its stdin
// closed or its stdout's end is read first, the reason is its exit status
// and its last words, never a broken pipe.
func TestStdioConnServerExitingAtStart(t *testing.T) {
	t.Parallel()
	for i := 0; i < 5; i++ {
		c := startScript(t, `exec 0<&-; echo boom >&2; exit 7`)
		_, err := c.SendRequest(context.Background(), "r1", "initialize")
		if err == nil || !strings.Contains(err.Error(), "the server exited with status 7; last stderr: boom") {
			t.Fatalf("run %d: %v", i, err)
		}
	}
}

// A server that exits while a process it started holds its stdout: no end
// of stdout comes, yet the connection ends with the exit status within
// about exitWait (it waited for the call's timeout).
func TestStdioConnExitWithStdoutHeld(t *testing.T) {
	t.Parallel()
	c := startScript(t, `sleep 30 & echo bye >&2; exit 3`)
	select {
	case <-c.Done():
	case <-time.After(waitTimeout):
		t.Fatal("the connection outlived its server")
	}
	if err := c.Err(); err == nil || !strings.Contains(err.Error(), "the server exited with status 3; last stderr: bye") {
		t.Fatalf("the connection ended with %v", err)
	}
	// An exit with status 0 is not taken for the end: a wrapper may leave
	// its server on the pipes.
	c = startScript(t, `sleep 30 & exit 0`)
	<-c.f.p.exited
	select {
	case <-c.Done():
		t.Fatalf("a wrapper's exit 0 ended the connection: %v", c.Err())
	case <-time.After(2 * exitWait):
	}
}

// A daemon that left the server's group and dropped its tag holds the
// server's stderr: Close still ends within its ladder, and stops reading.
func TestStdioConnCloseWithAPipeHeldOutside(t *testing.T) {
	t.Parallel()
	c := startScript(t, `env -i /bin/sh -c 'setsid sleep 30 </dev/null >&2 & echo $!' >&2; exec sleep 30`)
	rec := c.watch.Wait(t, waitTimeout, "the daemon's pid", 1, msg("", "server stderr"))
	var pid int
	if _, err := fmt.Sscan(rec[0].Attrs["line"], &pid); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { reapDaemon(pid) })
	start := time.Now()
	_ = c.Close()
	if d := time.Since(start); d > stdinGrace+termGrace+2*time.Second {
		t.Fatalf("Close took %s with the server's stderr held by a daemon", d)
	}
}

func TestStdioConnCloseReapsTheGroup(t *testing.T) {
	t.Parallel()
	// The server exits at once, leaving a grandchild in its group.
	c := startScript(t, `sleep 30 </dev/null >/dev/null 2>&1 & echo $! >&2; exec sleep 30`)
	rec := c.watch.Wait(t, waitTimeout, "the grandchild's pid", 1, msg("", "server stderr"))
	var pid int
	if _, err := fmt.Sscan(rec[0].Attrs["line"], &pid); err != nil {
		t.Fatal(err)
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if running(pid) {
		t.Fatalf("grandchild %d outlived Close", pid)
	}
	if running(c.f.p.PID()) {
		t.Fatalf("server %d outlived Close", c.f.p.PID())
	}
}

func TestDescribeExit(t *testing.T) {
	t.Parallel()
	if got := describeExit(nil); got != "the server exited with status 0" {
		t.Fatal(got)
	}
	if got := describeExit(errors.New("wait: no child")); got != "the server exited: wait: no child" {
		t.Fatal(got)
	}
	err := exec.Command("/bin/sh", "-c", "exit 4").Run()
	if got := describeExit(err); got != "the server exited with status 4" {
		t.Fatal(got)
	}
}

func TestReadLine(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, in   string
		limit      int
		line, head string
		wantErr    bool
		afterwards string
	}{
		{"short", "abc\nrest\n", 100, "abc\n", "", false, "rest\n"},
		{"longer than the buffer", strings.Repeat("a", 40) + "\nrest\n", 100, strings.Repeat("a", 40) + "\n", "", false, "rest\n"},
		{"over the limit", strings.Repeat("b", 60) + "\nrest\n", 50, "", strings.Repeat("b", 60) + "\n", false, "rest\n"},
		{"over the limit at the end", strings.Repeat("c", 60), 50, "", strings.Repeat("c", 60), true, ""},
		{"far over the limit", strings.Repeat("d", 100) + "\nrest\n", 50, "", strings.Repeat("d", 64), false, "rest\n"},
		{"head kept to 512 bytes", strings.Repeat("e", 1000) + "\nrest\n", 600, "", strings.Repeat("e", 512), false, "rest\n"},
		{"no newline", "tail", 100, "tail", "", true, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			lr := newLineReader(strings.NewReader(tc.in), 16)
			line, head, err := lr.next(tc.limit, 512)
			if string(line) != tc.line || string(head) != tc.head || (err != nil) != tc.wantErr {
				t.Fatalf("readLine = %q, %q, %v", line, head, err)
			}
			if tc.afterwards != "" {
				next, _, _ := lr.next(tc.limit, 512)
				if string(next) != tc.afterwards {
					t.Fatalf("next line %q", next)
				}
			}
		})
	}
}

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

func TestTailAndClip(t *testing.T) {
	t.Parallel()
	tl := newTail(3)
	for i := range 5 {
		tl.add(fmt.Sprint(i))
	}
	if got := strings.Join(tl.lines(), ","); got != "2,3,4" {
		t.Fatalf("tail %q", got)
	}
	if clip("short", 10) != "short" || clip("0123456789abc", 10) != "0123456789…" {
		t.Fatal("clip")
	}
}

func TestStdioConnLostWhileWaiting(t *testing.T) {
	t.Parallel()
	c := startScript(t, `read request; echo 'gave up' >&2; exit 5`)
	_, err := c.SendRequest(context.Background(), "r1", "tools/list")
	if want := "connection lost: the server exited with status 5; last stderr: gave up"; err == nil || err.Error() != want {
		t.Fatalf("got %v, want %s", err, want)
	}
}

func TestStdioConnGrandchildIgnoringSIGTERM(t *testing.T) {
	t.Parallel()
	// The server exits at once; its grandchild ignores SIGTERM: Close
	// kills it after the grace period.
	c := startScript(t, `sh -c 'trap "" TERM; echo $$ >&2; exec sleep 30' </dev/null >/dev/null 2>&2 &
read ready; exit 0`)
	rec := c.watch.Wait(t, waitTimeout, "the grandchild's pid", 1, msg("", "server stderr"))
	var pid int
	if _, err := fmt.Sscan(rec[0].Attrs["line"], &pid); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if running(pid) {
		t.Fatalf("grandchild %d outlived Close", pid)
	}
	if d := time.Since(start); d > stdinGrace+2*termGrace+killGrace {
		t.Fatalf("close took %s", d)
	}
}

func TestIDKeyOfOurIDs(t *testing.T) {
	t.Parallel()
	// The key of an id we send equals the canonical form of its echo.
	for _, tc := range []struct{ sent, echo string }{
		{`"h12"`, `"h12"`}, {`3`, `3.0`}, {`"ünï"`, `"\u00fcn\u00ef"`}, {`"with \"quotes\""`, `"with \u0022quotes\u0022"`},
	} {
		if idKey([]byte(tc.sent)) != jsonrpc.IDKey([]byte(tc.echo)) {
			t.Errorf("id %s: key %q, echo %s %q", tc.sent, idKey([]byte(tc.sent)), tc.echo, jsonrpc.IDKey([]byte(tc.echo)))
		}
	}
}

// interrupting returns its parts one read at a time, with a deadline error
// between them.
type interrupting struct {
	parts []string
	gap   bool
}

func (r *interrupting) Read(p []byte) (int, error) {
	if r.gap {
		r.gap = false
		return 0, os.ErrDeadlineExceeded
	}
	if len(r.parts) == 0 {
		return 0, io.EOF
	}
	n := copy(p, r.parts[0])
	if n < len(r.parts[0]) {
		r.parts[0] = r.parts[0][n:]
	} else {
		r.parts = r.parts[1:]
	}
	r.gap = true
	return n, nil
}

// A read interrupted by a deadline (a caller kicking the reader goroutine
// out: the read path) loses nothing: the line goes on at the next call — an
// ordinary line, and one over the limit being skipped.
func TestLineReaderResumes(t *testing.T) {
	t.Parallel()
	over := strings.Repeat("x", 40)
	lr := newLineReader(&interrupting{parts: []string{`{"a":`, `1}` + "\n" + `{"b"`, `:2}` + "\n", over[:20], over[20:] + "\nafter\n"}}, 16)
	var got []string
	for range 20 {
		line, head, err := lr.next(30, 8)
		switch {
		case head != nil:
			got = append(got, "long:"+string(head))
		case len(line) > 0:
			got = append(got, string(line))
		}
		if err != nil && !errors.Is(err, os.ErrDeadlineExceeded) {
			break
		}
	}
	want := []string{"{\"a\":1}\n", "{\"b\":2}\n", "long:xxxxxxxx", "after\n"}
	if !slices.Equal(got, want) {
		t.Fatalf("lines %q, want %q", got, want)
	}
}

// Lines longer than the buffer come whole, each its own, and the memory of
// one is the next one's: a server whose every result is larger than the
// buffer costs no allocation per line to read.
func TestLineReaderLongLines(t *testing.T) {
	var in strings.Builder
	var want []string
	for i := range 50 {
		line := strings.Repeat(string(rune('a'+i%26)), 40+i%7) + "\n"
		want = append(want, line)
		in.WriteString(line)
		if i%5 == 0 {
			want = append(want, "short\n")
			in.WriteString("short\n")
		}
	}
	lr := newLineReader(strings.NewReader(in.String()), 16)
	for i, w := range want {
		line, head, err := lr.next(1000, 8)
		if err != nil || head != nil || string(line) != w {
			t.Fatalf("line %d = %q (head %q, %v), want %q", i, line, head, err, w)
		}
	}
	long := strings.Repeat("z", 100) + "\n"
	r := strings.NewReader("")
	lr = newLineReader(r, 16)
	if allocs := testing.AllocsPerRun(100, func() {
		r.Reset(long)
		if line, _, _ := lr.next(1000, 8); string(line) != long {
			t.Fatalf("got %q", line)
		}
	}); allocs != 0 {
		t.Errorf("%v allocations a long line, want 0", allocs)
	}
}

// The read path at work: between calls the reader goroutine reads (a
// notification after each answer reaches us while no caller waits), and
// the next caller takes the right to read from it, every time.
func TestStdioConnNotificationsBetweenCalls(t *testing.T) {
	t.Parallel()
	c := startScript(t, `while IFS= read -r l; do id=${l#*\"id\":}; id=${id%%,*}; printf '{"jsonrpc":"2.0","id":%s,"result":{}}\n' "$id"; printf '%s\n' '{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"between"}}'; done`)
	if c.path == nil && runtime.GOOS != "windows" {
		t.Fatal("a pipe without read deadlines: no read path")
	}
	for i := range 20 {
		if resp, err := c.SendRequest(context.Background(), i, "m"); err != nil || resp.key() != idKey(mustJSON(i)) {
			t.Fatalf("call %d: %+v, %v", i, resp, err)
		}
		select {
		case <-c.notes:
		case <-time.After(waitTimeout):
			t.Fatalf("the notification after call %d did not come", i)
		}
	}
}

// burstWrites is a caller of started requests that writes what their
// results would make it write as a connection's caller does: held for the
// result's burst (tools.Held), or now. writes gets each write, held ones
// prefixed "flush:".
type burstWrites struct {
	mu     sync.Mutex
	held   tools.Held
	writes chan string
}

func (w *burstWrites) flush() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.writes <- "flush:" + string(w.held.Bytes())
	w.held.Reset()
}

func (w *burstWrites) write(b *tools.Burst, s string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.held.Hold(b, w.flush, []byte(s)) {
		w.writes <- string(w.held.Bytes()) + s
		w.held.Reset()
	}
}

// Responses read together are a burst: what their callers write is held
// to its end — which comes before a message that is not a response is
// handed on — and a response read alone is written at once.
func TestStdioConnBurstOfResponses(t *testing.T) {
	t.Parallel()
	// One printf: one write, read at once.
	c := startScript(t, `read a; read b; read c; printf '%s\n' '{"jsonrpc":"2.0","id":"a","result":{}}' '{"jsonrpc":"2.0","id":"b","result":{}}' \
  '{"jsonrpc":"2.0","method":"notifications/message","params":{}}' '{"jsonrpc":"2.0","id":"c","result":{}}'
exec cat >/dev/null`)
	w := &burstWrites{writes: make(chan string, 8)}
	for _, id := range []string{"a", "b", "c"} {
		rid := json.RawMessage(`"` + id + `"`)
		key := idKey(rid)
		if !c.register(key, respondFunc(func(m *inMsg, err error) {
			if err != nil {
				t.Errorf("%s: %v", id, err)
			}
			w.write(c.resultBurst(), id)
		})) {
			t.Fatal("not registered")
		}
		if _, err := c.send(context.Background(), key, &outMsg{data: mustJSON(map[string]any{"jsonrpc": "2.0", "id": rid, "method": "x"}), id: rid, method: "x"}); err != nil {
			t.Fatal(err)
		}
	}
	select {
	case <-c.notes:
	case <-time.After(waitTimeout):
		t.Fatal("no notification")
	}
	// The notification was handed on after the burst before it ended.
	select {
	case got := <-w.writes:
		if got != "flush:ab" {
			t.Fatalf("first write %q, want a and b held, then flushed", got)
		}
	default:
		t.Fatal("the notification was handed on before the burst before it ended")
	}
	select {
	case got := <-w.writes:
		if got != "c" {
			t.Fatalf("second write %q, want c at once", got)
		}
	case <-time.After(waitTimeout):
		t.Fatal("c was not written")
	}
}

// A request longer than 64 KiB (a file written through a tool) reuses the
// framing's write buffer: none is made for each one.
func TestStdioConnLongRequestsReuseTheWriteBuffer(t *testing.T) {
	c := startScript(t, `cat >/dev/null`)
	data := []byte(`{"jsonrpc":"2.0","method":"notifications/x","params":{"text":"` + strings.Repeat("z", 100<<10) + `"}}`)
	m := &outMsg{data: data, method: "notifications/x"}
	ctx := context.Background()
	if err := c.f.Write(ctx, m); err != nil {
		t.Fatal(err)
	}
	if allocs := testing.AllocsPerRun(20, func() {
		if err := c.f.Write(ctx, m); err != nil {
			t.Fatal(err)
		}
	}); allocs != 0 {
		t.Errorf("%v allocations a request of 100 KiB, want 0", allocs)
	}
}

// Large messages are read out of a buffer the next read reuses: a
// response that a caller waits for, and the notifications after it, stay
// whole after the reader has read on (more than the read buffer holds),
// and a started request's responder sees its result whole while it runs.
func TestStdioConnLargeMessagesOutliveTheRead(t *testing.T) {
	t.Parallel()
	big := func(c byte) string { return strings.Repeat(string(c), 20<<10) }
	// The script makes its lines itself: 200 KB would not pass as an
	// argument.
	script := `big() { head -c 20480 /dev/zero | tr '\0' "$1"; }
read waited
printf '{"jsonrpc":"2.0","id":"w1","result":{"text":"%s"}}\n' "$(big w)"
for c in a b c d e; do printf '{"jsonrpc":"2.0","method":"notifications/message","params":{"data":"%s"}}\n' "$(big $c)"; done
read started
for n in 1 2 3; do printf '{"jsonrpc":"2.0","id":"s%s","result":{"text":"%s"}}\n' $n "$(big $n)"; done
cat >/dev/null
`
	c := startScript(t, script)

	resp, err := c.SendRequest(context.Background(), "w1", "tools/call")
	if err != nil {
		t.Fatal(err)
	}
	var notes []*inMsg
	for range 5 {
		select {
		case n := <-c.notes:
			notes = append(notes, n)
		case <-time.After(20 * time.Second):
			t.Fatal("the notifications did not come")
		}
	}
	if want := `{"text":"` + big('w') + `"}`; string(resp.Result) != want {
		t.Errorf("the waited-for result changed after the reader read on: %.40q…", resp.Result)
	}
	for i, n := range notes {
		if want := `{"data":"` + big("abcde"[i]) + `"}`; string(n.Params) != want {
			t.Errorf("notification %d changed after the reader read on: %.40q…", i, n.Params)
		}
	}

	// Started requests: each responder checks its result as it runs.
	got := make(chan string, 3)
	for _, id := range []string{"s1", "s2", "s3"} {
		rid := json.RawMessage(`"` + id + `"`)
		want := `{"text":"` + big(id[1]) + `"}`
		ok := c.register(idKey(rid), respondFunc(func(m *inMsg, err error) {
			switch {
			case err != nil:
				got <- err.Error()
			case string(m.Result) != want:
				got <- fmt.Sprintf("%s: %.40q…", id, m.Result)
			default:
				got <- ""
			}
		}))
		if !ok {
			t.Fatal("the connection ended")
		}
		// The server reads one line for all three: the first starts them.
		if id == "s1" {
			data := mustJSON(map[string]any{"jsonrpc": "2.0", "id": rid, "method": "tools/call"})
			if _, err := c.send(context.Background(), idKey(rid), &outMsg{data: data, id: rid, method: "tools/call"}); err != nil {
				t.Fatal(err)
			}
		}
	}
	for range 3 {
		select {
		case msg := <-got:
			if msg != "" {
				t.Error(msg)
			}
		case <-time.After(20 * time.Second):
			t.Fatal("a started request got no response")
		}
	}
}
