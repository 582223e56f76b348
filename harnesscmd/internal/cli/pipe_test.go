package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/harness-go/harness/internal/testkit/fakellm"
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
		// schema returns the write's error: it is not said either.
		{"schema", []string{"schema"}, ""},
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
			out, errOut := &closedPipe{}, newLines()
			code := make(chan int, 1)
			go func() {
				code <- Main(context.Background(), append([]string{"-c", config}, tc.args...), Env{Stdin: stdinR, Stdout: out, Stderr: errOut})
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
			if strings.Contains(errOut.String(), "broken pipe") {
				t.Fatalf("a broken pipe was reported as a failure:\n%s", errOut)
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

// fullDisk is a stdout that fails every write as /dev/full does: not a
// broken pipe, so nothing cancels the run.
type fullDisk struct{ writes atomic.Int32 }

func (f *fullDisk) Write([]byte) (int, error) {
	f.writes.Add(1)
	return 0, errFullDisk
}

var errFullDisk = &os.PathError{Op: "write", Path: "/dev/stdout", Err: syscall.ENOSPC}

// A write to stdout that fails otherwise than on a broken pipe fails every
// command, in one place (Main): exit 1, and the write's error once on
// stderr, as schema says it — not exit 0 with the output gone.
func TestFailedStdoutWriteFails(t *testing.T) {
	t.Parallel()
	llm := fakellm.Start(t, fakellm.Stream(fakellm.Text("hi"), fakellm.Finish("stop")))
	dir := t.TempDir()
	config := filepath.Join(dir, "cordis.yml")
	if err := os.WriteFile(config, []byte("- id: echo\n  name: echo\n"+agentEntry("model", llm.URL)), 0o644); err != nil {
		t.Fatal(err)
	}
	mcpJSON := filepath.Join(dir, ".mcp.json")
	if err := os.WriteFile(mcpJSON, []byte(`{"mcpServers":{"a":{"command":"x"}}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	msg := "harness: " + errFullDisk.Error()
	record, _ := json.Marshal(msg)
	for _, tc := range []struct {
		name  string
		args  []string
		input string // stdin, then its end
		want  string // the line on stderr; msg unless set
	}{
		{"tools", []string{"tools"}, "", ""},
		{"tools --json", []string{"tools", "--json"}, "", ""},
		{"status", []string{"status"}, "", ""},
		{"status --json", []string{"status", "--json"}, "", ""},
		{"call", []string{"call", "echo", `{"message":"x"}`}, "", ""},
		// An error result says nothing of its own on stderr: it was on stdout.
		{"call, an error result", []string{"call", "echo", `{}`}, "", ""},
		{"resources", []string{"resources"}, "", ""},
		{"read", []string{"read", "echo", "echo://about"}, "", ""},
		{"prompts", []string{"prompts"}, "", ""},
		{"prompt", []string{"prompt", "repeat", "message=x"}, "", ""},
		{"ask", []string{"ask", "hello"}, "", ""},
		{"console", []string{"run"}, "/tools\n", ""},
		{"version", []string{"version"}, "", ""},
		{"validate", []string{"validate"}, "", ""},
		{"schema", []string{"schema"}, "", ""},
		{"import", []string{"import", mcpJSON}, "", ""},
		{"help", []string{"--help"}, "", ""},
		{"help tools", []string{"help", "tools"}, "", ""},
		{"--log-format json", []string{"version", "--log-format", "json"}, "", `"msg":` + string(record)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			out, errOut := &fullDisk{}, &bytes.Buffer{}
			code := Main(context.Background(), append([]string{"-c", config}, tc.args...), Env{Stdin: strings.NewReader(tc.input), Stdout: out, Stderr: errOut})
			if code != ExitFailure {
				t.Errorf("exit %d, want %d\n%s", code, ExitFailure, errOut)
			}
			if out.writes.Load() == 0 {
				t.Fatal("nothing was written to stdout")
			}
			want := tc.want
			if want == "" {
				want = msg + "\n"
			}
			if n := strings.Count(errOut.String(), want); n != 1 {
				t.Errorf("stderr has %q %d times, want once:\n%s", want, n, errOut)
			}
		})
	}
}
