package mcpserver

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/harness-go/harness/internal/jsonrpc"
	"github.com/harness-go/harness/plugins/tools"
)

// MaxMessageBytes bounds one JSON-RPC message a client sends, over stdio
// (one line) and HTTP (one request body).
const MaxMessageBytes = 16 << 20

// ServeStdio serves one MCP client over newline-delimited JSON-RPC: it reads
// in, writes only protocol messages to out, and returns when in ends (nil),
// when writing to out fails, or when ctx ends. At the end of in, the
// requests in flight finish and are answered first (each call is bounded by
// its own timeout); when ctx ends they are cancelled. A write to an out
// that nobody reads lasts until ctx ends.
//
// It does not use mcp-go's StdioServer: that keeps its one session in a
// package-level variable (two gateways in one process would share it) and
// runs at most five tool calls at a time. Here requests run concurrently,
// each on the goroutine that read it (see stdioConn.work) — or, for a call
// that is started (stdioConn.start), on nobody's: the goroutine that read
// it reads on, and the answer is written by whoever has the result — and a
// notifications/cancelled is matched to its request by the goroutine
// reading, so it can never overtake the request it cancels. A read blocked
// on in is abandoned, not interrupted, when ServeStdio returns early.
func (g *Gateway) ServeStdio(ctx context.Context, in io.Reader, out io.Writer) error {
	sess := &stdioSession{id: fmt.Sprintf("stdio-%d", g.sessions.Add(1)), notes: make(chan mcp.JSONRPCNotification, 64)}
	c := &stdioConn{
		g:        g,
		sess:     sess,
		r:        bufio.NewReaderSize(in, 64<<10),
		readErr:  make(chan error, 1),
		out:      out,
		failed:   make(chan struct{}),
		inflight: map[string]*request{},
		eof:      make(chan struct{}),
		turn:     make(chan struct{}),
		quit:     make(chan struct{}),
	}
	if err := g.mcp.RegisterSession(ctx, sess); err != nil {
		return fmt.Errorf("gateway: register the stdio session: %w", err)
	}
	defer g.mcp.UnregisterSession(context.Background(), sess.id)

	base, cancelAll := context.WithCancelCause(g.mcp.WithContext(ctx, sess))
	defer cancelAll(nil)
	c.base = base
	c.flushFn = c.flush
	c.streamFn = c.stream
	// Notifications are written as they come — but for a list_changed of
	// tools, resources or prompts before the client first listed that
	// list, or of a list it has listed or been told of already: what it
	// lists then is the newest list already, and a client that connects
	// while the entries start would get one per entry.
	notesDone := make(chan struct{})
	go func() {
		defer close(notesDone)
		for {
			select {
			case n := <-sess.notes:
				if cur, ok := g.publishedOf(n.Method); ok && !sess.lists.of(n.Method).news(cur) {
					continue // it listed this one already, or was told of it
				}
				c.send(mustEncode(n))
			case <-c.quit:
				return
			}
		}
	}()
	go c.work()
	readErr := c.readErr

	var result error
	select {
	case err := <-readErr:
		if !errors.Is(err, io.EOF) {
			result = fmt.Errorf("gateway: reading stdin: %w", err)
		}
	case <-c.failed:
		result = c.writeErr()
	case <-ctx.Done():
	}
	// The end of stdin is the client's way to stop: the requests in flight
	// finish and are answered (subscription streams, which never finish,
	// end now); when ctx ended or stdout failed, everything is cancelled.
	c.mu.Lock()
	c.closing = true
	c.mu.Unlock()
	if result != nil || ctx.Err() != nil {
		cancelAll(errors.New("the connection ended"))
		c.endAll()
	} else {
		c.endStreams()
	}
	done := make(chan struct{})
	go func() {
		c.handlers.Wait()
		c.flush()     // an answer held for a burst is written before the end
		close(c.quit) // idle workers leave; the one reading leaves at the end of in
		<-notesDone
		close(done)
	}()
	select {
	case <-done:
		if result == nil {
			result = c.writeErr()
		}
	case <-ctx.Done():
		// A client that neither reads nor closes stdout holds the last
		// write; ending ctx abandons it.
	}
	return result
}

// stdioSession is the mcp-go session of one stdio client: it takes
// notifications, and keeps what the client declared and the log level it
// asked for. The gateway's requests to the client (elicitation, sampling,
// roots) go on the connection itself (ask.go).
type stdioSession struct {
	id          string
	notes       chan mcp.JSONRPCNotification
	initialized atomic.Bool
	// lists is what the client has had of each served list.
	lists sessionLists

	mu    sync.Mutex
	level mcp.LoggingLevel // "": the client never asked for log messages
	info  mcp.Implementation
	caps  mcp.ClientCapabilities
}

var (
	_ server.SessionWithLogging    = (*stdioSession)(nil)
	_ server.SessionWithClientInfo = (*stdioSession)(nil)
)

func (s *stdioSession) SessionID() string { return s.id }
func (s *stdioSession) NotificationChannel() chan<- mcp.JSONRPCNotification {
	return s.notes
}
func (s *stdioSession) Initialize()       { s.initialized.Store(true) }
func (s *stdioSession) Initialized() bool { return s.initialized.Load() }

func (s *stdioSession) SetLogLevel(level mcp.LoggingLevel) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.level = level
}

func (s *stdioSession) GetLogLevel() mcp.LoggingLevel {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.level
}

func (s *stdioSession) GetClientInfo() mcp.Implementation {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.info
}

func (s *stdioSession) SetClientInfo(info mcp.Implementation) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.info = info
}

func (s *stdioSession) GetClientCapabilities() mcp.ClientCapabilities {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.caps
}

func (s *stdioSession) SetClientCapabilities(caps mcp.ClientCapabilities) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.caps = caps
}

type stdioConn struct {
	g        *Gateway
	sess     *stdioSession
	base     context.Context
	handlers sync.WaitGroup // the requests being served, until their answer is written

	// One goroutine reads at a time: the one holding the turn. When it
	// reads a request it passes the turn on — to an idle worker, or a new
	// one — and serves the request itself, so no hand-off stands between
	// reading a request and running it. Then it waits for the turn again.
	r       *bufio.Reader
	yielded time.Time     // when the goroutine reading last yielded (read)
	readErr chan error    // why reading ended
	turn    chan struct{} // an idle worker takes the turn from here
	quit    chan struct{} // closed when the connection ends: idle workers leave

	// Answers are written by the goroutine that has them, under wmu: no
	// hand-off to a writer goroutine on the way out. The answers of a burst
	// of results (a server's connection read several at once) are held and
	// written together at its end, by flush (tools.Burst).
	wmu      sync.Mutex
	out      io.Writer
	werr     error
	held     tools.Held
	flushFn  func()            // c.flush, made once: holding an answer allocates no closure
	abuf     []byte            // the answer of a fast call being written; guarded by wmu
	streamFn func([]byte) bool // c.stream, made once: each request's outcome writes with it
	failed   chan struct{}     // closed at the first failed write

	mu       sync.Mutex
	closing  bool                // no new requests
	inflight map[string]*request // by the request id's JSON
	eof      chan struct{}       // closed when reading ends: no answer comes any more
	eofOnce  sync.Once
}

// endOfInput says that nothing more is read: requests of ours still
// waiting fail (the client can no longer answer them).
func (c *stdioConn) endOfInput() { c.eofOnce.Do(func() { close(c.eof) }) }

// work reads while it holds the turn, serves the request it read, and
// waits for the turn again, until reading ends or the connection does.
func (c *stdioConn) work() {
	for {
		j, last, ok := c.read()
		if !ok {
			return
		}
		if c.start(j) {
			// Under way, and nobody waits for it: whoever has its result
			// answers. This goroutine reads on.
			if last {
				return
			}
			continue
		}
		if !last {
			select {
			case c.turn <- struct{}{}:
			default:
				go c.work()
			}
		}
		c.serve(j)
		if last {
			return
		}
		select {
		case <-c.turn:
		case <-c.quit:
			return
		}
	}
}

// read reads messages, running notifications as they come, until one is a
// request, which it returns registered; last when nothing follows it. It
// reports false when reading ended (the reason is on readErr) or the
// connection is ending.
func (c *stdioConn) read() (j job, last, ok bool) {
	for {
		c.yield()
		line, err := readLine(c.r, MaxMessageBytes)
		if errors.Is(err, errLineTooLong) {
			c.send(mustEncode(mcp.NewJSONRPCError(mcp.NewRequestId(nil), mcp.PARSE_ERROR, fmt.Sprintf("a message longer than %d bytes was dropped", MaxMessageBytes), nil)))
			continue
		}
		if len(line) > 0 {
			j, isRequest, open := c.handle(c.base, line)
			switch {
			case !open:
				return job{}, false, false
			case isRequest && err != nil:
				c.endOfInput()
				c.readErr <- err
				return j, true, true
			case isRequest:
				return j, false, true
			}
		}
		if err != nil {
			c.endOfInput()
			c.readErr <- err
			return job{}, false, false
		}
	}
}

// yieldEvery is how often the goroutine reading stdin yields its
// processor (stdioConn.yield).
const yieldEvery = 4 * time.Millisecond

// yield lets the goroutine reading go through the scheduler every few
// milliseconds (docs/rfc/0005-gateway.md, "The reader and the runtime"). It
// spends its life in blocking reads of stdin, which the Go runtime counts
// as one run that never ends: every 10 ms its monitor preempts it, takes
// its processor back from the read, and then, having found work to do,
// wakes every 20 µs for the next millisecond or more. Measured with one
// caller, that was 2.6 of the monitor's wake-ups per call and a third of
// the gateway's CPU. A yield is a fraction of a microsecond.
func (c *stdioConn) yield() {
	if now := time.Now(); now.Sub(c.yielded) >= yieldEvery {
		c.yielded = now
		runtime.Gosched()
	}
}

// envelope is what the reader needs of a message: its top level, read
// once and validated on the way (jsonrpc.ScanValid; valid says so, and then
// m is all of it), and its method as a string. A line the scan does not
// take is decoded, and err says why it is not JSON-RPC.
func envelope(line []byte) (m jsonrpc.Message, method string, valid bool, err error) {
	if m, ok := jsonrpc.ScanValid(line); ok {
		if len(m.Method) == 0 {
			return m, "", true, nil
		}
		if s, ok := knownMethod(m.Method); ok {
			return m, s, true, nil
		}
		if s, ok := jsonrpc.PlainString(m.Method); ok {
			return m, s, true, nil
		}
		var s string // not the named result: its address would move it to the heap at every call
		if json.Unmarshal(m.Method, &s) == nil {
			return m, s, true, nil
		}
	}
	var env struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
		Params json.RawMessage `json:"params"`
	}
	if err := json.Unmarshal(line, &env); err != nil {
		return jsonrpc.Message{}, "", false, err
	}
	return jsonrpc.Message{ID: env.ID, Params: env.Params}, env.Method, false, nil
}

// knownMethod returns the name of the methods a client sends at every
// turn without a copy of their bytes: a string made from bytes is an
// allocation, at every call.
func knownMethod(raw []byte) (string, bool) {
	switch string(raw) {
	case `"tools/call"`:
		return string(mcp.MethodToolsCall), true
	case `"notifications/cancelled"`:
		return string(mcp.MethodNotificationCancelled), true
	case `"notifications/progress"`:
		return string(mcp.MethodNotificationProgress), true
	case `"ping"`:
		return string(mcp.MethodPing), true
	}
	return "", false
}

// handle takes one line, on the reading goroutine: a request is registered
// and returned, to be served; a notification runs here, in order. open is
// false once the connection is ending.
func (c *stdioConn) handle(ctx context.Context, line []byte) (j job, isRequest, open bool) {
	line = bytes.TrimSpace(line)
	if len(line) == 0 {
		return job{}, false, true
	}
	m, method, valid, err := envelope(line)
	id, params := m.ID, m.Params
	if err != nil {
		c.send(mustEncode(mcp.NewJSONRPCError(mcp.NewRequestId(nil), mcp.PARSE_ERROR, "Parse error: "+err.Error(), nil)))
		return job{}, false, true
	}
	isRequest = len(id) > 0 && string(id) != "null" && method != ""
	switch {
	case isRequest:
		key := jsonrpc.IDKey(id)
		req := newRequest(c, method, key)
		c.mu.Lock()
		if c.closing {
			c.mu.Unlock()
			return job{}, false, false
		}
		c.inflight[key] = req
		c.handlers.Add(1)
		c.mu.Unlock()
		j = job{line: line, req: req}
		if valid && method == string(mcp.MethodToolsCall) {
			j.call, j.fast = parseFastMessage(m)
		}
		return j, true, true
	case method == string(mcp.MethodNotificationCancelled):
		var p struct {
			RequestID json.RawMessage `json:"requestId"`
		}
		if json.Unmarshal(params, &p) == nil && len(p.RequestID) > 0 {
			c.mu.Lock()
			req := c.inflight[jsonrpc.IDKey(p.RequestID)]
			c.mu.Unlock()
			if req != nil {
				req.cancelled.Store(true)
				req.end()
			}
		}
	case method != "":
		c.g.mcp.HandleMessage(ctx, line) // a notification: no answer
	default:
		// An answer to a request of ours (ask.go).
		c.g.asks.deliver(id, line)
	}
	return job{}, false, true
}

// endStreams cancels the requests that last until the client goes:
// subscriptions/listen.
func (c *stdioConn) endStreams() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, req := range c.inflight {
		if req.method == string(mcp.MethodSubscriptionsListen) {
			req.end()
		}
	}
}

// endAll ends every request in flight, when the connection ends early
// (request, rule 1).
func (c *stdioConn) endAll() {
	c.mu.Lock()
	reqs := make([]*request, 0, len(c.inflight))
	for _, req := range c.inflight {
		reqs = append(reqs, req)
	}
	c.mu.Unlock()
	for _, req := range reqs {
		req.end()
	}
}

// job is one request for a worker.
type job struct {
	line []byte
	req  *request // and its context
	call fastCall // the call, when fast: parseFastMessage took it
	fast bool
}

// serve runs one request and writes its answer.
func (c *stdioConn) serve(j job) {
	ctx, o := c.outcome(j)
	var answer []byte
	if fc, ok := c.fast(j); ok {
		answer = c.g.serveFast(ctx, fc)
	} else if resp := o.rewrite(c.g.mcp.HandleMessage(ctx, j.line)); resp != nil {
		answer = mustEncode(resp)
	}
	c.finish(j, answer)
}

// outcome is the context a request is served with: what its handler
// streams (a question to the client) is written on the connection.
func (c *stdioConn) outcome(j job) (context.Context, *outcome) {
	o := &j.req.outcome
	o.stream = c.streamFn
	o.gone = c.eof
	return j.req, o
}

// stream writes a notification of a request on the connection.
func (c *stdioConn) stream(msg []byte) bool {
	c.send(append(msg, '\n'))
	return true
}

// start starts a fast call whose tool can run it without anyone waiting
// for it (Gateway.startFast); answered then writes its answer, on whatever
// goroutine has the result. It reports false for any other request.
func (c *stdioConn) start(j job) bool {
	fc, ok := c.fast(j)
	if !ok {
		return false
	}
	c.outcome(j)
	j.req.id = fc.id
	return c.g.startFast(j.req, fc)
}

// answered ends a fast call started by start, whose tool gave res: it is
// no longer in flight, and its answer is written (or held for the
// result's burst) — unless the client cancelled it.
func (c *stdioConn) answered(r *request, res tools.Result) {
	r.outcome.answered.Store(true) // what the call reports after its answer has nowhere to go
	c.forget(r)
	defer c.handlers.Done() // once written (or held): the end of the connection waits for it
	if r.cancelled.Load() {
		return
	}
	c.wmu.Lock()
	defer c.wmu.Unlock()
	// The answer is made in the connection's buffer: Hold copies what it
	// keeps, and a write keeps nothing.
	c.abuf = appendAnswer(c.abuf[:0], r.id, res)
	c.writeHeldLocked(c.abuf, res.Burst)
	if cap(c.abuf) > maxAnswerBuffer {
		c.abuf = nil // keep no large answer around
	}
}

// maxAnswerBuffer bounds the buffer a connection keeps for the answers of
// fast calls between them: one a server's larger results, sent at every
// call, reuse.
const maxAnswerBuffer = 256 << 10

// finish ends a request a worker served: it is no longer in flight, and
// its answer, if any, is written — unless the client cancelled it.
func (c *stdioConn) finish(j job, answer []byte) {
	c.forget(j.req)
	defer c.handlers.Done() // once written: the end of the connection waits for it
	// A request the client cancelled gets no answer (the MCP specification
	// asks so).
	if answer != nil && !j.req.cancelled.Load() {
		c.send(answer)
	}
}

// forget ends request r: it is no longer in flight, and a new request may
// take its id. Its caller then writes the answer and only then marks it
// done (handlers): ServeStdio, at the end of stdin, returns once every
// answer is written, and one written after would race with it.
func (c *stdioConn) forget(r *request) {
	c.mu.Lock()
	if c.inflight[r.key] == r {
		delete(c.inflight, r.key)
	}
	c.mu.Unlock()
	r.end()
}

// fast returns the call of j when the fast path serves it (fastcall.go):
// a tools/call of an initialized session, for a tool the served list of
// mode full holds, that parseFastMessage took as the line was read.
func (c *stdioConn) fast(j job) (fastCall, bool) {
	if !j.fast || !c.sess.Initialized() || !c.g.servesFast(j.call.name) {
		return fastCall{}, false
	}
	return j.call, true
}

// send writes one message (a line, newline included), after the answers
// held for a burst. After a failed write it writes nothing more.
func (c *stdioConn) send(msg []byte) {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	c.writeHeldLocked(msg, nil)
}

// writeHeldLocked writes msg, or holds it for burst b (tools.Burst; nil
// holds nothing); the answers held go first. wmu is held.
func (c *stdioConn) writeHeldLocked(msg []byte, b *tools.Burst) {
	if c.werr != nil || c.held.Hold(b, c.flushFn, msg) {
		return
	}
	if held := c.held.Bytes(); len(held) > 0 {
		msg = append(held, msg...)
		defer c.held.Reset()
	}
	c.writeLocked(msg)
}

// flush writes the answers held for a burst, at its end.
func (c *stdioConn) flush() {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	if held := c.held.Bytes(); len(held) > 0 && c.werr == nil {
		c.writeLocked(held)
	}
	c.held.Reset()
}

// writeLocked writes msg; wmu is held.
func (c *stdioConn) writeLocked(msg []byte) {
	if _, err := c.out.Write(msg); err != nil {
		c.werr = fmt.Errorf("gateway: writing stdout: %w", err)
		close(c.failed)
	}
}

func (c *stdioConn) writeErr() error {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	return c.werr
}

// mustEncode encodes a message as one line, newline included, without
// HTML escaping of its own.
func mustEncode(v any) []byte {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		b.Reset()
		enc.Encode(mcp.NewJSONRPCError(mcp.NewRequestId(nil), mcp.INTERNAL_ERROR, "encoding the answer: "+err.Error(), nil))
	}
	return b.Bytes()
}

// errLineTooLong reports a line over the bound; the rest of it is skipped.
var errLineTooLong = errors.New("line too long")

// readLine reads one line of at most max bytes. A longer line is read to
// its end and dropped: it returns an empty line and errLineTooLong.
func readLine(r *bufio.Reader, max int) ([]byte, error) {
	var line []byte
	tooLong := false
	for {
		chunk, err := r.ReadSlice('\n')
		if !tooLong {
			if len(line)+len(chunk) > max+1 { // +1: the newline
				tooLong, line = true, nil
			} else {
				line = append(line, chunk...)
			}
		}
		switch {
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		case err != nil:
			if tooLong {
				return nil, err
			}
			return line, err
		case tooLong:
			return nil, errLineTooLong
		default:
			return line, nil
		}
	}
}

// sessionLists is what a stdio client has had of the served tools,
// resources (templates included) and prompts.
type sessionLists struct{ tools, resources, prompts listState }

// of is the state of the list a list_changed method announces.
func (l *sessionLists) of(method string) *listState {
	switch method {
	case mcp.MethodNotificationResourcesListChanged:
		return &l.resources
	case mcp.MethodNotificationPromptsListChanged:
		return &l.prompts
	}
	return &l.tools
}

// listState is what a client has had of one served list, as counts of
// its publishes (Gateway.publishedOf): the one its latest listing began
// at, and the latest a list_changed announced. A change before its first
// listing is not news, nor one it has listed or been told of.
type listState struct {
	once           atomic.Bool // it has listed
	listedAt, told atomic.Int64
}

// listed records a listing that began at publish cur.
func (s *listState) listed(cur int64) {
	s.listedAt.Store(cur)
	s.once.Store(true)
}

// news reports whether a list_changed of publish cur is news to the
// client, and if so records it as told.
func (s *listState) news(cur int64) bool {
	if !s.once.Load() || cur <= max(s.listedAt.Load(), s.told.Load()) {
		return false
	}
	s.told.Store(cur)
	return true
}
