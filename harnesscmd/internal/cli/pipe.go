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

// stdoutWatch is stdout, watched. The first write that finds the reader
// gone cancels the run, which then shuts down as on a signal. The binary
// asks for SIGPIPE (ProcessMain) so that such a write returns EPIPE instead
// of killing the process. Any other failed write (a full disk, a closed
// descriptor) is remembered, for Main to fail the run with (lost): the
// commands write their output and go on, so that this is checked in one
// place, not at every Fprintf.
type stdoutWatch struct {
	w      io.Writer
	cancel context.CancelCauseFunc
	broken atomic.Bool
	failed atomic.Pointer[error] // the first failed write, but for EPIPE
}

func (b *stdoutWatch) Write(p []byte) (int, error) {
	n, err := b.w.Write(p)
	switch {
	case err == nil:
	case isBrokenPipe(err):
		if b.broken.CompareAndSwap(false, true) {
			b.cancel(errBrokenPipe)
		}
	default:
		b.failed.CompareAndSwap(nil, &err)
	}
	return n, err
}

// lost is a command's outcome once it returned: a success becomes
// ExitFailure when a write to stdout failed, with the write's error as its
// message (`harness: write /dev/stdout: no space left on device`), so that
// the output is not lost behind exit 0. A failure that says nothing on
// stderr (its reason was in the lost output: a tool's error result) keeps
// its code and takes the same message. A failure with words of its own, or
// whose error is the write's (schema returns it), stays as it is. A broken
// pipe is not a failed write here: Main exits ExitBrokenPipe for it, and
// says nothing, also for a command that returned the write's error.
func (b *stdoutWatch) lost(err error) error {
	if b.broken.Load() && isBrokenPipe(err) {
		return nil
	}
	p := b.failed.Load()
	if p == nil || errors.Is(err, *p) {
		return err
	}
	var ee *exitError
	switch {
	case err == nil:
		return exit(ExitFailure, "harness: %v", *p)
	case errors.As(err, &ee) && ee.msg == "":
		return exit(ee.code, "harness: %v", *p)
	}
	return err
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
