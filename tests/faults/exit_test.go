//go:build unix

package faults

// Row 1: a server exits — during initialize, during the first tools/list,
// in the middle of a call, or between calls. Whatever the phase: an error
// result or a failed entry with the reason, its tools unregistered, no hang,
// the process reaped (no zombie), and the other servers untouched.
//
// Elsewhere: TestStdioStartupFailures and TestStdioCrashMidCall
// (plugins/mcpclient) pin the exact messages; TestStatusFailingEntry
// (tests/e2e) shows them through `harness status`.

import (
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/harness-go/harness/host"
	"github.com/harness-go/harness/internal/testkit/proctest"
)

// exitBound bounds how long a server's exit takes to become a failed entry
// or an error result: no timeout may stand in for noticing the exit.
const exitBound = 5 * time.Second

func TestServerExitInAnyPhase(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		args []string
		// act makes the server exit once the entry is loaded and returns
		// the result of the call it made, if any.
		act func(w *world, pid int) (result string, called bool)
		// reason must all appear in the failure.
		reason []string
	}{
		{
			name:   "during initialize",
			args:   []string{"--exit-on", "initialize"},
			reason: []string{"initialize", "the server exited with status 3", "last stderr: mcpfixture: received initialize"},
		},
		{
			name:   "during the first tools/list",
			args:   []string{"--exit-on", "tools/list"},
			reason: []string{"tools/list", "the server exited with status 3", "last stderr: mcpfixture: received tools/list"},
		},
		{
			name: "in the middle of a call",
			args: []string{"--exit-on", "tools/call"},
			act: func(w *world, _ int) (string, bool) {
				res := w.Call("mcp__victim__echo", `{"message":"x"}`)
				if !res.IsError || !strings.Contains(res.Text, "connection lost during the call: ") {
					w.t.Errorf("the call whose server exited: %+v", res)
				}
				return res.Text, true
			},
			reason: []string{"the server exited with status 3", "received tools/call"},
		},
		{
			name: "between calls (SIGKILL)",
			act: func(w *world, pid int) (string, bool) {
				w.wantCall("mcp__victim__echo", `{"message":"before"}`, "echo: before")
				if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
					w.t.Fatal(err)
				}
				return "", false
			},
			reason: []string{"connection lost: the server was killed by signal killed"},
		},
		{
			name: "between calls (SIGTERM)",
			act: func(w *world, pid int) (string, bool) {
				w.wantCall("mcp__victim__echo", `{"message":"before"}`, "echo: before")
				if err := syscall.Kill(pid, syscall.SIGTERM); err != nil {
					w.t.Fatal(err)
				}
				return "", false
			},
			reason: []string{"connection lost: the server was killed by signal terminated"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			w := newWorld(t)
			victimPIDs := w.pidFile("victim")
			args := append([]string{"--only", "echo,pid", "--pidfile", victimPIDs}, tc.args...)
			start := time.Now()
			w.mustLoad(cordis(
				fixtureEnt("ok", "ok", "--only", "echo", "--pidfile", w.pidFile("ok")),
				// Reconnect disabled: the seeds' behaviour, a server that
				// exits fails its entry (reconnect_test.go has the rest).
				fixtureEnt("victim", "victim", args...).with("reconnect", map[string]any{"enabled": false}),
			))
			w.Settle(30 * time.Second)
			pid := readPIDs(t, victimPIDs)[0]

			var text string
			var called bool
			if tc.act != nil {
				start = time.Now()
				text, called = tc.act(w, pid)
			}
			e := w.WaitState("victim", host.Failed, 30*time.Second)
			if took := time.Since(start); took > exitBound {
				t.Errorf("the exit took %s to be noticed (bound %s)", took, exitBound)
			}
			for _, part := range tc.reason {
				if !strings.Contains(e.Error, part) {
					t.Errorf("the failure %q does not say %q", e.Error, part)
				}
				if called && !strings.Contains(text, part) {
					t.Errorf("the call's error %q does not say %q", text, part)
				}
			}

			// Its tools are gone, at once, and say why when called.
			if names := w.Names("mcp__victim__"); len(names) != 0 {
				t.Errorf("the failed server's tools are still registered: %q", names)
			}
			if res := w.Call("mcp__victim__echo", `{"message":"x"}`); !res.IsError || !strings.Contains(res.Text, "unknown tool") {
				t.Errorf("calling a tool of the failed server: %+v", res)
			}
			// This process started the server: it must have been reaped.
			if ok, p := proctest.WaitProc(pid, exitBound, reaped); !ok {
				t.Errorf("server %d was not reaped: state %c, parent %d (this process is %d)", pid, p.State, p.PPID, syscall.Getpid())
			}
			// The other server did not notice.
			if s := w.Entry("ok"); s.State != host.Ready {
				t.Errorf("the healthy entry is %s: %s", s.State, s.Error)
			}
			w.wantCall("mcp__ok__echo", `{"message":"still here"}`, "echo: still here")
			if st := w.status("victim"); st.ToolCount != 0 {
				t.Errorf("status of the failed entry counts %d tools", st.ToolCount)
			}
			t.Logf("pid %s failed with %q", strconv.Itoa(pid), e.Error)
		})
	}
}
