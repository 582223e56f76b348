package cli

import (
	"context"
	"errors"
	"io"
	"runtime"
	"sync/atomic"
	"syscall"
)

// ExitBrokenPipe is the exit code when the reader of stdout went away
// (`harness tools | head -1`): the code a shell reports for a program that
// SIGPIPE killed, so scripts see what they see of other tools — but the
// harness got there through its normal shutdown, every server stopped.
const ExitBrokenPipe = 141

// errBrokenPipe is the cause of a run cancelled because stdout broke.
var errBrokenPipe = errors.New("stdout was closed by its reader")

// brokenPipeWatch is stdout, watched: the first write that finds the reader
// gone cancels the run, which then shuts down as on a signal. The binary
// asks for SIGPIPE (ProcessMain) so that such a write returns EPIPE instead
// of killing the process.
type brokenPipeWatch struct {
	w      io.Writer
	cancel context.CancelCauseFunc
	broken atomic.Bool
}

func (b *brokenPipeWatch) Write(p []byte) (int, error) {
	n, err := b.w.Write(p)
	if err != nil && isBrokenPipe(err) && b.broken.CompareAndSwap(false, true) {
		b.cancel(errBrokenPipe)
	}
	return n, err
}

// isBrokenPipe reports whether err is a write to a pipe nobody reads: EPIPE,
// or on Windows ERROR_BROKEN_PIPE (109) and ERROR_NO_DATA (232).
func isBrokenPipe(err error) bool {
	if errors.Is(err, syscall.EPIPE) {
		return true
	}
	var errno syscall.Errno
	return runtime.GOOS == "windows" && errors.As(err, &errno) && (errno == 109 || errno == 232)
}
