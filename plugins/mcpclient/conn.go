package mcpclient

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"

	"github.com/mark3labs/mcp-go/client/transport"

	"github.com/harness-go/harness/host/secret"
	"github.com/harness-go/harness/internal/proc"
)

// conn is one connection to an MCP server, over stdio or Streamable HTTP:
// raw JSON-RPC requests and notifications out (mcp-go's transport
// interface, which both implement), notifications in, and a signal when it
// ends. The session speaks the protocol on it; there is no other request
// path.
type conn interface {
	transport.Interface
	// Done is closed when the connection is lost: the server exited, or
	// the network refused or reset it. Close closes it too.
	Done() <-chan struct{}
	// Err says why the connection ended.
	Err() error
}

// notSentError is the error of a request that never reached the server:
// the connection was already lost, or failed before the request was
// written. Such a request may be sent again on the next connection; one
// that was sent is never sent twice.
type notSentError struct{ err error }

func (e *notSentError) Error() string { return e.err.Error() }
func (e *notSentError) Unwrap() error { return e.err }

// notSent reports whether err is a request that never reached the server.
func notSent(err error) bool {
	var ns *notSentError
	return errors.As(err, &ns)
}

// dial opens a connection as cfg says: it starts a stdio server, or
// prepares the HTTP client. life is the instance's long-lived context (the
// HTTP transport ties its listening stream to it); dir is the directory of
// cordis.yml; spawn starts stdio servers (contained: internal/proc).
func dial(life context.Context, spawn *proc.Spawner, cfg *Config, dir string, log *slog.Logger, secrets *secret.Set) (conn, error) {
	switch cfg.Transport {
	case TransportStdio:
		env := childEnv(os.Environ(), cfg.Env, secrets)
		cwd := cfg.Cwd
		switch {
		case cwd == "":
			cwd, _ = os.Getwd()
		case !filepath.IsAbs(cwd):
			cwd = filepath.Join(dir, cwd)
		}
		// exec reports a missing folder as the command's "no such file".
		if fi, err := os.Stat(cwd); err != nil || !fi.IsDir() {
			if err == nil {
				err = errors.New("not a directory")
			}
			return nil, fmt.Errorf("cwd %s: %w", cwd, err)
		}
		return startStdio(spawn, cfg.Command, cfg.Args, env, cwd, log, secrets)
	case TransportHTTP:
		return dialHTTP(life, cfg, log, secrets)
	}
	return nil, fmt.Errorf("transport %q is not supported", cfg.Transport)
}
