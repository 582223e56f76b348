// Package bundled registers every plugin kind this repository bundles: echo,
// mcp-client, mcp-servers, agent, mcp-server and web. A program imports it for its side
// effect, beside harnesscmd, to offer what cmd/harness offers:
//
//	import _ "github.com/harness-go/harness/plugins/bundled"
//
// agent, mcp-server and web are linked by harnesscmd anyway (ask, the
// console, serve and harness web are built on them); they are listed so
// that this package is the bundled set whatever the CLI links.
package bundled

import (
	_ "github.com/harness-go/harness/plugins/agent"
	_ "github.com/harness-go/harness/plugins/echo"
	_ "github.com/harness-go/harness/plugins/mcpclient"
	_ "github.com/harness-go/harness/plugins/mcpserver"
	_ "github.com/harness-go/harness/plugins/mcpservers"
	_ "github.com/harness-go/harness/plugins/web"
)
