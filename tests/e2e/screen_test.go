package e2e

import (
	"bytes"
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"
)

// screen is a small terminal emulator: the part of VT100/xterm that the
// console's line editor uses (cursor moves, erasing, the cursor position
// report it asks for), so a test reads the screen as a person sees it
// rather than the bytes that drew it. Rows grow without bound (nothing
// scrolls away); a row is as wide as the terminal.
type screen struct {
	mu     sync.Mutex
	rows   [][]rune
	row    int
	col    int
	width  int
	height int
	modes  map[string]bool // private modes set with CSI ? n h / l
	raw    bytes.Buffer    // every byte received, for failure messages
	seq    []byte          // an escape sequence or UTF-8 rune cut by a read
	answer io.Writer       // where the terminal's answers go (the pty)
	wake   chan struct{}
	closed bool
}

func newScreen(width, height int, answer io.Writer) *screen {
	return &screen{rows: [][]rune{nil}, width: width, height: height, modes: map[string]bool{}, answer: answer, wake: make(chan struct{})}
}

// Write feeds the screen what the program printed.
func (s *screen) Write(p []byte) (int, error) {
	s.mu.Lock()
	s.raw.Write(p)
	data := append(s.seq, p...)
	s.seq = nil
	for len(data) > 0 {
		n := s.step(data)
		if n == 0 { // incomplete: wait for more
			s.seq = append([]byte(nil), data...)
			break
		}
		data = data[n:]
	}
	close(s.wake)
	s.wake = make(chan struct{})
	s.mu.Unlock()
	return len(p), nil
}

// close marks the end of the program's output.
func (s *screen) close() {
	s.mu.Lock()
	s.closed = true
	close(s.wake)
	s.wake = make(chan struct{})
	s.mu.Unlock()
}

// step interprets one character or sequence at the start of data and
// returns how many bytes it took, 0 if data ends inside it.
func (s *screen) step(data []byte) int {
	switch b := data[0]; {
	case b == 0x1b:
		return s.escape(data)
	case b == '\r':
		s.col = 0
	case b == '\n':
		s.moveTo(s.row+1, s.col)
	case b == '\b':
		s.col = max(s.col-1, 0)
	case b == '\t':
		s.col = min((s.col/8+1)*8, s.width-1)
	case b < 0x20 || b == 0x7f:
		// bell and the like: nothing on screen
	default:
		if !utf8.FullRune(data) {
			return 0
		}
		r, n := utf8.DecodeRune(data)
		s.put(r)
		return n
	}
	return 1
}

func (s *screen) escape(data []byte) int {
	if len(data) < 2 {
		return 0
	}
	switch data[1] {
	case '[':
	case ']': // OSC: up to BEL or ST
		for i := 2; i < len(data); i++ {
			if data[i] == 0x07 {
				return i + 1
			}
			if data[i] == 0x1b && i+1 < len(data) && data[i+1] == '\\' {
				return i + 2
			}
		}
		return 0
	default:
		return 2
	}
	i := 2
	for i < len(data) && (data[i] < 0x40 || data[i] > 0x7e) {
		i++
	}
	if i == len(data) {
		return 0
	}
	s.csi(string(data[2:i]), data[i])
	return i + 1
}

func (s *screen) csi(params string, final byte) {
	private := strings.HasPrefix(params, "?")
	params = strings.TrimPrefix(params, "?")
	var nums []int
	for _, f := range strings.Split(params, ";") {
		n, _ := strconv.Atoi(f)
		nums = append(nums, n)
	}
	arg := func(i, def int) int {
		if i < len(nums) && nums[i] > 0 {
			return nums[i]
		}
		return def
	}
	switch final {
	case 'A':
		s.moveTo(max(s.row-arg(0, 1), s.top()), s.col)
	case 'B':
		s.moveTo(s.row+arg(0, 1), s.col)
	case 'C':
		s.col = min(s.col+arg(0, 1), s.width-1)
	case 'D':
		s.col = max(s.col-arg(0, 1), 0)
	case 'G':
		s.col = min(arg(0, 1)-1, s.width-1)
	case 'H':
		s.moveTo(s.top()+arg(0, 1)-1, arg(1, 1)-1)
	case 'K':
		line := s.rows[s.row]
		switch arg(0, 0) {
		case 0:
			if s.col < len(line) {
				s.rows[s.row] = line[:s.col]
			}
		case 1:
			for i := 0; i <= s.col && i < len(line); i++ {
				line[i] = ' '
			}
		case 2:
			s.rows[s.row] = nil
		}
	case 'J':
		switch arg(0, 0) {
		case 0:
			if s.col < len(s.rows[s.row]) {
				s.rows[s.row] = s.rows[s.row][:s.col]
			}
			s.rows = s.rows[:s.row+1]
		case 2:
			for i := s.top(); i < len(s.rows); i++ {
				s.rows[i] = nil
			}
		}
	case 'n':
		if arg(0, 0) == 6 {
			fmt.Fprintf(s.answer, "\x1b[%d;%dR", s.row-s.top()+1, s.col+1)
		}
	case 'h', 'l':
		if private {
			s.modes[params] = final == 'h'
		}
	}
}

// top is the first row of the visible screen.
func (s *screen) top() int { return max(len(s.rows)-s.height, 0) }

func (s *screen) moveTo(row, col int) {
	for row >= len(s.rows) {
		s.rows = append(s.rows, nil)
	}
	s.row, s.col = row, col
}

func (s *screen) put(r rune) {
	if s.col >= s.width { // the previous character filled the row
		s.moveTo(s.row+1, 0)
	}
	line := s.rows[s.row]
	for len(line) <= s.col {
		line = append(line, ' ')
	}
	line[s.col] = r
	s.rows[s.row] = line
	s.col++
}

// view is what the screen shows at one moment.
type view struct {
	lines  []string // every row, trailing spaces trimmed
	cursor int      // the row of the cursor
	modes  map[string]bool
	closed bool
}

// line is the row of the cursor: the prompt and what is typed.
func (v view) line() string { return v.lines[v.cursor] }

// count is how many rows equal text.
func (v view) count(text string) int {
	n := 0
	for _, l := range v.lines {
		if l == text {
			n++
		}
	}
	return n
}

// above returns the rows above the cursor's.
func (v view) above() []string { return v.lines[:v.cursor] }

func (s *screen) view() view {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.viewLocked()
}

func (s *screen) viewLocked() view {
	v := view{cursor: s.row, modes: map[string]bool{}, closed: s.closed}
	for _, r := range s.rows {
		v.lines = append(v.lines, strings.TrimRight(string(r), " "))
	}
	for k, on := range s.modes {
		v.modes[k] = on
	}
	return v
}

// bytes is every byte the program printed so far.
func (s *screen) bytes() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.raw.String()
}

func (s *screen) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	v := s.viewLocked()
	var b strings.Builder
	for i, l := range v.lines {
		mark := "  "
		if i == v.cursor {
			mark = "→ "
		}
		b.WriteString(mark + l + "\n")
	}
	fmt.Fprintf(&b, "--- bytes ---\n%q\n", s.raw.String())
	return b.String()
}

// waitFor waits until ok holds for the screen, or fails the test after
// waitTimeout naming what it waited for (or once the output has ended).
func (s *screen) waitFor(t *testing.T, what string, ok func(view) bool) view {
	t.Helper()
	return s.wait(t, what, ok, true)
}

// waitClosed waits until the program's output has ended (the pty read its
// last byte): a process that has exited may still have output in the pty
// that the screen has not read.
func (s *screen) waitClosed(t *testing.T) view {
	t.Helper()
	return s.wait(t, "the end of the output", func(v view) bool { return v.closed }, false)
}

func (s *screen) wait(t *testing.T, what string, ok func(view) bool, failOnClose bool) view {
	t.Helper()
	deadline := time.After(waitTimeout)
	for {
		s.mu.Lock()
		v, wake := s.viewLocked(), s.wake
		s.mu.Unlock()
		if ok(v) {
			return v
		}
		if v.closed && failOnClose {
			t.Fatalf("the terminal closed before %s:\n%s", what, s)
		}
		select {
		case <-wake:
		case <-deadline:
			t.Fatalf("no %s on the screen within %s:\n%s", what, waitTimeout, s)
		}
	}
}

// The emulator itself: what the line editor draws renders as it would.
func TestScreenEmulator(t *testing.T) {
	t.Parallel()
	var answers bytes.Buffer
	s := newScreen(20, 5, &answers)
	for _, chunk := range []string{
		"harness: ready\r\n",
		"> /ca", "ll\x1b", "[6n",
		"\x1b[3G\x1b[J", "log line\r\n", "> \x1b[0K/call",
		"\x1b]0;title\x07", " h\xc3", "\xa9",
	} {
		s.Write([]byte(chunk))
	}
	v := s.view()
	if got := strings.Join(v.lines, "|"); got != "harness: ready|> log line|> /call hé" || v.line() != "> /call hé" {
		t.Fatalf("screen %q, cursor line %q\n%s", got, v.line(), s)
	}
	if answers.String() != "\x1b[2;8R" {
		t.Fatalf("cursor report %q", answers.String())
	}
}
