package e2e

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"net"
	"net/http"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/harness-go/harness/internal/testkit/proctest"
)

// stream collects the lines a process writes to one of its pipes, and lets
// a test wait for a line with a deadline.
type stream = proctest.Lines

func equals(want string) func(string) bool { return func(l string) bool { return l == want } }
func hasPrefix(p string) func(string) bool {
	return func(l string) bool { return strings.HasPrefix(l, p) }
}
func containsAll(parts ...string) func(string) bool {
	return func(l string) bool {
		for _, p := range parts {
			if !strings.Contains(l, p) {
				return false
			}
		}
		return true
	}
}

// session is `harness run` (or any long-running harness command) driven
// through pipes.
type session struct {
	t      *testing.T
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	out    *stream
	err    *stream
	cursor int // stdout lines already consumed by do
	marks  int // stderr fences sent by mark
	exit   *proctest.Exit
}

// startSession starts the harness with args in rc.dir; stdin stays open
// until the test closes it.
func startSession(t *testing.T, rc runConfig, args ...string) *session {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	cmd := exec.CommandContext(ctx, harnessBin, args...)
	cmd.Dir = rc.dir
	cmd.Env = environ(rc.env, rc.unset)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	s := &session{t: t, cmd: cmd, stdin: stdin}
	s.out, s.err = proctest.Start(t, cmd, 0)
	t.Cleanup(func() { // once the process is gone (Await's cleanup runs first)
		cancel()
		proctest.NoRaceOrPanic(t, s.err.Text())
		printed.Output(fmt.Sprintf("the session `harness %s` of %s", strings.Join(args, " "), t.Name()), s.out.Text()+"\n"+s.err.Text())
	})
	s.exit = proctest.Await(t, cmd)
	return s
}

func (s *session) dump() string {
	return fmt.Sprintf("--- stdout ---\n%s\n--- stderr ---\n%s", s.out.Text(), s.err.Text())
}

// send writes text to the console's stdin.
func (s *session) send(text string) {
	s.t.Helper()
	if _, err := io.WriteString(s.stdin, text); err != nil {
		s.t.Fatalf("writing %q to the console: %v\n%s", text, err, s.dump())
	}
}

// do runs one console command and returns the stdout lines it printed. A
// /help after it marks the end of its output.
func (s *session) do(command string) []string {
	s.t.Helper()
	s.send(command + "\n/help\n")
	start, ok := s.out.Find(s.cursor, waitTimeout, equals("commands:"))
	if !ok {
		s.t.Fatalf("no output fence after %q\n%s", command, s.dump())
	}
	end, ok := s.out.Find(start, waitTimeout, hasPrefix("  /quit"))
	if !ok {
		s.t.Fatalf("/help output incomplete after %q\n%s", command, s.dump())
	}
	got := s.out.Slice(s.cursor, start)
	s.cursor = end + 1
	return got
}

// mark returns a stderr position such that every event that happened
// before the call is above it: it sends an unknown command, which the
// console reports on stderr after everything already printed there, and
// returns the index after that report. waitErr(mark, …) then sees only what
// happens next.
func (s *session) mark() int {
	s.t.Helper()
	s.marks++
	token := fmt.Sprintf("/e2e-mark-%d", s.marks)
	s.send(token + "\n")
	i, ok := s.err.Find(0, waitTimeout, containsAll(`"`+token+`"`))
	if !ok {
		s.t.Fatalf("the console did not report the unknown command %s on stderr\n%s", token, s.dump())
	}
	return i + 1
}

// waitErr waits for a stderr line at or after from that matches; it returns
// the line's index.
func (s *session) waitErr(from int, what string, match func(string) bool) int {
	s.t.Helper()
	i, ok := s.err.Find(from, waitTimeout, match)
	if !ok {
		s.t.Fatalf("no stderr line %s\n%s", what, s.dump())
	}
	return i
}

// waitExit waits for the harness to exit and its pipes to close; it
// returns the exit code.
func (s *session) waitExit() int {
	s.t.Helper()
	select {
	case <-s.exit.Done():
	case <-time.After(waitTimeout):
		s.t.Fatalf("the harness did not exit within %s\n%s", waitTimeout, s.dump())
	}
	for _, p := range []struct {
		name string
		st   *stream
	}{{"stdout", s.out}, {"stderr", s.err}} {
		if !p.st.WaitClosed(10 * time.Second) {
			s.t.Fatalf("the harness exited but its %s stayed open (a leaked process holds it)\n%s", p.name, s.dump())
		}
	}
	return s.exit.Code()
}

// signal sends sig to the harness process.
func (s *session) signal(sig syscall.Signal) {
	s.t.Helper()
	if err := s.cmd.Process.Signal(sig); err != nil {
		s.t.Fatal(err)
	}
}

// publicName is the public tool name of docs/rfc/0003-mcp-client.md
// ("Names"), written from its rule.
func publicName(serverName, raw string) string {
	joined := "mcp__" + serverName + "__" + raw
	var b strings.Builder
	for _, r := range joined {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '_', r == '-':
			b.WriteRune(r)
		case r > 0xFFFF: // two UTF-16 code units
			b.WriteString("__")
		default:
			b.WriteByte('_')
		}
	}
	normalized := b.String()
	if normalized == joined && len(normalized) <= 64 {
		return normalized
	}
	sum := sha256.Sum256([]byte(serverName + "\x00" + raw))
	if len(normalized) > 51 {
		normalized = normalized[:51]
	}
	return normalized + "_" + hex.EncodeToString(sum[:])[:12]
}

// TestPublicNameVectors checks the tests' own copy of the naming algorithm
// against the vectors of RFC 0003 ("Names"), so the names the tests expect are right.
func TestPublicNameVectors(t *testing.T) {
	t.Parallel()
	for _, v := range []struct{ server, raw, want string }{
		{"github", "create_issue", "mcp__github__create_issue"},
		{"srv", "admin.reset", "mcp__srv__admin_reset_3b185f786768"},
		{"gh", "a.b", "mcp__gh__a_b_506b5e9b51cb"},
		{"srv", strings.Repeat("x", 54), "mcp__srv__" + strings.Repeat("x", 54)},
		{"srv", strings.Repeat("x", 55), "mcp__srv__" + strings.Repeat("x", 41) + "_89af8a8d1d28"},
		{"srv", "héllo", "mcp__srv__h_llo_69aafb962afa"},
		{"srv", "😀x", "mcp__srv____x_ade70fbfc98a"},
	} {
		if got := publicName(v.server, v.raw); got != v.want {
			t.Errorf("publicName(%q, %q) = %q, want %q", v.server, v.raw, got, v.want)
		}
	}
}

// secret returns a unique random value with a recognisable prefix; the
// package's sweep checks that no harness output holds it.
func secret(t *testing.T, prefix string) string {
	t.Helper()
	return printed.Secret(prefix)
}

// server is a process a test started itself (an HTTP MCP server).
type server struct {
	cmd    *exec.Cmd
	out    *stream
	err    *stream
	exited chan struct{}
}

// startServer starts command in its own process group; the test's cleanup
// interrupts, then kills the group.
func startServer(t *testing.T, env []string, command string, args ...string) *server {
	t.Helper()
	cmd := exec.Command(command, args...)
	cmd.Env = environ(env, nil)
	cmd.Dir = t.TempDir()
	ownGroup(cmd)
	s := &server{cmd: cmd, exited: make(chan struct{})}
	s.out, s.err = proctest.Start(t, cmd, 0)
	go func() { cmd.Wait(); close(s.exited) }()
	t.Cleanup(func() {
		signalGroup(cmd, syscall.SIGINT)
		select {
		case <-s.exited:
		case <-time.After(5 * time.Second):
		}
		signalGroup(cmd, syscall.SIGKILL)
		<-s.exited
	})
	return s
}

func (s *server) dump() string {
	return fmt.Sprintf("--- server stdout ---\n%s\n--- server stderr ---\n%s", s.out.Text(), s.err.Text())
}

// startFixtureHTTP starts our fixture over Streamable HTTP and returns its
// URL, announced on its stdout once it accepts connections.
func startFixtureHTTP(t *testing.T, args ...string) string {
	t.Helper()
	s := startServer(t, nil, fixtureBin, append([]string{"--http", "127.0.0.1:0"}, args...)...)
	url, ok := listeningURL(s.out)
	if !ok {
		t.Fatalf("the HTTP fixture did not announce its URL\n%s", s.dump())
	}
	return url
}

// listeningURL waits for the "listening URL" line that our HTTP fixture
// and harness serve --http print once they accept connections.
func listeningURL(out *stream) (string, bool) {
	i, ok := out.Find(0, waitTimeout, hasPrefix("listening "))
	if !ok {
		return "", false
	}
	return strings.TrimPrefix(out.Slice(i, i+1)[0], "listening "), true
}

// freePort returns a TCP port on 127.0.0.1 that was free a moment ago.
func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// startEverythingHTTP starts server-everything over Streamable HTTP on a
// free port and returns its endpoint. The server prints its "listening" line
// even when the port is taken (FACTS.md), so readiness is an HTTP answer
// from a process that is still running; a lost port race is retried.
func startEverythingHTTP(t *testing.T, bin string) string {
	t.Helper()
	var last string
	for attempt := 0; attempt < 3; attempt++ {
		port := freePort(t)
		s := startServer(t, []string{"PORT=" + strconv.Itoa(port)}, bin, "streamableHttp")
		base := fmt.Sprintf("http://127.0.0.1:%d", port)
		if waitHTTP(base+"/", s.exited, waitTimeout) {
			return base + "/mcp"
		}
		last = s.dump()
	}
	t.Fatalf("server-everything did not start over HTTP\n%s", last)
	return ""
}

// waitHTTP polls url until it answers (any status) while the server runs.
func waitHTTP(url string, exited <-chan struct{}, d time.Duration) bool {
	client := &http.Client{Timeout: 2 * time.Second}
	deadline := time.NewTimer(d)
	defer deadline.Stop()
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		if resp, err := client.Get(url); err == nil {
			resp.Body.Close()
			select {
			case <-exited:
				return false
			default:
				return true
			}
		}
		select {
		case <-exited:
			return false
		case <-deadline.C:
			return false
		case <-tick.C:
		}
	}
}
