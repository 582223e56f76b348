// Command relay starts the command given as its arguments and copies bytes
// between them: its stdin to the command's, the command's stdout to its
// own, as they arrive. Between an MCP client and a stdio server it is the
// least a process in the middle can cost, the floor of any gateway: the
// benchmark suite's relay row.
package main

import (
	"io"
	"os"

	"github.com/harness-go/harness/bench/internal/middle"
)

func main() {
	cmd, in, out := middle.Start("relay")
	go func() {
		_, _ = io.Copy(in, os.Stdin)
		in.Close() // the client's EOF reaches the server
	}()
	_, _ = io.Copy(os.Stdout, out)
	_ = cmd.Wait()
}
