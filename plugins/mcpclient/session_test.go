package mcpclient

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/harness-go/harness/host"
	"github.com/harness-go/harness/internal/testkit/testlog"
	"github.com/harness-go/harness/plugins/prompts"
	"github.com/harness-go/harness/plugins/resources"
	"github.com/harness-go/harness/plugins/tools"
)

// rawServer is a Streamable HTTP MCP server written by hand, answering
// tools/list and tools/call with whatever a test wants, including what no
// SDK would send.
type rawServer struct {
	// list answers tools/list for a cursor: the raw JSON of a result, or an
	// error object when it starts with "error:".
	list func(cursor string) string
	// call answers tools/call, likewise.
	call func(name string) string
}

func (s *rawServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch r.Method {
	case http.MethodGet:
		http.Error(w, "no listening stream", http.StatusMethodNotAllowed)
		return
	case http.MethodDelete:
		return
	}
	body, _ := io.ReadAll(r.Body)
	var req struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
		Params struct {
			Name   string `json:"name"`
			Cursor string `json:"cursor"`
		} `json:"params"`
	}
	if err := json.Unmarshal(body, &req); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	if len(req.ID) == 0 {
		w.WriteHeader(http.StatusAccepted) // a notification
		return
	}
	var answer string
	switch req.Method {
	case "initialize":
		w.Header().Set("Mcp-Session-Id", "raw-session")
		answer = `{"protocolVersion":"2025-11-25","capabilities":{"tools":{"listChanged":true}},"serverInfo":{"name":"raw","version":"9"}}`
	case "tools/list":
		answer = s.list(req.Params.Cursor)
	case "tools/call":
		answer = s.call(req.Params.Name)
	default:
		answer = `error:{"code":-32601,"message":"Method not found"}`
	}
	w.Header().Set("Content-Type", "application/json")
	if e, ok := strings.CutPrefix(answer, "error:"); ok {
		fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"error":%s}`, req.ID, e)
		return
	}
	fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":%s}`, req.ID, answer)
}

func TestListingProblems(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		list func(cursor string) string
		want string
	}{
		{"not a tool list", func(string) string { return `"nope"` },
			"connect: tools/list: the result is not a tool list: json: cannot unmarshal string into Go value of type struct"},
		{"a tool that is not an object", func(string) string { return `{"tools":[{"name":"ok"},42]}` },
			"connect: tools/list: tool 1 of page 1: json: cannot unmarshal number into Go value of type mcpclient.rawTool"},
		{"a JSON-RPC error", func(string) string { return `error:{"code":-32000,"message":"listing is broken"}` },
			"connect: tools/list: listing is broken (JSON-RPC error -32000)"},
		{"a tool without a name", func(string) string { return `{"tools":[{"name":"ok"},{"description":"nameless"}]}` },
			"connect: invalid tool list: the server listed a tool without a name"},
		{"a repeated cursor", func(cursor string) string {
			return `{"tools":[],"nextCursor":"same"}`
		}, `connect: tools/list: the server repeated cursor "same"`},
		{"pages without end", func(cursor string) string {
			return fmt.Sprintf(`{"tools":[],"nextCursor":"after-%s"}`, cursor)
		}, "connect: tools/list: more than 1000 pages"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			p := serve(t, &rawServer{list: tc.list, call: func(string) string { return `{}` }})
			hx := newHarness(t)
			// A thousand pages are a thousand round trips: on a loaded
			// machine they take longer than the usual startup bound.
			hx.mustLoad(yml(httpEntry("r", "raw", p.URL, map[string]any{"startupTimeoutMs": 60000})))
			e := hx.wantState("r", host.Failed)
			if !strings.HasPrefix(e.Error, tc.want) {
				t.Fatalf("error %q, want %q", e.Error, tc.want)
			}
			if names := hx.Tools.Names(); len(names) != 0 {
				t.Fatalf("tools %q", names)
			}
			if st := hx.status("r"); st.Phase != "failed" || st.ConnectedSince != nil || len(st.Tools) != 0 {
				t.Fatalf("a failed entry's status shows a connection or tools: %+v", st)
			}
		})
	}
}

func TestListingShapes(t *testing.T) {
	t.Parallel()
	pages := map[string]string{
		"": `{"tools":[{"name":"no_schema","description":"none"},{"name":"null_schema","inputSchema":null}],"nextCursor":"p2"}`,
		"p2": `{"tools":[{"name":"kept","description":"multi\nline","inputSchema":{"type":"object","properties":{"q":{"type":"string"}},"required":["q"]},"annotations":{"readOnlyHint":true}}],` +
			`"nextCursor":""}`,
	}
	p := serve(t, &rawServer{list: func(cursor string) string { return pages[cursor] }, call: func(name string) string {
		switch name {
		case "no_schema":
			return `error:{"code":-32602,"message":"bad arguments"}`
		case "null_schema":
			return `[1,2]`
		}
		return `{"content":[{"type":"text","text":"kept ok"}]}`
	}})
	hx := newHarness(t)
	hx.mustLoad(yml(httpEntry("r", "raw", p.URL, nil)))
	hx.wantNames("mcp__", "mcp__raw__kept", "mcp__raw__no_schema", "mcp__raw__null_schema")
	for _, name := range []string{"mcp__raw__no_schema", "mcp__raw__null_schema"} {
		if tool, _ := hx.Tools.Lookup(name); string(tool.Parameters) != `{"type":"object","properties":{}}` {
			t.Errorf("%s: parameters %s", name, tool.Parameters)
		}
	}
	if tool, _ := hx.Tools.Lookup("mcp__raw__kept"); tool.Description != "multi\nline" ||
		string(tool.Parameters) != `{"type":"object","properties":{"q":{"type":"string"}},"required":["q"]}` {
		t.Errorf("kept: %+v", tool)
	}
	hx.wantCall("mcp__raw__kept", `{"q":"x"}`, "kept ok", false)
	hx.wantCall("mcp__raw__no_schema", `{}`, "Error: bad arguments (JSON-RPC error -32602)", true)
	res := hx.Call("mcp__raw__null_schema", `{}`)
	if !res.IsError || !strings.HasPrefix(res.Text, "Error: the server's result is not a tools/call result: ") {
		t.Fatalf("result %+v", res)
	}
	st := hx.status("r")
	if st.Server == nil || st.Server.Name != "raw" || st.Server.Version != "9" {
		t.Fatalf("status %+v", st)
	}
	lines := strings.Join(st.StatusLines(), "\n")
	for _, want := range []string{
		"server raw via streamable-http: " + p.URL,
		"serverInfo: raw 9, protocol 2025-11-25",
		"phase connected",
		"tools: 3",
		"  mcp__raw__kept",
	} {
		if !strings.Contains(lines, want) {
			t.Errorf("status lines lack %q:\n%s", want, lines)
		}
	}
}

func TestAutoFallsBackToDiscover(t *testing.T) {
	t.Parallel()
	// A server that refuses initialize as an unknown method speaks only
	// the stateless protocol: auto tries server/discover next.
	p, s := mcpgoPeer(t)
	p.noInit.Store(1000) // every initialize
	hx := newHarness(t)
	hx.mustLoad(yml(httpEntry("g", "go", p.URL, nil)))
	hx.wantState("g", host.Ready)
	if st := hx.status("g"); st.ProtocolVersion != "2026-07-28" {
		t.Fatalf("protocol %q", st.ProtocolVersion)
	}
	hx.wantCall("mcp__go__echo", `{"message":"modern"}`, "echo: modern", false)
	// list_changed comes over subscriptions/listen, once it is open. (The
	// plugin opens it after the first listing, on its own goroutine: a
	// change in between is missed.)
	p.waitListening(t)
	s.AddTool(mcp.NewTool("later"), func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return mcp.NewToolResultText("later ok"), nil
	})
	hx.waitTools("the tool added later", func(names []string) bool { return slices.Contains(names, "mcp__go__later") })
	hx.wantCall("mcp__go__later", `{}`, "later ok", false)

	// legacy does not fall back.
	q, _ := mcpgoPeer(t)
	q.noInit.Store(1)
	hx.mustLoad(yml(httpEntry("l", "legacy", q.URL, map[string]any{"protocol": ProtocolLegacy})))
	hx.wantState("l", host.Failed, "connect: initialize:", "Method not found: initialize")
}

func TestModernPagination(t *testing.T) {
	t.Parallel()
	s := server.NewMCPServer("paged", "1", server.WithToolCapabilities(true), server.WithPaginationLimit(2))
	for i := range 5 {
		name := fmt.Sprintf("tool_%d", i)
		s.AddTool(mcp.NewTool(name), func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return mcp.NewToolResultText(name + " ok"), nil
		})
	}
	p := serve(t, server.NewStreamableHTTPServer(s))
	hx := newHarness(t)
	hx.mustLoad(yml(httpEntry("m", "m", p.URL, map[string]any{"protocol": ProtocolModern})))
	hx.wantNames("mcp__", "mcp__m__tool_0", "mcp__m__tool_1", "mcp__m__tool_2", "mcp__m__tool_3", "mcp__m__tool_4")
	hx.wantCall("mcp__m__tool_3", `{}`, "tool_3 ok", false)
	// A failed call on the stateless protocol is an error result.
	p.dropConn.Store(1)
	if res := hx.Call("mcp__m__tool_3", `{}`); !res.IsError {
		t.Fatalf("result %+v", res)
	}
	hx.wantCall("mcp__m__tool_4", `{}`, "tool_4 ok", false)
}

func TestNewSessionFails(t *testing.T) {
	t.Parallel()
	p, _ := mcpgoPeer(t)
	hx := newHarness(t)
	hx.mustLoad(yml(httpEntry("g", "go", p.URL, nil)))
	p.gone404.Store(1)
	p.failInit.Store(1)
	res := hx.Call("mcp__go__echo", `{"message":"x"}`)
	if !res.IsError || !strings.HasPrefix(res.Text, "Error: the server ended the session and a new one failed: ") {
		t.Fatalf("result %+v", res)
	}
}

// TestApplyWithoutARegistry provides something else under the name of the
// tools service: Apply fails, with a message naming it.
func TestApplyWithoutARegistry(t *testing.T) {
	t.Parallel()
	hx := newHarness(t)
	log, _ := testlog.New(t)
	h := host.New(host.Options{Logger: log})
	t.Cleanup(func() { _ = h.Close(context.Background()) })
	h.Provide(tools.Service, "not a registry")
	h.Provide(resources.Service, resources.New())
	h.Provide(prompts.Service, prompts.New())
	f, err := host.ParseFile("cordis.yml", []byte(yml(hx.stdio("a", "srv", nil))))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := h.Load(context.Background(), f); err != nil {
		t.Fatal(err)
	}
	if err := h.Settle(context.Background()); err != nil {
		t.Fatal(err)
	}
	snap := h.Snapshot()
	if len(snap) != 1 || snap[0].State != host.Failed || !strings.Contains(snap[0].Error, `service "tools" is a string, not a *tools.Registry`) {
		t.Fatalf("snapshot %+v", snap)
	}
	// Its status still says what it was configured to be.
	st, ok := snap[0].Details.(*Status)
	if !ok || st.Phase != "configured" || st.ServerName != "srv" || st.Transport != TransportStdio || len(st.Tools) != 0 {
		t.Fatalf("details %#v", snap[0].Details)
	}
	if lines := st.StatusLines(); !slices.Contains(lines, "phase configured") {
		t.Fatalf("status lines %q", lines)
	}
}

func TestStatusURLHidesCredentials(t *testing.T) {
	t.Parallel()
	p := &Plugin{Config: Config{Transport: TransportHTTP, ServerName: "w", URL: "https://user:pa55word@example.com/mcp?x=1", Headers: map[string]string{"Authorization": "Bearer t"}}}
	st := p.Status().(*Status)
	if st.URL != "https://user:<redacted>@example.com/mcp?x=1" || st.Headers["Authorization"] != "<redacted>" || st.Phase != "configured" {
		t.Fatalf("status %+v", st)
	}
	lines := strings.Join(st.StatusLines(), "\n")
	if strings.Contains(lines, "pa55word") || !strings.Contains(lines, "headers: Authorization=<redacted>") {
		t.Fatalf("status lines:\n%s", lines)
	}
	// A URL that does not parse is left out.
	bad := &Plugin{Config: Config{Transport: TransportHTTP, ServerName: "w", URL: "http://[::1"}}
	if st := bad.Status().(*Status); st.URL != "" {
		t.Fatalf("URL %q", st.URL)
	}
}

func TestStatusLinesEscapeServerText(t *testing.T) {
	t.Parallel()
	st := &Status{
		ServerName: "s", Transport: TransportStdio, Command: "srv\x1b[2J", Args: []string{"--x"},
		Server: &Server{Name: "evil\x1b]0;title\x07", Version: "1\n2"}, ProtocolVersion: "2025-11-25",
		Phase: "connected", PID: 42,
		ToolCallTimeoutMs: 5000, MaxResultBytes: 100, EnabledTools: []string{"a*", "b\x1b"},
		Tools: map[string]string{
			"mcp__s__plain":                   "plain",
			"mcp__s__a_b_0123456789ab":        "a.b\x1b[31m",
			PublicName("s", "admin.reset"):    "admin.reset",
			PublicName("s", "with\u202eflip"): "with\u202eflip",
		},
		SyncError: "bad\nlisting",
		Stderr:    []string{"\x1b[31mred"},
	}
	got := st.StatusLines()
	want := []string{
		`server s via stdio: srv\x1b[2J --x`,
		`serverInfo: evil\x1b]0;title\x07 1\n2, protocol 2025-11-25 (initialize handshake)`,
		`settings: toolCallTimeoutMs 5000, maxResultBytes 100, enabledTools a* b\x1b, reconnect off`,
		"pid 42, phase connected",
		"tools: 4",
		`  mcp__s__a_b_0123456789ab ← a.b\x1b[31m`,
		"  " + PublicName("s", "admin.reset") + " ← admin.reset",
		"  mcp__s__plain",
		"  " + PublicName("s", "with\u202eflip") + ` ← with\u202eflip`,
		`last sync failed: bad\nlisting`,
		"stderr (last lines):",
		`  \x1b[31mred`,
	}
	if !slices.Equal(got, want) {
		t.Fatalf("status lines:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

func TestRPCError(t *testing.T) {
	t.Parallel()
	if got := (&RPCError{Code: -32601, Message: "Method not found"}).Error(); got != "Method not found (JSON-RPC error -32601)" {
		t.Fatal(got)
	}
}

// What auto and modern take for a refusal of their first handshake (and
// try the other), and what they do not.
func TestRefusal(t *testing.T) {
	t.Parallel()
	rpc := func(code int) error { return fmt.Errorf("x: %w", rpcError(&wireError{Code: code, Message: "m"})) }
	for _, tc := range []struct {
		name           string
		err            error
		auto, discover bool // a refusal of initialize (auto), of server/discover (modern)
	}{
		{"missing version header", rpc(-32020), true, true},
		{"unsupported version", rpc(-32022), true, true},
		{"invalid request", rpc(-32600), true, true},
		{"method not found", rpc(-32601), true, true},
		{"another JSON-RPC error", rpc(-32000), false, true},
		{"a 400 page", &HTTPStatusError{Method: "initialize", Status: 400, Page: "<html>"}, true, true},
		{"a 404 page", &HTTPStatusError{Method: "initialize", Status: 404}, true, true},
		{"a 500 page", &HTTPStatusError{Method: "initialize", Status: 500}, false, false},
		{"a version outside the era", mcp.UnsupportedProtocolVersionError{Version: "2026-07-28"}, true, true},
		{"refused", &notSentError{&ConnectionLostError{Reason: "POST http://x: dial tcp: connection refused"}}, false, false},
		{"timed out", context.DeadlineExceeded, false, false},
		{"reset", io.ErrUnexpectedEOF, false, false},
	} {
		if got := refusal(tc.err, false); got != tc.auto {
			t.Errorf("%s: refusal of initialize = %t, want %t", tc.name, got, tc.auto)
		}
		if got := refusal(tc.err, true); got != tc.discover {
			t.Errorf("%s: refusal of server/discover = %t, want %t", tc.name, got, tc.discover)
		}
	}
}

// On the stateless protocol every request's params carry _meta (version,
// capabilities, client) first, the params' own fields after it unchanged,
// and over HTTP the headers that mirror them.
func TestStatelessMetadata(t *testing.T) {
	t.Parallel()
	s := &session{client: mcp.Implementation{Name: "harness", Version: "1.2.3"}, http: &httpFraming{}}
	s.setProtocol(mcp.LATEST_PROTOCOL_VERSION, mcp.Implementation{})
	if !s.modern() {
		t.Fatalf("%s is not the stateless protocol", mcp.LATEST_PROTOCOL_VERSION)
	}
	for _, tc := range []struct {
		method string
		params any
		fields []string // the params' own fields, in order, after _meta
	}{
		{"server/discover", map[string]any{}, nil},
		{"tools/list", nil, nil},
		{"tools/list", map[string]any{"cursor": "c2"}, []string{"cursor"}},
		{"tools/call", toolCall{Name: "echo", Arguments: json.RawMessage(`{"_meta":"an argument, not ours","x":[1]}`)}, []string{"name", "arguments"}},
		{"subscriptions/listen", mcp.SubscriptionsListenParams{Notifications: mcp.SubscriptionFilter{ToolsListChanged: true}}, []string{"notifications"}},
	} {
		raw, header, err := s.modernParams(context.Background(), tc.method, tc.params, nil, &roundState{})
		if err != nil || !json.Valid(raw) {
			t.Fatalf("%s: params %s are not JSON: %v", tc.method, raw, err)
		}
		dec := json.NewDecoder(strings.NewReader(string(raw)))
		var keys []string
		if tok, _ := dec.Token(); tok != json.Delim('{') {
			t.Fatalf("%s: %s is not an object", tc.method, raw)
		}
		for dec.More() {
			k, _ := dec.Token()
			keys = append(keys, k.(string))
			var skip json.RawMessage
			if err := dec.Decode(&skip); err != nil {
				t.Fatal(err)
			}
		}
		if want := append([]string{"_meta"}, tc.fields...); !slices.Equal(keys, want) {
			t.Errorf("%s: keys %v, want %v", tc.method, keys, want)
		}
		var doc struct {
			Meta map[string]json.RawMessage `json:"_meta"`
		}
		if err := json.Unmarshal(raw, &doc); err != nil {
			t.Fatal(err)
		}
		if v := string(doc.Meta[mcp.MetaKeyProtocolVersion]); v != `"`+mcp.LATEST_PROTOCOL_VERSION+`"` {
			t.Errorf("%s: protocol version %s", tc.method, v)
		}
		if v := string(doc.Meta[mcp.MetaKeyClientInfo]); !strings.Contains(v, `"harness"`) || !strings.Contains(v, `"1.2.3"`) {
			t.Errorf("%s: client info %s", tc.method, v)
		}
		if v := string(doc.Meta[mcp.MetaKeyClientCapabilities]); v != `{"elicitation":{"form":{},"url":{}}}` {
			t.Errorf("%s: client capabilities %s", tc.method, v)
		}
		if got := header.Get(mcp.HeaderMethod); got != tc.method {
			t.Errorf("%s: header %s = %q", tc.method, mcp.HeaderMethod, got)
		}
		if got := header.Get(mcp.HeaderProtocolVersion); got != mcp.LATEST_PROTOCOL_VERSION {
			t.Errorf("%s: header %s = %q", tc.method, mcp.HeaderProtocolVersion, got)
		}
		if got := header.Get(mcp.HeaderName); tc.method == "tools/call" && got != "echo" {
			t.Errorf("tools/call: header %s = %q, want the tool's name", mcp.HeaderName, got)
		}
		if tc.method == "tools/call" && !strings.Contains(string(raw), `"arguments":{"_meta":"an argument, not ours","x":[1]}`) {
			t.Errorf("tools/call: the arguments changed: %s", raw)
		}
	}
}

// Once an entry is disabled (its instance disposed), its status shows no
// process, no connection and no tools: the phase says stopped.
func TestStatusOfADisposedInstance(t *testing.T) {
	t.Parallel()
	hx := newHarness(t)
	c := hx.stdio("a", "srv", nil, "--only", "echo")
	hx.mustLoad(yml(c))
	hx.waitState("a", host.Ready)
	if st := hx.status("a"); st.Phase != "connected" || st.PID == 0 || st.ConnectedSince == nil || len(st.Tools) != 1 {
		t.Fatalf("running: %+v", st)
	}
	c.Disabled = true
	hx.mustLoad(yml(c))
	hx.waitState("a", host.Disabled)
	st := hx.status("a")
	if st.Phase != "stopped" || st.PID != 0 || st.ConnectedSince != nil || len(st.Tools) != 0 || st.ToolCount != 0 {
		t.Fatalf("disabled: %+v", st)
	}
	lines := strings.Join(st.StatusLines(), "\n")
	if strings.Contains(lines, "pid ") || strings.Contains(lines, "connected since") || strings.Contains(lines, "mcp__srv__echo") {
		t.Fatalf("disabled: status lines show what no longer runs:\n%s", lines)
	}
}

// A server that cannot be reached is said once, with where and why.
func TestHTTPUnreachableSaidOnce(t *testing.T) {
	t.Parallel()
	// Port 1 (tcpmux) is refused on any machine that runs these tests; a
	// port freed a moment ago could be another parallel test's by now.
	url := "http://127.0.0.1:1/mcp"
	hx := newHarness(t)
	hx.mustLoad(yml(httpEntry("r", "gone", url, nil)))
	e := hx.waitState("r", host.Failed)
	if !strings.Contains(e.Error, "initialize: connection lost: POST http://127.0.0.1:1/mcp: dial tcp 127.0.0.1:1: connect: connection refused") || strings.Count(e.Error, "connection refused") != 1 {
		t.Fatalf("error %q", e.Error)
	}
}
