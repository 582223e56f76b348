package mcpserver

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync"
	"sync/atomic"

	"github.com/mark3labs/mcp-go/mcp"
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
// runs at most five tool calls at a time. Here every request runs on its
// own goroutine, and a notifications/cancelled is matched to its request on
// the reading goroutine, so it can never overtake the request it cancels.
func (g *Gateway) ServeStdio(ctx context.Context, in io.Reader, out io.Writer) error {
	sess := &stdioSession{id: fmt.Sprintf("stdio-%d", g.sessions.Add(1)), notes: make(chan mcp.JSONRPCNotification, 64)}
	if err := g.mcp.RegisterSession(ctx, sess); err != nil {
		return fmt.Errorf("gateway: register the stdio session: %w", err)
	}
	defer g.mcp.UnregisterSession(context.Background(), sess.id)

	base, cancelAll := context.WithCancelCause(g.mcp.WithContext(ctx, sess))
	defer cancelAll(nil)
	c := &stdioConn{
		g:          g,
		out:        out,
		outbox:     make(chan []byte, 64),
		writerGone: make(chan struct{}),
		inflight:   map[string]*inflight{},
	}
	writerDone := make(chan error, 1)
	go func() {
		defer close(c.writerGone)
		writerDone <- c.writeLoop(sess)
	}()

	type read struct {
		line    []byte
		tooLong bool
	}
	lines := make(chan read)
	readErr := make(chan error, 1)
	stop := make(chan struct{})
	defer close(stop)
	go func() {
		r := bufio.NewReaderSize(in, 64<<10)
		for {
			line, err := readLine(r, MaxMessageBytes)
			tooLong := errors.Is(err, errLineTooLong)
			if len(line) > 0 || tooLong {
				select {
				case lines <- read{line, tooLong}:
				case <-stop:
					return
				}
			}
			if err != nil && !tooLong {
				readErr <- err
				return
			}
		}
	}()

	var result error
loop:
	for {
		select {
		case r := <-lines:
			if r.tooLong {
				c.send(mustEncode(mcp.NewJSONRPCError(mcp.NewRequestId(nil), mcp.PARSE_ERROR, fmt.Sprintf("a message longer than %d bytes was dropped", MaxMessageBytes), nil)))
				continue
			}
			c.handle(base, r.line)
		case err := <-readErr:
			if !errors.Is(err, io.EOF) {
				result = fmt.Errorf("gateway: reading stdin: %w", err)
			}
			break loop
		case err := <-writerDone:
			writerDone <- err
			result = err
			break loop
		case <-ctx.Done():
			break loop
		}
	}
	// The end of stdin is the client's way to stop: the requests in flight
	// finish and are answered (subscription streams, which never finish,
	// end now); when ctx ended or stdout failed, everything is cancelled.
	if result != nil || ctx.Err() != nil {
		cancelAll(errors.New("the connection ended"))
	} else {
		c.endStreams()
	}
	c.handlers.Wait()
	close(c.outbox)
	select {
	case err := <-writerDone:
		if err != nil && result == nil {
			result = err
		}
	case <-ctx.Done():
		// A client that neither reads nor closes stdout holds the last
		// write; ending ctx abandons it.
	}
	return result
}

// stdioSession is the mcp-go session of one stdio client.
type stdioSession struct {
	id          string
	notes       chan mcp.JSONRPCNotification
	initialized atomic.Bool
}

func (s *stdioSession) SessionID() string { return s.id }
func (s *stdioSession) NotificationChannel() chan<- mcp.JSONRPCNotification {
	return s.notes
}
func (s *stdioSession) Initialize()       { s.initialized.Store(true) }
func (s *stdioSession) Initialized() bool { return s.initialized.Load() }

// inflight is a request being served.
type inflight struct {
	method    string
	cancel    context.CancelFunc
	cancelled atomic.Bool // by the client's notifications/cancelled
}

type stdioConn struct {
	g          *Gateway
	out        io.Writer
	outbox     chan []byte
	writerGone chan struct{} // closed when the writer stopped (stdout failed, or the end)
	handlers   sync.WaitGroup

	mu       sync.Mutex
	inflight map[string]*inflight // by the request id's JSON
}

// envelope is what the reader needs of a message.
type envelope struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Params struct {
		RequestID json.RawMessage `json:"requestId"`
	} `json:"params"`
}

// handle dispatches one line, on the reading goroutine: requests start
// their own goroutine, notifications run here, in order.
func (c *stdioConn) handle(ctx context.Context, line []byte) {
	line = bytes.TrimSpace(line)
	if len(line) == 0 {
		return
	}
	var env envelope
	if err := json.Unmarshal(line, &env); err != nil {
		c.send(mustEncode(mcp.NewJSONRPCError(mcp.NewRequestId(nil), mcp.PARSE_ERROR, "Parse error: "+err.Error(), nil)))
		return
	}
	isRequest := len(env.ID) > 0 && string(env.ID) != "null" && env.Method != ""
	switch {
	case isRequest:
		key := compact(env.ID)
		rctx, cancel := context.WithCancel(ctx)
		req := &inflight{method: env.Method, cancel: cancel}
		c.mu.Lock()
		c.inflight[key] = req
		c.mu.Unlock()
		c.handlers.Add(1)
		go func() {
			defer c.handlers.Done()
			resp := c.g.mcp.HandleMessage(rctx, line)
			c.mu.Lock()
			if c.inflight[key] == req {
				delete(c.inflight, key)
			}
			c.mu.Unlock()
			cancel()
			// A request the client cancelled gets no answer (the MCP
			// specification asks so).
			if resp != nil && !req.cancelled.Load() {
				c.send(mustEncode(resp))
			}
		}()
	case env.Method == string(mcp.MethodNotificationCancelled):
		if len(env.Params.RequestID) > 0 {
			c.mu.Lock()
			req := c.inflight[compact(env.Params.RequestID)]
			c.mu.Unlock()
			if req != nil {
				req.cancelled.Store(true)
				req.cancel()
			}
		}
	case env.Method != "":
		c.g.mcp.HandleMessage(ctx, line) // a notification: no answer
	default:
		// A response to a request of ours: the gateway sends none.
	}
}

// endStreams cancels the requests that last until the client goes:
// subscriptions/listen.
func (c *stdioConn) endStreams() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, req := range c.inflight {
		if req.method == string(mcp.MethodSubscriptionsListen) {
			req.cancel()
		}
	}
}

// send queues a message for the writer; once the writer stopped it is
// dropped. The outbox closes only after every handler is done, so nothing
// sends on a closed outbox.
func (c *stdioConn) send(msg []byte) {
	select {
	case c.outbox <- msg:
	case <-c.writerGone:
	}
}

// writeLoop writes queued answers and the session's notifications, one
// line each, until the outbox closes.
func (c *stdioConn) writeLoop(sess *stdioSession) error {
	w := bufio.NewWriterSize(c.out, 64<<10)
	var failed error
	write := func(msg []byte) {
		if failed != nil {
			return
		}
		w.Write(msg)
		w.WriteByte('\n')
		// Flush when nothing else is waiting: a burst is one write.
		if len(c.outbox) == 0 && len(sess.notes) == 0 {
			if err := w.Flush(); err != nil {
				failed = fmt.Errorf("gateway: writing stdout: %w", err)
			}
		}
	}
	for {
		select {
		case msg, ok := <-c.outbox:
			if !ok {
				if failed == nil {
					if err := w.Flush(); err != nil {
						failed = fmt.Errorf("gateway: writing stdout: %w", err)
					}
				}
				return failed
			}
			write(msg)
		case n := <-sess.notes:
			write(mustEncode(n))
		}
		if failed != nil {
			return failed
		}
	}
}

func compact(id json.RawMessage) string {
	var b bytes.Buffer
	if json.Compact(&b, id) != nil {
		return string(id)
	}
	return b.String()
}

// mustEncode encodes a message without HTML escaping (<, > and & stay as
// the tools wrote them).
func mustEncode(v any) []byte {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		b.Reset()
		enc.Encode(mcp.NewJSONRPCError(mcp.NewRequestId(nil), mcp.INTERNAL_ERROR, "encoding the answer: "+err.Error(), nil))
	}
	return bytes.TrimRight(b.Bytes(), "\n")
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
