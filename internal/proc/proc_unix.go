//go:build unix

package proc

import (
	"errors"
	"fmt"
	"os/exec"
	"syscall"
)

// prepare puts the process in its own process group (and, on Linux, sets
// its parent-death signal).
func prepare(cmd *exec.Cmd) {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Setpgid = true
	cmd.SysProcAttr.Pgid = 0
	withParentDeath(cmd.SysProcAttr)
}

func (p *Process) signal(kill bool) error {
	sig := syscall.SIGTERM
	if kill {
		sig = syscall.SIGKILL
	}
	return errors.Join(signalGroup(p.Pid(), sig), p.signalStrays(sig))
}

// signalGroup sends sig to every member of process group pgid; a group that
// is gone is not an error.
func signalGroup(pgid int, sig syscall.Signal) error {
	if err := syscall.Kill(-pgid, sig); err != nil && !errors.Is(err, syscall.ESRCH) {
		return fmt.Errorf("proc: %s to process group %d: %w", sig, pgid, err)
	}
	return nil
}
