package mcpclient

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/harness-go/harness/host/secret"
	"github.com/harness-go/harness/internal/jsonrpc"
	"github.com/harness-go/harness/internal/safe"
)

// Bounds of the stdio framing.
const (
	// MaxMessageBytes bounds one JSON-RPC message from a server. A longer
	// line is discarded; the request it answers fails with a clear error.
	MaxMessageBytes = 32 << 20
	// maxWriteStall bounds a write whose context has no deadline: a server
	// that does not read a line for that long is broken.
	maxWriteStall = 30 * time.Second
)

// lineFraming is the framing of a stdio server: one message per line on
// its stdout and stdin. A line is bounded (MaxMessageBytes: a longer one is
// discarded, and the request it answers fails by id when its start says
// which); a line that is not JSON-RPC is skipped and counted. The framing
// owns the process: Close is its close ladder.
type lineFraming struct {
	p       *process
	log     *slog.Logger
	secrets *secret.Set

	// Read's state; Read runs on one goroutine.
	rd      *lineReader
	garbage int   // lines that were not JSON-RPC
	held    error // an error that came with the last line, for the next Read

	writeMu sync.Mutex
	wbuf    []byte          // the line being written; guarded by writeMu
	stdinRC syscall.RawConn // stdin's descriptor for writes that do not wait; nil: every write waits
	// writeFn writes wbuf on stdin's descriptor into wrote and werr (writeNow);
	// made once, so that a write allocates no closure.
	writeFn func(fd uintptr)
	wrote   int
	werr    error

	kickable   bool          // the pipe takes read deadlines: interrupt works
	exitedHeld atomic.Bool   // the server exited, but something holds its stdout
	closed     chan struct{} // closed by Close
	closeOnce  sync.Once
	closeErr   error
	watch      sync.WaitGroup
}

func newLineFraming(p *process, log *slog.Logger, secrets *secret.Set) *lineFraming {
	f := &lineFraming{p: p, log: log, secrets: secrets, rd: newLineReader(p.stdout, 64<<10), closed: make(chan struct{}),
		kickable: p.stdout.SetReadDeadline(time.Time{}) == nil}
	if p.stdin.SetWriteDeadline(time.Time{}) == nil {
		// It takes deadlines: it is in the runtime's poller, non-blocking.
		f.stdinRC, _ = p.stdin.SyscallConn()
		f.writeFn = func(fd uintptr) { f.wrote, f.werr = writeFD(fd, f.wbuf) }
	}
	f.watch.Add(1)
	go func() { defer f.watch.Done(); f.watchExit() }()
	return f
}

// errInterrupted is what Read returns when interrupt cut it short: not the
// end of the connection.
var errInterrupted = errors.New("the read was interrupted")

// interruptible reports whether interrupt works on this framing: a pipe
// that takes read deadlines (not on every OS).
func (f *lineFraming) interruptible() bool { return f.kickable }

// interrupt makes a Read in progress (or the next one) return
// errInterrupted at once: a read deadline in the past. The read path uses
// it to take the right to read from the reader goroutine (rpc.go).
func (f *lineFraming) interrupt() { _ = f.p.stdout.SetReadDeadline(time.Unix(1, 0)) }

// rearm undoes interrupt before a Read.
func (f *lineFraming) rearm() { _ = f.p.stdout.SetReadDeadline(time.Time{}) }

// watchExit ends the connection when the server has exited but its stdout
// stays open: a process it started holds it (a helper that inherited its
// stdio), and no end of stdout will come. An exit with status 0 is left to
// the end of stdout: a wrapper may leave its server running in the
// background, on the same pipes. The answers the server wrote before it
// exited are read first (exitWait).
func (f *lineFraming) watchExit() {
	select {
	case <-f.p.exited:
	case <-f.closed:
		return
	}
	if f.p.exitErr == nil {
		return
	}
	t := time.NewTimer(exitWait)
	defer t.Stop()
	select {
	case <-f.closed:
	case <-t.C:
		f.exitedHeld.Store(true)
		_ = f.p.stdout.Close() // Read returns, and says the server exited
	}
}

// Read returns the next JSON-RPC message on stdout, skipping what is not
// one. An error ends the connection; it says why (the exit status and the
// last stderr lines, when the server exited).
func (f *lineFraming) Read() (*inMsg, error) {
	for {
		if f.held != nil {
			return nil, f.ended(f.held)
		}
		line, tooLong, err := f.rd.next(MaxMessageBytes, 120+f.secrets.MaxLen())
		if errors.Is(err, os.ErrDeadlineExceeded) {
			return nil, errInterrupted // a kick: nothing is lost (lineReader)
		}
		f.held = err
		switch {
		case tooLong != nil:
			if m := f.oversized(tooLong); m != nil {
				return m, nil
			}
		case len(bytes.TrimSpace(line)) > 0:
			// The line is the reader's until the next Read: what does not
			// fit in the message is borrowed from it (decodeLine).
			if m, ok := decodeLine(line, true); ok {
				return m, nil
			}
			f.garbage++
			if f.garbage <= 5 || f.garbage%1000 == 0 {
				f.log.Warn("server wrote a line that is not JSON-RPC to stdout; ignored", "line", safe.Line(f.secrets.Clip(strings.TrimRight(string(line), "\r\n"), 200)), "count", f.garbage)
			}
		}
	}
}

// ended turns the error that ended stdout into why the connection ended.
func (f *lineFraming) ended(err error) error {
	select {
	case <-f.closed:
		return &ConnectionLostError{Reason: "closed"}
	default:
	}
	switch {
	case f.exitedHeld.Load():
		return f.p.exitReason("the server exited")
	case errors.Is(err, io.EOF):
		return f.p.exitReason("the server closed its stdout")
	}
	return f.p.exitReason(fmt.Sprintf("reading from the server: %v", err))
}

var idPrefix = regexp.MustCompile(`"id"\s*:\s*("(?:[^"\\]|\\.)*"|-?\d+)`)

// oversized logs a discarded line and returns the message that stands for
// it, when its id can be read from its start: the request it answers fails.
func (f *lineFraming) oversized(head []byte) *inMsg {
	f.log.Warn("server sent a message over the size limit; discarded", "limitMiB", MaxMessageBytes>>20, "start", safe.Line(f.secrets.Clip(string(head), 120)))
	m := idPrefix.FindSubmatch(head)
	if m == nil {
		return nil
	}
	return &inMsg{ID: append([]byte(nil), m[1]...), tooLarge: true}
}

// Write sends one line. A server that stops reading its stdin must not hang
// us: the write has the deadline of ctx (or a generous default). A write
// that fails midway ends the connection, since the stream is broken: the
// error is a notSentError (a line cut short is no request) holding the
// ConnectionLostError that says why.
func (f *lineFraming) Write(ctx context.Context, m *outMsg) error {
	select {
	case <-f.closed:
		return &notSentError{&ConnectionLostError{Reason: "closed"}}
	default:
	}
	f.writeMu.Lock()
	f.wbuf = append(append(f.wbuf[:0], m.data...), '\n')
	// Most lines fit in the pipe at once: they are written without a
	// deadline, whose timer would cost every call a wake-up of the
	// runtime's poller (docs/benchmarks.md). Only the rest of a line the
	// pipe did not take waits, bounded.
	n, err := f.writeNow()
	if err == nil && n < len(f.wbuf) {
		deadline, ok := ctx.Deadline()
		if !ok {
			deadline = time.Now().Add(maxWriteStall)
		}
		_ = f.p.stdin.SetWriteDeadline(deadline)
		_, err = f.p.stdin.Write(f.wbuf[n:])
		_ = f.p.stdin.SetWriteDeadline(time.Time{})
	}
	if cap(f.wbuf) > maxKeptBuffer {
		f.wbuf = nil // keep no very large message around
	}
	f.writeMu.Unlock()
	if err == nil {
		return nil
	}
	// A server that closed its stdin is usually exiting: its exit status
	// and last words say why, not the broken pipe.
	if errors.Is(err, syscall.EPIPE) || errors.Is(err, os.ErrClosed) {
		return &notSentError{f.p.exitReason(fmt.Sprintf("write to the server: %v", err))}
	}
	return &notSentError{&ConnectionLostError{Reason: fmt.Sprintf("write to the server: %v", err)}}
}

// writeNow writes what of wbuf the pipe takes without waiting: all of it, a
// part, or nothing (when it is full, or when stdin cannot be written
// without waiting); the rest is for a write that waits. writeMu is held.
func (f *lineFraming) writeNow() (int, error) {
	if f.stdinRC == nil {
		return 0, nil
	}
	f.wrote, f.werr = 0, nil
	if err := f.stdinRC.Control(f.writeFn); err != nil {
		return 0, nil // closed: the write that waits says so
	}
	if f.werr != nil {
		return f.wrote, &os.PathError{Op: "write", Path: f.p.stdin.Name(), Err: f.werr}
	}
	return f.wrote, nil
}

// buffered reports whether a whole line is buffered behind the one Read
// returned (rpc.dispatchRead). It runs on Read's goroutine.
func (f *lineFraming) buffered() bool { return f.rd.buffered() }

// Close runs the process's close ladder (process.close) and waits for the
// framing's own goroutine. It is safe to call twice.
func (f *lineFraming) Close() error {
	f.closeOnce.Do(func() {
		close(f.closed)
		f.closeErr = f.p.close()
		f.watch.Wait()
	})
	return f.closeErr
}

// lineReader reads bounded lines from a stream whose reads may be
// interrupted (a read deadline, the read path's kick): a line cut by an
// interruption is kept, and the next call goes on with it.
type lineReader struct {
	br       *bufio.Reader
	partial  []byte // a line begun before an interruption, or longer than the buffer
	skipping []byte // the start of an over-long line being consumed, or nil
	// spare is the memory of the last line longer than the buffer, for
	// the next one: a server whose results are larger than the buffer
	// sends them at every call. Kept up to maxKeptBuffer.
	spare []byte
}

// maxKeptBuffer bounds what a framing keeps between messages for long
// ones: the lineReader's memory for long lines, and the write buffer for
// long requests (a server that reads files answers them at every call, a
// client that writes files sends them so).
const maxKeptBuffer = 256 << 10

// buffered reports whether a whole line is buffered, to be read without
// waiting.
func (r *lineReader) buffered() bool {
	n := r.br.Buffered()
	if n == 0 || r.partial != nil || r.skipping != nil {
		return false
	}
	b, _ := r.br.Peek(n)
	return bytes.IndexByte(b, '\n') >= 0
}

func newLineReader(r io.Reader, size int) *lineReader {
	return &lineReader{br: bufio.NewReaderSize(r, size)}
}

// next returns the next line of at most limit bytes (with its newline, if
// any); a longer line is consumed, and its first head bytes returned as
// tooLong. line may be the reader's own buffer, valid until the next call:
// callers copy what they keep. At the end of the stream, a last line without
// a newline comes with the error. An interrupted read returns its error and
// nothing else.
func (r *lineReader) next(limit, head int) (line, tooLong []byte, err error) {
	for {
		chunk, err := r.br.ReadSlice('\n')
		full := errors.Is(err, bufio.ErrBufferFull)
		interrupted := errors.Is(err, os.ErrDeadlineExceeded)
		complete := !full && !interrupted // a newline, or the end of the stream
		if r.skipping == nil && len(r.partial)+len(chunk) > limit {
			start := append(r.partial, chunk...)
			r.skipping = append([]byte(nil), start[:min(len(start), head)]...)
			r.partial, chunk = nil, nil
		}
		switch {
		case r.skipping != nil && !complete:
			if full {
				continue
			}
			return nil, nil, err // go on skipping next time
		case r.skipping != nil:
			start := r.skipping
			r.skipping = nil
			return nil, start, err
		case !complete:
			if r.partial == nil && len(chunk) > 0 {
				r.partial, r.spare = r.spare[:0], nil
			}
			r.partial = append(r.partial, chunk...)
			if full {
				continue
			}
			return nil, nil, err
		case r.partial != nil:
			line := append(r.partial, chunk...)
			r.partial = nil
			if cap(line) <= maxKeptBuffer {
				r.spare = line[:0] // the caller has the line until the next call, no longer
			}
			return line, nil, err
		}
		return chunk, nil, err // the usual case: the line in one piece
	}
}

// idKey is the map key of an encoded request id (jsonrpc.IDKey), as the
// server's echo of it will give.
func idKey(id []byte) string { return jsonrpc.IDKey(id) }
