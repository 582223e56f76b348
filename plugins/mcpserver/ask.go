package mcpserver

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/harness-go/harness/internal/jsonrpc"
)

// Requests of the gateway to a client of the session era (elicitation,
// sampling, roots: relay.go) go on the stream of the call they belong to —
// stdout over stdio, the POST's event stream over HTTP — written in order
// with the call's notifications and before its answer, with an id of the
// gateway's own ("harness-" and 24 random hex digits). The client's answer
// comes back as a message of its own (a line on stdin; a POST over HTTP,
// which the gateway's handler takes before mcp-go sees it) and is matched
// here by that id: being random, it lets a client answer only what it was
// asked, never another client's question. Its params and result pass as
// the asker and the client wrote them.
//
// mcp-go's server would send sampling and roots requests only on a
// client's standalone GET stream, which many clients never open; the
// question would wait for ever.

// askPrefix starts the ids of the gateway's requests to its clients.
const askPrefix = "harness-"

// pendingAsks are the gateway's requests waiting for their answers.
type pendingAsks struct {
	mu sync.Mutex
	m  map[string]chan json.RawMessage // by the id's JSON (jsonrpc.IDKey)
}

// deliver hands a client's answer (the whole message) to the request it
// answers; false when no request of ours waits for it.
func (p *pendingAsks) deliver(id json.RawMessage, msg []byte) bool {
	p.mu.Lock()
	ch := p.m[jsonrpc.IDKey(id)]
	p.mu.Unlock()
	if ch == nil {
		return false
	}
	select {
	case ch <- append(json.RawMessage(nil), msg...):
	default:
	}
	return true
}

// isAnswer reports whether msg is a client's answer to a request of ours
// (its id and no method), and returns the id.
func isAnswer(msg []byte) (json.RawMessage, bool) {
	var m struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
	}
	if json.Unmarshal(msg, &m) != nil || m.Method != "" {
		return nil, false
	}
	var id string
	if json.Unmarshal(m.ID, &id) != nil || !strings.HasPrefix(id, askPrefix) {
		return nil, false
	}
	return m.ID, true
}

// errNoStream is a request to a client that has no stream for it.
var errNoStream = errors.New("the request has no stream to the client")

// askClient sends the client of rctx's request the request method with
// params, on the request's own stream, and returns the client's result.
// gone, when not nil, closes when no answer can come any more. When ctx
// ends first, the client is told the request is cancelled.
func (g *Gateway) askClient(ctx, rctx context.Context, gone <-chan struct{}, method string, params json.RawMessage) (json.RawMessage, error) {
	o := outcomeOf(rctx)
	if o == nil || o.stream == nil {
		return nil, errNoStream
	}
	g.asks.mu.Lock()
	if g.asks.m == nil {
		g.asks.m = map[string]chan json.RawMessage{}
	}
	b := make([]byte, 12)
	_, _ = rand.Read(b)
	id := askPrefix + hex.EncodeToString(b)
	idJSON := json.RawMessage(strconv.Quote(id))
	key := jsonrpc.IDKey(idJSON)
	answer := make(chan json.RawMessage, 1)
	g.asks.m[key] = answer
	g.asks.mu.Unlock()
	defer func() {
		g.asks.mu.Lock()
		delete(g.asks.m, key)
		g.asks.mu.Unlock()
	}()
	if len(params) == 0 {
		params = json.RawMessage(`{}`)
	}
	msg, _ := json.Marshal(struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      string          `json:"id"`
		Method  string          `json:"method"`
		Params  json.RawMessage `json:"params"`
	}{mcp.JSONRPC_VERSION, id, method, params})
	if !g.onStream(rctx, o, msg) {
		return nil, fmt.Errorf("gateway: the answer to the call was already sent; %s cannot reach the client", method)
	}
	select {
	case line := <-answer:
		var resp struct {
			Result json.RawMessage          `json:"result"`
			Error  *mcp.JSONRPCErrorDetails `json:"error"`
		}
		if err := json.Unmarshal(line, &resp); err != nil {
			return nil, fmt.Errorf("gateway: the client's answer to %s: %w", method, err)
		}
		if resp.Error != nil {
			return nil, fmt.Errorf("gateway: the client answered %s with error %d: %s", method, resp.Error.Code, resp.Error.Message)
		}
		if len(resp.Result) == 0 {
			return nil, fmt.Errorf("gateway: the client's answer to %s has no result", method)
		}
		return resp.Result, nil
	case <-ctx.Done():
		cancel, _ := json.Marshal(mcp.JSONRPCNotification{JSONRPC: mcp.JSONRPC_VERSION, Notification: mcp.Notification{
			Method: string(mcp.MethodNotificationCancelled),
			Params: mcp.NotificationParams{AdditionalFields: map[string]any{"requestId": id, "reason": "the call ended"}},
		}})
		g.onStream(rctx, o, cancel)
		return nil, context.Cause(ctx)
	case <-gone:
		return nil, fmt.Errorf("gateway: the client went away before it answered %s", method)
	}
}

// onStream writes msg on the stream of rctx's request, telling an HTTP
// session first that the answer follows as an event of that stream.
func (g *Gateway) onStream(rctx context.Context, o *outcome, msg []byte) bool {
	if s, ok := server.ClientSessionFromContext(rctx).(server.SessionWithStreamableHTTPConfig); ok {
		s.UpgradeToSSEWhenReceiveNotification()
	}
	return o.notify(msg)
}
