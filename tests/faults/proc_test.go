//go:build unix

package faults

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/harness-go/harness/internal/proctest"
)

// Processes the tests did not start themselves — a server the harness
// started, a grandchild a server spawned — have no exit event a test can
// wait on. Checks of their end therefore poll /proc and syscall.Kill(pid, 0)
// with a deadline: that is the only polling in this package.

// pollEvery is the polling interval of those checks.
const pollEvery = 20 * time.Millisecond

// procInfo is what /proc says about a pid.
type procInfo struct {
	exists bool
	state  byte // R, S, D, Z, X, …
	ppid   int
}

func inspect(pid int) procInfo {
	if err := syscall.Kill(pid, 0); errors.Is(err, syscall.ESRCH) {
		return procInfo{}
	}
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return procInfo{}
	}
	// After the parenthesised command name: state ppid …
	i := bytes.LastIndexByte(stat, ')')
	if i < 0 {
		return procInfo{exists: true}
	}
	fields := strings.Fields(string(stat[i+1:]))
	p := procInfo{exists: true}
	if len(fields) > 1 {
		p.state = fields[0][0]
		p.ppid, _ = strconv.Atoi(fields[1])
	}
	return p
}

// dead reports whether pid runs no more: it does not exist, or it is a
// zombie. A zombie is dead (it runs nothing, holds no resources but its
// pid) and waits for its parent to reap it; an orphan's parent is init,
// which in some sandboxes never reaps, so an orphaned zombie counts as dead.
func dead(pid int) bool {
	p := inspect(pid)
	return !p.exists || p.state == 'Z' || p.state == 'X'
}

// waitDead polls until every pid is dead or the time is up, and returns
// those still running.
func waitDead(pids []int, within time.Duration) []int {
	deadline := time.Now().Add(within)
	for {
		var alive []int
		for _, pid := range pids {
			if !dead(pid) {
				alive = append(alive, pid)
			}
		}
		if len(alive) == 0 || !time.Now().Before(deadline) {
			return alive
		}
		time.Sleep(pollEvery)
	}
}

// waitReaped polls until pid does not exist at all — its parent reaped it —
// or the time is up. It reports whether it was reaped and, if not, what is
// left. For a child of parent, a zombie left behind is parent's fault.
func waitReaped(pid int, within time.Duration) (bool, procInfo) {
	deadline := time.Now().Add(within)
	for {
		p := inspect(pid)
		if !p.exists {
			return true, p
		}
		if !time.Now().Before(deadline) {
			return false, p
		}
		time.Sleep(pollEvery)
	}
}

// describeProcs says what each pid is, for failure messages.
func describeProcs(pids []int) string {
	var parts []string
	for _, pid := range pids {
		p := inspect(pid)
		cmd, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cmdline")
		parts = append(parts, fmt.Sprintf("%d (state %c, parent %d, %q)", pid, p.state, p.ppid,
			strings.ReplaceAll(strings.TrimRight(string(cmd), "\x00"), "\x00", " ")))
	}
	return strings.Join(parts, "; ")
}

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
		if dead(pid) {
			continue
		}
		cmd, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cmdline")
		if bytes.Contains(cmd, []byte("mcpfixture")) {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	}
}

// syscallKill sends SIGKILL to pid.
func syscallKill(pid int) error { return syscall.Kill(pid, syscall.SIGKILL) }
