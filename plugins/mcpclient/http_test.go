package mcpclient

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/harness-go/harness/host"
	"github.com/harness-go/harness/internal/testkit/fixture"
	"github.com/harness-go/harness/internal/testkit/testlog"
)

// seenRequest is one HTTP request a test server received.
type seenRequest struct {
	Method    string // GET, POST, DELETE
	RPCMethod string // the JSON-RPC method of a POST
	RPCTool   string // params.name of a tools/call
	Header    http.Header
}

// peer is a Streamable HTTP test server: a handler behind a recorder that
// can also inject faults into the next tools/call.
type peer struct {
	URL string

	mu       sync.Mutex
	requests []seenRequest
	more     chan struct{} // closed and replaced at every request seen
	getOnce  sync.Once
	gotGET   chan struct{} // closed at the first GET (the listening stream)
	ackOnce  sync.Once
	acked    chan struct{} // closed when a subscriptions/listen stream has started

	fail500  atomic.Int32 // answer this many tools/call POSTs with 500
	gone404  atomic.Int32 // answer this many tools/call POSTs with 404
	dropConn atomic.Int32 // close the connection of this many tools/call POSTs
	noInit   atomic.Int32 // answer this many initialize requests with -32601
	failInit atomic.Int32 // answer this many initialize requests with 500
}

// serve starts an httptest server for h. Call it before newHarness, so the
// server outlives the host (cleanups run last-in first-out).
func serve(t *testing.T, h http.Handler) *peer {
	t.Helper()
	p := &peer{gotGET: make(chan struct{}), acked: make(chan struct{}), more: make(chan struct{})}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		seen := seenRequest{Method: r.Method, Header: r.Header.Clone()}
		var id json.RawMessage
		if r.Method == http.MethodPost {
			body, _ := io.ReadAll(r.Body)
			r.Body = io.NopCloser(bytes.NewReader(body))
			var m struct {
				ID     json.RawMessage `json:"id"`
				Method string          `json:"method"`
				Params struct {
					Name string `json:"name"`
				} `json:"params"`
			}
			_ = json.Unmarshal(body, &m)
			seen.RPCMethod, seen.RPCTool, id = m.Method, m.Params.Name, m.ID
		}
		p.mu.Lock()
		p.requests = append(p.requests, seen)
		close(p.more)
		p.more = make(chan struct{})
		p.mu.Unlock()
		if r.Method == http.MethodGet {
			p.getOnce.Do(func() { close(p.gotGET) })
		}
		if seen.RPCMethod == "initialize" {
			switch {
			case take(&p.noInit):
				w.Header().Set("Content-Type", "application/json")
				io.WriteString(w, `{"jsonrpc":"2.0","id":`+string(id)+`,"error":{"code":-32601,"message":"Method not found: initialize"}}`)
				return
			case take(&p.failInit):
				http.Error(w, "no new sessions", http.StatusInternalServerError)
				return
			}
		}
		if seen.RPCMethod == "tools/call" {
			switch {
			case take(&p.fail500):
				http.Error(w, "injected failure", http.StatusInternalServerError)
				return
			case take(&p.gone404):
				http.Error(w, "session not found", http.StatusNotFound)
				return
			case take(&p.dropConn):
				conn, _, err := http.NewResponseController(w).Hijack()
				if err != nil {
					panic(http.ErrAbortHandler)
				}
				conn.Close()
				return
			}
		}
		if seen.RPCMethod == "subscriptions/listen" {
			// The server's first write on this stream is its
			// acknowledgement: from then on it delivers notifications.
			w = &firstWrite{ResponseWriter: w, done: func() { p.ackOnce.Do(func() { close(p.acked) }) }}
		}
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	p.URL = srv.URL + "/mcp"
	return p
}

// firstWrite calls done after the first write of a response.
type firstWrite struct {
	http.ResponseWriter
	done func()
}

func (w *firstWrite) Write(b []byte) (int, error) {
	n, err := w.ResponseWriter.Write(b)
	w.done()
	return n, err
}

func (w *firstWrite) Flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// waitListening waits until a subscriptions/listen stream has started.
func (p *peer) waitListening(t *testing.T) {
	t.Helper()
	select {
	case <-p.acked:
	case <-time.After(20 * time.Second):
		t.Fatal("no subscriptions/listen stream started")
	}
}

func take(n *atomic.Int32) bool {
	for {
		v := n.Load()
		if v <= 0 {
			return false
		}
		if n.CompareAndSwap(v, v-1) {
			return true
		}
	}
}

// waitSeen waits until the peer has seen n JSON-RPC requests of method.
func (p *peer) waitSeen(t *testing.T, method string, n int) {
	t.Helper()
	deadline := time.After(waitTimeout)
	for {
		p.mu.Lock()
		got := 0
		for _, r := range p.requests {
			if r.RPCMethod == method {
				got++
			}
		}
		more := p.more
		p.mu.Unlock()
		if got >= n {
			return
		}
		select {
		case <-more:
		case <-deadline:
			t.Fatalf("the peer saw %d %s requests, want %d", got, method, n)
		}
	}
}

func (p *peer) seen() []seenRequest {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.requests)
}

// fixturePeer serves the fixture's HTTP handler.
func fixturePeer(t *testing.T, opts fixture.Options) *peer {
	t.Helper()
	_, rec := testlog.New(t)
	opts.Stderr = rec
	return serve(t, fixture.HTTPHandler(opts))
}

// mcpgoPeer serves mcp-go's own StreamableHTTPServer with a few tools.
func mcpgoPeer(t *testing.T) (*peer, *server.MCPServer) {
	t.Helper()
	s := server.NewMCPServer("mcp-go-peer", "1.2.1", server.WithToolCapabilities(true))
	s.AddTool(mcp.NewTool("echo", mcp.WithDescription("Echo."), mcp.WithString("message")),
		func(_ context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return mcp.NewToolResultText("echo: " + req.GetString("message", "")), nil
		})
	s.AddTool(mcp.NewTool("admin.reset", mcp.WithDescription("Dotted.")),
		func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return mcp.NewToolResultText("reset done"), nil
		})
	s.AddTool(mcp.NewTool("picture", mcp.WithDescription("An image.")),
		func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{mcp.NewTextContent("look"), mcp.NewImageContent("aGk=", "image/gif")}}, nil
		})
	s.AddTool(mcp.NewTool("headers", mcp.WithDescription("Header names seen.")),
		func(_ context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return mcp.NewToolResultText(req.Header.Get("X-Api-Key")), nil
		})
	return serve(t, server.NewStreamableHTTPServer(s)), s
}

// wantHeaders checks that every GET and POST a peer received carried the
// headers.
func wantHeaders(t *testing.T, p *peer, want map[string]string) {
	t.Helper()
	select {
	case <-p.gotGET: // the client opens it once initialized, on its own
	case <-time.After(20 * time.Second):
		t.Fatal("the client never opened the GET stream")
	}
	methods := map[string]int{}
	for _, r := range p.seen() {
		if r.Method == http.MethodDelete {
			continue // see TestHTTPHeadersOnClose
		}
		methods[r.Method]++
		for k, v := range want {
			if got := r.Header.Get(k); got != v {
				t.Errorf("%s %s carried %s: %q, want %q", r.Method, r.RPCMethod, k, got, v)
			}
		}
	}
	if methods[http.MethodPost] < 3 || methods[http.MethodGet] < 1 {
		t.Errorf("requests seen: %v; want the handshake, the listing and the GET stream", methods)
	}
}

func TestHTTPFixture(t *testing.T) {
	t.Parallel()
	p := fixturePeer(t, fixture.Options{RequireHeaders: []string{"X-Api-Key: k-123", "Authorization: Bearer tok-abcdef"}})
	hx := newHarness(t)
	hx.mustLoad(yml(httpEntry("w", "web", p.URL, map[string]any{
		"headers": map[string]string{"X-Api-Key": "k-123", "Authorization": "Bearer tok-abcdef"},
	})))
	hx.wantState("w", host.Ready)
	var want []string
	for _, raw := range fixture.DefaultToolNames() {
		want = append(want, PublicName("web", raw))
	}
	slices.Sort(want)
	hx.wantNames("mcp__", want...)

	hx.wantCall("mcp__web__echo", `{"message":"over http"}`, "echo: over http", false)
	hx.wantCall(PublicName("web", "admin.reset"), `{}`, "reset done", false)
	hx.wantCall("mcp__web__image", `{}`, "here is an image\n[image: image/png, content discarded]", false)
	hx.wantCall("mcp__web__hologram", `{}`, "[unsupported content type: hologram]\nvisible", false)
	hx.wantCall("mcp__web__echo", `[1]`, "echo: ", false)
	if tool, _ := hx.Tools.Lookup("mcp__web__schema_verbatim"); string(tool.Parameters) != fixture.SchemaVerbatim {
		t.Fatalf("schema over HTTP: %s", tool.Parameters)
	}

	// The headers tool lists what the call arrived with.
	res := hx.Call("mcp__web__headers", `{}`)
	var headers map[string][]string
	if err := json.Unmarshal([]byte(res.Text), &headers); err != nil {
		t.Fatalf("headers: %+v", res)
	}
	if !slices.Equal(headers["X-Api-Key"], []string{"k-123"}) || !slices.Equal(headers["Authorization"], []string{"<present>"}) {
		t.Fatalf("headers seen by the tool: %v", headers)
	}
	wantHeaders(t, p, map[string]string{"X-Api-Key": "k-123", "Authorization": "Bearer tok-abcdef"})

	// list_changed (on the response stream of the call that caused it).
	hx.Call("mcp__web__set_tools", `{"add":["fresh"],"remove":["echo"]}`)
	hx.waitTools("the re-sync", func(names []string) bool {
		return slices.Contains(names, "mcp__web__fresh") && !slices.Contains(names, "mcp__web__echo")
	})
	hx.wantCall("mcp__web__fresh", `{}`, "fresh ok", false)

	st := hx.status("w")
	if st.URL != p.URL || st.Headers["Authorization"] != "<redacted>" || st.Headers["X-Api-Key"] != "<redacted>" ||
		st.Server == nil || st.Server.Name != "mcpfixture" || st.ProtocolVersion != "2025-11-25" || st.PID != 0 || st.Phase != "connected" {
		t.Fatalf("status %+v", st)
	}
	text := strings.Join(st.StatusLines(), "\n") + hx.Log.String()
	for _, secret := range []string{"tok-abcdef", "k-123"} {
		if strings.Contains(text, secret) {
			t.Errorf("%q appears in the status or the log", secret)
		}
	}
}

func TestHTTPFixtureWithoutTheRequiredHeader(t *testing.T) {
	t.Parallel()
	p := fixturePeer(t, fixture.Options{RequireHeaders: []string{"Authorization: Bearer right"}})
	hx := newHarness(t)
	hx.mustLoad(yml(httpEntry("w", "web", p.URL, map[string]any{"headers": map[string]string{"Authorization": "Bearer wrong-token"}})))
	e := hx.wantState("w", host.Failed, "connect: initialize:")
	if strings.Contains(e.Error, "wrong-token") || strings.Contains(hx.Log.String(), "wrong-token") {
		t.Fatalf("the token shows: %q", e.Error)
	}
}

func TestHTTPFixtureFaults(t *testing.T) {
	t.Parallel()
	t.Run("the session is gone", func(t *testing.T) {
		t.Parallel()
		// The fixture forgets a session after 6 requests carrying it (the
		// GET stream and notifications count): the first session ends
		// during these calls; the second one lives long enough for the
		// retry and the re-sync a new session asks for.
		p := fixturePeer(t, fixture.Options{HTTPDropSessionAfter: 6, Only: []string{"echo"}})
		hx := newHarness(t)
		hx.mustLoad(yml(httpEntry("w", "web", p.URL, nil)))
		for range 5 {
			hx.wantCall("mcp__web__echo", `{"message":"again"}`, "echo: again", false)
		}
		if recs := hx.Logs.Find(msg("w", "the server ended the session; started a new one")); len(recs) == 0 {
			t.Fatal("the session was never renewed")
		}
		inits := 0
		for _, r := range p.seen() {
			if r.RPCMethod == "initialize" {
				inits++
			}
		}
		if inits < 2 {
			t.Fatalf("%d initialize requests", inits)
		}
		hx.wantState("w", host.Ready)
	})
	t.Run("500", func(t *testing.T) {
		t.Parallel()
		p := fixturePeer(t, fixture.Options{HTTPFailEvery: 4, Only: []string{"echo"}})
		hx := newHarness(t)
		hx.mustLoad(yml(httpEntry("w", "web", p.URL, nil)))
		var failed, ok int
		for range 8 {
			res := hx.Call("mcp__web__echo", `{"message":"x"}`)
			switch {
			case res.IsError && strings.Contains(res.Text, "HTTP 500"):
				failed++
			case res.Text == "echo: x":
				ok++
			default:
				t.Fatalf("result %+v", res)
			}
		}
		if failed < 1 || ok < 4 {
			t.Fatalf("%d calls failed, %d succeeded", failed, ok)
		}
		hx.wantState("w", host.Ready)
		hx.wantNames("mcp__", "mcp__web__echo")
	})
	t.Run("dropped connection", func(t *testing.T) {
		t.Parallel()
		p := fixturePeer(t, fixture.Options{HTTPDropConnOn: "tools/call", Only: []string{"echo"}})
		hx := newHarness(t)
		hx.mustLoad(yml(httpEntry("w", "web", p.URL, nil)))
		res := hx.Call("mcp__web__echo", `{"message":"x"}`)
		if !res.IsError || !strings.HasPrefix(res.Text, "Error: connection lost during the call: ") {
			t.Fatalf("result %+v", res)
		}
		// The connection counts as lost: a new one comes, the tools stay.
		hx.waitState("w", host.Ready)
		hx.wantNames("mcp__", "mcp__web__echo")
	})
	t.Run("timeout", func(t *testing.T) {
		t.Parallel()
		p := fixturePeer(t, fixture.Options{Only: []string{"sleep", "cancellations"}})
		hx := newHarness(t)
		hx.mustLoad(yml(httpEntry("w", "web", p.URL, map[string]any{"toolCallTimeoutMs": 200})))
		hx.wantCall("mcp__web__sleep", `{"ms":30000}`, `Error: "sleep" timed out after 200ms (toolCallTimeoutMs)`, true)
		res := hx.Call("mcp__web__cancellations", `{"waitMs":100}`)
		var got struct{ Cancelled []json.RawMessage }
		if err := json.Unmarshal([]byte(res.Text), &got); err != nil || len(got.Cancelled) != 1 {
			t.Fatalf("cancellations: %+v", res)
		}
	})
	t.Run("server gone at connect", func(t *testing.T) {
		t.Parallel()
		srv := httptest.NewServer(http.NotFoundHandler())
		url := srv.URL + "/mcp"
		srv.Close()
		hx := newHarness(t)
		hx.mustLoad(yml(httpEntry("w", "web", url, nil)))
		hx.wantState("w", host.Failed, "connect: initialize:")
	})
}

func TestHTTPMcpGo(t *testing.T) {
	t.Parallel()
	for _, protocol := range []string{ProtocolAuto, ProtocolLegacy, ProtocolModern} {
		t.Run(protocol, func(t *testing.T) {
			t.Parallel()
			p, s := mcpgoPeer(t)
			hx := newHarness(t)
			hx.mustLoad(yml(httpEntry("g", "go", p.URL, map[string]any{
				"protocol": protocol,
				"headers":  map[string]string{"X-Api-Key": "k-456"},
			})))
			hx.wantState("g", host.Ready)
			startNames := []string{PublicName("go", "admin.reset"), "mcp__go__echo", "mcp__go__headers", "mcp__go__picture"}
			hx.wantNames("mcp__", startNames...)
			hx.wantCall("mcp__go__echo", `{"message":"hi"}`, "echo: hi", false)
			hx.wantCall(PublicName("go", "admin.reset"), `{}`, "reset done", false)
			hx.wantCall("mcp__go__picture", `{}`, "look\n[image: image/gif, content discarded]", false)
			hx.wantCall("mcp__go__headers", `{}`, "k-456", false)
			// tools/call carries the raw names, never the public ones.
			var called []string
			for _, r := range p.seen() {
				if r.RPCMethod == "tools/call" {
					called = append(called, r.RPCTool)
				}
			}
			if want := []string{"echo", "admin.reset", "picture", "headers"}; !slices.Equal(called, want) {
				t.Fatalf("tools/call names on the wire: %q, want %q", called, want)
			}

			if protocol == ProtocolModern {
				if st := hx.status("g"); st.ProtocolVersion != "2026-07-28" {
					t.Fatalf("protocol %q", st.ProtocolVersion)
				}
				// list_changed over subscriptions/listen.
				p.waitListening(t)
				s.AddTool(mcp.NewTool("later"), func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
					return mcp.NewToolResultText("later ok"), nil
				})
				hx.waitTools("the tool added later", func(names []string) bool { return slices.Contains(names, "mcp__go__later") })
				hx.wantCall("mcp__go__later", `{}`, "later ok", false)
				return // no GET stream, no session: the rest is about those
			}
			wantHeaders(t, p, map[string]string{"X-Api-Key": "k-456"})

			// list_changed from the server, while no request is in
			// flight: it can only come over the GET stream.
			before := len(p.seen())
			s.AddTool(mcp.NewTool("later", mcp.WithDescription("Added later.")),
				func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
					return mcp.NewToolResultText("later ok"), nil
				})
			hx.waitTools("the tool added later", func(names []string) bool { return slices.Contains(names, "mcp__go__later") })
			for _, r := range p.seen()[before:] {
				if r.Method == http.MethodPost && r.RPCMethod != "tools/list" {
					t.Fatalf("a %s request after the change: the notification did not come over the GET stream", r.RPCMethod)
				}
			}
			s.DeleteTools("later")
			// (While a re-sync swaps generations the tools are briefly
			// absent: wait for the whole new set, not for one to go.)
			hx.waitTools("the tool deleted", func(names []string) bool { return slices.Equal(names, startNames) })

			// 404: the session is gone; the client starts a new one and
			// the call succeeds.
			p.gone404.Store(1)
			hx.wantCall("mcp__go__echo", `{"message":"after 404"}`, "echo: after 404", false)
			hx.Logs.Wait(t, waitTimeout, "the new session", 1, msg("g", "the server ended the session; started a new one"))

			// 500: an error result; the entry and its tools stay.
			p.fail500.Store(1)
			res := hx.Call("mcp__go__echo", `{"message":"x"}`)
			if !res.IsError || !strings.Contains(res.Text, "HTTP 500") {
				t.Fatalf("result %+v", res)
			}
			hx.wantCall("mcp__go__echo", `{"message":"y"}`, "echo: y", false)

			// A dropped connection: an error result (the request was sent:
			// it is not sent again); the connection counts as lost, so the
			// next call waits for a new one.
			p.dropConn.Store(1)
			if res := hx.Call("mcp__go__echo", `{"message":"x"}`); !res.IsError {
				t.Fatalf("result %+v", res)
			}
			hx.wantCall("mcp__go__echo", `{"message":"z"}`, "echo: z", false)
			hx.waitState("g", host.Ready)
			hx.wantNames("mcp__", PublicName("go", "admin.reset"), "mcp__go__echo", "mcp__go__headers", "mcp__go__picture")
		})
	}
}

// TestHTTPHeadersOnClose records what happens to the configured headers on
// the DELETE that ends a session.
func TestHTTPHeadersOnClose(t *testing.T) {
	t.Parallel()
	p, _ := mcpgoPeer(t)
	hx := newHarness(t)
	hx.mustLoad(yml(httpEntry("g", "go", p.URL, map[string]any{"headers": map[string]string{"X-Api-Key": "k-789"}})))
	hx.mustLoad("[]\n")
	for _, r := range p.seen() {
		if r.Method == http.MethodDelete && r.Header.Get("X-Api-Key") != "k-789" {
			t.Errorf("the DELETE that ends the session carried X-Api-Key %q", r.Header.Get("X-Api-Key"))
		}
	}
}

// Credentials never go to another origin: a server that redirects to
// another scheme, host or port gets nothing from us there, and the entry
// fails naming where it was sent; a redirect on the same origin works.
func TestHTTPRedirects(t *testing.T) {
	t.Parallel()
	const token = "Bearer redirect-secret-0123456789"
	// elsewhere records what reaches the other origin.
	var leaked atomic.Int32
	elsewhere := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "" || r.Header.Get("X-Api-Key") != "" {
			leaked.Add(1)
		}
		http.Error(w, "not here", http.StatusNotFound)
	}))
	t.Cleanup(elsewhere.Close)
	p := fixturePeer(t, fixture.Options{Only: []string{"echo"}, RequireHeaders: []string{"Authorization: " + token}})
	mux := http.NewServeMux()
	mux.HandleFunc("/moved", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, p.URL, http.StatusTemporaryRedirect) // same origin? no: p is another listener
	})
	mux.HandleFunc("/away", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, elsewhere.URL+"/mcp", http.StatusTemporaryRedirect)
	})
	front := httptest.NewServer(mux)
	t.Cleanup(front.Close)
	// same-origin: a path on the fixture's own listener that redirects to
	// its /mcp endpoint.
	sameMux := http.NewServeMux()
	sameMux.HandleFunc("/old", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "/mcp", http.StatusTemporaryRedirect)
	})
	sameMux.Handle("/", fixture.HTTPHandler(fixture.Options{Only: []string{"echo"}, RequireHeaders: []string{"Authorization: " + token}}))
	same := httptest.NewServer(sameMux)
	t.Cleanup(same.Close)

	hx := newHarness(t)
	headers := map[string]any{"headers": map[string]string{"Authorization": token, "X-Api-Key": "key-0123456789"}}
	hx.mustLoad(yml(
		httpEntry("away", "away", front.URL+"/away", headers),
		httpEntry("moved", "moved", front.URL+"/moved", headers),
		httpEntry("same", "same", same.URL+"/old", headers),
	))
	for id, target := range map[string]string{"away": elsewhere.URL, "moved": p.URL} {
		u, _ := url.Parse(target)
		e := hx.wantState(id, host.Failed, "redirected to another origin, http://"+u.Host)
		if strings.Contains(e.Error, "redirect-secret") {
			t.Errorf("%s: the error shows the token: %s", id, e.Error)
		}
	}
	if n := leaked.Load(); n > 0 {
		t.Fatalf("%d request(s) carried our headers to another origin", n)
	}
	for _, r := range p.seen() {
		t.Errorf("the fixture behind a cross-origin redirect got a %s %s", r.Method, r.RPCMethod)
	}
	hx.wantState("same", host.Ready)
	hx.wantCall("mcp__same__echo", `{"message":"via a same-origin redirect"}`, "echo: via a same-origin redirect", false)
}
