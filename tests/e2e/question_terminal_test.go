package e2e

import (
	"strings"
	"testing"
)

// A person answers a question in the console, on a real terminal: a native
// tool (the echo kind's greet) asks for a form; the fields are asked one
// at a time with the editor's prompt, an empty required field is asked
// again, Enter takes a default, and the answer reaches the tool. A
// question cancelled with Ctrl-C answers "cancel" and the console goes on;
// the answers go to no history.
func TestTerminalAnswersAQuestion(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	writeConfig(t, dir, "- id: echo\n  name: echo\n  config: {greet: true}\n")
	state := t.TempDir()
	s := startTTY(t, runConfig{dir: dir, env: []string{"XDG_STATE_HOME=" + state}})

	s.prompt("")
	s.keys("/call greet" + keyEnter)
	s.waitLines("a tool (tool greet) asks: How should I greet you?", 1)
	field := "  Your name (text; required):"
	s.scr.waitFor(t, "the first field's prompt", func(v view) bool { return v.line() == field })
	s.keys(keyEnter)
	s.waitLines("    an answer is required", 1)
	s.scr.waitFor(t, "the field asked again", func(v view) bool { return v.line() == field })
	s.keys("Ada Lovelace" + keyEnter)
	s.scr.waitFor(t, "the second field's prompt", func(v view) bool {
		return v.line() == "  Manner (one of: 1 plain, 2 cheerful; Enter for plain):"
	})
	s.keys(keyEnter) // the default
	s.scr.waitFor(t, "the question to send", func(v view) bool { return v.line() == "  send? [Y]es, [d]ecline, [c]ancel:" })
	s.keys("y" + keyEnter)
	s.waitLines("Hello, Ada Lovelace.", 1)
	s.prompt("")

	// Ctrl-C at a field cancels the question, not the console.
	s.keys("/call greet" + keyEnter)
	s.scr.waitFor(t, "the first field's prompt again", func(v view) bool { return v.line() == field })
	s.keys(ctrlC)
	s.waitLines("  cancelled", 1)
	s.waitLines("Hello, whoever you are (you chose to cancel).", 1)
	s.prompt("")

	// Up recalls the command, never an answer.
	s.keys(keyUp)
	s.prompt("/call greet")
	s.keys(ctrlU)
	s.prompt("")
	s.quitWith(ctrlD, "Ctrl-D")
	if strings.Contains(s.scr.String(), "^C") {
		t.Logf("screen:\n%s", s.scr)
	}
}
