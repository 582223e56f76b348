package proctest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// Command is one run of a program, to its end (see [Run]).
type Command struct {
	Path  string
	Args  []string
	Dir   string
	Env   []string
	Stdin io.Reader // nil: no input
	// Timeout bounds the run; default 3 minutes. It only keeps a broken
	// test from hanging: a test asserts its own, tighter, bounds.
	Timeout time.Duration
	// Record, when set, receives what the program printed, before any
	// check can fail the test (a package's sweep for secrets, say).
	Record func(stdout, stderr string)
}

// Result is what one run did.
type Result struct {
	Args           []string
	Stdout, Stderr string
	Code           int // the exit code; -1 for a signal
	Took           time.Duration
	State          *os.ProcessState
}

func (r Result) String() string {
	return fmt.Sprintf("%s\nexit code %d after %s\n--- stdout ---\n%s\n--- stderr ---\n%s",
		strings.Join(r.Args, " "), r.Code, r.Took.Round(time.Millisecond), clip(r.Stdout, 4000), clip(r.Stderr, 8000))
}

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + fmt.Sprintf("… (%d bytes)", len(s))
}

// Run runs c to its end and returns what it did. The test fails at once
// when the run times out, when the program exited but something it started
// still holds its stdout or stderr (a process left behind: waited for 10 s
// at most), when it could not run at all, and — once it ran — when its
// stderr shows a data race or a panic that reached the user
// ([NoRaceOrPanic]). A non-zero exit is the caller's to judge.
func Run(t testing.TB, c Command) Result {
	t.Helper()
	timeout := c.Timeout
	if timeout <= 0 {
		timeout = 3 * time.Minute
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, c.Path, c.Args...)
	cmd.Dir, cmd.Env, cmd.Stdin = c.Dir, c.Env, c.Stdin
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	cmd.WaitDelay = 10 * time.Second
	start := time.Now()
	err := cmd.Run()
	r := Result{Args: append([]string{c.Path}, c.Args...), Stdout: stdout.String(), Stderr: stderr.String(), Took: time.Since(start), State: cmd.ProcessState}
	if c.Record != nil {
		c.Record(r.Stdout, r.Stderr)
	}
	var ee *exec.ExitError
	switch {
	case ctx.Err() != nil:
		t.Fatalf("timed out after %s:\n%s", timeout, r)
	case errors.Is(err, exec.ErrWaitDelay):
		t.Fatalf("the program exited but a process it started kept its stdout or stderr open:\n%s", r)
	case errors.As(err, &ee):
		r.Code = ee.ExitCode()
	case err != nil:
		t.Fatalf("running %s: %v", c.Path, err)
	}
	NoRaceOrPanic(t, r.Stderr)
	return r
}

// NoRaceOrPanic fails the test when a program's stderr shows a data race
// (the race detector's report) or a panic that reached the user: the
// runtime's report of a panic nothing recovered ("panic: " and the
// goroutine trace), or a trace printed anyhow. A panic the program
// recovered and logged with its stack counts too: the user saw a trace.
func NoRaceOrPanic(t testing.TB, stderr string) {
	t.Helper()
	if strings.Contains(stderr, "WARNING: DATA RACE") {
		t.Errorf("the program reported a data race:\n%s", stderr)
	}
	if strings.Contains(stderr, "panic: ") || strings.Contains(stderr, "goroutine ") && strings.Contains(stderr, "[running]") {
		t.Errorf("a panic reached the user:\n%s", stderr)
	}
}
