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
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/harness-go/harness/host/secret"
	"github.com/harness-go/harness/internal/hosttest"
	"github.com/harness-go/harness/internal/jsonrpc"
	"github.com/harness-go/harness/internal/proc"
	"github.com/harness-go/harness/internal/testlog"
)

// The stdio transport on its own, against servers written as shell scripts:
// the shapes a real server rarely produces on demand.

type scriptConn struct {
	*stdioConn
	watch *hosttest.LogWatch
	log   *testlog.Recorder
}

// startScript runs script with /bin/sh as a stdio server. Secrets listed are
// redacted from its stderr.
func startScript(t *testing.T, script string, secrets ...string) *scriptConn {
	t.Helper()
	log, rec := testlog.New(t)
	watch := hosttest.NewLogWatch(log.Handler())
	set := secret.New()
	set.Add(secrets...)
	c, err := startStdio(testSpawner(t), "/bin/sh", []string{"-c", script}, []string{"PATH=/usr/bin:/bin"}, t.TempDir(), slog.New(watch), set)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return &scriptConn{stdioConn: c, watch: watch, log: rec}
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

func note(method string) mcp.JSONRPCNotification {
	return mcp.JSONRPCNotification{JSONRPC: mcp.JSONRPC_VERSION, Notification: mcp.Notification{Method: method}}
}

func request(id any, method string) transport.JSONRPCRequest {
	return transport.JSONRPCRequest{JSONRPC: mcp.JSONRPC_VERSION, ID: mcp.NewRequestId(id), Method: method}
}

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
		handler transport.RequestHandler
		want    string
	}{
		{"answered", func(_ context.Context, req transport.JSONRPCRequest) (*transport.JSONRPCResponse, error) {
			return transport.NewJSONRPCResultResponse(req.ID, json.RawMessage(`{"roots":[]}`)), nil
		}, `{"jsonrpc":"2.0","id":"s1","result":{"roots":[]}}`},
		{"handler error", func(context.Context, transport.JSONRPCRequest) (*transport.JSONRPCResponse, error) {
			return nil, errors.New("no roots here")
		}, `{"jsonrpc":"2.0","id":"s1","error":{"code":-32601,"message":"no roots here"}}`},
		{"no handler", nil, `{"jsonrpc":"2.0","id":"s1","error":{"code":-32601,"message":"method \"roots/list\" is not supported"}}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c := startScript(t, script)
			if tc.handler != nil {
				c.SetRequestHandler(tc.handler)
			}
			if err := c.SendNotification(context.Background(), note("go")); err != nil {
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
	t.Run("no answer", func(t *testing.T) {
		t.Parallel()
		c := startScript(t, script+"\nprintf '%s\\n' \"$next\" >&2")
		c.SetRequestHandler(func(context.Context, transport.JSONRPCRequest) (*transport.JSONRPCResponse, error) {
			return nil, nil // nothing to send back
		})
		if err := c.SendNotification(context.Background(), note("go")); err != nil {
			t.Fatal(err)
		}
		// The next line the server reads is ours, not an answer.
		if err := c.SendNotification(context.Background(), note("after")); err != nil {
			t.Fatal(err)
		}
		if err := c.lost(t); !strings.Contains(err.Error(), `"method":"after"`) {
			t.Fatalf("the server read %v", err)
		}
	})
	t.Run("the connection ends while the handler runs", func(t *testing.T) {
		t.Parallel()
		c := startScript(t, script)
		started, cancelled := make(chan struct{}), make(chan error, 1)
		c.SetRequestHandler(func(ctx context.Context, _ transport.JSONRPCRequest) (*transport.JSONRPCResponse, error) {
			close(started)
			<-ctx.Done()
			cancelled <- ctx.Err()
			return nil, ctx.Err()
		})
		if err := c.SendNotification(context.Background(), note("go")); err != nil {
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
	got := make(chan string, 10)
	c.SetNotificationHandler(func(n mcp.JSONRPCNotification) { got <- n.Method })
	var methods []string
	for len(methods) < 3 {
		select {
		case m := <-got:
			methods = append(methods, m)
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
	if c.GetSessionId() != "" || c.Start(context.Background()) != nil {
		t.Fatal("stdio has no session and nothing to start")
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
	resp, err := c.SendRequest(ctx, request(int64(7), "a"))
	if err != nil || string(resp.Result) != `{"n":7}` {
		t.Fatalf("numeric id: %+v, %v", resp, err)
	}
	resp, err = c.SendRequest(ctx, request("x1", "b"))
	if err != nil || resp.Error == nil || resp.Error.Code != -32602 || resp.Error.Message != "bad params" || resp.ID.Value() != "x1" {
		t.Fatalf("escaped string id and an error: %+v, %v", resp, err)
	}
	// A request we give up on: its answer, when it comes, is dropped.
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := c.SendRequest(cctx, request("late", "c")); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled request: %v", err)
	}
	resp, err = c.SendRequest(ctx, request("after", "d"))
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
	if _, err := c.SendRequest(ctx, request("big", "a")); !errors.Is(err, errTooLarge) {
		t.Fatalf("oversized answer: %v", err)
	}
	if resp, err := c.SendRequest(ctx, request("after", "b")); err != nil || string(resp.Result) != `{}` {
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
			if _, err := c.SendRequest(context.Background(), request("x", "ping")); err == nil || err.Error() != tc.want {
				t.Fatalf("SendRequest after the end: %v", err)
			}
			if err := c.SendNotification(context.Background(), note("x")); err == nil || err.Error() != tc.want {
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
	_, err := c.SendRequest(context.Background(), request("r1", "ping"))
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
		_, err := c.SendRequest(context.Background(), request("r1", "initialize"))
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
	<-c.exited
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
	if running(c.PID()) {
		t.Fatalf("server %d outlived Close", c.PID())
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
	if got := strings.Join(tl.lines(), ","); got != "2,3,4" || tl.total != 5 {
		t.Fatalf("tail %q (%d)", got, tl.total)
	}
	if clip("short", 10) != "short" || clip("0123456789abc", 10) != "0123456789…" {
		t.Fatal("clip")
	}
}

func TestStdioConnLostWhileWaiting(t *testing.T) {
	t.Parallel()
	c := startScript(t, `read request; echo 'gave up' >&2; exit 5`)
	_, err := c.SendRequest(context.Background(), request("r1", "tools/list"))
	if want := "connection lost: the server exited with status 5; last stderr: gave up"; err == nil || err.Error() != want {
		t.Fatalf("got %v, want %s", err, want)
	}
}

func TestStdioConnUnencodable(t *testing.T) {
	t.Parallel()
	c := startScript(t, `exec cat >/dev/null`)
	req := request("r1", "x")
	req.Params = make(chan int)
	if _, err := c.SendRequest(context.Background(), req); err == nil || !strings.HasPrefix(err.Error(), "encode request: ") {
		t.Fatalf("SendRequest: %v", err)
	}
	n := note("x")
	n.Params.AdditionalFields = map[string]any{"f": func() {}}
	if err := c.SendNotification(context.Background(), n); err == nil || !strings.HasPrefix(err.Error(), "encode notification: ") {
		t.Fatalf("SendNotification: %v", err)
	}
	select {
	case <-c.Done():
		t.Fatal("an unencodable message ended the connection")
	default:
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
// out) loses nothing: the line goes on at the next call — an ordinary line,
// and one over the limit being skipped.
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

// The read path (RFC 0003): a caller that waits for its response reads it
// itself, instead of being handed it by the reader goroutine. Where the pipe
// takes no read deadline (Windows), the reader goroutine reads everything.
func TestStdioConnCallerReadsItsOwnResponse(t *testing.T) {
	t.Parallel()
	c := startScript(t, `while IFS= read -r l; do id=${l#*\"id\":}; id=${id%%,*}; printf '{"jsonrpc":"2.0","id":%s,"result":{}}\n' "$id"; done`)
	if !c.kickable {
		t.Skip("this system's pipes take no read deadline: the reader goroutine reads everything")
	}
	const calls = 200
	for i := range calls {
		if _, err := c.SendRequest(context.Background(), request(int64(i), "m")); err != nil {
			t.Fatal(err)
		}
	}
	// A response that arrives while the reader goroutine still holds the
	// right to read is handed over; nearly all are read by their callers.
	if own := c.ownReads.Load(); own < calls/2 {
		t.Fatalf("%d of %d responses read by their callers", own, calls)
	}
}

func TestIDKeyOfOurIDs(t *testing.T) {
	t.Parallel()
	// The key of an id we send equals the canonical form of its echo.
	for _, id := range []any{"h12", int64(3), "ünï", "with \"quotes\""} {
		echo, _ := json.Marshal(mcp.NewRequestId(id))
		if idKey(mcp.NewRequestId(id)) != jsonrpc.IDKey(echo) {
			t.Errorf("id %v: key %q, echo %q", id, idKey(mcp.NewRequestId(id)), jsonrpc.IDKey(echo))
		}
	}
}
