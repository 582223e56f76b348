//go:build unix

package faults

// Row 2: a server that never answers initialize (or its first tools/list)
// fails after its startup timeout — startupTimeoutMs per entry, 30 s by
// default — with the reason; the other entries are unaffected, and one-shot
// commands return within --wait (plus the close bound) whatever the hung
// servers do, those that ignore SIGTERM included.
//
// Elsewhere: TestStdioStartupFailures (plugins/mcpclient) pins the message
// of each startup timeout; TestWaitZero and
// TestCallDoesNotBlameEntriesStillStarting (tests/e2e) cover --wait 0 and a
// call that needs no hung entry.

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/harness-go/harness/internal/testkit/proctest"
	"github.com/harness-go/harness/plugins/mcpclient"
)

// closeBound bounds the disposal of one stdio server, whatever it does:
// stdin closed, 1 s, SIGTERM to its process group, 2 s, SIGKILL — plus
// slack for a loaded machine.
const closeBound = 5 * time.Second

// startOverhead bounds starting the (race-enabled) harness and its servers.
const startOverhead = 3 * time.Second

// entryStatus is the part of an entry of `harness status --json` the tests
// read.
type entryStatus struct {
	ID        string            `json:"id"`
	State     string            `json:"state"`
	Settled   bool              `json:"settled"`
	Error     string            `json:"error"`
	ToolCount int               `json:"toolCount"`
	SyncError string            `json:"syncError"`
	Stderr    []string          `json:"stderr"`
	Env       map[string]string `json:"env"`
	Headers   map[string]string `json:"headers"`
}

// parseStatus reads `harness status --json`: the entries by id.
func parseStatus(t *testing.T, r result) map[string]entryStatus {
	t.Helper()
	var doc struct {
		Entries []entryStatus `json:"entries"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &doc); err != nil {
		t.Fatalf("status --json does not parse: %v\n%s", err, r)
	}
	out := map[string]entryStatus{}
	for _, e := range doc.Entries {
		out[e.ID] = e
	}
	return out
}

func TestStartupTimeout(t *testing.T) {
	t.Parallel()
	if d := mcpclient.DefaultStartupTimeout; d != 30*time.Second {
		t.Errorf("the default startup timeout is %s; docs/RELIABILITY.md says 30s", d)
	}
	dir := t.TempDir()
	pids := func(name string) string {
		p := filepath.Join(dir, "pids-"+name)
		killLeftovers(t, p)
		return p
	}
	servers := []string{"ok", "hung", "stubborn", "short", "slowlist"}
	writeConfig(t, dir, "- {id: echo, name: echo}\n"+cordis(
		stdioEnt("ok", "ok", "--only", "echo", "--pidfile", pids("ok")),
		// The default timeout (30 s) is longer than any --wait below.
		stdioEnt("hung", "hung", "--only", "echo", "--hang-on", "initialize", "--pidfile", pids("hung")),
		// Hung, and it ignores stdin closing and SIGTERM, with a grandchild
		// that ignores SIGTERM too.
		stdioEnt("stubborn", "stubborn", "--only", "echo", "--hang-on", "initialize", "--ignore-sigterm", "--grandchild", "--pidfile", pids("stubborn")),
		stdioEnt("short", "short", "--only", "echo", "--hang-on", "initialize", "--pidfile", pids("short")).with("startupTimeoutMs", 500),
		stdioEnt("slowlist", "slowlist", "--only", "echo", "--hang-on", "tools/list", "--pidfile", pids("slowlist")).with("startupTimeoutMs", 500),
	))
	allGone := func(r result) {
		t.Helper()
		var all []int
		for _, s := range servers {
			all = append(all, readPIDs(t, filepath.Join(dir, "pids-"+s))...)
		}
		// The harness has exited: nothing it started may still run.
		if alive := proctest.WaitDead(all, time.Second); len(alive) > 0 {
			t.Errorf("after `harness %s` exited, processes it started still run: %s", strings.Join(r.args, " "), proctest.Describe(alive))
		}
	}

	const wait = 2 * time.Second
	bound := wait + startOverhead + closeBound

	r := oneShot(t, dir, nil, "status", "--json", "--wait", wait.String())
	if r.code != 1 || r.took > bound {
		t.Errorf("status: exit code %d after %s; want 1 within %s\n%s", r.code, r.took, bound, r)
	}
	st := parseStatus(t, r)
	if e := st["ok"]; e.State != "ready" || e.ToolCount != 1 {
		t.Errorf("the healthy entry: %+v\n%s", e, r)
	}
	if e := st["echo"]; e.State != "ready" {
		t.Errorf("the native entry: %+v", e)
	}
	for _, id := range []string{"hung", "stubborn"} {
		if e := st[id]; e.State != "starting" || e.Settled {
			t.Errorf("%s (default startup timeout): %+v, want starting, not settled", id, e)
		}
	}
	for _, id := range []string{"short", "slowlist"} {
		if e := st[id]; e.State != "failed" || !strings.Contains(e.Error, "startup timed out after 500ms (startupTimeoutMs)") {
			t.Errorf("%s: %+v, want failed: startup timed out after 500ms (startupTimeoutMs)", id, e)
		}
	}
	allGone(r)

	r = oneShot(t, dir, nil, "tools", "--wait", wait.String())
	if r.code != 1 || r.took > bound {
		t.Errorf("tools: exit code %d after %s; want 1 within %s\n%s", r.code, r.took, bound, r)
	}
	if want := "clock  Tell the current date and time.\necho  Echo a message back unchanged.\nmcp__ok__echo  Echo a message back.\n"; r.stdout != want {
		t.Errorf("tools printed %q, want %q", r.stdout, want)
	}
	for _, want := range []string{`"hung" is still starting after --wait 2s`, `"stubborn" is still starting`, `"short" failed`, `"slowlist" failed`} {
		if !strings.Contains(r.stderr, want) {
			t.Errorf("tools: stderr does not report %s\n%s", want, r)
		}
	}
	allGone(r)

	// A call needs only its own server: it neither waits for the hung
	// ones nor blames them.
	callDir := t.TempDir()
	writeConfig(t, callDir, cordis(
		stdioEnt("ok", "ok", "--only", "echo", "--pidfile", pids("ok")),
		stdioEnt("hung", "hung", "--only", "echo", "--hang-on", "initialize", "--pidfile", pids("hung")),
		stdioEnt("stubborn", "stubborn", "--only", "echo", "--hang-on", "initialize", "--ignore-sigterm", "--grandchild", "--pidfile", pids("stubborn")),
	))
	r = oneShot(t, callDir, nil, "call", "mcp__ok__echo", `{"message":"through"}`, "--wait", "60s")
	if r.code != 0 || r.stdout != "echo: through\n" || r.took > startOverhead+closeBound {
		t.Errorf("call: exit code %d after %s, stdout %q; want 0 and \"echo: through\" within %s\n%s", r.code, r.took, r.stdout, startOverhead+closeBound, r)
	}
	var all []int
	for _, s := range []string{"ok", "hung", "stubborn"} {
		all = append(all, readPIDs(t, pids(s))...)
	}
	if alive := proctest.WaitDead(all, time.Second); len(alive) > 0 {
		t.Errorf("after the call, processes the harness started still run: %s", proctest.Describe(alive))
	}
}
