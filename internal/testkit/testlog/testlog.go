// Package testlog routes log/slog records to a test's log, and keeps them for
// assertions (a secret must never appear in any record, say).
package testlog

import (
	"bytes"
	"log/slog"
	"strings"
	"sync"
	"testing"
)

// Recorder is an io.Writer for a slog handler: each line goes to t.Log while
// the test runs, and is kept for [Recorder.String].
type Recorder struct {
	mu   sync.Mutex
	t    testing.TB
	done bool
	buf  bytes.Buffer
}

// New returns a debug-level text logger writing to t, and its recorder.
func New(t testing.TB) (*slog.Logger, *Recorder) {
	r := &Recorder{t: t}
	t.Cleanup(func() {
		r.mu.Lock()
		r.done = true
		r.mu.Unlock()
	})
	return slog.New(slog.NewTextHandler(r, &slog.HandlerOptions{Level: slog.LevelDebug})), r
}

func (r *Recorder) Write(p []byte) (int, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.buf.Write(p)
	if !r.done {
		r.t.Helper()
		r.t.Log(strings.TrimRight(string(p), "\n"))
	}
	return len(p), nil
}

// String returns everything logged so far.
func (r *Recorder) String() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.buf.String()
}
