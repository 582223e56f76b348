package mcpclient

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/harness-go/harness/host/secret"
	"github.com/harness-go/harness/plugins/tools"
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

const (
	// maxPages bounds a tools/list pagination that never ends.
	maxPages = 1000
	// cancelBound bounds the notifications/cancelled of a call we gave up
	// on. The call waits for it, so a one-shot command that exits next has
	// told the server before the server is closed.
	cancelBound = time.Second
	// maxInputRounds bounds the rounds of one request that the server
	// answers with input_required (2026-07-28); maxIdleRounds the rounds in
	// a row that ask for nothing (a server shedding load: retry later).
	maxInputRounds = 10
	maxIdleRounds  = 3
)

// RPCError is a JSON-RPC error answered by the server. errors.Is matches
// mcp-go's sentinels (mcp.ErrMethodNotFound, …).
type RPCError struct {
	Code    int
	Message string
	Data    json.RawMessage
	err     error
}

func (e *RPCError) Error() string {
	return fmt.Sprintf("%s (JSON-RPC error %d)", e.Message, e.Code)
}

func (e *RPCError) Unwrap() error { return e.err }

func rpcError(w *wireError) *RPCError {
	d := mcp.JSONRPCErrorDetails{Code: w.Code, Message: w.Message}
	if len(w.Data) > 0 {
		d.Data = w.Data
	}
	return &RPCError{Code: w.Code, Message: w.Message, Data: w.Data, err: d.AsError()}
}

// session speaks MCP on one connection, in either revision: the initialize
// handshake of 2025-11-25 (and before), or the stateless protocol of
// 2026-07-28 (server/discover, per-request metadata, multi round-trip
// results). tools/list and tools/call results reach us byte for byte
// (mcp-go's typed decoding drops parts of schemas, and one unknown content
// block would fail a whole call); mcp-go is used for its types, constants
// and header helpers. It answers every request of the server's
// (serverreq.go).
type session struct {
	r       *rpc
	stdio   *lineFraming // nil over HTTP
	http    *httpFraming // nil over stdio
	log     *slog.Logger
	secrets *secret.Set
	opts    sessionOptions
	client  mcp.Implementation
	ids     atomic.Int64

	reinit   sync.Mutex // one re-initialization at a time
	isModern atomic.Bool
	timeouts deadlines // of the started calls (deadline.go)

	mu      sync.Mutex // guards what follows
	proto   string
	info    mcp.Implementation
	caps    mcp.ServerCapabilities
	listen  context.CancelFunc   // the subscriptions/listen stream (2026-07-28)
	calls   map[string]*callInfo // tools/call requests in flight, by id key
	headers map[string]*mcp.Tool // tools with x-mcp-header parameters (2026-07-28), by raw name
	subs    map[string]bool      // resource uris in the listening stream's filter (2026-07-28)

	relistenCh chan struct{} // asks the listening stream to open again with the current filter
}

// sessionOptions are what a session needs of its instance.
type sessionOptions struct {
	strategy string // ProtocolAuto, ProtocolLegacy, ProtocolModern
	server   string // serverName: who asks, in a question to a front
	// roots returns the roots to answer roots/list with (file:// URIs); nil
	// or empty: the capability is not declared.
	roots func() []string
	// onListChanged is called (off the read loop) when the server says
	// its tools, resources or prompts changed.
	onListChanged func(what listKind)
	// onUpdated is called (off the read loop) when the server says a
	// subscribed resource changed.
	onUpdated func(uri string)
	// publicName maps a raw tool name to its public one, for fronts.
	publicName func(raw string) string
}

// callInfo is a tools/call request of ours in flight: the server's
// questions and notifications about it go to its front.
type callInfo struct {
	ctx   context.Context // the call's: its front
	tool  string          // the public name
	token string          // our progressToken, "" when none was sent
}

// rawTool is one tool as listed, its schema untouched.
type rawTool struct {
	Name        string          `json:"name"`
	Description string          `json:"description"`
	InputSchema json.RawMessage `json:"inputSchema"`
	// Definition is the whole tool object as listed (title, annotations,
	// outputSchema…), for the gateway (tools.Tool.Definition).
	Definition json.RawMessage `json:"-"`
	// Invalid says why the tool is left out ("" when it is not): an
	// x-mcp-header annotation that breaks SEP-2243's rules (2026-07-28).
	Invalid string `json:"-"`
}

// defaultSchema stands in for a tool listed without an inputSchema.
var defaultSchema = json.RawMessage(`{"type":"object","properties":{}}`)

// newSession speaks MCP on f; call handshake before anything else.
func newSession(f framing, log *slog.Logger, secrets *secret.Set, opts sessionOptions) *session {
	s := &session{log: log, secrets: secrets, opts: opts, calls: map[string]*callInfo{}, relistenCh: make(chan struct{}, 1),
		client: mcp.Implementation{Name: clientName, Version: clientVersion()}}
	switch f := f.(type) {
	case *lineFraming:
		s.stdio = f
	case *httpFraming:
		s.http = f
	}
	s.r = newRPC(f, log, s.notified, s.answer)
	s.r.attach = s.attach
	return s
}

// Done is closed when the connection is lost or closed.
func (s *session) Done() <-chan struct{} { return s.r.Done() }

// Err says why the connection ended, or nil.
func (s *session) Err() error { return s.r.Err() }

// handshake starts the session with the configured strategy (see
// ProtocolAuto). life outlives the handshake: the 2026-07-28 protocol's
// listening request lives as long as it. A failure says what each attempt
// got.
func (s *session) handshake(life, ctx context.Context) error {
	var err error
	switch s.opts.strategy {
	case ProtocolModern:
		if err = s.discover(ctx); err != nil && refusal(err, true) {
			s.log.Debug("the server refused server/discover; trying initialize", "err", err)
			if ierr := s.initialize(ctx); ierr != nil {
				return fmt.Errorf("%w; %w", stepError("server/discover", s.explain(err)), stepError("initialize", s.explain(ierr)))
			}
			err = nil
		} else if err != nil {
			return stepError("server/discover", s.explain(err))
		}
	default:
		if err = s.initialize(ctx); err != nil && s.opts.strategy == ProtocolAuto && refusal(err, false) {
			s.log.Debug("the server refused the initialize handshake; trying server/discover", "err", err)
			if derr := s.discover(ctx); derr != nil {
				return fmt.Errorf("%w; %w", stepError("initialize", s.explain(err)), stepError("server/discover", s.explain(derr)))
			}
			err = nil
		} else if err != nil {
			return stepError("initialize", s.explain(err))
		}
	}
	if s.modern() {
		if wantsListen(s.capabilities()) {
			lctx, cancel := context.WithCancel(life)
			s.mu.Lock()
			s.listen = cancel
			s.mu.Unlock()
			go s.listenStream(lctx)
		}
	} else if s.http != nil {
		s.awaitListening(ctx)
	}
	return nil
}

// listenWait bounds the wait for the server's answer to the listening
// stream's first GET: a server that holds back its headers is not waited
// for longer.
const listenWait = 2 * time.Second

// awaitListening opens the handshake era's listening stream and waits
// (bounded) until the server has answered it: a server may send its own
// requests there (the TypeScript SDK does, for one made without a related
// request), and drops one that has nowhere to go, so it must be open before
// the first call.
func (s *session) awaitListening(ctx context.Context) {
	t := time.NewTimer(listenWait)
	defer t.Stop()
	select {
	case <-s.http.listen():
	case <-t.C:
		s.log.Debug("the server has not answered the listening stream yet; going on")
	case <-ctx.Done():
	}
}

// offersListChanged reports whether a 2026-07-28 server offers the
// notification subscriptions/listen would subscribe to for tools: we never
// open a subscription the server did not offer.
func offersListChanged(caps mcp.ServerCapabilities) bool {
	return caps.Tools != nil && caps.Tools.ListChanged
}

// wantsListen reports whether a 2026-07-28 server offers anything the
// listening stream subscribes to: list_changed of tools, resources or
// prompts, or resource subscriptions.
func wantsListen(caps mcp.ServerCapabilities) bool {
	return offersListChanged(caps) ||
		caps.Prompts != nil && caps.Prompts.ListChanged ||
		caps.Resources != nil && (caps.Resources.ListChanged || caps.Resources.Subscribe)
}

// filter is what the listening stream subscribes to: what the server
// offers, and the resources someone subscribed to.
func (s *session) filter() mcp.SubscriptionFilter {
	caps := s.capabilities()
	f := mcp.SubscriptionFilter{ToolsListChanged: offersListChanged(caps)}
	f.PromptsListChanged = caps.Prompts != nil && caps.Prompts.ListChanged
	if caps.Resources != nil {
		f.ResourcesListChanged = caps.Resources.ListChanged
		if caps.Resources.Subscribe {
			s.mu.Lock()
			for u := range s.subs {
				f.ResourceSubscriptions = append(f.ResourceSubscriptions, u)
			}
			s.mu.Unlock()
			slices.Sort(f.ResourceSubscriptions)
		}
	}
	return f
}

// relisten asks the listening stream to open again, with the filter as it
// is now.
func (s *session) relisten() {
	select {
	case s.relistenCh <- struct{}{}:
	default:
	}
}

// refusal reports a handshake the server refused, as opposed to one that
// could not reach it (refused, reset, timed out): a JSON-RPC error answer
// (for initialize: a method or version it does not know, a request it calls
// invalid, a missing version header; afterDiscover: any), a 4xx whose body
// is not JSON-RPC, a version outside the handshake era, or a server/discover
// answer that names only versions of the handshake era.
func refusal(err error, afterDiscover bool) bool {
	var rpc *RPCError
	var status *HTTPStatusError
	var uv mcp.UnsupportedProtocolVersionError
	var none *noStatelessVersion
	switch {
	case errors.As(err, &none):
		return true
	case errors.As(err, &rpc):
		switch rpc.Code {
		case mcp.HEADER_MISMATCH, mcp.UNSUPPORTED_PROTOCOL_VERSION, mcp.INVALID_REQUEST, mcp.METHOD_NOT_FOUND:
			return true
		}
		return afterDiscover
	case errors.As(err, &status):
		return status.Status >= 400 && status.Status < 500
	case errors.As(err, &uv):
		return true
	}
	return false
}

// initialize is the handshake of protocol 2025-11-25 and before.
func (s *session) initialize(ctx context.Context) error {
	params := map[string]any{
		"protocolVersion": mcp.LATEST_LEGACY_PROTOCOL_VERSION,
		"capabilities":    s.legacyCapabilities(),
		"clientInfo":      s.client,
	}
	raw, err := s.send(ctx, string(mcp.MethodInitialize), mustJSON(params), nil, nil)
	if err != nil {
		return err
	}
	var res mcp.InitializeResult
	if err := json.Unmarshal(raw, &res); err != nil {
		return fmt.Errorf("the initialize result does not decode: %w", err)
	}
	if !mcp.IsValidProtocolVersion(res.ProtocolVersion) || mcp.IsModernProtocol(res.ProtocolVersion) {
		// A revision of the stateless era has no handshake to answer.
		return mcp.UnsupportedProtocolVersionError{Version: res.ProtocolVersion}
	}
	s.setProtocol(res.ProtocolVersion, res.ServerInfo)
	s.setCapabilities(res.Capabilities)
	return s.r.notify(ctx, &outMsg{data: mustJSON(map[string]string{
		"jsonrpc": mcp.JSONRPC_VERSION, "method": string(mcp.MethodNotificationInitialized)}),
		method: string(mcp.MethodNotificationInitialized)})
}

// legacyCapabilities are what we declare in initialize: elicitation (form
// and URL: a front that cannot ask declines, and declining is an answer),
// and roots when the entry has some. Sampling is not declared: the
// harness's own fronts have no model to offer, and capabilities are fixed
// for the session, before any call says who it works for.
func (s *session) legacyCapabilities() map[string]any {
	caps := map[string]any{"elicitation": map[string]any{"form": struct{}{}, "url": struct{}{}}}
	if s.hasRoots() {
		caps["roots"] = map[string]any{"listChanged": true}
	}
	return caps
}

// modernCapabilities are what a 2026-07-28 request declares: as in
// initialize, and sampling when the front of the request offers it.
func (s *session) modernCapabilities(ctx context.Context) map[string]any {
	caps := map[string]any{"elicitation": map[string]any{"form": struct{}{}, "url": struct{}{}}}
	if s.hasRoots() {
		caps["roots"] = struct{}{}
	}
	if tools.OffersOf(ctx).Sampling {
		caps["sampling"] = struct{}{}
	}
	return caps
}

func (s *session) hasRoots() bool {
	return s.opts.roots != nil && len(s.opts.roots()) > 0
}

// discover is the stateless protocol's probe (2026-07-28): every request
// carries the version, and server/discover tells what the server is. A
// server that names the versions it supports gets one more try (request).
func (s *session) discover(ctx context.Context) error {
	s.setProtocol(mcp.LATEST_PROTOCOL_VERSION, mcp.Implementation{})
	raw, err := s.request(ctx, string(mcp.MethodServerDiscover), struct{}{})
	if err != nil {
		s.setProtocol("", mcp.Implementation{})
		return err
	}
	var res struct {
		mcp.DiscoverResult
		ServerInfo *mcp.Implementation `json:"serverInfo"`
	}
	if err := json.Unmarshal(raw, &res); err != nil {
		s.setProtocol("", mcp.Implementation{})
		return fmt.Errorf("the server/discover result does not decode: %w", err)
	}
	var info mcp.Implementation
	if si := res.GetResultMeta().ServerInfo(); si != nil {
		info = *si
	} else if res.ServerInfo != nil {
		info = *res.ServerInfo // where servers before spec PR #3002 put it
	}
	s.mu.Lock()
	proto := s.proto
	s.mu.Unlock()
	if len(res.SupportedVersions) > 0 && !slices.Contains(res.SupportedVersions, proto) {
		// The server answers server/discover but names only versions of
		// the handshake era (the Go SDK's stateful HTTP server does): the
		// answer is a refusal of this protocol, not a session to go on with.
		v := newestStateless(res.SupportedVersions)
		if v == "" {
			s.setProtocol("", mcp.Implementation{})
			return &noStatelessVersion{supported: res.SupportedVersions}
		}
		proto = v
	}
	s.setProtocol(proto, info)
	s.setCapabilities(res.Capabilities)
	return nil
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
	s.mu.Lock()
	s.proto, s.info = version, info
	s.mu.Unlock()
	s.isModern.Store(mcp.IsModernProtocol(version))
	if s.http != nil {
		s.http.setVersion(version) // HTTP requests carry it in a header
	}
}

// listenStream holds the 2026-07-28 protocol's subscriptions/listen request
// open, so that list_changed arrives. A stream that breaks is a lost
// connection over HTTP (the framing reports it, and the supervisor
// reconnects) and the server's exit over stdio. A stream the server ends
// cleanly is opened again at once, but never more than two in a second; one
// the server refuses (an error answer) is not.
func (s *session) listenStream(ctx context.Context) {
	var prev, last time.Time // when the two streams before this one opened
	for {
		if wait := time.Second - time.Since(prev); wait > 0 {
			// Two streams in the last second already: hold back.
			if !sleepCtx(ctx, wait) {
				return
			}
		}
		opened := time.Now()
		params := mcp.SubscriptionsListenParams{Notifications: s.filter()}
		rctx, stop := context.WithCancel(ctx)
		refiltered := make(chan struct{})
		go func() {
			select {
			case <-s.relistenCh:
				close(refiltered)
				stop() // the filter changed: this stream ends, the next one carries it
			case <-rctx.Done():
			}
		}()
		_, err := s.request(rctx, string(mcp.MethodSubscriptionsListen), params)
		stop()
		var rpc *RPCError
		switch {
		case ctx.Err() != nil || isDone(s.Done()):
			return
		case isDone(refiltered):
			prev, last = last, opened
			continue
		case errors.As(err, &rpc):
			s.log.Debug("the server refused subscriptions/listen", "err", err)
			return
		case err != nil:
			s.log.Debug("subscriptions/listen ended", "err", err)
		}
		// A notification may have been missed while no stream was open.
		if s.opts.onListChanged != nil {
			s.opts.onListChanged(listAll)
		}
		prev, last = last, opened
	}
}

// explain replaces a transport's generic error by why the connection ended,
// when we know it.
func (s *session) explain(err error) error {
	select {
	case <-s.Done():
		if lost := s.Err(); lost != nil && !notSent(err) {
			return lost
		}
	default:
	}
	return err
}

// stepError names the handshake's step in err, unless err names it
// already (an HTTP error says which request it answered): the step once.
func stepError(step string, err error) error {
	if strings.HasPrefix(err.Error(), step+": ") {
		return err
	}
	return fmt.Errorf("%s: %w", step, err)
}

// modern reports whether the session speaks the stateless protocol.
func (s *session) modern() bool { return s.isModern.Load() }

// serverInfo returns the server's identity and the protocol version in use.
func (s *session) serverInfo() (mcp.Implementation, string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.info, s.proto
}

// listTools returns every page of tools/list. On 2026-07-28 a tool whose
// x-mcp-header annotations break SEP-2243's rules is kept with Invalid set
// (the supervisor leaves it out and says why); the valid ones with such
// parameters are remembered, so calls mirror them in Mcp-Param-* headers.
func (s *session) listTools(ctx context.Context) ([]rawTool, error) {
	var all []rawTool
	seen := map[string]bool{}
	cursor := ""
	headers := map[string]*mcp.Tool{}
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
			if s.modern() {
				if h, err := headerTool(tool); err != nil {
					tool.Invalid = err.Error()
				} else if h != nil {
					headers[tool.Name] = h
				}
			}
			all = append(all, tool)
		}
		if res.NextCursor == nil || *res.NextCursor == "" {
			s.mu.Lock()
			s.headers = headers
			s.mu.Unlock()
			return all, nil
		}
		cursor = *res.NextCursor
		if seen[cursor] {
			return nil, fmt.Errorf("tools/list: the server repeated cursor %q", cursor)
		}
		seen[cursor] = true
	}
}

// headerTool checks a tool's x-mcp-header annotations (SEP-2243) and returns
// the tool as mcp-go's header helpers take it when it has any.
func headerTool(t rawTool) (*mcp.Tool, error) {
	if !bytes.Contains(t.InputSchema, []byte(`"x-mcp-header"`)) {
		return nil, nil
	}
	tool := &mcp.Tool{Name: t.Name, RawInputSchema: t.InputSchema}
	if err := mcp.ValidateParamHeaderAnnotations(tool); err != nil {
		return nil, fmt.Errorf("invalid x-mcp-header: %w", err)
	}
	if len(mcp.ExtractParamHeaderBindings(tool)) == 0 {
		return nil, nil
	}
	return tool, nil
}

// callTool runs tools/call with the raw name and returns the raw result.
// Questions the server asks about the call (elicitation, sampling; on
// 2026-07-28 as input_required results) go to the front of ctx, and so do
// its progress and log notifications; a progressToken is sent only when
// the front of ctx shows progress (tools.Offers).
func (s *session) callTool(ctx context.Context, public, name string, args json.RawMessage) (json.RawMessage, error) {
	call := &callInfo{ctx: ctx, tool: public}
	if tools.OffersOf(ctx).Progress {
		call.token = "p" + strconv.FormatInt(s.ids.Add(1), 10)
	}
	return s.requestFor(ctx, string(mcp.MethodToolsCall), toolCall{Name: name, Arguments: args}, call)
}

// errCallTimedOut is what a started call gets at its timeout.
var errCallTimedOut = errors.New("the call timed out")

// startCall starts tools/call as callTool sends it and returns at once
// (rpc.register): done gets, exactly once and on whatever goroutine has
// it, the raw result or the error callTool would have returned —
// context.Canceled when ctx ended, errCallTimedOut after timeout; either
// way the server is told with notifications/cancelled. ok is false, and
// done never called, when this session cannot start a call without
// waiting (2026-07-28 and HTTP: their rounds, retries and streams need a
// caller that waits; no read path: no reader to answer for) or the request
// never reached the server.
func (s *session) startCall(ctx context.Context, public, name string, args json.RawMessage, timeout time.Duration, done func(json.RawMessage, error)) (ok bool) {
	if s.modern() || s.http != nil || s.r.path == nil {
		return false
	}
	// The call's parts live in one value (startedCall): its info, its id,
	// its message.
	c := &startedCall{s: s, ctx: ctx, done: done}
	c.info = callInfo{ctx: ctx, tool: public}
	if tools.OffersOf(ctx).Progress {
		c.info.token = "p" + strconv.FormatInt(s.ids.Add(1), 10)
	}
	c.id = append(strconv.AppendInt(append(c.idBuf[:0], `"h`...), s.ids.Add(1), 10), '"')
	c.key = idKey(c.id)
	tc := toolCall{Name: name, Arguments: args}
	c.out = outMsg{id: c.id, method: string(mcp.MethodToolsCall),
		data: appendToolCallRequest(c.dataBuf[:0], c.id, tc, c.info.token)}
	// Both are set before the request is registered, so that its callback
	// can stop them; one that fires before the registration is caught
	// after the send.
	s.timeouts.add(&c.deadline, c, time.Now().Add(timeout))
	c.stopCtx = afterFunc(ctx, c.cancelled)
	s.mu.Lock()
	s.calls[c.key] = &c.info
	s.mu.Unlock()
	if !s.r.register(c.key, c) {
		c.finish()
		return false
	}
	if taken, err := s.r.send(ctx, c.key, &c.out); err != nil {
		if taken {
			c.finish()
		}
		return !taken // not taken: the end of the connection told done
	}
	switch {
	case c.expired.Load():
		c.giveUp(errCallTimedOut)
	case ctx.Err() != nil:
		c.giveUp(context.Cause(ctx))
	}
	return true
}

// afterFunc is context.AfterFunc(ctx, f), through ctx's own AfterFunc
// method when it has one (the gateway's stdio requests do): what
// context.AfterFunc calls in the end, without the context of its own it
// makes for each call.
func afterFunc(ctx context.Context, f func()) (stop func() bool) {
	if a, ok := ctx.(interface{ AfterFunc(func()) func() bool }); ok {
		return a.AfterFunc(f)
	}
	return context.AfterFunc(ctx, f)
}

// startedCall is a call startCall started: what its three ends — its
// response, its timeout, its caller's context — share. One value and its
// methods, rather than closures over the call's variables: a started call
// is the gateway's every call (fewer allocations each).
type startedCall struct {
	s        *session
	ctx      context.Context
	info     callInfo // in s.calls
	key      string
	id       []byte   // in idBuf
	idBuf    [24]byte // "h" and 20 digits, quoted
	out      outMsg
	dataBuf  [192]byte // out's data, when it fits: the line is copied as it is written
	done     func(json.RawMessage, error)
	deadline deadline // in s.timeouts
	stopCtx  func() bool
	expired  atomic.Bool
}

// expire is the call's timeout (session.timeouts).
func (c *startedCall) expire() {
	c.expired.Store(true)
	c.giveUp(errCallTimedOut)
}

func (c *startedCall) cancelled() { c.giveUp(context.Cause(c.ctx)) }

// giveUp ends the call early, when the response has not come first.
func (c *startedCall) giveUp(reason error) {
	if !c.s.r.abandon(c.key) {
		return
	}
	go c.s.cancel(c.id, reason) // bounded (cancelBound); never on the caller's goroutine
	c.finish()
	if reason == errCallTimedOut {
		c.done(nil, errCallTimedOut)
		return
	}
	c.done(nil, c.ctx.Err())
}

// respond is the registered request's callback: the response came, or the
// connection ended.
func (c *startedCall) respond(resp *inMsg, err error) {
	c.finish()
	switch {
	case err != nil:
		c.done(nil, c.s.explain(err))
	case resp.Error != nil:
		c.done(nil, rpcError(resp.Error))
	default:
		c.done(resp.Result, nil)
	}
}

// finish forgets the call: its entry among the calls in flight, its
// deadline and its hook on the caller's context.
func (c *startedCall) finish() {
	c.s.mu.Lock()
	delete(c.s.calls, c.key)
	c.s.mu.Unlock()
	c.s.timeouts.remove(&c.deadline)
	c.stopCtx()
}

// toolCall is tools/call's params with the arguments kept raw.
type toolCall struct {
	Name      string          `json:"name"`
	Arguments json.RawMessage `json:"arguments"`
}

// request sends one request of ours and returns its raw result (see
// requestFor).
func (s *session) request(ctx context.Context, method string, params any) (json.RawMessage, error) {
	return s.requestFor(ctx, method, params, nil)
}

// requestFor sends one request and returns its raw result. On 2026-07-28 it
// carries the per-request metadata, is sent again once with a version the
// server names when it refuses ours (-32022), and an input_required result
// is answered (each input request fulfilled) and the request sent again
// with the answers, the server's requestState echoed, under a new id, up to
// maxInputRounds times. In the handshake era, when an HTTP server has
// forgotten our session (404), a new one is initialized and the request
// sent once more — the MCP specification asks that of every client; it is
// not a reconnect, and the server never saw the first attempt.
func (s *session) requestFor(ctx context.Context, method string, params any, call *callInfo) (json.RawMessage, error) {
	if !s.modern() {
		p, err := legacyParams(params, call)
		if err != nil {
			return nil, err
		}
		raw, err := s.send(ctx, method, p, nil, call)
		if errors.Is(err, errSessionGone) {
			if rerr := s.reinitialize(ctx); rerr != nil {
				return nil, fmt.Errorf("the server ended the session and a new one failed: %w", rerr)
			}
			if s.opts.onListChanged != nil && method != string(mcp.MethodToolsList) {
				s.opts.onListChanged(listAll) // a new session may have new tools
			}
			raw, err = s.send(ctx, method, p, nil, call)
		}
		return raw, err
	}
	var round roundState
	retried := false
	for idle := 0; ; {
		p, header, err := s.modernParams(ctx, method, params, call, &round)
		if err != nil {
			return nil, err
		}
		raw, err := s.send(ctx, method, p, header, call)
		var rpc *RPCError
		if err != nil && !retried && errors.As(err, &rpc) && rpc.Code == mcp.UNSUPPORTED_PROTOCOL_VERSION {
			if v := s.otherVersion(rpc); v != "" {
				retried = true
				s.log.Debug("the server refused our protocol version; trying one it named", "version", v)
				s.mu.Lock()
				info := s.info
				s.mu.Unlock()
				s.setProtocol(v, info)
				continue
			}
		}
		if err != nil {
			return nil, err
		}
		more, err := s.inputRequired(ctx, raw, call, &round)
		if err != nil || !more {
			return raw, err
		}
		if len(round.responses) == 0 {
			if idle++; idle >= maxIdleRounds {
				return nil, fmt.Errorf("%s: the server asked %d times in a row to send the request again without asking for anything", method, idle)
			}
			if !sleepCtx(ctx, time.Duration(idle)*100*time.Millisecond) {
				return nil, ctx.Err()
			}
		} else {
			idle = 0
		}
		if round.n++; round.n >= maxInputRounds {
			return nil, fmt.Errorf("%s: the server still asked for input after %d rounds", method, maxInputRounds)
		}
	}
}

// noStatelessVersion is a server/discover answer whose supported versions
// hold none of the stateless era: the server speaks only the initialize
// handshake, and a refusal of server/discover (see refusal).
type noStatelessVersion struct{ supported []string }

func (e *noStatelessVersion) Error() string {
	return fmt.Sprintf("the server supports only protocol %s, none of them stateless", strings.Join(e.supported, ", "))
}

// newestStateless picks the newest version of the stateless era that we
// know from a server's list of supported versions, or "".
func newestStateless(supported []string) string {
	for _, v := range mcp.ValidProtocolVersions {
		if mcp.IsModernProtocol(v) && slices.Contains(supported, v) {
			return v
		}
	}
	return ""
}

// otherVersion picks the newest version of the stateless era that we know
// from a -32022's supported list, or "" (the list may name the version
// refused: the server says what to send, and we send it once more).
func (s *session) otherVersion(rpc *RPCError) string {
	var data mcp.UnsupportedProtocolVersionData
	_ = json.Unmarshal(rpc.Data, &data)
	return newestStateless(data.Supported)
}

// legacyParams encodes params, with our progressToken when the call has
// one.
func legacyParams(params any, call *callInfo) (json.RawMessage, error) {
	var meta []byte
	if call != nil {
		meta = progressMeta(call.token)
	}
	return encodeParams(params, meta)
}

// encodeParams encodes params with meta (nil: none) as its _meta, first.
// tools/call's params, the usual request, are encoded without reflection.
func encodeParams(params any, meta []byte) (json.RawMessage, error) {
	if tc, ok := params.(toolCall); ok {
		return appendToolCallParams(make([]byte, 0, 32+len(meta)+len(tc.Name)+len(tc.Arguments)), tc, meta), nil
	}
	b, err := json.Marshal(params)
	if err != nil {
		return nil, fmt.Errorf("encode params: %w", err)
	}
	if meta == nil {
		return b, nil
	}
	return withMeta(b, meta), nil
}

// modernParams encodes params as a 2026-07-28 request carries them: _meta
// with the protocol version, the client's capabilities for this request
// and its identity (and our progressToken), the answers of the last round;
// and the HTTP headers that mirror the request (MCP-Protocol-Version,
// Mcp-Method, Mcp-Name, and Mcp-Param-* for a tool's x-mcp-header
// parameters).
func (s *session) modernParams(ctx context.Context, method string, params any, call *callInfo, round *roundState) (json.RawMessage, http.Header, error) {
	_, proto := s.serverInfo()
	meta := map[string]any{
		mcp.MetaKeyProtocolVersion:    proto,
		mcp.MetaKeyClientCapabilities: s.modernCapabilities(ctx),
		mcp.MetaKeyClientInfo:         s.client,
	}
	if level := s.logLevel(ctx); level != "" {
		meta[mcp.MetaKeyLogLevel] = level // no level asked, no log messages (2026-07-28)
	}
	if call != nil && call.token != "" {
		meta["progressToken"] = call.token
	}
	mb, err := json.Marshal(meta)
	if err != nil {
		return nil, nil, err
	}
	b, err := encodeParams(params, mb)
	if err != nil {
		return nil, nil, err
	}
	if round.responses != nil {
		extra := map[string]json.RawMessage{"inputResponses": mustJSON(round.responses)}
		if len(round.state) > 0 {
			extra["requestState"] = round.state // echoed byte for byte
		}
		b = withFields(b, extra)
	}
	if s.http == nil {
		return b, nil, nil
	}
	header := http.Header{}
	header.Set(mcp.HeaderProtocolVersion, proto)
	for k, v := range mcp.StandardHeaders(proto, mcp.MCPMethod(method), b) {
		header.Set(k, v)
	}
	if tc, ok := params.(toolCall); ok {
		s.mu.Lock()
		tool := s.headers[tc.Name]
		s.mu.Unlock()
		if tool != nil {
			for k, v := range mcp.GenerateParamHeaders(tool, b) {
				header.Set(k, v)
			}
		}
	}
	return b, header, nil
}

// logLevel is the least severe level of the server's log messages that our
// log would show: what a 2026-07-28 request asks for.
func (s *session) logLevel(ctx context.Context) mcp.LoggingLevel {
	if s.log == nil {
		return ""
	}
	for _, l := range []struct {
		slog slog.Level
		mcp  mcp.LoggingLevel
	}{{slog.LevelDebug, mcp.LoggingLevelDebug}, {slog.LevelInfo, mcp.LoggingLevelInfo}, {slog.LevelWarn, mcp.LoggingLevelWarning}, {slog.LevelError, mcp.LoggingLevelError}} {
		if s.log.Enabled(ctx, l.slog) {
			return l.mcp
		}
	}
	return ""
}

// withMeta puts meta first into an encoded params object (params of ours
// never carry a _meta of their own).
func withMeta(params, meta []byte) json.RawMessage {
	if len(params) < 2 || params[0] != '{' {
		params = []byte("{}")
	}
	out := make([]byte, 0, len(params)+len(meta)+10)
	out = append(append(out, `{"_meta":`...), meta...)
	if string(params) != "{}" {
		out = append(out, ',')
	}
	return append(out, params[1:]...)
}

// withFields adds fields to the end of an encoded object.
func withFields(obj []byte, fields map[string]json.RawMessage) json.RawMessage {
	keys := make([]string, 0, len(fields))
	for k := range fields {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	out := append([]byte(nil), obj[:len(obj)-1]...)
	for _, k := range keys {
		if len(out) > 1 {
			out = append(out, ',')
		}
		out = append(append(append(out, mustJSON(k)...), ':'), fields[k]...)
	}
	return append(out, '}')
}

func mustJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(fmt.Sprintf("mcpclient: encoding %T: %v", v, err))
	}
	return b
}

// send writes one request with an id of ours and waits for its result. A
// request we give up on (ctx ended) is cancelled at the server. A tools/call
// is tracked as in flight (call) until it returns.
func (s *session) send(ctx context.Context, method string, params json.RawMessage, header http.Header, call *callInfo) (json.RawMessage, error) {
	id := append(strconv.AppendInt([]byte(`"h`), s.ids.Add(1), 10), '"')
	data, err := appendRequest(make([]byte, 0, 128+len(params)), id, method, params)
	if err != nil {
		return nil, fmt.Errorf("encode request: %w", err)
	}
	if call != nil {
		key := idKey(id)
		s.mu.Lock()
		s.calls[key] = call
		s.mu.Unlock()
		defer func() {
			s.mu.Lock()
			delete(s.calls, key)
			s.mu.Unlock()
		}()
	}
	resp, err := s.r.call(ctx, &outMsg{data: data, id: id, method: method, header: header})
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
		return nil, rpcError(resp.Error)
	}
	return resp.Result, nil
}

// cancel tells the server to stop working on a request we gave up on, and
// waits (bounded) until the notification is written: over stdio that is the
// only way to cancel; over HTTP the handshake-era protocol asks for it too
// (the stateless one cancels by ending the request's stream).
func (s *session) cancel(id json.RawMessage, reason error) {
	if s.http != nil && s.modern() {
		return
	}
	n := map[string]any{
		"jsonrpc": mcp.JSONRPC_VERSION,
		"method":  string(mcp.MethodNotificationCancelled),
		"params":  map[string]any{"requestId": id, "reason": reason.Error()},
	}
	ctx, cancel := context.WithTimeout(context.Background(), cancelBound)
	defer cancel()
	if err := s.r.notify(ctx, &outMsg{data: mustJSON(n), method: string(mcp.MethodNotificationCancelled)}); err != nil {
		s.log.Debug("could not send notifications/cancelled", "err", err)
	}
}

// reinitialize starts a new HTTP session after a 404, once for all the
// requests that met it.
func (s *session) reinitialize(ctx context.Context) error {
	s.reinit.Lock()
	defer s.reinit.Unlock()
	if s.http == nil || s.http.sessionID() != "" {
		return nil // someone else already started a new session
	}
	if err := s.initialize(ctx); err != nil {
		return err
	}
	s.awaitListening(ctx)
	s.log.Info("the server ended the session; started a new one")
	return nil
}

// rootsChanged tells a server of the handshake era that the roots changed
// (2026-07-28 has no such notification: the next request declares the
// capability anew, and the next roots/list input request gets the list).
func (s *session) rootsChanged() {
	if s.modern() || !s.hasRoots() {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), cancelBound)
	defer cancel()
	n := mustJSON(map[string]string{"jsonrpc": mcp.JSONRPC_VERSION, "method": string(mcp.MethodNotificationRootsListChanged)})
	if err := s.r.notify(ctx, &outMsg{data: n, method: string(mcp.MethodNotificationRootsListChanged)}); err != nil {
		s.log.Debug("could not send notifications/roots/list_changed", "err", err)
	}
}

// close ends the session and its connection (for stdio: the close ladder).
func (s *session) close() error {
	s.timeouts.stop()
	s.mu.Lock()
	if s.listen != nil {
		s.listen()
	}
	s.mu.Unlock()
	return s.r.Close()
}

// pid is the stdio server's process id, or 0.
func (s *session) pid() int {
	if s.stdio == nil {
		return 0
	}
	return s.stdio.p.PID()
}

// stderr is the stdio server's last stderr lines.
func (s *session) stderr() []string {
	if s.stdio == nil {
		return nil
	}
	return s.stdio.p.Stderr()
}

func isDone(c <-chan struct{}) bool {
	select {
	case <-c:
		return true
	default:
		return false
	}
}
