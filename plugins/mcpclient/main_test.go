package mcpclient

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/harness-go/harness/host"
	"github.com/harness-go/harness/host/jsexpr"
	"github.com/harness-go/harness/internal/testlog"
	"github.com/harness-go/harness/plugins/tools"
)

// TestMain checks, after every test has run, that no goroutine is left
// (goleak, nothing ignored), and removes the fixture binary built for the
// run.
func TestMain(m *testing.M) {
	code := m.Run()
	if fixtureBin.dir != "" {
		os.RemoveAll(fixtureBin.dir)
	}
	if code == 0 {
		if err := goleak.Find(); err != nil {
			fmt.Fprintf(os.Stderr, "goleak: goroutines left after the tests: %v\n", err)
			code = 1
		}
	}
	os.Exit(code)
}

// fixtureBin is tests/fixtures/mcpfixture, built once per test binary.
var fixtureBin struct {
	once sync.Once
	dir  string
	path string
	err  error
}

// fixtureBinary returns the path of the fixture server binary, building it on
// first use.
func fixtureBinary(t testing.TB) string {
	t.Helper()
	fixtureBin.once.Do(func() {
		dir, err := os.MkdirTemp("", "mcpclient-test-")
		if err != nil {
			fixtureBin.err = err
			return
		}
		fixtureBin.dir = dir
		bin := filepath.Join(dir, "mcpfixture")
		cmd := exec.Command("go", "build", "-o", bin, "github.com/harness-go/harness/tests/fixtures/mcpfixture")
		if out, err := cmd.CombinedOutput(); err != nil {
			fixtureBin.err = fmt.Errorf("go build mcpfixture: %v\n%s", err, out)
			return
		}
		fixtureBin.path = bin
	})
	if fixtureBin.err != nil {
		t.Fatal(fixtureBin.err)
	}
	return fixtureBin.path
}

// harness is a real host with the tools service, the way the harness binary
// runs plugins, plus what the tests need to look inside.
type harness struct {
	t     *testing.T
	h     *host.Host
	tools *tools.Registry
	log   *testlog.Recorder // every record, as text
	watch *logWatch         // records as they come, to wait on
	dir   string            // the directory of cordis.yml
	file  string            // cordis.yml's path

	envMu sync.Mutex
	env   map[string]string // what !!js reads
}

// newHarness returns a host whose cordis.yml lives in a fresh directory. At
// cleanup it closes the host and checks that every process listed in a
// pid file of that directory is gone.
func newHarness(t *testing.T) *harness {
	t.Helper()
	log, rec := testlog.New(t)
	watch := newLogWatch(log.Handler())
	hx := &harness{t: t, tools: tools.New(), log: rec, watch: watch, dir: t.TempDir(), env: map[string]string{}}
	hx.file = filepath.Join(hx.dir, "cordis.yml")
	env := jsexpr.Env{Lookup: hx.lookup, Cwd: hx.dir}
	hx.h = host.New(host.Options{Env: &env, Logger: slog.New(watch), DisposeTimeout: 15 * time.Second})
	hx.h.Provide(tools.Service, hx.tools)
	t.Cleanup(func() {
		if err := hx.h.Close(context.Background()); err != nil {
			t.Errorf("Close: %v", err)
		}
		hx.checkNoProcesses()
	})
	return hx
}

func (hx *harness) lookup(name string) (string, bool) {
	hx.envMu.Lock()
	defer hx.envMu.Unlock()
	v, ok := hx.env[name]
	return v, ok
}

func (hx *harness) setenv(name, value string) {
	hx.envMu.Lock()
	defer hx.envMu.Unlock()
	hx.env[name] = value
}

// pidFile returns a pid file path for a fixture, in the harness directory,
// where the cleanup finds it.
func (hx *harness) pidFile(name string) string {
	return filepath.Join(hx.dir, "pids-"+name)
}

// checkNoProcesses checks that every process a fixture of this test wrote
// into a pid file is gone.
func (hx *harness) checkNoProcesses() {
	hx.t.Helper()
	files, _ := filepath.Glob(filepath.Join(hx.dir, "pids-*"))
	for _, f := range files {
		for _, pid := range readPIDs(hx.t, f) {
			if running(pid) {
				hx.t.Errorf("process %d (from %s) is still running after the host closed", pid, filepath.Base(f))
				_ = syscall.Kill(pid, syscall.SIGKILL)
			}
		}
	}
}

func readPIDs(t testing.TB, path string) []int {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("pid file: %v", err)
	}
	var pids []int
	for _, f := range strings.Fields(string(data)) {
		pid, err := strconv.Atoi(f)
		if err != nil {
			t.Fatalf("pid file %s: %q", path, f)
		}
		pids = append(pids, pid)
	}
	return pids
}

// running reports whether pid is a process that still runs, or could.
//
// syscall.Kill(pid, 0) says whether the pid exists, which is not enough:
//   - a grandchild whose parent was killed is re-parented to PID 1, and this
//     sandbox's init reaps orphans only now and then: until it does, the
//     dead process is a zombie (state Z), which exists but runs nothing;
//   - a process sent SIGKILL dies when the kernel next schedules it: until
//     then it may still show as running, with SIGKILL pending, and then as
//     exiting (PF_EXITING). Neither runs another instruction of its own.
//
// So a pid that exists counts as running unless /proc shows it dead or
// doomed.
func running(pid int) bool {
	if err := syscall.Kill(pid, 0); errors.Is(err, syscall.ESRCH) {
		return false
	}
	dir := "/proc/" + strconv.Itoa(pid)
	stat, err := os.ReadFile(dir + "/stat")
	if err != nil {
		return false
	}
	// After the parenthesised command: state ppid pgrp session tty_nr
	// tpgid flags …
	i := bytes.LastIndexByte(stat, ')')
	if i < 0 {
		return true
	}
	fields := strings.Fields(string(stat[i+1:]))
	if len(fields) < 7 || fields[0] == "Z" || fields[0] == "X" {
		return false
	}
	const pfExiting = 0x4
	if flags, err := strconv.ParseUint(fields[6], 10, 64); err == nil && flags&pfExiting != 0 {
		return false
	}
	status, err := os.ReadFile(dir + "/status")
	if err != nil {
		return false
	}
	for _, line := range strings.Split(string(status), "\n") {
		name, value, _ := strings.Cut(line, ":")
		if name != "SigPnd" && name != "ShdPnd" {
			continue
		}
		if mask, err := strconv.ParseUint(strings.TrimSpace(value), 16, 64); err == nil && mask&(1<<(syscall.SIGKILL-1)) != 0 {
			return false
		}
	}
	return true
}

// load writes src to cordis.yml, loads it and waits until every entry has
// settled.
func (hx *harness) load(src string) error {
	hx.t.Helper()
	if err := os.WriteFile(hx.file, []byte(src), 0o644); err != nil {
		hx.t.Fatal(err)
	}
	f, err := host.ParseFile(hx.file, []byte(src))
	if err != nil {
		return err
	}
	if _, err := hx.h.Load(context.Background(), f); err != nil {
		return err
	}
	hx.settle()
	return nil
}

func (hx *harness) mustLoad(src string) {
	hx.t.Helper()
	if err := hx.load(src); err != nil {
		hx.t.Fatalf("load: %v", err)
	}
}

func (hx *harness) settle() {
	hx.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := hx.h.Settle(ctx); err != nil {
		hx.t.Fatalf("settle: %v; %s", err, hx.states())
	}
}

func (hx *harness) states() string {
	var parts []string
	for _, e := range hx.h.Snapshot() {
		s := e.ID + "=" + e.State.String()
		if e.Error != "" {
			s += "(" + e.Error + ")"
		}
		parts = append(parts, s)
	}
	return strings.Join(parts, " ")
}

// entry returns the status of entry id.
func (hx *harness) entry(id string) host.EntryStatus {
	hx.t.Helper()
	for _, e := range hx.h.Snapshot() {
		if e.ID == id {
			return e
		}
	}
	hx.t.Fatalf("no entry %q: %s", id, hx.states())
	return host.EntryStatus{}
}

// status returns the mcp-client status of entry id.
func (hx *harness) status(id string) *Status {
	hx.t.Helper()
	st, ok := hx.entry(id).Details.(*Status)
	if !ok {
		hx.t.Fatalf("entry %q has no mcp-client status: %#v", id, hx.entry(id).Details)
	}
	return st
}

// wantState checks that entry id is in state s (and, for failed, that the
// error contains every part).
func (hx *harness) wantState(id string, s host.State, parts ...string) host.EntryStatus {
	hx.t.Helper()
	e := hx.entry(id)
	if e.State != s {
		hx.t.Fatalf("entry %q is %s (%s), want %s", id, e.State, e.Error, s)
	}
	for _, p := range parts {
		if !strings.Contains(e.Error, p) {
			hx.t.Fatalf("entry %q: error %q does not contain %q", id, e.Error, p)
		}
	}
	return e
}

// waitState waits until entry id is in state s.
func (hx *harness) waitState(id string, s host.State) host.EntryStatus {
	hx.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var got host.EntryStatus
	err := hx.h.Wait(ctx, func(snap []host.EntryStatus) bool {
		for _, e := range snap {
			if e.ID == id {
				got = e
				return e.State == s
			}
		}
		return false
	})
	if err != nil {
		hx.t.Fatalf("waiting for %s to be %s: %v; %s", id, s, err, hx.states())
	}
	return got
}

// waitTools waits until cond holds for the registered names.
func (hx *harness) waitTools(what string, cond func(names []string) bool) {
	hx.t.Helper()
	waitRegistry(hx.t, hx.tools, what, cond)
}

func waitRegistry(t testing.TB, reg *tools.Registry, what string, cond func(names []string) bool) {
	t.Helper()
	timeout := time.NewTimer(20 * time.Second)
	defer timeout.Stop()
	for {
		changed := reg.Changed()
		if cond(reg.Names()) {
			return
		}
		select {
		case <-changed:
		case <-timeout.C:
			t.Fatalf("timed out waiting for %s; tools %q", what, reg.Names())
		}
	}
}

// names returns the registered names that start with prefix.
func (hx *harness) names(prefix string) []string {
	var out []string
	for _, n := range hx.tools.Names() {
		if strings.HasPrefix(n, prefix) {
			out = append(out, n)
		}
	}
	return out
}

func (hx *harness) wantNames(prefix string, want ...string) {
	hx.t.Helper()
	got := hx.names(prefix)
	if !slices.Equal(got, want) {
		hx.t.Fatalf("tools %q, want %q", got, want)
	}
}

func (hx *harness) call(name, args string) tools.Result {
	hx.t.Helper()
	return hx.tools.Execute(context.Background(), name, json.RawMessage(args))
}

// wantCall calls a tool and checks the model-visible result.
func (hx *harness) wantCall(name, args, want string, isError bool) {
	hx.t.Helper()
	res := hx.call(name, args)
	if res.Text != want || res.IsError != isError {
		hx.t.Fatalf("%s(%s) = %+v, want {%q isError=%v}", name, args, res, want, isError)
	}
}

// cfg is one cordis.yml entry. Rendered as JSON, which is YAML too.
type cfg struct {
	ID       string         `json:"id"`
	Name     string         `json:"name"`
	Disabled bool           `json:"disabled,omitempty"`
	Config   map[string]any `json:"config"`
}

// yml renders entries as a cordis.yml.
func yml(entries ...cfg) string {
	var b strings.Builder
	for _, e := range entries {
		if e.Name == "" {
			e.Name = KindAlias
		}
		data, err := json.Marshal(e)
		if err != nil {
			panic(err)
		}
		b.WriteString("- ")
		b.Write(data)
		b.WriteByte('\n')
	}
	return b.String()
}

// stdio returns the configuration of a fixture server over stdio, with a pid
// file the harness checks at cleanup. Extra keys of config are merged.
func (hx *harness) stdio(id, server string, config map[string]any, args ...string) cfg {
	hx.t.Helper()
	all := append([]string{"--pidfile", hx.pidFile(id)}, args...)
	c := map[string]any{
		"serverName":        server,
		"transport":         TransportStdio,
		"command":           fixtureBinary(hx.t),
		"args":              all,
		"toolCallTimeoutMs": 10000,
		"startupTimeoutMs":  10000,
	}
	for k, v := range config {
		c[k] = v
	}
	return cfg{ID: id, Config: c}
}

// httpEntry returns the configuration of a Streamable HTTP server.
func httpEntry(id, server, url string, config map[string]any) cfg {
	c := map[string]any{
		"serverName":        server,
		"transport":         TransportHTTP,
		"url":               url,
		"toolCallTimeoutMs": 10000,
		"startupTimeoutMs":  10000,
	}
	for k, v := range config {
		c[k] = v
	}
	return cfg{ID: id, Config: c}
}

// logWatch is a slog handler that passes records on to another and keeps
// them, so a test can wait for a record instead of sleeping.
type logWatch struct {
	next  slog.Handler
	attrs []slog.Attr
	core  *logCore
}

type logCore struct {
	mu      sync.Mutex
	records []logRecord
	changed chan struct{}
}

// logRecord is one record: level, message and every attribute, those of
// Logger.With included, as text.
type logRecord struct {
	Level slog.Level
	Msg   string
	Attrs map[string]string
}

func newLogWatch(next slog.Handler) *logWatch {
	return &logWatch{next: next, core: &logCore{changed: make(chan struct{})}}
}

func (w *logWatch) Enabled(ctx context.Context, l slog.Level) bool { return w.next.Enabled(ctx, l) }

func (w *logWatch) Handle(ctx context.Context, r slog.Record) error {
	err := w.next.Handle(ctx, r)
	rec := logRecord{Level: r.Level, Msg: r.Message, Attrs: map[string]string{}}
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

func (w *logWatch) WithAttrs(attrs []slog.Attr) slog.Handler {
	return &logWatch{next: w.next.WithAttrs(attrs), attrs: append(slices.Clip(w.attrs), attrs...), core: w.core}
}

func (w *logWatch) WithGroup(name string) slog.Handler {
	return &logWatch{next: w.next.WithGroup(name), attrs: w.attrs, core: w.core}
}

// find returns the records that match.
func (w *logWatch) find(match func(logRecord) bool) []logRecord {
	c := w.core
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []logRecord
	for _, r := range c.records {
		if match(r) {
			out = append(out, r)
		}
	}
	return out
}

// wait waits until n records match.
func (w *logWatch) wait(t testing.TB, what string, n int, match func(logRecord) bool) []logRecord {
	t.Helper()
	timeout := time.NewTimer(20 * time.Second)
	defer timeout.Stop()
	for {
		c := w.core
		c.mu.Lock()
		changed := c.changed
		c.mu.Unlock()
		if got := w.find(match); len(got) >= n {
			return got
		}
		select {
		case <-changed:
		case <-timeout.C:
			t.Fatalf("timed out waiting for %d log record(s): %s", n, what)
		}
	}
}

// msg matches records with this message, from entry id if id is not empty.
func msg(id, message string) func(logRecord) bool {
	return func(r logRecord) bool { return r.Msg == message && (id == "" || r.Attrs["entry"] == id) }
}
