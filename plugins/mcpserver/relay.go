package mcpserver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/harness-go/harness/internal/safe"
	"github.com/harness-go/harness/plugins/tools"
)

// The gateway is the front (tools.Front, docs/rfc/0002) of every call it
// serves: what the call's tool asks — an MCP server's elicitation or
// sampling request, a native tool's question — goes to the client that made
// the call, and what the call reports (progress, log messages) too.
// docs/rfc/0005-gateway.md, "Questions and notifications", says why it is
// built this way. In short:
//
//  1. A question is relayed only when the client declared the capability
//     for it (elicitation form or url, sampling, roots); otherwise an
//     elicitation is declined and any other question is unsupported (the
//     bridge answers its server -32601). On a 2026-07-28 request a sampling
//     or roots question the client did not declare also makes the call
//     answer -32021 (missing client capability) when its tool fails.
//  2. On a client of the session era (before 2026-07-28) the question is a
//     request to the client, sent while the call runs (relay below); on a
//     2026-07-28 client it is an input_required result, and the call waits,
//     parked, for the client's retry (mrtr.go).
//  3. Progress goes to the client that sent a progressToken, with its token
//     in place of the backend's; log messages go to a client that asked
//     for them (logging/setLevel, or _meta's logLevel on 2026-07-28), at
//     the level it asked for. Neither ever blocks the call.

// execute runs registry tool name for the tools/call req, with the gateway
// as the call's front.
func (g *Gateway) execute(ctx context.Context, req mcp.CallToolRequest, name string, args json.RawMessage) (*mcp.CallToolResult, error) {
	if o := outcomeOf(ctx); o != nil {
		// What the call reports after its answer has nowhere to go.
		defer o.answered.Store(true)
	}
	if server.IsModernRequest(ctx) {
		return g.executeModern(ctx, req, name, args)
	}
	f := &relay{g: g, req: ctx, token: progressToken(req), caps: sessionCapabilities(ctx)}
	return toResult(g.reg.Execute(tools.WithRawResult(tools.WithFront(ctx, f)), name, args)), nil
}

// progressToken is the token a request asked progress for, or nil.
func progressToken(req mcp.CallToolRequest) mcp.ProgressToken {
	if req.Params.Meta == nil {
		return nil
	}
	return req.Params.Meta.ProgressToken
}

// sessionCapabilities are the capabilities the client of ctx's session
// declared at initialize.
func sessionCapabilities(ctx context.Context) mcp.ClientCapabilities {
	if s, ok := server.ClientSessionFromContext(ctx).(server.SessionWithClientInfo); ok {
		return s.GetClientCapabilities()
	}
	return mcp.ClientCapabilities{}
}

// relay is the front of a call from a client of the session era: questions
// are requests to the client on the call's own stream, sent at once.
type relay struct {
	g     *Gateway
	req   context.Context // the tools/call request: its session, its era
	token mcp.ProgressToken
	caps  mcp.ClientCapabilities
}

var _ tools.Front = (*relay)(nil)

func (f *relay) Offers() tools.Offers {
	o := offersOf(f.caps)
	o.Progress = f.token != nil // progress goes only to a client that asked for it
	return o
}

// Ask sends q to the client, when it declared the capability, and returns
// its answer.
func (f *relay) Ask(ctx context.Context, q tools.Question) (json.RawMessage, error) {
	switch q.Method {
	case tools.MethodElicit:
		var p struct {
			Mode string `json:"mode"`
		}
		if err := json.Unmarshal(q.Params, &p); err != nil {
			return nil, fmt.Errorf("gateway: elicitation/create params: %w", err)
		}
		if !offersElicitation(f.caps, p.Mode) {
			return tools.Declined(), nil
		}
	case tools.MethodSample:
		if f.caps.Sampling == nil {
			return nil, tools.ErrUnsupported
		}
	case tools.MethodRoots:
		if f.caps.Roots == nil {
			return nil, tools.ErrUnsupported
		}
	default:
		return nil, tools.ErrUnsupported
	}
	// The request's context holds the stream the question goes on; ctx
	// is the call's, which may end first.
	rctx, cancel := context.WithCancel(f.req)
	defer cancel()
	defer context.AfterFunc(ctx, cancel)()
	var gone <-chan struct{}
	if o := outcomeOf(f.req); o != nil {
		gone = o.gone
	}
	res, err := f.g.askClient(rctx, f.req, gone, q.Method, q.Params)
	if err != nil {
		return nil, fmt.Errorf("gateway: asking the client (%s): %w", q.Method, err)
	}
	return res, nil
}

// Notify passes progress and log messages on to the client.
func (f *relay) Notify(_ context.Context, n tools.Notification) {
	f.g.notify(f.req, f.token, n)
}

// offersOf says what a client with caps can answer.
func offersOf(caps mcp.ClientCapabilities) tools.Offers {
	return tools.Offers{
		Elicitation:    offersElicitation(caps, mcp.ElicitationModeForm),
		ElicitationURL: offersElicitation(caps, mcp.ElicitationModeURL),
		Sampling:       caps.Sampling != nil,
	}
}

// offersElicitation reports whether a client with caps answers an
// elicitation of mode ("" is form): an empty elicitation capability means
// form mode only.
func offersElicitation(caps mcp.ClientCapabilities, mode string) bool {
	e := caps.Elicitation
	if e == nil {
		return false
	}
	if mode == mcp.ElicitationModeURL {
		return e.URL != nil
	}
	return e.Form != nil || e.URL == nil
}

// elicitParams decodes an elicitation's params, its schema kept as the
// asker wrote it (the schema's keywords pass to the client unchanged).
func elicitParams(raw json.RawMessage) (mcp.ElicitationParams, error) {
	var p struct {
		mcp.ElicitationParams
		RequestedSchema json.RawMessage `json:"requestedSchema,omitempty"`
	}
	if err := json.Unmarshal(raw, &p); err != nil {
		return mcp.ElicitationParams{}, fmt.Errorf("gateway: elicitation/create params: %w", err)
	}
	out := p.ElicitationParams
	if len(p.RequestedSchema) > 0 {
		out.RequestedSchema = p.RequestedSchema
	}
	return out, nil
}

// notify sends n to the client of the request rctx: progress when token is
// set (in place of the backend's), log messages when the client asked for
// them, at its level or above.
func (g *Gateway) notify(rctx context.Context, token mcp.ProgressToken, n tools.Notification) {
	var params map[string]any
	if json.Unmarshal(n.Params, &params) != nil || params == nil {
		return
	}
	switch n.Method {
	case tools.MethodProgress:
		if token == nil {
			return
		}
		params["progressToken"] = token
		g.deliver(rctx, mcp.MethodNotificationProgress, params)
	case tools.MethodLog:
		level, _ := params["level"].(string)
		if !g.wantsLog(rctx, mcp.LoggingLevel(level)) {
			return
		}
		if logger, _ := params["logger"].(string); logger == "" && n.Server != "" {
			params["logger"] = n.Server
		}
		g.deliver(rctx, mcp.MethodNotificationMessage, params)
	}
}

// wantsLog reports whether the client of rctx's request takes a log
// message of level: on 2026-07-28 the request's _meta says, before that
// logging/setLevel did.
func (g *Gateway) wantsLog(rctx context.Context, level mcp.LoggingLevel) bool {
	if info := server.RequestProtocolInfoFromContext(rctx); info != nil && info.Modern {
		return info.LogLevel != "" && level.ShouldSendTo(info.LogLevel)
	}
	s, ok := server.ClientSessionFromContext(rctx).(server.SessionWithLogging)
	return ok && g.logAsked(rctx) && level.ShouldSendTo(s.GetLogLevel())
}

// deliver writes a notification to the client of rctx's request: on the
// request's own stream, before its answer (outcome.go), or else through
// the session.
func (g *Gateway) deliver(rctx context.Context, method mcp.MCPMethod, params map[string]any) {
	note := mcp.JSONRPCNotification{JSONRPC: mcp.JSONRPC_VERSION, Notification: mcp.Notification{
		Method: string(method), Params: mcp.NotificationParams{AdditionalFields: params},
	}}
	if o := outcomeOf(rctx); o != nil && o.stream != nil {
		if msg, err := json.Marshal(note); err == nil {
			g.onStream(rctx, o, msg)
		}
		return
	}
	if err := g.mcp.SendNotificationToClient(rctx, string(method), params); err != nil && !errors.Is(err, server.ErrNotificationChannelBlocked) {
		g.log.Debug("a notification was not relayed", "method", method, "err", safe.Line(err.Error()))
	}
}

// logLevels records the sessions that asked for log messages with
// logging/setLevel: only those get a backend's (mcp-go would send the
// others errors at least).
type logLevels struct{ asked sync.Map } // session id → struct{}

// logAsked reports whether the session of ctx asked for log messages.
func (g *Gateway) logAsked(ctx context.Context) bool {
	s := server.ClientSessionFromContext(ctx)
	if s == nil {
		return false
	}
	_, ok := g.levels.asked.Load(s.SessionID())
	return ok
}

// watchLevels keeps logLevels up to date through mcp-go's hooks.
func (g *Gateway) watchLevels(hooks *server.Hooks) {
	hooks.AddAfterSetLevel(func(ctx context.Context, _ any, _ *mcp.SetLevelRequest, _ *mcp.EmptyResult) {
		if s := server.ClientSessionFromContext(ctx); s != nil {
			g.levels.asked.Store(s.SessionID(), struct{}{})
		}
	})
	hooks.AddOnUnregisterSession(func(_ context.Context, s server.ClientSession) {
		g.levels.asked.Delete(s.SessionID())
	})
}
