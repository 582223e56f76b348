package mcpclient

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
	"unicode/utf8"

	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/harness-go/harness/internal/proc"
	"github.com/harness-go/harness/internal/safe"
)

// Bounds of the stdio transport.
const (
	// MaxMessageBytes bounds one JSON-RPC message from a server. A longer
	// line is discarded; the request it answers fails with a clear error.
	MaxMessageBytes = 32 << 20
	// stderrLines and stderrLineBytes bound the stderr tail kept for status.
	stderrLines     = 40
	stderrLineBytes = 2048
	// The close ladder: stdin closed, then SIGTERM, then SIGKILL, to the
	// whole process group (and, on Linux, the server's daemons; see
	// internal/proc).
	stdinGrace = 1 * time.Second
	termGrace  = 2 * time.Second
	killGrace  = 2 * time.Second
	// exitWait is how long a lost connection waits for the exit status.
	exitWait = 500 * time.Millisecond
)

// errTooLarge is the error of a request whose response exceeded
// MaxMessageBytes.
var errTooLarge = fmt.Errorf("the server's response exceeded the %d MiB message limit", MaxMessageBytes>>20)

// stdioConn is an MCP transport over a child process's stdin and stdout. It
// replaces mcp-go's stdio transport to get what a host needs: the child
// contained by internal/proc (its own process group, so `npx` and `sh -c`
// grandchildren die with it; more per OS), a bounded close ladder, a bound on message size, a stderr tail, the exit
// status, and notifications delivered off the read loop (a handler may send
// requests). It implements transport.Interface and
// transport.BidirectionalInterface.
type stdioConn struct {
	proc   *proc.Process
	stdin  *os.File
	log    *slog.Logger
	redact func(string) string // hides secret values in stderr
	stderr *tail

	writeMu sync.Mutex
	wbuf    []byte // the line being written; guarded by writeMu

	mu        sync.Mutex
	pending   map[string]chan *transport.JSONRPCResponse
	onNotify  func(mcp.JSONRPCNotification)
	onRequest transport.RequestHandler
	lost      error // why the connection ended; set once

	notes     chan mcp.JSONRPCNotification // to the notification goroutine
	done      chan struct{}                // closed when the connection is lost or closed
	exited    chan struct{}                // closed when the process has exited
	stderrEOF chan struct{}                // closed when readStderr has read everything
	exitErr   error
	closeOnce sync.Once
	closeErr  error
	workers   sync.WaitGroup
}

// startStdio starts the server through sp, which contains it (see
// internal/proc), with the given environment and directory.
func startStdio(sp *proc.Spawner, command string, args, env []string, dir string, log *slog.Logger, redact func(string) string) (*stdioConn, error) {
	path, err := resolveCommand(command, dir, env)
	if err != nil {
		return nil, err
	}
	inR, inW, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		inR.Close()
		inW.Close()
		return nil, err
	}
	errR, errW, err := os.Pipe()
	if err != nil {
		inR.Close()
		inW.Close()
		outR.Close()
		outW.Close()
		return nil, err
	}
	cmd := exec.Command(path, args...)
	cmd.Args[0] = command
	cmd.Env = env
	cmd.Dir = dir
	cmd.Stdin, cmd.Stdout, cmd.Stderr = inR, outW, errW
	p, startErr := sp.Start(cmd)
	inR.Close()
	outW.Close()
	errW.Close()
	if startErr != nil {
		inW.Close()
		outR.Close()
		errR.Close()
		return nil, fmt.Errorf("start %s: %w", command, startErr)
	}
	c := &stdioConn{
		proc:      p,
		stdin:     inW,
		log:       log,
		redact:    redact,
		stderr:    newTail(stderrLines),
		pending:   map[string]chan *transport.JSONRPCResponse{},
		notes:     make(chan mcp.JSONRPCNotification, 64),
		done:      make(chan struct{}),
		exited:    make(chan struct{}),
		stderrEOF: make(chan struct{}),
	}
	c.workers.Add(4)
	go func() {
		defer c.workers.Done()
		c.exitErr = p.Wait()
		close(c.exited)
	}()
	go func() { defer c.workers.Done(); defer close(c.stderrEOF); c.readStderr(errR) }()
	go func() { defer c.workers.Done(); c.readLoop(outR) }()
	go func() { defer c.workers.Done(); c.deliverNotifications() }()
	return c, nil
}

// PID returns the server's process id (and, on unix, process group id).
func (c *stdioConn) PID() int { return c.proc.Pid() }

// Start is a no-op: the process runs from startStdio on.
func (c *stdioConn) Start(context.Context) error { return nil }

// GetSessionId returns "": stdio has no sessions.
func (c *stdioConn) GetSessionId() string { return "" }

// SetNotificationHandler sets the handler of server notifications. It runs on
// a goroutine of its own, in order, never on the read loop.
func (c *stdioConn) SetNotificationHandler(h func(mcp.JSONRPCNotification)) {
	c.mu.Lock()
	c.onNotify = h
	c.mu.Unlock()
}

// SetRequestHandler sets the handler of requests from the server (ping,
// roots/list, …). Each runs on its own goroutine.
func (c *stdioConn) SetRequestHandler(h transport.RequestHandler) {
	c.mu.Lock()
	c.onRequest = h
	c.mu.Unlock()
}

// Done is closed when the connection ends, for whatever reason.
func (c *stdioConn) Done() <-chan struct{} { return c.done }

// Err returns why the connection ended.
func (c *stdioConn) Err() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.lost
}

// Stderr returns the last lines the server wrote to stderr.
func (c *stdioConn) Stderr() []string { return c.stderr.lines() }

// SendRequest writes a request and waits for its response, the end of ctx,
// or the end of the connection, whichever is first.
func (c *stdioConn) SendRequest(ctx context.Context, req transport.JSONRPCRequest) (*transport.JSONRPCResponse, error) {
	data, err := json.Marshal(req)
	if err != nil {
		return nil, fmt.Errorf("encode request: %w", err)
	}
	key := idKey(req.ID)
	ch := make(chan *transport.JSONRPCResponse, 1)
	c.mu.Lock()
	if c.lost != nil {
		err := c.lost
		c.mu.Unlock()
		return nil, err
	}
	c.pending[key] = ch
	c.mu.Unlock()
	forget := func() {
		c.mu.Lock()
		delete(c.pending, key)
		c.mu.Unlock()
	}
	if err := c.write(ctx, data); err != nil {
		forget()
		return nil, err
	}
	select {
	case resp := <-ch:
		if resp == nil {
			return nil, errTooLarge
		}
		capture(ctx, resp)
		return resp, nil
	case <-ctx.Done():
		forget()
		return nil, ctx.Err()
	case <-c.done:
		forget()
		select {
		case resp := <-ch: // answered just before the end
			if resp != nil {
				capture(ctx, resp)
				return resp, nil
			}
		default:
		}
		return nil, c.Err()
	}
}

// SendNotification writes a notification.
func (c *stdioConn) SendNotification(ctx context.Context, n mcp.JSONRPCNotification) error {
	data, err := json.Marshal(n)
	if err != nil {
		return fmt.Errorf("encode notification: %w", err)
	}
	return c.write(ctx, data)
}

// write sends one line. A server that stops reading its stdin must not hang
// us: the write has the deadline of ctx (or a generous default), and a
// write that fails midway ends the connection, since the stream is broken.
func (c *stdioConn) write(ctx context.Context, line []byte) error {
	select {
	case <-c.done:
		return c.Err()
	default:
	}
	c.writeMu.Lock()
	defer c.writeMu.Unlock()
	deadline, ok := ctx.Deadline()
	if !ok {
		deadline = time.Now().Add(DefaultToolCallTimeout)
	}
	_ = c.stdin.SetWriteDeadline(deadline)
	c.wbuf = append(append(c.wbuf[:0], line...), '\n')
	_, err := c.stdin.Write(c.wbuf)
	if cap(c.wbuf) > 64<<10 {
		c.wbuf = nil // keep no large message around
	}
	if err != nil {
		err = fmt.Errorf("write to the server: %w", err)
		c.lose(err)
		return err
	}
	return nil
}

// readLoop reads messages until stdout ends.
func (c *stdioConn) readLoop(r io.ReadCloser) {
	defer r.Close()
	br := bufio.NewReaderSize(r, 64<<10)
	var garbage int
	for {
		line, tooLong, err := readLine(br, MaxMessageBytes)
		if tooLong != nil {
			c.oversized(tooLong)
		} else if len(bytes.TrimSpace(line)) > 0 {
			if !c.dispatch(line) {
				garbage++
				if garbage <= 5 || garbage%1000 == 0 {
					c.log.Warn("server wrote a line that is not JSON-RPC to stdout; ignored", "line", safe.Line(clip(strings.TrimRight(string(line), "\r\n"), 200)), "count", garbage)
				}
			}
		}
		if err != nil {
			c.lose(c.exitReason(err))
			return
		}
	}
}

// readLine reads one line of at most limit bytes. A longer line is consumed
// and its first bytes returned as tooLong. The line may be br's own buffer,
// valid until the next read: callers copy what they keep.
func readLine(br *bufio.Reader, limit int) (line, tooLong []byte, err error) {
	var buf []byte
	for {
		chunk, err := br.ReadSlice('\n')
		if len(buf)+len(chunk) > limit {
			head := append(buf, chunk...)
			if len(head) > 512 {
				head = head[:512]
			}
			head = append([]byte(nil), head...)
			for errors.Is(err, bufio.ErrBufferFull) {
				_, err = br.ReadSlice('\n')
			}
			return nil, head, err
		}
		full := errors.Is(err, bufio.ErrBufferFull)
		if buf == nil && !full {
			return chunk, nil, err // the usual case: the line in one piece
		}
		buf = append(buf, chunk...)
		if full {
			continue
		}
		return buf, nil, err
	}
}

var idPrefix = regexp.MustCompile(`"id"\s*:\s*("(?:[^"\\]|\\.)*"|-?\d+)`)

// oversized fails the request whose response was too large, if its id can be
// read from the start of the line.
func (c *stdioConn) oversized(head []byte) {
	c.log.Warn("server sent a message over the size limit; discarded", "limitMiB", MaxMessageBytes>>20, "start", safe.Line(clip(string(head), 120)))
	m := idPrefix.FindSubmatch(head)
	if m == nil {
		return
	}
	key := canonicalID(m[1])
	c.mu.Lock()
	ch := c.pending[key]
	delete(c.pending, key)
	c.mu.Unlock()
	if ch != nil {
		ch <- nil
	}
}

// message is every field of a JSON-RPC message we route on, decoded once.
type message struct {
	ID     json.RawMessage          `json:"id"`
	Method string                   `json:"method"`
	Params json.RawMessage          `json:"params"`
	Result json.RawMessage          `json:"result"`
	Error  *mcp.JSONRPCErrorDetails `json:"error"`
}

// dispatch routes one line; false means it was not JSON-RPC.
func (c *stdioConn) dispatch(line []byte) bool {
	var m message
	if err := json.Unmarshal(line, &m); err != nil {
		return false
	}
	hasID := len(m.ID) > 0 && !bytes.Equal(m.ID, []byte("null"))
	switch {
	case m.Method != "" && !hasID:
		var n mcp.JSONRPCNotification
		if err := json.Unmarshal(line, &n); err != nil {
			return false
		}
		select {
		case c.notes <- n:
		case <-c.done:
		}
	case m.Method != "":
		var req transport.JSONRPCRequest
		if err := json.Unmarshal(line, &req); err != nil {
			return false
		}
		c.serveRequest(req)
	case hasID:
		key := canonicalID(m.ID)
		c.mu.Lock()
		ch := c.pending[key]
		delete(c.pending, key)
		c.mu.Unlock()
		if ch == nil {
			return true // a late answer to a request we gave up on
		}
		resp := &transport.JSONRPCResponse{JSONRPC: mcp.JSONRPC_VERSION, Result: m.Result, Error: m.Error}
		if id, ok := plainString(m.ID); ok {
			resp.ID = mcp.NewRequestId(id) // what decoding it would give
		} else {
			_ = json.Unmarshal(m.ID, &resp.ID)
		}
		ch <- resp
	default:
		return false
	}
	return true
}

func (c *stdioConn) deliverNotifications() {
	for {
		select {
		case n := <-c.notes:
			c.mu.Lock()
			h := c.onNotify
			c.mu.Unlock()
			if h != nil {
				h(n)
			}
		case <-c.done:
			return
		}
	}
}

// serveRequest answers a request from the server on a goroutine of its own.
func (c *stdioConn) serveRequest(req transport.JSONRPCRequest) {
	c.mu.Lock()
	h := c.onRequest
	lost := c.lost
	if lost == nil {
		c.workers.Add(1)
	}
	c.mu.Unlock()
	if lost != nil {
		return
	}
	go func() {
		defer c.workers.Done()
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		go func() {
			select {
			case <-c.done:
				cancel()
			case <-ctx.Done():
			}
		}()
		var resp *transport.JSONRPCResponse
		var err error
		if h != nil {
			resp, err = h(ctx, req)
		} else {
			err = fmt.Errorf("method %q is not supported", req.Method)
		}
		if err != nil {
			resp = transport.NewJSONRPCErrorResponse(req.ID, mcp.METHOD_NOT_FOUND, err.Error(), nil)
		}
		if resp == nil {
			return
		}
		data, err := json.Marshal(resp)
		if err == nil {
			wctx, wcancel := context.WithTimeout(ctx, 10*time.Second)
			_ = c.write(wctx, data)
			wcancel()
		}
	}()
}

// readStderr keeps the last lines of stderr and logs each at debug level.
func (c *stdioConn) readStderr(r io.ReadCloser) {
	defer r.Close()
	br := bufio.NewReaderSize(r, 16<<10)
	for {
		line, head, err := readLine(br, stderrLineBytes)
		if head != nil {
			line = append(head, "…"...)
		}
		if s := strings.TrimRight(string(line), "\r\n"); s != "" {
			if c.redact != nil {
				s = c.redact(s)
			}
			c.stderr.add(s)
			c.log.Debug("server stderr", "line", safe.Line(s))
		}
		if err != nil {
			return
		}
	}
}

// exitReason builds the error of a connection that ended with stdout: the
// exit status if the process exits soon, and the last stderr lines.
func (c *stdioConn) exitReason(readErr error) error {
	var reason string
	select {
	case <-c.exited:
		reason = describeExit(c.exitErr)
		// What the server wrote to stderr before it exited explains the
		// exit: let the reader take it in. Bounded, since a grandchild
		// may keep stderr open.
		select {
		case <-c.stderrEOF:
		case <-time.After(exitWait):
		}
	case <-time.After(exitWait):
		reason = "the server closed its stdout"
		if !errors.Is(readErr, io.EOF) {
			reason = fmt.Sprintf("reading from the server: %v", readErr)
		}
	}
	if lines := c.stderr.lines(); len(lines) > 0 {
		last := lines
		if len(last) > 3 {
			last = last[len(last)-3:]
		}
		for i, l := range last {
			last[i] = safe.Line(l)
		}
		reason += "; last stderr: " + strings.Join(last, " | ")
	}
	return &ConnectionLostError{Reason: reason}
}

// ConnectionLostError says why a server connection ended.
type ConnectionLostError struct{ Reason string }

func (e *ConnectionLostError) Error() string { return "connection lost: " + e.Reason }

func describeExit(err error) string {
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			return fmt.Sprintf("the server was killed by signal %s", ws.Signal())
		}
		return fmt.Sprintf("the server exited with status %d", ee.ExitCode())
	}
	if err != nil {
		return fmt.Sprintf("the server exited: %v", err)
	}
	return "the server exited with status 0"
}

// lose ends the connection once, failing every pending request.
func (c *stdioConn) lose(err error) {
	c.mu.Lock()
	if c.lost != nil {
		c.mu.Unlock()
		return
	}
	c.lost = err
	pending := c.pending
	c.pending = map[string]chan *transport.JSONRPCResponse{}
	c.mu.Unlock()
	close(c.done)
	_ = pending // waiters see done and read lost
}

// Close stops the server: stdin is closed; if the process has not exited
// after stdinGrace, it gets SIGTERM (its whole group, and on Linux its
// daemons); after termGrace, SIGKILL. Whatever of it is left after the
// server exits gets the same ladder, then proc's Close kills and reaps the
// rest. Close waits for the transport's goroutines and is safe to call twice.
func (c *stdioConn) Close() error {
	c.closeOnce.Do(func() {
		c.lose(&ConnectionLostError{Reason: "closed"})
		_ = c.stdin.Close()
		if !c.waitExit(stdinGrace) {
			_ = c.proc.Terminate()
			if !c.waitExit(termGrace) {
				_ = c.proc.Kill()
				if !c.waitExit(killGrace) {
					c.closeErr = fmt.Errorf("the server (pid %d) did not exit after SIGKILL", c.proc.Pid())
				}
			}
		}
		c.reapLeftovers()
		if err := c.proc.Close(); err != nil && c.closeErr == nil {
			c.closeErr = err
		}
		c.workers.Wait()
	})
	return c.closeErr
}

func (c *stdioConn) waitExit(d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-c.exited:
		return true
	case <-t.C:
		return false
	}
}

// reapLeftovers gives what is left of the server once it exited
// (grandchildren that outlived it, daemons) SIGTERM and a short grace;
// proc's Close then kills what still runs. There is no event for the exit of
// a process we did not start, so it polls.
func (c *stdioConn) reapLeftovers() {
	if !c.proc.Alive() {
		return
	}
	_ = c.proc.Terminate()
	deadline := time.Now().Add(termGrace)
	for c.proc.Alive() && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
}

// idKey is the map key of a request id; canonicalID of the echoed id must
// produce the same string.
func idKey(id mcp.RequestId) string {
	if s, ok := id.Value().(string); ok && utf8.ValidString(s) {
		return "s:" + s // what encoding and canonicalID would give, without them
	}
	b, _ := json.Marshal(id)
	return canonicalID(b)
}

func canonicalID(raw []byte) string {
	raw = bytes.TrimSpace(raw)
	if s, ok := plainString(raw); ok {
		return "s:" + s
	}
	if len(raw) > 0 && raw[0] == '"' {
		var s string
		if json.Unmarshal(raw, &s) == nil {
			return "s:" + s
		}
	}
	if n, err := strconv.ParseFloat(string(raw), 64); err == nil {
		return "n:" + strconv.FormatFloat(n, 'f', -1, 64)
	}
	return "r:" + string(raw)
}

// plainString returns the value of a JSON string that holds no escape, no
// control character and only valid UTF-8 — the ids we send, echoed — without
// running the decoder: such a string decodes to its bytes.
func plainString(raw []byte) (string, bool) {
	n := len(raw)
	if n < 2 || raw[0] != '"' || raw[n-1] != '"' {
		return "", false
	}
	body := raw[1 : n-1]
	for _, b := range body {
		if b == '"' || b == '\\' || b < 0x20 {
			return "", false
		}
	}
	if !utf8.Valid(body) {
		return "", false
	}
	return string(body), true
}

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

// tail keeps the last n lines.
type tail struct {
	mu    sync.Mutex
	n     int
	buf   []string
	total int
}

func newTail(n int) *tail { return &tail{n: n} }

func (t *tail) add(line string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.total++
	if len(t.buf) == t.n {
		copy(t.buf, t.buf[1:])
		t.buf[len(t.buf)-1] = line
		return
	}
	t.buf = append(t.buf, line)
}

func (t *tail) lines() []string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return append([]string(nil), t.buf...)
}

var (
	_ transport.Interface              = (*stdioConn)(nil)
	_ transport.BidirectionalInterface = (*stdioConn)(nil)
)
