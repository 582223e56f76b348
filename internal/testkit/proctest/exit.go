package proctest

import (
	"errors"
	"os/exec"
	"testing"
	"time"
)

// Exit is the end of a started process, awaited in the background.
type Exit struct {
	done chan struct{}
	err  error
	code int
	at   time.Time
}

// Await waits for the started cmd in the background. At cleanup a process
// still running is killed, and awaited: the cleanups registered before
// Await (checks of what it printed, say) run after it is gone.
func Await(t testing.TB, cmd *exec.Cmd) *Exit {
	t.Helper()
	e := &Exit{done: make(chan struct{})}
	go func() {
		defer close(e.done)
		e.err = cmd.Wait()
		e.at = time.Now()
		var ee *exec.ExitError
		switch {
		case e.err == nil:
		case errors.As(e.err, &ee):
			e.code = ee.ExitCode()
		default:
			e.code = -1
		}
	}()
	t.Cleanup(func() {
		select {
		case <-e.done:
		default:
			_ = cmd.Process.Kill()
			<-e.done
		}
	})
	return e
}

// Done is closed once the process has ended and Wait has returned.
func (e *Exit) Done() <-chan struct{} { return e.done }

// Code is the exit code, once Done: -1 for a process ended by a signal or
// one Wait could not wait for.
func (e *Exit) Code() int { <-e.done; return e.code }

// Err is what cmd.Wait returned, once Done.
func (e *Exit) Err() error { <-e.done; return e.err }

// At is when Wait returned.
func (e *Exit) At() time.Time { <-e.done; return e.at }
