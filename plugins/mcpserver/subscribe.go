package mcpserver

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/harness-go/harness/internal/completion"
	"github.com/harness-go/harness/internal/safe"
	"github.com/harness-go/harness/plugins/prompts"
	"github.com/harness-go/harness/plugins/resources"
)

// Subscriptions and completion through the gateway
// (docs/rfc/0008-resources-prompts.md, "Through the gateway"):
//
//  1. resources/subscribe of a served URI subscribes the session through
//     the registry (Registry.Subscribe counts it with the other readers',
//     so the server is asked once); the server's
//     notifications/resources/updated reaches the sessions that subscribed,
//     under the URI they subscribed to. resources/unsubscribe, and the end
//     of the session, release it.
//  2. On 2026-07-28 the subscriptions are a subscriptions/listen stream's
//     (the revision has no resources/subscribe): each URI of its filter's
//     resourceSubscriptions that the gateway serves subscribes the stream
//     the same way, and the server's updates go on that stream, tagged
//     with its subscriptionId, until the stream ends. A URI it does not
//     serve, or whose server cannot subscribe, is left out of the filter,
//     so the acknowledgement tells the client what was established.
//  3. completion/complete goes to the prompt's source (the reference by its
//     public name: mcp-client renames it) or to the server of the template
//     (the reference renamed to the server's own uriTemplate).

// sessionSubs are the subscriptions of the gateway's sessions: session id
// → served URI → the registry's subscriber.
type sessionSubs struct {
	mu      sync.Mutex
	m       map[string]map[string]*resources.Subscriber
	streams int // subscriptions held by listen streams (2026-07-28)
}

// route returns the server and its own URI for a served URI: a served
// resource, or the expansion of a served template.
func (g *Gateway) route(uri string) (srv, orig string, ok bool) {
	g.pmu.Lock()
	owner, found := g.uris[uri]
	tpls := g.tpls
	g.pmu.Unlock()
	if found {
		return owner.server, owner.uri, true
	}
	for _, t := range tpls {
		if !t.tpl.Regexp().MatchString(uri) {
			continue
		}
		if !t.prefixed {
			return t.server, uri, true
		}
		if orig, ok := unprefixURI(t.server, uri); ok {
			return t.server, orig, true
		}
	}
	return "", "", false
}

// subscribe runs before mcp-go answers resources/subscribe, which it
// acknowledges unless the request has no uri: a subscription that fails
// records its error (the outcome) and clears the uri, so that mcp-go
// answers an error, which the transport rewrites to the recorded one.
func (g *Gateway) subscribe(ctx context.Context, req *mcp.SubscribeRequest) {
	uri := req.Params.URI
	sess := server.ClientSessionFromContext(ctx)
	if uri == "" || sess == nil {
		return
	}
	fail := func(code int, msg string, data any) {
		if o := outcomeOf(ctx); o != nil {
			o.keepStatus.Store(true) // resources/subscribe is of revisions before 2026-07-28
		}
		_ = g.fail(ctx, code, msg, data)
		req.Params.URI = ""
	}
	srv, orig, ok := g.route(uri)
	if !ok {
		fail(mcp.INVALID_PARAMS, "resource not found: "+uri, map[string]any{"uri": uri})
		return
	}
	id := sess.SessionID()
	g.subs.mu.Lock()
	if g.subs.m[id][uri] != nil {
		g.subs.mu.Unlock()
		return // subscribed already: once is enough
	}
	g.subs.mu.Unlock()
	sub, err := g.opts.Resources.Subscribe(ctx, srv, orig, func(string) {
		g.mcp.SendNotificationToSpecificClient(id, string(mcp.MethodNotificationResourceUpdated), map[string]any{"uri": uri}) //nolint:errcheck // a session gone meanwhile misses it
	})
	if err != nil {
		if errors.Is(err, resources.ErrNoSubscription) {
			fail(mcp.METHOD_NOT_FOUND, fmt.Sprintf("resources/subscribe %s: %v", uri, err), map[string]any{"uri": uri})
			return
		}
		fail(mcp.INTERNAL_ERROR, fmt.Sprintf("resources/subscribe %s: %v", uri, err), nil)
		return
	}
	g.subs.mu.Lock()
	if g.subs.m == nil {
		g.subs.m = map[string]map[string]*resources.Subscriber{}
	}
	if g.subs.m[id] == nil {
		g.subs.m[id] = map[string]*resources.Subscriber{}
	}
	dup := g.subs.m[id][uri] != nil
	if !dup {
		g.subs.m[id][uri] = sub
	}
	g.subs.mu.Unlock()
	if dup {
		_ = sub.Stop(context.WithoutCancel(ctx)) // a twin request won
	}
}

// listen subscribes a subscriptions/listen stream (2026-07-28) to the
// served URIs its filter names, before mcp-go acknowledges the filter and
// holds the stream open; the subscriptions end with the stream's request.
// What cannot be subscribed is taken out of the filter (item 2 above).
func (g *Gateway) listen(ctx context.Context, id any, req *mcp.SubscriptionsListenRequest) {
	uris := req.Params.Notifications.ResourceSubscriptions
	sess := server.ClientSessionFromContext(ctx)
	if len(uris) == 0 || sess == nil {
		return
	}
	if g.opts.Resources == nil {
		req.Params.Notifications.ResourceSubscriptions = nil
		return
	}
	var subs []*resources.Subscriber
	kept := []string{}
	for _, uri := range uris {
		if slices.Contains(kept, uri) {
			continue
		}
		srv, orig, ok := g.route(uri)
		if !ok {
			g.log.Debug("subscriptions/listen: no served resource has the uri; left out of the filter", "uri", safe.Line(uri))
			continue
		}
		sub, err := g.opts.Resources.Subscribe(ctx, srv, orig, func(string) { g.updated(sess, id, uri) })
		if err != nil {
			g.log.Warn("subscriptions/listen: subscribing failed; left out of the filter", "uri", safe.Line(uri), "server", srv, "err", safe.Line(err.Error()))
			continue
		}
		subs, kept = append(subs, sub), append(kept, uri)
	}
	req.Params.Notifications.ResourceSubscriptions = kept
	if len(kept) == 0 {
		req.Params.Notifications.ResourceSubscriptions = nil
	}
	if len(subs) == 0 {
		return
	}
	g.subs.mu.Lock()
	g.subs.streams += len(subs)
	g.subs.mu.Unlock()
	context.AfterFunc(ctx, func() {
		g.subs.mu.Lock()
		g.subs.streams -= len(subs)
		g.subs.mu.Unlock()
		for i, sub := range subs {
			if err := sub.Stop(context.Background()); err != nil {
				g.log.Warn("a listen stream ended: the server's unsubscribe failed", "uri", safe.Line(kept[i]), "err", safe.Line(err.Error()))
			}
		}
	})
}

// updated puts notifications/resources/updated of uri on the listen
// stream id of sess; a stream that cannot take it now misses it (an update
// is a hint to read again, and the stream must not block the server).
func (g *Gateway) updated(sess server.ClientSession, id any, uri string) {
	n := mcp.JSONRPCNotification{JSONRPC: mcp.JSONRPC_VERSION, Notification: mcp.Notification{
		Method: string(mcp.MethodNotificationResourceUpdated),
		Params: mcp.NotificationParams{Meta: map[string]any{mcp.MetaKeySubscriptionID: id}, AdditionalFields: map[string]any{"uri": uri}},
	}}
	if s, ok := sess.(server.SessionWithStreamableHTTPConfig); ok {
		s.UpgradeToSSEWhenReceiveNotification()
	}
	select {
	case sess.NotificationChannel() <- n:
	default:
		g.log.Debug("a listen stream is full: an update was dropped", "uri", safe.Line(uri))
	}
}

// unsubscribe releases the session's subscription to the request's uri.
func (g *Gateway) unsubscribe(ctx context.Context, req *mcp.UnsubscribeRequest) {
	sess := server.ClientSessionFromContext(ctx)
	if sess == nil {
		return
	}
	g.subs.mu.Lock()
	sub := g.subs.m[sess.SessionID()][req.Params.URI]
	delete(g.subs.m[sess.SessionID()], req.Params.URI)
	g.subs.mu.Unlock()
	if sub != nil {
		if err := sub.Stop(context.WithoutCancel(ctx)); err != nil {
			g.log.Warn("resources/unsubscribe: the server's unsubscribe failed", "uri", safe.Line(req.Params.URI), "err", safe.Line(err.Error()))
		}
	}
}

// endSubscriptions releases the subscriptions of a session that ended.
func (g *Gateway) endSubscriptions(id string) {
	g.subs.mu.Lock()
	subs := g.subs.m[id]
	delete(g.subs.m, id)
	g.subs.mu.Unlock()
	for uri, sub := range subs {
		if err := sub.Stop(context.Background()); err != nil {
			g.log.Warn("a session ended: the server's unsubscribe failed", "uri", safe.Line(uri), "err", safe.Line(err.Error()))
		}
	}
}

// subscriptionCount is how many subscriptions the sessions and the listen
// streams hold.
func (g *Gateway) subscriptionCount() int {
	g.subs.mu.Lock()
	defer g.subs.mu.Unlock()
	n := g.subs.streams
	for _, m := range g.subs.m {
		n += len(m)
	}
	return n
}

// completer relays completion/complete (mcp-go's completion providers).
type completer struct{ g *Gateway }

// CompletePromptArgument relays a prompt's completion to its source.
func (c completer) CompletePromptArgument(ctx context.Context, name string, arg mcp.CompleteArgument, cctx mcp.CompleteContext) (*mcp.Completion, error) {
	g := c.g
	if g.opts.Prompts == nil {
		return nil, g.fail(ctx, mcp.INVALID_PARAMS, "completion/complete: no prompts are served", nil)
	}
	res, err := g.opts.Prompts.CompleteArgument(ctx, name, arg.Name, arg.Value, cctx.Arguments)
	switch {
	case errors.Is(err, prompts.ErrUnknown):
		return nil, g.fail(ctx, mcp.INVALID_PARAMS, fmt.Sprintf("completion/complete: no prompt %q", name), nil)
	case err != nil:
		return nil, fmt.Errorf("completion/complete of prompt %s: %w", safe.Line(name), err)
	}
	return mcpCompletion(res), nil
}

// CompleteResourceArgument relays a template's completion to its server.
func (c completer) CompleteResourceArgument(ctx context.Context, uri string, arg mcp.CompleteArgument, cctx mcp.CompleteContext) (*mcp.Completion, error) {
	g := c.g
	g.pmu.Lock()
	var found *servedTemplate
	for i := range g.tpls {
		if g.tpls[i].served == uri {
			found = &g.tpls[i]
			break
		}
	}
	g.pmu.Unlock()
	if found == nil || g.opts.Resources == nil {
		return nil, g.fail(ctx, mcp.INVALID_PARAMS, fmt.Sprintf("completion/complete: no resource template %q", uri), map[string]any{"uri": uri})
	}
	res, err := g.opts.Resources.CompleteTemplate(ctx, found.server, found.orig, arg.Name, arg.Value, cctx.Arguments)
	if err != nil {
		return nil, fmt.Errorf("completion/complete of template %s: %w", safe.Line(uri), err)
	}
	return mcpCompletion(res), nil
}

// mcpCompletion is a completion as mcp-go's completion providers answer it.
func mcpCompletion(c completion.Result) *mcp.Completion {
	return &mcp.Completion{Values: c.Values, Total: c.Total, HasMore: c.HasMore}
}
