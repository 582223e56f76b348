// Package debuglog lowers the records of a library's logger to debug level.
//
// mcp-go logs what it meets on a connection (a stream that ended, a request
// it could not parse) at its own levels. For the harness those are detail:
// what matters reaches the entry's status or the caller as an error. Wrapping
// the handler handed to the library keeps them in -v output and out of the
// default one.
package debuglog

import (
	"context"
	"log/slog"
)

// Handler returns a handler that passes every record to h at debug level.
func Handler(h slog.Handler) slog.Handler { return debugOnly{h} }

type debugOnly struct{ slog.Handler }

func (d debugOnly) Enabled(ctx context.Context, _ slog.Level) bool {
	return d.Handler.Enabled(ctx, slog.LevelDebug)
}

func (d debugOnly) Handle(ctx context.Context, r slog.Record) error {
	r.Level = slog.LevelDebug
	return d.Handler.Handle(ctx, r)
}

func (d debugOnly) WithAttrs(as []slog.Attr) slog.Handler { return debugOnly{d.Handler.WithAttrs(as)} }
func (d debugOnly) WithGroup(n string) slog.Handler       { return debugOnly{d.Handler.WithGroup(n)} }
