package e2e

// The console (`harness run`) driven through a pipe, as a script would.

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/harness-go/harness/internal/testkit/proctest"
)

// A piped session: the first /tools already sees every tool (the console
// settles first), /call works, a live edit adding an entry is applied
// without touching the others, the new tools are listed and callable, and
// /quit exits 0.
func TestConsoleSession(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	base := echoEntry + fixtureEntry("fx", "fx", "--only", "echo,sleep")
	writeConfig(t, dir, base)
	s := startSession(t, runConfig{dir: dir})

	first := s.do("/tools")
	if got, want := toolNames(first), []string{"clock", "echo", "mcp__fx__echo", "mcp__fx__sleep"}; !slices.Equal(got, want) {
		t.Fatalf("first /tools = %v, want %v\n%s", got, want, s.dump())
	}
	if got := s.do(`/call mcp__fx__echo {"message":"hello console"}`); !slices.Equal(got, []string{"echo: hello console"}) {
		t.Fatalf("/call printed %q\n%s", got, s.dump())
	}
	if got := s.do(`/call echo {"message":"native"}`); !slices.Equal(got, []string{"native"}) {
		t.Fatalf("/call echo printed %q\n%s", got, s.dump())
	}

	mark := s.mark()
	writeConfig(t, dir, base+stdioEntry("demo", "mcp-client", "demo", demoBin))
	s.waitErr(mark, `"tools added … mcp__demo__calc"`, containsAll("tools added", "mcp__demo__calc"))
	ready := s.waitErr(mark, `"demo ready"`, hasPrefix("harness: demo ready"))

	second := s.do("/tools")
	names := toolNames(second)
	for _, n := range append(toolNames(first), "mcp__demo__calc", "mcp__demo__base64", "mcp__demo__wordcount") {
		if !contains(names, n) {
			t.Errorf("/tools after the edit lacks %s: %v", n, names)
		}
	}
	if !slices.IsSorted(names) {
		t.Errorf("/tools is not sorted: %v", names)
	}
	if got := s.do(`/call mcp__demo__calc {"expression":"6*7"}`); !slices.Equal(got, []string{"42"}) {
		t.Errorf("/call mcp__demo__calc printed %q\n%s", got, s.dump())
	}
	// Only the new entry started: fx and echo were left alone.
	for _, l := range s.err.Slice(mark, ready+1) {
		if strings.HasPrefix(l, "harness: fx ") || strings.HasPrefix(l, "harness: echo ") || strings.Contains(l, "removed") {
			t.Errorf("an unchanged entry was touched by the edit: %q\n%s", l, s.dump())
		}
	}

	s.send("/quit\n")
	if code := s.waitExit(); code != 0 {
		t.Fatalf("/quit: exit code %d, want 0\n%s", code, s.dump())
	}
}

var filePos = regexp.MustCompile(`cordis\.yml:\d+`)

// A broken edit changes nothing and says why, with cordis.yml:line; the
// fixed file then applies.
func TestConsoleBrokenEditChangesNothing(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	writeConfig(t, dir, fixtureEntry("fx", "fx", "--only", "echo"))
	s := startSession(t, runConfig{dir: dir})
	first := s.do("/tools")
	if got := toolNames(first); !slices.Equal(got, []string{"mcp__fx__echo"}) {
		t.Fatalf("first /tools = %v\n%s", got, s.dump())
	}

	mark := s.mark()
	writeConfig(t, dir, "- id: fx\n  name: mcp-client\n  config: [\n")
	s.waitErr(mark, `"reload refused" with cordis.yml:line`, func(l string) bool {
		return strings.Contains(l, "refused") && filePos.MatchString(l)
	})
	if got := s.do("/tools"); !slices.Equal(got, first) {
		t.Fatalf("/tools after a broken edit = %q, want it unchanged %q\n%s", got, first, s.dump())
	}
	if got := s.do(`/call mcp__fx__echo {"message":"still here"}`); !slices.Equal(got, []string{"echo: still here"}) {
		t.Fatalf("/call after a broken edit printed %q\n%s", got, s.dump())
	}

	mark = s.mark()
	writeConfig(t, dir, fixtureEntry("fx", "fy", "--only", "echo"))
	s.waitErr(mark, `"tools added mcp__fy__echo"`, containsAll("tools added", "mcp__fy__echo"))
	if got := toolNames(s.do("/tools")); !slices.Equal(got, []string{"mcp__fy__echo"}) {
		t.Fatalf("/tools after the fix = %v\n%s", got, s.dump())
	}
	s.send("/quit\n")
	if code := s.waitExit(); code != 0 {
		t.Fatalf("/quit: exit code %d\n%s", code, s.dump())
	}
}

// EOF on stdin shuts the console down with exit 0, after finishing the
// command in flight.
func TestConsoleEOF(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	writeConfig(t, dir, fixtureEntry("fx", "fx", "--only", "echo,sleep"))

	t.Run("idle", func(t *testing.T) {
		t.Parallel()
		s := startSession(t, runConfig{dir: dir})
		s.do("/tools")
		s.stdin.Close()
		if code := s.waitExit(); code != 0 {
			t.Fatalf("EOF: exit code %d, want 0\n%s", code, s.dump())
		}
	})
	t.Run("command in flight", func(t *testing.T) {
		t.Parallel()
		s := startSession(t, runConfig{dir: dir})
		s.do("/tools")
		s.send(`/call mcp__fx__sleep {"ms":300}` + "\n")
		s.stdin.Close()
		if code := s.waitExit(); code != 0 {
			t.Fatalf("EOF: exit code %d, want 0\n%s", code, s.dump())
		}
		if !contains(s.out.Slice(s.cursor, s.out.Len()), "slept") {
			t.Fatalf("the call in flight at EOF did not finish\n%s", s.dump())
		}
	})
	t.Run("before settling", func(t *testing.T) {
		t.Parallel()
		// Piped input that is all there at start: the commands still run
		// after settling, then EOF ends the session.
		r := harnessWith(t, runConfig{dir: dir, stdin: "/tools\n/call mcp__fx__echo {\"message\":\"piped\"}\n"})
		expectCode(t, r, 0)
		if r.stdout != "mcp__fx__echo  Echo a message back.\nmcp__fx__sleep  Sleep, then answer; records cancellation.\necho: piped\n" {
			t.Errorf("stdout %q\n%s", r.stdout, r)
		}
	})
}

// SIGTERM (and SIGINT, in a pipe) stop the console with exit 0, and the
// servers it started are gone, grandchildren that ignore SIGTERM included.
func TestConsoleSignals(t *testing.T) {
	t.Parallel()
	for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGINT} {
		t.Run(sig.String(), func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			pidfile := filepath.Join(dir, "pids")
			writeConfig(t, dir, fixtureEntry("fx", "fx", "--only", "echo", "--grandchild", "--pidfile", pidfile))
			s := startSession(t, runConfig{dir: dir})
			s.do("/tools")

			b, err := os.ReadFile(pidfile)
			if err != nil {
				t.Fatal(err)
			}
			var pids []int
			for _, f := range strings.Fields(string(b)) {
				p, err := strconv.Atoi(f)
				if err != nil {
					t.Fatalf("pidfile %q: %v", b, err)
				}
				pids = append(pids, p)
			}
			if len(pids) < 2 {
				t.Fatalf("pidfile %q: want the server and its grandchild", b)
			}
			if alive := proctest.WaitDead(pids, 0); len(alive) != len(pids) {
				t.Fatalf("servers %v already gone before the signal", pids)
			}

			s.signal(sig)
			if code := s.waitExit(); code != 0 {
				t.Fatalf("%s: exit code %d, want 0\n%s", sig, code, s.dump())
			}
			if alive := proctest.WaitDead(pids, 5*time.Second); len(alive) > 0 {
				t.Fatalf("after %s the harness exited but these processes it started live on: %s (all: %v)\n%s", sig, proctest.Describe(alive), pids, s.dump())
			}
		})
	}
}
