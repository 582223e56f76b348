package proctest

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// Processes a test did not start itself — a server the harness started, a
// grandchild a server spawned — have no exit event the test can wait on.
// The checks below therefore poll /proc with a deadline, every PollEvery:
// the only polling of this package. On systems without /proc (see
// proc_other.go) a process looks gone and a search for processes skips the
// test.

// PollEvery is the polling interval of the process checks.
const PollEvery = 20 * time.Millisecond

// Proc is what /proc/<pid>/stat says about a process.
type Proc struct {
	Exists bool
	State  byte // R, S, D, Z, X, …
	PPID   int
	Flags  uint64 // the kernel's PF_* flags
}

// Dead reports whether the process runs no more: it does not exist, or it
// is a zombie. A zombie is dead (it runs nothing and holds nothing but its
// pid) and waits for its parent to reap it; an orphan's parent is init,
// which in some sandboxes never reaps, so an orphaned zombie counts as dead.
func (p Proc) Dead() bool { return !p.Exists || p.State == 'Z' || p.State == 'X' }

// Exiting reports whether the process has started to exit (PF_EXITING):
// Linux sets it before it releases the process's files, so a process whose
// files are closed and that is not Exiting is surely running.
func (p Proc) Exiting() bool {
	const pfExiting = 0x4
	return p.Flags&pfExiting != 0
}

// Dead reports whether pid runs no more (see [Proc.Dead]).
func Dead(pid int) bool { return Inspect(pid).Dead() }

// WaitDead waits up to within for every pid to be dead and returns those
// still running. With within 0 it looks once.
func WaitDead(pids []int, within time.Duration) []int {
	deadline := time.Now().Add(within)
	for {
		var alive []int
		for _, pid := range pids {
			if !Dead(pid) {
				alive = append(alive, pid)
			}
		}
		if len(alive) == 0 || !time.Now().Before(deadline) {
			return alive
		}
		time.Sleep(PollEvery)
	}
}

// WaitProc waits up to within until what /proc says of pid satisfies ok,
// and returns whether it did and what /proc said last.
func WaitProc(pid int, within time.Duration, ok func(Proc) bool) (bool, Proc) {
	deadline := time.Now().Add(within)
	for {
		p := Inspect(pid)
		if ok(p) {
			return true, p
		}
		if !time.Now().Before(deadline) {
			return false, p
		}
		time.Sleep(PollEvery)
	}
}

// Mentioning returns the running processes (not dead, not this one) one
// argument of whose command line holds s (it may span arguments only by
// holding the NUL between them). It skips the test where there is no /proc.
func Mentioning(t testing.TB, s string) []int {
	t.Helper()
	var out []int
	for _, pid := range Pids(t) {
		if strings.Contains(rawCmdline(pid), s) && !Dead(pid) {
			out = append(out, pid)
		}
	}
	return out
}

// WaitMentioning waits up to within until exactly want running processes
// mention s (see [Mentioning]) and returns the last ones found.
func WaitMentioning(t testing.TB, s string, want int, within time.Duration) []int {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		pids := Mentioning(t, s)
		if len(pids) == want || !time.Now().Before(deadline) {
			return pids
		}
		time.Sleep(PollEvery)
	}
}

// Describe says what each pid is, for failure messages.
func Describe(pids []int) string {
	var parts []string
	for _, pid := range pids {
		p := Inspect(pid)
		parts = append(parts, fmt.Sprintf("%d (state %c, parent %d, %q)", pid, p.State, p.PPID, Cmdline(pid)))
	}
	return strings.Join(parts, "; ")
}
