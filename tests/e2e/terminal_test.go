package e2e

// The console on a real pseudo-terminal, as a person meets it: the line
// editor, completion, history, output arriving while a line is typed,
// bracketed paste, Ctrl-C and Ctrl-D. The screen is read through a small
// terminal emulator (screen_test.go), which also answers the editor's
// cursor position queries as a terminal does.

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/creack/pty"

	"github.com/harness-go/harness/internal/testkit/proctest"
)

// ttySession is `harness run` on a pseudo-terminal: stdin, stdout and
// stderr are its slave side, as in a terminal window.
type ttySession struct {
	t    *testing.T
	cmd  *exec.Cmd
	pty  *os.File
	scr  *screen
	exit *proctest.Exit
}

func startTTY(t *testing.T, rc runConfig, args ...string) *ttySession {
	t.Helper()
	return startTTYWith(t, rc, nil, args...)
}

// startTTYWith is startTTY with stdout on the file given; nil: on the
// terminal with the others.
func startTTYWith(t *testing.T, rc runConfig, stdout *os.File, args ...string) *ttySession {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	cmd := exec.CommandContext(ctx, harnessBin, args...)
	cmd.Dir = rc.dir
	cmd.Env = environ(append([]string{"TERM=xterm"}, rc.env...), rc.unset)
	if stdout != nil {
		cmd.Stdout = stdout
	}
	ptmx, err := pty.StartWithSize(cmd, &pty.Winsize{Rows: 40, Cols: 200})
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	s := &ttySession{t: t, cmd: cmd, pty: ptmx, scr: newScreen(200, 40, ptmx)}
	readDone := make(chan struct{})
	go func() {
		defer close(readDone)
		buf := make([]byte, 4096)
		for {
			n, err := ptmx.Read(buf)
			s.scr.Write(buf[:n])
			if err != nil {
				s.scr.close()
				return
			}
		}
	}()
	t.Cleanup(func() { // once the process is gone (Await's cleanup runs first)
		ptmx.Close()
		<-readDone
		cancel()
		proctest.NoRaceOrPanic(t, s.scr.raw.String())
		printed.Output(fmt.Sprintf("the terminal session `harness %s` of %s", strings.Join(args, " "), t.Name()), s.scr.raw.String())
	})
	s.exit = proctest.Await(t, cmd)
	return s
}

// openTTY opens a second pseudo-terminal and returns its slave side, for a
// harness's stdout, and a screen that shows what it prints there.
func openTTY(t *testing.T) (*os.File, *screen) {
	t.Helper()
	ptmx, tty, err := pty.Open()
	if err != nil {
		t.Fatal(err)
	}
	if err := pty.Setsize(ptmx, &pty.Winsize{Rows: 40, Cols: 200}); err != nil {
		t.Fatal(err)
	}
	scr := newScreen(200, 40, ptmx)
	readDone := make(chan struct{})
	go func() {
		defer close(readDone)
		buf := make([]byte, 4096)
		for {
			n, err := ptmx.Read(buf)
			scr.Write(buf[:n])
			if err != nil {
				scr.close()
				return
			}
		}
	}()
	t.Cleanup(func() {
		tty.Close()
		ptmx.Close()
		<-readDone
		printed.Output("the second terminal of "+t.Name(), scr.raw.String())
	})
	return tty, scr
}

// keys types text into the terminal.
func (s *ttySession) keys(text string) {
	s.t.Helper()
	if _, err := s.pty.Write([]byte(text)); err != nil {
		s.t.Fatalf("typing %q: %v\n%s", text, err, s.scr)
	}
}

// prompt waits until the cursor's row reads "> " followed by typed.
func (s *ttySession) prompt(typed string) view {
	s.t.Helper()
	want := strings.TrimRight("> "+typed, " ")
	return s.scr.waitFor(s.t, "the prompt "+want, func(v view) bool { return v.line() == want })
}

// waitLines waits until n rows of the screen read exactly text.
func (s *ttySession) waitLines(text string, n int) view {
	s.t.Helper()
	return s.scr.waitFor(s.t, "the line "+text, func(v view) bool { return v.count(text) >= n })
}

// quitWith types keys that end the console and checks that it exits 0.
func (s *ttySession) quitWith(keys, what string) {
	s.t.Helper()
	s.keys(keys)
	if code := s.waitExit(); code != 0 {
		s.t.Fatalf("%s: exit code %d\n%s", what, code, s.scr)
	}
}

func (s *ttySession) waitExit() int {
	s.t.Helper()
	select {
	case <-s.exit.Done():
	case <-time.After(waitTimeout):
		s.t.Fatalf("the harness did not exit within %s\n%s", waitTimeout, s.scr)
	}
	// What it printed last may still be in the pty: read to the end (a
	// process that holds the terminal after the harness is gone fails).
	s.scr.waitClosed(s.t)
	return s.exit.Code()
}

const (
	keyUp    = "\x1b[A"
	keyEnter = "\r"
	keyTab   = "\t"
	ctrlC    = "\x03"
	ctrlD    = "\x04"
	ctrlR    = "\x12"
	ctrlU    = "\x15"
	ctrlA    = "\x01"
	ctrlB    = "\x02"
	ctrlE    = "\x05"
	ctrlK    = "\x0b"
	ctrlW    = "\x17"
	ctrlY    = "\x19"
	altB     = "\x1bb"
	altF     = "\x1bf"
	altEnter = "\x1b\r"
	keyDown  = "\x1b[B"
)

// The editing keys the README lists do what it says.
func TestTerminalEditingKeys(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	writeConfig(t, dir, echoEntry)
	s := startTTY(t, runConfig{dir: dir, env: []string{"XDG_STATE_HOME=" + t.TempDir()}})
	s.prompt("")
	for _, step := range []struct{ keys, line string }{
		{"message\"world\"}", `message"world"}`},
		{ctrlA + `/call echo {"`, `/call echo {"message"world"}`},
		{ctrlE + ctrlW, `/call echo {"message"`},
		{`:"hello"}`, `/call echo {"message":"hello"}`},
		{ctrlA + ctrlK, ``},
		{`junk /call echo {"message":"edited"}`, `junk /call echo {"message":"edited"}`},
		{ctrlE + strings.Repeat(ctrlB, len(`/call echo {"message":"edited"}`)) + ctrlU, `/call echo {"message":"edited"}`},
		// Ctrl-Y pastes back what the last Ctrl-U, Ctrl-K or Ctrl-W deleted;
		// Ctrl-K shows where Alt-F and Alt-B left the cursor.
		{ctrlY, `junk /call echo {"message":"edited"}`},
		{ctrlA + altF + altF + ctrlK, `junk /call`},
		{ctrlY, `junk /call echo {"message":"edited"}`},
		{altB + altB + ctrlK, `junk /call echo {"`},
		{ctrlY, `junk /call echo {"message":"edited"}`},
		{ctrlA + altF + ctrlB + ctrlU, `/call echo {"message":"edited"}`},
	} {
		s.keys(step.keys)
		s.prompt(step.line)
	}
	s.keys(keyEnter)
	s.waitLines("edited", 1)
	s.prompt("")
	// Alt-Enter: a newline inside the line, which runs as one.
	s.keys(`/call echo {"message":` + altEnter + `"two lines"}`)
	s.prompt(`/call echo {"message":↵"two lines"}`)
	s.keys(keyEnter)
	s.waitLines("two lines", 1)
	s.prompt("")
	// Up and Down walk the history.
	s.keys(keyUp + keyUp)
	s.prompt(`/call echo {"message":"edited"}`)
	s.keys(keyDown)
	s.prompt(`/call echo {"message":↵"two lines"}`)
	s.quitWith(ctrlU+ctrlD, "Ctrl-D")
}

// Completion of a tool name from the live registry, a call, Up to recall
// it, Ctrl-R to find it; the history is kept under $XDG_STATE_HOME for the
// next session, without the line that held a secret.
func TestTerminalCompletionAndHistory(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	state := t.TempDir()
	const token = "e2e-console-secret-0451"
	rc := runConfig{dir: dir, env: []string{"XDG_STATE_HOME=" + state, "E2E_CONSOLE_TOKEN=" + token}}
	writeConfig(t, dir, echoEntry+stdioEntry("demo", "mcp-client", "demo", demoBin)+fixtureEntry("fx", "fx", "--only", "echo", "--resources"))
	s := startTTY(t, rc)

	s.prompt("")
	s.keys("/call mcp__demo__ca")
	s.prompt("/call mcp__demo__ca")
	s.keys(keyTab)
	s.prompt("/call mcp__demo__calc")
	s.keys(` {"expression":"6*7"}` + keyEnter)
	s.waitLines("42", 1)
	s.prompt("")

	s.keys(keyUp)
	s.prompt(`/call mcp__demo__calc {"expression":"6*7"}`)
	s.keys(keyEnter)
	s.waitLines("42", 2)
	s.prompt("")

	// A line holding a known secret runs, and is never kept.
	s.keys(`/call echo {"message":"` + token + `"}` + keyEnter)
	s.waitLines(token, 1)
	s.prompt("")
	s.keys("/tools" + keyEnter)
	s.waitLines("echo  Echo a message back unchanged.", 1)
	s.prompt("")

	// A prompt's argument value, as its server suggests it
	// (completion/complete through the mcp-client entry).
	s.keys("/prompt mcp__fx__summarize style=s")
	s.prompt("/prompt mcp__fx__summarize style=s")
	s.keys(keyTab)
	s.prompt("/prompt mcp__fx__summarize style=short")
	s.keys(ctrlU)
	s.prompt("")
	// And a template's variable inside an @ mention.
	s.keys("read @fx:fixture://notes/al")
	s.prompt("read @fx:fixture://notes/al")
	s.keys(keyTab)
	s.prompt("read @fx:fixture://notes/alpha")
	s.keys(ctrlU)
	s.prompt("")

	// Ctrl-R finds the call behind the other lines.
	s.keys(ctrlR + "calc")
	s.scr.waitFor(t, "the call found by Ctrl-R", func(v view) bool {
		return strings.Contains(strings.Join(v.lines, "\n"), `> /call mcp__demo__calc {"expression":"6*7"}`+"\nbck-i-search: calc")
	})
	s.keys(keyEnter)
	s.waitLines("42", 3)
	s.prompt("")
	s.quitWith("/quit"+keyEnter, "/quit")

	b, err := os.ReadFile(filepath.Join(state, "harness", "history"))
	if err != nil {
		t.Fatal(err)
	}
	if got, want := string(b), "/call mcp__demo__calc {\"expression\":\"6*7\"}\n/tools\n/call mcp__demo__calc {\"expression\":\"6*7\"}\n/quit\n"; got != want {
		t.Errorf("history file %q, want %q", got, want)
	}

	// The next session recalls the last lines.
	s2 := startTTY(t, rc)
	s2.prompt("")
	s2.keys(keyUp)
	s2.prompt("/quit")
	s2.keys(keyUp)
	s2.prompt(`/call mcp__demo__calc {"expression":"6*7"}`)
	s2.quitWith(ctrlU+ctrlD, "Ctrl-D")
}

// Events that arrive while a line is half typed print above the prompt,
// and the line survives: it is redrawn below and still in the editor.
// Bracketed paste makes a pasted block one line.
func TestTerminalOutputAboveThePrompt(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	base := fixtureEntry("fx", "fx", "--only", "echo")
	writeConfig(t, dir, base)
	s := startTTY(t, runConfig{dir: dir, env: []string{"XDG_STATE_HOME=" + t.TempDir()}})

	v := s.prompt("")
	if !v.modes["2004"] {
		t.Errorf("bracketed paste is not on at the prompt\n%s", s.scr)
	}
	s.keys("/call mcp__fx__ec")
	s.prompt("/call mcp__fx__ec")
	writeConfig(t, dir, base+fixtureEntry("fy", "fy", "--only", "echo"))
	v = s.scr.waitFor(t, "the reload line above the half-typed line", func(v view) bool {
		return v.line() == "> /call mcp__fx__ec" && strings.Contains(strings.Join(v.above(), "\n"), "harness: reloaded: ")
	})
	if n := v.count("> /call mcp__fx__ec"); n != 1 {
		t.Errorf("the half-typed line shows %d times\n%s", n, s.scr)
	}
	for _, l := range v.above() {
		if strings.HasPrefix(l, "harness:") && strings.Contains(l, ">") {
			t.Errorf("an event ran into the prompt: %q\n%s", l, s.scr)
		}
	}
	// The line is still being edited: complete it and run it.
	s.keys(keyTab + ` {"message":"survived"}` + keyEnter)
	s.waitLines("echo: survived", 1)
	s.prompt("")
	s.waitLines("harness: fy ready (1 tools)", 1)

	// A pasted block (a newline inside) is one line, run once.
	s.keys("\x1b[200~/call mcp__fy__echo {\"message\":\n\"pasted\"}\x1b[201~")
	s.prompt(`/call mcp__fy__echo {"message":↵"pasted"}`)
	s.keys(keyEnter)
	s.waitLines("echo: pasted", 1)
	s.prompt("")
	s.quitWith(ctrlD, "Ctrl-D")
	if v := s.scr.view(); v.modes["2004"] {
		t.Errorf("bracketed paste left on after exit\n%s", s.scr)
	}
}

// Ctrl-C clears a typed line, cancels a call in flight (the console goes
// on), and at an empty prompt quits the second time.
func TestTerminalCtrlC(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	msgLog, received := proctest.Fifo(t, dir, "fx.log", 1<<20)
	writeConfig(t, dir, fixtureEntry("fx", "fx", "--only", "echo,sleep", "--log", msgLog))
	s := startTTY(t, runConfig{dir: dir, env: []string{"XDG_STATE_HOME=" + t.TempDir()}})

	s.prompt("")
	s.keys("half a thought")
	s.prompt("half a thought")
	s.keys(ctrlC)
	s.waitLines("> half a thought^C", 1)
	s.prompt("")

	s.keys(`/call mcp__fx__sleep {"ms":600000}` + keyEnter)
	// The terminal is back in its normal mode once the call is sent, so
	// Ctrl-C is a signal again. Only the server's log tells when it
	// arrived.
	if _, ok := received.Find(0, waitTimeout, containsAll(`"method":"tools/call"`)); !ok {
		t.Fatalf("the call never reached the server; it received:\n%s\n%s", received.Text(), s.scr)
	}
	s.keys(ctrlC)
	s.waitLines("call cancelled", 1)
	s.scr.waitFor(t, "the cancelled call's error", func(v view) bool {
		return strings.Contains(strings.Join(v.lines, "\n"), `Error: the call to "sleep" was cancelled`)
	})
	s.prompt("")
	s.keys(`/call mcp__fx__echo {"message":"still here"}` + keyEnter)
	s.waitLines("echo: still here", 1)
	s.prompt("")

	s.keys(ctrlC)
	s.waitLines("press Ctrl-C again to quit (or Ctrl-D, or /quit)", 1)
	s.prompt("")
	// Something typed (and erased) in between: that Ctrl-C is a first
	// one again.
	s.keys("x")
	s.prompt("x")
	s.keys(ctrlU)
	s.prompt("")
	s.keys(ctrlC)
	s.waitLines("press Ctrl-C again to quit (or Ctrl-D, or /quit)", 2)
	s.prompt("")
	s.quitWith(ctrlC, "Ctrl-C twice")
}

// stdout on a terminal of its own, stdin and stderr on another: results go
// to stdout's terminal (through the editor's writer, which would put them
// above a prompt), never to the terminal of the prompt; no prompt goes to
// stdout's.
func TestTerminalStdoutOnATerminalOfItsOwn(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	writeConfig(t, dir, echoEntry)
	tty, out := openTTY(t)
	s := startTTYWith(t, runConfig{dir: dir, env: []string{"XDG_STATE_HOME=" + t.TempDir()}}, tty)

	s.prompt("")
	s.keys(`/call echo {"message":"to stdout"}` + keyEnter)
	out.waitFor(t, "the result on stdout's terminal", func(v view) bool { return v.count("to stdout") == 1 })
	s.prompt("")
	s.keys("/help" + keyEnter)
	out.waitFor(t, "/help on stdout's terminal", func(v view) bool { return v.count("commands:") == 1 })
	s.prompt("")
	if v := s.scr.view(); v.count("to stdout") > 0 || v.count("commands:") > 0 {
		t.Errorf("a result went to the terminal of the prompt\n%s", s.scr)
	}
	for _, l := range out.view().lines {
		if strings.HasPrefix(l, ">") {
			t.Errorf("a prompt went to stdout's terminal: %q\n%s", l, out)
		}
	}
	s.quitWith(ctrlD, "Ctrl-D")
}

// A start-up failure is said on a line of its own, after the live progress
// line is gone: not glued to what that line last said.
func TestTerminalStartupFailureOnALineOfItsOwn(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	writeConfig(t, dir, fixtureEntry("fx", "fx", "--only", "echo")+
		stdioEntry("bad", "mcp-client", "bad", filepath.Join(dir, "no-such-server")))
	s := startTTY(t, runConfig{dir: dir, env: []string{"XDG_STATE_HOME=" + t.TempDir()}})

	v := s.prompt("")
	failed := 0
	for _, l := range v.above() {
		if strings.Contains(l, `entry "bad" failed`) {
			failed++
			if !strings.HasPrefix(l, `harness: entry "bad" failed`) {
				t.Errorf("the failure shares its line with something else: %q\n%s", l, s.scr)
			}
		}
	}
	if failed == 0 {
		t.Errorf("the start-up failure is not on the screen\n%s", s.scr)
	}
	// The start is summed up before the first prompt: no event of it comes
	// after (by the time a command has answered, one would have).
	s.keys("/tools" + keyEnter)
	v = s.waitLines("mcp__fx__echo  Echo a message back.", 1)
	for _, l := range v.lines {
		if strings.Contains(l, "fx ready") || strings.Contains(l, "tools added") || strings.Contains(l, "fx starting") {
			t.Errorf("a start-up event came after the first prompt: %q\n%s", l, s.scr)
		}
	}
	s.prompt("")
	s.quitWith(ctrlD, "Ctrl-D")
}
