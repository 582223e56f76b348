package proc

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"go.uber.org/goleak"
	"golang.org/x/sys/unix"

	"github.com/harness-go/harness/internal/proctest"
)

// The tests run this test binary again as helper processes (helperVar names
// the mode). Each helper writes "ready" on stdout once it is set up, or the
// pid of what it started.
const helperVar = "PROC_TEST_HELPER"

// helperLife bounds a helper nobody kills, so a failed test leaks nothing for
// long.
const helperLife = 10 * time.Minute

// waitTimeout bounds one wait for a line or an exit: far above what a test
// needs.
const waitTimeout = 20 * time.Second

func TestMain(m *testing.M) {
	if mode := os.Getenv(helperVar); mode != "" {
		os.Exit(helper(mode))
	}
	goleak.VerifyTestMain(m)
}

func helper(mode string) int {
	switch mode {
	case "sleep": // idle
	case "stubborn": // idle, ignoring SIGTERM
		signal.Ignore(syscall.SIGTERM)
	case "group": // a stubborn grandchild in the same process group
		fmt.Println(startHelper(nil, "stubborn"))
	case "daemon": // a setsid daemon, then exit: the daemon is orphaned
		fmt.Println(startHelper(&syscall.SysProcAttr{Setsid: true}, "sleep"))
		return 0
	case "thread-ends": // a server, then the spawning thread ends: how did the server end?
		s, err := NewSpawner()
		if err != nil {
			fmt.Println(err)
			return 1
		}
		defer s.Close()
		cmd, out := helperCmd("sleep")
		p, err := s.Start(cmd)
		if err != nil {
			fmt.Println(err)
			return 1
		}
		waitReady(out)
		s.sys.stop()
		if _, err := s.Start(exec.Command("/bin/true")); !errors.Is(err, ErrClosed) {
			fmt.Println("Start after the thread ended:", err)
			return 1
		}
		done := make(chan error, 1)
		go func() { done <- p.Wait() }()
		select {
		case err := <-done:
			fmt.Println(killedBy(err))
		case <-time.After(waitTimeout):
			fmt.Println("still running")
		}
		return 0
	case "spawner": // a server of a spawner of its own; waits for stdin to end
		s, err := NewSpawner()
		if err != nil {
			fmt.Println(err)
			return 1
		}
		cmd, out := helperCmd("sleep")
		p, err := s.Start(cmd)
		if err != nil {
			fmt.Println(err)
			return 1
		}
		waitReady(out)
		fmt.Println(p.Pid())
		io.Copy(io.Discard, os.Stdin)
		return 0
	default:
		fmt.Fprintf(os.Stderr, "unknown helper mode %q\n", mode)
		return 2
	}
	fmt.Println("ready")
	time.Sleep(helperLife)
	return 0
}

// helperCmd is this binary in a helper mode, with a pipe from its stdout.
func helperCmd(mode string) (*exec.Cmd, *os.File) {
	exe, err := os.Executable()
	if err != nil {
		panic(err)
	}
	cmd := exec.Command(exe)
	// A race-enabled helper would sleep a second before exiting.
	cmd.Env = append(os.Environ(), helperVar+"="+mode, "GORACE=atexit_sleep_ms=0")
	r, w, err := os.Pipe()
	if err != nil {
		panic(err)
	}
	cmd.Stdout, cmd.Stderr = w, os.Stderr
	return cmd, r
}

// startHelper starts a helper from a helper, waits until it is ready and
// returns its pid.
func startHelper(attr *syscall.SysProcAttr, mode string) int {
	cmd, out := helperCmd(mode)
	cmd.SysProcAttr = attr
	if err := cmd.Start(); err != nil {
		panic(err)
	}
	cmd.Stdout.(*os.File).Close()
	waitReady(out)
	return cmd.Process.Pid
}

func waitReady(out *os.File) {
	l := proctest.ReadLines(out, 0)
	if _, ok := l.Find(0, waitTimeout, func(s string) bool { return s == "ready" }); !ok {
		panic("helper never ready: " + l.Text())
	}
}

func newSpawner(t *testing.T) *Spawner {
	t.Helper()
	s, err := NewSpawner()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Errorf("Spawner.Close: %v", err)
		}
	})
	return s
}

// server starts a helper through s and returns it with its stdout lines,
// once it wrote its first line.
func server(t *testing.T, s *Spawner, mode string) (*Process, *proctest.Lines) {
	t.Helper()
	cmd, out := helperCmd(mode)
	p, err := s.Start(cmd)
	cmd.Stdout.(*os.File).Close()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { out.Close() })
	lines := proctest.ReadLines(out, 0)
	if _, ok := lines.Find(0, waitTimeout, func(string) bool { return true }); !ok {
		t.Fatalf("helper %s wrote nothing", mode)
	}
	return p, lines
}

// firstPid reads the pid a helper printed.
func firstPid(t *testing.T, l *proctest.Lines) int {
	t.Helper()
	pid, err := strconv.Atoi(l.Slice(0, 1)[0])
	if err != nil {
		t.Fatalf("helper printed %q", l.Text())
	}
	return pid
}

// killedBy says which signal ended a process, from its Wait error.
func killedBy(err error) syscall.Signal {
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			return ws.Signal()
		}
	}
	return 0
}

// waitDead polls (a process the test did not start has no exit event)
// until pid runs no more, or the time is up; a zombie of this process is
// reaped.
func waitDead(pid int, within time.Duration) bool {
	deadline := time.Now().Add(within)
	for {
		m, ok := readStat(pid)
		if !ok {
			return true
		}
		if m.zombie {
			if m.ppid == os.Getpid() {
				var ws unix.WaitStatus
				unix.Wait4(pid, &ws, unix.WNOHANG, nil)
			}
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(pollEvery)
	}
}

func killAtCleanup(t *testing.T, pid int) {
	t.Cleanup(func() {
		if _, ok := readStat(pid); ok {
			syscall.Kill(pid, syscall.SIGKILL)
			waitDead(pid, waitTimeout)
		}
	})
}

func TestServerIsContained(t *testing.T) {
	t.Parallel()
	s := newSpawner(t)
	p, _ := server(t, s, "sleep")
	defer p.Close()
	m, ok := readStat(p.Pid())
	if !ok || m.pgrp != p.Pid() {
		t.Errorf("the server's process group is %d, want its own (%d)", m.pgrp, p.Pid())
	}
	env, err := os.ReadFile(fmt.Sprintf("/proc/%d/environ", p.Pid()))
	if v, _ := lookup(env, TagVar); err != nil || v != p.Tag() || !strings.HasPrefix(v, s.ID()+".") {
		t.Errorf("the server's %s is %q (%v), want %q", TagVar, v, err, p.Tag())
	}
	if !p.Alive() {
		t.Error("Alive is false for a running server")
	}
	if err := p.Terminate(); err != nil {
		t.Fatal(err)
	}
	if sig := killedBy(p.Wait()); sig != syscall.SIGTERM {
		t.Errorf("Terminate: the server ended by %v, want SIGTERM", sig)
	}
	if p.Alive() {
		t.Error("Alive after the server was reaped")
	}
}

// Terminate and Kill reach the whole group; what ignores SIGTERM and
// outlives the server is killed by Kill or Close, and reaped by Close.
func TestGroupSignals(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		end  func(*Process) error
	}{
		{"Close", (*Process).Close},
		{"Kill", (*Process).Kill},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s := newSpawner(t)
			p, out := server(t, s, "group")
			grandchild := firstPid(t, out)
			killAtCleanup(t, grandchild)
			if m, _ := readStat(grandchild); m.pgrp != p.Pid() {
				t.Fatalf("the grandchild is in group %d, want %d", m.pgrp, p.Pid())
			}
			p.Terminate()
			if sig := killedBy(p.Wait()); sig != syscall.SIGTERM {
				t.Fatalf("the server ended by %v, want SIGTERM", sig)
			}
			if !p.Alive() {
				t.Fatal("Alive is false while the grandchild that ignores SIGTERM runs")
			}
			if err := tc.end(p); err != nil {
				t.Fatal(err)
			}
			if !waitStopped(grandchild, waitTimeout) {
				t.Fatalf("grandchild %d still runs after %s", grandchild, tc.name)
			}
			if p.Alive() {
				t.Fatal("Alive after everything is dead")
			}
			// The grandchild was re-parented to this process (a subreaper):
			// after Close it is reaped, not left a zombie.
			if err := p.Close(); err != nil {
				t.Fatal(err)
			}
			if m, ok := readStat(grandchild); ok {
				t.Fatalf("grandchild %d still there after Close (zombie=%v, parent %d)", grandchild, m.zombie, m.ppid)
			}
		})
	}
}

// A daemon of a server (setsid, its parent gone) is re-parented to this
// process, found by its tag, killed and reaped — also one that died by
// itself after a scan had seen it.
func TestSetsidDaemon(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		end  func(t *testing.T, s *Spawner, p *Process, daemon int)
	}{
		{"killed by Process.Close", func(t *testing.T, _ *Spawner, p *Process, _ int) {
			if err := p.Close(); err != nil {
				t.Fatal(err)
			}
		}},
		{"killed by Spawner.Close", func(t *testing.T, s *Spawner, _ *Process, _ int) {
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
		}},
		{"exited by itself, reaped by Close", func(t *testing.T, _ *Spawner, p *Process, daemon int) {
			syscall.Kill(daemon, syscall.SIGKILL)
			if !waitStopped(daemon, waitTimeout) {
				t.Fatal("the daemon did not die")
			}
			if err := p.Close(); err != nil {
				t.Fatal(err)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s := newSpawner(t)
			p, out := server(t, s, "daemon")
			daemon := firstPid(t, out)
			killAtCleanup(t, daemon)
			if err := p.Wait(); err != nil {
				t.Fatalf("the server: %v", err)
			}
			m, ok := readStat(daemon)
			if !ok || m.ppid != os.Getpid() || m.pgrp == p.Pid() {
				t.Fatalf("daemon %d: parent %d, group %d; want parent %d (subreaper), not group %d", daemon, m.ppid, m.pgrp, os.Getpid(), p.Pid())
			}
			if !p.Alive() {
				t.Fatal("Alive is false while the server's daemon runs")
			}
			tc.end(t, s, p, daemon)
			if m, ok := readStat(daemon); ok {
				t.Fatalf("daemon %d is still there (zombie=%v, parent %d)", daemon, m.zombie, m.ppid)
			}
		})
	}
}

// waitStopped polls until pid runs no more (a zombie, or gone), or the time
// is up.
func waitStopped(pid int, within time.Duration) bool {
	deadline := time.Now().Add(within)
	for {
		if m, ok := readStat(pid); !ok || m.zombie {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(pollEvery)
	}
}

// When the spawning thread ends, the kernel kills what it started: the
// parent-death signal is tied to that thread. With GOMAXPROCS=1 the
// spawning goroutine first runs on the main thread, which Go never ends.
func TestParentDeathSignalFollowsTheSpawningThread(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		env  []string
	}{
		{"default", nil},
		{"starting on the main thread", []string{"GOMAXPROCS=1"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			cmd, out := helperCmd("thread-ends")
			cmd.Env = append(cmd.Env, tc.env...)
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			cmd.Stdout.(*os.File).Close()
			defer out.Close()
			lines := proctest.ReadLines(out, 0)
			lines.WaitClosed(2 * waitTimeout)
			cmd.Wait()
			if got := lines.Text(); got != "killed" {
				t.Fatalf("after the spawning thread ended, the server ended by %q, want killed", got)
			}
		})
	}
}

// kill -9 of the process that owns the spawner: its server gets SIGKILL.
func TestParentDeathSignalOnKill9(t *testing.T) {
	t.Parallel()
	cmd, out := helperCmd("spawner")
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	defer stdin.Close()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	cmd.Stdout.(*os.File).Close()
	lines := proctest.ReadLines(out, 0)
	if _, ok := lines.Find(0, waitTimeout, func(string) bool { return true }); !ok {
		t.Fatal("the helper wrote nothing")
	}
	pid := firstPid(t, lines)
	killAtCleanup(t, pid)
	if m, ok := readStat(pid); !ok || m.ppid != cmd.Process.Pid {
		t.Fatalf("server %d: parent %d, want the helper %d", pid, m.ppid, cmd.Process.Pid)
	}
	cmd.Process.Kill()
	cmd.Wait()
	if !waitDead(pid, waitTimeout) {
		t.Fatalf("server %d outlived kill -9 of its harness", pid)
	}
}

func TestCloseKillsWhatIsOpenAndRefusesStart(t *testing.T) {
	t.Parallel()
	s := newSpawner(t)
	p, _ := server(t, s, "stubborn")
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if sig := killedBy(p.Wait()); sig != syscall.SIGKILL {
		t.Fatalf("Spawner.Close: the server ended by %v, want SIGKILL", sig)
	}
	if _, err := s.Start(exec.Command("/bin/true")); !errors.Is(err, ErrClosed) {
		t.Fatalf("Start after Close: %v", err)
	}
	if err := s.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
}
