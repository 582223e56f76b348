//go:build unix

package faults

// Row 9: SIGINT (or SIGTERM) while entries are still starting, and while a
// call is in flight — in one-shot commands and in the console — shuts the
// harness down within the close bound, and every process it started is
// gone, servers that ignore SIGTERM and their grandchildren included.
//
// Elsewhere: TestConsoleSignals (tests/e2e) signals an idle console;
// TestConsoleCtrlCCancelsTheCallOnATerminal and TestConsoleSignalInAPipeQuits
// (harnesscmd/internal/cli) in-process.

import (
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/harness-go/harness/internal/testkit/proctest"
)

func TestSignals(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		sig  syscall.Signal
		args []string // the harness command
		// stubborn servers ignore SIGTERM and the end of stdin.
		stubborn bool
		// duringCall: the signal comes while a 60 s call is in flight;
		// otherwise while the server's first tools/list hangs.
		duringCall bool
		code       int
		says       string // stdout or stderr says so
	}{
		{name: "SIGINT, one-shot, starting", sig: syscall.SIGINT, args: []string{"status"}, code: 1, says: "interrupt"},
		{name: "SIGINT, one-shot, starting, stubborn server", sig: syscall.SIGINT, args: []string{"tools"}, stubborn: true, code: 1, says: "interrupt"},
		{name: "SIGINT, console, starting", sig: syscall.SIGINT, args: []string{"run"}, stubborn: true, code: 0},
		{name: "SIGTERM, console, starting", sig: syscall.SIGTERM, args: []string{"run"}, code: 0},
		{name: "SIGINT, one-shot call in flight", sig: syscall.SIGINT, args: []string{"call", "mcp__fx__sleep", `{"ms":60000}`}, duringCall: true, code: 1, says: "cancelled"},
		{name: "SIGINT, one-shot call in flight, stubborn server", sig: syscall.SIGINT, args: []string{"call", "mcp__fx__sleep", `{"ms":60000}`}, duringCall: true, stubborn: true, code: 1, says: "cancelled"},
		{name: "SIGINT, console call in flight", sig: syscall.SIGINT, args: []string{"run"}, duringCall: true, code: 0},
		{name: "SIGTERM, console call in flight, stubborn server", sig: syscall.SIGTERM, args: []string{"run"}, duringCall: true, stubborn: true, code: 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			pidFile := filepath.Join(dir, "pids")
			killLeftovers(t, pidFile)
			log := newFifoLog(t, dir, "fixture.log")
			args := []string{"--only", "echo,sleep", "--grandchild", "--pidfile", pidFile, "--log", log.path}
			if tc.stubborn {
				args = append(args, "--ignore-sigterm")
			}
			if !tc.duringCall {
				args = append(args, "--hang-on", "tools/list")
			}
			writeConfig(t, dir, cordis(stdioEnt("fx", "fx", args...)))
			s := start(t, harnessBin, dir, nil, append(tc.args, "--log-level", "info")...)

			if tc.duringCall {
				if tc.args[0] == "run" {
					s.do("/tools")
					s.send(`/call mcp__fx__sleep {"ms":60000}` + "\n")
				}
				log.waitMethod(t, "tools/call")
			} else {
				// Initialized, the first listing unanswered: still starting.
				log.waitMethod(t, "tools/list")
			}
			// The server has started its grandchild before it read its
			// first request.
			pids := readPIDs(t, pidFile)
			if len(pids) != 2 {
				t.Fatalf("pid file lists %v: want the server and its grandchild", pids)
			}

			at := s.signal(tc.sig)
			code := s.waitExit()
			took := s.exit.At().Sub(at)
			if code != tc.code {
				t.Errorf("exit code %d, want %d\n%s", code, tc.code, s.dump())
			}
			if took > closeBound {
				t.Errorf("the harness exited %s after %s (bound %s)", took.Round(time.Millisecond), tc.sig, closeBound)
			}
			if tc.says != "" && !strings.Contains(s.out.Text()+s.err.Text(), tc.says) {
				t.Errorf("nothing says %q\n%s", tc.says, s.dump())
			}
			if alive := proctest.WaitDead(pids, time.Second); len(alive) > 0 {
				t.Errorf("after %s the harness exited but these processes it started still run: %s\n%s", tc.sig, proctest.Describe(alive), s.dump())
			}
		})
	}
}
