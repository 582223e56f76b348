//go:build !unix

package conformance_test

import "os/exec"

// ownGroup does nothing where there are no process groups.
func ownGroup(*exec.Cmd) {}

// killGroup kills the runner only.
func killGroup(cmd *exec.Cmd) error { return cmd.Process.Kill() }
