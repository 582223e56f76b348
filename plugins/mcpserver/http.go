package mcpserver

import (
	"bytes"
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strings"
	"sync/atomic"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/harness-go/harness/internal/debuglog"
	"github.com/harness-go/harness/internal/loop"
	"github.com/harness-go/harness/internal/origin"
)

// Path is where the gateway serves Streamable HTTP.
const Path = "/mcp"

// HTTPOptions configure [Gateway.HTTPHandler].
type HTTPOptions struct {
	// Token, when set, is required as "Authorization: Bearer <token>" on
	// every request.
	Token string
	// Bind is the address the listener is bound to (its IP is accepted as
	// a Host value); nil for a loopback listener.
	Bind net.Addr
	// AllowHosts are further Host header values accepted, as "name" (any
	// port) or "name:port", for a gateway reached under a name (a reverse
	// proxy, a non-loopback bind). Loopback names are always accepted.
	AllowHosts []string
	// MaxBodyBytes bounds a request body; default MaxMessageBytes.
	MaxBodyBytes int64
	// BodyTimeout bounds the time a request body takes to arrive once its
	// headers did; default DefaultBodyTimeout.
	BodyTimeout time.Duration
	// IdleTimeout closes a kept-alive connection without a request for
	// that long (ListenHTTP); default DefaultIdleTimeout.
	IdleTimeout time.Duration
	// MaxSessions and SessionIdle bound the sessions (sessions.go);
	// defaults DefaultMaxSessions and DefaultSessionIdle.
	MaxSessions int
	SessionIdle time.Duration
}

// The HTTP gateway's time bounds (docs/RELIABILITY.md, row 13a).
const (
	// DefaultBodyTimeout: a request body must arrive within 30 s of its
	// headers (16 MiB at 4.5 Mbit/s).
	DefaultBodyTimeout = 30 * time.Second
	// DefaultIdleTimeout: a kept-alive connection without a request is
	// closed after 2 minutes.
	DefaultIdleTimeout = 2 * time.Minute
	// headerTimeout: the request line and headers must arrive within 10 s.
	headerTimeout = 10 * time.Second
)

// HTTPHandler serves the gateway over Streamable HTTP at [Path]. Before a
// request reaches mcp-go it checks, in order: the path; the Host header
// (loopback names, the bound IP, AllowHosts: DNS rebinding); the Origin
// header when a browser sent one; the Bearer token, compared in constant
// time; the chain of harnesses the request came through (package loop);
// and the body size. Each refusal is an HTTP error with a JSON-RPC
// error body that says why. The paths where a client that got a 401 looks
// for OAuth (its metadata, /register…) answer 404 with an OAuth error
// body that says the gateway takes a Bearer token instead.
func (g *Gateway) HTTPHandler(o HTTPOptions) *HTTPHandler {
	if o.MaxBodyBytes <= 0 {
		o.MaxBodyBytes = MaxMessageBytes
	}
	if o.BodyTimeout <= 0 {
		o.BodyTimeout = DefaultBodyTimeout
	}
	if o.MaxSessions <= 0 {
		o.MaxSessions = DefaultMaxSessions
	}
	if o.SessionIdle <= 0 {
		o.SessionIdle = DefaultSessionIdle
	}
	h := &HTTPHandler{g: g, opts: o}
	h.SetToken(o.Token)
	h.sessions = newSessionTable(o.MaxSessions, o.SessionIdle, h.dropSession)
	h.mcp = server.NewStreamableHTTPServer(g.mcp,
		server.WithEndpointPath(Path),
		server.WithSessionIdManager(h.sessions),
		// Host checks are ours (they also know --allow-host).
		server.WithDisableLocalhostProtection(true),
		server.WithStreamableHTTPLogger(slog.New(debuglog.Handler(g.log.Handler()))),
		// A comment line on idle GET streams every 30 s keeps proxies and
		// NATs from closing them.
		server.WithHeartbeatInterval(30*time.Second),
	)
	return h
}

// HTTPHandler is the gateway's http.Handler. See [Gateway.HTTPHandler].
type HTTPHandler struct {
	g        *Gateway
	opts     HTTPOptions
	mcp      *server.StreamableHTTPServer
	token    atomic.Pointer[[32]byte] // SHA-256 of the token; nil: none required
	sessions *sessionTable
	calls    httpCalls // the fast calls in flight (httpfast.go)
}

// SetToken changes the required token while the handler serves ("" for
// none).
func (h *HTTPHandler) SetToken(token string) {
	if token == "" {
		h.token.Store(nil)
		return
	}
	sum := sha256.Sum256([]byte(token))
	h.token.Store(&sum)
}

// Shutdown ends every session (their GET streams return) so that the HTTP
// server can stop.
func (h *HTTPHandler) Shutdown(ctx context.Context) error {
	h.sessions.close()
	return h.mcp.Shutdown(ctx)
}

func (h *HTTPHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != Path && !oauthPath(r.URL.Path) {
		refuse(w, http.StatusNotFound, fmt.Sprintf("no MCP endpoint at %s: the gateway serves %s", r.URL.Path, Path))
		return
	}
	if !h.hosts().HostAllowed(r.Host) {
		refuse(w, http.StatusForbidden, fmt.Sprintf("Host %q is not accepted (DNS rebinding protection): the gateway answers to localhost, 127.0.0.1, [::1]%s", r.Host, h.allowedNote()))
		return
	}
	if o := r.Header.Get("Origin"); o != "" && !h.hosts().OriginAllowed(o) {
		refuse(w, http.StatusForbidden, fmt.Sprintf("Origin %q is not accepted: a web page may not drive the gateway (allowed origins are loopback and the --allow-host names)", o))
		return
	}
	if oauthPath(r.URL.Path) {
		noOAuth(w)
		return
	}
	if want := h.token.Load(); want != nil {
		got, ok := bearer(r.Header.Get("Authorization"))
		sum := sha256.Sum256([]byte(got))
		if !ok || subtle.ConstantTimeCompare(sum[:], want[:]) != 1 {
			w.Header().Set("WWW-Authenticate", `Bearer realm="harness"`)
			msg := "a Bearer token is required: " + bearerOnly
			if ok {
				msg = "the Bearer token is wrong: " + bearerOnly
			}
			refuse(w, http.StatusUnauthorized, msg)
			return
		}
	}
	if err := h.g.self.CheckRequest(r.Header.Get(loop.Header)); err != nil {
		refuse(w, http.StatusLoopDetected, err.Error())
		return
	}
	var body []byte
	if r.Body != nil && r.Method == http.MethodPost {
		if r.ContentLength > h.opts.MaxBodyBytes {
			refuse(w, http.StatusRequestEntityTooLarge, fmt.Sprintf("the request body is %d bytes; the most accepted is %d", r.ContentLength, h.opts.MaxBodyBytes))
			return
		}
		var status int
		var err error
		if body, status, err = h.readBody(w, r); err != nil {
			refuse(w, status, "reading the request body: "+err.Error())
			return
		}
		if int64(len(body)) > h.opts.MaxBodyBytes {
			refuse(w, http.StatusRequestEntityTooLarge, fmt.Sprintf("the request body is over %d bytes, the most accepted", h.opts.MaxBodyBytes))
			return
		}
		// A tools/call the fast path takes (httpfast.go).
		if fc, ok := parseFastCall(body); ok && h.serveFastCall(w, r, fc) {
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		// A client's answer to a request of the gateway's (ask.go).
		if id, ok := isAnswer(body); ok {
			h.g.asks.deliver(id, body)
			w.WriteHeader(http.StatusAccepted)
			return
		}
		h.cancelFast(r, body)
		// A handler may answer another JSON-RPC error than mcp-go's
		// (outcome.go).
		ctx, o := withOutcome(r.Context())
		r, w = r.WithContext(ctx), newOutcomeWriter(w, o)
	}
	done, ok := h.admit(w, r, body)
	if !ok {
		return
	}
	defer done()
	h.mcp.ServeHTTP(w, r)
}

// readBody reads a POST's body, bounded in size and in time: a client that
// drips it holds a connection and a goroutine, and past BodyTimeout it is
// refused (408). The read deadline is lifted afterwards, or the server's
// own read would end the request's context mid-call.
func (h *HTTPHandler) readBody(w http.ResponseWriter, r *http.Request) ([]byte, int, error) {
	rc := http.NewResponseController(w)
	_ = rc.SetReadDeadline(time.Now().Add(h.opts.BodyTimeout)) // unsupported by a test's recorder
	body, err := io.ReadAll(io.LimitReader(r.Body, h.opts.MaxBodyBytes+1))
	_ = rc.SetReadDeadline(time.Time{})
	switch {
	case errors.Is(err, os.ErrDeadlineExceeded):
		return nil, http.StatusRequestTimeout, fmt.Errorf("it did not arrive within %s", h.opts.BodyTimeout)
	case err != nil:
		return nil, http.StatusBadRequest, err
	}
	return body, 0, nil
}

// bearerOnly is what the gateway says to a client that tries OAuth, or sends
// no token or a wrong one.
const bearerOnly = "this gateway takes \"Authorization: Bearer <token>\", with the token it was started with (harness serve --token or $HARNESS_TOKEN; token: of an mcp-server entry); it offers no OAuth"

// oauthPath reports whether path is one a client looks for OAuth at after
// a 401: the metadata of RFC 9728 (protected resource) and RFC 8414 /
// OpenID Connect (authorization server), at the root or after the
// endpoint's path, and the endpoints a 2025-03-26 client assumes at the
// root when it finds no metadata (registration, authorization, token).
func oauthPath(path string) bool {
	for _, p := range []string{"/.well-known/oauth-protected-resource", "/.well-known/oauth-authorization-server", "/.well-known/openid-configuration", Path + "/.well-known/openid-configuration"} {
		if path == p || strings.HasPrefix(path, p+"/") {
			return true
		}
	}
	switch path {
	case "/register", "/authorize", "/token":
		return true
	}
	return false
}

// noOAuth answers an OAuth discovery or registration request: 404, with an
// OAuth error body (RFC 6749 §5.2) whose description says what the gateway
// takes instead — the text a client shows when its login fails ("Dynamic
// Client Registration rejected (HTTP 404): …").
func noOAuth(w http.ResponseWriter) {
	_ = http.NewResponseController(w).SetReadDeadline(time.Now()) // unsupported by a test's recorder
	w.Header().Set("Connection", "close")
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(http.StatusNotFound)
	writeJSON(w, map[string]string{"error": "invalid_request", "error_description": bearerOnly})
}

// refuse answers an HTTP error whose body is a JSON-RPC error: what MCP
// clients show of a failed request. The connection closes after it, and
// what is left of the request body is not waited for: net/http would read
// it (up to 256 KiB) before it reuses the connection, so a client without
// credentials that drips a body would hold the connection, and the
// response, as long as it likes.
func refuse(w http.ResponseWriter, status int, msg string) {
	_ = http.NewResponseController(w).SetReadDeadline(time.Now()) // unsupported by a test's recorder
	w.Header().Set("Connection", "close")
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	writeJSON(w, mcp.NewJSONRPCError(mcp.NewRequestId(nil), mcp.INVALID_REQUEST, msg, nil))
}

// writeJSON writes v as one line of JSON, with <, > and & as they are: a
// client shows the body as text ("Bearer <token>", not "\u003ctoken\u003e").
func writeJSON(w io.Writer, v any) {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(v)
}

// bearer returns the token of an "Authorization: Bearer <token>" value.
func bearer(v string) (string, bool) {
	scheme, token, ok := strings.Cut(strings.TrimSpace(v), " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return "", false
	}
	token = strings.TrimSpace(token)
	return token, token != ""
}

func (h *HTTPHandler) allowedNote() string {
	names := h.hosts().Names()
	note := "; to accept another name, add it with --allow-host (allowHosts: in cordis.yml)"
	if len(names) == 0 {
		return note
	}
	return ", " + strings.Join(names, ", ") + note
}

// hosts are the Host and Origin values the handler accepts.
func (h *HTTPHandler) hosts() origin.Hosts {
	return origin.Hosts{Bind: h.opts.Bind, Allow: h.opts.AllowHosts}
}

// ErrNeedsToken refuses a non-loopback listen address without a token.
var ErrNeedsToken = errors.New("a non-loopback address needs a token")

// CheckListen refuses to serve HTTP on an address other machines can reach
// without a token. An empty host (":8080") means every interface.
func CheckListen(addr, token string) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("listen address %q: want host:port, such as 127.0.0.1:8750: %w", addr, err)
	}
	if token != "" || origin.IsLoopbackName(strings.ToLower(host)) {
		return nil
	}
	where := host
	if where == "" {
		where = "every interface"
	}
	return fmt.Errorf("refusing to serve on %s (%s) without a token: other machines could call every tool: %w", addr, where, ErrNeedsToken)
}

// HTTPServer is a gateway served over HTTP on a listener of its own.
type HTTPServer struct {
	h   *HTTPHandler
	srv *http.Server
	ln  net.Listener
	// cancel ends the context of every request (Close): a call in flight
	// is cancelled, and its server told, instead of being waited for.
	cancel context.CancelCauseFunc
}

// errClosing is why Close cancels the requests in flight.
var errClosing = errors.New("the gateway is shutting down")

// ListenHTTP checks addr ([CheckListen]) and listens on it; serve with
// [HTTPServer.Serve]. o.Bind is set from the listener.
func (g *Gateway) ListenHTTP(addr string, o HTTPOptions) (*HTTPServer, error) {
	if err := CheckListen(addr, o.Token); err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("gateway: %w", err)
	}
	o.Bind = ln.Addr()
	h := g.HTTPHandler(o)
	idle := o.IdleTimeout
	if idle <= 0 {
		idle = DefaultIdleTimeout
	}
	base, cancel := context.WithCancelCause(context.Background())
	srv := &http.Server{
		Handler:           h,
		BaseContext:       func(net.Listener) context.Context { return base },
		ReadHeaderTimeout: headerTimeout,
		IdleTimeout:       idle,
		MaxHeaderBytes:    64 << 10,
		ErrorLog:          slog.NewLogLogger(debuglog.Handler(g.log.Handler()), slog.LevelDebug),
	}
	return &HTTPServer{h: h, srv: srv, ln: ln, cancel: cancel}, nil
}

// Handler returns the server's handler (to change its token, say).
func (s *HTTPServer) Handler() *HTTPHandler { return s.h }

// Addr is the address the server listens on.
func (s *HTTPServer) Addr() net.Addr { return s.ln.Addr() }

// URL is the endpoint clients connect to; for a server on every interface,
// its loopback address.
func (s *HTTPServer) URL() string {
	a, ok := s.ln.Addr().(*net.TCPAddr)
	if !ok {
		return "http://" + s.ln.Addr().String() + Path
	}
	ip := a.IP
	if ip.IsUnspecified() {
		if ip.To4() != nil {
			ip = net.IPv4(127, 0, 0, 1)
		} else {
			ip = net.IPv6loopback
		}
	}
	return "http://" + net.JoinHostPort(ip.String(), fmt.Sprint(a.Port)) + Path
}

// Serve serves until Close; it returns nil once closed.
func (s *HTTPServer) Serve() error {
	if err := s.srv.Serve(s.ln); !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("gateway: %w", err)
	}
	return nil
}

// Close ends every session and cancels the requests in flight (a tool
// call's backend is told, as when its client cancels), waits for them
// within ctx, then closes what is left.
func (s *HTTPServer) Close(ctx context.Context) error {
	s.cancel(errClosing)
	_ = s.h.Shutdown(ctx)
	err := s.srv.Shutdown(ctx)
	if err != nil {
		err = s.srv.Close()
	}
	_ = s.ln.Close() // when Serve never ran
	return err
}
