package mcpclient

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/harness-go/harness/host"
	"github.com/harness-go/harness/internal/testkit/fixture"
	"github.com/harness-go/harness/internal/testkit/testlog"
	"github.com/harness-go/harness/plugins/tools"
)

// recordingFront is a tools.Front that answers from a script and keeps what
// it was asked and told.
type recordingFront struct {
	offers tools.Offers
	answer func(q tools.Question) (json.RawMessage, error)

	mu        sync.Mutex
	questions []tools.Question
	notes     []tools.Notification
}

func (f *recordingFront) Ask(_ context.Context, q tools.Question) (json.RawMessage, error) {
	f.mu.Lock()
	f.questions = append(f.questions, q)
	f.mu.Unlock()
	if f.answer == nil {
		return tools.Declined(), nil
	}
	return f.answer(q)
}

func (f *recordingFront) Notify(_ context.Context, n tools.Notification) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.notes = append(f.notes, n)
}

func (f *recordingFront) Offers() tools.Offers { return f.offers }

func (f *recordingFront) asked() []tools.Question {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]tools.Question(nil), f.questions...)
}

func (f *recordingFront) told() []tools.Notification {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]tools.Notification(nil), f.notes...)
}

// callWith calls a tool with f as the call's front.
func (hx *harness) callWith(f tools.Front, name, args string) tools.Result {
	hx.t.Helper()
	return hx.Tools.Execute(tools.WithFront(context.Background(), f), name, json.RawMessage(args))
}

// wire is one way of reaching a fixture: a transport and a revision.
type wire struct {
	name, protocol string
	http           bool
}

var wires = []wire{
	{"stdio 2025-11-25", ProtocolLegacy, false},
	{"stdio 2026-07-28", ProtocolModern, false},
	{"http 2025-11-25", ProtocolLegacy, true},
	{"http 2026-07-28", ProtocolModern, true},
}

// entry returns the configuration of a fixture with opts on w, with extra
// keys of config.
func (hx *harness) entry(w wire, id, server string, opts fixture.Options, args []string, config map[string]any) cfg {
	hx.t.Helper()
	c := map[string]any{"protocol": w.protocol}
	for k, v := range config {
		c[k] = v
	}
	if w.http {
		return httpEntry(id, server, hx.httpFixture(opts), c)
	}
	return hx.stdio(id, server, c, args...)
}

// httpFixture serves a fixture over Streamable HTTP until the host has
// closed (its streams end first) and returns its URL.
func (hx *harness) httpFixture(opts fixture.Options) string {
	hx.t.Helper()
	_, rec := testlog.New(hx.t)
	opts.Stderr = rec
	srv := httptest.NewServer(fixture.HTTPHandler(opts))
	hx.AfterClose(srv.Close)
	return srv.URL + fixture.HTTPPath
}

// A server that pings its client before every answer works: every request
// it pings about gets its answer, on both transports and both revisions.
func TestServerPingsBeforeEveryAnswer(t *testing.T) {
	t.Parallel()
	for _, w := range wires {
		t.Run(w.name, func(t *testing.T) {
			t.Parallel()
			hx := newHarness(t)
			hx.mustLoad(yml(hx.entry(w, "p", "srv", fixture.Options{PingFirst: true, Only: []string{"echo"}}, []string{"--ping-first", "--only", "echo"}, nil)))
			hx.wantState("p", host.Ready)
			hx.wantCall("mcp__srv__echo", `{"message":"hi"}`, "echo: hi", false)
			res := hx.Call("mcp__srv__pings", `{}`)
			var n int
			if _, err := fmt.Sscan(res.Text, &n); err != nil || n < 2 { // tools/list, tools/call
				t.Fatalf("pings answered: %+v", res)
			}
		})
	}
}

// roots/list is answered with the entry's roots (paths made file:// URIs,
// relative to cordis.yml's folder); without roots the capability is not
// declared (2025-11-25: the request gets -32601; 2026-07-28: the list is
// empty).
func TestRoots(t *testing.T) {
	t.Parallel()
	for _, w := range wires {
		t.Run(w.name, func(t *testing.T) {
			t.Parallel()
			hx := newHarness(t)
			roots := []any{"work", "file:///srv/data"}
			hx.mustLoad(yml(
				hx.entry(w, "r", "srv", fixture.Options{Ask: true}, []string{"--ask"}, map[string]any{"roots": roots}),
				hx.entry(w, "n", "none", fixture.Options{Ask: true}, []string{"--ask"}, nil),
			))
			want := fmt.Sprintf(`roots: {"roots":[{"uri":"file://%s"},{"uri":"file:///srv/data"}]}`, filepath.ToSlash(filepath.Join(hx.Dir, "work")))
			hx.wantCall("mcp__srv__roots", `{}`, want, false)
			res := hx.Call("mcp__none__roots", `{}`)
			if w.protocol == ProtocolModern {
				if res.Text != `roots: {"roots":[]}` || res.IsError {
					t.Fatalf("no roots, 2026-07-28: %+v", res)
				}
			} else if !res.IsError || !strings.Contains(res.Text, "-32601") {
				t.Fatalf("no roots, 2025-11-25: %+v", res)
			}
		})
	}
}

// An elicitation goes to the front of the call it belongs to, with the
// server's name, the public tool name and the server's params; without a
// front it is declined.
func TestElicitationGoesToTheCallsFront(t *testing.T) {
	t.Parallel()
	for _, w := range wires {
		t.Run(w.name, func(t *testing.T) {
			t.Parallel()
			hx := newHarness(t)
			hx.mustLoad(yml(hx.entry(w, "e", "srv", fixture.Options{Ask: true}, []string{"--ask"}, nil)))
			front := &recordingFront{offers: tools.Offers{Elicitation: true, ElicitationURL: true},
				answer: func(q tools.Question) (json.RawMessage, error) {
					return json.RawMessage(`{"action":"accept","content":{"name":"Bo","age":7}}`), nil
				}}
			res := hx.callWith(front, "mcp__srv__elicit", `{}`)
			if res.IsError || res.Text != `elicit: {"action":"accept","content":{"age":7,"name":"Bo"}}` {
				t.Fatalf("form: %+v", res)
			}
			qs := front.asked()
			if len(qs) != 1 || qs[0].Server != "srv" || qs[0].Tool != "mcp__srv__elicit" || qs[0].Method != tools.MethodElicit ||
				!strings.Contains(string(qs[0].Params), `"requestedSchema"`) {
				t.Fatalf("questions %+v", qs)
			}
			res = hx.callWith(front, "mcp__srv__elicit", `{"mode":"url"}`)
			if res.IsError || !strings.Contains(string(front.asked()[1].Params), fixture.ElicitURL) {
				t.Fatalf("url: %+v, %+v", res, front.asked())
			}
			// No front: a decline, never a timeout.
			hx.wantCall("mcp__srv__elicit", `{}`, `elicit: {"action":"decline"}`, false)
		})
	}
}

// Sampling is answered by a front that offers it; without one the server
// is told no one answers (2025-11-25: -32601; 2026-07-28: the call fails,
// saying so).
func TestSampling(t *testing.T) {
	t.Parallel()
	for _, w := range wires {
		t.Run(w.name, func(t *testing.T) {
			t.Parallel()
			hx := newHarness(t)
			hx.mustLoad(yml(hx.entry(w, "s", "srv", fixture.Options{Ask: true}, []string{"--ask"}, nil)))
			front := &recordingFront{offers: tools.Offers{Sampling: true},
				answer: func(q tools.Question) (json.RawMessage, error) {
					return json.RawMessage(`{"role":"assistant","content":{"type":"text","text":"forty-two"},"model":"m"}`), nil
				}}
			res := hx.callWith(front, "mcp__srv__sample", `{"prompt":"six times seven"}`)
			if res.IsError || !strings.Contains(res.Text, "forty-two") {
				t.Fatalf("with a front: %+v", res)
			}
			if qs := front.asked(); len(qs) != 1 || qs[0].Method != tools.MethodSample || !strings.Contains(string(qs[0].Params), "six times seven") {
				t.Fatalf("questions %+v", qs)
			}
			res = hx.Call("mcp__srv__sample", `{"prompt":"x"}`)
			if !res.IsError || !(strings.Contains(res.Text, "-32601") || strings.Contains(res.Text, "no one here answers sampling")) {
				t.Fatalf("without a front: %+v", res)
			}
		})
	}
}

// Progress of a call goes to its front, with our progressToken; a call
// without a front, or whose front shows no progress, sends none. A server's log message goes to our log at its
// level, and to the front of the call it came with.
func TestProgressAndLogMessages(t *testing.T) {
	t.Parallel()
	for _, w := range wires {
		t.Run(w.name, func(t *testing.T) {
			t.Parallel()
			hx := newHarness(t)
			hx.mustLoad(yml(hx.entry(w, "g", "srv", fixture.Options{Ask: true}, []string{"--ask"}, nil)))
			front := &recordingFront{offers: tools.Offers{Progress: true}}
			if res := hx.callWith(front, "mcp__srv__progress", `{"steps":3}`); res.Text != "progress: sent 3" {
				t.Fatalf("progress: %+v", res)
			}
			var steps []string
			for _, n := range front.told() {
				if n.Method == tools.MethodProgress && n.Server == "srv" && n.Tool == "mcp__srv__progress" {
					steps = append(steps, string(n.Params))
				}
			}
			if len(steps) != 3 || !strings.Contains(steps[2], `"progress":3`) {
				t.Fatalf("progress notifications %q", steps)
			}
			hx.wantCall("mcp__srv__progress", `{"steps":3}`, "progress: no progressToken", false)
			if res := hx.callWith(&recordingFront{}, "mcp__srv__progress", `{"steps":3}`); res.Text != "progress: no progressToken" {
				t.Fatalf("a front that shows no progress: %+v", res)
			}

			if res := hx.callWith(front, "mcp__srv__log", `{"level":"warning","message":"disk almost full"}`); res.Text != "logged" {
				t.Fatalf("log: %+v", res)
			}
			recs := hx.Logs.Wait(t, waitTimeout, "the server's log message", 1, msg("g", "server log message"))
			if recs[0].Level != slog.LevelWarn || recs[0].Attrs["data"] != "disk almost full" || recs[0].Attrs["logger"] != "fixture" {
				t.Fatalf("log record %+v", recs[0])
			}
			var logs int
			for _, n := range front.told() {
				if n.Method == tools.MethodLog && strings.Contains(string(n.Params), "disk almost full") {
					logs++
				}
			}
			if logs != 1 {
				t.Fatalf("the front was told %d log messages: %+v", logs, front.told())
			}
		})
	}
}

// A request of the server's that we do not know gets -32601, and ping gets
// {}: never silence.
func TestServerRequestsAnswered(t *testing.T) {
	t.Parallel()
	s := &session{log: slog.New(slog.DiscardHandler), opts: sessionOptions{server: "srv"}, calls: map[string]*callInfo{}}
	for method, want := range map[string]string{
		"ping":                   `{}`,
		"tasks/get":              `-32601 method "tasks/get" is not supported`,
		"roots/list":             `-32601 roots/list: this client declares no roots`,
		"elicitation/create":     `{"action":"decline"}`,
		"sampling/createMessage": `-32601 sampling/createMessage: no call in flight to ask about`,
	} {
		res, werr := s.answer(context.Background(), &inMsg{ID: json.RawMessage(`1`), Method: method})
		got := string(res)
		if werr != nil {
			got = fmt.Sprintf("%d %s", werr.Code, werr.Message)
		}
		if got != want {
			t.Errorf("%s: %s, want %s", method, got, want)
		}
	}
}
