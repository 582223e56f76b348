// Command harness runs the plugins of a cordis.yml — MCP servers among them —
// and lets people and scripts list and call their tools. See the README.
package main

import (
	"os"

	"github.com/harness-go/harness/internal/cli"
	"github.com/harness-go/harness/internal/mcpdemo"

	// The plugin kinds this binary offers.
	_ "github.com/harness-go/harness/plugins/agent"
	_ "github.com/harness-go/harness/plugins/echo"
	_ "github.com/harness-go/harness/plugins/mcpclient"
	_ "github.com/harness-go/harness/plugins/mcpserver"
)

func main() {
	// The demo MCP server of the bundled cordis.yml is this binary's hidden
	// command (command: !!js process.execPath, args: [mcp-demo]): a fresh
	// clone compiles one program before the demo's tools show, not two.
	if len(os.Args) == 2 && os.Args[1] == mcpdemo.Command {
		os.Exit(mcpdemo.Main())
	}
	os.Exit(cli.ProcessMain(os.Args[1:]))
}
