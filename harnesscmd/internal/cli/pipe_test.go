package cli

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// closedPipe is a stdout whose reader went away: every write fails as a
// write to a broken pipe does.
type closedPipe struct{ writes atomic.Int32 }

func (c *closedPipe) Write([]byte) (int, error) {
	c.writes.Add(1)
	return 0, &os.PathError{Op: "write", Path: "/dev/stdout", Err: syscall.EPIPE}
}

// A broken stdout shuts the harness down through its normal path — the
// console quits without waiting for stdin to end — with ExitBrokenPipe.
func TestBrokenStdoutShutsDown(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		args  []string
		input string // console input; stdin stays open after it
	}{
		{"tools", []string{"tools"}, ""},
		{"status", []string{"status"}, ""},
		{"call", []string{"call", "echo", `{"message":"x"}`}, ""},
		{"console", []string{"run"}, "/tools\n"},
		{"help", []string{"--help"}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			config := filepath.Join(dir, "cordis.yml")
			if err := os.WriteFile(config, []byte("- id: echo\n  name: echo\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			stdinR, stdinW := io.Pipe()
			defer stdinW.Close()
			go io.WriteString(stdinW, tc.input)
			out := &closedPipe{}
			code := make(chan int, 1)
			go func() {
				code <- Main(context.Background(), append([]string{"-c", config}, tc.args...), Env{Stdin: stdinR, Stdout: out, Stderr: io.Discard})
				stdinR.Close()
			}()
			select {
			case c := <-code:
				if c != ExitBrokenPipe {
					t.Fatalf("exit %d, want %d", c, ExitBrokenPipe)
				}
			case <-time.After(20 * time.Second):
				t.Fatal("the harness did not shut down after stdout broke")
			}
			if out.writes.Load() == 0 {
				t.Fatal("nothing was written to stdout")
			}
		})
	}
}

func TestIsBrokenPipe(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		err  error
		want bool
	}{
		{"EPIPE", syscall.EPIPE, true},
		{"wrapped", &os.PathError{Op: "write", Err: syscall.EPIPE}, true},
		{"another errno", syscall.ENOSPC, false},
		{"closed file", os.ErrClosed, false},
	} {
		if got := isBrokenPipe(tc.err); got != tc.want {
			t.Errorf("%s: isBrokenPipe(%v) = %v", tc.name, tc.err, got)
		}
	}
}
