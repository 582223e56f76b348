package mcpserver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/harness-go/harness/internal/testkit/mcptest"
	"github.com/harness-go/harness/plugins/tools"
)

// askingTool reports progress and a log message, asks a form, a sampling
// and the roots, reports progress again and answers what it was told.
func askingTool(name string) tools.Tool {
	return tools.Tool{
		Name: name, Description: "Ask the client three things.",
		Parameters: json.RawMessage(`{"type":"object","properties":{}}`),
		Execute: func(ctx context.Context, _ json.RawMessage) (tools.Result, error) {
			tools.Notify(ctx, tools.Notification{Server: "demo", Tool: name, Method: tools.MethodProgress, Params: json.RawMessage(`{"progressToken":"backend-7","progress":1,"total":2}`)})
			tools.Notify(ctx, tools.Notification{Server: "demo", Tool: name, Method: tools.MethodLog, Params: json.RawMessage(`{"level":"info","data":"working"}`)})
			tools.Notify(ctx, tools.Notification{Server: "demo", Tool: name, Method: tools.MethodLog, Params: json.RawMessage(`{"level":"debug","data":"too fine"}`)})
			form, err := tools.Ask(ctx, tools.Question{Server: "demo", Tool: name, Method: tools.MethodElicit,
				Params: json.RawMessage(`{"message":"Your name?","requestedSchema":{"type":"object","properties":{"name":{"type":"string","default":"x"}},"required":["name"]}}`)})
			if err != nil {
				return tools.Result{}, fmt.Errorf("elicitation: %w", err)
			}
			sample, err := tools.Ask(ctx, tools.Question{Server: "demo", Tool: name, Method: tools.MethodSample,
				Params: json.RawMessage(`{"messages":[{"role":"user","content":{"type":"text","text":"Say hi"}}],"maxTokens":10}`)})
			if err != nil {
				return tools.Result{}, fmt.Errorf("sampling: %w", err)
			}
			roots, err := tools.Ask(ctx, tools.Question{Server: "demo", Tool: name, Method: tools.MethodRoots, Params: json.RawMessage(`{}`)})
			if err != nil {
				return tools.Result{}, fmt.Errorf("roots: %w", err)
			}
			tools.Notify(ctx, tools.Notification{Server: "demo", Tool: name, Method: tools.MethodProgress, Params: json.RawMessage(`{"progressToken":"backend-7","progress":2,"total":2}`)})
			return tools.Result{Text: fmt.Sprintf("form %s | sample %s | roots %s", form, sample, roots)}, nil
		},
	}
}

// answeringClient answers every question of the gateway, and records what
// it was sent.
type answeringClient struct {
	mu        sync.Mutex
	asked     []string
	schemas   []string
	progress  []mcp.JSONRPCNotification
	logs      []string
	afterDone int // notifications that came after the call's result
	done      bool
}

func (a *answeringClient) Elicit(_ context.Context, req mcp.ElicitationRequest) (*mcp.ElicitationResult, error) {
	schema, _ := json.Marshal(req.Params.RequestedSchema)
	a.mu.Lock()
	a.asked = append(a.asked, "elicitation: "+req.Params.Message)
	a.schemas = append(a.schemas, string(schema))
	a.mu.Unlock()
	return &mcp.ElicitationResult{ElicitationResponse: mcp.ElicitationResponse{Action: mcp.ElicitationResponseActionAccept, Content: map[string]any{"name": "Ada"}}}, nil
}

func (a *answeringClient) CreateMessage(_ context.Context, req mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
	a.mu.Lock()
	a.asked = append(a.asked, "sampling")
	a.mu.Unlock()
	return &mcp.CreateMessageResult{SamplingMessage: mcp.SamplingMessage{Role: mcp.RoleAssistant, Content: mcp.NewTextContent("hi there")}, Model: "m", StopReason: "endTurn"}, nil
}

func (a *answeringClient) ListRoots(context.Context, mcp.ListRootsRequest) (*mcp.ListRootsResult, error) {
	a.mu.Lock()
	a.asked = append(a.asked, "roots")
	a.mu.Unlock()
	return &mcp.ListRootsResult{Roots: []mcp.Root{{URI: "file:///work", Name: "work"}}}, nil
}

func (a *answeringClient) note(n mcp.JSONRPCNotification) {
	a.mu.Lock()
	defer a.mu.Unlock()
	switch n.Method {
	case string(mcp.MethodNotificationProgress):
		a.progress = append(a.progress, n)
	case string(mcp.MethodNotificationMessage):
		d, _ := json.Marshal(n.Params.AdditionalFields["data"])
		a.logs = append(a.logs, fmt.Sprintf("%v %v %s", n.Params.AdditionalFields["level"], n.Params.AdditionalFields["logger"], d))
	default:
		return
	}
	if a.done {
		a.afterDone++
	}
}

// askedClient connects an mcp-go client to r's gateway that answers every
// question (a) and asked for log messages of level info; ctx bounds the
// test's requests.
func askedClient(t *testing.T, r *rig, http, legacy bool) (context.Context, *client.Client, *answeringClient) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	t.Cleanup(cancel)
	a := &answeringClient{}
	cl := connect(t, ctx, transportFor(t, r, http), legacy,
		client.WithElicitationHandler(a), client.WithSamplingHandler(a), client.WithRootsHandler(a))
	cl.OnNotification(a.note)
	if err := cl.SetLevel(ctx, mcp.SetLevelRequest{Params: mcp.SetLevelParams{Level: mcp.LoggingLevelInfo}}); err != nil {
		t.Fatalf("logging/setLevel: %v", err)
	}
	return ctx, cl, a
}

// transportFor returns a client transport to r's gateway: stdio through
// pipes, or HTTP.
func transportFor(t *testing.T, r *rig, http bool) transport.Interface {
	t.Helper()
	if http {
		srv := r.serveHTTP(HTTPOptions{}, "")
		tr, err := transport.NewStreamableHTTP(srv.URL())
		if err != nil {
			t.Fatal(err)
		}
		return tr
	}
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	served := make(chan error, 1)
	go func() { served <- r.gw.ServeStdio(context.Background(), inR, outW); outW.Close() }()
	t.Cleanup(func() {
		inW.Close()
		outR.Close()
		if err := <-served; err != nil && !errors.Is(err, io.ErrClosedPipe) {
			t.Errorf("ServeStdio: %v", err)
		}
	})
	return transport.NewIO(outR, inW, io.NopCloser(&emptyReader{}))
}

// connect starts an mcp-go client with opts on tr, on the session era
// (legacy) or 2026-07-28.
func connect(t *testing.T, ctx context.Context, tr transport.Interface, legacy bool, opts ...client.ClientOption) *client.Client {
	t.Helper()
	if legacy {
		opts = append(opts, client.WithProtocolVersion(mcp.LATEST_LEGACY_PROTOCOL_VERSION))
	}
	cl := client.NewClient(tr, opts...)
	if err := cl.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cl.Close() })
	init := mcp.InitializeRequest{}
	init.Params.ClientInfo = mcp.Implementation{Name: "relay-test", Version: "0"}
	if _, err := cl.Initialize(ctx, init); err != nil {
		t.Fatalf("initialize: %v", err)
	}
	return cl
}

func callWithToken(ctx context.Context, cl *client.Client, name string, token any) (*mcp.CallToolResult, error) {
	req := mcp.CallToolRequest{}
	req.Params.Name = name
	req.Params.Arguments = map[string]any{}
	if token != nil {
		req.Params.Meta = &mcp.Meta{ProgressToken: token}
	}
	return cl.CallTool(ctx, req)
}

// The gateway relays what a call asks to the client that called, over
// stdio and HTTP, on both protocol revisions: a request to the client on
// 2025-11-25, an input_required result on 2026-07-28 (mcp-go's client
// answers it and calls again). Progress comes with the client's token, in
// order, before the result; log messages at the level the client asked.
func TestRelaysQuestionsAndNotifications(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name         string
		http, legacy bool
	}{
		{"stdio legacy", false, true},
		{"stdio", false, false},
		{"http legacy", true, true},
		{"http", true, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r := newRig(t, Options{})
			r.register(askingTool("ask_three"))
			ctx, cl, a := askedClient(t, r, tc.http, tc.legacy)
			res, err := callWithToken(ctx, cl, "ask_three", "client-token")
			if err != nil {
				t.Fatalf("tools/call: %v", err)
			}
			a.mu.Lock()
			a.done = true
			progress, logs, asked, schemas := a.progress, a.logs, a.asked, a.schemas
			a.mu.Unlock()
			text := res.Content[0].(mcp.TextContent).Text
			for _, want := range []string{`"action":"accept"`, `"name":"Ada"`, `hi there`, `file:///work`} {
				if !strings.Contains(text, want) || res.IsError {
					t.Fatalf("result %q (isError %t) lacks %s", text, res.IsError, want)
				}
			}
			if strings.Join(asked, ", ") != "elicitation: Your name?, sampling, roots" {
				t.Errorf("the client was asked %q", asked)
			}
			// The schema reaches the client as the asker wrote it.
			if len(schemas) != 1 || !strings.Contains(schemas[0], `"default":"x"`) {
				t.Errorf("schemas the client saw: %q", schemas)
			}
			// Both progress notifications, with the client's token, before
			// the result.
			if len(progress) != 2 {
				t.Fatalf("progress before the result: %d notifications, want 2: %+v", len(progress), progress)
			}
			for i, n := range progress {
				if n.Params.AdditionalFields["progressToken"] != "client-token" || n.Params.AdditionalFields["progress"] != float64(i+1) {
					t.Errorf("progress %d: %+v", i, n.Params.AdditionalFields)
				}
			}
			// info passes, debug does not: the client asked for info.
			if strings.Join(logs, "; ") != `info demo "working"` {
				t.Errorf("log messages: %q", logs)
			}
		})
	}
}

// A client that declared nothing is asked nothing: an elicitation is
// declined, sampling and roots are unsupported — on 2026-07-28 the call
// then answers -32021 naming the capability, since the tool failed for
// want of it. Without a progressToken or a log level, nothing is sent, and
// the call's front offers no progress (a backend server is not asked for
// any); with a token it does.
func TestUndeclaredCapabilities(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name         string
		http, legacy bool
	}{
		{"stdio legacy", false, true},
		{"stdio", false, false},
		{"http legacy", true, true},
		{"http", true, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r := newRig(t, Options{})
			r.register(askingTool("ask_three"), tools.Tool{
				Name: "decline_me", Description: "Ask a form.", Parameters: json.RawMessage(`{"type":"object"}`),
				Execute: func(ctx context.Context, _ json.RawMessage) (tools.Result, error) {
					a, err := tools.Ask(ctx, tools.Question{Method: tools.MethodElicit, Params: json.RawMessage(`{"message":"?","requestedSchema":{"type":"object"}}`)})
					return tools.Result{Text: string(a)}, err
				},
			}, tools.Tool{
				Name: "offers_progress", Description: "Say whether the front shows progress.", Parameters: json.RawMessage(`{"type":"object"}`),
				Execute: func(ctx context.Context, _ json.RawMessage) (tools.Result, error) {
					return tools.Result{Text: strconv.FormatBool(tools.OffersOf(ctx).Progress)}, nil
				},
			})
			ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
			defer cancel()
			a := &answeringClient{}
			cl := connect(t, ctx, transportFor(t, r, tc.http), tc.legacy)
			cl.OnNotification(a.note)
			for token, want := range map[any]string{nil: "false", "t1": "true"} {
				if res, err := callWithToken(ctx, cl, "offers_progress", token); err != nil || res.Content[0].(mcp.TextContent).Text != want {
					t.Fatalf("offers_progress with token %v: %+v, %v; want %s", token, res, err, want)
				}
			}
			res, err := callWithToken(ctx, cl, "decline_me", nil)
			if err != nil || res.Content[0].(mcp.TextContent).Text != `{"action":"decline"}` {
				t.Fatalf("decline_me: %+v, %v; want a decline", res, err)
			}
			res, err = callWithToken(ctx, cl, "ask_three", nil)
			if tc.legacy {
				if err != nil || !res.IsError || !strings.Contains(res.Content[0].(mcp.TextContent).Text, "sampling: the front does not answer this request") {
					t.Fatalf("ask_three: %+v, %v; want the tool's sampling error", res, err)
				}
			} else if !mcp.IsMissingRequiredClientCapability(err) || !strings.Contains(err.Error(), `"sampling"`) {
				t.Fatalf("ask_three: %+v, %v; want -32021 naming sampling", res, err)
			}
			a.mu.Lock()
			defer a.mu.Unlock()
			if len(a.progress)+len(a.logs) != 0 {
				t.Errorf("notifications nobody asked for: %+v %q", a.progress, a.logs)
			}
		})
	}
}

// modernCall posts a 2026-07-28 tools/call with params (JSON object
// members after the name) and returns the status and the decoded answer.
func modernCall(t *testing.T, url, name, params string, caps string) (int, map[string]any) {
	t.Helper()
	meta := `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"t","version":"0"},"io.modelcontextprotocol/clientCapabilities":` + caps + `}`
	body := `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"` + name + `","arguments":{},` + meta + params + `}}`
	status, out := mcptest.Post(t, url, "", strings.NewReader(body), map[string]string{
		"MCP-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/call", "Mcp-Name": name,
	})
	if i := strings.Index(out, "data: "); i >= 0 { // an event stream: its last event
		out = out[strings.LastIndex(out, "data: ")+len("data: "):]
	}
	var m map[string]any
	if err := json.Unmarshal([]byte(strings.TrimSpace(out)), &m); err != nil {
		t.Fatalf("answer %q: %v", out, err)
	}
	return status, m
}

// A requestState is checked: changed, of another tool, or of a call that
// has ended, it is refused with -32602 (HTTP 400), and the call it names
// goes on waiting for a good one.
func TestRequestStateIsChecked(t *testing.T) {
	t.Parallel()
	r := newRig(t, Options{})
	r.register(tools.Tool{
		Name: "confirm", Description: "Ask a yes.", Parameters: json.RawMessage(`{"type":"object"}`),
		Execute: func(ctx context.Context, _ json.RawMessage) (tools.Result, error) {
			a, err := tools.Ask(ctx, tools.Question{ID: "ok", Method: tools.MethodElicit, Params: json.RawMessage(`{"message":"Sure?","requestedSchema":{"type":"object","properties":{"ok":{"type":"boolean"}}}}`)})
			return tools.Result{Text: "answered " + string(a)}, err
		},
	}, text("other", "x"))
	url := r.serveHTTP(HTTPOptions{}, "").URL()
	caps := `{"elicitation":{}}`
	_, first := modernCall(t, url, "confirm", "", caps)
	result, _ := first["result"].(map[string]any)
	state, _ := result["requestState"].(string)
	if result["resultType"] != "input_required" || state == "" {
		t.Fatalf("first answer %v: want input_required with a requestState", first)
	}
	if _, ok := result["inputRequests"].(map[string]any)["ok"]; !ok {
		t.Fatalf("input requests %v: want the key the asker named", result["inputRequests"])
	}
	answer := `,"inputResponses":{"ok":{"action":"accept","content":{"ok":true}}},"requestState":`
	for _, tc := range []struct{ name, tool, state, want string }{
		{"tampered", "confirm", tamper(state), "integrity"},
		{"appended", "confirm", state + "-TAMPERED", "integrity"},
		{"not base64", "confirm", "!!!.???", "integrity"},
		{"another tool's", "other", state, `tool "confirm"`},
	} {
		status, got := modernCall(t, url, tc.tool, answer+mustJSON(tc.state), caps)
		e, _ := got["error"].(map[string]any)
		if status != http.StatusBadRequest || e == nil || e["code"] != float64(mcp.INVALID_PARAMS) || !strings.Contains(fmt.Sprint(e["message"]), tc.want) {
			t.Errorf("%s state: HTTP %d %v; want 400, -32602 saying %q", tc.name, status, got, tc.want)
		}
	}
	// An answer that does not fit its question is refused too; the state
	// still holds.
	status, got := modernCall(t, url, "confirm", `,"inputResponses":{"ok":12345},"requestState":`+mustJSON(state), caps)
	if status != http.StatusBadRequest || got["error"] == nil {
		t.Errorf("a number as the answer: HTTP %d %v; want 400 and an error", status, got)
	}
	// The good state resumes the call, once.
	_, got = modernCall(t, url, "confirm", answer+mustJSON(state), caps)
	if res, _ := got["result"].(map[string]any); res == nil || !strings.Contains(fmt.Sprint(res["content"]), `answered {"action":"accept","content":{"ok":true}}`) {
		t.Fatalf("resumed: %v", got)
	}
	status, got = modernCall(t, url, "confirm", answer+mustJSON(state), caps)
	if e, _ := got["error"].(map[string]any); status != http.StatusBadRequest || e == nil || !strings.Contains(fmt.Sprint(e["message"]), "ended") {
		t.Errorf("the state of an ended call: HTTP %d %v; want 400 saying the call ended", status, got)
	}
}

func mustJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// A parked call is bounded in time: nobody comes back within InputTimeout,
// and its tool's context ends (a backend would be told), and its state is
// refused.
func TestParkedCallExpires(t *testing.T) {
	t.Parallel()
	r := newRig(t, Options{InputTimeout: 50 * time.Millisecond})
	ended := make(chan error, 1)
	r.register(tools.Tool{
		Name: "wait", Description: "Ask, and say how the question ended.", Parameters: json.RawMessage(`{"type":"object"}`),
		Execute: func(ctx context.Context, _ json.RawMessage) (tools.Result, error) {
			_, err := tools.Ask(ctx, tools.Question{Method: tools.MethodElicit, Params: json.RawMessage(`{"message":"?","requestedSchema":{"type":"object"}}`)})
			ended <- err
			return tools.Result{}, err
		},
	})
	url := r.serveHTTP(HTTPOptions{}, "").URL()
	_, first := modernCall(t, url, "wait", "", `{"elicitation":{}}`)
	result, _ := first["result"].(map[string]any)
	state, _ := result["requestState"].(string)
	if state == "" {
		t.Fatalf("first answer %v: want a requestState", first)
	}
	select {
	case err := <-ended:
		if err == nil || !strings.Contains(err.Error(), "did not come back") {
			t.Errorf("the question ended with %v; want the timeout named", err)
		}
	case <-time.After(waitTimeout):
		t.Fatal("the parked call was never cancelled")
	}
	status, got := modernCall(t, url, "wait", `,"inputResponses":{},"requestState":`+mustJSON(state), `{"elicitation":{}}`)
	if status != http.StatusBadRequest || got["error"] == nil {
		t.Errorf("an expired call's state: HTTP %d %v; want 400", status, got)
	}
}

// What a call's front offers follows what its client declared.
func TestOffersFollowTheClient(t *testing.T) {
	t.Parallel()
	r := newRig(t, Options{})
	r.register(tools.Tool{
		Name: "offers", Description: "Say what the front offers.", Parameters: json.RawMessage(`{"type":"object"}`),
		Execute: func(ctx context.Context, _ json.RawMessage) (tools.Result, error) {
			o := tools.OffersOf(ctx)
			return tools.Result{Text: fmt.Sprintf("form %t url %t sampling %t", o.Elicitation, o.ElicitationURL, o.Sampling)}, nil
		},
	})
	url := r.serveHTTP(HTTPOptions{}, "").URL()
	for _, tc := range []struct{ caps, want string }{
		{`{}`, "form false url false sampling false"},
		{`{"elicitation":{}}`, "form true url false sampling false"},
		{`{"elicitation":{"url":{}},"sampling":{}}`, "form false url true sampling true"},
		{`{"elicitation":{"form":{},"url":{}}}`, "form true url true sampling false"},
	} {
		_, got := modernCall(t, url, "offers", "", tc.caps)
		if !strings.Contains(fmt.Sprint(got["result"]), tc.want) {
			t.Errorf("capabilities %s: %v, want %q", tc.caps, got, tc.want)
		}
	}
	// A session-era client over stdio: what it declared at initialize.
	c := r.stdioClient()
	c.call("initialize", map[string]any{"protocolVersion": "2025-11-25", "capabilities": map[string]any{"sampling": map[string]any{}}, "clientInfo": map[string]any{"name": "raw", "version": "0"}})
	c.send(map[string]any{"jsonrpc": "2.0", "method": "notifications/initialized"})
	m := c.call("tools/call", map[string]any{"name": "offers", "arguments": map[string]any{}})
	if !strings.Contains(string(m.Result), "form false url false sampling true") {
		t.Errorf("stdio: %s", m.raw)
	}
}

// A question whose call ends before the client answered is withdrawn: the
// client is told (notifications/cancelled for the gateway's request); a
// client that closes its input while asked gets the call's answer all the
// same, the question failed.
func TestRelayedQuestionWithdrawn(t *testing.T) {
	t.Parallel()
	r := newRig(t, Options{})
	r.register(tools.Tool{
		Name: "ask", Description: "Ask a form.", Parameters: json.RawMessage(`{"type":"object"}`),
		Execute: func(ctx context.Context, _ json.RawMessage) (tools.Result, error) {
			a, err := tools.Ask(ctx, tools.Question{Method: tools.MethodElicit, Params: json.RawMessage(`{"message":"?","requestedSchema":{"type":"object"}}`)})
			if err != nil {
				return tools.Result{}, err
			}
			return tools.Result{Text: string(a)}, nil
		},
	})
	initialize := func(c *rawClient) {
		c.call("initialize", map[string]any{"protocolVersion": "2025-11-25", "capabilities": map[string]any{"elicitation": map[string]any{}}, "clientInfo": map[string]any{"name": "raw", "version": "0"}})
		c.send(map[string]any{"jsonrpc": "2.0", "method": "notifications/initialized"})
	}
	c := r.stdioClient()
	initialize(c)
	id := c.request("tools/call", map[string]any{"name": "ask", "arguments": map[string]any{}})
	asked := c.next()
	if asked.Method != "elicitation/create" || !strings.HasPrefix(string(asked.ID), `"harness-`) {
		t.Fatalf("want the gateway's elicitation/create, got %s", asked.raw)
	}
	c.send(map[string]any{"jsonrpc": "2.0", "method": "notifications/cancelled", "params": map[string]any{"requestId": id}})
	note := c.next()
	if note.Method != "notifications/cancelled" || !strings.Contains(string(note.Params), string(asked.ID)) {
		t.Fatalf("want the question withdrawn (notifications/cancelled naming %s), got %s", asked.ID, note.raw)
	}
	// An answer that comes late finds nobody, harmlessly.
	c.send(map[string]any{"jsonrpc": "2.0", "id": json.RawMessage(asked.ID), "result": map[string]any{"action": "accept"}})
	if m := c.call("ping", nil); m.Error != nil {
		t.Fatalf("ping after a late answer: %s", m.raw)
	}

	d := r.stdioClient()
	initialize(d)
	id = d.request("tools/call", map[string]any{"name": "ask", "arguments": map[string]any{}})
	if m := d.next(); m.Method != "elicitation/create" {
		t.Fatalf("want an elicitation/create, got %s", m.raw)
	}
	d.in.Close() // the client stops reading its questions
	m := d.response(id)
	if !strings.Contains(string(m.Result), "went away before it answered") {
		t.Fatalf("the call after the client closed its input: %s", m.raw)
	}
}

// -32021 also when the call's answer is an event stream: progress came
// first, then a question the client could not answer, then the failure.
func TestMissingCapabilityOnAStream(t *testing.T) {
	t.Parallel()
	r := newRig(t, Options{})
	r.register(tools.Tool{
		Name: "needs_sampling", Description: "Report, then sample.", Parameters: json.RawMessage(`{"type":"object"}`),
		Execute: func(ctx context.Context, _ json.RawMessage) (tools.Result, error) {
			tools.Notify(ctx, tools.Notification{Method: tools.MethodProgress, Params: json.RawMessage(`{"progressToken":"x","progress":1}`)})
			_, err := tools.Ask(ctx, tools.Question{Method: tools.MethodSample, Params: json.RawMessage(`{"messages":[],"maxTokens":1}`)})
			return tools.Result{}, err
		},
	})
	url := r.serveHTTP(HTTPOptions{}, "").URL()
	status, got := modernCall(t, url, "needs_sampling", `,"_meta":{"progressToken":"p1","io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}`, `{}`)
	e, _ := got["error"].(map[string]any)
	if e == nil || e["code"] != float64(mcp.MISSING_REQUIRED_CLIENT_CAPABILITY) || !strings.Contains(fmt.Sprint(e["data"]), "sampling") {
		t.Fatalf("HTTP %d %v: want -32021 naming sampling", status, got)
	}
}

// At most MaxParked calls wait for their client's input; the next one is
// refused, and its tool's question ends.
func TestMaxParked(t *testing.T) {
	t.Parallel()
	r := newRig(t, Options{MaxParked: 1})
	r.register(tools.Tool{
		Name: "ask", Description: "Ask a form.", Parameters: json.RawMessage(`{"type":"object"}`),
		Execute: func(ctx context.Context, _ json.RawMessage) (tools.Result, error) {
			_, err := tools.Ask(ctx, tools.Question{Method: tools.MethodElicit, Params: json.RawMessage(`{"message":"?","requestedSchema":{"type":"object"}}`)})
			return tools.Result{}, err
		},
	})
	url := r.serveHTTP(HTTPOptions{}, "").URL()
	if _, got := modernCall(t, url, "ask", "", `{"elicitation":{}}`); fmt.Sprint(got["result"]) == "" || got["error"] != nil {
		t.Fatalf("the first call: %v", got)
	}
	_, got := modernCall(t, url, "ask", "", `{"elicitation":{}}`)
	if e, _ := got["error"].(map[string]any); e == nil || !strings.Contains(fmt.Sprint(e["message"]), "the most it keeps") {
		t.Fatalf("the second call: %v; want it refused", got)
	}
}

// tamper changes one character in the middle of a base64 state: one whose
// six bits all carry data (a change at the end may touch only padding
// bits, which a decoder ignores).
func tamper(state string) string {
	i := len(state) / 2
	c := byte('A')
	if state[i] == 'A' {
		c = 'B'
	}
	return state[:i] + string(c) + state[i+1:]
}
