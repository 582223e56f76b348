// Package e2e holds black-box end-to-end tests of the harness binary.
//
// TestMain builds cmd/harness, cmd/mcp-demo and tests/fixtures/mcpfixture
// once into a temporary folder (cmd/harness with -race when the tests run
// with -race, so a data race in the product fails the test that hit it).
// Every test then runs the harness as a subprocess in its own temporary
// folder with its own cordis.yml, and checks what a person or a script sees:
// stdout, stderr and the exit code. Console tests drive `harness run` through
// a pipe and wait for expected lines with a deadline, never for a fixed time.
//
// The tests against the pinned npm MCP servers install them through
// internal/testkit/npmtest: without node and npm they skip, and with CI=true they
// fail instead.
package e2e
