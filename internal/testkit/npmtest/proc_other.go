//go:build !linux

package npmtest

import "os/exec"

// killWithParent has no parent-death signal to use outside Linux.
func killWithParent(cmd *exec.Cmd) {}
