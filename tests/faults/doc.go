// Package faults is the fault matrix of docs/RELIABILITY.md: what the
// harness guarantees when the MCP servers it runs crash, hang, print
// garbage, ignore signals or leave children behind, when cordis.yml is
// edited badly under load, and when secrets sit in env and headers.
//
// Every row of the matrix is a test here or a test it names elsewhere
// (plugins/mcpclient, tests/e2e, host, host/jsexpr). Two kinds of tests live
// in this package:
//
//   - black-box tests through the built binary, for what concerns the
//     harness as a whole: signals, --wait bounds, processes gone after exit,
//     configuration edits under load, memory of the process;
//   - in-process tests with host.New, the tools service and the mcp-client
//     plugin against the fixture server (internal/testkit/fixture), where that is
//     cheaper and lets a test look inside.
//
// TestMain builds cmd/harness (with -race when the tests run with it, so a
// data race in the product fails the test that hit it; and once more
// without, for memory measurements) and tests/fixtures/mcpfixture.
//
// Tests wait for events — a line on a stream, a host event, a registry
// change, a message the fixture logged to a FIFO — never for a fixed time.
// The one exception is the exit of a process the test did not start (a
// server's grandchild, a server the harness started): no event exists for
// it, so those checks poll with a deadline, and say so.
//
// The tests build on every unix (they use signals, FIFOs and process groups)
// and run on Linux (they read /proc); a few, about what only Linux offers
// (a parent-death signal, a child subreaper), live in files for Linux only.
// On Windows the package is this comment.
package faults
