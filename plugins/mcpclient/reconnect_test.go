package mcpclient

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/harness-go/harness/host"
	"github.com/harness-go/harness/internal/testkit/fixture"
	"github.com/harness-go/harness/internal/testkit/proctest"
)

// fast is a reconnect policy for tests: short waits, few attempts.
func fast(attempts int) map[string]any {
	return map[string]any{"reconnect": map[string]any{"initialDelayMs": 20, "maxDelayMs": 200, "maxAttempts": attempts}}
}

// pid returns the pid a fixture wrote last into its pid file.
func (hx *harness) pid(name string) int {
	hx.t.Helper()
	pids := proctest.ReadPIDs(hx.t, hx.pidFile(name))
	if len(pids) == 0 {
		hx.t.Fatalf("no pid in %s", hx.pidFile(name))
	}
	return pids[0]
}

// waitPID waits until the fixture's pid file names another process than
// old (it was started again).
func (hx *harness) waitPID(name string, old int) int {
	hx.t.Helper()
	var pid int
	hx.WaitEntry(name, waitTimeout, "a new server process", func(host.EntryStatus) bool {
		pids := proctest.ReadPIDs(hx.t, hx.pidFile(name))
		if len(pids) > 0 && pids[0] != old {
			pid = pids[0]
			return true
		}
		return false
	})
	return pid
}

// downServer runs entry a (serverName srv, tools echo and pid) with cfg,
// then takes its server down for good: a marker makes every later start
// exit at once (status 4), and the running one is killed. It returns the
// server arguments, for an edit that keeps them.
func (hx *harness) downServer(cfg map[string]any) []string {
	hx.t.Helper()
	marker := filepath.Join(hx.Dir, "down")
	args := []string{"--only", "echo,pid", "--exit-if-exists", marker}
	hx.mustLoad(yml(hx.stdio("a", "srv", cfg, args...)))
	if err := os.WriteFile(marker, nil, 0o644); err != nil {
		hx.t.Fatal(err)
	}
	kill(hx.pid("a"))
	return args
}

// A stdio server that dies mid-call: the call that was sent fails, and is
// never sent twice; the entry reconnects with its tools registered all
// along; a call made during the outage waits and succeeds once the server is
// back, within its own timeout.
func TestReconnectStdioKilledMidCall(t *testing.T) {
	t.Parallel()
	hx := newHarness(t)
	log := filepath.Join(hx.Dir, "received.log")
	cfg := fast(10)
	cfg["reconnect"].(map[string]any)["initialDelayMs"] = 300 // long enough to call during the outage
	cfg["reconnect"].(map[string]any)["maxDelayMs"] = 300
	hx.mustLoad(yml(hx.stdio("a", "srv", cfg, "--only", "echo,crash,pid", "--log", log)))
	old := hx.pid("a")

	res := hx.Call("mcp__srv__crash", `{"code":9,"stderr":"bye\n"}`)
	if !res.IsError || !strings.Contains(res.Text, "connection lost during the call: the server exited with status 9") {
		t.Fatalf("the call its server died in: %+v", res)
	}
	// The outage: the tools stay, and a call waits for the next connection.
	if _, ok := hx.Tools.Lookup("mcp__srv__echo"); !ok {
		t.Fatal("the tools went with the connection")
	}
	start := time.Now()
	hx.wantCall("mcp__srv__echo", `{"message":"during the outage"}`, "echo: during the outage", false)
	if waited := time.Since(start); waited < 100*time.Millisecond {
		t.Errorf("the call answered after %s: it did not wait for the reconnect", waited)
	}
	if pid := hx.pid("a"); pid == old {
		t.Fatalf("still pid %d: the server was not started again", pid)
	}
	data, err := os.ReadFile(log)
	if err != nil {
		t.Fatal(err)
	}
	// Two calls reached a server: the crash (once, never again) and the echo.
	if n := strings.Count(string(data), `"method":"tools/call"`); n != 2 {
		t.Fatalf("the servers received %d tools/call, want 2 (the call that killed one was sent again?):\n%s", n, data)
	}
	hx.waitState("a", host.Ready)
}

// A call that waits for a server that does not come back within the call's
// timeout fails naming the outage and the attempt.
func TestReconnectCallTimesOutNamingTheOutage(t *testing.T) {
	t.Parallel()
	hx := newHarness(t)
	hx.downServer(map[string]any{"toolCallTimeoutMs": 300, "reconnect": map[string]any{"initialDelayMs": 20, "maxDelayMs": 20, "maxAttempts": 1000}})
	hx.waitState("a", host.Reconnecting)
	res := hx.Call("mcp__srv__echo", `{"message":"x"}`)
	if !res.IsError || !strings.HasPrefix(res.Text, "Error: server srv is reconnecting (attempt ") || !strings.Contains(res.Text, "/1000): ") {
		t.Fatalf("a call during the outage: %+v", res)
	}
}

// A server that crashes at every start after its first: the supervisor
// gives up after maxAttempts, the tools go, the entry fails with the last
// error; nothing is left running.
func TestReconnectGivesUp(t *testing.T) {
	t.Parallel()
	hx := newHarness(t)
	hx.downServer(fast(3))
	e := hx.waitState("a", host.Failed)
	for _, want := range []string{"gave up reconnecting after 3 attempts", "exited with status 4", "--exit-if-exists"} {
		if !strings.Contains(e.Error, want) {
			t.Errorf("failure %q does not say %q", e.Error, want)
		}
	}
	if names := hx.Tools.Names(); len(names) != 0 {
		t.Fatalf("tools left after giving up: %q", names)
	}
	if st := hx.status("a"); st.Reconnects != 0 || st.Phase != "failed" {
		t.Fatalf("status after giving up: %+v", st)
	}
}

// With the defaults a server that goes away is reconnected; status shows
// the outage while it lasts (text and JSON fields).
func TestReconnectStatus(t *testing.T) {
	t.Parallel()
	hx := newHarness(t)
	hx.downServer(map[string]any{"reconnect": map[string]any{"initialDelayMs": 50, "maxDelayMs": 50, "maxAttempts": 1000}})
	hx.WaitEntry("a", waitTimeout, "a failed attempt", func(e host.EntryStatus) bool {
		st, _ := e.Details.(*Status)
		return e.State == host.Reconnecting && st != nil && st.Attempt >= 2
	})
	e := hx.Entry("a")
	st := hx.status("a")
	if !e.Settled || !strings.Contains(e.Error, "attempt ") || !strings.Contains(e.Error, "/1000 failed: ") || st.MaxAttempts != 1000 ||
		!strings.Contains(st.LastError, "exited with status 4") || st.ToolCount != 2 {
		t.Fatalf("entry %+v\nstatus %+v", e, st)
	}
	lines := strings.Join(st.StatusLines(), "\n")
	if !strings.Contains(lines, "reconnecting: attempt ") || !strings.Contains(lines, "of 1000") || !strings.Contains(lines, "last error: ") {
		t.Fatalf("status lines:\n%s", lines)
	}
	// The server can start again: the next attempt succeeds.
	if err := os.Remove(filepath.Join(hx.Dir, "down")); err != nil {
		t.Fatal(err)
	}
	hx.waitState("a", host.Ready)
	st = hx.status("a")
	if st.Reconnects != 1 || st.Attempt != 0 || st.ConnectedSince == nil || st.LastError != "" {
		t.Fatalf("status after reconnecting: %+v", st)
	}
	hx.wantCall("mcp__srv__echo", `{"message":"back"}`, "echo: back", false)
}

// crashAndReconnect kills entry id's server and waits until a new one
// runs and the entry is ready again, its n-th reconnect.
func (hx *harness) crashAndReconnect(id string, n int) {
	hx.t.Helper()
	old := hx.pid(id)
	kill(old)
	hx.waitPID(id, old)
	hx.WaitEntry(id, waitTimeout, fmt.Sprintf("reconnect %d", n), func(e host.EntryStatus) bool {
		st, _ := e.Details.(*Status)
		return e.State == host.Ready && st != nil && st.Reconnects == n
	})
}

// A connection that stays up reconnect.maxDelayMs starts the count again:
// a server that crashes now and then never exhausts its attempts.
func TestReconnectCountStartsAgain(t *testing.T) {
	t.Parallel()
	hx := newHarness(t)
	cfg := map[string]any{"reconnect": map[string]any{"initialDelayMs": 1, "maxDelayMs": 1, "maxAttempts": 1}}
	hx.mustLoad(yml(hx.stdio("a", "srv", cfg, "--only", "echo,pid")))
	for i := 1; i <= 5; i++ {
		hx.crashAndReconnect("a", i)
		hx.wantCall("mcp__srv__echo", `{"message":"x"}`, "echo: x", false)
	}
}

// A server that crashes soon after every start is given up on: a
// connection that comes up does not start the count again unless it stays
// up maxDelayMs (docs/rfc/0003-mcp-client.md, "Connections that survive",
// step 3).
func TestReconnectCrashLoopGivesUp(t *testing.T) {
	t.Parallel()
	hx := newHarness(t)
	cfg := map[string]any{"reconnect": map[string]any{"initialDelayMs": 1, "maxDelayMs": 60000, "maxAttempts": 3}}
	hx.mustLoad(yml(hx.stdio("a", "srv", cfg, "--only", "echo,pid")))
	for i := 1; i <= 3; i++ {
		hx.crashAndReconnect("a", i)
	}
	kill(hx.pid("a"))
	e := hx.waitState("a", host.Failed)
	if !strings.Contains(e.Error, "gave up reconnecting after 3 attempts") {
		t.Fatalf("failure %q", e.Error)
	}
	if st := hx.status("a"); st.Attempt != 0 || st.PID != 0 || st.Phase != "failed" {
		t.Fatalf("status after giving up shows an attempt or a pid: %+v", st)
	}
}

// A live edit of the reconnect policy during an outage starts the count of
// attempts again, with the new policy.
func TestReconnectEditStartsTheCountAgain(t *testing.T) {
	t.Parallel()
	hx := newHarness(t)
	args := hx.downServer(map[string]any{"reconnect": map[string]any{"initialDelayMs": 20, "maxDelayMs": 20, "maxAttempts": 1000}})
	hx.WaitEntry("a", waitTimeout, "three failed attempts", func(e host.EntryStatus) bool {
		st, _ := e.Details.(*Status)
		return e.State == host.Reconnecting && st != nil && st.Attempt >= 3
	})
	// Counted on, the attempts would say 4/5, then give up.
	other := map[string]any{"reconnect": map[string]any{"initialDelayMs": 20, "maxDelayMs": 20, "maxAttempts": 5}}
	hx.mustLoad(yml(hx.stdio("a", "srv", other, args...)))
	hx.WaitEntry("a", waitTimeout, "attempt 1 of 5 failed", func(e host.EntryStatus) bool {
		return e.State == host.Reconnecting && strings.Contains(e.Error, "attempt 1/5 failed")
	})
}

// An edit while the server is down starts a successor beside the instance
// that reconnects: the attempts hold while it starts (the edit supersedes
// them). When it fails, the old instance's retries end too
// (docs/rfc/0003-mcp-client.md, "Make before break and live settings":
// they were for the configuration the edit replaced), and the entry fails
// with the successor's error.
func TestReconnectHoldsWhileASuccessorStarts(t *testing.T) {
	t.Parallel()
	hx := newHarness(t)
	cfg := map[string]any{"reconnect": map[string]any{"initialDelayMs": 20, "maxDelayMs": 20, "maxAttempts": 100000}}
	hx.downServer(cfg)
	attempt := func(e host.EntryStatus) int {
		if st, _ := e.Details.(*Status); st != nil {
			return st.Attempt
		}
		return 0
	}
	before := attempt(hx.WaitEntry("a", waitTimeout, "two failed attempts", func(e host.EntryStatus) bool { return attempt(e) >= 2 }))
	sub := hx.H.Subscribe()
	defer sub.Close()
	// A successor that never answers initialize, for 600 ms: unheld, the
	// attempts (one each 20 ms and a spawn) would go on meanwhile.
	hang := map[string]any{"startupTimeoutMs": 600, "reconnect": cfg["reconnect"]}
	hx.mustLoad(yml(hx.stdio("a", "srv", hang, "--only", "echo,pid", "--hang-on", "initialize")))
	last := before
	for ev := range sub.C {
		if ev.Entry != "a" || ev.Type != host.EntryChanged {
			continue
		}
		var n int
		if _, err := fmt.Sscanf(ev.Reason(), "attempt %d/", &n); err == nil {
			last = max(last, n)
		}
		if ev.State == host.Failed {
			if !strings.Contains(ev.Reason(), "startup timed out after 600ms") {
				t.Fatalf("the entry failed with %q, want the successor's error", ev.Reason())
			}
			break
		}
	}
	if last > before+3 {
		t.Fatalf("attempts went from %d to %d while the successor started: they were not held", before, last)
	}
	if e := hx.Entry("a"); e.State != host.Failed || strings.Contains(e.Note, "still serving") {
		t.Fatalf("after the failed edit: %+v", e)
	}
}

// reconnect.enabled turned off by a live edit during an outage: the
// attempts stop, and the entry fails.
func TestReconnectTurnedOffDuringAnOutage(t *testing.T) {
	t.Parallel()
	hx := newHarness(t)
	args := hx.downServer(map[string]any{"reconnect": map[string]any{"initialDelayMs": 20, "maxDelayMs": 20, "maxAttempts": 100000}})
	hx.waitState("a", host.Reconnecting)
	off := map[string]any{"reconnect": map[string]any{"enabled": false, "initialDelayMs": 20, "maxDelayMs": 20, "maxAttempts": 100000}}
	hx.mustLoad(yml(hx.stdio("a", "srv", off, args...)))
	e := hx.waitState("a", host.Failed)
	if !strings.Contains(e.Error, "reconnecting was turned off") {
		t.Fatalf("failure %q", e.Error)
	}
}

// A Streamable HTTP server stopped and started again on the same port is
// used again without anyone doing anything; its tools stay the same.
func TestReconnectHTTPServerRestarted(t *testing.T) {
	t.Parallel()
	// Both protocols: the handshake era's GET stream and the stateless
	// protocol's subscriptions/listen stream show the server's death.
	for _, protocol := range []string{ProtocolLegacy, ProtocolModern} {
		t.Run(protocol, func(t *testing.T) {
			t.Parallel()
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			addr := ln.Addr().String()
			serve := func(ln net.Listener) *http.Server {
				srv := &http.Server{Handler: fixture.HTTPHandler(fixture.Options{Only: []string{"echo", "pid"}, Stderr: io.Discard})}
				go func() { _ = srv.Serve(ln) }()
				return srv
			}
			srv := serve(ln)
			hx := newHarness(t)
			cfg := fast(50)
			cfg["protocol"] = protocol
			hx.mustLoad(yml(httpEntry("w", "web", "http://"+addr+"/mcp", cfg)))
			hx.wantCall("mcp__web__echo", `{"message":"before"}`, "echo: before", false)
			before := hx.Tools.ModelJSON()

			_ = srv.Close() // the listening stream breaks; the port refuses
			hx.waitState("w", host.Reconnecting)
			ln2, err := net.Listen("tcp", addr)
			if err != nil {
				t.Fatalf("the port is taken: %v", err)
			}
			srv2 := serve(ln2)
			t.Cleanup(func() { _ = srv2.Close() })
			hx.waitState("w", host.Ready)
			hx.wantCall("mcp__web__echo", `{"message":"after"}`, "echo: after", false)
			if after := hx.Tools.ModelJSON(); string(after) != string(before) {
				t.Fatalf("the tools changed:\n%s\n%s", before, after)
			}
			if st := hx.status("w"); st.Reconnects != 1 {
				t.Fatalf("reconnects %d", st.Reconnects)
			}
		})
	}
}

// With reconnect disabled, an HTTP server that dies fails its entry and
// takes its tools (v1's behaviour, now noticed).
func TestReconnectDisabledHTTP(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: fixture.HTTPHandler(fixture.Options{Only: []string{"echo"}, Stderr: io.Discard})}
	go func() { _ = srv.Serve(ln) }()
	hx := newHarness(t)
	hx.mustLoad(yml(httpEntry("w", "web", "http://"+ln.Addr().String()+"/mcp", map[string]any{"reconnect": map[string]any{"enabled": false}})))
	_ = srv.Close()
	e := hx.waitState("w", host.Failed)
	if !strings.Contains(e.Error, "connection lost") {
		t.Fatalf("failure %q", e.Error)
	}
	if names := hx.Tools.Names(); len(names) != 0 {
		t.Fatalf("tools left: %q", names)
	}
}
