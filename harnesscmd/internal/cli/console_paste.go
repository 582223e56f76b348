package cli

import (
	"bytes"
	"io"
	"strings"
	"sync"
	"unicode/utf8"
)

// The line editor takes Enter as "submit" and Tab as "complete". Text
// pasted into a terminal carries both, and a person writing a message
// needs a newline that does not submit. The paste filter therefore puts
// marks into the editor's input instead: the console turns them back into
// the characters when the line is submitted, and the editor shows them as
// visible symbols meanwhile. They are private-use characters, which no
// keyboard sends.
const (
	newlineMark = '\uE000'
	tabMark     = '\uE001'
)

// Terminal sequences the filter acts on.
const (
	pasteOn    = "\x1b[?2004h" // ask the terminal to bracket pastes
	pasteOff   = "\x1b[?2004l"
	pasteStart = "\x1b[200~"
	pasteEnd   = "\x1b[201~"
	altEnter   = "\x1b\r"
)

// pasteFilter sits between the terminal and the line editor. Inside a
// bracketed paste (the terminal sends pasteStart … pasteEnd once asked
// with pasteOn) a newline becomes newlineMark (CRLF counts once), a tab
// tabMark, and every other control character is dropped, so pasted text
// can never act as keys. Outside a paste, Alt-Enter becomes newlineMark
// and everything else passes unchanged.
type pasteFilter struct {
	r       io.Reader
	pending []byte // read but not yet filtered: a sequence cut by a read
	out     []byte // filtered, not yet returned
	err     error  // the reader's error, returned once out is drained
	pasting bool
	cr      bool // the last pasted byte was "\r"

	// A read of r runs in a goroutine of its own so that Read can be
	// interrupted (interrupt): a question the console withdraws ends the
	// editor's read with a Ctrl-C of ours. The read in flight then stays
	// in flight, and what it brings goes to the next Read: nothing typed
	// is lost.
	reads   chan chunk
	reading bool
	kick    chan struct{}
	mu      sync.Mutex
	inject  []byte // returned by the next Read, unfiltered
}

// chunk is what one read of the underlying reader returned.
type chunk struct {
	b   []byte
	err error
}

func newPasteFilter(r io.Reader) *pasteFilter {
	return &pasteFilter{r: r, reads: make(chan chunk, 1), kick: make(chan struct{}, 1)}
}

func (f *pasteFilter) Read(p []byte) (int, error) {
	for len(f.out) == 0 && f.err == nil {
		if b := f.takeInjected(); len(b) > 0 {
			f.out = append(f.out, b...)
			break
		}
		if !f.reading {
			f.reading = true
			go func() {
				buf := make([]byte, 4096)
				n, err := f.r.Read(buf)
				f.reads <- chunk{buf[:n], err}
			}()
		}
		select {
		case c := <-f.reads:
			f.reading = false
			f.pending = append(f.pending, c.b...)
			f.err = c.err
			f.filter(c.err != nil)
		case <-f.kick:
		}
	}
	if len(f.out) == 0 {
		return 0, f.err
	}
	n := copy(p, f.out)
	f.out = f.out[n:]
	return n, nil
}

// interrupt makes the Read in progress (or the next) return b as typed.
func (f *pasteFilter) interrupt(b []byte) {
	f.mu.Lock()
	f.inject = append(f.inject, b...)
	f.mu.Unlock()
	select {
	case f.kick <- struct{}{}:
	default:
	}
}

// discardInjected drops what interrupt left for a Read that did not come.
func (f *pasteFilter) discardInjected() {
	f.mu.Lock()
	f.inject = nil
	f.mu.Unlock()
	select {
	case <-f.kick:
	default:
	}
}

func (f *pasteFilter) takeInjected() []byte {
	f.mu.Lock()
	defer f.mu.Unlock()
	b := f.inject
	f.inject = nil
	return b
}

// filter moves what it can from pending to out. A sequence of interest cut
// by the end of a read waits in pending for the next one, unless final.
func (f *pasteFilter) filter(final bool) {
	in := f.pending
	i := 0
	for i < len(in) {
		b := in[i]
		if b == 0x1b {
			rest := in[i:]
			switch {
			case bytes.HasPrefix(rest, []byte(pasteStart)):
				f.pasting, f.cr = true, false
				i += len(pasteStart)
				continue
			case bytes.HasPrefix(rest, []byte(pasteEnd)):
				f.pasting = false
				i += len(pasteEnd)
				continue
			case !f.pasting && bytes.HasPrefix(rest, []byte(altEnter)):
				f.out = utf8.AppendRune(f.out, newlineMark)
				i += len(altEnter)
				continue
			case !final && cutSequence(rest):
				f.pending = append(f.pending[:0], rest...)
				return
			}
		}
		i++
		if !f.pasting {
			f.out = append(f.out, b)
			continue
		}
		switch {
		case b == '\r':
			f.out = utf8.AppendRune(f.out, newlineMark)
		case b == '\n':
			if !f.cr {
				f.out = utf8.AppendRune(f.out, newlineMark)
			}
		case b == '\t':
			f.out = utf8.AppendRune(f.out, tabMark)
		case b < 0x20 || b == 0x7f:
			// dropped: pasted text is text, not keys
		default:
			f.out = append(f.out, b)
		}
		f.cr = b == '\r'
	}
	f.pending = f.pending[:0]
}

// cutSequence reports whether rest is the beginning of a sequence the
// filter acts on, cut short by the end of a read.
func cutSequence(rest []byte) bool {
	for _, s := range []string{pasteStart, pasteEnd, altEnter} {
		if len(rest) < len(s) && strings.HasPrefix(s, string(rest)) {
			return true
		}
	}
	return false
}

// fromEditor turns the marks of an edited line back into the characters.
func fromEditor(s string) string {
	if !strings.ContainsAny(s, string([]rune{newlineMark, tabMark})) {
		return s
	}
	return strings.NewReplacer(string(newlineMark), "\n", string(tabMark), "\t").Replace(s)
}

// toEditor is the reverse of fromEditor, for lines recalled from the
// history file.
func toEditor(s string) string {
	if !strings.ContainsAny(s, "\n\t") {
		return s
	}
	return strings.NewReplacer("\n", string(newlineMark), "\t", string(tabMark)).Replace(s)
}

// paintMarks shows the marks as symbols one column wide.
func paintMarks(line []rune, _ int) []rune {
	out, copied := line, false
	for i, r := range line {
		var sym rune
		switch r {
		case newlineMark:
			sym = '↵'
		case tabMark:
			sym = '⇥'
		default:
			continue
		}
		if !copied {
			out, copied = append([]rune(nil), line...), true
		}
		out[i] = sym
	}
	return out
}
