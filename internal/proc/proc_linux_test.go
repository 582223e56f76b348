package proc

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/harness-go/harness/internal/testkit/proctest"
)

// osHelper runs the helper modes that need Linux.
func osHelper(mode string) (int, bool) {
	switch mode {
	case "daemon": // a setsid daemon, then exit: the daemon is orphaned
		fmt.Println(startHelper(&syscall.SysProcAttr{Setsid: true}, "sleep"))
		return 0, true
	case "thread-ends": // a server, then the spawning thread ends: how did the server end?
		s, err := NewSpawner()
		if err != nil {
			fmt.Println(err)
			return 1, true
		}
		defer s.Close()
		cmd, out := helperCmd("sleep")
		p, err := s.Start(cmd)
		if err != nil {
			fmt.Println(err)
			return 1, true
		}
		waitReady(out)
		s.sys.stop()
		if _, err := s.Start(exec.Command("/bin/true")); !errors.Is(err, ErrClosed) {
			fmt.Println("Start after the thread ended:", err)
			return 1, true
		}
		if ok, err := waitFor(p, waitTimeout); ok {
			fmt.Println(killedBy(err))
		} else {
			fmt.Println("still running")
		}
		return 0, true
	}
	return 0, false
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
