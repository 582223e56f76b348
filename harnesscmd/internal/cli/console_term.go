package cli

import (
	"bytes"
	"errors"
	"io"
	"os"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/ergochat/readline"
)

// terminal is the console on a terminal: a line editor with history,
// completion and bracketed paste, and the writers that print above its
// prompt. docs/rfc/0006-console.md says why ergochat/readline.
//
// The editor works on the process's own terminal (file descriptors 0 for
// the keys, 2 for the prompt; it switches descriptor 0 to raw mode while a
// prompt is up), so openTerminal only returns one when Env.Stdin is
// os.Stdin and both it and stderr are terminals.
//
// Lifecycle:
//
//  1. openTerminal, before anything prints: stdout and stderr, which the
//     harness prints through from then on.
//  2. start, once the configuration is loaded: the console for completion,
//     and the history (whose rules need the configuration's secrets).
//  3. readLine, one at a time, from the console's reading goroutine.
//  4. close, from any goroutine, idempotent: ends a readLine in progress,
//     waits for it, and leaves the terminal as it found it.
type terminal struct {
	rl     *readline.Instance
	stdout io.Writer // above the prompt when stdout is a terminal too
	stderr io.Writer // above the prompt; the caller redacts

	console *console
	hist    *history
	input   *pasteFilter // the editor's input (a question withdrawn interrupts it)
	edited  int          // runes in the line being edited, as the listener last saw it
	typed   bool         // a key other than Ctrl-C came since the prompt

	// turnOut and turnErr are the agent's answer's writers (the console's
	// transcript): while its text stands mid-line, what the others print
	// (events, logs) is held, and printed once the line ends.
	turnOut, turnErr io.Writer

	mu        sync.Mutex
	closed    bool
	reading   sync.WaitGroup
	lineStart bool      // the last byte printed ended a line
	held      []heldOut // printed while a turn's line was open
	pasteOn   bool      // bracketed paste was asked for
	asking    bool      // the editor reads the answer to a question
}

// heldOut is a write held back until the line it would break ends.
type heldOut struct {
	w io.Writer
	p []byte
}

var _ lineSource = (*terminal)(nil)

// openTerminal returns the console's terminal, or nil when stdin is not a
// terminal the line editor can drive (a pipe, a file, TERM=dumb, a test's
// stream) or the editor could not start (the error says why): the console
// then reads plain lines.
func openTerminal(env Env) (*terminal, error) {
	if !env.StdinTTY || !env.StderrTTY || env.Stdin != io.Reader(os.Stdin) {
		return nil, nil
	}
	if term, _ := env.Lookup("TERM"); term == "dumb" {
		return nil, nil
	}
	t := &terminal{lineStart: true, input: newPasteFilter(os.Stdin)}
	rl, err := readline.NewFromConfig(&readline.Config{
		Prompt:                 "> ",
		HistoryLimit:           historyLimit,
		DisableAutoSaveHistory: true, // the console decides (history.keeps)
		HistorySearchFold:      true,
		AutoComplete:           completer{t},
		Listener:               t.listen,
		Painter:                paintMarks,
		Stdin:                  t.input,
		// The editor draws on stderr. Instance.Stderr() is the one other
		// writer that prints above its prompt, so its target is the run's
		// stdout (the process's, watched for a reader gone): results still
		// go to descriptor 1.
		Stdout: os.Stderr,
		Stderr: env.Stdout,
	})
	if err != nil {
		return nil, err
	}
	// Bracketed paste is on while a prompt is up, never while a command
	// runs nor after the harness exits.
	cfg := rl.GetConfig()
	makeRaw, exitRaw := cfg.FuncMakeRaw, cfg.FuncExitRaw
	cfg.FuncMakeRaw = func() error {
		err := makeRaw()
		t.mu.Lock()
		t.pasteOn = true
		t.mu.Unlock()
		io.WriteString(os.Stderr, pasteOn)
		return err
	}
	cfg.FuncExitRaw = func() error {
		t.mu.Lock()
		on := t.pasteOn
		t.pasteOn = false
		t.mu.Unlock()
		if on {
			io.WriteString(os.Stderr, pasteOff)
		}
		return exitRaw()
	}
	if err := rl.SetConfig(cfg); err != nil {
		rl.Close()
		return nil, err
	}
	t.rl = rl
	t.stderr = screenWriter{t: t, w: rl.Stdout()}
	t.turnErr = screenWriter{t: t, w: rl.Stdout(), turn: true}
	t.stdout, t.turnOut = env.Stdout, env.Stdout
	if env.StdoutTTY {
		// stdout is a terminal too (in practice the same one): results
		// print above the prompt like the rest. Redirected to a file or a
		// pipe, it is written as it is.
		t.stdout = screenWriter{t: t, w: rl.Stderr()}
		t.turnOut = screenWriter{t: t, w: rl.Stderr(), turn: true}
	}
	return t, nil
}

// start gives the editor the console (completion) and the history.
func (t *terminal) start(c *console, h *history) {
	t.console, t.hist = c, h
	for _, e := range h.entries {
		t.rl.SaveToHistory(toEditor(e))
	}
}

// screenWriter prints through the editor: above the prompt while one is
// up, and remembers whether the screen is at the start of a line. A writer
// that is not the turn's holds its writes while the turn's text stands
// mid-line (a streamed answer, shown reasoning): an event never lands in
// the middle of a sentence.
type screenWriter struct {
	t    *terminal
	w    io.Writer
	turn bool
}

func (s screenWriter) Write(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	t := s.t
	t.mu.Lock()
	if !s.turn && !t.lineStart && !t.closed {
		t.held = append(t.held, heldOut{s.w, bytes.Clone(p)})
		t.mu.Unlock()
		return len(p), nil
	}
	t.mu.Unlock()
	n, err := s.w.Write(p)
	t.mu.Lock()
	// A line ended, or a line cleared in place (the live progress line,
	// progress.go).
	t.lineStart = bytes.HasSuffix(p, []byte("\n")) || bytes.HasSuffix(p, []byte("\r\x1b[K"))
	t.mu.Unlock()
	if t.lineStart {
		t.flushHeld()
	}
	return n, err
}

// flushHeld prints what was held while a line was open.
func (t *terminal) flushHeld() {
	t.mu.Lock()
	held := t.held
	t.held = nil
	t.mu.Unlock()
	for _, h := range held {
		h.w.Write(h.p)
	}
}

// listen sees the line after every key: Ctrl-C needs to know whether it
// was empty.
func (t *terminal) listen(line []rune, pos int, key rune) ([]rune, int, bool) {
	t.edited = len(line)
	if key != 0 && key != 3 { // 3: Ctrl-C
		t.typed = true
	}
	return nil, 0, false
}

func (t *terminal) readLine() (string, error) {
	t.mu.Lock()
	if t.closed {
		t.mu.Unlock()
		return "", io.EOF
	}
	t.reading.Add(1)
	fresh := t.lineStart
	t.mu.Unlock()
	defer t.reading.Done()
	t.edited, t.typed = 0, false
	t.input.discardInjected()
	if !fresh {
		// Text without a newline (a streamed answer) ends its line
		// before the prompt; what was held meanwhile follows.
		io.WriteString(t.turnErr, "\n")
	}
	t.flushHeld()
	line, err := t.rl.ReadLine()
	switch {
	case errors.Is(err, readline.ErrInterrupt):
		return "", &interrupt{empty: t.edited == 0, typed: t.typed}
	case err != nil:
		return "", err
	}
	text := fromEditor(line)
	if len(text) > maxLine {
		return "", &longLineError{max: maxLine}
	}
	switch {
	case t.hist.add(text):
		t.rl.SaveToHistory(line)
	case strings.TrimSpace(text) != "":
		// Not kept (a secret, a leading space): the editor may still
		// point at the entry the line was recalled from. Start it over
		// from the kept entries.
		t.rl.ResetHistory()
		for _, e := range t.hist.entries {
			t.rl.SaveToHistory(toEditor(e))
		}
	}
	return text, nil
}

// readAnswer reads a person's answer to a question (console front): the
// prompt is the question's, the line goes to no history and Tab completes
// nothing. Ctrl-C and Ctrl-D at an empty line are errCancelled.
func (t *terminal) readAnswer(prompt string) (string, error) {
	t.mu.Lock()
	if t.closed {
		t.mu.Unlock()
		return "", errCancelled
	}
	t.reading.Add(1)
	fresh := t.lineStart
	t.asking = true
	t.input.discardInjected()
	t.mu.Unlock()
	defer func() {
		t.mu.Lock()
		t.asking = false
		t.input.discardInjected()
		t.mu.Unlock()
		t.reading.Done()
	}()
	if !fresh {
		// The turn's text stands mid-line: the question starts a line of
		// its own, and what was held meanwhile is printed before it.
		io.WriteString(t.turnErr, "\n")
	}
	t.flushHeld()
	t.rl.SetPrompt(prompt)
	defer t.rl.SetPrompt("> ")
	line, err := t.rl.ReadLine()
	switch {
	case errors.Is(err, readline.ErrInterrupt), errors.Is(err, io.EOF):
		return "", errCancelled
	case err != nil:
		return "", err
	}
	return fromEditor(line), nil
}

// withdraw ends a readAnswer in progress (its question's call ended): the
// editor reads a Ctrl-C of ours.
func (t *terminal) withdraw() {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.asking {
		t.input.interrupt([]byte{3})
	}
}

// close ends a readLine in progress and restores the terminal. It may be
// called more than once, from any goroutine.
func (t *terminal) close() {
	t.mu.Lock()
	if t.closed {
		t.mu.Unlock()
		return
	}
	t.closed = true
	t.mu.Unlock()
	t.flushHeld()
	t.rl.Close()
	t.reading.Wait()
}

// completer adapts console.complete to the editor, which wants the
// candidates' remainders after the word being completed.
type completer struct{ t *terminal }

func (a completer) Do(line []rune, pos int) ([][]rune, int) {
	c := a.t.console
	a.t.mu.Lock()
	asking := a.t.asking
	a.t.mu.Unlock()
	if c == nil || asking {
		return nil, 0
	}
	candidates, word := c.complete(string(line[:pos]))
	n := utf8.RuneCountInString(word)
	out := make([][]rune, len(candidates))
	for i, cand := range candidates {
		out[i] = []rune(cand)[n:]
	}
	return out, n
}
