package proctest

import (
	"bytes"
	"os"
	"strconv"
	"strings"
	"testing"
)

// Inspect reads /proc/<pid>/stat. A pid it cannot read does not exist.
func Inspect(pid int) Proc {
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return Proc{}
	}
	p := Proc{Exists: true}
	// The fields after the parenthesised command name (which may hold
	// anything, parentheses too): state ppid pgrp session tty_nr tpgid
	// flags …
	i := bytes.LastIndexByte(stat, ')')
	if i < 0 {
		return p
	}
	fields := strings.Fields(string(stat[i+1:]))
	if len(fields) > 1 {
		p.State = fields[0][0]
		p.PPID, _ = strconv.Atoi(fields[1])
	}
	if len(fields) > 6 {
		p.Flags, _ = strconv.ParseUint(fields[6], 10, 64)
	}
	return p
}

// Pids lists the processes /proc shows, but this one. It skips the test
// where there is no /proc.
func Pids(t testing.TB) []int {
	t.Helper()
	entries, err := os.ReadDir("/proc")
	if err != nil {
		t.Skipf("no /proc: %v", err)
	}
	self := os.Getpid()
	var pids []int
	for _, e := range entries {
		if pid, err := strconv.Atoi(e.Name()); err == nil && pid != self {
			pids = append(pids, pid)
		}
	}
	return pids
}

// Cmdline is pid's command line, its arguments joined by spaces; "" when
// it cannot be read.
func Cmdline(pid int) string {
	return strings.ReplaceAll(strings.TrimRight(rawCmdline(pid), "\x00"), "\x00", " ")
}

// rawCmdline is /proc/<pid>/cmdline: each argument ends with a NUL.
func rawCmdline(pid int) string {
	b, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cmdline")
	return string(b)
}
