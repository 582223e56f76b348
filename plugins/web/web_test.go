package web

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/harness-go/harness/fiber"
	"github.com/harness-go/harness/internal/testkit/fakellm"
	"github.com/harness-go/harness/internal/testkit/hosttest"
	"github.com/harness-go/harness/plugins/agent"
	"github.com/harness-go/harness/plugins/tools"

	_ "github.com/harness-go/harness/plugins/echo"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// waitTimeout bounds one wait for a message: far above what a test needs.
const waitTimeout = 20 * time.Second

// rig is a host with echo (and what the test adds), a page server on
// loopback, and a browser-like client that has traded the token.
type rig struct {
	t     *testing.T
	h     *hosttest.Host
	srv   *Server
	base  string // http://127.0.0.1:PORT
	token string
	c     *http.Client
	csrf  string
}

func newRig(t *testing.T, config string) *rig {
	t.Helper()
	return newRigWith(t, config, nil)
}

// newRigWith is newRig with the page's Login.
func newRigWith(t *testing.T, config string, login Login) *rig {
	t.Helper()
	h := hosttest.New(t, 10*time.Second)
	agents := agent.NewDirectory()
	if err := h.H.Provide(agent.DirectoryService, agents); err != nil {
		t.Fatal(err)
	}
	r := &rig{t: t, h: h, token: NewToken()}
	srv, err := New(Options{Host: h.H, Tools: h.Tools, Agents: agents, Resources: h.Resources, Prompts: h.Prompts, Login: login, Config: h.File, Token: r.token, Logger: slog.New(h.Logs), Version: "test"})
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Listen("127.0.0.1:0", false); err != nil {
		t.Fatal(err)
	}
	r.srv, r.base = srv, strings.TrimSuffix(srv.URL(false), "/")
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); _ = srv.Run(ctx) }()
	go func() { defer wg.Done(); _ = srv.Serve() }()
	t.Cleanup(func() {
		cctx, stop := context.WithTimeout(context.Background(), 10*time.Second)
		defer stop()
		if err := srv.Close(cctx); err != nil {
			t.Errorf("closing the server: %v", err)
		}
		cancel()
		wg.Wait()
	})
	if err := h.Load(config); err != nil {
		t.Fatal(err)
	}
	h.Settle(waitTimeout)
	jar, _ := cookiejar.New(nil)
	r.c = &http.Client{Jar: jar, Timeout: waitTimeout}
	return r
}

// signIn trades the token for a session, as the page does.
func (r *rig) signIn() {
	r.t.Helper()
	res, body := r.do("POST", "/api/session", map[string]string{"token": r.token}, nil)
	if res.StatusCode != http.StatusOK {
		r.t.Fatalf("signing in: %d %s", res.StatusCode, body)
	}
	var s struct{ CSRF string }
	if err := json.Unmarshal(body, &s); err != nil || s.CSRF == "" {
		r.t.Fatalf("signing in: no CSRF token in %s", body)
	}
	r.csrf = s.CSRF
}

// do sends a request as the page would: JSON, the CSRF token when known,
// and the page's own Origin on a POST. header overrides.
func (r *rig) do(method, path string, body any, header map[string]string) (*http.Response, []byte) {
	r.t.Helper()
	var rd io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, r.base+path, rd)
	if err != nil {
		r.t.Fatal(err)
	}
	if method == "POST" {
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Origin", r.base)
		if r.csrf != "" {
			req.Header.Set(csrfHeader, r.csrf)
		}
	}
	for k, v := range header {
		if k == "Host" {
			req.Host = v
			continue
		}
		req.Header.Set(k, v)
	}
	res, err := r.c.Do(req)
	if err != nil {
		r.t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res, b
}

// events is one open event stream.
type events struct {
	t       *testing.T
	c       chan map[string]any
	pending []map[string]any // received, not yet matched by next
	seen    int
	stop    func()
}

// stream opens the event stream; it closes at cleanup.
func (r *rig) stream() *events {
	r.t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, "GET", r.base+"/api/events", nil)
	res, err := (&http.Client{Jar: r.c.Jar}).Do(req)
	if err != nil {
		r.t.Fatal(err)
	}
	if res.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(res.Body)
		r.t.Fatalf("event stream: %d %s", res.StatusCode, b)
	}
	ev := &events{t: r.t, c: make(chan map[string]any, 4096)}
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer close(ev.c)
		sc := bufio.NewScanner(res.Body)
		sc.Buffer(nil, 16<<20)
		for sc.Scan() {
			data, ok := strings.CutPrefix(sc.Text(), "data: ")
			if !ok {
				continue
			}
			var m map[string]any
			if json.Unmarshal([]byte(data), &m) != nil {
				r.t.Errorf("a message that is not JSON: %s", data)
				continue
			}
			ev.c <- m
		}
	}()
	ev.stop = func() { cancel(); res.Body.Close(); <-done }
	r.t.Cleanup(ev.stop)
	return ev
}

// next waits for a message of type typ for which match holds: the first
// received and not matched yet, in order.
func (e *events) next(typ string, what string, match func(m map[string]any) bool) map[string]any {
	e.t.Helper()
	ok := func(m map[string]any) bool { return m["type"] == typ && (match == nil || match(m)) }
	for i, m := range e.pending {
		if ok(m) {
			e.pending = append(e.pending[:i], e.pending[i+1:]...)
			return m
		}
	}
	deadline := time.After(waitTimeout)
	for {
		select {
		case m, open := <-e.c:
			if !open {
				e.t.Fatalf("the stream ended while waiting for %s", what)
			}
			e.seen++
			if ok(m) {
				return m
			}
			e.pending = append(e.pending, m)
		case <-deadline:
			e.t.Fatalf("no %s message within %s (%s); seen %d messages", typ, waitTimeout, what, e.seen)
		}
	}
}

// js is v as JSON text, for assertions on what a message holds.
func js(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

const echoEntry = "- id: echo\n  name: echo\n  config:\n    greet: true\n"

func TestHeadersAndGuards(t *testing.T) {
	r := newRig(t, echoEntry)
	res, body := r.do("GET", "/", nil, nil)
	if res.StatusCode != 200 || !strings.Contains(string(body), `<script type="module" src="/app.js">`) {
		t.Fatalf("GET /: %d %.200s", res.StatusCode, body)
	}
	if got := res.Header.Get("Content-Security-Policy"); !strings.HasPrefix(got, "default-src 'self'") || strings.Contains(got, "unsafe-inline") {
		t.Errorf("Content-Security-Policy %q", got)
	}
	for k, want := range map[string]string{"X-Frame-Options": "DENY", "X-Content-Type-Options": "nosniff", "Referrer-Policy": "no-referrer"} {
		if got := res.Header.Get(k); got != want {
			t.Errorf("%s: %q, want %q", k, got, want)
		}
	}
	if strings.Contains(string(body), "<style") || strings.Contains(string(body), " style=") {
		t.Error("index.html has inline style")
	}

	// Before the token: nothing but the page's files.
	for _, p := range []string{"/api/events", "/api/session"} {
		if res, body := r.do("GET", p, nil, nil); res.StatusCode != http.StatusUnauthorized {
			t.Errorf("GET %s without a session: %d %s", p, res.StatusCode, body)
		}
	}
	if res, _ := r.do("POST", "/api/session", map[string]string{"token": "wrong"}, nil); res.StatusCode != http.StatusUnauthorized {
		t.Errorf("a wrong token: %d", res.StatusCode)
	}
	r.signIn()
	var cookie *http.Cookie
	res, body = r.do("POST", "/api/session", map[string]string{"token": r.token}, nil)
	for _, c := range res.Cookies() {
		cookie = c
	}
	var again struct{ CSRF string }
	_ = json.Unmarshal(body, &again)
	r.csrf = again.CSRF // the jar holds this session now
	if cookie == nil || !cookie.HttpOnly || cookie.SameSite != http.SameSiteStrictMode || cookie.Path != "/" || strings.Contains(cookie.Value, r.token) {
		t.Fatalf("the session cookie: %+v", cookie)
	}
	if res, body := r.do("GET", "/api/session", nil, nil); res.StatusCode != 200 || !strings.Contains(string(body), `"csrf"`) {
		t.Errorf("GET /api/session with the cookie: %d %s", res.StatusCode, body)
	}

	restart := map[string]string{"id": "echo"}
	for _, tc := range []struct {
		name   string
		header map[string]string
		status int
	}{
		{"the page's own POST", nil, 200},
		{"no CSRF token", map[string]string{csrfHeader: ""}, http.StatusForbidden},
		{"a wrong CSRF token", map[string]string{csrfHeader: "x" + r.csrf}, http.StatusForbidden},
		{"another origin (a page on another port)", map[string]string{"Origin": "http://127.0.0.1:1"}, http.StatusForbidden},
		{"another site", map[string]string{"Sec-Fetch-Site": "cross-site"}, http.StatusForbidden},
		{"a form post", map[string]string{"Content-Type": "text/plain"}, http.StatusUnsupportedMediaType},
		{"a rebinding Host", map[string]string{"Host": "attacker.example:80"}, http.StatusForbidden},
	} {
		res, body := r.do("POST", "/api/restart", restart, tc.header)
		if res.StatusCode != tc.status {
			t.Errorf("%s: %d %s, want %d", tc.name, res.StatusCode, body, tc.status)
		}
	}
	if res, body := r.do("GET", "/api/restart", nil, nil); res.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("a GET that would change state: %d %s", res.StatusCode, body)
	}
	if res, _ := r.do("GET", "/../server.go", nil, nil); res.StatusCode != http.StatusNotFound {
		t.Errorf("a path outside the assets: %d", res.StatusCode)
	}
	// Logout ends the session.
	if res, _ := r.do("POST", "/api/logout", map[string]string{}, nil); res.StatusCode != 200 {
		t.Fatalf("logout: %d", res.StatusCode)
	}
	if res, _ := r.do("POST", "/api/restart", restart, nil); res.StatusCode != http.StatusUnauthorized {
		t.Errorf("after logout: %d", res.StatusCode)
	}
}

func TestCheckListen(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		addr string
		set  bool
		ok   bool
	}{
		{"127.0.0.1:8760", false, true},
		{"localhost:0", false, true},
		{"[::1]:8760", false, true},
		{"0.0.0.0:8760", false, false},
		{":8760", false, false},
		{"192.0.2.1:8760", true, true},
		{"nonsense", true, false},
	} {
		if err := CheckListen(tc.addr, tc.set); (err == nil) != tc.ok {
			t.Errorf("CheckListen(%q, %v) = %v", tc.addr, tc.set, err)
		}
	}
}

func TestSnapshotThenLive(t *testing.T) {
	r := newRig(t, echoEntry)
	r.signIn()
	ev := r.stream()
	snap := ev.next("snapshot", "the first message", nil)
	if !strings.Contains(js(snap["entries"]), `"id":"echo"`) || !strings.Contains(js(snap["tools"]), `"name":"echo"`) {
		t.Fatalf("the snapshot lacks echo: %s", js(snap))
	}
	if f := js(snap["file"]); !strings.Contains(f, "greet: true") {
		t.Errorf("the snapshot's file: %s", f)
	}
	// An edit: a new entry shows up, the tools change.
	if err := r.h.Load(echoEntry + "- id: echo2\n  name: echo\n  config:\n    prefix: x_\n"); err != nil {
		t.Fatal(err)
	}
	ev.next("entries", "echo2 ready", func(m map[string]any) bool {
		return strings.Contains(js(m["entries"]), `"id":"echo2","plugin":"echo","settled":true`) || strings.Contains(js(m["entries"]), `"id":"echo2"`) && strings.Contains(js(m["entries"]), `"state":"ready"`) && strings.Count(js(m["entries"]), `"state":"ready"`) == 2
	})
	ev.next("tools", "x_echo", func(m map[string]any) bool { return strings.Contains(js(m["tools"]), `"name":"x_echo"`) })
	ev.next("event", "the reload line", func(m map[string]any) bool { return strings.Contains(js(m["event"]), "reloaded") })
	// A refused edit: its problem with file:line:column, nothing changes.
	if err := r.h.Load("- id: echo\n  name: echo\n  config:\n    nope: 1\n"); err == nil {
		t.Fatal("a bad config loaded")
	}
	ev.next("file", "the problem", func(m map[string]any) bool {
		return strings.Contains(js(m["file"]), `"problems"`) && strings.Contains(js(m["file"]), "cordis.yml:4:5")
	})
	// A second stream starts with a fresh snapshot that holds both.
	ev2 := r.stream()
	snap2 := ev2.next("snapshot", "a reconnect's snapshot", nil)
	if !strings.Contains(js(snap2["entries"]), `"id":"echo2"`) || !strings.Contains(js(snap2["events"]), "reloaded") {
		t.Errorf("the second snapshot: %s", js(snap2))
	}
}

func TestRedacted(t *testing.T) {
	r := newRig(t, echoEntry+"# sk-live-1234567890abcdef\n")
	r.h.H.Secrets().Add("sk-live-1234567890abcdef")
	r.signIn()
	ev := r.stream()
	snap := ev.next("snapshot", "the first message", nil)
	if s := js(snap); strings.Contains(s, "sk-live-1234567890abcdef") {
		t.Fatalf("a secret in the snapshot: %s", s)
	}
	if text, _ := snap["file"].(map[string]any)["text"].(string); !strings.Contains(text, "# <redacted>") {
		t.Errorf("the file's secret was not replaced: %s", js(snap["file"]))
	}
	// The token of the page itself is a secret too.
	if strings.Contains(js(snap), r.token) {
		t.Error("the token in the snapshot")
	}
}

func TestCallAndQuestion(t *testing.T) {
	r := newRig(t, echoEntry)
	r.signIn()
	res, body := r.do("POST", "/api/call", map[string]any{"name": "echo", "arguments": map[string]string{"message": "hi <b>"}}, nil)
	if res.StatusCode != 200 || !strings.Contains(string(body), `"text":"hi \u003cb\u003e"`) {
		t.Fatalf("calling echo: %d %s", res.StatusCode, body)
	}
	if res, _ := r.do("POST", "/api/call", map[string]any{"name": "nope"}, nil); res.StatusCode != http.StatusNotFound {
		t.Errorf("an unknown tool: %d", res.StatusCode)
	}

	// Without a page open, greet's question is declined at once.
	_, body = r.do("POST", "/api/call", map[string]any{"name": "greet"}, nil)
	if !strings.Contains(string(body), "you chose to decline") {
		t.Fatalf("greet with no page open: %s", body)
	}

	ev := r.stream()
	ev.next("snapshot", "the first message", nil)
	type answer struct {
		status int
		body   string
	}
	called := make(chan answer, 1)
	go func() {
		res, body := r.do("POST", "/api/call", map[string]any{"name": "greet"}, nil)
		called <- answer{res.StatusCode, string(body)}
	}()
	q := ev.next("question", "greet's form", nil)["question"].(map[string]any)
	if q["mode"] != "form" || !strings.Contains(js(q["fields"]), `"name":"name"`) || !strings.Contains(js(q["fields"]), `"default":"plain"`) {
		t.Fatalf("the question: %s", js(q))
	}
	id := q["id"].(string)
	// An answer that does not fit: the field is named, the question stays.
	res, body = r.do("POST", "/api/answer", map[string]any{"id": id, "action": "accept", "fields": map[string]string{"name": ""}}, nil)
	if res.StatusCode != http.StatusUnprocessableEntity || !strings.Contains(string(body), `"name":"an answer is required"`) {
		t.Fatalf("an empty required field: %d %s", res.StatusCode, body)
	}
	res, body = r.do("POST", "/api/answer", map[string]any{"id": id, "action": "accept", "fields": map[string]string{"name": "Ada", "manner": "cheerful"}}, nil)
	if res.StatusCode != 200 {
		t.Fatalf("the answer: %d %s", res.StatusCode, body)
	}
	ev.next("question-end", "the question going", func(m map[string]any) bool { return m["id"] == id })
	if a := <-called; !strings.Contains(a.body, "Hello, Ada! Lovely to meet you!") {
		t.Fatalf("greet's result: %+v", a)
	}
	if res, _ := r.do("POST", "/api/answer", map[string]any{"id": id, "action": "decline"}, nil); res.StatusCode != http.StatusGone {
		t.Errorf("answering twice: %d", res.StatusCode)
	}

	// The call ends (the page's Cancel aborts its request) while its
	// question is shown: the question leaves the page.
	ctx, cancel := context.WithCancel(context.Background())
	ended := make(chan struct{})
	go func() {
		defer close(ended)
		req, _ := http.NewRequestWithContext(ctx, "POST", r.base+"/api/call", strings.NewReader(`{"name":"greet"}`))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Origin", r.base)
		req.Header.Set(csrfHeader, r.csrf)
		if res, err := r.c.Do(req); err == nil {
			res.Body.Close()
		}
	}()
	q = ev.next("question", "a second question", nil)["question"].(map[string]any)
	cancel()
	<-ended
	ev.next("question-end", "the withdrawn question", func(m map[string]any) bool { return m["id"] == q["id"] })
}

func TestChat(t *testing.T) {
	llm := fakellm.Start(t,
		fakellm.Call(fakellm.ToolCallSpec{ID: "c1", Name: "echo", Arguments: `{"message":"from the model"}`}),
		fakellm.Say("All done."),
	)
	r := newRig(t, echoEntry+fmt.Sprintf("- id: bot\n  name: agent\n  config:\n    baseURL: %s\n    model: m\n", llm.URL))
	r.signIn()
	ev := r.stream()
	snap := ev.next("snapshot", "the first message", nil)
	if !strings.Contains(js(snap["agents"]), `"id":"bot"`) {
		t.Fatalf("no agent in %s", js(snap["agents"]))
	}
	res, body := r.do("POST", "/api/chat", map[string]string{"message": "please echo"}, nil)
	if res.StatusCode != http.StatusAccepted {
		t.Fatalf("chat: %d %s", res.StatusCode, body)
	}
	chat := func(typ string) map[string]any {
		return ev.next("chat", typ, func(m map[string]any) bool { return m["event"].(map[string]any)["type"] == typ })["event"].(map[string]any)
	}
	if e := chat("user"); e["text"] != "please echo" {
		t.Errorf("user: %v", e)
	}
	if e := chat("tool_call"); e["name"] != "echo" {
		t.Errorf("tool_call: %v", e)
	}
	if e := chat("tool_result"); e["text"] != "from the model" {
		t.Errorf("tool_result: %v", e)
	}
	if e := chat("text"); e["delta"] != "All done." {
		t.Errorf("text: %v", e)
	}
	chat("usage")
	chat("done")
	chat("end")
	// A page that opens now sees the conversation.
	snap = r.stream().next("snapshot", "the conversation", nil)
	if c := js(snap["chat"]); !strings.Contains(c, "please echo") || !strings.Contains(c, "All done.") || !strings.Contains(c, `"running":false`) {
		t.Errorf("the snapshot's chat: %s", c)
	}

	// Cancel: the model's stream stalls; the page cancels; the model's
	// request ends.
	llm.Func(func(*fakellm.Request) fakellm.Reply {
		return fakellm.Reply{Chunks: fakellm.Text("Thinking about it"), Stall: true}
	})
	if res, body := r.do("POST", "/api/chat", map[string]string{"message": "take your time"}, nil); res.StatusCode != http.StatusAccepted {
		t.Fatalf("chat: %d %s", res.StatusCode, body)
	}
	ev.next("chat", "the partial answer", func(m map[string]any) bool { return strings.Contains(js(m["event"]), "Thinking about it") })
	if res, body := r.do("POST", "/api/chat", map[string]string{"message": "again"}, nil); res.StatusCode != http.StatusConflict {
		t.Errorf("a second turn while one runs: %d %s", res.StatusCode, body)
	}
	if res, body := r.do("POST", "/api/chat/cancel", map[string]string{}, nil); res.StatusCode != 200 {
		t.Fatalf("cancel: %d %s", res.StatusCode, body)
	}
	end := chat("end")
	if end["cancelled"] != true || !strings.Contains(js(end), "cancelled on the page") {
		t.Errorf("the end of a cancelled turn: %v", end)
	}
	reqs := llm.Requests()
	last := reqs[len(reqs)-1]
	select {
	case <-last.Done():
	case <-time.After(waitTimeout):
		t.Fatal("the model's request did not end after Cancel")
	}
	if res, _ := r.do("POST", "/api/chat/new", map[string]string{}, nil); res.StatusCode != 200 {
		t.Errorf("new conversation: %d", res.StatusCode)
	}
	ev.next("chat-new", "a new conversation", nil)
}

// The page's URL holds the token in its fragment only.
func TestURL(t *testing.T) {
	r := newRig(t, echoEntry)
	u, err := url.Parse(r.srv.URL(true))
	if err != nil || u.Path != "/" || u.RawQuery != "" || u.Fragment != "token="+r.token {
		t.Fatalf("URL %q", r.srv.URL(true))
	}
	if strings.Contains(r.srv.URL(false), "token") {
		t.Errorf("URL(false) %q", r.srv.URL(false))
	}
}

// A call's progress reaches the pages of the session that made it.
func TestProgress(t *testing.T) {
	r := newRig(t, echoEntry)
	f := fiber.New(context.Background(), "test tools")
	t.Cleanup(func() { _ = f.Dispose(context.Background()) })
	if _, err := r.h.Tools.Register(f, tools.Tool{Name: "slow", Description: "reports progress", Execute: func(ctx context.Context, _ json.RawMessage) (tools.Result, error) {
		tools.Notify(ctx, tools.Notification{Tool: "slow", Method: tools.MethodProgress, Params: json.RawMessage(`{"progress":1,"total":2,"message":"half way"}`)})
		return tools.Result{Text: "done"}, nil
	}}); err != nil {
		t.Fatal(err)
	}
	r.signIn()
	ev := r.stream()
	ev.next("snapshot", "the first message", nil)
	if _, body := r.do("POST", "/api/call", map[string]any{"name": "slow"}, nil); !strings.Contains(string(body), `"text":"done"`) {
		t.Fatalf("slow: %s", body)
	}
	m := ev.next("progress", "slow's progress", nil)
	if m["tool"] != "slow" || m["progress"] != 1.0 || m["total"] != 2.0 || m["message"] != "half way" {
		t.Errorf("progress: %v", m)
	}
}

// A page to open is shown with its host; anything but a web address is
// declined before it reaches the page.
func TestQuestionPageToOpen(t *testing.T) {
	r := newRig(t, echoEntry)
	f := fiber.New(context.Background(), "test tools")
	t.Cleanup(func() { _ = f.Dispose(context.Background()) })
	ask := func(name, url string) tools.Tool {
		return tools.Tool{Name: name, Description: "asks to open a page", Execute: func(ctx context.Context, _ json.RawMessage) (tools.Result, error) {
			raw, err := tools.Ask(ctx, tools.Question{Tool: name, Method: tools.MethodElicit,
				Params: json.RawMessage(`{"mode":"url","message":"Sign in, please","url":` + quote(url) + `,"elicitationId":"e1"}`)})
			if err != nil {
				return tools.Result{}, err
			}
			return tools.Result{Text: string(raw)}, nil
		}}
	}
	if _, err := r.h.Tools.Register(f, ask("signin", "https://login.example.com/authorize?x=1"), ask("script", "javascript:alert(1)")); err != nil {
		t.Fatal(err)
	}
	r.signIn()
	ev := r.stream()
	ev.next("snapshot", "the first message", nil)
	if _, body := r.do("POST", "/api/call", map[string]any{"name": "script"}, nil); !strings.Contains(string(body), `\"action\":\"decline\"`) {
		t.Errorf("a javascript: URL: %s", body)
	}
	called := make(chan string, 1)
	go func() {
		_, body := r.do("POST", "/api/call", map[string]any{"name": "signin"}, nil)
		called <- string(body)
	}()
	q := ev.next("question", "the page to open", nil)["question"].(map[string]any)
	if q["mode"] != "url" || q["host"] != "login.example.com" || q["url"] != "https://login.example.com/authorize?x=1" {
		t.Fatalf("the question: %s", js(q))
	}
	if res, body := r.do("POST", "/api/answer", map[string]any{"id": q["id"], "action": "accept"}, nil); res.StatusCode != 200 {
		t.Fatalf("accept: %d %s", res.StatusCode, body)
	}
	if body := <-called; !strings.Contains(body, `\"action\":\"accept\"`) {
		t.Errorf("signin's result: %s", body)
	}
}

// A web entry on an address other machines reach, without a token of its
// own, is refused where the key is, saying why and what to set.
func TestValidateListen(t *testing.T) {
	t.Parallel()
	if err := (&Plugin{Listen: "127.0.0.1:0"}).Validate(); err != nil {
		t.Fatalf("loopback: %v", err)
	}
	if err := (&Plugin{Listen: "0.0.0.0:8760", Token: "t0ken-value"}).Validate(); err != nil {
		t.Fatalf("with a token: %v", err)
	}
	err := (&Plugin{Listen: "0.0.0.0:8760"}).Validate()
	if err == nil || !strings.Contains(err.Error(), "other machines could drive the harness: a non-loopback address needs a token; set token: or listen on 127.0.0.1") {
		t.Fatalf("every interface without a token: %v", err)
	}
}

// The page's resources and prompts: the snapshot lists them (and says the
// page offers them), a read gives a resource's contents, a prompt its
// messages (a missing required argument is refused, naming it), and a
// reload that adds a server's resources and prompts sends both lists again.
func TestResourcesAndPrompts(t *testing.T) {
	r := newRig(t, echoEntry)
	r.signIn()
	ev := r.stream()
	snap := ev.next("snapshot", "the first message", nil)
	if f := js(snap["features"]); !strings.Contains(f, `"resources":true`) || !strings.Contains(f, `"prompts":true`) {
		t.Errorf("features: %s", f)
	}
	if res := js(snap["resources"]); !strings.Contains(res, `"server":"echo"`) || !strings.Contains(res, `"uri":"echo://about"`) || !strings.Contains(res, `"templates":[]`) {
		t.Errorf("the snapshot's resources: %s", res)
	}
	if pr := js(snap["prompts"]); !strings.Contains(pr, `"name":"repeat"`) || !strings.Contains(pr, `"required":true`) {
		t.Errorf("the snapshot's prompts: %s", pr)
	}

	res, body := r.do("POST", pathRead, map[string]string{"server": "echo", "uri": "echo://about"}, nil)
	if res.StatusCode != http.StatusOK || !strings.Contains(string(body), `"text":"The echo plugin registers the tools echo and clock`) {
		t.Fatalf("read: %d %s", res.StatusCode, body)
	}
	for _, c := range []struct {
		in     map[string]string
		status int
		want   string
	}{
		{map[string]string{"server": "nope", "uri": "echo://about"}, http.StatusNotFound, `no server \"nope\" offers resources`},
		{map[string]string{"server": "echo", "uri": "echo://other"}, http.StatusBadGateway, "not found"},
		{map[string]string{"server": "echo"}, http.StatusBadRequest, "needs a uri"},
	} {
		if res, body := r.do("POST", pathRead, c.in, nil); res.StatusCode != c.status || !strings.Contains(string(body), c.want) {
			t.Errorf("read %v: %d %s, want %d and %q", c.in, res.StatusCode, body, c.status, c.want)
		}
	}

	res, body = r.do("POST", pathPrompt, map[string]any{"name": "repeat", "arguments": map[string]string{"message": "hi"}}, nil)
	if res.StatusCode != http.StatusOK || !strings.Contains(string(body), `"role":"user"`) || !strings.Contains(string(body), `with the message \"hi\"`) {
		t.Fatalf("prompt: %d %s", res.StatusCode, body)
	}
	if res, body := r.do("POST", pathPrompt, map[string]any{"name": "repeat"}, nil); res.StatusCode != http.StatusBadRequest || !strings.Contains(string(body), `needs the argument \"message\"`) {
		t.Errorf("prompt without its argument: %d %s", res.StatusCode, body)
	}
	if res, _ := r.do("POST", pathPrompt, map[string]any{"name": "nope"}, nil); res.StatusCode != http.StatusNotFound {
		t.Errorf("an unknown prompt: %d", res.StatusCode)
	}
	// The values a prompt suggests for an argument (echo's repeat: messages).
	if pr := js(snap["prompts"]); !strings.Contains(pr, `"completes":true`) {
		t.Errorf("snapshot prompts without completes: %s", pr)
	}
	res, body = r.do("POST", pathSuggest, map[string]any{"name": "repeat", "argument": "message", "value": "hel"}, nil)
	if res.StatusCode != http.StatusOK || string(body) != `{"values":["hello","hello world"]}`+"\n" {
		t.Errorf("complete: %d %q", res.StatusCode, body)
	}
	if res, _ := r.do("POST", pathSuggest, map[string]any{"name": "nope", "argument": "x"}, nil); res.StatusCode != http.StatusNotFound {
		t.Errorf("complete of an unknown prompt: %d", res.StatusCode)
	}
	// A template's variable: none from a server that offers no completion
	// (echo; the browser test asks a server that does), an unknown server
	// is the page's 404.
	if res, body := r.do("POST", pathFill, map[string]any{"server": "echo", "uriTemplate": "echo://{x}", "argument": "x"}, nil); res.StatusCode != http.StatusOK || string(body) != `{"values":[]}`+"\n" {
		t.Errorf("complete of a template of echo: %d %q", res.StatusCode, body)
	}
	if res, _ := r.do("POST", pathFill, map[string]any{"server": "nope", "uriTemplate": "x://{x}", "argument": "x"}, nil); res.StatusCode != http.StatusNotFound {
		t.Errorf("complete of an unknown server's template: %d", res.StatusCode)
	}

	if err := r.h.Load(echoEntry + "- id: echo2\n  name: echo\n  config:\n    prefix: x_\n"); err != nil {
		t.Fatal(err)
	}
	ev.next("resources", "x_echo's resource", func(m map[string]any) bool { return strings.Contains(js(m["resources"]), `"server":"x_echo"`) })
	ev.next("prompts", "x_repeat", func(m map[string]any) bool { return strings.Contains(js(m["prompts"]), `"name":"x_repeat"`) })
}

// A login from the page: the POST answers the authorization URL while the
// login goes on, a second POST finds the same login, a pasted address
// reaches it, its end is a "login" message; one that fails before it has
// a URL is the POST's error. The entry's card offers it (actions).
func TestLogin(t *testing.T) {
	pasted := make(chan string, 1)
	login := func(ctx context.Context, id string, show func(string), paste io.Reader) error {
		switch id {
		case "echo2":
			return errors.New("the authorization server refused: nope")
		case "echo3":
			return nil // a machine client's grant: nobody asked
		}
		show("https://as.example/authorize?state=s1")
		line, err := bufio.NewReader(paste).ReadString('\n')
		if err != nil {
			return err
		}
		pasted <- strings.TrimSpace(line)
		return nil
	}
	r := newRigWith(t, echoEntry+"- id: echo2\n  name: echo\n  config:\n    prefix: x_\n- id: echo3\n  name: echo\n  config:\n    prefix: y_\n", login)
	r.signIn()
	ev := r.stream()
	if f := js(ev.next("snapshot", "the first message", nil)["features"]); !strings.Contains(f, `"login":true`) {
		t.Errorf("features: %s", f)
	}
	for range 2 {
		res, body := r.do("POST", pathLogin, map[string]string{"id": "echo"}, nil)
		if res.StatusCode != http.StatusOK || !strings.Contains(string(body), `"url":"https://as.example/authorize?state=s1"`) {
			t.Fatalf("login: %d %s", res.StatusCode, body)
		}
	}
	if res, body := r.do("POST", pathPaste, map[string]string{"id": "echo", "url": "http://127.0.0.1:1/callback?code=c&state=s1"}, nil); res.StatusCode != http.StatusOK {
		t.Fatalf("paste: %d %s", res.StatusCode, body)
	}
	if got := <-pasted; got != "http://127.0.0.1:1/callback?code=c&state=s1" {
		t.Errorf("the login read %q", got)
	}
	ev.next("login", "the login's end", func(m map[string]any) bool { return js(m["login"]) == `{"id":"echo","ok":true}` })
	if res, _ := r.do("POST", pathPaste, map[string]string{"id": "echo", "url": "x"}, nil); res.StatusCode != http.StatusNotFound {
		t.Errorf("a paste after the login ended: %d", res.StatusCode)
	}
	if res, body := r.do("POST", pathLogin, map[string]string{"id": "echo2"}, nil); res.StatusCode != http.StatusBadGateway || !strings.Contains(string(body), "refused: nope") {
		t.Errorf("a login that fails at once: %d %s", res.StatusCode, body)
	}
	if res, body := r.do("POST", pathLogin, map[string]string{"id": "echo3"}, nil); res.StatusCode != http.StatusOK || !strings.Contains(string(body), `"done":true`) {
		t.Errorf("a login that asks nobody: %d %s", res.StatusCode, body)
	}
	if res, _ := r.do("POST", pathLogin, map[string]string{"id": "nobody"}, nil); res.StatusCode != http.StatusNotFound {
		t.Errorf("the login of no entry: %d", res.StatusCode)
	}
	// Without a Login, the page cannot.
	plain := newRig(t, echoEntry)
	plain.signIn()
	if res, _ := plain.do("POST", pathLogin, map[string]string{"id": "echo"}, nil); res.StatusCode != http.StatusNotFound {
		t.Errorf("a login on a page without one: %d", res.StatusCode)
	}
}
