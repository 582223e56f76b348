package mcpserver

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"mime"
	"net/http"
	"sync"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

// The fast path of a call over Streamable HTTP (docs/rfc/0005-gateway.md,
// "The fast path over HTTP"). mcp-go's POST handling of a tools/call
// decodes the body twice, and the gateway's own checks twice more, before
// HandleMessage decodes it five more times; it starts a goroutine to
// forward the session's notifications, and encodes the answer through its
// types: most of the HTTP gateway's own time. A call the stdio fast path
// would take (parseFastCall, servesFast) is served here instead, when
// mcp-go would serve it so:
//
//  1. The request is of the session era: a Content-Type of
//     application/json, an MCP-Protocol-Version that is absent or one mcp-go
//     accepts and not 2026-07-28 (the body has no _meta: parseFastCall).
//  2. Its Mcp-Session-Id names a session the gateway issued (the session
//     table counts the request, as admit does) that mcp-go holds registered
//     and that is initialized: the session mcp-go would serve it with.
//  3. Nothing waits in the session's notification channel. mcp-go's
//     handler would write what waits there (a list_changed broadcast, say)
//     on this POST's stream before the answer; the fast path leaves such a
//     request to it, so that nothing queued is held back.
//
// The call then runs as serveFast runs it on stdio, in a context holding
// the session, with a cancel function a later notifications/cancelled of
// the session finds (httpCalls), as mcp-go's in-flight table would. What
// the call streams — relayed progress, log messages, a question — goes on
// the POST's own stream (outcomeWriter), and the answer follows as the
// stream's last event; otherwise the answer is one application/json body
// of the bytes mcp-go writes. Every other request is mcp-go's.
//
// One difference is deliberate: once any notification reached a session
// (a broadcast is enough), mcp-go answers its every later POST as an SSE
// stream; the fast path answers application/json unless the call itself
// streamed something. The transport lets the server choose per request,
// and clients take either.

// streamSessions are the sessions of Streamable HTTP mcp-go holds
// registered, by id: mcp-go's own table is not exported, so the gateway
// keeps this one through the register hooks.
type streamSessions struct{ m sync.Map } // id → server.ClientSession

// watch keeps s in step with mcp-go's registered sessions.
func (s *streamSessions) watch(hooks *server.Hooks) {
	hooks.AddOnRegisterSession(func(_ context.Context, sess server.ClientSession) {
		if _, ok := sess.(server.SessionWithStreamableHTTPConfig); ok {
			s.m.Store(sess.SessionID(), sess)
		}
	})
	hooks.AddOnUnregisterSession(func(_ context.Context, sess server.ClientSession) {
		s.m.CompareAndDelete(sess.SessionID(), sess)
	})
}

// initialized returns the registered session of id when it is
// initialized, or nil.
func (s *streamSessions) initialized(id string) server.ClientSession {
	v, ok := s.m.Load(id)
	if !ok {
		return nil
	}
	sess := v.(server.ClientSession)
	if !sess.Initialized() {
		return nil
	}
	return sess
}

// httpCalls are the fast calls in flight over HTTP, by session and
// request id as mcp-go keys its own in-flight requests, so that a
// notifications/cancelled ends them.
type httpCalls struct {
	mu sync.Mutex
	m  map[string]*context.CancelFunc
}

// callKey is the key of request id (as mcp-go holds it: a string or a
// float64) of session.
func callKey(session string, id any) string { return fmt.Sprintf("%s:%v", session, id) }

func (c *httpCalls) add(key string, cancel *context.CancelFunc) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil {
		c.m = map[string]*context.CancelFunc{}
	}
	c.m[key] = cancel
}

func (c *httpCalls) remove(key string, cancel *context.CancelFunc) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m[key] == cancel {
		delete(c.m, key)
	}
}

// cancel ends the fast call of key, if one is in flight.
func (c *httpCalls) cancel(key string) {
	c.mu.Lock()
	cancel := c.m[key]
	delete(c.m, key)
	c.mu.Unlock()
	if cancel != nil {
		(*cancel)()
	}
}

// serveFastCall serves fc, the call of the POST r, when the fast path
// takes it (above). It reports false, having written nothing, when the
// request is mcp-go's.
func (h *HTTPHandler) serveFastCall(w http.ResponseWriter, r *http.Request, fc fastCall) bool {
	if mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type")); err != nil || mt != "application/json" {
		return false
	}
	if v := r.Header.Get(mcp.HeaderProtocolVersion); mcp.IsModernProtocol(v) || (v != "" && !mcp.IsValidProtocolVersion(v)) {
		return false
	}
	id := r.Header.Get(server.HeaderKeySessionID)
	sess := h.g.streams.initialized(id)
	if sess == nil || len(sess.NotificationChannel()) > 0 || !h.g.servesFast(fc.name) || !h.sessions.begin(id) {
		return false
	}
	defer h.sessions.end(id)
	ctx, cancel := context.WithCancel(h.g.mcp.WithContext(r.Context(), sess))
	defer cancel()
	key := callKey(id, idValue(fc.id))
	h.calls.add(key, &cancel)
	defer h.calls.remove(key, &cancel)
	ctx, o := withOutcome(ctx)
	ow := newOutcomeWriter(w, o)
	ow.answer(h.g.serveFast(ctx, fc))
	return true
}

// cancelFast ends the fast call a notifications/cancelled body names, if
// it is in flight; mcp-go then handles the notification as ever (it finds
// nothing of its own to cancel).
func (h *HTTPHandler) cancelFast(r *http.Request, body []byte) {
	if !bytes.Contains(body, []byte(string(mcp.MethodNotificationCancelled))) {
		return
	}
	var n struct {
		Method string         `json:"method"`
		Params map[string]any `json:"params"`
	}
	if json.Unmarshal(body, &n) != nil || n.Method != string(mcp.MethodNotificationCancelled) {
		return
	}
	if id, ok := n.Params["requestId"]; ok {
		h.calls.cancel(callKey(r.Header.Get(server.HeaderKeySessionID), id))
	}
}

// answer writes a fast call's answer (a line): as the last event of the
// stream a relayed notification made of the response, or else as its
// application/json body, as mcp-go writes either.
func (w *outcomeWriter) answer(msg []byte) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.wroteHeader {
		_, _ = fmt.Fprintf(w.ResponseWriter, "event: message\ndata: %s\n\n", bytes.TrimSuffix(msg, []byte("\n")))
		if f, ok := w.ResponseWriter.(http.Flusher); ok {
			f.Flush()
		}
		return
	}
	w.shadow.Set("Content-Type", "application/json")
	w.sendHeaderLocked(http.StatusOK)
	_, _ = w.ResponseWriter.Write(msg)
}
