// Command harness is the harness binary plus the test-only kind
// conformance-tools (package servertools): what the conformance suite's
// server scenarios run against.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/harness-go/harness/internal/cli"

	_ "github.com/harness-go/harness/plugins/echo"
	_ "github.com/harness-go/harness/plugins/mcpclient"
	_ "github.com/harness-go/harness/plugins/mcpserver"
	_ "github.com/harness-go/harness/tests/conformance/servertools"
)

func main() {
	signals := make(chan os.Signal, 4)
	signal.Notify(signals, syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP)
	os.Exit(cli.Main(context.Background(), os.Args[1:], cli.Env{
		Stdin:   os.Stdin,
		Stdout:  os.Stdout,
		Stderr:  os.Stderr,
		Signals: signals,
	}))
}
