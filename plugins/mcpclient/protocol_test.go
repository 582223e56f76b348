package mcpclient

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/harness-go/harness/host"
	"github.com/harness-go/harness/internal/testkit/fixture"
)

// protocol: auto reaches a server of 2026-07-28 only, whatever way it
// refuses initialize: a JSON-RPC error saying the method, the request or
// its version is not what it serves (over HTTP with a 4xx), or an HTTP 4xx
// whose body is not JSON-RPC. status says which revision the entry speaks.
func TestAutoReachesAStatelessOnlyServer(t *testing.T) {
	t.Parallel()
	for _, refusal := range []string{"-32020", "-32022", "-32600", "-32601", "page"} {
		for _, w := range []wire{{"stdio", ProtocolAuto, false}, {"http", ProtocolAuto, true}} {
			if refusal == "page" && !w.http {
				continue // stdio has no pages
			}
			t.Run(w.name+" "+refusal, func(t *testing.T) {
				t.Parallel()
				hx := newHarness(t)
				opts := fixture.Options{RefuseInitialize: refusal, Only: []string{"echo"}}
				hx.mustLoad(yml(hx.entry(w, "m", "srv", opts, []string{"--refuse-initialize", refusal, "--only", "echo"}, nil)))
				hx.wantState("m", host.Ready)
				hx.wantCall("mcp__srv__echo", `{"message":"hi"}`, "echo: hi", false)
				st := hx.status("m")
				if st.ProtocolVersion != mcp.LATEST_PROTOCOL_VERSION || !strings.Contains(strings.Join(st.StatusLines(), "\n"), "protocol 2026-07-28 (stateless)") {
					t.Fatalf("status: protocol %q\n%s", st.ProtocolVersion, strings.Join(st.StatusLines(), "\n"))
				}
			})
		}
	}
}

// A server of the handshake era still works with auto (and legacy), and
// modern falls back to initialize when it refuses server/discover.
func TestEveryStrategyReachesAHandshakeServer(t *testing.T) {
	t.Parallel()
	for _, strategy := range []string{ProtocolAuto, ProtocolLegacy, ProtocolModern} {
		for _, w := range []wire{{"stdio", strategy, false}, {"http", strategy, true}} {
			t.Run(w.name+" "+strategy, func(t *testing.T) {
				t.Parallel()
				hx := newHarness(t)
				hx.mustLoad(yml(hx.entry(w, "l", "srv", fixture.Options{Legacy: true, Only: []string{"echo"}}, []string{"--legacy", "--only", "echo"}, nil)))
				hx.wantCall("mcp__srv__echo", `{"message":"hi"}`, "echo: hi", false)
				if st := hx.status("l"); st.ProtocolVersion != mcp.LATEST_LEGACY_PROTOCOL_VERSION {
					t.Fatalf("protocol %q", st.ProtocolVersion)
				}
			})
		}
	}
}

// statelessServer is a 2026-07-28 server written by hand: it refuses
// initialize as the conformance suite's mock does, answers server/discover
// with the capabilities it is given, and counts what it got.
type statelessServer struct {
	caps      string // the capabilities object of server/discover
	reject    atomic.Int32
	discover  string        // the answer to server/discover after the rejections, or "" for a result
	listening chan struct{} // closed at the first subscriptions/listen, when set
	listens   atomic.Int32
	discovers atomic.Int32
	// versions, when set, is server/discover's supportedVersions (a JSON
	// array) and the server also serves the initialize handshake, as the Go
	// SDK's stateful HTTP server does: it answers server/discover but
	// names only versions of the handshake era.
	versions    string
	initializes atomic.Int32
}

func (s *statelessServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		http.Error(w, "no", http.StatusMethodNotAllowed)
		return
	}
	body, _ := io.ReadAll(r.Body)
	var req struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
	}
	_ = json.Unmarshal(body, &req)
	w.Header().Set("Content-Type", "application/json")
	answer := func(status int, v string) {
		w.WriteHeader(status)
		fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,%s}`, req.ID, v)
	}
	if s.versions != "" {
		switch req.Method {
		case "initialize":
			s.initializes.Add(1)
			answer(http.StatusOK, `"result":{"protocolVersion":"2025-11-25","capabilities":{"tools":{}},"serverInfo":{"name":"stateful","version":"1"}}`)
			return
		case "notifications/initialized":
			w.WriteHeader(http.StatusAccepted)
			return
		case "tools/list":
			if v := r.Header.Get(mcp.HeaderProtocolVersion); v != "2025-11-25" {
				answer(http.StatusBadRequest, `"error":{"code":-32022,"message":"Unsupported protocol version","data":{"supported":`+s.versions+`,"requested":"`+v+`"}}`)
				return
			}
		}
	}
	if r.Header.Get(mcp.HeaderProtocolVersion) == "" {
		answer(http.StatusBadRequest, `"error":{"code":-32020,"message":"Missing MCP-Protocol-Version header"}`)
		return
	}
	switch req.Method {
	case "server/discover":
		s.discovers.Add(1)
		if s.reject.Add(-1) >= 0 {
			answer(http.StatusBadRequest, `"error":{"code":-32022,"message":"Unsupported protocol version","data":{"supported":["2026-07-28"],"requested":"x"}}`)
			return
		}
		if s.discover != "" {
			answer(http.StatusBadRequest, s.discover)
			return
		}
		versions := s.versions
		if versions == "" {
			versions = `["2026-07-28"]`
		}
		answer(http.StatusOK, `"result":{"resultType":"complete","ttlMs":0,"cacheScope":"private","supportedVersions":`+versions+`,"capabilities":`+s.caps+`,"_meta":{"io.modelcontextprotocol/serverInfo":{"name":"stateless","version":"1"}}}`)
	case "tools/list":
		answer(http.StatusOK, `"result":{"resultType":"complete","ttlMs":0,"cacheScope":"private","tools":[{"name":"echo","inputSchema":{"type":"object"}}]}`)
	case "subscriptions/listen":
		if s.listens.Add(1) == 1 && s.listening != nil {
			close(s.listening)
		}
		<-r.Context().Done()
	default:
		answer(http.StatusNotFound, `"error":{"code":-32601,"message":"Method not found"}`)
	}
}

// modern opens subscriptions/listen only when the server offers
// list_changed; a -32022 naming a supported version is answered by one more
// try with it; and when both handshakes fail, the error says what each got.
func TestStatelessHandshakes(t *testing.T) {
	t.Parallel()
	t.Run("a subscription only where the server offers one", func(t *testing.T) {
		t.Parallel()
		for caps, want := range map[string]bool{`{}`: false, `{"tools":{}}`: false, `{"tools":{"listChanged":false}}`: false, `{"tools":{"listChanged":true}}`: true} {
			var c mcp.ServerCapabilities
			if err := json.Unmarshal([]byte(caps), &c); err != nil {
				t.Fatal(err)
			}
			if got := offersListChanged(c); got != want {
				t.Errorf("capabilities %s: listen %t, want %t", caps, got, want)
			}
		}
		srv := &statelessServer{caps: `{"tools":{"listChanged":true}}`, listening: make(chan struct{})}
		p := serve(t, srv)
		hx := newHarness(t)
		hx.mustLoad(yml(httpEntry("s", "srv", p.URL, map[string]any{"protocol": ProtocolAuto})))
		hx.wantState("s", host.Ready)
		select {
		case <-srv.listening:
		case <-time.After(waitTimeout):
			t.Fatal("no subscriptions/listen to a server that offers list_changed")
		}
	})
	t.Run("-32022 with a supported list", func(t *testing.T) {
		t.Parallel()
		srv := &statelessServer{caps: `{"tools":{}}`}
		srv.reject.Store(1)
		p := serve(t, srv)
		hx := newHarness(t)
		hx.mustLoad(yml(httpEntry("s", "srv", p.URL, map[string]any{"protocol": ProtocolModern})))
		hx.wantState("s", host.Ready)
		if n := srv.discovers.Load(); n != 2 {
			t.Fatalf("%d server/discover, want 2 (one refused, one more with the version named)", n)
		}
	})
	t.Run("-32022 twice", func(t *testing.T) {
		t.Parallel()
		srv := &statelessServer{caps: `{"tools":{}}`}
		srv.reject.Store(2)
		p := serve(t, srv)
		hx := newHarness(t)
		hx.mustLoad(yml(httpEntry("s", "srv", p.URL, map[string]any{"protocol": ProtocolModern})))
		e := hx.wantState("s", host.Failed)
		if n := srv.discovers.Load(); n != 2 || !strings.Contains(e.Error, "Unsupported protocol version (JSON-RPC error -32022)") {
			t.Fatalf("%d server/discover; error %q", n, e.Error)
		}
	})
	t.Run("a discover that names only handshake versions", func(t *testing.T) {
		// modern goes on with initialize; auto never asks server/discover.
		t.Parallel()
		for _, strategy := range []string{ProtocolModern, ProtocolAuto} {
			srv := &statelessServer{caps: `{"tools":{}}`, versions: `["2025-11-25","2025-06-18"]`}
			p := serve(t, srv)
			hx := newHarness(t)
			hx.mustLoad(yml(httpEntry("s", "srv", p.URL, map[string]any{"protocol": strategy})))
			hx.wantState("s", host.Ready)
			if st := hx.status("s"); st.ProtocolVersion != "2025-11-25" || srv.initializes.Load() != 1 {
				t.Fatalf("%s: protocol %q after %d server/discover and %d initialize", strategy, st.ProtocolVersion, srv.discovers.Load(), srv.initializes.Load())
			}
		}
	})
	t.Run("both refused", func(t *testing.T) {
		t.Parallel()
		srv := &statelessServer{caps: `{}`, discover: `"error":{"code":-32000,"message":"not today"}`}
		p := serve(t, srv)
		hx := newHarness(t)
		hx.mustLoad(yml(httpEntry("s", "srv", p.URL, nil)))
		hx.wantState("s", host.Failed,
			"initialize: Missing MCP-Protocol-Version header (JSON-RPC error -32020); server/discover: not today (JSON-RPC error -32000)")
	})
	t.Run("a transport failure is not a refusal", func(t *testing.T) {
		t.Parallel()
		p := fixturePeer(t, fixture.Options{HTTPDropConnOn: "initialize"})
		hx := newHarness(t)
		hx.mustLoad(yml(httpEntry("s", "srv", p.URL, nil)))
		e := hx.wantState("s", host.Failed)
		for _, r := range p.seen() {
			if r.RPCMethod == "server/discover" {
				t.Fatalf("server/discover after a dropped connection: %q", e.Error)
			}
		}
		if !strings.Contains(e.Error, "initialize: connection lost: POST ") {
			t.Fatalf("error %q", e.Error)
		}
	})
}

// On 2026-07-28 a tool's x-mcp-header parameters travel in Mcp-Param-*
// headers beside the standard Mcp-Method and Mcp-Name; a tool whose
// annotation breaks SEP-2243's rules is left out (the others are kept) and
// status says which and why. In the handshake era the annotation means
// nothing: every tool is kept, no header mirrors a parameter.
func TestParamHeaders(t *testing.T) {
	t.Parallel()
	for _, w := range []wire{{"http 2026-07-28", ProtocolModern, true}, {"http 2025-11-25", ProtocolLegacy, true}, {"stdio 2026-07-28", ProtocolModern, false}} {
		t.Run(w.name, func(t *testing.T) {
			t.Parallel()
			hx := newHarness(t)
			hx.mustLoad(yml(hx.entry(w, "h", "srv", fixture.Options{HeaderTools: true, Only: []string{"echo"}}, []string{"--header-tools", "--only", "echo"}, nil)))
			modern := w.protocol == ProtocolModern
			want := []string{"mcp__srv__bad_header", "mcp__srv__echo", "mcp__srv__regional"}
			if modern {
				want = []string{"mcp__srv__echo", "mcp__srv__regional"}
			}
			hx.wantNames("mcp__", want...)
			st := hx.status("h")
			if why := st.LeftOut["bad_header"]; modern != (why != "") || (modern && !strings.Contains(why, `x-mcp-header value "My Region" contains invalid character ' '`)) {
				t.Fatalf("left out: %q", st.LeftOut)
			}
			if modern && !strings.Contains(strings.Join(st.StatusLines(), "\n"), "left out: bad_header: invalid x-mcp-header") {
				t.Fatalf("status lines:\n%s", strings.Join(st.StatusLines(), "\n"))
			}
			res := hx.Call("mcp__srv__regional", `{"region":"eu west 1","priority":3,"query":"SELECT 1"}`)
			var got map[string]string
			if err := json.Unmarshal([]byte(res.Text), &got); err != nil {
				t.Fatalf("result %+v", res)
			}
			switch {
			case !w.http:
				if len(got) != 0 {
					t.Fatalf("headers over stdio: %v", got)
				}
			case modern:
				for k, v := range map[string]string{"Mcp-Param-Region": "eu west 1", "Mcp-Param-Priority": "3", "Mcp-Method": "tools/call", "Mcp-Name": "regional", "Mcp-Protocol-Version": "2026-07-28"} {
					if got[k] != v {
						t.Errorf("%s = %q, want %q (all: %v)", k, got[k], v, got)
					}
				}
				if _, ok := got["Mcp-Param-Query"]; ok {
					t.Errorf("an unannotated parameter was mirrored: %v", got)
				}
			default:
				if _, ok := got["Mcp-Param-Region"]; ok || got["Mcp-Method"] != "" {
					t.Errorf("2025-11-25 headers: %v", got)
				}
			}
		})
	}
}

// roots is live: an edit answers the next roots/list with the new list and,
// in the handshake era, tells the server (notifications/roots/list_changed);
// an edit that would declare roots to a server told there are none (or the
// other way round) starts a new connection, which declares them anew.
func TestRootsAreLive(t *testing.T) {
	t.Parallel()
	hx := newHarness(t)
	logPath := filepath.Join(hx.Dir, "received.jsonl")
	entry := func(roots []any) cfg {
		c := map[string]any{"protocol": ProtocolLegacy}
		if roots != nil {
			c["roots"] = roots
		}
		return hx.stdio("r", "srv", c, "--ask", "--log", logPath)
	}
	hx.mustLoad(yml(entry([]any{"/a"})))
	pid := hx.status("r").PID
	hx.wantCall("mcp__srv__roots", `{}`, `roots: {"roots":[{"uri":"file:///a"}]}`, false)
	hx.mustLoad(yml(entry([]any{"/a", "/b"})))
	hx.waitCall(t, "mcp__srv__roots", `roots: {"roots":[{"uri":"file:///a"},{"uri":"file:///b"}]}`)
	if hx.status("r").PID != pid {
		t.Fatal("an edit of roots restarted the server")
	}
	// The notification goes on a goroutine of its own (supervisor: "tell the
	// server of the new roots"), and the fixture logs what it received: a
	// poll with a deadline.
	deadline := time.Now().Add(waitTimeout)
	for {
		data, _ := os.ReadFile(logPath)
		if strings.Contains(string(data), `"notifications/roots/list_changed"`) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the server was not told the roots changed:\n%s", data)
		}
		time.Sleep(10 * time.Millisecond)
	}
	hx.mustLoad(yml(entry(nil)))
	hx.WaitEntry("r", waitTimeout, "a new server", func(e host.EntryStatus) bool {
		st, ok := e.Details.(*Status)
		return ok && e.State == host.Ready && st.PID != 0 && st.PID != pid
	})
	if res := hx.Call("mcp__srv__roots", `{}`); !res.IsError || !strings.Contains(res.Text, "-32601") {
		t.Fatalf("no roots: %+v", res)
	}
}

// waitCall calls a tool until it answers want (a live edit applies from
// the host's goroutine, not at once).
func (hx *harness) waitCall(t *testing.T, name, want string) {
	t.Helper()
	deadline := time.Now().Add(waitTimeout)
	for {
		res := hx.Call(name, `{}`)
		if res.Text == want {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s = %+v, want %q", name, res, want)
		}
		time.Sleep(10 * time.Millisecond) // a poll with a deadline: the edit is applied off the test's goroutine
	}
}

// resumingServer answers tools/call with an event stream that it ends
// after a priming event (an id, a retry: wait), before the answer; a GET
// with Last-Event-ID gets the answer (the conformance suite's sse-retry).
type resumingServer struct {
	withID   bool
	mu       sync.Mutex
	closedAt time.Time
	resumes  []string // the Last-Event-ID of each resuming GET
	resumed  time.Duration
	pending  json.RawMessage
}

func (s *resumingServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method == http.MethodGet {
		last := r.Header.Get("Last-Event-ID")
		s.mu.Lock()
		pending := s.pending
		if last != "" {
			s.resumes = append(s.resumes, last)
			s.resumed = time.Since(s.closedAt)
			s.pending = nil
		}
		s.mu.Unlock()
		if last == "" || pending == nil {
			http.Error(w, "no listening stream", http.StatusMethodNotAllowed)
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprintf(w, "id: e2\ndata: {\"jsonrpc\":\"2.0\",\"id\":%s,\"result\":{\"content\":[{\"type\":\"text\",\"text\":\"resumed\"}]}}\n\n", pending)
		return
	}
	if r.Method != http.MethodPost {
		return
	}
	body, _ := io.ReadAll(r.Body)
	var req struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
	}
	_ = json.Unmarshal(body, &req)
	if len(req.ID) == 0 {
		w.WriteHeader(http.StatusAccepted)
		return
	}
	w.Header().Set("Mcp-Session-Id", "resume-session")
	switch req.Method {
	case "initialize":
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":{"protocolVersion":"2025-11-25","capabilities":{"tools":{}},"serverInfo":{"name":"resume","version":"1"}}}`, req.ID)
	case "tools/list":
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":{"tools":[{"name":"slow","inputSchema":{"type":"object"}}]}}`, req.ID)
	case "tools/call":
		s.mu.Lock()
		s.pending = req.ID
		s.mu.Unlock()
		w.Header().Set("Content-Type", "text/event-stream")
		if s.withID {
			io.WriteString(w, "id: e1\nretry: 150\ndata: \n\n")
		} else {
			io.WriteString(w, "retry: 150\ndata: \n\n")
		}
		w.(http.Flusher).Flush()
		s.mu.Lock()
		s.closedAt = time.Now()
		s.mu.Unlock()
	}
}

// An event stream the server ends before answering is resumed with a GET
// carrying Last-Event-ID, after the server's retry: wait; one that cannot
// be resumed (no event id) fails its request, saying so.
func TestEventStreamResumed(t *testing.T) {
	t.Parallel()
	t.Run("resumed", func(t *testing.T) {
		t.Parallel()
		srv := &resumingServer{withID: true}
		p := serve(t, srv)
		hx := newHarness(t)
		hx.mustLoad(yml(httpEntry("s", "srv", p.URL, map[string]any{"protocol": ProtocolLegacy})))
		hx.wantCall("mcp__srv__slow", `{}`, "resumed", false)
		srv.mu.Lock()
		defer srv.mu.Unlock()
		if len(srv.resumes) != 1 || srv.resumes[0] != "e1" || srv.resumed < 150*time.Millisecond {
			t.Fatalf("resumes %q after %s; want one with e1, after the 150 ms retry", srv.resumes, srv.resumed)
		}
	})
	t.Run("no event id", func(t *testing.T) {
		t.Parallel()
		p := serve(t, &resumingServer{})
		hx := newHarness(t)
		hx.mustLoad(yml(httpEntry("s", "srv", p.URL, map[string]any{"protocol": ProtocolLegacy})))
		res := hx.Call("mcp__srv__slow", `{}`)
		if !res.IsError || !strings.Contains(res.Text, "the server ended the event stream of tools/call before answering it") {
			t.Fatalf("result %+v", res)
		}
	})
}
