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
