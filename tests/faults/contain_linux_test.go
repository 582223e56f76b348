package faults

// Row 3c (Linux): what leaves a server's process group is contained too. A
// daemon a server starts (setsid: its own session and group) is found by
// the environment tag every server carries, killed and reaped when the
// entry is disposed (an edit, a restart) and when the harness exits; and
// kill -9 of the harness, which runs no code of ours, still kills every
// server it started (the parent-death signal).
//
// Elsewhere: TestSetsidDaemon, TestParentDeathSignalOnKill9 and
// TestParentDeathSignalFollowsTheSpawningThread (internal/proc) test the
// mechanisms one by one.

import (
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/harness-go/harness/internal/testkit/proctest"
)

func TestSetsidDaemonGone(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		// end disposes the entry d (or stops the harness) and says whether
		// the harness still runs (then it must have reaped the daemon).
		end func(t *testing.T, s *session, dir string, ok ent) (running bool)
		// within bounds the wait for the processes, once end returned.
		within time.Duration
	}{
		{"entry removed", func(t *testing.T, s *session, dir string, ok ent) bool {
			from := s.err.Len()
			writeConfig(t, dir, cordis(ok))
			s.waitErr(from, `"d stopped"`, prefix("harness: d stopped"))
			return true
		}, time.Second},
		{"entry restarted", func(t *testing.T, s *session, _ string, _ ent) bool {
			from := s.err.Len()
			if got := s.do("/restart d"); len(got) != 1 || got[0] != "restarting d" {
				t.Fatalf("/restart printed %q\n%s", got, s.dump())
			}
			s.waitErr(from, `"d ready" after the restart`, prefix("harness: d ready"))
			return true
		}, closeBound}, // make before break: the old server goes after the new one is ready, with its ladder
		{"harness exits", func(t *testing.T, s *session, _ string, _ ent) bool {
			s.send("/quit\n")
			if code := s.waitExit(); code != 0 {
				t.Errorf("/quit: exit code %d\n%s", code, s.dump())
			}
			return false
		}, time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			pidFile := filepath.Join(dir, "pids-d")
			okFile := filepath.Join(dir, "pids-ok")
			killLeftovers(t, pidFile, okFile)
			ok := stdioEnt("ok", "ok", "--only", "echo", "--pidfile", okFile)
			writeConfig(t, dir, cordis(ok, stdioEnt("d", "d", "--only", "echo", "--daemon", "--pidfile", pidFile)))
			s := start(t, harnessBin, dir, nil, "--log-level", "info")
			s.do("/tools")
			pids := readPIDs(t, pidFile)
			if len(pids) != 2 {
				t.Fatalf("pid file lists %v: want the server and its daemon", pids)
			}
			daemon := pids[1]
			at := time.Now()
			running := tc.end(t, s, dir, ok)
			parent := -1
			if running {
				parent = s.pid()
			}
			goneFrom(t, "the server and its daemon", pids, parent, tc.within)
			if running {
				if ok, p := proctest.WaitProc(daemon, tc.within, reaped); !ok {
					t.Errorf("daemon %d was killed but not reaped: state %c, parent %d (the harness is %d)", daemon, p.State, p.PPID, s.pid())
				}
				if took := time.Since(at); took > closeBound+startOverhead {
					t.Errorf("disposing the entry took %s", took.Round(time.Millisecond))
				}
				if got := s.do(`/call mcp__ok__echo {"message":"still here"}`); len(got) != 1 || got[0] != "echo: still here" {
					t.Errorf("the other entry: %q", got)
				}
			}
		})
	}
}

// kill -9 of the harness: every server it started gets SIGKILL from the
// kernel, also servers that ignore SIGTERM, SIGPIPE (as Node.js does) and
// the end of their stdin — which nothing else would stop.
// Their grandchildren may outlive them (docs/RELIABILITY.md, what can still
// escape); the test kills those itself.
func TestKill9LeavesNoServer(t *testing.T) {
	t.Parallel()
	const n = 3
	dir := t.TempDir()
	var entries []ent
	var files []string
	for i := range n {
		f := filepath.Join(dir, "pids-"+string(rune('a'+i)))
		files = append(files, f)
		entries = append(entries, stdioEnt(string(rune('a'+i)), string(rune('a'+i)), append(stubbornArgs(f), "--ignore-sigpipe")...))
	}
	killLeftovers(t, files...)
	writeConfig(t, dir, cordis(entries...))
	s := start(t, harnessBin, dir, nil)
	if got := s.do("/tools"); len(got) != 3*n {
		t.Fatalf("/tools = %q, want %d tools\n%s", got, 3*n, s.dump())
	}
	var servers []int
	for _, f := range files {
		servers = append(servers, readPIDs(t, f)[0])
	}
	s.signal(syscall.SIGKILL)
	s.waitExit()
	if alive := proctest.WaitDead(servers, closeBound); len(alive) > 0 {
		t.Errorf("after kill -9 of the harness these servers still run: %s", proctest.Describe(alive))
	}
}
