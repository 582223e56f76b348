package proc

import (
	"bytes"
	"errors"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// spawnerSys is the spawning thread: one goroutine, locked to its OS thread
// for the spawner's life, runs every cmd.Start, so that every server's
// parent-death signal refers to a thread that lives as long as the spawner.
type spawnerSys struct {
	reqs     chan startReq
	quit     chan struct{}
	quitOnce sync.Once
	done     chan struct{} // closed when the spawning goroutine returns
}

type startReq struct {
	cmd *exec.Cmd
	err chan error
}

func (ss *spawnerSys) init() error {
	if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("become a child subreaper: %w", err)
	}
	ss.reqs = make(chan startReq)
	ss.quit = make(chan struct{})
	ss.done = make(chan struct{})
	go ss.loop()
	return nil
}

func (ss *spawnerSys) loop() {
	runtime.LockOSThread()
	if unix.Gettid() == unix.Getpid() {
		// The process's main thread: the runtime never ends it (a locked
		// goroutine that exits there parks it instead), so the signal
		// would never come. While this goroutine holds it, a new one
		// cannot run there: hand over, then give the main thread back.
		locked := make(chan struct{})
		go ss.loopOn(locked)
		<-locked
		runtime.UnlockOSThread()
		return
	}
	ss.loopOn(nil)
}

// loopOn serves start requests on the locked thread it runs on.
func (ss *spawnerSys) loopOn(locked chan<- struct{}) {
	runtime.LockOSThread()
	if locked != nil {
		close(locked)
	}
	// Never unlocked: when this goroutine returns, the runtime ends its
	// thread, and the kernel sends SIGKILL to every process it forked that
	// still runs. Close has killed them already; this is the last resort.
	defer close(ss.done)
	for {
		select {
		case r := <-ss.reqs:
			r.err <- r.cmd.Start()
		case <-ss.quit:
			return
		}
	}
}

func (ss *spawnerSys) start(cmd *exec.Cmd) error {
	r := startReq{cmd: cmd, err: make(chan error, 1)}
	select {
	case ss.reqs <- r:
		return <-r.err
	case <-ss.done:
		return ErrClosed
	}
}

// close ends the spawning thread, then kills and reaps every process that
// still carries one of the spawner's tags.
func (ss *spawnerSys) close(s *Spawner) error {
	ss.stop()
	return s.killAndReap(0, s.id+".", true, nil)
}

// stop ends the spawning goroutine, and with it its thread.
func (ss *spawnerSys) stop() {
	ss.quitOnce.Do(func() { close(ss.quit) })
	<-ss.done
}

func withParentDeath(attr *syscall.SysProcAttr) { attr.Pdeathsig = syscall.SIGKILL }

// processSys remembers the processes of a server that scans found, so that
// those that die afterwards — their environment gone, their tag unreadable —
// are still reaped at Close.
type processSys struct {
	mu   sync.Mutex
	seen map[int]member
}

func (*processSys) attach(*exec.Cmd) error { return nil }

func (ps *processSys) remember(ms []member) {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	if ps.seen == nil {
		ps.seen = map[int]member{}
	}
	for _, m := range ms {
		ps.seen[m.pid] = m
	}
}

func (ps *processSys) known() map[int]member {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	return maps.Clone(ps.seen)
}

// signalStrays sends sig to the processes that carry the tag outside the
// group (the group had it already).
func (p *Process) signalStrays(sig syscall.Signal) error {
	ms := scan(p.Pid(), p.tag, false)
	p.sys.remember(ms)
	var errs []error
	for _, m := range ms {
		if m.pgrp != p.Pid() && !m.zombie {
			if err := syscall.Kill(m.pid, sig); err != nil && !errors.Is(err, syscall.ESRCH) {
				errs = append(errs, fmt.Errorf("proc: %s to pid %d: %w", sig, m.pid, err))
			}
		}
	}
	return errors.Join(errs...)
}

func (p *Process) alive() bool {
	ms := scan(p.Pid(), p.tag, false)
	p.sys.remember(ms)
	return slices.ContainsFunc(ms, func(m member) bool { return !m.zombie })
}

func (p *Process) release() error {
	return p.s.killAndReap(p.Pid(), p.tag, false, p.sys.known())
}

// killAndReap sends SIGKILL, round after round, to every process of group
// pgid (if > 0) and every process carrying tag (or, with prefix, a tag that
// starts with it), and reaps those that die as children of this process,
// until a round finds none running and none left to reap, or reapWait
// passes. known adds processes earlier scans found.
//
// Rounds, not one pass: a process may fork between a scan and its SIGKILL,
// and a zombie becomes ours only once its own parent, also dying, is gone.
// There is no event for either, so it polls, with a deadline.
func (s *Spawner) killAndReap(pgid int, tag string, prefix bool, known map[int]member) error {
	if known == nil {
		known = map[int]member{}
	}
	self := os.Getpid()
	deadline := time.Now().Add(reapWait)
	for {
		running := 0
		for _, m := range scan(pgid, tag, prefix) {
			known[m.pid] = m
			if !m.zombie {
				running++
				_ = syscall.Kill(m.pid, syscall.SIGKILL)
			}
		}
		if pgid > 0 {
			_ = signalGroup(pgid, syscall.SIGKILL)
		}
		for pid, m := range known {
			if !s.settle(m, known, self) {
				continue
			}
			delete(known, pid)
		}
		if running == 0 && len(known) == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			pids := make([]int, 0, len(known))
			for pid := range known {
				pids = append(pids, pid)
			}
			slices.Sort(pids)
			return fmt.Errorf("proc: processes of %s still there %s after SIGKILL: %v", tag, reapWait, pids)
		}
		time.Sleep(pollEvery)
	}
}

// settle reaps m if it is a zombie child of this process, and reports
// whether nothing is left to wait for: it is gone, reaped, a zombie another
// process will reap, or a process os/exec waits for (never reaped here).
// A zombie whose parent is one of the dying processes stays: it becomes
// ours when that parent is gone.
func (s *Spawner) settle(m member, known map[int]member, self int) bool {
	cur, ok := readStat(m.pid)
	switch {
	case !ok || cur.start != m.start:
		return true // gone; the pid may be someone else's by now
	case s.owns(m.pid):
		return cur.zombie
	case cur.zombie && cur.ppid == self:
		var ws unix.WaitStatus
		wpid, err := unix.Wait4(m.pid, &ws, unix.WNOHANG, nil)
		return wpid == m.pid || errors.Is(err, unix.ECHILD)
	case cur.zombie:
		_, dying := known[cur.ppid]
		return !dying && !s.owns(cur.ppid)
	}
	return false
}

// member is a process a scan found.
type member struct {
	pid    int
	ppid   int
	pgrp   int
	start  uint64 // clock ticks after boot; with the pid, it names one process
	zombie bool
}

// scan lists the processes of group pgid (if > 0) and those whose
// environment carries tag (or, with prefix, a tag starting with it). A
// zombie's environment cannot be read: zombies are found by their group only.
func scan(pgid int, tag string, prefix bool) []member {
	dir, err := os.Open("/proc")
	if err != nil {
		return nil
	}
	names, _ := dir.Readdirnames(-1)
	dir.Close()
	self := os.Getpid()
	var out []member
	for _, name := range names {
		pid, err := strconv.Atoi(name)
		if err != nil || pid == self {
			continue
		}
		m, ok := readStat(pid)
		if !ok {
			continue
		}
		if pgid > 0 && m.pgrp == pgid {
			out = append(out, m)
			continue
		}
		if m.zombie {
			continue
		}
		env, err := os.ReadFile("/proc/" + name + "/environ")
		if err != nil {
			continue
		}
		if v, ok := lookup(env, TagVar); ok && hasTag(v, tag, prefix) {
			out = append(out, m)
		}
	}
	return out
}

// readStat reads /proc/PID/stat.
func readStat(pid int) (member, bool) {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return member{}, false
	}
	// pid (comm) state ppid pgrp session tty tpgid flags minflt cminflt
	// majflt cmajflt utime stime cutime cstime priority nice threads
	// itrealvalue starttime …; comm may hold spaces and parentheses.
	i := bytes.LastIndexByte(data, ')')
	if i < 0 {
		return member{}, false
	}
	f := strings.Fields(string(data[i+1:]))
	if len(f) < 20 {
		return member{}, false
	}
	m := member{pid: pid, zombie: f[0] == "Z" || f[0] == "X"}
	m.ppid, _ = strconv.Atoi(f[1])
	m.pgrp, _ = strconv.Atoi(f[2])
	m.start, _ = strconv.ParseUint(f[19], 10, 64)
	return m, true
}

// lookup finds key in a NUL-separated environment block.
func lookup(env []byte, key string) (string, bool) {
	for kv := range bytes.SplitSeq(env, []byte{0}) {
		if k, v, ok := bytes.Cut(kv, []byte{'='}); ok && string(k) == key {
			return string(v), true
		}
	}
	return "", false
}
