// Command mcp-demo is the demo MCP server bundled with harness (package
// internal/mcpdemo) as a program of its own: a server named "demo" over
// stdio with the tools now, calc, hash, uuid, base64 and wordcount.
//
// The bundled cordis.yml does not need it: the harness binary serves the
// same server as its hidden command `harness mcp-demo`. Build this one to
// point an entry, or another MCP client, at the demo alone:
//
//	go build -o bin/mcp-demo ./cmd/mcp-demo
package main

import (
	"os"

	"github.com/harness-go/harness/internal/mcpdemo"
)

func main() { os.Exit(mcpdemo.Main()) }
