package npmtest

import (
	"os/exec"
	"syscall"
)

// killWithParent makes the kernel kill cmd when the test binary dies (for
// example killed by go test's timeout or ^C), so no npm process outlives
// it and writes into a staging folder that the next installer removes.
// Context cancellation kills npm as usual (exec.CommandContext).
func killWithParent(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
