// Command harness runs the plugins of a cordis.yml — MCP servers among them —
// and lets people and scripts list and call their tools. See the README.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/harness-go/harness/internal/cli"

	// The plugin kinds this binary offers.
	_ "github.com/harness-go/harness/plugins/agent"
	_ "github.com/harness-go/harness/plugins/echo"
	_ "github.com/harness-go/harness/plugins/mcpclient"
	_ "github.com/harness-go/harness/plugins/mcpserver"
)

func main() {
	signals := make(chan os.Signal, 4)
	signal.Notify(signals, syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP)
	// Asking for SIGPIPE (and dropping it) makes a write to a closed stdout
	// return EPIPE instead of killing the process, so `harness tools | head
	// -1` stops its servers and exits through cli.Main. Not signal.Ignore:
	// an ignored signal stays ignored in the servers we start.
	signal.Notify(make(chan os.Signal, 1), syscall.SIGPIPE)
	os.Exit(cli.Main(context.Background(), os.Args[1:], cli.Env{
		Stdin:     os.Stdin,
		Stdout:    os.Stdout,
		Stderr:    os.Stderr,
		Signals:   signals,
		StdinTTY:  isTerminal(os.Stdin),
		StdoutTTY: isTerminal(os.Stdout),
		StderrTTY: isTerminal(os.Stderr),
	}))
}

func isTerminal(f *os.File) bool {
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}
