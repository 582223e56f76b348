package agent

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"unicode/utf16"
	"unicode/utf8"
)

// maxEventLine bounds one line of a stream (one data: line holds a whole
// chunk): 32 MiB, twice the most one response may carry (MaxReply…).
const maxEventLine = 32 << 20

// eventReader reads the data of server-sent events: lines `data: …`
// (several of one event joined by "\n"), an empty line ending the event;
// comments (`:`) and other fields (`event:`, `id:`, `retry:`) are skipped.
// It is what a chat completion stream needs of the SSE format, no more.
type eventReader struct {
	sc   *bufio.Scanner
	data []byte
}

func newEventReader(r io.Reader) *eventReader {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 4096), maxEventLine)
	return &eventReader{sc: sc}
}

// errEventLine is a line of the stream over maxEventLine.
var errEventLine = fmt.Errorf("a line of the stream passed %d MiB", maxEventLine>>20)

// next returns the data of the next event, valid until the next call; nil
// at the end of the stream.
func (e *eventReader) next() ([]byte, error) {
	e.data = e.data[:0]
	for e.sc.Scan() {
		line := e.sc.Bytes()
		if len(line) == 0 {
			if len(e.data) > 0 {
				return e.data, nil
			}
			continue
		}
		field, value, _ := bytes.Cut(line, []byte(":"))
		if string(field) != "data" {
			continue // a comment, or a field the loop does not read
		}
		value, _ = bytes.CutPrefix(value, []byte(" "))
		if len(e.data) > 0 {
			e.data = append(e.data, '\n')
		}
		e.data = append(e.data, value...)
	}
	if err := e.sc.Err(); err != nil {
		if errors.Is(err, bufio.ErrTooLong) {
			return nil, errEventLine
		}
		return nil, err
	}
	// An event the stream did not end with an empty line may be cut: it
	// is dropped (a stream cut before its finish reason is then seen as
	// one that ended early).
	return nil, nil
}

// rawString is a JSON string decoded to its bytes as sent: where
// encoding/json would turn invalid UTF-8 into U+FFFD, it keeps the bytes,
// so a character whose bytes a byte-level server split across two deltas
// (each delta's string then holds half of it) is whole again once the
// deltas are joined. Escapes are decoded as encoding/json does, a lone
// surrogate included (U+FFFD). null is empty.
type rawString []byte

// UnmarshalJSON decodes a JSON string (encoding/json checked its syntax).
func (s *rawString) UnmarshalJSON(b []byte) error {
	if bytes.Equal(b, jsonNull) {
		*s = nil
		return nil
	}
	if len(b) < 2 || b[0] != '"' || b[len(b)-1] != '"' {
		return fmt.Errorf("want a string, got %.20s", b)
	}
	b = b[1 : len(b)-1]
	out := make([]byte, 0, len(b))
	for {
		i := bytes.IndexByte(b, '\\')
		if i < 0 {
			*s = append(out, b...)
			return nil
		}
		out = append(out, b[:i]...)
		b = b[i:]
		if len(b) < 2 {
			return errors.New("a string ends inside an escape")
		}
		switch c := b[1]; c {
		case '"', '\\', '/':
			out = append(out, c)
		case 'b':
			out = append(out, '\b')
		case 'f':
			out = append(out, '\f')
		case 'n':
			out = append(out, '\n')
		case 'r':
			out = append(out, '\r')
		case 't':
			out = append(out, '\t')
		case 'u':
			r, ok := hex4(b[2:])
			if !ok {
				return errors.New("a string holds a bad \\u escape")
			}
			b = b[6:]
			if utf16.IsSurrogate(r) {
				r2, ok := rune(-1), false
				if len(b) >= 6 && b[0] == '\\' && b[1] == 'u' {
					r2, ok = hex4(b[2:])
				}
				if dec := utf16.DecodeRune(r, r2); ok && dec != utf8.RuneError {
					r = dec
					b = b[6:]
				} else {
					r = utf8.RuneError
				}
			}
			out = utf8.AppendRune(out, r)
			continue
		default:
			return fmt.Errorf("a string holds a bad escape \\%c", c)
		}
		b = b[2:]
	}
}

// hex4 reads the four hex digits of a \u escape.
func hex4(b []byte) (rune, bool) {
	if len(b) < 4 {
		return 0, false
	}
	var r rune
	for _, c := range b[:4] {
		switch {
		case '0' <= c && c <= '9':
			c -= '0'
		case 'a' <= c && c <= 'f':
			c = c - 'a' + 10
		case 'A' <= c && c <= 'F':
			c = c - 'A' + 10
		default:
			return 0, false
		}
		r = r<<4 | rune(c)
	}
	return r, true
}
