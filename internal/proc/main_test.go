package proc

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"syscall"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/harness-go/harness/internal/testkit/proctest"
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
	case "group": // a stubborn grandchild, started the ordinary way
		fmt.Println(startHelper(nil, "stubborn"))
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
		if code, ok := osHelper(mode); ok {
			return code
		}
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

// waitFor waits, bounded, for p to exit, and returns whether it did and
// how.
func waitFor(p *Process, within time.Duration) (bool, error) {
	done := make(chan error, 1)
	go func() { done <- p.Wait() }()
	select {
	case err := <-done:
		return true, err
	case <-time.After(within):
		return false, nil
	}
}

// On every OS, Kill ends the server and what it started (its process group
// on unix, its job on Windows), and Close releases it.
func TestKillEndsTheServerAndWhatItStarted(t *testing.T) {
	t.Parallel()
	s := newSpawner(t)
	p, _ := server(t, s, "group")
	if !p.Alive() {
		t.Fatal("Alive is false for a running server")
	}
	if err := p.Kill(); err != nil {
		t.Fatal(err)
	}
	if ok, _ := waitFor(p, waitTimeout); !ok {
		t.Fatal("the server outlived Kill")
	}
	// The grandchild was not started by this test: only polling tells when
	// it is gone.
	deadline := time.Now().Add(waitTimeout)
	for p.Alive() {
		if time.Now().After(deadline) {
			t.Fatal("what the server started outlived Kill")
		}
		time.Sleep(pollEvery)
	}
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	if err := p.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
}
