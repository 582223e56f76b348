//go:build unix

package faults

// Row 5: Streamable HTTP servers that answer 500, forget the session (404),
// answer slowly or drop the connection. A failed request is an error
// result (there is no connection to lose: the entry stays ready); a
// failure while connecting fails the entry with the reason; a failed
// re-listing is shown in status as the last sync error; a forgotten session
// is renewed, as the MCP specification asks.
//
// Elsewhere: TestHTTPFixtureFaults (plugins/mcpclient) in-process, with the
// renewed session and the cancellation a timed-out call sends.

import (
	"net"
	"strings"
	"testing"
	"time"

	"github.com/harness-go/harness/host"
	"github.com/harness-go/harness/internal/testkit/fixture"
)

func TestHTTPFaultsThroughTheBinary(t *testing.T) {
	t.Parallel()
	// callFails: a call through the binary is an error result naming the
	// fault; the entry was ready.
	callFails := func(t *testing.T, dir, tool string, want ...string) {
		t.Helper()
		r := oneShot(t, dir, nil, "call", tool, `{"message":"x"}`)
		if r.code != 1 || !strings.HasPrefix(r.stdout, "Error: ") {
			t.Errorf("want an error result and exit code 1\n%s", r)
		}
		for _, w := range want {
			if !strings.Contains(r.stdout, w) {
				t.Errorf("the error result does not say %q\n%s", w, r)
			}
		}
		if r.took > startOverhead+closeBound {
			t.Errorf("the call took %s", r.took)
		}
	}
	// statusFails: the entry is failed, the reason shown, the other entry
	// ready.
	statusFails := func(t *testing.T, dir, id string, want ...string) {
		t.Helper()
		r := oneShot(t, dir, nil, "status", "--json")
		st := parseStatus(t, r)
		if r.code != 1 || st[id].State != "failed" {
			t.Errorf("want %s failed and exit code 1\n%s", id, r)
		}
		for _, w := range want {
			if !strings.Contains(st[id].Error, w) {
				t.Errorf("%s's failure %q does not say %q", id, st[id].Error, w)
			}
		}
		for other, e := range st {
			if other != id && e.State != "ready" {
				t.Errorf("%s is %s: %s", other, e.State, e.Error)
			}
		}
		text := oneShot(t, dir, nil, "status")
		if !strings.Contains(text.stdout, id+"  mcp-client  failed: ") {
			t.Errorf("status does not show %s failed\n%s", id, text)
		}
	}
	echo := fixture.Options{Only: []string{"echo"}}
	withFault := func(f func(*fixture.Options)) fixture.Options {
		o := echo
		f(&o)
		return o
	}

	t.Run("500 while connecting", func(t *testing.T) {
		t.Parallel()
		url := httpFixture(t, withFault(func(o *fixture.Options) { o.HTTPFailEvery = 1 }))
		dir := t.TempDir()
		writeConfig(t, dir, cordis(stdioEnt("ok", "ok", "--only", "echo"), httpEnt("web", "web", url)))
		statusFails(t, dir, "web", "initialize", "500")
	})
	t.Run("500 on a call", func(t *testing.T) {
		t.Parallel()
		// POSTs: initialize, notifications/initialized, tools/list, then
		// the call: the fourth.
		url := httpFixture(t, withFault(func(o *fixture.Options) { o.HTTPFailEvery = 4 }))
		dir := t.TempDir()
		writeConfig(t, dir, cordis(httpEnt("web", "web", url)))
		callFails(t, dir, "mcp__web__echo", "500")
	})
	t.Run("slow responses", func(t *testing.T) {
		t.Parallel()
		url := httpFixture(t, withFault(func(o *fixture.Options) { o.HTTPDelayMs = 400 }))
		dir := t.TempDir()
		writeConfig(t, dir, cordis(
			httpEnt("web", "web", url).with("toolCallTimeoutMs", 200),
			httpEnt("slowstart", "slowstart", url).with("startupTimeoutMs", 300),
		))
		statusFails(t, dir, "slowstart", "startup timed out after 300ms (startupTimeoutMs)")
		callFails(t, dir, "mcp__web__echo", `"echo" timed out after 200ms (toolCallTimeoutMs)`)
	})
	t.Run("connection dropped on a call", func(t *testing.T) {
		t.Parallel()
		url := httpFixture(t, withFault(func(o *fixture.Options) { o.HTTPDropConnOn = "tools/call" }))
		dir := t.TempDir()
		writeConfig(t, dir, cordis(httpEnt("web", "web", url)))
		callFails(t, dir, "mcp__web__echo")
		if r := oneShot(t, dir, nil, "status"); r.code != 0 {
			t.Errorf("a dropped call does not fail the entry\n%s", r)
		}
	})
	t.Run("connection dropped while connecting", func(t *testing.T) {
		t.Parallel()
		url := httpFixture(t, withFault(func(o *fixture.Options) { o.HTTPDropConnOn = "initialize" }))
		dir := t.TempDir()
		writeConfig(t, dir, cordis(stdioEnt("ok", "ok", "--only", "echo"), httpEnt("web", "web", url)))
		statusFails(t, dir, "web", "initialize")
	})
	t.Run("no server", func(t *testing.T) {
		t.Parallel()
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		url := "http://" + l.Addr().String() + "/mcp"
		l.Close()
		dir := t.TempDir()
		writeConfig(t, dir, cordis(stdioEnt("ok", "ok", "--only", "echo"), httpEnt("web", "web", url)))
		statusFails(t, dir, "web", "connection refused")
	})
	t.Run("session gone (404)", func(t *testing.T) {
		t.Parallel()
		// The fixture forgets a session after 6 requests carrying it: the
		// calls below outlive two sessions.
		url := httpFixture(t, withFault(func(o *fixture.Options) { o.HTTPDropSessionAfter = 6 }))
		dir := t.TempDir()
		writeConfig(t, dir, cordis(httpEnt("web", "web", url)))
		s := start(t, harnessBin, dir, nil, "--log-level", "info")
		s.do("/tools")
		for range 12 {
			if got := s.do(`/call mcp__web__echo {"message":"again"}`); len(got) != 1 || got[0] != "echo: again" {
				t.Fatalf("a call across a lost session printed %q\n%s", got, s.dump())
			}
		}
		s.waitErr(0, "about the renewed session", has("the server ended the session; started a new one"))
		if got := strings.Join(s.do("/status"), "\n"); !strings.Contains(got, "web  mcp-client  ready") {
			t.Errorf("/status after the renewed sessions:\n%s", got)
		}
		s.send("/quit\n")
		s.waitExit()
	})
}

// A re-listing that fails (here a 500 on the tools/list that a
// list_changed asks for) keeps the previous tools and shows in status.
func TestHTTPSyncErrorShowsInStatus(t *testing.T) {
	t.Parallel()
	// POSTs: initialize, notifications/initialized, tools/list, the
	// set_tools call, then the re-listing: the fifth.
	url := httpFixture(t, fixture.Options{Only: []string{"echo", "set_tools"}, HTTPFailEvery: 5})
	w := newWorld(t)
	w.mustLoad(cordis(httpEnt("web", "web", url)))
	w.Settle(30 * time.Second)
	w.wantCall("mcp__web__set_tools", `{"add":["extra"]}`, "tools: 3")
	w.waitLog(30*time.Second, "re-sync failed", "entry=web")
	st := w.status("web")
	if !strings.Contains(st.SyncError, "500") {
		t.Errorf("status sync error %q, want the 500", st.SyncError)
	}
	if lines := strings.Join(st.StatusLines(), "\n"); !strings.Contains(lines, "last sync failed: ") {
		t.Errorf("status lines do not show the failed sync:\n%s", lines)
	}
	if got := w.Names("mcp__web__"); strings.Join(got, ",") != "mcp__web__echo,mcp__web__set_tools" {
		t.Errorf("tools after the failed re-listing: %q, want the previous ones", got)
	}
	if e := w.Entry("web"); e.State != host.Ready {
		t.Errorf("entry %s: %s", e.State, e.Error)
	}
	w.wantCall("mcp__web__echo", `{"message":"still"}`, "echo: still")
}
