package mcpdemo

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"sync"
	"time"
)

// drainTimeout bounds how long EOF on stdin is held back for responses
// still being produced.
const drainTimeout = 10 * time.Second

// drainOnEOF wraps the stdio streams so that EOF on stdin reaches the MCP
// server only after every request read so far has been answered (or ctx is
// done, or timeout passes).
//
// mcp-go's StdioServer cancels in-flight work as soon as it reads EOF, so
// without this a client that writes its requests and then closes stdin
// (printf ... | mcp-demo) loses some of the responses.
func drainOnEOF(ctx context.Context, stdin io.Reader, stdout io.Writer, timeout time.Duration) (io.Reader, io.Writer) {
	f := newInflight()
	return &drainingReader{ctx: ctx, r: stdin, inflight: f, timeout: timeout},
		&answerWriter{w: stdout, inflight: f}
}

// envelope is the part of a JSON-RPC message that tells requests,
// responses and notifications apart.
type envelope struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
}

func parseEnvelope(line []byte) (envelope, bool) {
	var e envelope
	if json.Unmarshal(line, &e) != nil || len(e.ID) == 0 || string(e.ID) == "null" {
		return e, false // unparsable, or a notification: nothing to wait for
	}
	return e, true
}

// inflight counts requests awaiting a response.
type inflight struct {
	mu   sync.Mutex
	n    int
	idle chan struct{} // closed while n == 0
}

func newInflight() *inflight {
	idle := make(chan struct{})
	close(idle)
	return &inflight{idle: idle}
}

func (f *inflight) add() {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.n == 0 {
		f.idle = make(chan struct{})
	}
	f.n++
}

func (f *inflight) done() {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.n == 0 {
		return // a response we did not count a request for
	}
	f.n--
	if f.n == 0 {
		close(f.idle)
	}
}

// wait blocks until no request is in flight, ctx is done or timeout passes.
func (f *inflight) wait(ctx context.Context, timeout time.Duration) {
	f.mu.Lock()
	idle := f.idle
	f.mu.Unlock()
	t := time.NewTimer(timeout)
	defer t.Stop()
	select {
	case <-idle:
	case <-ctx.Done():
	case <-t.C:
	}
}

// drainingReader counts the requests among the complete lines it passes
// on, and holds back EOF until they are answered.
type drainingReader struct {
	ctx      context.Context
	r        io.Reader
	inflight *inflight
	timeout  time.Duration
	partial  []byte // an incomplete last line
}

func (d *drainingReader) Read(p []byte) (int, error) {
	n, err := d.r.Read(p)
	d.scan(p[:n])
	if err == io.EOF {
		if n > 0 {
			return n, nil // report EOF on the next call, after this data
		}
		d.inflight.wait(d.ctx, d.timeout)
	}
	return n, err
}

func (d *drainingReader) scan(b []byte) {
	for len(b) > 0 {
		i := bytes.IndexByte(b, '\n')
		if i < 0 {
			d.partial = append(d.partial, b...)
			return
		}
		line := b[:i]
		if len(d.partial) > 0 {
			line = append(d.partial, line...)
			d.partial = d.partial[:0]
		}
		if e, ok := parseEnvelope(line); ok && e.Method != "" {
			d.inflight.add()
		}
		b = b[i+1:]
	}
}

// answerWriter marks a request answered once its response is written. The
// stdio server writes each message with a single Write call.
type answerWriter struct {
	w        io.Writer
	inflight *inflight
}

func (a *answerWriter) Write(p []byte) (int, error) {
	n, err := a.w.Write(p)
	if e, ok := parseEnvelope(p); ok && e.Method == "" {
		a.inflight.done()
	}
	return n, err
}
