// Package mcpdemo is the demo MCP server bundled with harness: a small
// server named "demo", built on mcp-go, that speaks the Model Context
// Protocol over stdio and offers a few everyday offline tools:
//
//   - now: the current time in any IANA time zone (rfc3339, unix or human)
//   - calc: a safe arithmetic evaluator (hand-written parser, no eval)
//   - hash: SHA-256, SHA-1, MD5 or SHA-512 hex digests of a text
//   - uuid: version 4 (random) or version 7 (time-ordered) UUIDs
//   - base64: standard or URL-safe Base64 encoding and decoding
//   - wordcount: lines, words, characters and bytes of a text
//
// It needs no network, no keys and no files (the time zone database is
// embedded). Stdout carries only protocol messages; a one-line startup
// notice and any errors go to stderr. The server exits with status 0 on
// SIGTERM/SIGINT, and on stdin EOF once every request already read has been
// answered, so piping a batch of requests into it works too.
//
// The harness binary serves it as its hidden command `harness mcp-demo`,
// which the bundled cordis.yml starts as
//
//	command: !!js process.execPath
//	args: [mcp-demo]
//
// so that a fresh clone compiles one program before the demo's tools show,
// not two. cmd/mcp-demo builds it as a program of its own.
package mcpdemo

import (
	"context"
	"fmt"
	"io"
	"log"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/mark3labs/mcp-go/server"
)

// Command is the harness's hidden command that runs the demo server.
const Command = "mcp-demo"

// Main serves the demo server on the process's stdin and stdout until stdin
// ends or SIGTERM or SIGINT arrives, and returns the exit status: 0, or 1
// after printing the error.
func Main() int {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	err := Run(ctx, os.Stdin, os.Stdout, os.Stderr)
	stop()
	if err != nil {
		fmt.Fprintf(os.Stderr, "mcp-demo: %v\n", err)
		return 1
	}
	return 0
}

// Run serves the demo server on stdin/stdout until stdin reaches EOF or ctx
// is cancelled; both count as a clean shutdown.
func Run(ctx context.Context, stdin io.Reader, stdout, stderr io.Writer) error {
	logger := log.New(stderr, "mcp-demo: ", 0)
	in, out := drainOnEOF(ctx, stdin, stdout, drainTimeout)
	stdio := server.NewStdioServer(newServer(time.Now))
	stdio.SetErrorLogger(logger)
	logger.Printf("%s MCP server %s ready on stdio (tools: %s)", serverName, serverVersion, strings.Join(toolNames, ", "))
	err := stdio.Listen(ctx, in, out)
	if ctx.Err() != nil {
		return nil
	}
	return err
}
