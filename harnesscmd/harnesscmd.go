// Package harnesscmd is the harness command as a library: [Main] runs the
// whole CLI (run, ask, serve, tools, call, status, validate, schema, the
// console) with the plugin kinds the program registered. It is the public
// entry point for a program of its own: a module that adds a kind imports
// that kind's package for its registration, the bundled kinds if it wants
// them (package plugins/bundled), and calls Main:
//
//	package main
//
//	import (
//		"github.com/harness-go/harness/harnesscmd"
//
//		_ "example.com/sibling/greet"                     // a kind of its own
//		_ "github.com/harness-go/harness/plugins/bundled" // and the bundled ones
//	)
//
//	func main() { harnesscmd.Main() }
//
// cmd/harness is exactly that, without a kind of its own; examples/sibling
// is a module built this way. The commands ask, serve and web (and run,
// which serves mcp-server and web entries) are built on the agent,
// mcp-server and web plugins, so a binary of this package always has those
// three kinds; echo and mcp-client are there only when imported. docs/rfc/0001-host.md says why
// the entry point is a package of its own.
package harnesscmd

import (
	"os"

	"github.com/harness-go/harness/harnesscmd/internal/cli"
	"github.com/harness-go/harness/internal/mcpdemo"
)

// Main runs the harness command on os.Args and exits with its code (the
// README's table: 0, 1 or 2).
func Main() { os.Exit(Run(os.Args[1:])) }

// Run runs the harness command with args (os.Args[1:]) on the process's
// streams and signals and returns its exit code. The demo MCP server of the
// bundled cordis.yml is a hidden command of every such binary (command:
// !!js process.execPath, args: [mcp-demo]), so a fresh clone compiles one
// program before the demo's tools show, not two.
func Run(args []string) int {
	if len(args) == 1 && args[0] == mcpdemo.Command {
		return mcpdemo.Main()
	}
	return cli.ProcessMain(args)
}
