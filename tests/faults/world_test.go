//go:build unix

package faults

import (
	"fmt"
	"io"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/harness-go/harness/internal/testkit/fixture"
	"github.com/harness-go/harness/internal/testkit/hosttest"
	"github.com/harness-go/harness/plugins/mcpclient"
	"github.com/harness-go/harness/plugins/tools"

	_ "github.com/harness-go/harness/plugins/echo"
)

// world is the harness in-process: a host with the tools service and the
// plugin kinds the binary has, loading a cordis.yml from its own directory.
type world struct {
	*hosttest.Host
	t *testing.T
}

func newWorld(t *testing.T) *world {
	t.Helper()
	return &world{Host: hosttest.New(t, 15*time.Second), t: t}
}

// pidFile is a path for a fixture's --pidfile; whatever it lists is killed
// at cleanup if a failing test left it running.
func (w *world) pidFile(name string) string {
	p := filepath.Join(w.Dir, "pids-"+name)
	killLeftovers(w.t, p)
	return p
}

func (w *world) mustLoad(src string) {
	w.t.Helper()
	if err := w.Load(src); err != nil {
		w.t.Fatalf("load: %v", err)
	}
}

// status is the mcp-client status of entry id.
func (w *world) status(id string) *mcpclient.Status {
	w.t.Helper()
	st, ok := w.Entry(id).Details.(*mcpclient.Status)
	if !ok {
		w.t.Fatalf("entry %q has no mcp-client status", id)
	}
	return st
}

// wantCall calls a tool and checks what the model sees.
func (w *world) wantCall(name, args, want string) {
	w.t.Helper()
	if res := w.Call(name, args); res.IsError || res.Text != want {
		w.t.Fatalf("%s(%s) = %+v, want %q", name, args, clipResult(res), want)
	}
}

func clipResult(r tools.Result) tools.Result {
	r.Text = clip(r.Text, 300)
	return r
}

// fixtureEnt is stdioEnt for in-process tests: generous timeouts, unless
// the test sets its own.
func fixtureEnt(id, server string, args ...string) ent {
	return stdioEnt(id, server, args...).with("toolCallTimeoutMs", 60000).with("startupTimeoutMs", 30000)
}

// httpFixture serves the fixture over Streamable HTTP from this process
// and returns its URL. Register it before newWorld, so that the host is
// closed (its connections ended) before the server.
func httpFixture(t *testing.T, opts fixture.Options) string {
	t.Helper()
	if opts.Stderr == nil {
		opts.Stderr = io.Discard
	}
	srv := httptest.NewServer(fixture.HTTPHandler(opts))
	t.Cleanup(func() {
		srv.CloseClientConnections()
		srv.Close()
	})
	return srv.URL + fixture.HTTPPath
}

// noSecrets fails when any secret appears in any of the texts.
func noSecrets(t *testing.T, where string, text string, secrets ...string) {
	t.Helper()
	for _, s := range secrets {
		if i := strings.Index(text, s); i >= 0 {
			lo, hi := max(0, i-200), min(len(text), i+len(s)+100)
			t.Errorf("secret %q appears in %s: …%s…", s, where, text[lo:hi])
		}
	}
}

// contains reports whether list holds s.
func contains(list []string, s string) bool { return slices.Contains(list, s) }

// logWatch passes records on and keeps each as one line of text (message,
// then key=value for every attribute), so a test can wait for a record.
// waitLog waits for a record that holds every part and returns it.
func (w *world) waitLog(within time.Duration, parts ...string) string {
	w.t.Helper()
	match := has(parts...)
	recs := w.Logs.Wait(w.t, within, fmt.Sprintf("a record with %q", parts), 1, func(r hosttest.Record) bool { return match(r.String()) })
	return recs[0].String()
}
