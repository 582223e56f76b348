//go:build unix

package faults

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/harness-go/harness/internal/testkit/proctest"
)

// waitTimeout bounds one wait for an expected line or event: far above any
// bound a test asserts, it only keeps a broken test from hanging.
const waitTimeout = 60 * time.Second

// lines collects what a process writes to one pipe, line by line, and lets
// a test wait for a line.
type lines = proctest.Lines

// maxKept bounds what lines keeps of one line: a harness that prints a
// huge text must not make the test itself hold it.
const maxKept = 64 << 10

func readLines(r io.Reader) *lines { return proctest.ReadLines(r, maxKept) }

func has(parts ...string) func(string) bool {
	return func(s string) bool {
		for _, p := range parts {
			if !strings.Contains(s, p) {
				return false
			}
		}
		return true
	}
}

func prefix(p string) func(string) bool {
	return func(s string) bool { return strings.HasPrefix(s, p) }
}

// environ is the test's environment for the harness: GORACE reset so a
// race-enabled harness exits at once, env on top.
func environ(env ...string) []string {
	drop := map[string]bool{"GORACE": true}
	for _, kv := range env {
		k, _, _ := strings.Cut(kv, "=")
		drop[k] = true
	}
	var out []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		if !drop[k] {
			out = append(out, kv)
		}
	}
	if raceEnabled {
		// A race-enabled binary sleeps a second before exiting unless told
		// otherwise; that second would count against every exit bound.
		out = append(out, "GORACE=atexit_sleep_ms=0")
	}
	return append(out, env...)
}

// result is what one harness command did.
type result struct {
	args           []string
	stdout, stderr string
	code           int
	took           time.Duration
	cpu            time.Duration // user and system time of the process
	maxRSS         int           // peak resident size of the harness and what it reaped, in bytes
}

func (r result) String() string {
	return fmt.Sprintf("harness %s\nexit code %d after %s\n--- stdout ---\n%s\n--- stderr ---\n%s",
		strings.Join(r.args, " "), r.code, r.took.Round(time.Millisecond), clip(r.stdout, 4000), clip(r.stderr, 8000))
}

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + fmt.Sprintf("… (%d bytes)", len(s))
}

// oneShot runs a harness command in dir to its end.
func oneShot(t *testing.T, dir string, env []string, args ...string) result {
	t.Helper()
	return oneShotWith(t, harnessBin, dir, env, args...)
}

// oneShotWith is oneShot with another build of the harness.
func oneShotWith(t *testing.T, bin, dir string, env []string, args ...string) result {
	t.Helper()
	run := proctest.Run(t, proctest.Command{
		Path: bin, Args: args, Dir: dir, Env: environ(env...),
		Record: func(stdout, stderr string) {
			printed.Output(fmt.Sprintf("`harness %s` in %s", strings.Join(args, " "), t.Name()), stdout+"\n"+stderr)
		},
	})
	r := result{args: args, stdout: run.Stdout, stderr: run.Stderr, code: run.Code, took: run.Took}
	if ru, ok := run.State.SysUsage().(*syscall.Rusage); ok {
		r.maxRSS = int(ru.Maxrss) << 10 // kilobytes on Linux
		r.cpu = time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	}
	return r
}

// noRaceOrPanic fails the test when the harness reported a data race or a
// panic reached the user.
func noRaceOrPanic(t *testing.T, stderr string) {
	t.Helper()
	proctest.NoRaceOrPanic(t, stderr)
}

// session is a long-running harness (`run`) driven through pipes.
type session struct {
	t     *testing.T
	cmd   *exec.Cmd
	inMu  sync.Mutex
	stdin io.WriteCloser
	out   *lines
	err   *lines
	exit  *proctest.Exit
}

// start starts the harness binary bin with args in dir.
func start(t *testing.T, bin, dir string, env []string, args ...string) *session {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Dir = dir
	cmd.Env = environ(env...)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	s := &session{t: t, cmd: cmd, stdin: stdin}
	s.out, s.err = proctest.Start(t, cmd, maxKept)
	t.Cleanup(func() { // once the process is gone (Await's cleanup runs first)
		proctest.NoRaceOrPanic(t, s.err.Text())
		printed.Output(fmt.Sprintf("the session `harness %s` of %s", strings.Join(args, " "), t.Name()), s.out.Text()+"\n"+s.err.Text())
	})
	s.exit = proctest.Await(t, cmd)
	return s
}

func (s *session) pid() int { return s.cmd.Process.Pid }

func (s *session) dump() string {
	return fmt.Sprintf("--- stdout ---\n%s\n--- stderr ---\n%s", clip(s.out.Text(), 4000), clip(s.err.Text(), 12000))
}

// send writes console input.
func (s *session) send(text string) {
	s.t.Helper()
	s.inMu.Lock()
	defer s.inMu.Unlock()
	if _, err := io.WriteString(s.stdin, text); err != nil {
		s.t.Fatalf("writing %q to the console: %v\n%s", text, err, s.dump())
	}
}

// closeStdin sends EOF.
func (s *session) closeStdin() {
	s.inMu.Lock()
	defer s.inMu.Unlock()
	s.stdin.Close()
}

func (s *session) signal(sig syscall.Signal) time.Time {
	s.t.Helper()
	at := time.Now()
	if err := s.cmd.Process.Signal(sig); err != nil {
		s.t.Fatal(err)
	}
	return at
}

// waitErr waits for a stderr line at or after from.
func (s *session) waitErr(from int, what string, match func(string) bool) int {
	s.t.Helper()
	i, ok := s.err.Find(from, waitTimeout, match)
	if !ok {
		s.t.Fatalf("no stderr line %s\n%s", what, s.dump())
	}
	return i
}

// do runs one console command and returns what it printed on stdout; a
// /help after it marks the end of its output.
func (s *session) do(command string) []string {
	s.t.Helper()
	got, err := s.tryDo(command)
	if err != nil {
		s.t.Fatalf("%v\n%s", err, s.dump())
	}
	return got
}

// tryDo is do for goroutines other than the test's: it returns an error
// instead of failing the test.
func (s *session) tryDo(command string) ([]string, error) {
	from := s.out.Len()
	s.inMu.Lock()
	_, err := io.WriteString(s.stdin, command+"\n/help\n")
	s.inMu.Unlock()
	if err != nil {
		return nil, fmt.Errorf("writing %q to the console: %v", command, err)
	}
	start, ok := s.out.Find(from, waitTimeout, func(l string) bool { return l == "commands:" })
	if !ok {
		return nil, fmt.Errorf("no output fence after %q", command)
	}
	if _, ok := s.out.Find(start, waitTimeout, prefix("  /quit")); !ok {
		return nil, fmt.Errorf("the /help after %q is incomplete", command)
	}
	return s.out.From(from)[:start-from], nil
}

// waitExit waits for the harness to exit and for its pipes to close (a
// process it left behind could hold them); it returns the exit code.
func (s *session) waitExit() int {
	s.t.Helper()
	select {
	case <-s.exit.Done():
	case <-time.After(waitTimeout):
		s.t.Fatalf("the harness did not exit within %s\n%s", waitTimeout, s.dump())
	}
	for _, p := range []struct {
		name string
		l    *lines
	}{{"stdout", s.out}, {"stderr", s.err}} {
		if !p.l.WaitClosed(10 * time.Second) {
			s.t.Fatalf("the harness exited but its %s stayed open: a process it started holds it\n%s", p.name, s.dump())
		}
	}
	return s.exit.Code()
}

// ent is one cordis.yml entry. It is written as JSON, which is YAML.
type ent struct {
	ID       string         `json:"id"`
	Name     string         `json:"name"`
	Disabled bool           `json:"disabled,omitempty"`
	Config   map[string]any `json:"config,omitempty"`
}

// cordis renders entries as a cordis.yml, one flow mapping per entry.
func cordis(entries ...ent) string {
	var b strings.Builder
	for _, e := range entries {
		data, err := json.Marshal(e)
		if err != nil {
			panic(err)
		}
		b.WriteString("- ")
		b.Write(data)
		b.WriteByte('\n')
	}
	return b.String()
}

// stdioEnt is an mcp-client entry running the fixture over stdio.
func stdioEnt(id, server string, args ...string) ent {
	return ent{ID: id, Name: "mcp-client", Config: map[string]any{
		"serverName": server,
		"transport":  "stdio",
		"command":    fixtureBin,
		"args":       append([]string{}, args...),
	}}
}

// httpEnt is an mcp-client entry for a Streamable HTTP server.
func httpEnt(id, server, url string) ent {
	return ent{ID: id, Name: "mcp-client", Config: map[string]any{
		"serverName": server,
		"transport":  "streamable-http",
		"url":        url,
	}}
}

// with returns e with config key k set to v.
func (e ent) with(k string, v any) ent {
	c := make(map[string]any, len(e.Config)+1)
	for key, val := range e.Config {
		c[key] = val
	}
	c[k] = v
	e.Config = c
	return e
}

// writeConfig replaces dir/cordis.yml the way editors save: a new file
// renamed over the old one.
func writeConfig(t testing.TB, dir, content string) {
	t.Helper()
	tmp := filepath.Join(dir, ".cordis.yml.tmp")
	if err := os.WriteFile(tmp, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, filepath.Join(dir, "cordis.yml")); err != nil {
		t.Fatal(err)
	}
}

// fifoLog is a named pipe given to the fixture as --log: the fixture appends
// one JSON line per message it receives, so a test learns, as an event, that
// a request reached the server.
type fifoLog struct {
	path string
	*lines
}

func newFifoLog(t *testing.T, dir, name string) *fifoLog {
	t.Helper()
	path, l := proctest.Fifo(t, dir, name, maxKept)
	return &fifoLog{path: path, lines: l}
}

// waitMethod waits until the fixture received a message with this method.
func (f *fifoLog) waitMethod(t *testing.T, method string) {
	t.Helper()
	if _, ok := f.Find(0, waitTimeout, has(`"method":"`+method+`"`)); !ok {
		t.Fatalf("the fixture never received %s; it received:\n%s", method, f.Text())
	}
}
