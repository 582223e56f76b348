//go:build !unix && !windows

package proc

import (
	"errors"
	"os"
	"os/exec"
)

// Elsewhere (plan9, wasm) nothing contains a process: only the direct child
// is killed.

type spawnerSys struct{}

func (*spawnerSys) init() error               { return nil }
func (*spawnerSys) start(cmd *exec.Cmd) error { return cmd.Start() }
func (*spawnerSys) close(*Spawner) error      { return nil }

type processSys struct{}

func (*processSys) attach(*exec.Cmd) error { return nil }
func prepare(*exec.Cmd)                    {}

func (p *Process) signal(kill bool) error {
	if !kill {
		return nil
	}
	if err := p.cmd.Process.Kill(); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return err
	}
	return nil
}

func (p *Process) alive() bool    { return false }
func (p *Process) release() error { return p.signal(true) }
