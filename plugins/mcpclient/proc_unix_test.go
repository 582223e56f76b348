//go:build unix

package mcpclient

import (
	"bytes"
	"errors"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// running reports whether pid is a process that still runs, or could.
//
// syscall.Kill(pid, 0) says whether the pid exists, which is not enough:
//   - a grandchild whose parent was killed is re-parented to PID 1, and this
//     sandbox's init reaps orphans only now and then: until it does, the
//     dead process is a zombie (state Z), which exists but runs nothing;
//   - a process sent SIGKILL dies when the kernel next schedules it: until
//     then it may still show as running, with SIGKILL pending, and then as
//     exiting (PF_EXITING). Neither runs another instruction of its own.
//
// So a pid that exists counts as running unless /proc shows it dead or
// doomed.
func running(pid int) bool {
	if err := syscall.Kill(pid, 0); errors.Is(err, syscall.ESRCH) {
		return false
	}
	dir := "/proc/" + strconv.Itoa(pid)
	stat, err := os.ReadFile(dir + "/stat")
	if err != nil {
		return false
	}
	// After the parenthesised command: state ppid pgrp session tty_nr
	// tpgid flags …
	i := bytes.LastIndexByte(stat, ')')
	if i < 0 {
		return true
	}
	fields := strings.Fields(string(stat[i+1:]))
	if len(fields) < 7 || fields[0] == "Z" || fields[0] == "X" {
		return false
	}
	const pfExiting = 0x4
	if flags, err := strconv.ParseUint(fields[6], 10, 64); err == nil && flags&pfExiting != 0 {
		return false
	}
	status, err := os.ReadFile(dir + "/status")
	if err != nil {
		return false
	}
	for _, line := range strings.Split(string(status), "\n") {
		name, value, _ := strings.Cut(line, ":")
		if name != "SigPnd" && name != "ShdPnd" {
			continue
		}
		if mask, err := strconv.ParseUint(strings.TrimSpace(value), 16, 64); err == nil && mask&(1<<(syscall.SIGKILL-1)) != 0 {
			return false
		}
	}
	return true
}

// exists reports whether pid exists at all (a zombie does).
func exists(pid int) bool { return syscall.Kill(pid, 0) == nil }

// kill sends SIGKILL to pid.
func kill(pid int) { _ = syscall.Kill(pid, syscall.SIGKILL) }

// reapDaemon kills a process a test let escape, and reaps it if it became
// our child (the spawner makes this process a subreaper on Linux).
func reapDaemon(pid int) {
	kill(pid)
	for i := 0; i < 100 && running(pid); i++ {
		var ws syscall.WaitStatus
		if wpid, _ := syscall.Wait4(pid, &ws, syscall.WNOHANG, nil); wpid == pid {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
}
