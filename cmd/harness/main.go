// Command harness runs the plugins of a cordis.yml — MCP servers among them —
// and lets people and scripts list and call their tools. See the README.
package main

import (
	"os"

	"github.com/harness-go/harness/internal/cli"

	// The plugin kinds this binary offers.
	_ "github.com/harness-go/harness/plugins/agent"
	_ "github.com/harness-go/harness/plugins/echo"
	_ "github.com/harness-go/harness/plugins/mcpclient"
	_ "github.com/harness-go/harness/plugins/mcpserver"
)

func main() {
	os.Exit(cli.ProcessMain(os.Args[1:]))
}
