package e2e

import (
	"strings"
	"testing"
)

// TERM=dumb on a terminal: the console reads plain lines, as the README
// says. No line editor: a bare "> " prompt, no cursor query, no
// bracketed paste (mode 2004), no redrawing (not even the start-up's live
// line); the terminal's own line
// discipline echoes what is typed and ends the input at Ctrl-D.
func TestTerminalDumbReadsPlainLines(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	// An entry that takes 400 ms to fail: long enough for a live line.
	writeConfig(t, dir, echoEntry+fixtureEntry("slow", "slow", "--only", "echo", "--hang-on", "initialize")+"    startupTimeoutMs: 400\n")
	s := startTTY(t, runConfig{dir: dir, env: []string{"TERM=dumb", "XDG_STATE_HOME=" + t.TempDir()}})

	s.prompt("")
	s.keys(`/call echo {"message":"plain"}` + keyEnter)
	s.waitLines("plain", 1)
	s.prompt("")
	s.quitWith(ctrlD, "Ctrl-D")
	raw := s.scr.bytes()
	for _, seq := range []string{"\x1b[?2004h", "\x1b[6n", "\x1b[K"} {
		if strings.Contains(raw, seq) {
			t.Errorf("the line editor's %q on a dumb terminal\n%s", seq, s.scr)
		}
	}
	// From the first prompt on, plain bytes only.
	want := "> /call echo {\"message\":\"plain\"}\r\nplain\r\n> "
	if i := strings.Index(raw, want); i < 0 || strings.Contains(raw[i:], "\x1b") {
		t.Errorf("the prompts and the lines are not plain: want %q and no escape after it\n%s", want, s.scr)
	}
}

// On a dumb terminal the console asks a tool's question too, with plain
// prompts and lines.
func TestTerminalDumbAnswersAQuestion(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	writeConfig(t, dir, "- id: echo\n  name: echo\n  config: {greet: true}\n")
	s := startTTY(t, runConfig{dir: dir, env: []string{"TERM=dumb", "XDG_STATE_HOME=" + t.TempDir()}})
	s.prompt("")
	s.keys("/call greet" + keyEnter)
	s.scr.waitFor(t, "the first field's prompt", func(v view) bool { return v.line() == "  Your name (text; required):" })
	s.keys("Ada" + keyEnter)
	s.scr.waitFor(t, "the second field's prompt", func(v view) bool {
		return v.line() == "  Manner (one of: 1 plain, 2 cheerful; Enter for plain):"
	})
	s.keys(keyEnter)
	s.scr.waitFor(t, "the question to send", func(v view) bool { return v.line() == "  send? [Y]es, [d]ecline, [c]ancel:" })
	s.keys(keyEnter)
	s.waitLines("Hello, Ada.", 1)
	s.prompt("")
	s.quitWith(ctrlD, "Ctrl-D")
	if raw := s.scr.bytes(); strings.Contains(raw, "\x1b[6n") || strings.Contains(raw, "\x1b[?2004h") {
		t.Errorf("the line editor on a dumb terminal\n%s", s.scr)
	}
}
