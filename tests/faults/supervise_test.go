//go:build unix

package faults

// Rows 11c and 12b through the binary, as a person at the console sees them:
// the supervisor gives up on a server that crashes at every start, and on
// one that comes up and crashes soon after, again and again; a new instance
// that hangs at start never takes the old one down. (plugins/mcpclient has
// the unit tests: TestReconnectGivesUp, TestReconnectCrashLoopGivesUp,
// TestMakeBeforeBreakNewInstanceHangs.)

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/harness-go/harness/internal/testkit/proctest"
)

// either matches a line that any of the matchers matches.
func either(ms ...func(string) bool) func(string) bool {
	return func(s string) bool {
		for _, m := range ms {
			if m(s) {
				return true
			}
		}
		return false
	}
}

// quit ends a console session with /quit and checks that no fixture
// process whose command line mentions dir is left running.
func quit(t *testing.T, s *session, dir string) {
	t.Helper()
	s.send("/quit\n")
	if code := s.waitExit(); code != 0 {
		t.Fatalf("/quit: exit code %d\n%s", code, s.dump())
	}
	if left := proctest.WaitMentioning(t, dir, 0, closeBound); len(left) > 0 {
		t.Fatalf("processes left after /quit: %s", proctest.Describe(left))
	}
}

// Row 11c: a stdio server that crashes at every start after its first. The
// supervisor tries maxAttempts times, then gives up: the entry fails with
// the last attempt's exit status and stderr, /status shows no attempt any
// more, the tools are gone, and /quit leaves nothing.
func TestServerCrashingAtEveryStartIsGivenUp(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	pidFile := filepath.Join(dir, "pids")
	marker := filepath.Join(dir, "crash-from-now-on")
	killLeftovers(t, pidFile)
	writeConfig(t, dir, cordis(stdioEnt("fx", "fx", "--only", "echo,pid", "--pidfile", pidFile, "--exit-if-exists", marker).
		with("reconnect", map[string]any{"initialDelayMs": 20, "maxDelayMs": 200, "maxAttempts": 3})))
	s := start(t, harnessBin, dir, nil)
	if got := s.do("/tools"); len(got) != 2 {
		t.Fatalf("/tools = %q\n%s", got, s.dump())
	}
	from := s.waitErr(0, `"fx ready"`, prefix("harness: fx ready")) + 1
	if err := os.WriteFile(marker, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Kill(readPIDs(t, pidFile)[0], syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	i := s.waitErr(from, `"fx failed" (or "fx ready")`, either(prefix("harness: fx failed"), prefix("harness: fx ready")))
	failure := s.err.From(i)[0]
	for _, want := range []string{"harness: fx failed: ", "gave up reconnecting after 3 attempts", "exited with status 4", "exiting with status 4 (--exit-if-exists)"} {
		if !strings.Contains(failure, want) {
			t.Fatalf("the failure does not say %q: %q\n%s", want, failure, s.dump())
		}
	}
	// Each attempt was reported while it lasted, with its reason; no fourth.
	log := strings.Join(s.err.Slice(from, i), "\n")
	for n := 1; n <= 3; n++ {
		if want := fmt.Sprintf("harness: fx reconnecting: attempt %d/3 failed: ", n); !strings.Contains(log, want) {
			t.Errorf("the run log does not show %q", want)
		}
	}
	if strings.Contains(log, "attempt 4/") {
		t.Errorf("a fourth attempt:\n%s", log)
	}
	// The tools go when it gives up: the line says so, before or after the
	// failure's (the registry's changes and the entries' states are
	// reported as each comes).
	s.waitErr(from, `"tools removed"`, prefix("harness: tools removed mcp__fx__echo, mcp__fx__pid"))

	status := s.do("/status")
	text := strings.Join(status, "\n")
	if len(status) == 0 || !strings.HasPrefix(status[0], "fx  mcp-client  failed: ") || !strings.Contains(status[0], "gave up reconnecting after 3 attempts") ||
		!strings.Contains(status[0], "exited with status 4") {
		t.Fatalf("/status does not show the failure:\n%s", text)
	}
	for _, want := range []string{"    phase failed", "    tools: 0", "      mcpfixture: " + marker + " exists, exiting with status 4 (--exit-if-exists)", "0 tools registered"} {
		if !contains(status, want) {
			t.Errorf("/status has no line %q:\n%s", want, text)
		}
	}
	if strings.Contains(text, "reconnecting: attempt") || strings.Contains(text, "    pid ") {
		t.Errorf("/status shows an attempt or a pid after giving up:\n%s", text)
	}
	if got := s.do("/tools"); len(got) != 0 {
		t.Errorf("/tools after giving up: %q", got)
	}
	from = s.err.Len()
	if got := s.do(`/call mcp__fx__echo {"message":"x"}`); len(got) != 0 {
		t.Errorf("the call printed %q", got)
	}
	s.waitErr(from, "for the call to a tool that went", has(`unknown tool "mcp__fx__echo"`))
	quit(t, s, dir)
}

// Row 11c: a server that comes up and crashes soon after, again and again
// (each new server is killed as soon as it is ready). With maxDelayMs far
// longer than any connection lasts, no connection starts the count again:
// after maxAttempts reconnects the next crash fails the entry.
func TestCrashLoopRunsOutOfAttempts(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	pidFile := filepath.Join(dir, "pids")
	killLeftovers(t, pidFile)
	writeConfig(t, dir, cordis(stdioEnt("fx", "fx", "--only", "echo,pid", "--pidfile", pidFile).
		with("reconnect", map[string]any{"initialDelayMs": 20, "maxDelayMs": 60000, "maxAttempts": 3})))
	s := start(t, harnessBin, dir, nil)
	if got := s.do("/tools"); len(got) != 2 {
		t.Fatalf("/tools = %q\n%s", got, s.dump())
	}
	outcome := either(prefix("harness: fx ready"), prefix("harness: fx failed"))
	from := s.waitErr(0, `"fx ready"`, prefix("harness: fx ready")) + 1
	var all []int
	for crash := 1; crash <= 4; crash++ {
		pid := readPIDs(t, pidFile)[0]
		all = append(all, pid)
		if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		i := s.waitErr(from, fmt.Sprintf("after crash %d", crash), outcome)
		line := s.err.From(i)[0]
		from = i + 1
		if crash == 4 {
			if !strings.HasPrefix(line, "harness: fx failed: ") || !strings.Contains(line, "gave up reconnecting after 3 attempts") {
				t.Fatalf("crash 4, after 3 reconnects: %q, want the entry failed\n%s", line, s.dump())
			}
			break
		}
		if !strings.HasPrefix(line, "harness: fx ready") {
			t.Fatalf("crash %d: %q, want the entry ready again\n%s", crash, line, s.dump())
		}
		status := strings.Join(s.do("/status"), "\n")
		next := readPIDs(t, pidFile)[0]
		for _, want := range []string{fmt.Sprintf("pid %d, phase connected", next), fmt.Sprintf("reconnects: %d,", crash)} {
			if next == pid || !strings.Contains(status, want) {
				t.Fatalf("crash %d: /status does not say %q (server %d, was %d):\n%s", crash, want, next, pid, status)
			}
		}
	}
	status := s.do("/status")
	text := strings.Join(status, "\n")
	if len(status) == 0 || !strings.HasPrefix(status[0], "fx  mcp-client  failed: ") || !contains(status, "    phase failed") {
		t.Fatalf("/status after giving up:\n%s", text)
	}
	if strings.Contains(text, "reconnecting: attempt") || strings.Contains(text, "    pid ") {
		t.Errorf("/status shows an attempt or a pid after giving up:\n%s", text)
	}
	if got := s.do("/tools"); len(got) != 0 {
		t.Errorf("/tools after giving up: %q", got)
	}
	if left := proctest.WaitDead(all, closeBound); len(left) > 0 {
		t.Fatalf("servers left running: %s", proctest.Describe(left))
	}
	quit(t, s, dir)
}

// Row 12b: make before break. An edit whose new instance hangs at start
// (it never answers initialize; startupTimeoutMs 2000, long enough for a
// call and a /status to fit inside it even under -race) never takes the old
// one down: console calls keep answering from the old server, /status shows
// its pid, the reload failure is shown in /status and in the run log, the
// hung server is disposed of, and a good edit then takes over.
func TestNewInstanceHangingAtStartNeverTakesTheOldDown(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	pidFile := filepath.Join(dir, "pids")
	hungPIDs := filepath.Join(dir, "pids-hung")
	killLeftovers(t, pidFile, hungPIDs)
	entry := func(more ...string) ent {
		return stdioEnt("fx", "fx", append([]string{"--only", "echo,pid"}, more...)...)
	}
	writeConfig(t, dir, cordis(entry("--pidfile", pidFile)))
	s := start(t, harnessBin, dir, nil)
	if got := s.do("/tools"); len(got) != 2 {
		t.Fatalf("/tools = %q\n%s", got, s.dump())
	}
	old := readPIDs(t, pidFile)[0]
	serving := fmt.Sprintf("    pid %d, phase connected", old)

	from := s.err.Len()
	writeConfig(t, dir, cordis(entry("--pidfile", hungPIDs, "--hang-on", "initialize").with("startupTimeoutMs", 2000)))
	// A reload that stops the old instance first says "fx stopped" instead.
	i := s.waitErr(from, `"fx reloading"`, either(prefix("harness: fx reloading"), prefix("harness: fx stopped"), prefix("harness: tools removed")))
	if line := s.err.From(i)[0]; !strings.HasPrefix(line, "harness: fx reloading") {
		t.Fatalf("the edit took the old instance down: %q\n%s", line, s.dump())
	}
	// Calls while the new instance hangs, each followed by /status: a call
	// whose /status still says the new instance is starting was answered
	// entirely within the reload.
	within := 0
	var status []string
	for {
		got := s.do("/call mcp__fx__pid {}\n/status")
		if len(got) < 2 || got[0] != strconv.Itoa(old) {
			t.Fatalf("a call during the reload printed %q, want the old server's pid %d\n%s", got, old, s.dump())
		}
		status = got[1:]
		if !contains(status, serving) {
			t.Fatalf("/status during the reload does not show the old server (%q):\n%s", serving, strings.Join(status, "\n"))
		}
		if status[0] != "fx  mcp-client  ready (reloading: the new instance is starting)" {
			break
		}
		within++
	}
	if within == 0 {
		t.Errorf("no call was answered while the new instance was starting")
	}
	text := strings.Join(status, "\n")
	if status[0] != "fx  mcp-client  ready" || len(status) < 2 || !strings.HasPrefix(status[1], "    reload failed: ") ||
		!strings.Contains(status[1], "startup timed out after 2s") || !strings.HasSuffix(status[1], "; the previous instance is still serving") {
		t.Fatalf("/status after the failed reload:\n%s", text)
	}
	i = s.waitErr(from, `"reload failed" in the run log`, has("reload failed: "))
	if line := s.err.From(i)[0]; !strings.HasPrefix(line, "harness: fx: reload failed: ") || !strings.Contains(line, "startup timed out after 2s") ||
		!strings.HasSuffix(line, "; the previous instance is still serving") {
		t.Fatalf("the run log says %q", line)
	}
	if got := s.do(`/call mcp__fx__echo {"message":"still"}`); len(got) != 1 || got[0] != "echo: still" {
		t.Fatalf("after the failed reload the call printed %q\n%s", got, s.dump())
	}
	if left := proctest.WaitMentioning(t, hungPIDs, 0, closeBound); len(left) > 0 {
		t.Fatalf("the hung server was not disposed of: %s", proctest.Describe(left))
	}
	if proctest.Dead(old) {
		t.Fatalf("the old server %d is gone", old)
	}

	// A good edit takes over; the old server goes.
	from = s.err.Len()
	writeConfig(t, dir, cordis(entry("--pidfile", pidFile, "--name", "fixed")))
	s.waitErr(from, `"fx ready" after the good edit`, prefix("harness: fx ready"))
	got := s.do("/call mcp__fx__pid {}\n/status")
	if len(got) < 2 || got[0] == strconv.Itoa(old) {
		t.Fatalf("after the good edit the call printed %q; the old server was %d\n%s", got, old, s.dump())
	}
	text = strings.Join(got[1:], "\n")
	if got[1] != "fx  mcp-client  ready" || !strings.Contains(text, "serverInfo: fixed ") || strings.Contains(text, "reload failed") ||
		!strings.Contains(text, "    pid "+got[0]+", phase connected") {
		t.Fatalf("/status after the good edit:\n%s", text)
	}
	if left := proctest.WaitDead([]int{old}, closeBound); len(left) > 0 {
		t.Fatalf("the old server was not disposed of: %s", proctest.Describe(left))
	}
	quit(t, s, dir)
}
