// Package proc contains the processes the harness starts. A stdio MCP server,
// and whatever it starts in turn, ends when the server is disposed and when
// the harness closes; as far as each OS allows, also when the harness dies.
//
// A [Spawner] starts every server of one host and is closed with the host;
// each server is a [Process]. The mcp-client plugin keeps the close ladder's
// timing (stdin closed, then [Process.Terminate], then [Process.Kill]) and
// ends with [Process.Close], which kills and reaps whatever of the server is
// left.
//
// What contains a server, per OS:
//
//   - Every unix: the server leads its own process group, and every signal
//     goes to the whole group, so `npx` and `sh -c` grandchildren go with it.
//   - Linux, in addition: each server gets SIGKILL when the harness dies
//     (kill -9 included), by a parent-death signal. The kernel ties that
//     signal to the thread that forked, so every server is started from one
//     goroutine locked to its OS thread for the spawner's life; when the
//     spawner closes, that goroutine ends without unlocking and its thread
//     exits, which kills any server still running — a last resort.
//     The harness is also a child subreaper (PR_SET_CHILD_SUBREAPER), and
//     every server carries an environment tag ([TagVar]) that its children
//     inherit: daemons it starts (setsid, double fork) leave its group and are
//     re-parented to the harness, and a scan of /proc finds them by their
//     tag. They get the same signals as the group, and are killed and reaped
//     (wait4 on their own pid, never on -1, so os/exec keeps the statuses of
//     the processes it waits for) when the server is closed and when the
//     spawner closes.
//   - Windows: each server is put in a job object that kills every process
//     in it when its last handle closes — at [Process.Close], at
//     [Process.Kill], and when the harness exits or dies. The server is
//     assigned to its job right after it started: a process it starts in
//     that instant, before the assignment, is not in the job and escapes.
//     Windows has no polite signal for a process without a console window:
//     [Process.Terminate] does nothing there, closing stdin is the polite
//     step.
//   - macOS and other unix: the process group only.
//
// Zombies. A re-parented daemon that exits by itself becomes a zombie of the
// harness. Its environment is gone with it, so it can be attributed only if
// a scan saw it alive (every Terminate, Kill, Alive and Close scans); those
// are reaped at Close. One that starts and exits between two scans cannot
// be told from a child some other part of the process waits for, so it is
// left alone: it holds a pid, no memory, until the harness exits.
//
// What still escapes, per OS, is listed in docs/RELIABILITY.md.
package proc

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// TagVar is the environment variable that marks every process of a server:
// a comma-separated list of tags "<spawner id>.<n>", one per harness that
// started an ancestor, outermost first (a harness run as a server of another
// keeps its parent's tag and adds its own).
const TagVar = "HARNESS_PROC"

// ErrClosed is returned by [Spawner.Start] after [Spawner.Close].
var ErrClosed = errors.New("proc: the spawner is closed")

// reapWait bounds how long Close waits for killed processes to be gone, and
// pollEvery is how often it looks: a process we did not start has no exit
// event, so the only way to see it go is to look again.
const (
	reapWait  = 2 * time.Second
	pollEvery = 20 * time.Millisecond
)

// Spawner starts processes and contains them (see the package doc). Create
// one per host with [NewSpawner] and close it when the host closes. It is
// safe for concurrent use.
type Spawner struct {
	id   string
	next atomic.Uint64

	mu     sync.Mutex
	closed bool
	open   map[*Process]struct{} // started and not closed
	live   map[int]struct{}      // pids started whose Wait has not returned: os/exec reaps them, never we

	sys spawnerSys
}

// NewSpawner returns a spawner with a fresh random id. On Linux it makes the
// whole process a child subreaper (for good: other spawners may rely on it)
// and starts the spawning thread.
func NewSpawner() (*Spawner, error) {
	var b [6]byte
	if _, err := rand.Read(b[:]); err != nil {
		return nil, fmt.Errorf("proc: spawner id: %w", err)
	}
	s := &Spawner{
		id:   fmt.Sprintf("%d-%s", os.Getpid(), hex.EncodeToString(b[:])),
		open: map[*Process]struct{}{},
		live: map[int]struct{}{},
	}
	if err := s.sys.init(); err != nil {
		return nil, fmt.Errorf("proc: %w", err)
	}
	return s, nil
}

// ID returns the spawner's id, the first part of its tags.
func (s *Spawner) ID() string { return s.id }

// Start starts cmd contained: in its own process group (unix), with a
// parent-death signal and the environment tag (Linux), in a job object
// (Windows). cmd.Env nil means the process's environment, as in os/exec; the
// tag is added to it. Call [Process.Wait] to reap it (not cmd.Wait), and
// [Process.Close] when done.
func (s *Spawner) Start(cmd *exec.Cmd) (*Process, error) {
	s.mu.Lock()
	closed := s.closed
	s.mu.Unlock()
	if closed {
		return nil, ErrClosed
	}
	tag := fmt.Sprintf("%s.%d", s.id, s.next.Add(1))
	env := cmd.Env
	if env == nil {
		env = os.Environ()
	}
	cmd.Env = withTag(env, tag)
	prepare(cmd)
	if err := s.sys.start(cmd); err != nil {
		return nil, err
	}
	p := &Process{s: s, cmd: cmd, tag: tag}
	if err := p.sys.attach(cmd); err != nil {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		return nil, fmt.Errorf("proc: contain pid %d: %w", cmd.Process.Pid, err)
	}
	s.mu.Lock()
	if s.closed { // Close ran meanwhile and did not see p
		s.mu.Unlock()
		_ = p.release()
		_ = cmd.Wait()
		return nil, ErrClosed
	}
	s.live[cmd.Process.Pid] = struct{}{}
	s.open[p] = struct{}{}
	s.mu.Unlock()
	return p, nil
}

// Close kills and reaps every process the spawner started that was not
// closed yet, with what they started, then stops the spawning thread (Linux).
// It is safe to call more than once; Start fails afterwards.
func (s *Spawner) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	open := make([]*Process, 0, len(s.open))
	for p := range s.open {
		open = append(open, p)
	}
	s.mu.Unlock()
	errs := make([]error, len(open)+1)
	var wg sync.WaitGroup
	for i, p := range open {
		wg.Go(func() { errs[i] = p.Close() })
	}
	wg.Wait()
	errs[len(open)] = s.sys.close(s)
	return errors.Join(errs...)
}

// owns reports whether pid is a process the spawner started whose Wait has
// not returned: only os/exec may reap it.
func (s *Spawner) owns(pid int) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, ok := s.live[pid]
	return ok
}

// Process is one process a [Spawner] started, with everything it starts:
// its process group, on Linux the processes carrying its tag, on Windows its
// job. All methods are safe for concurrent use.
type Process struct {
	s   *Spawner
	cmd *exec.Cmd
	tag string
	sys processSys

	closeOnce sync.Once
	closeErr  error
}

// Pid returns the process id (and, on unix, the process group id).
func (p *Process) Pid() int { return p.cmd.Process.Pid }

// Tag returns the value of [TagVar] that marks this process and what it
// starts (its own tag; the variable may list a parent harness's first).
func (p *Process) Tag() string { return p.tag }

// Wait waits for the process to exit and reaps it (exec.Cmd.Wait).
func (p *Process) Wait() error {
	err := p.cmd.Wait()
	p.s.mu.Lock()
	delete(p.s.live, p.Pid())
	p.s.mu.Unlock()
	return err
}

// Terminate asks politely: SIGTERM to the process group and, on Linux, to
// every process carrying the tag. It does nothing on Windows.
func (p *Process) Terminate() error { return p.signal(false) }

// Kill sends SIGKILL to the process group and, on Linux, to every process
// carrying the tag; on Windows it terminates the job.
func (p *Process) Kill() error { return p.signal(true) }

// Alive reports whether anything of the process still runs: a member of its
// process group that is not a zombie (unix), a process carrying its tag
// (Linux), a process in its job (Windows). Use it after the process itself
// exited, to see whether what it started is gone.
func (p *Process) Alive() bool { return p.alive() }

// Close kills whatever of the process is left — the process itself if it
// still runs, its group, on Linux the processes carrying its tag — and reaps
// those re-parented to the harness; on Windows it terminates and releases
// the job. It waits (bounded) until they are gone. It is safe to call more
// than once; call it after the ladder of Terminate and Kill, or at once.
func (p *Process) Close() error {
	p.closeOnce.Do(func() {
		p.closeErr = p.release()
		p.s.mu.Lock()
		delete(p.s.open, p)
		p.s.mu.Unlock()
	})
	return p.closeErr
}

// withTag returns env with tag added to TagVar (after the tags already
// there, so a nested harness's processes stay attributable to the outer
// one).
func withTag(env []string, tag string) []string {
	out := make([]string, 0, len(env)+1)
	value := tag
	for _, kv := range env {
		k, v, _ := strings.Cut(kv, "=")
		if k == TagVar {
			if v != "" {
				value = v + "," + tag
			}
			continue
		}
		out = append(out, kv)
	}
	return append(out, TagVar+"="+value)
}

// hasTag reports whether the value of TagVar holds tag exactly, or (prefix)
// a tag starting with it.
func hasTag(value, tag string, prefix bool) bool {
	for t := range strings.SplitSeq(value, ",") {
		if t == tag || prefix && strings.HasPrefix(t, tag) {
			return true
		}
	}
	return false
}
