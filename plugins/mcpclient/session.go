package mcpclient

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"runtime/debug"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
)

// clientName identifies us in the handshake.
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

// cancelBound bounds the notifications/cancelled of a call we gave up on.
// The call waits for it, so a one-shot command that exits next has told the
// server before the server is closed.
const cancelBound = time.Second

// RPCError is a JSON-RPC error answered by the server. errors.Is matches
// mcp-go's sentinels (mcp.ErrMethodNotFound, …).
type RPCError struct {
	Code    int
	Message string
	err     error
}

func (e *RPCError) Error() string {
	return fmt.Sprintf("%s (JSON-RPC error %d)", e.Message, e.Code)
}

func (e *RPCError) Unwrap() error { return e.err }

// session speaks MCP on one connection: the handshake, then raw requests —
// tools/list and tools/call results reach us byte for byte (mcp-go's typed
// decoding drops parts of schemas, and one unknown content block would fail
// a whole call). Every request goes through request; mcp-go is used for its
// transports and types only.
type session struct {
	c        conn
	log      *slog.Logger
	strategy string
	client   mcp.Implementation
	ids      atomic.Int64

	onListChanged func()

	reinit sync.Mutex // one re-initialization at a time

	isModern atomic.Bool // the protocol in use is the stateless one

	mu     sync.Mutex // guards the handshake's outcome
	proto  string
	meta   []byte // the stateless protocol's _meta object, encoded once
	info   mcp.Implementation
	caps   mcp.ServerCapabilities
	listen context.CancelFunc // the subscriptions/listen stream (2026-07-28)
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

// newSession wraps a connection; call handshake before anything else.
// onListChanged is called (off the read loop) when the server says its
// tools changed.
func newSession(c conn, strategy string, log *slog.Logger, onListChanged func()) *session {
	s := &session{c: c, log: log, strategy: strategy, onListChanged: onListChanged,
		client: mcp.Implementation{Name: clientName, Version: clientVersion()}}
	c.SetNotificationHandler(func(n mcp.JSONRPCNotification) {
		if n.Method == string(mcp.MethodNotificationToolsListChanged) && s.onListChanged != nil {
			s.onListChanged()
		}
	})
	return s
}

// handshake initializes the session with the configured strategy (see
// ProtocolAuto). life outlives the handshake: the 2026-07-28 protocol's
// listening request lives as long as it.
func (s *session) handshake(life, ctx context.Context) error {
	var err error
	switch s.strategy {
	case ProtocolModern:
		if err = s.discover(ctx); err != nil && handshakeRejected(err) {
			s.log.Debug("the server rejected server/discover; trying initialize", "err", err)
			err = s.initialize(ctx)
		}
	default:
		err = s.initialize(ctx)
		if err != nil && s.strategy == ProtocolAuto && handshakeRejected(err) {
			s.log.Debug("the server rejected the initialize handshake; trying server/discover", "err", err)
			err = s.discover(ctx)
		}
	}
	if err != nil {
		return fmt.Errorf("initialize: %w", s.explain(err))
	}
	if s.modern() {
		lctx, cancel := context.WithCancel(life)
		s.mu.Lock()
		s.listen = cancel
		s.mu.Unlock()
		go s.listenStream(lctx)
	}
	return nil
}

// initialize is the handshake of protocol 2025-11-25 and before.
func (s *session) initialize(ctx context.Context) error {
	params := map[string]any{
		"protocolVersion": mcp.LATEST_LEGACY_PROTOCOL_VERSION,
		"capabilities":    map[string]any{},
		"clientInfo":      s.client,
	}
	raw, err := s.send(ctx, string(mcp.MethodInitialize), params, nil)
	if err != nil {
		return err
	}
	var res mcp.InitializeResult
	if err := json.Unmarshal(raw, &res); err != nil {
		return fmt.Errorf("the initialize result does not decode: %w", err)
	}
	if !mcp.IsValidProtocolVersion(res.ProtocolVersion) {
		return mcp.UnsupportedProtocolVersionError{Version: res.ProtocolVersion}
	}
	s.setProtocol(res.ProtocolVersion, res.ServerInfo)
	s.setCapabilities(res.Capabilities)
	return s.c.SendNotification(ctx, mcp.JSONRPCNotification{
		JSONRPC:      mcp.JSONRPC_VERSION,
		Notification: mcp.Notification{Method: string(mcp.MethodNotificationInitialized)},
	})
}

// discover is the stateless protocol's probe (2026-07-28): every request
// carries the version, and server/discover tells what the server is. A
// server that names the versions it supports gets one more try.
func (s *session) discover(ctx context.Context) error {
	version := mcp.LATEST_PROTOCOL_VERSION
	for try := 0; ; try++ {
		s.setProtocol(version, mcp.Implementation{})
		raw, err := s.request(ctx, string(mcp.MethodServerDiscover), map[string]any{})
		var unsupported mcp.UnsupportedProtocolVersionError
		if err != nil && try == 0 && errors.As(err, &unsupported) {
			if v := mcp.NegotiateMutuallySupportedVersion(unsupported.Supported); v != "" && mcp.IsModernProtocol(v) && v != version {
				version = v
				continue
			}
		}
		if err != nil {
			s.setProtocol("", mcp.Implementation{})
			return err
		}
		var res mcp.DiscoverResult
		if err := json.Unmarshal(raw, &res); err != nil {
			s.setProtocol("", mcp.Implementation{})
			return fmt.Errorf("the server/discover result does not decode: %w", err)
		}
		var info mcp.Implementation
		if si := res.GetResultMeta().ServerInfo(); si != nil {
			info = *si
		}
		s.setProtocol(version, info)
		s.setCapabilities(res.Capabilities)
		return nil
	}
}

func (s *session) setCapabilities(c mcp.ServerCapabilities) {
	s.mu.Lock()
	s.caps = c
	s.mu.Unlock()
}

// capabilities returns what the server said it can do.
func (s *session) capabilities() mcp.ServerCapabilities {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.caps
}

func (s *session) setProtocol(version string, info mcp.Implementation) {
	modern := mcp.IsModernProtocol(version)
	var meta []byte
	if modern {
		meta, _ = json.Marshal(map[string]any{
			mcp.MetaKeyProtocolVersion:    version,
			mcp.MetaKeyClientCapabilities: mcp.ClientCapabilities{},
			mcp.MetaKeyClientInfo:         s.client,
		})
	}
	s.mu.Lock()
	s.proto, s.meta, s.info = version, meta, info
	s.mu.Unlock()
	s.isModern.Store(modern)
	if v, ok := s.c.(interface{ SetProtocolVersion(string) }); ok {
		v.SetProtocolVersion(version) // HTTP requests carry it in a header
	}
}

// listenStream holds the 2026-07-28 protocol's subscriptions/listen request
// open, so that list_changed arrives. A stream that breaks is a lost
// connection over HTTP (the transport's watch on event streams reports it,
// and the supervisor reconnects) and the server's exit over stdio. A stream
// the server ends cleanly is opened again at once, but never more than two
// in a second; one the server refuses (an error answer) is not.
func (s *session) listenStream(ctx context.Context) {
	params := mcp.SubscriptionsListenParams{Notifications: mcp.SubscriptionFilter{ToolsListChanged: true}}
	var prev, last time.Time // when the two streams before this one opened
	for {
		if wait := time.Second - time.Since(prev); wait > 0 {
			// Two streams in the last second already: hold back.
			t := time.NewTimer(wait)
			select {
			case <-t.C:
			case <-ctx.Done():
				t.Stop()
				return
			}
		}
		opened := time.Now()
		_, err := s.request(ctx, string(mcp.MethodSubscriptionsListen), params)
		var rpc *RPCError
		switch {
		case ctx.Err() != nil || isDone(s.c.Done()):
			return
		case errors.As(err, &rpc):
			s.log.Debug("the server refused subscriptions/listen", "err", err)
			return
		case err != nil:
			s.log.Debug("subscriptions/listen ended", "err", err)
		}
		// A notification may have been missed while no stream was open.
		if s.onListChanged != nil {
			s.onListChanged()
		}
		prev, last = last, opened
	}
}

// handshakeRejected reports a handshake that a server refused as a method
// it does not know, or a protocol version it does not speak.
func handshakeRejected(err error) bool {
	var uv mcp.UnsupportedProtocolVersionError
	return errors.Is(err, mcp.ErrMethodNotFound) || errors.As(err, &uv)
}

// explain replaces a transport's generic error by why the connection ended,
// when we know it.
func (s *session) explain(err error) error {
	select {
	case <-s.c.Done():
		if lost := s.c.Err(); lost != nil && !notSent(err) {
			return lost
		}
	default:
	}
	return err
}

// modern reports whether the session speaks the stateless protocol.
func (s *session) modern() bool { return s.isModern.Load() }

// info returns the server's identity and the protocol version in use.
func (s *session) serverInfo() (mcp.Implementation, string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.info, s.proto
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
		params := map[string]any{}
		if cursor != "" {
			params["cursor"] = cursor
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

// request sends one request and returns its raw result: on the stateless
// protocol with the per-request metadata it requires. When an HTTP server
// has forgotten our session (404), a new one is initialized and the request
// sent once more — the MCP specification asks that of every client; it is
// not a reconnect, and the server never saw the first attempt.
func (s *session) request(ctx context.Context, method string, params any) (json.RawMessage, error) {
	var header http.Header
	if s.modern() {
		params, header = s.stateless(method, params)
	}
	raw, err := s.send(ctx, method, params, header)
	if errors.Is(err, transport.ErrSessionTerminated) && !s.modern() {
		if rerr := s.reinitialize(ctx); rerr != nil {
			return nil, fmt.Errorf("the server ended the session and a new one failed: %w", rerr)
		}
		if s.onListChanged != nil && method != string(mcp.MethodToolsList) {
			s.onListChanged() // a new session may have new tools
		}
		raw, err = s.send(ctx, method, params, header)
	}
	return raw, err
}

// stateless adds the 2026-07-28 protocol's per-request metadata to params
// and returns the HTTP headers that mirror it. The metadata is encoded once
// per protocol (setProtocol) and put first in the params object: the params
// of our requests never carry a _meta of their own.
func (s *session) stateless(method string, params any) (any, http.Header) {
	s.mu.Lock()
	proto, meta := s.proto, s.meta
	s.mu.Unlock()
	b, err := json.Marshal(params)
	if params == nil {
		b, err = []byte("{}"), nil
	}
	if err != nil || len(b) < 2 || b[0] != '{' {
		return params, nil // not an object: nothing to add to
	}
	encoded := make([]byte, 0, len(b)+len(meta)+10)
	encoded = append(append(encoded, `{"_meta":`...), meta...)
	if string(b) != "{}" {
		encoded = append(encoded, ',')
	}
	encoded = append(encoded, b[1:]...)
	header := http.Header{}
	for k, v := range mcp.StandardHeaders(proto, mcp.MCPMethod(method), encoded) {
		header.Set(k, v)
	}
	return json.RawMessage(encoded), header
}

// send writes one request with an id of ours and waits for its result. A
// request we give up on (ctx ended) is cancelled at the server.
func (s *session) send(ctx context.Context, method string, params any, header http.Header) (json.RawMessage, error) {
	id := mcp.NewRequestId("h" + strconv.FormatInt(s.ids.Add(1), 10))
	resp, err := s.c.SendRequest(ctx, transport.JSONRPCRequest{JSONRPC: mcp.JSONRPC_VERSION, ID: id, Method: method, Params: params, Header: header})
	if err != nil {
		if ctx.Err() != nil {
			if method != string(mcp.MethodInitialize) && method != string(mcp.MethodServerDiscover) {
				s.cancel(id, context.Cause(ctx))
			}
			return nil, ctx.Err()
		}
		return nil, s.explain(err)
	}
	if resp.Error != nil {
		return nil, &RPCError{Code: resp.Error.Code, Message: resp.Error.Message, err: resp.Error.AsError()}
	}
	return resp.Result, nil
}

// cancel tells the server to stop working on a request we gave up on, and
// waits (bounded) until the notification is written: over stdio that is the
// only way to cancel; over HTTP the handshake-era protocol asks for it too
// (the stateless one cancels by ending the request's stream).
func (s *session) cancel(id mcp.RequestId, reason error) {
	if _, ok := s.c.(*httpConn); ok && s.modern() {
		return
	}
	n := mcp.JSONRPCNotification{
		JSONRPC: mcp.JSONRPC_VERSION,
		Notification: mcp.Notification{
			Method: string(mcp.MethodNotificationCancelled),
			Params: mcp.NotificationParams{AdditionalFields: map[string]any{"requestId": id, "reason": reason.Error()}},
		},
	}
	ctx, cancel := context.WithTimeout(context.Background(), cancelBound)
	defer cancel()
	if err := s.c.SendNotification(ctx, n); err != nil {
		s.log.Debug("could not send notifications/cancelled", "err", err)
	}
}

// reinitialize starts a new HTTP session after a 404, once for all the
// requests that met it.
func (s *session) reinitialize(ctx context.Context) error {
	s.reinit.Lock()
	defer s.reinit.Unlock()
	if s.c.GetSessionId() != "" {
		return nil // someone else already started a new session
	}
	if err := s.initialize(ctx); err != nil {
		return err
	}
	s.log.Info("the server ended the session; started a new one")
	return nil
}

// close ends the session and its connection (for stdio: the close ladder).
func (s *session) close() error {
	s.mu.Lock()
	if s.listen != nil {
		s.listen()
	}
	s.mu.Unlock()
	return s.c.Close()
}
