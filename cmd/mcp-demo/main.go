// Command mcp-demo is the demo MCP server bundled with harness: a small
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
// The bundled cordis.yml starts it from the repository root with
//
//	command: go
//	args: [run, ./cmd/mcp-demo]
//
// or, to skip compiling on every start, build it once with
// "go build -o bin/mcp-demo ./cmd/mcp-demo" and use command: bin/mcp-demo
// with no args.
package main

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

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	err := run(ctx, os.Stdin, os.Stdout, os.Stderr)
	stop()
	if err != nil {
		fmt.Fprintf(os.Stderr, "mcp-demo: %v\n", err)
		os.Exit(1)
	}
}

// run serves the demo server on stdin/stdout until stdin reaches EOF or ctx
// is cancelled; both count as a clean shutdown.
func run(ctx context.Context, stdin io.Reader, stdout, stderr io.Writer) error {
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
