// Package middle starts the server of a process that sits between an MCP
// client and it (the benchmark suite's relay and jsonrelay): the command
// given as the program's arguments, with its stdin and stdout piped to the
// program and its stderr on the program's own.
package middle

import (
	"io"
	"os"
	"os/exec"
)

// Start starts the command os.Args[1:] names and returns it with its
// stdin and stdout. When there is no command, or it cannot start, it
// exits: with status 2 and a usage line naming program, or status 1.
func Start(program string) (cmd *exec.Cmd, in io.WriteCloser, out io.ReadCloser) {
	if len(os.Args) < 2 {
		os.Stderr.WriteString("usage: " + program + " COMMAND [ARGS...]\n")
		os.Exit(2)
	}
	cmd = exec.Command(os.Args[1], os.Args[2:]...)
	cmd.Stderr = os.Stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		os.Exit(1)
	}
	out, err = cmd.StdoutPipe()
	if err != nil {
		os.Exit(1)
	}
	if err := cmd.Start(); err != nil {
		os.Stderr.WriteString(err.Error() + "\n")
		os.Exit(1)
	}
	return cmd, in, out
}
