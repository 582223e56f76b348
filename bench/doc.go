// Package bench is the harness's benchmark suite: what an MCP call costs
// through the bridge next to a bare mcp-go client, the TypeScript SDK client
// and the pipe itself; how long a reload and the start of many servers take;
// what the harness holds in memory; whether reloads leak; what the agent
// and the gateway add. See
// docs/benchmarks.md for how to run it and how to read its table.
//
// The measurements live here, as ordinary functions, so that the Go
// benchmarks of this package (go test -bench . ./bench) and the runner that
// prints the table (go run ./bench/cmd/benchtable) measure exactly the same
// thing:
//
//   - [RunCalls]: echo calls through every [Client], in interleaved rounds:
//     the raw pipe ([StartPipe]), hand-written JSON-RPC lines ([StartRaw], the
//     server's own share S), a bare mcp-go client ([StartMCPGo]), the bridge
//     ([StartBridge]: tools.Execute → mcp-client) and the TypeScript SDK
//     client ([StartTS], bench/tsclient/client.mjs). Every client but the
//     pipe talks to its own `mcpfixture --only echo` over stdio.
//   - [RunReload]: cordis.yml edits under a watching host, until the new
//     tools are visible, next to the server's own connect and discovery
//     ([ServerFloor]).
//   - [RunStartup]: N servers started by an in-process host, next to a bare
//     mcp-go program starting the same N at once.
//   - [HarnessRSS], [BridgeHeap], [MeasureTools]: memory of the harness
//     binary and of the host per server, and the cost of 10 000 tools.
//   - [Soak]: reload cycles, then goroutines, open files and child
//     processes back to their baseline.
//   - [RunReloadUnderLoad]: 16 callers calling an entry's tool while its
//     arguments are edited (make before break): failed calls, versions of
//     the registry without the tool, latency with and without edits.
//   - [RunAgent]: the agent's own time per step with 100 tools, and what it
//     adds to a fake model server's time to first text byte.
//   - [StartGatewayClients] with [RunCalls]: the TypeScript SDK client
//     straight to the fixture, behind a byte relay (twice: what one run
//     can tell apart), behind a relay that parses, and through `harness
//     serve`, over stdio and Streamable HTTP.
//
// [Build] compiles the programs the suite starts (the fixture server, the
// harness binary, the pipe echo, the two relays); nothing here sleeps to
// synchronise.
package bench
