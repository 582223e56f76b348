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
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
	"unicode/utf8"

	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/harness-go/harness/host/secret"
	"github.com/harness-go/harness/internal/jsonrpc"
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
	// maxWriteStall bounds a write whose context has no deadline: a server
	// that does not read a line for that long is broken.
	maxWriteStall = 30 * time.Second
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
	proc    *proc.Process
	stdin   *os.File
	log     *slog.Logger
	secrets *secret.Set // hides secret values in what we log and keep
	stderr  *tail

	writeMu sync.Mutex
	wbuf    []byte // the line being written; guarded by writeMu

	// The read path. Whoever holds readTok reads stdout: a caller waiting
	// for its response reads it itself, so the reply reaches it without a
	// hand-off between goroutines; the reader goroutine reads while no
	// caller waits (notifications, server requests). A caller that finds
	// the reader goroutine blocked in a read kicks it out with a read
	// deadline in the past (see readOwn).
	out       *os.File
	errR      *os.File      // the read end of the server's stderr
	rd        *lineReader   // guarded by readTok
	readTok   chan struct{} // capacity 1: holding it is the right to read
	waiters   atomic.Int32  // callers waiting for a response
	calls     atomic.Int64  // requests sent so far: the reader goroutine waits for a lull
	bgReading atomic.Bool   // the reader goroutine holds readTok to read
	ownReads  atomic.Int64  // responses their callers read themselves (the read path at work)
	kickable  bool          // the pipe takes deadlines (not on every OS)
	garbage   int           // non-JSON-RPC lines seen; guarded by readTok

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
func startStdio(sp *proc.Spawner, command string, args, env []string, dir string, log *slog.Logger, secrets *secret.Set) (*stdioConn, error) {
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
		out:       outR,
		rd:        newLineReader(outR, 64<<10),
		readTok:   make(chan struct{}, 1),
		kickable:  outR.SetReadDeadline(time.Time{}) == nil,
		log:       log,
		secrets:   secrets,
		stderr:    newTail(stderrLines),
		pending:   map[string]chan *transport.JSONRPCResponse{},
		notes:     make(chan mcp.JSONRPCNotification, 64),
		done:      make(chan struct{}),
		exited:    make(chan struct{}),
		stderrEOF: make(chan struct{}),
	}
	c.errR = errR
	c.workers.Add(4)
	go func() {
		defer c.workers.Done()
		c.exitErr = p.Wait()
		close(c.exited)
		c.watchExit()
	}()
	go func() { defer c.workers.Done(); defer close(c.stderrEOF); c.readStderr(errR) }()
	go func() { defer c.workers.Done(); c.readLoop() }()
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
	data, err := appendRequest(make([]byte, 0, 256), req.ID.Value(), req.Method, req.Params)
	if err != nil {
		return nil, fmt.Errorf("encode request: %w", err)
	}
	key := idKey(req.ID)
	ch := make(chan *transport.JSONRPCResponse, 1)
	c.mu.Lock()
	if c.lost != nil {
		err := c.lost
		c.mu.Unlock()
		return nil, &notSentError{err}
	}
	c.pending[key] = ch
	c.mu.Unlock()
	forget := func() {
		c.mu.Lock()
		delete(c.pending, key)
		c.mu.Unlock()
	}
	if c.kickable {
		c.calls.Add(1)
		c.waiters.Add(1)
		defer c.waiters.Add(-1)
		if c.bgReading.Load() {
			c.kick() // the reader goroutine steps aside while the server works
		}
	}
	if err := c.write(ctx, data); err != nil {
		forget()
		return nil, &notSentError{err} // a line cut short is no request
	}
	var take chan<- struct{} // nil: never read ourselves
	if c.kickable {
		take = c.readTok
	}
	for {
		select {
		case resp := <-ch:
			if resp == nil {
				return nil, errTooLarge
			}
			return resp, nil
		case take <- struct{}{}:
			resp, err := c.readOwn(ctx, ch)
			<-c.readTok
			if resp != nil {
				c.ownReads.Add(1)
			}
			if resp != nil || err != nil {
				if err != nil {
					forget()
				}
				return resp, err
			}
		case <-ctx.Done():
			forget()
			return nil, ctx.Err()
		case <-c.done:
			forget()
			select {
			case resp := <-ch: // answered just before the end
				if resp != nil {
					return resp, nil
				}
			default:
			}
			return nil, c.Err()
		}
	}
}

// kick makes a read in progress return at once (a deadline in the past).
// The holder of readTok takes a deadline error as a request to look up.
func (c *stdioConn) kick() { _ = c.out.SetReadDeadline(time.Unix(1, 0)) }

// readOwn reads, holding readTok, until the response for ch arrives (it is
// returned), another caller's response or the end of ctx calls for a look
// up (nil, nil: the caller selects again), or the connection ends.
func (c *stdioConn) readOwn(ctx context.Context, ch chan *transport.JSONRPCResponse) (*transport.JSONRPCResponse, error) {
	stop := context.AfterFunc(ctx, c.kick)
	defer stop()
	for {
		select {
		case resp := <-ch:
			if resp == nil {
				return nil, errTooLarge
			}
			return resp, nil
		default:
		}
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		_ = c.out.SetReadDeadline(time.Time{})
		if err := c.readOne(); err != nil {
			if errors.Is(err, os.ErrDeadlineExceeded) {
				continue // a kick: look at ch and ctx again
			}
			return nil, c.Err()
		}
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
	deadline, ok := ctx.Deadline()
	if !ok {
		deadline = time.Now().Add(maxWriteStall)
	}
	_ = c.stdin.SetWriteDeadline(deadline)
	c.wbuf = append(append(c.wbuf[:0], line...), '\n')
	_, err := c.stdin.Write(c.wbuf)
	if cap(c.wbuf) > 64<<10 {
		c.wbuf = nil // keep no large message around
	}
	c.writeMu.Unlock()
	if err == nil {
		return nil
	}
	// A server that closed its stdin is usually exiting: its exit status
	// and last words say why, not the broken pipe.
	if errors.Is(err, syscall.EPIPE) {
		c.lose(c.exitReason(fmt.Sprintf("write to the server: %v", err)))
	} else {
		c.lose(fmt.Errorf("write to the server: %w", err))
	}
	return c.Err()
}

// lull is how long the reader goroutine waits, after the last request,
// before it reads stdout itself: calls often come back to back, and a caller
// reads its own response (and whatever came before it) with no hand-off as
// long as the reader goroutine is not in the way. A notification that
// arrives between calls waits at most this long.
const lull = 2 * time.Millisecond

// readLoop is the reader goroutine: it reads stdout when no caller has
// waited for a while, and stops when the connection ends. Where the pipe
// takes no deadline (kickable false), it reads all the time and hands every
// response over.
func (c *stdioConn) readLoop() {
	defer c.out.Close()
	var quiet *time.Timer
	if c.kickable {
		quiet = time.NewTimer(lull)
		defer quiet.Stop()
	}
	seen := int64(-1)
	for {
		if c.kickable {
			select {
			case <-quiet.C:
			case <-c.done:
				return
			}
			if n := c.calls.Load(); n != seen || c.waiters.Load() > 0 {
				seen = n
				quiet.Reset(lull)
				continue
			}
		}
		select {
		case c.readTok <- struct{}{}:
		case <-c.done:
			return
		}
		if c.kickable {
			// The handshake with callers (SendRequest): clear any old kick,
			// say we read, then look for a caller once more. A caller that
			// comes after the look sees bgReading and kicks.
			_ = c.out.SetReadDeadline(time.Time{})
			c.bgReading.Store(true)
			if c.waiters.Load() > 0 {
				c.bgReading.Store(false)
				<-c.readTok
				quiet.Reset(lull)
				continue
			}
		}
		var err error
		for err == nil {
			err = c.readOne()
		}
		c.bgReading.Store(false)
		<-c.readTok
		if !errors.Is(err, os.ErrDeadlineExceeded) {
			return
		}
		seen = c.calls.Load()
		quiet.Reset(lull)
	}
}

// readOne reads and dispatches one line; the caller holds readTok. An error
// other than a deadline ends the connection.
func (c *stdioConn) readOne() error {
	line, tooLong, err := c.rd.next(MaxMessageBytes, 120+c.secrets.MaxLen())
	switch {
	case tooLong != nil:
		c.oversized(tooLong)
	case len(bytes.TrimSpace(line)) > 0:
		if !c.dispatch(line) {
			c.garbage++
			if c.garbage <= 5 || c.garbage%1000 == 0 {
				c.log.Warn("server wrote a line that is not JSON-RPC to stdout; ignored", "line", safe.Line(c.secrets.Clip(strings.TrimRight(string(line), "\r\n"), 200)), "count", c.garbage)
			}
		}
	}
	if err != nil && !errors.Is(err, os.ErrDeadlineExceeded) {
		fallback := "the server closed its stdout"
		if !errors.Is(err, io.EOF) {
			fallback = fmt.Sprintf("reading from the server: %v", err)
		}
		c.lose(c.exitReason(fallback))
	}
	return err
}

// lineReader reads lines from a stream whose reads may be interrupted (a
// read deadline): a line cut by an interruption is kept, and the next call
// goes on with it.
type lineReader struct {
	br       *bufio.Reader
	partial  []byte // a line begun before an interruption
	skipping []byte // the start of an over-long line being consumed, or nil
}

func newLineReader(r io.Reader, size int) *lineReader {
	return &lineReader{br: bufio.NewReaderSize(r, size)}
}

// next returns the next line of at most limit bytes (with its newline, if
// any); a longer line is consumed, and its first head bytes returned as
// tooLong. line may be the reader's own buffer, valid until the next call:
// callers copy what they keep. At the end of the stream, a last line without
// a newline comes with the error. An interrupted read returns its error and
// nothing else.
func (r *lineReader) next(limit, head int) (line, tooLong []byte, err error) {
	for {
		chunk, err := r.br.ReadSlice('\n')
		full := errors.Is(err, bufio.ErrBufferFull)
		interrupted := errors.Is(err, os.ErrDeadlineExceeded)
		complete := !full && !interrupted // a newline, or the end of the stream
		if r.skipping == nil && len(r.partial)+len(chunk) > limit {
			start := append(r.partial, chunk...)
			r.skipping = append([]byte(nil), start[:min(len(start), head)]...)
			r.partial, chunk = nil, nil
		}
		switch {
		case r.skipping != nil && !complete:
			if full {
				continue
			}
			return nil, nil, err // go on skipping next time
		case r.skipping != nil:
			start := r.skipping
			r.skipping = nil
			return nil, start, err
		case !complete:
			r.partial = append(r.partial, chunk...)
			if full {
				continue
			}
			return nil, nil, err
		case r.partial != nil:
			line := append(r.partial, chunk...)
			r.partial = nil
			return line, nil, err
		}
		return chunk, nil, err // the usual case: the line in one piece
	}
}

var idPrefix = regexp.MustCompile(`"id"\s*:\s*("(?:[^"\\]|\\.)*"|-?\d+)`)

// oversized fails the request whose response was too large, if its id can be
// read from the start of the line.
func (c *stdioConn) oversized(head []byte) {
	c.log.Warn("server sent a message over the size limit; discarded", "limitMiB", MaxMessageBytes>>20, "start", safe.Line(c.secrets.Clip(string(head), 120)))
	m := idPrefix.FindSubmatch(head)
	if m == nil {
		return
	}
	key := jsonrpc.IDKey(m[1])
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
	m, ok := jsonrpc.Scan(line)
	if !ok {
		var slow message
		if json.Unmarshal(line, &slow) != nil {
			return false
		}
		m = jsonrpc.Message{ID: slow.ID, Method: json.RawMessage(slow.Method), Result: slow.Result}
		if slow.Error != nil {
			m.Error, _ = json.Marshal(slow.Error)
		}
		if slow.Method != "" {
			m.Method, _ = json.Marshal(slow.Method)
		}
	}
	hasID := len(m.ID) > 0 && string(m.ID) != "null"
	isCall := len(m.Method) > 0 && string(m.Method) != "null"
	switch {
	case isCall && !hasID:
		var n mcp.JSONRPCNotification
		if err := json.Unmarshal(line, &n); err != nil {
			return false
		}
		select {
		case c.notes <- n:
		case <-c.done:
		}
	case isCall:
		var req transport.JSONRPCRequest
		if err := json.Unmarshal(line, &req); err != nil {
			return false
		}
		c.serveRequest(req)
	case hasID:
		key := jsonrpc.IDKey(m.ID)
		c.mu.Lock()
		ch := c.pending[key]
		delete(c.pending, key)
		c.mu.Unlock()
		if ch == nil {
			return true // a late answer to a request we gave up on
		}
		resp := &transport.JSONRPCResponse{JSONRPC: mcp.JSONRPC_VERSION}
		if len(m.Error) > 0 && string(m.Error) != "null" {
			var e mcp.JSONRPCErrorDetails
			if json.Unmarshal(m.Error, &e) != nil {
				e = mcp.JSONRPCErrorDetails{Code: mcp.INTERNAL_ERROR, Message: "the server answered with an error that does not decode"}
			}
			resp.Error = &e
		} else {
			resp.Result = append(json.RawMessage(nil), m.Result...) // the line's buffer is reused
		}
		if id, ok := jsonrpc.PlainString(m.ID); ok {
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

// readStderr keeps the last lines of stderr and logs each at debug level,
// each redacted before it is cut to stderrLineBytes.
func (c *stdioConn) readStderr(r io.ReadCloser) {
	defer r.Close()
	lr := newLineReader(r, 16<<10)
	for {
		// Keep enough of a long line that a secret starting before the cut
		// is whole when it is redacted.
		keep := stderrLineBytes + c.secrets.MaxLen()
		line, head, err := lr.next(keep, keep)
		if head != nil {
			line = append(head, "…"...)
		}
		if s := strings.TrimRight(string(line), "\r\n"); s != "" {
			s = c.secrets.Clip(s, stderrLineBytes)
			c.stderr.add(s)
			c.log.Debug("server stderr", "line", safe.Line(s))
		}
		if err != nil {
			return
		}
	}
}

// watchExit ends the connection when the server has exited but its stdout
// stays open: a process it started holds it (a helper that inherited its
// stdio), and no end of stdout will come. An exit with status 0 is left to
// the end of stdout: a wrapper may leave its server running in the
// background, on the same pipes. The answers the server wrote before it
// exited are read first (exitWait).
func (c *stdioConn) watchExit() {
	if c.exitErr == nil {
		return
	}
	t := time.NewTimer(exitWait)
	defer t.Stop()
	select {
	case <-c.done:
	case <-t.C:
		c.lose(c.exitReason("the server exited"))
	}
}

// exitReason builds the error of a connection that ended with stdout or
// stdin: the exit status if the process exits soon (else fallback), and the
// last stderr lines.
func (c *stdioConn) exitReason(fallback string) error {
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
		reason = fallback
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
		c.waitWorkers()
	})
	return c.closeErr
}

// waitWorkers waits for the transport's goroutines. A process beyond our
// reach (a daemon that left the group and dropped its tag) may still hold
// the server's stdout or stderr: after exitWait the readers stop reading.
func (c *stdioConn) waitWorkers() {
	done := make(chan struct{})
	go func() { c.workers.Wait(); close(done) }()
	t := time.NewTimer(exitWait)
	defer t.Stop()
	select {
	case <-done:
		return
	case <-t.C:
	}
	c.log.Debug("a process outside the server's group holds its stdout or stderr; no longer reading them")
	_ = c.out.Close()
	_ = c.errR.Close()
	<-done
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

// idKey is the map key of a request id; jsonrpc.IDKey of the echoed id must
// produce the same string.
func idKey(id mcp.RequestId) string {
	if s, ok := id.Value().(string); ok && utf8.ValidString(s) {
		return "s:" + s // what encoding and jsonrpc.IDKey would give, without them
	}
	b, _ := json.Marshal(id)
	return jsonrpc.IDKey(b)
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
