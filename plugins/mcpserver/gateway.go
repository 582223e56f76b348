// Package mcpserver is the gateway: it serves the tools registry as an MCP
// server, so that any MCP client (Claude Code, Codex, Cursor, an SDK) sees
// one stable endpoint whose tools follow cordis.yml as it is edited.
//
// A [Gateway] sits on mcp-go's server package and is served over stdio
// ([Gateway.ServeStdio], `harness serve`) or Streamable HTTP
// ([Gateway.HTTPHandler], `harness serve --http`, and the kind mcp-server
// that `harness run` serves beside its console). docs/rfc/0005-gateway.md
// says why it is built as it is; in short:
//
//  1. Tools. In mode full the client sees the registry's tools under their
//     names, with their descriptions and schemas as registered, and what
//     their MCP servers listed beside them (title, annotations,
//     outputSchema). In mode meta it sees three tools that never change —
//     search_tools, describe_tool, call_tool — which reach every tool by
//     name, for clients that ignore list_changed.
//  2. Snapshot. The served list is a snapshot, rebuilt when the registry
//     changes (changes in a burst are coalesced) and replaced only when its
//     hash differs; every replacement sends notifications/tools/list_changed
//     to every session, within [DefaultCoalesce] (plus the rebuild) of the
//     change.
//  3. Settle. The first tools/list, and a call to a tool not yet served,
//     wait until the host's entries have settled ([Options.Settle]).
//  4. Calls go through the registry ([tools.Registry.Execute]); a result
//     that came from an MCP server passes through unchanged (content blocks
//     of every type, structuredContent, isError); a native tool's result is
//     one text block. The client's cancellation cancels the call's context,
//     which reaches the backend (mcp-client sends notifications/cancelled).
//  5. Loops. The initialize result says who this harness is (package
//     internal/loop), and an HTTP request whose chain holds this harness is
//     refused, so a harness never serves itself.
package mcpserver

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/harness-go/harness/internal/loop"
	"github.com/harness-go/harness/internal/safe"
	"github.com/harness-go/harness/plugins/prompts"
	"github.com/harness-go/harness/plugins/resources"
	"github.com/harness-go/harness/plugins/tools"
)

// Modes of the served tool list.
const (
	// ModeFull serves every tool of the registry.
	ModeFull = "full"
	// ModeMeta serves search_tools, describe_tool and call_tool.
	ModeMeta = "meta"
)

// DefaultCoalesce is how long the gateway gathers registry changes before
// it rebuilds the served list: a reload that swaps many tools costs one
// list_changed.
const DefaultCoalesce = 10 * time.Millisecond

// Options configure a [Gateway].
type Options struct {
	// Mode is ModeFull (the default) or ModeMeta.
	Mode string
	// Settle waits until the host's entries have settled (bounded as the
	// caller wants; its error is ignored). The first tools/list waits for
	// it. Nil: no wait.
	Settle func(context.Context) error
	// Self is the harness the gateway serves (loop detection); nil: a
	// fresh identity.
	Self *loop.Self
	// Logger receives the gateway's records; default slog.Default().
	Logger *slog.Logger
	// Version is the serverInfo version; default the module's version.
	Version string
	// Coalesce overrides DefaultCoalesce.
	Coalesce time.Duration
	// InputTimeout overrides DefaultInputTimeout: how long a call that
	// asked its 2026-07-28 client for input waits for the retry.
	InputTimeout time.Duration
	// MaxParked overrides DefaultMaxParked.
	MaxParked int
	// Resources, when not nil, is served beside the tools: resources,
	// templates and reads (primitives.go); the capability is declared only
	// then.
	Resources *resources.Registry
	// Prompts, when not nil, is served beside the tools (primitives.go);
	// the capability is declared only then.
	Prompts *prompts.Registry
}

// ServerName is the serverInfo name of the gateway.
const ServerName = "harness"

// Gateway serves a tools registry as an MCP server. Create it with [New],
// run it with [Gateway.Run], and serve it with [Gateway.ServeStdio] or
// [Gateway.HTTPHandler] (as many sessions as clients connect).
type Gateway struct {
	reg  *tools.Registry
	mcp  *server.MCPServer
	self *loop.Self
	log  *slog.Logger
	opts Options

	ready    chan struct{} // closed once the entries settled (or the wait ended)
	sessions atomic.Int64  // numbers stdio sessions

	// life is the context of the calls that outlive a request (a call
	// parked for its client's input, mrtr.go); it ends when Run returns.
	life    context.Context
	endLife context.CancelCauseFunc
	parked  *parkedCalls
	levels  logLevels      // the sessions that asked for log messages
	asks    pendingAsks    // requests to clients waiting for their answers (ask.go)
	streams streamSessions // the Streamable HTTP sessions mcp-go holds (httpfast.go)

	mu     sync.Mutex
	mode   string
	hash   [32]byte
	hashed bool            // hash holds the served list's
	served map[string]bool // the names of the served list (mode full)
	// handed holds the names of the list mcp-go serves now: served's
	// when that list is of mode full, else nil (fastcall.go).
	handed  map[string]bool
	changed chan struct{} // closed and replaced at every publish
	modeSet chan struct{} // wakes Run when the mode changes

	rebuilds  atomic.Int64 // served lists built
	fastCalls atomic.Int64 // calls served by the fast path (fastcall.go)
	publishes atomic.Int64 // served lists handed to mcp-go (one list_changed each)

	index metaIndex // meta mode's ranked search (meta.go)

	// pmu orders the publishes of resources, templates and prompts, and
	// guards their hashes (primitives.go).
	pmu          sync.Mutex
	resHash      [32]byte
	resHashed    bool
	tplHash      [32]byte
	tplHashed    bool
	promptHash   [32]byte
	promptHashed bool
	uris         map[string]uriOwner // served URI → its server and own URI
	tpls         []servedTemplate    // the served templates, for routing

	subs sessionSubs // the sessions' resource subscriptions (subscribe.go)
	// resPublishes and promptPublishes count the resource (and template)
	// lists and the prompt lists handed to mcp-go, one list_changed each
	// (primitives.go); written and read under pmu, as published's count.
	resPublishes, promptPublishes int64
}

// New returns a gateway for reg. It serves nothing until Run has published
// the first list (a tools/list waits for that).
func New(reg *tools.Registry, opts Options) (*Gateway, error) {
	if opts.Mode == "" {
		opts.Mode = ModeFull
	}
	if err := CheckMode(opts.Mode); err != nil {
		return nil, err
	}
	if opts.Self == nil {
		opts.Self = loop.New("", "")
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.Version == "" {
		opts.Version = moduleVersion()
	}
	if opts.Coalesce <= 0 {
		opts.Coalesce = DefaultCoalesce
	}
	if opts.InputTimeout <= 0 {
		opts.InputTimeout = DefaultInputTimeout
	}
	if opts.MaxParked <= 0 {
		opts.MaxParked = DefaultMaxParked
	}
	life, endLife := context.WithCancelCause(context.Background())
	g := &Gateway{
		life:    life,
		endLife: endLife,
		parked:  newParkedCalls(),
		reg:     reg,
		self:    opts.Self,
		log:     opts.Logger,
		opts:    opts,
		ready:   make(chan struct{}),
		mode:    opts.Mode,
		served:  map[string]bool{},
		changed: make(chan struct{}),
		modeSet: make(chan struct{}, 1),
	}
	hooks := &server.Hooks{}
	hooks.AddAfterInitialize(func(_ context.Context, _ any, _ *mcp.InitializeRequest, res *mcp.InitializeResult) {
		res.Capabilities.Experimental = g.experimental(res.Capabilities.Experimental)
	})
	hooks.AddAfterDiscover(func(_ context.Context, _ any, _ *mcp.DiscoverRequest, res *mcp.DiscoverResult) {
		res.Capabilities.Experimental = g.experimental(res.Capabilities.Experimental)
	})
	// The first listing of tools, resources, templates or prompts waits
	// for the entries; from then on a change of that list is news to a
	// stdio client (stdio.go).
	hooks.AddBeforeListTools(func(ctx context.Context, _ any, _ *mcp.ListToolsRequest) {
		g.waitReady(ctx)
		g.listing(ctx, mcp.MethodNotificationToolsListChanged)
	})
	hooks.AddBeforeListResources(func(ctx context.Context, _ any, _ *mcp.ListResourcesRequest) {
		g.waitReady(ctx)
		g.listing(ctx, mcp.MethodNotificationResourcesListChanged)
	})
	hooks.AddBeforeListResourceTemplates(func(ctx context.Context, _ any, _ *mcp.ListResourceTemplatesRequest) {
		g.waitReady(ctx)
		g.listing(ctx, mcp.MethodNotificationResourcesListChanged)
	})
	hooks.AddBeforeListPrompts(func(ctx context.Context, _ any, _ *mcp.ListPromptsRequest) {
		g.waitReady(ctx)
		g.listing(ctx, mcp.MethodNotificationPromptsListChanged)
	})
	hooks.AddBeforeReadResource(func(ctx context.Context, _ any, _ *mcp.ReadResourceRequest) { g.waitReady(ctx) })
	hooks.AddBeforeGetPrompt(func(ctx context.Context, _ any, _ *mcp.GetPromptRequest) { g.waitReady(ctx) })
	hooks.AddOnError(func(ctx context.Context, _ any, method mcp.MCPMethod, message any, err error) {
		// mcp-go's own answer to a URI that no served resource or
		// template names has no data.uri (primitives.go).
		if req, ok := message.(*mcp.ReadResourceRequest); ok && method == mcp.MethodResourcesRead && errors.Is(err, server.ErrResourceNotFound) {
			_ = g.notFound(ctx, req.Params.URI)
		}
	})
	hooks.AddBeforeSubscribe(func(ctx context.Context, _ any, req *mcp.SubscribeRequest) { g.subscribe(ctx, req) })
	hooks.AddBeforeUnsubscribe(func(ctx context.Context, _ any, req *mcp.UnsubscribeRequest) { g.unsubscribe(ctx, req) })
	hooks.AddBeforeSubscriptionsListen(func(ctx context.Context, id any, req *mcp.SubscriptionsListenRequest) { g.listen(ctx, id, req) })
	hooks.AddOnUnregisterSession(func(_ context.Context, s server.ClientSession) { g.endSubscriptions(s.SessionID()) })
	hooks.AddBeforeCallTool(func(ctx context.Context, _ any, req *mcp.CallToolRequest) {
		g.waitServed(ctx, req.Params.Name)
	})
	g.watchLevels(hooks)
	g.streams.watch(hooks)
	serverOpts := []server.ServerOption{
		server.WithToolCapabilities(true),
		// Log messages of the backends are relayed (relay.go).
		server.WithLogging(),
		server.WithHooks(hooks),
		server.WithRecovery(),
		server.WithInstructions(instructions),
	}
	if opts.Resources != nil {
		serverOpts = append(serverOpts, server.WithResourceCapabilities(true, true), server.WithResourceCompletionProvider(completer{g}))
	}
	if opts.Prompts != nil {
		serverOpts = append(serverOpts, server.WithPromptCapabilities(true), server.WithPromptCompletionProvider(completer{g}))
	}
	if opts.Resources != nil || opts.Prompts != nil {
		serverOpts = append(serverOpts, server.WithCompletions())
	}
	g.mcp = server.NewMCPServer(ServerName, opts.Version, serverOpts...)
	// The first list is in place before any session can exist: handed to
	// mcp-go later, it would announce a change to a client that has seen
	// nothing yet (in meta mode, the list never changes at all).
	g.publish()
	g.publishPrimitives()
	return g, nil
}

const instructions = "The tools of a harness (github.com/harness-go/harness): its own tools and those of the MCP servers in its cordis.yml, named mcp__<server>__<tool>. The list follows cordis.yml as it is edited; notifications/tools/list_changed announces every change."

// CheckMode says whether mode is a tools mode: ModeFull or ModeMeta.
func CheckMode(mode string) error {
	if mode != ModeFull && mode != ModeMeta {
		return fmt.Errorf("tools mode %q: want %q or %q", mode, ModeFull, ModeMeta)
	}
	return nil
}

// moduleVersion is the version of the module this binary was built from.
func moduleVersion() string {
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		return bi.Main.Version
	}
	return "dev"
}

// experimental adds this harness's description (package loop) to the
// experimental capabilities of an initialize or discover result, without
// touching the map mcp-go may share between results.
func (g *Gateway) experimental(prev map[string]any) map[string]any {
	out := make(map[string]any, len(prev)+1)
	for k, v := range prev {
		out[k] = v
	}
	out[loop.Capability] = g.self.Info()
	return out
}

// Run keeps the served list in step with the registry until ctx ends (New
// published the first list), and marks the gateway ready once
// Options.Settle has returned. When it returns, the calls parked for their
// client's input are cancelled, and have returned.
func (g *Gateway) Run(ctx context.Context) error {
	defer func() {
		cause := errors.New("the gateway stopped")
		g.endLife(cause)
		g.parked.stopAll(cause)
	}()
	settled := make(chan struct{})
	go func() {
		defer close(settled)
		if g.opts.Settle != nil {
			_ = g.opts.Settle(ctx)
		}
	}()
	for {
		changed := g.reg.Changed()
		resChanged, promptsChanged := g.primitivesChanged()
		g.publish()
		g.publishPrimitives()
		select {
		case <-settled:
			settled = nil
			g.publish() // what the settled entries registered, before anyone lists
			g.publishPrimitives()
			close(g.ready)
			continue
		case <-g.modeSet:
			continue
		case <-changed:
		case <-resChanged:
		case <-promptsChanged:
		case <-ctx.Done():
			if settled != nil {
				<-settled
			}
			return nil
		}
		// Gather a burst: a reload swaps one entry's tools at a time.
		t := time.NewTimer(g.opts.Coalesce)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			if settled != nil {
				<-settled
			}
			return nil
		}
	}
}

// SetMode switches the served list between ModeFull and ModeMeta while the
// gateway runs; sessions are told with list_changed.
func (g *Gateway) SetMode(mode string) error {
	if err := CheckMode(mode); err != nil {
		return err
	}
	g.mu.Lock()
	g.mode = mode
	g.mu.Unlock()
	select {
	case g.modeSet <- struct{}{}:
	default:
	}
	return nil
}

// Mode returns the current mode.
func (g *Gateway) Mode() string {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.mode
}

// Ready returns a channel closed once the gateway answers tools/list (its
// entries have settled, or the wait for them ended).
func (g *Gateway) Ready() <-chan struct{} { return g.ready }

// waitReady waits until the gateway is ready or ctx ends.
func (g *Gateway) waitReady(ctx context.Context) {
	select {
	case <-g.ready:
	case <-ctx.Done():
	}
}

// waitServed waits until name is served or the gateway is ready (when it
// still is not served, the call answers that it is unknown), or ctx ends.
func (g *Gateway) waitServed(ctx context.Context, name string) {
	g.waitUntil(ctx, func() (bool, <-chan struct{}) {
		g.mu.Lock()
		defer g.mu.Unlock()
		return g.served[name] || g.mode == ModeMeta, g.changed
	})
}

// waitUntil waits until check holds, the gateway is ready, or ctx ends;
// check also returns the channel closed at the next change of what it
// looks at.
func (g *Gateway) waitUntil(ctx context.Context, check func() (ok bool, next <-chan struct{})) {
	for {
		ok, next := check()
		if ok {
			return
		}
		select {
		case <-g.ready:
			return
		case <-next:
		case <-ctx.Done():
			return
		}
	}
}

// publish hands mcp-go the served list when what a client would see
// changed (its hash); mcp-go then sends list_changed to every session. The
// list is built only then.
func (g *Gateway) publish() {
	g.mu.Lock()
	mode := g.mode
	g.mu.Unlock()
	var all []tools.Tool
	var sum [32]byte
	if mode == ModeMeta {
		sum = sha256.Sum256([]byte(ModeMeta))
	} else {
		all = g.reg.List()
		sum = hashTools(all)
	}
	g.rebuilds.Add(1)
	g.mu.Lock()
	same := g.hashed && sum == g.hash
	g.mu.Unlock()
	if same {
		return
	}
	var list []server.ServerTool
	var names map[string]bool
	if mode == ModeMeta {
		list = g.metaTools()
	} else {
		list, names = g.fullTools(all)
	}
	g.mu.Lock()
	g.hash, g.hashed = sum, true
	g.publishes.Add(1)
	if names != nil {
		g.served = names
	}
	g.handed = names
	close(g.changed)
	g.changed = make(chan struct{})
	// SetTools runs under g.mu so that two publishes cannot hand mcp-go
	// their lists in the other order.
	g.mcp.SetTools(list...)
	g.mu.Unlock()
	g.log.Debug("served tool list replaced", "tools", len(list), "mode", mode)
}

// published is the number of served lists handed to mcp-go so far: read
// under g.mu, where publish counts a list and hands it over in one step, so
// that mcp-go serves the list it counts.
func (g *Gateway) published() int64 {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.publishes.Load()
}

// publishedOf is the count of the served lists a list_changed method
// announces (published, resPublishes, promptPublishes), and false for
// another method.
func (g *Gateway) publishedOf(method string) (int64, bool) {
	switch method {
	case mcp.MethodNotificationToolsListChanged:
		return g.published(), true
	case mcp.MethodNotificationResourcesListChanged:
		g.pmu.Lock()
		defer g.pmu.Unlock()
		return g.resPublishes, true
	case mcp.MethodNotificationPromptsListChanged:
		g.pmu.Lock()
		defer g.pmu.Unlock()
		return g.promptPublishes, true
	}
	return 0, false
}

// listing records that the stdio client of ctx is listing the list a
// list_changed method announces (stdioSession.lists).
func (g *Gateway) listing(ctx context.Context, method string) {
	s, ok := server.ClientSessionFromContext(ctx).(*stdioSession)
	if !ok {
		return
	}
	if cur, ok := g.publishedOf(method); ok {
		s.lists.of(method).listed(cur)
	}
}

// servesFast reports whether the fast path may call name (fastcall.go):
// the list mcp-go serves now is of mode full and holds name, so mcp-go
// would find it without waiting.
func (g *Gateway) servesFast(name string) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.mode == ModeFull && g.handed[name]
}

// servedNames returns the names of the served list (mode full).
func (g *Gateway) servedNames() map[string]bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.served
}

// hashTools identifies what a client of mode full sees of the registry's
// tools: names, descriptions, schemas, definitions and annotations. A tool mcp-go would
// refuse (fullTools leaves it out) counts too: a change of it alone
// announces an unchanged list, which is rare and harmless, and checking
// every tool here would cost what the hash saves.
func hashTools(all []tools.Tool) [32]byte {
	h := sha256.New()
	for _, t := range all {
		var annotations []byte
		if t.Annotations != nil {
			annotations, _ = json.Marshal(t.Annotations)
		}
		for _, part := range [][]byte{[]byte(t.Name), []byte(t.Description), t.Parameters, t.Definition, annotations} {
			fmt.Fprintf(h, "%d:", len(part))
			h.Write(part)
		}
	}
	return [32]byte(h.Sum(nil))
}

// fullTools builds the served list of mode full from the registry's tools,
// with the set of names served.
func (g *Gateway) fullTools(all []tools.Tool) ([]server.ServerTool, map[string]bool) {
	list := make([]server.ServerTool, 0, len(all))
	names := make(map[string]bool, len(all))
	for _, t := range all {
		mt := servedTool(t)
		if err := mcp.ValidateParamHeaderAnnotations(&mt); err != nil {
			// mcp-go refuses such a tool (it would panic in SetTools).
			g.log.Warn("a tool is not served: its schema has invalid x-mcp-header annotations", "tool", safe.Line(t.Name), "err", safe.Line(err.Error()))
			continue
		}
		names[t.Name] = true
		list = append(list, server.ServerTool{Tool: mt, Handler: g.callHandler(t.Name)})
	}
	return list, names
}

// definition is what the gateway takes from a tool's raw definition.
type definition struct {
	Title        string              `json:"title"`
	Annotations  *mcp.ToolAnnotation `json:"annotations"`
	OutputSchema json.RawMessage     `json:"outputSchema"`
	Icons        []mcp.Icon          `json:"icons"`
	Meta         *mcp.Meta           `json:"_meta"`
}

// servedTool is the MCP tool for a registry tool: its name, description and
// schema as registered, and what its server listed beside them — or, for a
// native tool, the annotations it declares.
func servedTool(t tools.Tool) mcp.Tool {
	mt := mcp.Tool{Name: t.Name, Description: t.Description, RawInputSchema: t.Parameters}
	if len(t.Definition) == 0 {
		if a := t.Annotations; a != nil {
			mt.Annotations = mcp.ToolAnnotation{Title: a.Title, ReadOnlyHint: a.ReadOnly, DestructiveHint: a.Destructive, IdempotentHint: a.Idempotent, OpenWorldHint: a.OpenWorld}
		}
		return mt
	}
	var d definition
	if json.Unmarshal(t.Definition, &d) != nil {
		return mt
	}
	mt.Title = d.Title
	if d.Annotations != nil {
		mt.Annotations = *d.Annotations
	}
	if len(d.OutputSchema) > 0 && !bytes.Equal(bytes.TrimSpace(d.OutputSchema), []byte("null")) {
		mt.RawOutputSchema = d.OutputSchema
	}
	mt.Icons = d.Icons
	mt.Meta = d.Meta
	return mt
}

// callHandler calls one registry tool.
func (g *Gateway) callHandler(name string) server.ToolHandlerFunc {
	return func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return g.execute(ctx, req, name, arguments(req))
	}
}

// arguments returns a call's arguments as raw JSON, {} when there are none.
func arguments(req mcp.CallToolRequest) json.RawMessage {
	return tools.ObjectArgs(req.Params.RawArguments)
}

// toResult turns what the registry answered into the MCP result: the
// server's own result when there is one, else one text block.
func toResult(res tools.Result) *mcp.CallToolResult {
	if len(res.Raw) > 0 {
		if r, err := rawResult(res.Raw); err == nil {
			return r
		}
	}
	return &mcp.CallToolResult{Content: []mcp.Content{mcp.NewTextContent(res.Text)}, IsError: res.IsError}
}

// rawResult is a server's CallToolResult, passed on as it came: each content
// block of a type MCP defines as its raw JSON (mcp-go's typed content would
// re-encode it, and knows fewer fields), structuredContent as raw JSON,
// isError and _meta. A block of a type MCP does not define becomes a text
// block holding its JSON: clients validate results against the protocol's
// schema (the TypeScript SDK fails the whole call on an unknown block), and
// that way the model still reads what the server said.
func rawResult(raw json.RawMessage) (*mcp.CallToolResult, error) {
	var r struct {
		Content           []json.RawMessage `json:"content"`
		StructuredContent json.RawMessage   `json:"structuredContent"`
		IsError           bool              `json:"isError"`
		Meta              *mcp.Meta         `json:"_meta"`
	}
	if err := json.Unmarshal(raw, &r); err != nil {
		return nil, err
	}
	out := &mcp.CallToolResult{Content: make([]mcp.Content, len(r.Content)), IsError: r.IsError}
	out.Meta = r.Meta
	for i, b := range r.Content {
		var head struct {
			Type string `json:"type"`
		}
		_ = json.Unmarshal(b, &head)
		if knownBlocks[head.Type] {
			out.Content[i] = rawBlock{raw: b}
			continue
		}
		var c bytes.Buffer
		if json.Compact(&c, b) != nil {
			c.Reset()
			c.Write(b)
		}
		out.Content[i] = mcp.NewTextContent(c.String())
	}
	if s := bytes.TrimSpace(r.StructuredContent); len(s) > 0 && !bytes.Equal(s, []byte("null")) {
		out.RawStructuredContent = r.StructuredContent
	}
	return out, nil
}

// knownBlocks are the content block types of the MCP specification.
var knownBlocks = map[string]bool{"text": true, "image": true, "audio": true, "resource": true, "resource_link": true}

// rawBlock is a content block that encodes as the JSON it came as. It
// satisfies mcp.Content through the embedded TextContent, whose fields it
// never uses.
type rawBlock struct {
	mcp.TextContent
	raw json.RawMessage
}

// MarshalJSON writes the block as it came.
func (b rawBlock) MarshalJSON() ([]byte, error) { return b.raw, nil }

var _ mcp.Content = rawBlock{}

// firstLine is the first line of a description, for search results: it
// ends at any line separator (safe.FirstLine).
func firstLine(s string) string { return safe.FirstLine(s) }
