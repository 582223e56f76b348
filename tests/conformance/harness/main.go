// Command harness is the harness binary plus the test-only kind
// conformance-tools (package servertools): what the conformance suite's
// server scenarios run against.
package main

import (
	"os"

	"github.com/harness-go/harness/internal/cli"

	_ "github.com/harness-go/harness/plugins/echo"
	_ "github.com/harness-go/harness/plugins/mcpclient"
	_ "github.com/harness-go/harness/plugins/mcpserver"
	_ "github.com/harness-go/harness/tests/conformance/servertools"
)

func main() {
	os.Exit(cli.ProcessMain(os.Args[1:]))
}
