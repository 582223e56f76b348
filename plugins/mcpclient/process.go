package mcpclient

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/harness-go/harness/host/secret"
	"github.com/harness-go/harness/internal/proc"
	"github.com/harness-go/harness/internal/safe"
)

// Bounds of a stdio server's process.
const (
	// stderrLines and stderrLineBytes bound the stderr tail kept for status.
	stderrLines     = 40
	stderrLineBytes = 2048
	// The close ladder: stdin closed, then SIGTERM, then SIGKILL, to the
	// whole process group (and, on Linux, the server's daemons; see
	// internal/proc).
	stdinGrace = 1 * time.Second
	termGrace  = 2 * time.Second
	killGrace  = 2 * time.Second
	// exitWait is how long a lost connection waits for the exit status.
	exitWait = 500 * time.Millisecond
)

// process is a stdio server's process: started contained by internal/proc
// (its own process group, so `npx` and `sh -c` grandchildren die with it;
// more per OS), with its stdin to write, its stdout to read, the tail of its
// stderr, its exit status, and the close ladder. It knows nothing of
// messages: the framing (framing.go) reads and writes lines on its pipes.
type process struct {
	proc    *proc.Process
	stdin   *os.File
	stdout  *os.File // the read end of the server's stdout
	errR    *os.File // the read end of its stderr
	log     *slog.Logger
	secrets *secret.Set // hides secret values in what we log and keep
	stderr  *tail

	exited    chan struct{} // closed when the process has exited
	exitErr   error         // set before exited is closed
	stderrEOF chan struct{} // closed when readStderr has read everything
	workers   sync.WaitGroup

	closeOnce sync.Once
	closeErr  error
}

// startProcess starts the server through sp, which contains it (see
// internal/proc), with the given environment and directory.
func startProcess(sp *proc.Spawner, command string, args, env []string, dir string, log *slog.Logger, secrets *secret.Set) (*process, error) {
	path, err := resolveCommand(command, dir, env)
	if err != nil {
		return nil, err
	}
	var files [6]*os.File // stdin r/w, stdout r/w, stderr r/w
	for i := 0; i < len(files); i += 2 {
		if files[i], files[i+1], err = os.Pipe(); err != nil {
			for _, f := range files[:i] {
				f.Close()
			}
			return nil, err
		}
	}
	inR, inW, outR, outW, errR, errW := files[0], files[1], files[2], files[3], files[4], files[5]
	cmd := exec.Command(path, args...)
	cmd.Args[0] = command
	cmd.Env = env
	cmd.Dir = dir
	cmd.Stdin, cmd.Stdout, cmd.Stderr = inR, outW, errW
	p, startErr := sp.Start(cmd)
	inR.Close()
	outW.Close()
	errW.Close()
	if startErr != nil {
		inW.Close()
		outR.Close()
		errR.Close()
		return nil, fmt.Errorf("start %s: %w", command, startErr)
	}
	pr := &process{
		proc:      p,
		stdin:     inW,
		stdout:    outR,
		errR:      errR,
		log:       log,
		secrets:   secrets,
		stderr:    newTail(stderrLines),
		exited:    make(chan struct{}),
		stderrEOF: make(chan struct{}),
	}
	pr.workers.Add(2)
	go func() {
		defer pr.workers.Done()
		pr.exitErr = p.Wait()
		close(pr.exited)
	}()
	go func() { defer pr.workers.Done(); defer close(pr.stderrEOF); pr.readStderr() }()
	return pr, nil
}

// PID returns the server's process id (and, on unix, process group id).
func (p *process) PID() int { return p.proc.Pid() }

// Stderr returns the last lines the server wrote to stderr.
func (p *process) Stderr() []string { return p.stderr.lines() }

// readStderr keeps the last lines of stderr and logs each at debug level,
// each redacted before it is cut to stderrLineBytes.
func (p *process) readStderr() {
	defer p.errR.Close()
	lr := newLineReader(p.errR, 16<<10)
	for {
		// Keep enough of a long line that a secret starting before the cut
		// is whole when it is redacted.
		keep := stderrLineBytes + p.secrets.MaxLen()
		line, head, err := lr.next(keep, keep)
		if head != nil {
			line = append(head, "…"...)
		}
		if s := strings.TrimRight(string(line), "\r\n"); s != "" {
			s = p.secrets.Clip(s, stderrLineBytes)
			p.stderr.add(s)
			p.log.Debug("server stderr", "line", safe.Line(s))
		}
		if err != nil {
			return
		}
	}
}

// exitReason builds the error of a connection that ended with stdout or
// stdin: the exit status if the process exits soon (else fallback), and the
// last stderr lines.
func (p *process) exitReason(fallback string) error {
	var reason string
	select {
	case <-p.exited:
		reason = describeExit(p.exitErr)
		// What the server wrote to stderr before it exited explains the
		// exit: let the reader take it in. Bounded, since a grandchild
		// may keep stderr open.
		select {
		case <-p.stderrEOF:
		case <-time.After(exitWait):
		}
	case <-time.After(exitWait):
		reason = fallback
	}
	if lines := p.stderr.lines(); len(lines) > 0 {
		last := lines
		if len(last) > 3 {
			last = last[len(last)-3:]
		}
		for i, l := range last {
			last[i] = safe.Line(l)
		}
		reason += "; last stderr: " + strings.Join(last, " | ")
	}
	return &ConnectionLostError{Reason: reason}
}

// ConnectionLostError says why a server connection ended.
type ConnectionLostError struct {
	Reason string
	Err    error // what ended it, when it is more than the reason (a login needed)
}

func (e *ConnectionLostError) Error() string { return "connection lost: " + e.Reason }
func (e *ConnectionLostError) Unwrap() error { return e.Err }

func describeExit(err error) string {
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			return fmt.Sprintf("the server was killed by signal %s", ws.Signal())
		}
		return fmt.Sprintf("the server exited with status %d", ee.ExitCode())
	}
	if err != nil {
		return fmt.Sprintf("the server exited: %v", err)
	}
	return "the server exited with status 0"
}

// close stops the server: stdin is closed; if the process has not exited
// after stdinGrace, it gets SIGTERM (its whole group, and on Linux its
// daemons); after termGrace, SIGKILL. Whatever of it is left after the
// server exits gets the same ladder, then proc's Close kills and reaps the
// rest. It waits for the process's goroutines and is safe to call twice.
// The server's stdout is closed last: a reader blocked on it returns.
func (p *process) close() error {
	p.closeOnce.Do(func() {
		_ = p.stdin.Close()
		if !p.waitExit(stdinGrace) {
			_ = p.proc.Terminate()
			if !p.waitExit(termGrace) {
				_ = p.proc.Kill()
				if !p.waitExit(killGrace) {
					p.closeErr = fmt.Errorf("the server (pid %d) did not exit after SIGKILL", p.proc.Pid())
				}
			}
		}
		p.reapLeftovers()
		if err := p.proc.Close(); err != nil && p.closeErr == nil {
			p.closeErr = err
		}
		p.waitWorkers()
	})
	return p.closeErr
}

// waitWorkers waits for the process's goroutines. A process beyond our
// reach (a daemon that left the group and dropped its tag) may still hold
// the server's stdout or stderr: after exitWait the readers stop reading.
// stdout is closed either way, so that the framing's reader returns.
func (p *process) waitWorkers() {
	done := make(chan struct{})
	go func() { p.workers.Wait(); close(done) }()
	t := time.NewTimer(exitWait)
	defer t.Stop()
	select {
	case <-done:
	case <-t.C:
		p.log.Debug("a process outside the server's group holds its stdout or stderr; no longer reading them")
		_ = p.errR.Close()
		<-done
	}
	_ = p.stdout.Close()
}

func (p *process) waitExit(d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-p.exited:
		return true
	case <-t.C:
		return false
	}
}

// reapLeftovers gives what is left of the server once it exited
// (grandchildren that outlived it, daemons) SIGTERM and a short grace;
// proc's Close then kills what still runs. There is no event for the exit of
// a process we did not start, so it polls.
func (p *process) reapLeftovers() {
	if !p.proc.Alive() {
		return
	}
	_ = p.proc.Terminate()
	deadline := time.Now().Add(termGrace)
	for p.proc.Alive() && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
}

// tail keeps the last n lines.
type tail struct {
	mu  sync.Mutex
	n   int
	buf []string
}

func newTail(n int) *tail { return &tail{n: n} }

func (t *tail) add(line string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if len(t.buf) == t.n {
		copy(t.buf, t.buf[1:])
		t.buf[len(t.buf)-1] = line
		return
	}
	t.buf = append(t.buf, line)
}

func (t *tail) lines() []string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return append([]string(nil), t.buf...)
}
