// Command relay starts the command given as its arguments and copies bytes
// between them: its stdin to the command's, the command's stdout to its
// own, as they arrive. Between an MCP client and a stdio server it is the
// least a process in the middle can cost, the floor of any gateway: the
// benchmark suite's relay row.
package main

import (
	"io"
	"os"
	"os/exec"
)

func main() {
	if len(os.Args) < 2 {
		os.Stderr.WriteString("usage: relay COMMAND [ARGS...]\n")
		os.Exit(2)
	}
	cmd := exec.Command(os.Args[1], os.Args[2:]...)
	cmd.Stderr = os.Stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		os.Exit(1)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		os.Exit(1)
	}
	if err := cmd.Start(); err != nil {
		os.Stderr.WriteString(err.Error() + "\n")
		os.Exit(1)
	}
	go func() {
		_, _ = io.Copy(in, os.Stdin)
		in.Close() // the client's EOF reaches the server
	}()
	_, _ = io.Copy(os.Stdout, out)
	_ = cmd.Wait()
}
