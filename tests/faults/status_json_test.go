//go:build unix

package faults

// `status --json` through the binary while a server is down: the reconnect
// fields by their JSON names, as scripts read them. A third entry that
// hangs at start keeps the one-shot status from printing until the test
// has taken the servers down (and then it is killed, and fails).

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/harness-go/harness/internal/testkit/proctest"
)

func TestStatusJSONWhileAServerIsDown(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	downPIDs, backPIDs, holdPIDs := filepath.Join(dir, "pids-down"), filepath.Join(dir, "pids-back"), filepath.Join(dir, "pids-hold")
	marker := filepath.Join(dir, "crash-from-now-on")
	killLeftovers(t, downPIDs, backPIDs, holdPIDs)
	// down: after the first attempt fails, the next waits 2 s: long enough
	// for the status to print while nextTry is ahead.
	writeConfig(t, dir, cordis(
		stdioEnt("down", "down", "--only", "echo", "--pidfile", downPIDs, "--exit-if-exists", marker).
			with("reconnect", map[string]any{"initialDelayMs": 1000, "maxDelayMs": 60000, "maxAttempts": 7}),
		stdioEnt("back", "back", "--only", "echo", "--pidfile", backPIDs).
			with("reconnect", map[string]any{"initialDelayMs": 20, "maxDelayMs": 60000, "maxAttempts": 7}),
		stdioEnt("hold", "hold", "--only", "echo", "--pidfile", holdPIDs, "--hang-on", "initialize"),
	))
	s := start(t, harnessBin, dir, nil, "status", "--json", "--log-level", "info", "--wait", "2m")
	for _, id := range []string{"down", "back"} {
		s.waitErr(0, id+" ready", has(`msg="entry ready" entry=`+id+" "))
	}
	if err := os.WriteFile(marker, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	from := s.err.Len()
	for _, f := range []string{downPIDs, backPIDs} {
		if err := syscall.Kill(readPIDs(t, f)[0], syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
	}
	s.waitErr(from, "back ready again", has(`msg="entry ready" entry=back was=reconnecting`))
	s.waitErr(from, "down's first attempt failed", has(`entry=down`, "attempt 1/7 failed: ", "exited with status 4"))
	hold := readPIDs(t, holdPIDs)[0]
	if err := syscall.Kill(hold, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	if code := s.waitExit(); code != 1 {
		t.Fatalf("status --json: exit code %d, want 1 (an entry reconnecting, one failed)\n%s", code, s.dump())
	}

	var doc struct{ Entries []map[string]any }
	if err := json.Unmarshal([]byte(s.out.Text()), &doc); err != nil {
		t.Fatalf("status --json: %v\n%s", err, s.dump())
	}
	entries := map[string]map[string]any{}
	for _, e := range doc.Entries {
		id, _ := e["id"].(string)
		entries[id] = e
	}
	isTime := func(v any) bool {
		s, ok := v.(string)
		_, err := time.Parse(time.RFC3339Nano, s)
		return ok && err == nil
	}

	// down: reconnecting, the second attempt ahead; no connection now.
	down := entries["down"]
	if down["state"] != "reconnecting" || down["phase"] != "reconnecting" {
		t.Fatalf("down: state %v, phase %v\n%s", down["state"], down["phase"], s.dump())
	}
	if down["attempt"] != 2.0 || down["maxAttempts"] != 7.0 || down["reconnects"] != 0.0 {
		t.Errorf("down: attempt %v, maxAttempts %v, reconnects %v: want 2, 7, 0", down["attempt"], down["maxAttempts"], down["reconnects"])
	}
	if next, ok := down["nextTry"].(string); !ok || !isTime(next) {
		t.Errorf("down: nextTry %v, want a time", down["nextTry"])
	}
	if last, _ := down["lastError"].(string); !strings.Contains(last, "exited with status 4") || !strings.Contains(last, "(--exit-if-exists)") {
		t.Errorf("down: lastError %q, want the last attempt's failure", down["lastError"])
	}
	if _, ok := down["connectedSince"]; ok {
		t.Errorf("down: connectedSince %v while no server runs", down["connectedSince"])
	}

	// back: connected again after one reconnect; nothing of an attempt.
	back := entries["back"]
	if back["state"] != "ready" || back["reconnects"] != 1.0 || !isTime(back["connectedSince"]) {
		t.Errorf("back: state %v, reconnects %v, connectedSince %v: want ready, 1, a time", back["state"], back["reconnects"], back["connectedSince"])
	}
	for _, k := range []string{"attempt", "maxAttempts", "nextTry", "lastError"} {
		if v, ok := back[k]; ok {
			t.Errorf("back: %s %v once connected again", k, v)
		}
	}
	if hold := entries["hold"]; hold["state"] != "failed" {
		t.Errorf("hold: state %v, want failed", hold["state"])
	}
	// The one-shot status stopped every server it started.
	var pids []int
	for _, f := range []string{downPIDs, backPIDs} {
		pids = append(pids, proctest.ReadPIDs(t, f)...)
	}
	if alive := proctest.WaitDead(pids, closeBound); len(alive) > 0 {
		t.Errorf("servers left running: %s", proctest.Describe(alive))
	}
}
