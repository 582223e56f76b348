//go:build unix

package bench

import (
	"syscall"
	"time"
)

// processCPU returns the CPU time this process has used so far.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// alive reports whether a process exists (a zombie counts).
func alive(pid int) bool {
	return syscall.Kill(pid, 0) == nil
}
