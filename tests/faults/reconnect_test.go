//go:build unix

package faults

// Rows 11a–11e: connections that survive (docs/rfc/0003-mcp-client.md, "Connections that survive"). A server that
// crashes again and again keeps its tools and answers between crashes; an
// HTTP server restarted behind the harness is used again; a crash loop
// leaks nothing; a one-shot call that times out tells the server before the
// harness exits. (plugins/mcpclient has the unit tests: the call that was
// sent is never sent twice, the supervisor gives up after maxAttempts, a
// session the server forgot is renewed.)

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/harness-go/harness/host"
	"github.com/harness-go/harness/internal/testkit/proctest"
	"github.com/harness-go/harness/plugins/mcpclient"
)

// quick is a reconnect policy for tests: short waits, many attempts.
var quick = map[string]any{"initialDelayMs": 20, "maxDelayMs": 200, "maxAttempts": 50}

// `harness run` with a server killed again and again: the tools never go,
// the console answers between crashes, and /quit leaves nothing.
func TestServerKilledRepeatedly(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	pidFile := filepath.Join(dir, "pids")
	killLeftovers(t, pidFile)
	writeConfig(t, dir, cordis(stdioEnt("fx", "fx", "--only", "echo,pid", "--pidfile", pidFile).with("reconnect", quick)))
	s := start(t, harnessBin, dir, nil, "--log-level", "info")
	s.do("/tools")
	var all []int
	for i := 1; i <= 5; i++ {
		pid := readPIDs(t, pidFile)[0]
		all = append(all, pid)
		from := s.err.Len()
		if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		s.waitErr(from, `"fx reconnecting"`, prefix("harness: fx reconnecting"))
		if got := s.do("/tools"); len(got) != 2 || !strings.HasPrefix(got[0], "mcp__fx__echo") {
			t.Fatalf("crash %d: /tools during the outage printed %q\n%s", i, got, s.dump())
		}
		// The call waits for the next connection.
		if got := s.do(`/call mcp__fx__echo {"message":"between crashes"}`); len(got) != 1 || got[0] != "echo: between crashes" {
			t.Fatalf("crash %d: the call printed %q\n%s", i, got, s.dump())
		}
		s.waitErr(from, `"fx ready" again`, prefix("harness: fx ready"))
	}
	all = append(all, readPIDs(t, pidFile)[0])
	s.send("/quit\n")
	if code := s.waitExit(); code != 0 {
		t.Fatalf("/quit: exit code %d\n%s", code, s.dump())
	}
	if left := proctest.WaitDead(all, closeBound); len(left) > 0 {
		t.Fatalf("processes left: %s", proctest.Describe(left))
	}
}

// An HTTP server stopped and started again on the same port behind a
// running harness: the entry reconnects by itself and its tools stay the
// same.
func TestHTTPServerRestartedBehindTheHarness(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	pidFile := filepath.Join(dir, "pids-http")
	killLeftovers(t, pidFile)
	server := func() *session {
		srv := start(t, fixtureBin, dir, nil, "--http", addr, "--only", "echo,pid", "--pidfile", pidFile)
		if _, ok := srv.out.Find(0, waitTimeout, has("listening")); !ok {
			t.Fatalf("the HTTP fixture did not start\n%s", srv.dump())
		}
		return srv
	}
	first := server()
	writeConfig(t, dir, cordis(httpEnt("web", "web", "http://"+addr+"/mcp").with("reconnect", quick)))
	s := start(t, harnessBin, dir, nil, "--log-level", "info")
	before := s.do("/tools")
	if got := s.do(`/call mcp__web__echo {"message":"before"}`); len(got) != 1 || got[0] != "echo: before" {
		t.Fatalf("before: %q\n%s", got, s.dump())
	}

	from := s.err.Len()
	first.signal(syscall.SIGKILL)
	first.waitExit()
	s.waitErr(from, `"web reconnecting"`, prefix("harness: web reconnecting"))
	server()
	s.waitErr(from, `"web ready" again`, prefix("harness: web ready"))
	if got := s.do(`/call mcp__web__echo {"message":"after"}`); len(got) != 1 || got[0] != "echo: after" {
		t.Fatalf("after the restart: %q\n%s", got, s.dump())
	}
	if after := s.do("/tools"); strings.Join(after, "\n") != strings.Join(before, "\n") {
		t.Fatalf("the tools changed:\n%s\n---\n%s", strings.Join(before, "\n"), strings.Join(after, "\n"))
	}
	s.send("/quit\n")
	if code := s.waitExit(); code != 0 {
		t.Fatalf("/quit: exit code %d\n%s", code, s.dump())
	}
}

// A crash loop of 200 crashes leaks nothing: goroutines, descriptors and
// child processes are back where they were once the server is up again, and
// every server that crashed is reaped.
func TestCrashLoopLeaksNothing(t *testing.T) {
	w := newWorld(t)
	pidFile := w.pidFile("loop")
	w.mustLoad(cordis(fixtureEnt("loop", "loop", "--only", "echo,pid", "--pidfile", pidFile).
		with("reconnect", map[string]any{"initialDelayMs": 1, "maxDelayMs": 1, "maxAttempts": 5})))
	w.Settle(30 * time.Second)
	w.wantCall("mcp__loop__echo", `{"message":"x"}`, "echo: x")
	baseG, baseFD, baseKids := runtime.NumGoroutine(), openFDs(t), children(t)

	const crashes = 200
	var pids []int
	for i := 1; i <= crashes; i++ {
		pid := readPIDs(t, pidFile)[0]
		pids = append(pids, pid)
		if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		w.WaitEntry("loop", 30*time.Second, fmt.Sprintf("reconnect %d", i), func(e host.EntryStatus) bool {
			st, _ := e.Details.(*mcpclient.Status)
			return e.State == host.Ready && st != nil && st.Reconnects == i
		})
	}
	w.wantCall("mcp__loop__echo", `{"message":"y"}`, "echo: y")
	for _, pid := range pids {
		if ok, p := proctest.WaitProc(pid, exitBound, reaped); !ok {
			t.Fatalf("server %d was not reaped: state %c, parent %d", pid, p.State, p.PPID)
		}
	}
	// What each connection started has stopped; nothing reports it, so poll
	// with a deadline (as goleak does).
	deadline := time.Now().Add(10 * time.Second)
	for {
		g, fd, kids := runtime.NumGoroutine(), openFDs(t), children(t)
		if g <= baseG && fd <= baseFD && kids <= baseKids {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after %d crashes: %d goroutines (was %d), %d descriptors (was %d), %d children (was %d)", crashes, g, baseG, fd, baseFD, kids, baseKids)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func openFDs(t *testing.T) int {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	return len(ents)
}

// children counts this process's child processes, zombies included.
func children(t *testing.T) int {
	t.Helper()
	self := os.Getpid()
	n := 0
	for _, pid := range proctest.Pids(t) {
		if proctest.Inspect(pid).PPID == self {
			n++
		}
	}
	return n
}

// A one-shot call that times out tells the server before the harness exits:
// the server receives notifications/cancelled for it.
func TestTimedOutCallIsCancelledBeforeExit(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	log := newFifoLog(t, dir, "fixture.log")
	pidFile := filepath.Join(dir, "pids")
	killLeftovers(t, pidFile)
	writeConfig(t, dir, cordis(stdioEnt("fx", "fx", "--only", "sleep", "--log", log.path, "--pidfile", pidFile).with("toolCallTimeoutMs", 300)))
	r := oneShot(t, dir, nil, "call", "mcp__fx__sleep", `{"ms":60000}`)
	if r.code != 1 || !strings.Contains(r.stdout, "timed out after 300ms") {
		t.Fatalf("the call: %s", r)
	}
	// The harness has exited: the server heard of the cancellation before.
	if _, ok := log.Find(0, time.Second, has(`"method":"notifications/cancelled"`)); !ok {
		t.Fatalf("the server never received notifications/cancelled; it received:\n%s", log.Text())
	}
}

// Row 12a through the binary, as a person would see it: a script calls a
// tool through the console without pause while the entry's args are edited
// 50 times; no call fails, and an edit of toolCallTimeoutMs alone keeps the
// server's process.
func TestConsoleCallsDuringEdits(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	pidFile := filepath.Join(dir, "pids")
	killLeftovers(t, pidFile)
	entry := func(i, timeout int) string {
		return cordis(stdioEnt("fx", "fx", "--only", "echo,pid", "--pidfile", pidFile, "--name", fmt.Sprintf("v%d", i)).with("toolCallTimeoutMs", timeout))
	}
	writeConfig(t, dir, entry(0, 60000))
	s := start(t, harnessBin, dir, nil)
	s.do("/tools")

	stop := make(chan struct{})
	failures := make(chan string, 1)
	calls := 0
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			select {
			case <-stop:
				return
			default:
			}
			got, err := s.tryDo(`/call mcp__fx__echo {"message":"x"}`)
			calls++
			if err != nil || len(got) != 1 || got[0] != "echo: x" {
				select {
				case failures <- fmt.Sprintf("%q %v", got, err):
				default:
				}
				return
			}
		}
	}()
	for i := 1; i <= 50; i++ {
		from := s.err.Len()
		writeConfig(t, dir, entry(i, 60000))
		s.waitErr(from, fmt.Sprintf(`"fx ready" after edit %d`, i), prefix("harness: fx ready"))
	}
	close(stop)
	<-done
	select {
	case f := <-failures:
		t.Fatalf("a call failed during the edits: %s\n%s", f, s.dump())
	default:
	}
	if calls < 50 {
		t.Errorf("only %d calls during 50 edits", calls)
	}
	pid := readPIDs(t, pidFile)[0]
	from := s.err.Len()
	writeConfig(t, dir, entry(50, 1234))
	s.waitErr(from, `"reloaded: updated fx"`, has("reloaded", "updated fx"))
	if got := readPIDs(t, pidFile)[0]; got != pid {
		t.Fatalf("editing toolCallTimeoutMs started a new server: pid %d, was %d", got, pid)
	}
	if got := s.do(`/call mcp__fx__pid {}`); len(got) != 1 || got[0] != strconv.Itoa(pid) {
		t.Fatalf("the server answering is %q, want pid %d", got, pid)
	}
	s.send("/quit\n")
	if code := s.waitExit(); code != 0 {
		t.Fatalf("/quit: exit code %d\n%s", code, s.dump())
	}
}
