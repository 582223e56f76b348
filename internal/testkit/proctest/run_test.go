//go:build unix

package proctest_test

import (
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/harness-go/harness/internal/testkit/proctest"
)

// failures is a testing.TB that records what would fail the test.
type failures struct {
	testing.TB
	errs  []string
	fatal bool
}

func (f *failures) Helper() {}
func (f *failures) Errorf(format string, args ...any) {
	f.errs = append(f.errs, fmt.Sprintf(format, args...))
}
func (f *failures) Fatalf(format string, args ...any) {
	f.Errorf(format, args...)
	f.fatal = true
	runtime.Goexit()
}

// run calls proctest.Run with a recording TB, on a goroutine of its own (a
// Fatalf ends it).
func run(t *testing.T, c proctest.Command) (proctest.Result, *failures) {
	f := &failures{TB: t}
	var r proctest.Result
	done := make(chan struct{})
	go func() {
		defer close(done)
		r = proctest.Run(f, c)
	}()
	<-done
	return r, f
}

// One runner for the end-to-end and fault suites: it reports the exit code
// and what was printed, and fails the test on a panic or a race that
// reached the user (the end-to-end suite's own runner ignored panics), and
// on a run that does not end.
func TestRun(t *testing.T) {
	t.Parallel()
	sh := func(script string) proctest.Command {
		return proctest.Command{Path: "/bin/sh", Args: []string{"-c", script}, Timeout: 30 * time.Second}
	}
	for _, tc := range []struct {
		name  string
		cmd   proctest.Command
		code  int
		fails string // "" when the run is fine
		fatal bool
	}{
		{"an exit code", sh("echo out; echo err >&2; exit 3"), 3, "", false},
		{"a panic", sh(`echo "panic: runtime error: index out of range" >&2; echo "goroutine 1 [running]:" >&2; exit 2`), 2, "a panic reached the user", false},
		{"a stack printed", sh(`echo "level=ERROR msg=oops stack=\"goroutine 7 [running]:\"" >&2`), 0, "a panic reached the user", false},
		{"a data race", sh(`echo "WARNING: DATA RACE" >&2`), 0, "a data race", false},
		{"the word panic", sh(`echo "no panic here" >&2`), 0, "", false},
		{"a run that does not end", proctest.Command{Path: "/bin/sh", Args: []string{"-c", "exec sleep 60"}, Timeout: 200 * time.Millisecond}, 0, "timed out after 200ms", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var recorded string
			tc.cmd.Record = func(stdout, stderr string) { recorded = stdout + stderr }
			r, f := run(t, tc.cmd)
			got := strings.Join(f.errs, "\n")
			if tc.fails == "" && got != "" || tc.fails != "" && !strings.Contains(got, tc.fails) || f.fatal != tc.fatal {
				t.Fatalf("failures %q (fatal %v), want %q (fatal %v)", got, f.fatal, tc.fails, tc.fatal)
			}
			if tc.fatal {
				return
			}
			if r.Code != tc.code || recorded != r.Stdout+r.Stderr {
				t.Fatalf("code %d (want %d), recorded %q, result %+v", r.Code, tc.code, recorded, r)
			}
		})
	}
}
