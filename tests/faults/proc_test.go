//go:build unix

package faults

import (
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/harness-go/harness/internal/testkit/proctest"
)

// Processes the tests did not start themselves are checked through /proc
// (internal/testkit/proctest: Dead, WaitDead, WaitProc, Mentioning), with a
// deadline: that is the only polling in this package.

// reaped is a check for proctest.WaitProc: the process does not exist at
// all, its parent reaped it. For a child of parent, a zombie left behind is
// parent's fault.
func reaped(p proctest.Proc) bool { return !p.Exists }

// readPIDs reads a fixture's --pidfile: the server's pid, then each
// grandchild's. Whatever it read is killed at cleanup if still running.
func readPIDs(t testing.TB, path string) []int {
	t.Helper()
	pids := proctest.ReadPIDs(t, path)
	killAtCleanup(t, pids)
	return pids
}

// killLeftovers makes sure a failing test leaves no fixture process behind:
// at cleanup it sends SIGKILL to every pid of the pid files that still runs
// the fixture (checked by its command line, so a reused pid is spared).
func killLeftovers(t testing.TB, pidFiles ...string) {
	t.Cleanup(func() {
		for _, f := range pidFiles {
			data, err := os.ReadFile(f)
			if err != nil {
				continue
			}
			var pids []int
			for _, field := range strings.Fields(string(data)) {
				if pid, err := strconv.Atoi(field); err == nil {
					pids = append(pids, pid)
				}
			}
			killFixtures(pids)
		}
	})
}

// killAtCleanup is killLeftovers for pids a test has read (a pid file may be
// rewritten when its server restarts).
func killAtCleanup(t testing.TB, pids []int) {
	t.Cleanup(func() { killFixtures(pids) })
}

func killFixtures(pids []int) {
	for _, pid := range pids {
		if proctest.Dead(pid) {
			continue
		}
		if strings.Contains(proctest.Cmdline(pid), "mcpfixture") {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	}
}

// syscallKill sends SIGKILL to pid.
func syscallKill(pid int) error { return syscall.Kill(pid, syscall.SIGKILL) }
