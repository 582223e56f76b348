package mcpclient

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/harness-go/harness/internal/safe"
	"github.com/harness-go/harness/plugins/tools"
)

// What the server asks of us and tells us, on both revisions: its requests
// (answer), its notifications (notified), and on 2026-07-28 the input a
// result asks for (inputRequired). A question or notification that belongs
// to a tools/call of ours in flight goes to the front of that call's
// context (tools.Ask, tools.Notify, with Server = the serverName and Tool =
// the public name); one that belongs to none — nothing in flight, or more
// than one call and nothing saying which — is declined or dropped, with a
// line in the debug log.

// answer answers one request of the server's. Every request gets an
// answer: ping an empty result, roots/list the entry's roots, an
// elicitation the front's answer (a decline without one), sampling the
// front's answer (-32601 without one that offers it), anything else
// -32601.
func (s *session) answer(ctx context.Context, m *inMsg) (json.RawMessage, *wireError) {
	switch m.Method {
	case string(mcp.MethodPing):
		return json.RawMessage("{}"), nil
	case string(mcp.MethodListRoots):
		if !s.hasRoots() {
			return nil, &wireError{Code: mcp.METHOD_NOT_FOUND, Message: "roots/list: this client declares no roots"}
		}
		return s.rootsResult(), nil
	case string(mcp.MethodElicitationCreate), string(mcp.MethodSamplingCreateMessage):
		call := m.call
		if call == nil {
			s.log.Debug("a question of the server's belongs to no call in flight; declined", "method", m.Method)
			if m.Method == string(mcp.MethodElicitationCreate) {
				return tools.Declined(), nil
			}
			return nil, &wireError{Code: mcp.METHOD_NOT_FOUND, Message: m.Method + ": no call in flight to ask about"}
		}
		qctx, cancel := context.WithCancel(call.ctx) // the call's front, ended by either
		defer cancel()
		stop := context.AfterFunc(ctx, cancel)
		defer stop()
		res, err := s.ask(qctx, call, m.Method, m.Params)
		if err != nil {
			return nil, askError(m.Method, err)
		}
		return res, nil
	}
	return nil, &wireError{Code: mcp.METHOD_NOT_FOUND, Message: fmt.Sprintf("method %q is not supported", m.Method)}
}

// ask asks the front of call's context (of ctx, which carries it) the
// question method stands for. An elicitation whose call ended is cancelled.
func (s *session) ask(ctx context.Context, call *callInfo, method string, params json.RawMessage) (json.RawMessage, error) {
	tool := ""
	if call != nil {
		tool = call.tool
	}
	res, err := tools.Ask(ctx, tools.Question{Server: s.opts.server, Tool: tool, Method: method, Params: params})
	if err != nil && ctx.Err() != nil && method == string(mcp.MethodElicitationCreate) {
		return json.RawMessage(`{"action":"cancel"}`), nil
	}
	return res, err
}

// askError is the JSON-RPC error of a question the front did not answer.
func askError(method string, err error) *wireError {
	if errors.Is(err, tools.ErrUnsupported) {
		return &wireError{Code: mcp.METHOD_NOT_FOUND, Message: method + ": " + err.Error()}
	}
	return &wireError{Code: mcp.INTERNAL_ERROR, Message: method + ": " + err.Error()}
}

// rootsResult is roots/list's result: the entry's roots as file:// URIs.
func (s *session) rootsResult() json.RawMessage {
	type root struct {
		URI string `json:"uri"`
	}
	roots := []root{}
	for _, u := range s.opts.roots() {
		roots = append(roots, root{URI: u})
	}
	return mustJSON(map[string]any{"roots": roots})
}

// attach finds the call of ours in flight that m belongs to (rpc.attach,
// on the reader): progress by its token, the rest by callFor. Progress and
// log messages are passed to the call's front here, in the order they came
// and before the call's response is read: a front's Notify never blocks for
// long (tools.Front, rule 4).
func (s *session) attach(m *inMsg) {
	switch m.Method {
	case string(mcp.MethodNotificationProgress):
		var p struct {
			Token json.RawMessage `json:"progressToken"`
		}
		_ = json.Unmarshal(m.Params, &p)
		if m.call = s.callByToken(p.Token); m.call != nil {
			tools.Notify(m.call.ctx, tools.Notification{Server: s.opts.server, Tool: m.call.tool, Method: tools.MethodProgress, Params: m.Params})
		}
	case string(mcp.MethodNotificationMessage):
		if m.call = s.callFor(m); m.call != nil {
			tools.Notify(m.call.ctx, tools.Notification{Server: s.opts.server, Tool: m.call.tool, Method: tools.MethodLog, Params: m.Params})
		}
	case string(mcp.MethodElicitationCreate), string(mcp.MethodSamplingCreateMessage):
		m.call = s.callFor(m)
	}
}

// callFor returns the call in flight a message of the server's belongs to:
// the one whose HTTP response stream carried it, else the only one there
// is; nil when none or more than one.
func (s *session) callFor(m *inMsg) *callInfo {
	s.mu.Lock()
	defer s.mu.Unlock()
	if m.via != "" {
		return s.calls[m.via]
	}
	if len(s.calls) != 1 {
		return nil
	}
	for _, c := range s.calls {
		return c
	}
	return nil
}

// callByToken returns the call in flight that sent progressToken token.
func (s *session) callByToken(token json.RawMessage) *callInfo {
	var t string
	if json.Unmarshal(token, &t) != nil || t == "" {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, c := range s.calls {
		if c.token == t {
			return c
		}
	}
	return nil
}

// notified handles one notification of the server's, in order, off the
// read loop.
func (s *session) notified(m *inMsg) {
	switch m.Method {
	case string(mcp.MethodNotificationToolsListChanged):
		if s.opts.onListChanged != nil {
			s.opts.onListChanged(listTools)
		}
	case mcp.MethodNotificationResourcesListChanged:
		if s.opts.onListChanged != nil {
			s.opts.onListChanged(listResources)
		}
	case mcp.MethodNotificationPromptsListChanged:
		if s.opts.onListChanged != nil {
			s.opts.onListChanged(listPrompts)
		}
	case mcp.MethodNotificationResourceUpdated:
		var p struct {
			URI string `json:"uri"`
		}
		if json.Unmarshal(m.Params, &p) == nil && p.URI != "" && s.opts.onUpdated != nil {
			s.opts.onUpdated(p.URI)
		}
	case string(mcp.MethodNotificationProgress):
		if m.call == nil {
			s.log.Debug("progress of no call in flight; dropped")
		}
	case string(mcp.MethodNotificationMessage):
		s.logMessage(m.Params)
	case string(mcp.MethodNotificationCancelled):
		// The rpc has ended what it names.
	default:
		s.log.Debug("a notification we do not use", "method", safe.Line(m.Method))
	}
}

// logMessage writes a server's notifications/message to our log at the
// level it maps to, with its logger and data (escaped and redacted: the
// log is ours).
func (s *session) logMessage(params json.RawMessage) {
	var p struct {
		Level  string          `json:"level"`
		Logger string          `json:"logger"`
		Data   json.RawMessage `json:"data"`
	}
	if json.Unmarshal(params, &p) != nil {
		return
	}
	data := string(p.Data)
	var text string
	if json.Unmarshal(p.Data, &text) == nil {
		data = text
	} else {
		var b bytes.Buffer
		if json.Compact(&b, p.Data) == nil {
			data = b.String()
		}
	}
	attrs := []any{"data", safe.Line(s.secrets.Clip(data, 2048))}
	if p.Logger != "" {
		attrs = append(attrs, "logger", safe.Line(s.secrets.Redact(p.Logger)))
	}
	s.log.Log(context.Background(), logLevel(p.Level), "server log message", attrs...)
}

// logLevel maps an MCP (syslog) level to slog's.
func logLevel(l string) slog.Level {
	switch strings.ToLower(l) {
	case "debug":
		return slog.LevelDebug
	case "info", "notice":
		return slog.LevelInfo
	case "warning":
		return slog.LevelWarn
	case "error", "critical", "alert", "emergency":
		return slog.LevelError
	}
	return slog.LevelInfo
}

// roundState is what one round of a 2026-07-28 request sends back: the
// answers to the server's input requests, and its requestState, raw.
type roundState struct {
	n         int
	responses map[string]json.RawMessage
	state     json.RawMessage
}

// inputRequired reads a 2026-07-28 result: false when it is complete (a
// result without resultType is complete); else it fulfils every input
// request of it, into round, for the request to be sent again. A request we
// cannot fulfil fails the call, saying which.
func (s *session) inputRequired(ctx context.Context, raw json.RawMessage, call *callInfo, round *roundState) (bool, error) {
	if !bytes.Contains(raw, []byte(`"input_required"`)) {
		return false, nil
	}
	var res struct {
		ResultType    string                     `json:"resultType"`
		InputRequests map[string]json.RawMessage `json:"inputRequests"`
		RequestState  json.RawMessage            `json:"requestState"`
	}
	if json.Unmarshal(raw, &res) != nil || res.ResultType != string(mcp.ResultTypeInputRequired) {
		return false, nil
	}
	round.responses = map[string]json.RawMessage{}
	round.state = nil
	if len(res.RequestState) > 0 && string(res.RequestState) != "null" {
		round.state = res.RequestState
	}
	// Roots come from the configuration; the questions go to the call's
	// front together (tools.AskAll: a gateway relays them in one result).
	var qs []tools.Question
	for _, key := range sortedKeys(res.InputRequests) {
		var req struct {
			Method string          `json:"method"`
			Params json.RawMessage `json:"params"`
		}
		if err := json.Unmarshal(res.InputRequests[key], &req); err != nil {
			return false, fmt.Errorf("the server's input request %q does not decode: %w", key, err)
		}
		switch req.Method {
		case string(mcp.MethodListRoots):
			if s.hasRoots() {
				round.responses[key] = s.rootsResult()
			} else {
				round.responses[key] = mustJSON(map[string]any{"roots": []any{}})
			}
		case string(mcp.MethodElicitationCreate), string(mcp.MethodSamplingCreateMessage):
			tool := ""
			if call != nil {
				tool = call.tool
			}
			qs = append(qs, tools.Question{Server: s.opts.server, Tool: tool, Method: req.Method, Params: req.Params, ID: key})
		default:
			return false, fmt.Errorf("input request %q (%s): not a request this client answers", key, safe.Line(req.Method))
		}
	}
	for i, a := range tools.AskAll(ctx, qs) {
		q := qs[i]
		switch {
		case a.Err == nil:
			round.responses[q.ID] = a.Result
		case q.Method == string(mcp.MethodElicitationCreate) && ctx.Err() != nil:
			round.responses[q.ID] = json.RawMessage(`{"action":"cancel"}`)
		case q.Method == string(mcp.MethodElicitationCreate) && errors.Is(a.Err, tools.ErrUnsupported):
			round.responses[q.ID] = tools.Declined()
		case errors.Is(a.Err, tools.ErrUnsupported):
			return false, fmt.Errorf("input request %q (%s): no one here answers sampling (it was not declared)", q.ID, q.Method)
		default:
			return false, fmt.Errorf("input request %q (%s): %w", q.ID, q.Method, a.Err)
		}
	}
	return true, nil
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
