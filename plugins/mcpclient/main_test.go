package mcpclient

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/harness-go/harness/host"
	"github.com/harness-go/harness/internal/testkit/hosttest"
	"github.com/harness-go/harness/internal/testkit/proctest"
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
// waitTimeout bounds one wait for an event: far above what any test needs.
const waitTimeout = 20 * time.Second

type harness struct {
	*hosttest.Host
	t *testing.T
}

// newHarness returns a host whose cordis.yml lives in a fresh directory. At
// cleanup it closes the host and checks that every process listed in a
// pid file of that directory is gone.
func newHarness(t *testing.T) *harness {
	t.Helper()
	hx := &harness{Host: hosttest.New(t, 15*time.Second), t: t}
	hx.AfterClose(hx.checkNoProcesses)
	return hx
}

// pidFile returns a pid file path for a fixture, in the harness directory,
// where the cleanup finds it.
func (hx *harness) pidFile(name string) string {
	return filepath.Join(hx.Dir, "pids-"+name)
}

// checkNoProcesses checks that every process a fixture of this test wrote
// into a pid file is gone.
func (hx *harness) checkNoProcesses() {
	hx.t.Helper()
	files, _ := filepath.Glob(filepath.Join(hx.Dir, "pids-*"))
	for _, f := range files {
		for _, pid := range proctest.ReadPIDs(hx.t, f) {
			if running(pid) {
				hx.t.Errorf("process %d (from %s) is still running after the host closed", pid, filepath.Base(f))
				kill(pid)
			}
		}
	}
}

// load writes src to cordis.yml, loads it and waits until every entry has
// settled.
func (hx *harness) load(src string) error {
	hx.t.Helper()
	if err := hx.Load(src); err != nil {
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
	hx.Settle(waitTimeout)
}

// status returns the mcp-client status of entry id.
func (hx *harness) status(id string) *Status {
	hx.t.Helper()
	st, ok := hx.Entry(id).Details.(*Status)
	if !ok {
		hx.t.Fatalf("entry %q has no mcp-client status: %#v", id, hx.Entry(id).Details)
	}
	return st
}

// wantState checks that entry id is in state s (and, for failed, that the
// error contains every part).
func (hx *harness) wantState(id string, s host.State, parts ...string) host.EntryStatus {
	hx.t.Helper()
	e := hx.Entry(id)
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
	return hx.WaitState(id, s, waitTimeout)
}

// waitTools waits until cond holds for the registered names.
func (hx *harness) waitTools(what string, cond func(names []string) bool) {
	hx.t.Helper()
	hx.WaitTools(what, waitTimeout, cond)
}

func (hx *harness) wantNames(prefix string, want ...string) {
	hx.t.Helper()
	got := hx.Names(prefix)
	if !slices.Equal(got, want) {
		hx.t.Fatalf("tools %q, want %q", got, want)
	}
}

// wantCall calls a tool and checks the model-visible result.
func (hx *harness) wantCall(name, args, want string, isError bool) {
	hx.t.Helper()
	res := hx.Call(name, args)
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
// logRecord is one record: level, message and every attribute, those of
// Logger.With included, as text.
type logRecord = hosttest.Record

// msg matches records with this message, from entry id if id is not empty.
func msg(id, message string) func(logRecord) bool {
	return func(r logRecord) bool { return r.Msg == message && (id == "" || r.Attrs["entry"] == id) }
}
