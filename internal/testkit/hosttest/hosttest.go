// Package hosttest runs a host in-process for tests: the tools service, a
// cordis.yml in the test's own directory, a !!js environment the test sets,
// and the host's log kept so a test can wait for a record. It never sleeps:
// every wait is on an event, with a deadline.
package hosttest

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/harness-go/harness/host"
	"github.com/harness-go/harness/host/jsexpr"
	"github.com/harness-go/harness/internal/testkit/testlog"
	"github.com/harness-go/harness/plugins/prompts"
	"github.com/harness-go/harness/plugins/resources"
	"github.com/harness-go/harness/plugins/tools"
)

// Host is a host with the tools service, closed when the test ends.
type Host struct {
	T     testing.TB
	H     *host.Host
	Tools *tools.Registry
	// Resources and Prompts are the host's other two services.
	Resources *resources.Registry
	Prompts   *prompts.Registry
	Log       *testlog.Recorder // every record, as text
	Logs      *LogWatch         // the records as they come, to wait on
	Dir       string            // the directory of cordis.yml
	File      string            // cordis.yml

	mu         sync.Mutex
	env        map[string]string // what !!js reads
	afterClose []func()
}

// New returns a host whose instances are each disposed within
// disposeTimeout. At cleanup it closes the host (within 30 s), then runs
// what AfterClose registered.
func New(t testing.TB, disposeTimeout time.Duration) *Host {
	t.Helper()
	log, rec := testlog.New(t)
	watch := NewLogWatch(log.Handler())
	h := &Host{T: t, Tools: tools.New(), Resources: resources.New(), Prompts: prompts.New(), Log: rec, Logs: watch, Dir: t.TempDir(), env: map[string]string{}}
	h.File = filepath.Join(h.Dir, "cordis.yml")
	env := jsexpr.Env{Lookup: h.lookup, Cwd: h.Dir}
	h.H = host.New(host.Options{Env: &env, Logger: slog.New(watch), DisposeTimeout: disposeTimeout})
	h.H.Provide(tools.Service, h.Tools)
	h.H.Provide(resources.Service, h.Resources)
	h.H.Provide(prompts.Service, h.Prompts)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := h.H.Close(ctx); err != nil {
			t.Errorf("closing the host: %v", err)
		}
		h.mu.Lock()
		after := h.afterClose
		h.mu.Unlock()
		for _, fn := range after {
			fn()
		}
	})
	return h
}

// AfterClose registers fn to run at cleanup, once the host is closed.
func (h *Host) AfterClose(fn func()) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.afterClose = append(h.afterClose, fn)
}

func (h *Host) lookup(name string) (string, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	v, ok := h.env[name]
	return v, ok
}

// Setenv sets a variable that !!js expressions read.
func (h *Host) Setenv(name, value string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.env[name] = value
}

// Load writes src to cordis.yml and loads it, without waiting for the
// entries to settle.
func (h *Host) Load(src string) error {
	h.T.Helper()
	if err := os.WriteFile(h.File, []byte(src), 0o644); err != nil {
		h.T.Fatal(err)
	}
	_, err := h.H.LoadFile(context.Background(), h.File, true)
	return err
}

// Settle waits until every entry has settled.
func (h *Host) Settle(within time.Duration) {
	h.T.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), within)
	defer cancel()
	if err := h.H.Settle(ctx); err != nil {
		h.T.Fatalf("not settled within %s: %v; %s", within, err, h.States())
	}
}

// States describes every entry in one line: id=state(error).
func (h *Host) States() string {
	var parts []string
	for _, e := range h.H.Snapshot() {
		s := e.ID + "=" + e.State.String()
		if e.Error != "" {
			s += "(" + e.Error + ")"
		}
		parts = append(parts, s)
	}
	return strings.Join(parts, " ")
}

// Entry returns the status of entry id.
func (h *Host) Entry(id string) host.EntryStatus {
	h.T.Helper()
	for _, e := range h.H.Snapshot() {
		if e.ID == id {
			return e
		}
	}
	h.T.Fatalf("no entry %q: %s", id, h.States())
	return host.EntryStatus{}
}

// WaitState waits until entry id is in state s.
func (h *Host) WaitState(id string, s host.State, within time.Duration) host.EntryStatus {
	h.T.Helper()
	return h.WaitEntry(id, within, "state "+s.String(), func(e host.EntryStatus) bool { return e.State == s })
}

// WaitEntry waits until cond holds for entry id's status, re-checking at
// every event of the host.
func (h *Host) WaitEntry(id string, within time.Duration, what string, cond func(host.EntryStatus) bool) host.EntryStatus {
	h.T.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), within)
	defer cancel()
	var got host.EntryStatus
	err := h.H.Wait(ctx, func(snap []host.EntryStatus) bool {
		for _, e := range snap {
			if e.ID == id {
				got = e
				return cond(e)
			}
		}
		return false
	})
	if err != nil {
		h.T.Fatalf("entry %q: no %s within %s: %s", id, what, within, h.States())
	}
	return got
}

// WaitTools waits until cond holds for the registered names.
func (h *Host) WaitTools(what string, within time.Duration, cond func(names []string) bool) {
	h.T.Helper()
	WaitRegistry(h.T, h.Tools, what, within, cond)
}

// WaitRegistry waits until cond holds for the names registered in reg.
func WaitRegistry(t testing.TB, reg *tools.Registry, what string, within time.Duration, cond func(names []string) bool) {
	t.Helper()
	timer := time.NewTimer(within)
	defer timer.Stop()
	for {
		changed := reg.Changed()
		if cond(reg.Names()) {
			return
		}
		select {
		case <-changed:
		case <-timer.C:
			t.Fatalf("timed out waiting for %s; tools %q", what, reg.Names())
		}
	}
}

// Names returns the registered names that start with prefix.
func (h *Host) Names(prefix string) []string {
	var out []string
	for _, n := range h.Tools.Names() {
		if strings.HasPrefix(n, prefix) {
			out = append(out, n)
		}
	}
	return out
}

// Call calls a tool as the model would.
func (h *Host) Call(name, args string) tools.Result {
	return h.Tools.Execute(context.Background(), name, json.RawMessage(args))
}

// Record is one log record.
type Record struct {
	Level slog.Level
	Msg   string
	Attrs map[string]string
}

// String is the message followed by " key=value" for each attribute, in
// key order.
func (r Record) String() string {
	keys := make([]string, 0, len(r.Attrs))
	for k := range r.Attrs {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	b.WriteString(r.Msg)
	for _, k := range keys {
		fmt.Fprintf(&b, " %s=%s", k, r.Attrs[k])
	}
	return b.String()
}

// LogWatch is a slog.Handler that passes records on and keeps them, so a
// test can wait for one.
type LogWatch struct {
	next  slog.Handler
	attrs []slog.Attr
	core  *logCore
}

type logCore struct {
	mu      sync.Mutex
	records []Record
	changed chan struct{}
}

// NewLogWatch returns a handler that keeps records and passes them to next.
func NewLogWatch(next slog.Handler) *LogWatch {
	return &LogWatch{next: next, core: &logCore{changed: make(chan struct{})}}
}

func (w *LogWatch) Enabled(ctx context.Context, l slog.Level) bool { return w.next.Enabled(ctx, l) }

func (w *LogWatch) Handle(ctx context.Context, r slog.Record) error {
	err := w.next.Handle(ctx, r)
	rec := Record{Level: r.Level, Msg: r.Message, Attrs: map[string]string{}}
	for _, a := range w.attrs {
		rec.Attrs[a.Key] = a.Value.String()
	}
	r.Attrs(func(a slog.Attr) bool {
		rec.Attrs[a.Key] = a.Value.String()
		return true
	})
	c := w.core
	c.mu.Lock()
	c.records = append(c.records, rec)
	close(c.changed)
	c.changed = make(chan struct{})
	c.mu.Unlock()
	return err
}

func (w *LogWatch) WithAttrs(attrs []slog.Attr) slog.Handler {
	return &LogWatch{next: w.next.WithAttrs(attrs), attrs: append(slices.Clip(w.attrs), attrs...), core: w.core}
}

func (w *LogWatch) WithGroup(name string) slog.Handler {
	return &LogWatch{next: w.next.WithGroup(name), attrs: w.attrs, core: w.core}
}

// Find returns the records kept so far that match.
func (w *LogWatch) Find(match func(Record) bool) []Record {
	c := w.core
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []Record
	for _, r := range c.records {
		if match(r) {
			out = append(out, r)
		}
	}
	return out
}

// Wait waits up to within until n records match, and returns them.
func (w *LogWatch) Wait(t testing.TB, within time.Duration, what string, n int, match func(Record) bool) []Record {
	t.Helper()
	timer := time.NewTimer(within)
	defer timer.Stop()
	for {
		c := w.core
		c.mu.Lock()
		changed := c.changed
		c.mu.Unlock()
		if got := w.Find(match); len(got) >= n {
			return got
		}
		select {
		case <-changed:
		case <-timer.C:
			t.Fatalf("timed out waiting for %d log record(s): %s", n, what)
		}
	}
}

// SeedsExample is the two-entry cordis.yml of the mcp-client plugin's
// specification (docs/rfc/0003-mcp-client.md), unchanged: it must load as
// it is.
const SeedsExample = `- id: mcp-github
  name: '@deepseek-ai/dsh-mcp-client'
  config:
    serverName: github
    transport: stdio
    command: npx
    args: ['-y', '@modelcontextprotocol/server-github']
    env:
      GITHUB_TOKEN: !!js process.env.GITHUB_TOKEN
- id: mcp-web
  name: '@deepseek-ai/dsh-mcp-client'
  config:
    serverName: web
    transport: streamable-http
    url: http://localhost:3000/mcp
    headers:
      Authorization: !!js '` + "`Bearer ${process.env.MCP_TOKEN}`" + `'
`

// LackingTool follows h's stream from now on and counts the versions of
// reg (h's tools registry; every version is a [host.ServiceChanged] event)
// that lack the tool name. count waits until it has seen reg's version at
// the time of the call, and returns the number of versions that lacked
// name.
func LackingTool(t testing.TB, h *host.Host, reg *tools.Registry, name string) (count func() int) {
	t.Helper()
	sub := h.Subscribe()
	t.Cleanup(sub.Close)
	_, present := reg.Lookup(name)
	seen := reg.Version() // versions before the subscription are not counted
	lacked := 0
	return func() int {
		t.Helper()
		timer := time.NewTimer(10 * time.Second)
		defer timer.Stop()
		for want := reg.Version(); seen < want; {
			select {
			case ev, ok := <-sub.C:
				if !ok {
					t.Fatalf("the host's stream ended before version %d of the tools", want)
				}
				if ev.Type != host.ServiceChanged || ev.Service != tools.Service || ev.Version <= seen {
					continue
				}
				switch {
				case slices.Contains(ev.Added, name):
					present = true
				case slices.Contains(ev.Removed, name):
					present = false
				}
				if !present {
					lacked++
				}
				seen = ev.Version
			case <-timer.C:
				t.Fatalf("no version %d of the tools on the host's stream within 10s (seen %d)", want, seen)
			}
		}
		return lacked
	}
}
