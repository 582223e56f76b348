package mcpclient

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/harness-go/harness/host/secret"
)

// clientName identifies us in the initialize handshake.
const clientName = "harness"

// clientVersion is the version of the module this binary was built from.
func clientVersion() string {
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		return bi.Main.Version
	}
	return "dev"
}

// maxPages bounds a tools/list pagination that never ends.
const maxPages = 1000

// RPCError is a JSON-RPC error answered by the server.
type RPCError struct {
	Code    int
	Message string
}

func (e *RPCError) Error() string {
	return fmt.Sprintf("%s (JSON-RPC error %d)", e.Message, e.Code)
}

// session is one connection to an MCP server: mcp-go's client for the
// handshake and the protocol's bookkeeping, and raw requests for tools/list
// and tools/call, so schemas and results reach us byte for byte (mcp-go's
// typed decoding drops parts of schemas, and one unknown content block would
// fail a whole call).
type session struct {
	cfg   Config
	log   *slog.Logger
	tr    transport.Interface
	stdio *stdioConn // nil over HTTP

	initReq mcp.InitializeRequest
	mu      sync.Mutex // guards cl and init during a re-initialization
	cl      *client.Client
	init    *mcp.InitializeResult

	ids       atomic.Int64
	listChang func()
}

// rawTool is one tool as listed, its schema untouched.
type rawTool struct {
	Name        string          `json:"name"`
	Description string          `json:"description"`
	InputSchema json.RawMessage `json:"inputSchema"`
	// Definition is the whole tool object as listed (title, annotations,
	// outputSchema…), for the gateway (tools.Tool.Definition).
	Definition json.RawMessage `json:"-"`
}

// defaultSchema stands in for a tool listed without an inputSchema.
var defaultSchema = json.RawMessage(`{"type":"object","properties":{}}`)

// dial opens the transport: it starts a stdio server, or prepares the HTTP
// client. life is the instance's long-lived context.
func dial(life context.Context, cfg Config, dir string, log *slog.Logger, secrets *secret.Set) (*session, error) {
	s := &session{cfg: cfg, log: log}
	s.initReq.Params.ClientInfo = mcp.Implementation{Name: clientName, Version: clientVersion()}
	switch cfg.Transport {
	case TransportStdio:
		env := childEnv(os.Environ(), cfg.Env)
		cwd := cfg.Cwd
		switch {
		case cwd == "":
			cwd, _ = os.Getwd()
		case !filepath.IsAbs(cwd):
			cwd = filepath.Join(dir, cwd)
		}
		conn, err := startStdio(cfg.Command, cfg.Args, env, cwd, log, secrets)
		if err != nil {
			return nil, err
		}
		s.tr, s.stdio = conn, conn
	case TransportHTTP:
		opts := []transport.StreamableHTTPCOption{
			transport.WithHTTPHeaders(cfg.Headers),
			// mcp-go's Close sends the DELETE that ends a session without
			// the headers above: a server that requires them answers 401
			// and keeps the session.
			transport.WithHTTPBasicClient(httpClient(cfg, secrets)),
			// mcp-go logs what it retries (a GET stream a server refuses, once
			// a second, for ever) at error level; what matters reaches us as
			// errors. Its records stay available at debug level.
			transport.WithHTTPLogger(slog.New(debugOnly{log.Handler()})),
		}
		if cfg.Protocol != ProtocolModern {
			// list_changed arrives on the GET stream before 2026-07-28.
			opts = append(opts, transport.WithContinuousListening())
		}
		tr, err := transport.NewStreamableHTTP(cfg.URL, opts...)
		if err != nil {
			return nil, err
		}
		s.tr = &httpConn{tr}
	}
	return s, nil
}

// handshake initializes the connection with the configured strategy (see
// ProtocolAuto). life outlives the handshake: mcp-go ties the HTTP listening
// stream to the context given to Start.
func (s *session) handshake(life, ctx context.Context, onListChanged func()) error {
	s.listChang = onListChanged
	legacy := func() *client.Client {
		return client.NewClient(s.tr, client.WithProtocolVersion(mcp.LATEST_LEGACY_PROTOCOL_VERSION))
	}
	var cl *client.Client
	var res *mcp.InitializeResult
	var err error
	switch s.cfg.Protocol {
	case ProtocolModern:
		cl, res, err = s.try(life, ctx, client.NewClient(s.tr))
	default:
		cl, res, err = s.try(life, ctx, legacy())
		if err != nil && s.cfg.Protocol == ProtocolAuto && handshakeRejected(err) {
			s.log.Debug("the server rejected the initialize handshake; trying server/discover", "err", err)
			tr := s.tr
			if h, ok := tr.(*httpConn); ok {
				tr = statelessConn{h} // else mcp-go sends initialize again
			}
			cl, res, err = s.try(life, ctx, client.NewClient(tr))
		}
	}
	if err != nil {
		return fmt.Errorf("initialize: %w", s.explain(err))
	}
	s.mu.Lock()
	s.cl, s.init = cl, res
	s.mu.Unlock()
	if s.modern() {
		go func() {
			err := cl.Listen(life, mcp.SubscriptionFilter{ToolsListChanged: true})
			if err != nil && life.Err() == nil {
				s.log.Debug("subscriptions/listen ended", "err", err)
			}
		}()
	}
	return nil
}

func (s *session) try(life, ctx context.Context, cl *client.Client) (*client.Client, *mcp.InitializeResult, error) {
	if err := cl.Start(life); err != nil {
		return nil, nil, err
	}
	cl.OnNotification(func(n mcp.JSONRPCNotification) {
		if n.Method == string(mcp.MethodNotificationToolsListChanged) && s.listChang != nil {
			s.listChang()
		}
	})
	res, err := cl.Initialize(ctx, s.initReq)
	return cl, res, err
}

// handshakeRejected reports an initialize that a server refused as a method
// it does not know, or a protocol version it does not speak: a server of the
// stateless era.
func handshakeRejected(err error) bool {
	var uv mcp.UnsupportedProtocolVersionError
	return errors.Is(err, mcp.ErrMethodNotFound) || errors.As(err, &uv)
}

// explain replaces a transport's generic error by why the connection ended,
// when we know it.
func (s *session) explain(err error) error {
	if s.stdio != nil {
		select {
		case <-s.stdio.Done():
			if lost := s.stdio.Err(); lost != nil {
				return lost
			}
		default:
		}
	}
	return err
}

// modern reports whether the connection speaks the stateless protocol.
func (s *session) modern() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.cl != nil && mcp.IsModernProtocol(s.cl.ProtocolVersion())
}

// info returns the server's identity and the protocol version in use.
func (s *session) info() (mcp.Implementation, string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.init == nil {
		return mcp.Implementation{}, ""
	}
	return s.init.ServerInfo, s.cl.ProtocolVersion()
}

// listTools returns every page of tools/list.
func (s *session) listTools(ctx context.Context) ([]rawTool, error) {
	var all []rawTool
	seen := map[string]bool{}
	cursor := ""
	for page := 0; ; page++ {
		if page == maxPages {
			return nil, fmt.Errorf("tools/list: more than %d pages", maxPages)
		}
		var params any
		if cursor != "" {
			params = map[string]string{"cursor": cursor}
		}
		raw, err := s.request(ctx, string(mcp.MethodToolsList), params)
		if err != nil {
			return nil, fmt.Errorf("tools/list: %w", err)
		}
		var res struct {
			Tools      []json.RawMessage `json:"tools"`
			NextCursor *string           `json:"nextCursor"`
		}
		if err := json.Unmarshal(raw, &res); err != nil {
			return nil, fmt.Errorf("tools/list: the result is not a tool list: %w", err)
		}
		for i, t := range res.Tools {
			var tool rawTool
			if err := json.Unmarshal(t, &tool); err != nil {
				return nil, fmt.Errorf("tools/list: tool %d of page %d: %w", i, page+1, err)
			}
			if len(tool.InputSchema) == 0 || string(tool.InputSchema) == "null" {
				tool.InputSchema = defaultSchema
			}
			tool.Definition = t
			all = append(all, tool)
		}
		if res.NextCursor == nil || *res.NextCursor == "" {
			return all, nil
		}
		cursor = *res.NextCursor
		if seen[cursor] {
			return nil, fmt.Errorf("tools/list: the server repeated cursor %q", cursor)
		}
		seen[cursor] = true
	}
}

// callParams is tools/call's params with the arguments kept raw.
type callParams struct {
	Name      string          `json:"name"`
	Arguments json.RawMessage `json:"arguments"`
}

// callTool runs tools/call and returns the raw result.
func (s *session) callTool(ctx context.Context, name string, args json.RawMessage) (json.RawMessage, error) {
	return s.request(ctx, string(mcp.MethodToolsCall), callParams{Name: name, Arguments: args})
}

// request sends one request and returns its raw result. On the handshake
// protocols it goes straight to the transport (ids of our own, so they never
// meet mcp-go's); on the stateless protocol it goes through mcp-go's client,
// which adds the per-request metadata, and the transport hands us the raw
// result.
func (s *session) request(ctx context.Context, method string, params any) (json.RawMessage, error) {
	if s.modern() {
		return s.typedRequest(ctx, method, params)
	}
	raw, err := s.send(ctx, method, params)
	if errors.Is(err, transport.ErrSessionTerminated) {
		// HTTP 404: the server forgot our session (it restarted, say). The
		// spec asks clients to start a new one; the tools may have changed.
		if rerr := s.reinitialize(ctx); rerr != nil {
			return nil, fmt.Errorf("the server ended the session and a new one failed: %w", rerr)
		}
		if s.listChang != nil && method != string(mcp.MethodToolsList) {
			s.listChang()
		}
		raw, err = s.send(ctx, method, params)
	}
	return raw, err
}

func (s *session) send(ctx context.Context, method string, params any) (json.RawMessage, error) {
	id := mcp.NewRequestId("h" + strconv.FormatInt(s.ids.Add(1), 10))
	resp, err := s.tr.SendRequest(ctx, transport.JSONRPCRequest{JSONRPC: mcp.JSONRPC_VERSION, ID: id, Method: method, Params: params})
	if err != nil {
		if ctx.Err() != nil {
			s.cancel(id, context.Cause(ctx))
			return nil, ctx.Err()
		}
		return nil, s.explain(err)
	}
	if resp.Error != nil {
		return nil, &RPCError{Code: resp.Error.Code, Message: resp.Error.Message}
	}
	return resp.Result, nil
}

// cancel tells the server to stop working on a request we gave up on. It is
// best effort and does not hold the caller up.
func (s *session) cancel(id mcp.RequestId, reason error) {
	n := mcp.JSONRPCNotification{
		JSONRPC: mcp.JSONRPC_VERSION,
		Notification: mcp.Notification{
			Method: string(mcp.MethodNotificationCancelled),
			Params: mcp.NotificationParams{AdditionalFields: map[string]any{"requestId": id, "reason": reason.Error()}},
		},
	}
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := s.tr.SendNotification(ctx, n); err != nil {
			s.log.Debug("could not send notifications/cancelled", "err", err)
		}
	}()
}

func (s *session) reinitialize(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.tr.GetSessionId() != "" {
		return nil // someone else already started a new session
	}
	res, err := s.cl.Initialize(ctx, s.initReq)
	if err != nil {
		return err
	}
	s.init = res
	s.log.Info("the server ended the session; started a new one")
	return nil
}

type rawKey struct{}

// rawSlot receives the raw result of the request made with its context.
type rawSlot struct{ raw json.RawMessage }

// typedRequest sends tools/list or tools/call through mcp-go's client and
// returns the raw result the transport captured.
func (s *session) typedRequest(ctx context.Context, method string, params any) (json.RawMessage, error) {
	slot := &rawSlot{}
	ctx = context.WithValue(ctx, rawKey{}, slot)
	s.mu.Lock()
	cl := s.cl
	s.mu.Unlock()
	var err error
	switch method {
	case string(mcp.MethodToolsList):
		req := mcp.ListToolsRequest{}
		if m, ok := params.(map[string]string); ok {
			req.Params.Cursor = mcp.Cursor(m["cursor"])
		}
		_, err = cl.ListToolsByPage(ctx, req)
	case string(mcp.MethodToolsCall):
		p := params.(callParams)
		req := mcp.CallToolRequest{}
		req.Params.Name = p.Name
		req.Params.Arguments = p.Arguments
		_, err = cl.CallTool(ctx, req)
	default:
		return nil, fmt.Errorf("%s: not supported on this protocol", method)
	}
	if slot.raw != nil {
		// mcp-go may fail to decode what we read raw anyway (an unknown
		// content type); the raw result is what counts.
		return slot.raw, nil
	}
	if err != nil {
		return nil, s.explain(err)
	}
	return nil, fmt.Errorf("%s: no result", method)
}

// capture stores a response's raw result in the request's slot, if any.
func capture(ctx context.Context, resp *transport.JSONRPCResponse) {
	if resp == nil || resp.Error != nil {
		return
	}
	if slot, ok := ctx.Value(rawKey{}).(*rawSlot); ok {
		slot.raw = resp.Result
	}
}

// httpConn is mcp-go's Streamable HTTP transport, with raw results captured
// for the stateless protocol (see typedRequest). Embedding keeps every
// optional interface mcp-go looks for.
type httpConn struct {
	*transport.StreamableHTTP
}

func (h *httpConn) SendRequest(ctx context.Context, req transport.JSONRPCRequest) (*transport.JSONRPCResponse, error) {
	resp, err := h.StreamableHTTP.SendRequest(ctx, req)
	if err == nil {
		capture(ctx, resp)
	}
	return resp, err
}

// statelessConn is httpConn for a fallback to the stateless protocol: mcp-go
// keeps a transport with a GET stream (WithContinuousListening, which only
// the handshake protocols use) on the handshake.
type statelessConn struct{ *httpConn }

func (statelessConn) RequiresLegacyProtocol() bool { return false }

// httpClient is the client of one Streamable HTTP server: the configured
// headers on every request, bounded bodies, error pages clipped (after
// redaction), and no redirect to another origin — the headers carry
// credentials, and Go's client would forward custom ones (and ours are set
// on every request) to wherever a redirect points.
func httpClient(cfg Config, secrets *secret.Set) *http.Client {
	return &http.Client{
		Transport:     &headerTransport{headers: cfg.Headers, secrets: secrets},
		CheckRedirect: sameOriginRedirects,
	}
}

// sameOriginRedirects follows a redirect only to the origin (scheme, host,
// port) of the first request, at most 10 times.
func sameOriginRedirects(req *http.Request, via []*http.Request) error {
	if len(via) >= 10 {
		return errors.New("stopped after 10 redirects")
	}
	if from, to := origin(via[0].URL), origin(req.URL); from != to {
		return &CrossOriginError{From: from, To: to}
	}
	return nil
}

// CrossOriginError is a redirect refused because it leads to another origin.
type CrossOriginError struct{ From, To string }

func (e *CrossOriginError) Error() string {
	return fmt.Sprintf("the server redirected to another origin, %s; refused: the configured headers are never sent to another origin than %s", e.To, e.From)
}

// origin is scheme://host:port, with the scheme's default port made explicit.
func origin(u *url.URL) string {
	port := u.Port()
	if port == "" {
		switch u.Scheme {
		case "https":
			port = "443"
		default:
			port = "80"
		}
	}
	return strings.ToLower(u.Scheme) + "://" + strings.ToLower(u.Hostname()) + ":" + port
}

// headerTransport sets the configured headers on every request.
type headerTransport struct {
	headers map[string]string
	secrets *secret.Set
}

func (h *headerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	for k, v := range h.headers {
		r.Header.Set(k, v)
	}
	resp, err := http.DefaultTransport.RoundTrip(r)
	if err == nil {
		// mcp-go reads bodies whole and copies error pages into errors: bound
		// them as the stdio transport bounds a line. An event stream is long
		// lived, so there the bound is per line (an SSE field), not per body.
		sse := strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream")
		resp.Body = &boundedBody{ReadCloser: resp.Body, max: MaxMessageBytes, lines: sse}
		if resp.StatusCode >= 300 && !strings.HasPrefix(resp.Header.Get("Content-Type"), "application/json") {
			// An error page ends up in an error text, shown to the model.
			resp.Body = &clippedBody{ReadCloser: resp.Body, max: errorPageBytes, secrets: h.secrets}
		}
	}
	return resp, err
}

// errorPageBytes is how much of an HTTP error page reaches an error text.
const errorPageBytes = 512

// clippedBody is the first max bytes of a body, redacted before it is
// clipped (a secret cut at the boundary must not leak its prefix), ending
// with "…" when something was cut.
type clippedBody struct {
	io.ReadCloser
	max     int
	secrets *secret.Set
	page    *strings.Reader // nil until the first read
}

func (c *clippedBody) Read(p []byte) (int, error) {
	if c.page == nil {
		// A secret that starts before the clip ends within MaxLen bytes.
		head, err := io.ReadAll(io.LimitReader(c.ReadCloser, int64(c.max+c.secrets.MaxLen()+1)))
		if err != nil && len(head) == 0 {
			return 0, err
		}
		text := c.secrets.Clip(string(head), c.max)
		c.page = strings.NewReader(text)
	}
	return c.page.Read(p)
}

// boundedBody fails a read once the body (or, with lines, one line of it)
// exceeds max bytes.
type boundedBody struct {
	io.ReadCloser
	max   int
	n     int // bytes of the body, or of the current line
	lines bool
}

func (b *boundedBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if !b.lines {
		b.n += n
	} else {
		for chunk := p[:n]; ; {
			i := bytes.IndexByte(chunk, '\n')
			if i < 0 {
				b.n += len(chunk)
				break
			}
			if b.n+i > b.max {
				b.n += i
				break
			}
			b.n, chunk = 0, chunk[i+1:]
		}
	}
	if b.n > b.max {
		return n, errTooLarge
	}
	return n, err
}

// debugOnly logs every record at debug level.
type debugOnly struct{ slog.Handler }

func (d debugOnly) Enabled(ctx context.Context, _ slog.Level) bool {
	return d.Handler.Enabled(ctx, slog.LevelDebug)
}

func (d debugOnly) Handle(ctx context.Context, r slog.Record) error {
	r.Level = slog.LevelDebug
	return d.Handler.Handle(ctx, r)
}

func (d debugOnly) WithAttrs(as []slog.Attr) slog.Handler { return debugOnly{d.Handler.WithAttrs(as)} }
func (d debugOnly) WithGroup(n string) slog.Handler       { return debugOnly{d.Handler.WithGroup(n)} }

// close ends the connection (for stdio: the close ladder).
func (s *session) close() error {
	return s.tr.Close()
}
