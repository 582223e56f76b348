package mcpserver

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/mark3labs/mcp-go/mcp"
)

// Each request the gateway serves carries an outcome, for two things
// mcp-go's server does not give a tool handler:
//
//  1. Another error than -32603. A handler can only fail with -32603
//     (internal error), its error the message. Some answers of the gateway
//     are other JSON-RPC errors — -32602 for a requestState that fails its
//     check, -32021 for a client capability a call needed (mrtr.go) — so
//     the handler records the error it means, and the transport puts its
//     code and data in place of mcp-go's on the way out: stdio in
//     stdioConn.serve, HTTP through outcomeWriter.
//  2. Notifications in order with the answer. mcp-go sends a handler's
//     notifications through the session's channel, read by another
//     goroutine: over HTTP the last one before the answer can be lost (the
//     reader has taken it when the answer closes the stream), over stdio
//     it can come after the answer. Relayed progress and log messages
//     (relay.go) are written on the request's own stream instead, by the
//     call's goroutine, before the answer.

type outcomeKey struct{}

// outcome is what a request's handler tells its transport.
type outcome struct {
	err atomic.Pointer[mcp.JSONRPCErrorDetails]
	// stream writes one notification on the request's own stream; nil:
	// the transport has none (mcp-go's session channel is used).
	stream func(msg []byte) bool
	// gone, when not nil, closes when the client can no longer answer a
	// request sent on the stream (stdin ended).
	gone <-chan struct{}
	// answered is set when the handler has returned: nothing more is
	// written for it.
	answered atomic.Bool
	// keepStatus keeps HTTP 200 for the recorded error: a request of a
	// revision before 2026-07-28, which answers JSON-RPC errors with 200.
	keepStatus atomic.Bool
}

// withOutcome returns ctx with a fresh outcome.
func withOutcome(ctx context.Context) (context.Context, *outcome) {
	o := &outcome{}
	return context.WithValue(ctx, outcomeKey{}, o), o
}

// outcomeOf returns the outcome of ctx's request, or nil.
func outcomeOf(ctx context.Context) *outcome {
	o, _ := ctx.Value(outcomeKey{}).(*outcome)
	return o
}

// notify writes a notification on the request's own stream; false when it
// has none or the request was answered.
func (o *outcome) notify(msg []byte) bool {
	if o == nil || o.stream == nil || o.answered.Load() {
		return false
	}
	return o.stream(msg)
}

// fail records the JSON-RPC error the handler of ctx's request answers and
// returns the error the handler returns to mcp-go (whose message is the
// error's message).
func (g *Gateway) fail(ctx context.Context, code int, msg string, data any) error {
	if o, _ := ctx.Value(outcomeKey{}).(*outcome); o != nil {
		d := mcp.NewJSONRPCErrorDetails(code, msg, data)
		o.err.Store(&d)
	}
	return errors.New(msg)
}

// rewrite returns resp with the recorded error's code and data, when resp
// is mcp-go's error for it.
func (o *outcome) rewrite(resp mcp.JSONRPCMessage) mcp.JSONRPCMessage {
	d := o.err.Load()
	if d == nil {
		return resp
	}
	if e, ok := resp.(mcp.JSONRPCError); ok {
		e.Error.Code, e.Error.Data = d.Code, d.Data
		return e
	}
	return resp
}

// rewriteJSON is rewrite on an encoded message; ok is false when msg is not
// such an error.
func (o *outcome) rewriteJSON(msg []byte) (out []byte, ok bool) {
	d := o.err.Load()
	if d == nil {
		return nil, false
	}
	var m map[string]json.RawMessage
	if json.Unmarshal(msg, &m) != nil || m["error"] == nil || m["result"] != nil {
		return nil, false
	}
	var e mcp.JSONRPCErrorDetails
	if json.Unmarshal(m["error"], &e) != nil {
		return nil, false
	}
	e.Code, e.Data = d.Code, d.Data
	b, err := json.Marshal(e)
	if err != nil {
		return nil, false
	}
	m["error"] = b
	out, err = json.Marshal(m)
	return out, err == nil
}

// outcomeWriter is the response of one POST: it rewrites the answer the
// request's outcome names (a JSON body, or the event of an SSE stream
// that carries it), sets the HTTP status 2026-07-28 gives that error, and
// is the request's own stream for relayed notifications (an SSE event
// each; the first turns the response into a stream). Its lock orders
// mcp-go's writes and the relay's. mcp-go sets headers from two goroutines
// of its own (its lock orders them) while the relay may be sending the
// real ones: it is given a header map of its own (Header), copied to the
// response's when it writes the header.
type outcomeWriter struct {
	http.ResponseWriter
	o      *outcome
	shadow http.Header // mcp-go's headers, until they are sent

	mu          sync.Mutex
	wroteHeader bool
}

// Header is mcp-go's header map: sent with the response's own when mcp-go
// writes the header; ignored when a relayed notification wrote it first.
func (w *outcomeWriter) Header() http.Header { return w.shadow }

// sendHeaderLocked writes the header: mcp-go's, with status. w.mu is held.
func (w *outcomeWriter) sendHeaderLocked(status int) {
	h := w.ResponseWriter.Header()
	for k, v := range w.shadow {
		h[k] = v
	}
	w.ResponseWriter.WriteHeader(status)
	w.wroteHeader = true
}

// newOutcomeWriter wraps w for the request whose outcome is o. A writer of
// notifications on it tells the request's session first that the answer
// is a stream (Gateway.deliver), so that mcp-go writes the answer as an
// SSE event too.
func newOutcomeWriter(w http.ResponseWriter, o *outcome) *outcomeWriter {
	ow := &outcomeWriter{ResponseWriter: w, o: o, shadow: w.Header().Clone()}
	o.stream = func(msg []byte) bool {
		ow.mu.Lock()
		defer ow.mu.Unlock()
		if !ow.wroteHeader {
			h := ow.ResponseWriter.Header()
			h.Set("Content-Type", "text/event-stream")
			h.Set("Cache-Control", "no-cache")
			ow.ResponseWriter.WriteHeader(http.StatusOK)
			ow.wroteHeader = true
		}
		if _, err := fmt.Fprintf(ow.ResponseWriter, "event: message\ndata: %s\n\n", msg); err != nil {
			return false
		}
		if f, ok := ow.ResponseWriter.(http.Flusher); ok {
			f.Flush()
		}
		return true
	}
	return ow
}

func (w *outcomeWriter) WriteHeader(status int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.wroteHeader {
		return // a relayed notification made the answer a stream already
	}
	if d := w.o.err.Load(); d != nil && !w.o.keepStatus.Load() && strings.HasPrefix(w.shadow.Get("Content-Type"), "application/json") && status == http.StatusOK {
		if d.Code == mcp.INVALID_PARAMS || d.Code == mcp.MISSING_REQUIRED_CLIENT_CAPABILITY {
			status = http.StatusBadRequest
		}
	}
	w.sendHeaderLocked(status)
}

func (w *outcomeWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.wroteHeader {
		w.sendHeaderLocked(http.StatusOK) // as net/http does at a first Write
	}
	if w.o.err.Load() == nil {
		return w.ResponseWriter.Write(p)
	}
	if out, ok := w.o.rewriteJSON(bytes.TrimSpace(p)); ok {
		if _, err := w.ResponseWriter.Write(append(out, '\n')); err != nil {
			return 0, err
		}
		return len(p), nil
	}
	// An SSE event: "event: message\ndata: {…}\n\n".
	lines := bytes.Split(p, []byte("\n"))
	changed := false
	for i, l := range lines {
		if data, ok := bytes.CutPrefix(l, []byte("data: ")); ok {
			if out, ok := w.o.rewriteJSON(data); ok {
				lines[i] = append([]byte("data: "), out...)
				changed = true
			}
		}
	}
	if !changed {
		return w.ResponseWriter.Write(p)
	}
	if _, err := w.ResponseWriter.Write(bytes.Join(lines, []byte("\n"))); err != nil {
		return 0, err
	}
	return len(p), nil
}

// Flush passes on: mcp-go streams through it.
func (w *outcomeWriter) Flush() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// Unwrap lets http.ResponseController reach the connection.
func (w *outcomeWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }
