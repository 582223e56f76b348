//go:build unix

package faults

// Row 3: servers that ignore SIGTERM and the end of their stdin, and
// servers that leave grandchildren (which ignore SIGTERM too), are gone —
// the whole process group — within the close bound when their entry is
// disposed (an edit, a restart) or the harness exits.
//
// Elsewhere: TestStdioCloseIsBounded and
// TestStdioConnGrandchildIgnoringSIGTERM (plugins/mcpclient) time one
// disposal in-process; TestConsoleSignals (tests/e2e) kills a grandchild on
// SIGINT and SIGTERM.

import (
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/harness-go/harness/internal/testkit/proctest"
)

// stubbornArgs make a fixture that ignores SIGTERM and the end of its
// stdin, with a grandchild that ignores SIGTERM.
func stubbornArgs(pidFile string) []string {
	return []string{"--only", "echo,spawn,pid", "--ignore-sigterm", "--grandchild", "--pidfile", pidFile}
}

// goneFrom checks that every pid is dead within d. A server is the child of
// the harness (parent): while the harness runs, it must also have reaped it.
func goneFrom(t *testing.T, what string, pids []int, parent int, d time.Duration) {
	t.Helper()
	deadline := time.Now().Add(d)
	if alive := proctest.WaitDead(pids, d); len(alive) > 0 {
		t.Errorf("%s: still running after %s: %s", what, d, proctest.Describe(alive))
	}
	// A process killed a moment ago is reaped a moment later: nothing tells
	// when, so look again until the deadline.
	notParentsZombie := func(p proctest.Proc) bool { return !p.Exists || p.State != 'Z' || p.PPID != parent }
	for _, pid := range pids {
		if ok, _ := proctest.WaitProc(pid, time.Until(deadline), notParentsZombie); !ok {
			t.Errorf("%s: %d is a zombie the harness (pid %d) never reaped", what, pid, parent)
		}
	}
}

// All the servers of a harness that exits are gone within one close bound,
// however many ignore SIGTERM: they are stopped together, not one after the
// other.
func TestStubbornServersGoneAtExit(t *testing.T) {
	t.Parallel()
	const n = 8
	dir := t.TempDir()
	var entries []ent
	var files []string
	for i := range n {
		f := filepath.Join(dir, fmt.Sprintf("pids-%d", i))
		files = append(files, f)
		entries = append(entries, stdioEnt(fmt.Sprintf("s%d", i), fmt.Sprintf("s%d", i), stubbornArgs(f)...))
	}
	killLeftovers(t, files...)
	writeConfig(t, dir, cordis(entries...))
	s := start(t, harnessBin, dir, nil)
	if got := s.do("/tools"); len(got) != 3*n {
		t.Fatalf("/tools = %q, want %d tools\n%s", got, 3*n, s.dump())
	}
	// One more grandchild, spawned by a call.
	if got := s.do(`/call mcp__s0__spawn {"ignoreSigterm":true}`); len(got) != 1 {
		t.Fatalf("spawn printed %q\n%s", got, s.dump())
	}
	var pids []int
	for _, f := range files {
		pids = append(pids, readPIDs(t, f)...)
	}
	if len(pids) != 2*n+1 {
		t.Fatalf("pid files list %v: want %d servers and %d grandchildren", pids, n, n+1)
	}

	at := time.Now()
	s.closeStdin()
	code := s.waitExit()
	took := s.exit.At().Sub(at)
	if code != 0 {
		t.Errorf("exit code %d after EOF, want 0", code)
	}
	if took > closeBound {
		t.Errorf("the harness took %s to exit after EOF with %d servers ignoring SIGTERM; the bound is %s (one close ladder)", took.Round(time.Millisecond), n, closeBound)
	}
	// The harness is gone: whatever it started must be too.
	if alive := proctest.WaitDead(pids, time.Second); len(alive) > 0 {
		t.Errorf("after the harness exited, %d of the %d processes it started still run: %s\n%s", len(alive), len(pids), proctest.Describe(alive), s.dump())
	}
}

// An edit that removes a stubborn server, and a /restart of one, stop the
// old process group within the close bound, while the harness runs on and
// the other entries keep working.
func TestStubbornServerDisposedWhileRunning(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	stubFile := filepath.Join(dir, "pids-stub")
	okFile := filepath.Join(dir, "pids-ok")
	killLeftovers(t, stubFile, okFile)
	ok := stdioEnt("ok", "ok", "--only", "echo", "--pidfile", okFile)
	writeConfig(t, dir, cordis(ok, stdioEnt("stub", "stub", stubbornArgs(stubFile)...)))
	s := start(t, harnessBin, dir, nil)
	s.do("/tools")

	spawnAndRead := func() []int {
		t.Helper()
		got := s.do(`/call mcp__stub__spawn {"ignoreSigterm":true}`)
		if len(got) != 1 {
			t.Fatalf("spawn printed %q\n%s", got, s.dump())
		}
		if _, err := strconv.Atoi(got[0]); err != nil {
			t.Fatalf("spawn printed %q\n%s", got, s.dump())
		}
		pids := readPIDs(t, stubFile)
		if len(pids) != 3 {
			t.Fatalf("pid file lists %v: want the server and two grandchildren", pids)
		}
		return pids
	}

	// /restart: the old group goes, a new server comes.
	old := spawnAndRead()
	from := s.err.Len()
	at := time.Now()
	if got := s.do("/restart stub"); len(got) != 1 || got[0] != "restarting stub" {
		t.Fatalf("/restart printed %q\n%s", got, s.dump())
	}
	s.waitErr(from, `"stub ready" after the restart`, prefix("harness: stub ready"))
	if took := time.Since(at); took > closeBound+startOverhead {
		t.Errorf("the restart took %s", took)
	}
	// The restart made before it broke: the new server was ready first, then
	// the old one was stopped (the close ladder of a server ignoring SIGTERM).
	goneFrom(t, "the restarted server's old processes", old, s.pid(), closeBound+startOverhead)
	if got := s.do(`/call mcp__ok__echo {"message":"after restart"}`); len(got) != 1 || got[0] != "echo: after restart" {
		t.Errorf("the other entry after the restart: %q", got)
	}

	// An edit that removes it.
	cur := spawnAndRead()
	from = s.err.Len()
	at = time.Now()
	writeConfig(t, dir, cordis(ok))
	s.waitErr(from, `"stub stopped"`, prefix("harness: stub stopped"))
	if took := time.Since(at); took > closeBound {
		t.Errorf("removing the entry took %s to stop its server (bound %s)", took.Round(time.Millisecond), closeBound)
	}
	goneFrom(t, "the removed server's processes", cur, s.pid(), time.Second)
	if got := s.do(`/call mcp__ok__echo {"message":"after removal"}`); len(got) != 1 || got[0] != "echo: after removal" {
		t.Errorf("the other entry after the removal: %q", got)
	}
	if got := s.do("/tools"); strings.Join(got, "\n") != "mcp__ok__echo  Echo a message back." {
		t.Errorf("/tools after the removal: %q", got)
	}
	s.send("/quit\n")
	if code := s.waitExit(); code != 0 {
		t.Errorf("/quit: exit code %d\n%s", code, s.dump())
	}
	goneFrom(t, "the other server after /quit", readPIDs(t, okFile), -1, time.Second)
}

// One edit that removes several stubborn servers stops them all within one
// close bound, not one bound each; meanwhile the console answers and the
// remaining entry's tools work.
func TestStubbornServersRemovedByOneEdit(t *testing.T) {
	t.Parallel()
	const n = 4
	dir := t.TempDir()
	okFile := filepath.Join(dir, "pids-ok")
	files := []string{okFile}
	ok := stdioEnt("ok", "ok", "--only", "echo", "--pidfile", okFile)
	entries := []ent{ok}
	for i := range n {
		f := filepath.Join(dir, fmt.Sprintf("pids-%d", i))
		files = append(files, f)
		entries = append(entries, stdioEnt(fmt.Sprintf("s%d", i), fmt.Sprintf("s%d", i), stubbornArgs(f)...))
	}
	killLeftovers(t, files...)
	writeConfig(t, dir, cordis(entries...))
	s := start(t, harnessBin, dir, nil)
	s.do("/tools")
	var pids []int
	for _, f := range files[1:] {
		pids = append(pids, readPIDs(t, f)...)
	}

	from := s.err.Len()
	at := time.Now()
	writeConfig(t, dir, cordis(ok))
	// The console answers while the servers are being stopped.
	if got := s.do(`/call mcp__ok__echo {"message":"meanwhile"}`); len(got) != 1 || got[0] != "echo: meanwhile" {
		t.Errorf("a call during the disposals printed %q", got)
	}
	s.waitErr(from, "the reload", prefix("harness: reloaded: removed"))
	took := time.Since(at)
	if took > closeBound {
		t.Errorf("removing %d servers that ignore SIGTERM took %s (bound %s: they are stopped together)", n, took.Round(time.Millisecond), closeBound)
	}
	goneFrom(t, "the removed servers", pids, s.pid(), time.Second)
	s.send("/quit\n")
	s.waitExit()
}
