// Command harness is the harness binary plus the test-only kind
// conformance-tools (package servertools): what the conformance suite's
// server scenarios run against.
package main

import (
	"github.com/harness-go/harness/harnesscmd"

	_ "github.com/harness-go/harness/plugins/echo"
	_ "github.com/harness-go/harness/plugins/mcpclient"
	_ "github.com/harness-go/harness/plugins/mcpserver"
	_ "github.com/harness-go/harness/tests/conformance/servertools"
)

func main() { harnesscmd.Main() }
