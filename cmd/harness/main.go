// Command harness runs the plugins of a cordis.yml — MCP servers among them —
// and lets people and scripts list and call their tools. See the README.
package main

import (
	"github.com/harness-go/harness/harnesscmd"

	// The plugin kinds this binary offers: the bundled ones.
	_ "github.com/harness-go/harness/plugins/bundled"
)

func main() { harnesscmd.Main() }
