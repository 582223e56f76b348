//go:build unix

package faults

// Row 3b: the reader of stdout goes away (`harness tools | head -1`). The
// harness does not die of SIGPIPE: it stops every server, those that ignore
// SIGTERM and their grandchildren included, and exits 141 through its
// normal shutdown — a one-shot command, and the console with its stdin
// still open.
//
// Elsewhere: TestBrokenStdoutShutsDown (harnesscmd/internal/cli) covers every command
// in-process.

import (
	"bufio"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/harness-go/harness/internal/testkit/proctest"
)

func TestBrokenStdoutStopsEverything(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		args  []string
		input string // console input; stdin stays open after it
	}{
		{"tools | head -1", []string{"tools"}, ""},
		{"console /tools | head -1, stdin open", []string{"run"}, "/tools\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			pidFile := filepath.Join(dir, "pids")
			killLeftovers(t, pidFile)
			// Far more than a pipe holds (64 KiB): the write cannot finish
			// before the reader is gone.
			args := append(stubbornArgs(pidFile), "--tools-count", "4000")
			writeConfig(t, dir, cordis(stdioEnt("s", "s", args...)))

			cmd := exec.Command(harnessBin, tc.args...)
			cmd.Dir = dir
			cmd.Env = environ()
			stdin, err := cmd.StdinPipe()
			if err != nil {
				t.Fatal(err)
			}
			defer stdin.Close()
			outR, outW, err := os.Pipe()
			if err != nil {
				t.Fatal(err)
			}
			errR, errW, err := os.Pipe()
			if err != nil {
				t.Fatal(err)
			}
			cmd.Stdout, cmd.Stderr = outW, errW
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			outW.Close()
			errW.Close()
			defer errR.Close()
			stderr := readLines(errR)
			exit := proctest.Await(t, cmd)
			io.WriteString(stdin, tc.input)

			// head -1: one line, then the pipe is closed.
			first, err := bufio.NewReader(outR).ReadString('\n')
			outR.Close()
			if err != nil || !strings.HasPrefix(first, "mcp__s__") {
				t.Fatalf("first line %q (%v)\n%s", first, err, stderr.Text())
			}
			at := time.Now()
			pids := readPIDs(t, pidFile)
			if len(pids) != 2 {
				t.Fatalf("pid file lists %v: want the server and its grandchild", pids)
			}

			select {
			case <-exit.Done():
			case <-time.After(waitTimeout):
				t.Fatalf("the harness did not exit after its stdout closed\n%s", stderr.Text())
			}
			took := time.Since(at)
			if ee := (*exec.ExitError)(nil); !errors.As(exit.Err(), &ee) || ee.ExitCode() != 141 {
				t.Errorf("the harness ended with %v, want exit status 141\n%s", exit.Err(), stderr.Text())
			}
			if took > closeBound {
				t.Errorf("the harness took %s to exit after its stdout closed (bound %s)", took.Round(time.Millisecond), closeBound)
			}
			if !stderr.WaitClosed(10 * time.Second) {
				t.Errorf("the harness exited but its stderr stayed open: a process it started holds it")
			}
			proctest.NoRaceOrPanic(t, stderr.Text())
			if alive := proctest.WaitDead(pids, time.Second); len(alive) > 0 {
				t.Errorf("after a broken stdout these processes still run: %s\n%s", proctest.Describe(alive), stderr.Text())
			}
		})
	}
}
