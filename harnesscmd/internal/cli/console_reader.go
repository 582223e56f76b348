package cli

import (
	"bufio"
	"bytes"
	"errors"
	"io"
)

// lineReader reads the console's lines from a pipe or file, the protocol
// scripts use: one command per line, "\n" or "\r\n". A line longer than max
// is skipped (read to its end and dropped) with a *longLineError, and
// reading goes on with the next line.
type lineReader struct {
	r      *bufio.Reader
	max    int
	n      int       // lines read so far
	prompt func()    // printed before each line; nil for none
	out    io.Writer // where a question's prompt goes (a dumb terminal); nil: stderr is not a terminal
}

var _ lineSource = (*lineReader)(nil)

func newLineReader(r io.Reader, max int, prompt func()) *lineReader {
	return &lineReader{r: bufio.NewReaderSize(r, 64<<10), max: max, prompt: prompt}
}

func (l *lineReader) readLine() (string, error) {
	if l.prompt != nil {
		l.prompt()
	}
	var line []byte
	long := false
	for {
		frag, err := l.r.ReadSlice('\n')
		if !long {
			if len(line)+len(bytes.TrimSuffix(frag, []byte("\n"))) > l.max+1 { // +1: a "\r" before "\n"
				long, line = true, nil
			} else {
				line = append(line, frag...)
			}
		}
		switch {
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		case err == nil:
		case errors.Is(err, io.EOF) && (len(line) > 0 || long):
			// The last line has no newline: it is a line all the same;
			// the next read returns io.EOF.
		default:
			return "", err
		}
		break
	}
	l.n++
	line = bytes.TrimSuffix(line, []byte("\n"))
	line = bytes.TrimSuffix(line, []byte("\r"))
	if long || len(line) > l.max {
		return "", &longLineError{line: l.n, max: l.max}
	}
	return string(line), nil
}

// close does nothing: a read from a pipe cannot be interrupted; the
// console stops waiting for it.
func (l *lineReader) close() {}

// readAnswer reads the answer to a question on a terminal the line editor
// does not drive (TERM=dumb): the prompt, then a line. The end of input is
// errCancelled.
func (l *lineReader) readAnswer(prompt string) (string, error) {
	if l.out != nil {
		io.WriteString(l.out, prompt)
	}
	saved := l.prompt
	l.prompt = nil
	defer func() { l.prompt = saved }()
	line, err := l.readLine()
	if errors.Is(err, io.EOF) {
		return "", errCancelled
	}
	return line, err
}

// withdraw cannot end a read from a plain stream: the line the person
// types for a withdrawn question is dropped when it comes.
func (l *lineReader) withdraw() {}
