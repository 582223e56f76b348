package faults

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/harness-go/harness/host"
	"github.com/harness-go/harness/host/jsexpr"
	"github.com/harness-go/harness/internal/fixture"
	"github.com/harness-go/harness/internal/testlog"
	"github.com/harness-go/harness/plugins/mcpclient"
	"github.com/harness-go/harness/plugins/tools"

	_ "github.com/harness-go/harness/plugins/echo"
)

// world is the harness in-process: a host with the tools service and the
// plugin kinds the binary has, loading a cordis.yml from its own directory.
type world struct {
	t    *testing.T
	h    *host.Host
	reg  *tools.Registry
	rec  *testlog.Recorder // every log record, as text
	logs *logWatch         // the records as they come, to wait on
	dir  string
	file string

	envMu sync.Mutex
	env   map[string]string // what !!js reads
}

func newWorld(t *testing.T) *world {
	t.Helper()
	log, rec := testlog.New(t)
	watch := &logWatch{next: log.Handler(), core: &logCore{wake: make(chan struct{})}}
	log = slog.New(watch)
	w := &world{t: t, reg: tools.New(), rec: rec, logs: watch, dir: t.TempDir(), env: map[string]string{}}
	w.file = filepath.Join(w.dir, "cordis.yml")
	env := jsexpr.Env{Lookup: w.lookup, Cwd: w.dir}
	w.h = host.New(host.Options{Logger: log, Env: &env, DisposeTimeout: 15 * time.Second})
	w.h.Provide(tools.Service, w.reg)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := w.h.Close(ctx); err != nil {
			t.Errorf("closing the host: %v", err)
		}
	})
	return w
}

func (w *world) lookup(name string) (string, bool) {
	w.envMu.Lock()
	defer w.envMu.Unlock()
	v, ok := w.env[name]
	return v, ok
}

func (w *world) setenv(name, value string) {
	w.envMu.Lock()
	defer w.envMu.Unlock()
	w.env[name] = value
}

// pidFile is a path for a fixture's --pidfile; whatever it lists is killed
// at cleanup if a failing test left it running.
func (w *world) pidFile(name string) string {
	p := filepath.Join(w.dir, "pids-"+name)
	killLeftovers(w.t, p)
	return p
}

// load writes src to cordis.yml and loads it (without waiting for the
// entries to settle).
func (w *world) load(src string) error {
	w.t.Helper()
	if err := os.WriteFile(w.file, []byte(src), 0o644); err != nil {
		w.t.Fatal(err)
	}
	_, err := w.h.LoadFile(context.Background(), w.file, true)
	return err
}

func (w *world) mustLoad(src string) {
	w.t.Helper()
	if err := w.load(src); err != nil {
		w.t.Fatalf("load: %v", err)
	}
}

// settle waits until every entry has settled.
func (w *world) settle(within time.Duration) {
	w.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), within)
	defer cancel()
	if err := w.h.Settle(ctx); err != nil {
		w.t.Fatalf("not settled within %s: %s", within, w.states())
	}
}

func (w *world) states() string {
	var parts []string
	for _, e := range w.h.Snapshot() {
		s := e.ID + "=" + e.State.String()
		if e.Error != "" {
			s += "(" + e.Error + ")"
		}
		parts = append(parts, s)
	}
	return strings.Join(parts, " ")
}

func (w *world) entry(id string) host.EntryStatus {
	w.t.Helper()
	for _, e := range w.h.Snapshot() {
		if e.ID == id {
			return e
		}
	}
	w.t.Fatalf("no entry %q: %s", id, w.states())
	return host.EntryStatus{}
}

// status is the mcp-client status of entry id.
func (w *world) status(id string) *mcpclient.Status {
	w.t.Helper()
	st, ok := w.entry(id).Details.(*mcpclient.Status)
	if !ok {
		w.t.Fatalf("entry %q has no mcp-client status", id)
	}
	return st
}

// waitState waits for entry id to reach state s.
func (w *world) waitState(id string, s host.State, within time.Duration) host.EntryStatus {
	w.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), within)
	defer cancel()
	var got host.EntryStatus
	err := w.h.Wait(ctx, func(snap []host.EntryStatus) bool {
		for _, e := range snap {
			if e.ID == id {
				got = e
				return e.State == s
			}
		}
		return false
	})
	if err != nil {
		w.t.Fatalf("entry %q did not become %s within %s: %s", id, s, within, w.states())
	}
	return got
}

// waitTools waits until cond holds for the registered names.
func (w *world) waitTools(what string, within time.Duration, cond func([]string) bool) {
	w.t.Helper()
	timer := time.NewTimer(within)
	defer timer.Stop()
	for {
		changed := w.reg.Changed()
		if cond(w.reg.Names()) {
			return
		}
		select {
		case <-changed:
		case <-timer.C:
			w.t.Fatalf("timed out waiting for %s; tools: %q", what, w.reg.Names())
		}
	}
}

// names returns the registered names with this prefix.
func (w *world) names(prefix string) []string {
	var out []string
	for _, n := range w.reg.Names() {
		if strings.HasPrefix(n, prefix) {
			out = append(out, n)
		}
	}
	return out
}

func (w *world) call(name, args string) tools.Result {
	return w.reg.Execute(context.Background(), name, json.RawMessage(args))
}

// wantCall calls a tool and checks what the model sees.
func (w *world) wantCall(name, args, want string) {
	w.t.Helper()
	if res := w.call(name, args); res.IsError || res.Text != want {
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
type logWatch struct {
	next  slog.Handler
	attrs []slog.Attr
	core  *logCore
}

type logCore struct {
	mu      sync.Mutex
	records []string
	wake    chan struct{}
}

func (l *logWatch) Enabled(ctx context.Context, level slog.Level) bool {
	return l.next.Enabled(ctx, level)
}

func (l *logWatch) Handle(ctx context.Context, r slog.Record) error {
	err := l.next.Handle(ctx, r)
	var b strings.Builder
	b.WriteString(r.Message)
	add := func(a slog.Attr) bool {
		fmt.Fprintf(&b, " %s=%v", a.Key, a.Value)
		return true
	}
	for _, a := range l.attrs {
		add(a)
	}
	r.Attrs(add)
	c := l.core
	c.mu.Lock()
	c.records = append(c.records, b.String())
	close(c.wake)
	c.wake = make(chan struct{})
	c.mu.Unlock()
	return err
}

func (l *logWatch) WithAttrs(attrs []slog.Attr) slog.Handler {
	return &logWatch{next: l.next.WithAttrs(attrs), attrs: append(slices.Clip(l.attrs), attrs...), core: l.core}
}

func (l *logWatch) WithGroup(name string) slog.Handler {
	return &logWatch{next: l.next.WithGroup(name), attrs: l.attrs, core: l.core}
}

// waitLog waits for a record that holds every part and returns it.
func (w *world) waitLog(within time.Duration, parts ...string) string {
	w.t.Helper()
	timer := time.NewTimer(within)
	defer timer.Stop()
	match := has(parts...)
	c := w.logs.core
	for {
		c.mu.Lock()
		for _, r := range c.records {
			if match(r) {
				c.mu.Unlock()
				return r
			}
		}
		wake := c.wake
		c.mu.Unlock()
		select {
		case <-wake:
		case <-timer.C:
			w.t.Fatalf("no log record with %q within %s", parts, within)
		}
	}
}
