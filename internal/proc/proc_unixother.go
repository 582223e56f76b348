//go:build unix && !linux

package proc

import (
	"os/exec"
	"syscall"
)

// Outside Linux a server is contained by its process group only: no
// parent-death signal, no subreaper, no tag scan.

type spawnerSys struct{}

func (*spawnerSys) init() error                      { return nil }
func (*spawnerSys) start(cmd *exec.Cmd) error        { return cmd.Start() }
func (*spawnerSys) close(*Spawner) error             { return nil }
func withParentDeath(*syscall.SysProcAttr)           {}
func (p *Process) signalStrays(syscall.Signal) error { return nil }

type processSys struct{}

func (*processSys) attach(*exec.Cmd) error { return nil }

// alive: a zombie member counts, since nothing but /proc tells them apart;
// orphaned zombies are reaped by launchd or init at once.
func (p *Process) alive() bool { return syscall.Kill(-p.Pid(), 0) == nil }

// release sends SIGKILL to the group, which the kernel delivers at once.
func (p *Process) release() error { return signalGroup(p.Pid(), syscall.SIGKILL) }
