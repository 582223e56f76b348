package cli

import (
	"bytes"
	"io"
	"testing"
)

// What the others print while the agent's answer stands mid-line waits for
// the line to end: an event never lands inside a sentence, and nothing is
// lost or reordered among the held writes.
func TestScreenHoldsWritesInsideATurnsLine(t *testing.T) {
	t.Parallel()
	var screen bytes.Buffer
	term := &terminal{lineStart: true}
	turn := screenWriter{t: term, w: &screen, turn: true}
	other := screenWriter{t: term, w: &screen}

	io.WriteString(other, "harness: a ready\n") // at a line's start: at once
	io.WriteString(turn, "word0 word1 ")
	io.WriteString(other, "harness: tools added z_echo\n")
	io.WriteString(other, "harness: reloaded: added b\n")
	io.WriteString(turn, "word2")
	if got := screen.String(); got != "harness: a ready\nword0 word1 word2" {
		t.Fatalf("an event broke into the line: %q", got)
	}
	io.WriteString(turn, " end.\n")
	want := "harness: a ready\nword0 word1 word2 end.\nharness: tools added z_echo\nharness: reloaded: added b\n"
	if got := screen.String(); got != want {
		t.Fatalf("screen %q, want %q", got, want)
	}
	// Reasoning on stderr is the turn's too; a closed terminal holds
	// nothing back.
	io.WriteString(turn, "thinking")
	term.mu.Lock()
	term.closed = true
	term.mu.Unlock()
	io.WriteString(other, "harness: bye\n")
	if got := screen.String(); got != want+"thinkingharness: bye\n" {
		t.Fatalf("after close: %q", got)
	}
}
