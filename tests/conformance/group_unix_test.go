//go:build unix

package conformance_test

import (
	"errors"
	"os/exec"
	"syscall"
)

// ownGroup starts cmd as the leader of a new process group; the client the
// runner spawns (through /bin/sh) joins it.
func ownGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
}

// killGroup sends SIGKILL to cmd's whole process group.
func killGroup(cmd *exec.Cmd) error {
	err := syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	if errors.Is(err, syscall.ESRCH) {
		return nil
	}
	return err
}
