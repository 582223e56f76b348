package host_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/harness-go/harness/host"
	"github.com/harness-go/harness/host/jsexpr"
	"github.com/harness-go/harness/internal/testkit/testlog"
	"github.com/harness-go/harness/plugins/tools"
)

// The probe kinds record what the host does to them into a recorder that
// each test's host provides as a service, so parallel tests stay apart.

const recorderService = "recorder"

type recorder struct {
	mu        sync.Mutex
	log       []string
	changed   chan struct{} // closed at the next add
	instances map[string]*probe
	relays    map[string]*relay // by "<id>/<label>"
	gates     map[string]chan error
	arrived   int
	full      chan struct{}
}

func newRecorder() *recorder {
	return &recorder{instances: map[string]*probe{}, relays: map[string]*relay{}, gates: map[string]chan error{}, changed: make(chan struct{})}
}

func (r *recorder) add(format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.log = append(r.log, fmt.Sprintf(format, args...))
	close(r.changed)
	r.changed = make(chan struct{})
}

// wait returns once the log holds line, or fails after d.
func (r *recorder) wait(line string, d time.Duration) error {
	timeout := time.After(d)
	for {
		r.mu.Lock()
		found := slices.Contains(r.log, line)
		ch := r.changed
		r.mu.Unlock()
		if found {
			return nil
		}
		select {
		case <-ch:
		case <-timeout:
			return fmt.Errorf("no %q in %q", line, r.events())
		}
	}
}

func (r *recorder) events() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.log...)
}

func (r *recorder) reset() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.log = nil
}

func (r *recorder) instance(id string) *probe {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.instances[id]
}

// barrier returns once n probes are in it, or when ctx ends.
func (r *recorder) barrier(ctx context.Context, n int) error {
	r.mu.Lock()
	if r.full == nil {
		r.full = make(chan struct{})
	}
	r.arrived++
	if r.arrived == n {
		close(r.full)
	}
	full := r.full
	r.mu.Unlock()
	select {
	case <-full:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// gate returns the channel an async probe waits on before finishing its
// initial work; the test sends the outcome.
func (r *recorder) gate(id string) chan error {
	r.mu.Lock()
	defer r.mu.Unlock()
	g := r.gates[id]
	if g == nil {
		g = make(chan error, 1)
		r.gates[id] = g
	}
	return g
}

type probe struct {
	Label     string   `yaml:"label"`
	Provide   string   `yaml:"provide"`
	Tools     []string `yaml:"tools"`
	FailApply string   `yaml:"failApply"`
	Panic     bool     `yaml:"panic"`
	Async     bool     `yaml:"async"`
	Reserve   string   `yaml:"reserve"`
	Count     int      `yaml:"count"`
	Secret    string   `yaml:"secret"`
	// Token is a secret field; Env and Headers hold credentials by their
	// names or shapes (see host/secrets.go).
	Token   string            `yaml:"token" secret:"true"`
	Env     map[string]string `yaml:"env" secret:"env"`
	Headers map[string]string `yaml:"headers" secret:"headers"`
	// Endpoint and Argv are printed fields that may carry credentials.
	Endpoint string   `yaml:"endpoint" secret:"url"`
	Argv     []string `yaml:"argv" secret:"args"`
	// Barrier makes disposal wait until that many probes are disposing.
	Barrier int `yaml:"barrier"`
	// Closer stores a host-wide io.Closer under this name (Context.PerHost);
	// the one named "failing" fails to close.
	Closer string `yaml:"closer"`
	// Mode decodes itself (false, or a mapping of its fields), as
	// mcp-client's oauth does.
	Mode mode `yaml:"mode"`
	// NeedsLabel makes label required.
	NeedsLabel bool `yaml:"needsLabel"`
	// Window decodes itself and fails with a plain "line N:" error, as a
	// sibling kind's own unmarshaler may.
	Window window `yaml:"window"`

	ctx *host.Context
}

// mode is false or a mapping of level and name: a type that decodes itself
// and whose mapping has its fields' keys (host.MappingFields).
type mode struct {
	Off   bool   `yaml:"-"`
	Level int    `yaml:"level"`
	Name  string `yaml:"name"`
}

func (m *mode) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind == yaml.ScalarNode && n.Value == "false" {
		*m = mode{Off: true}
		return nil
	}
	if n.Kind != yaml.MappingNode {
		return &yaml.TypeError{Errors: []string{fmt.Sprintf("line %d: mode: must be false or a mapping of level and name", n.Line)}}
	}
	type plain mode
	return n.Decode((*plain)(m))
}

func (*mode) MappingFields() {}

// window is a duration that decodes itself; its error is a plain one
// that names its line, not a *yaml.TypeError.
type window time.Duration

func (w *window) UnmarshalYAML(n *yaml.Node) error {
	d, err := time.ParseDuration(n.Value)
	if n.Kind != yaml.ScalarNode || err != nil {
		return fmt.Errorf("line %d: window must be a duration such as 5s", n.Line)
	}
	*w = window(d)
	return nil
}

func (p *probe) Validate() error {
	if p.Count < 0 {
		return host.FieldErrorf("count", "must not be negative")
	}
	if p.NeedsLabel && p.Label == "" {
		return host.FieldErrorf("label", "is required")
	}
	return nil
}

func (p *probe) Unique() map[string]string {
	if p.Reserve == "" {
		return nil
	}
	return map[string]string{"reserve": p.Reserve}
}

func (p *probe) Status() any { return map[string]string{"label": p.Label} }

type reservations struct {
	mu    sync.Mutex
	owner map[string]string
}

type reservationsKey struct{}

type closerKey string

// sharedCloser records its Close.
type sharedCloser struct {
	rec  *recorder
	name string
}

func (c *sharedCloser) Close() error {
	c.rec.add("shared %s close", c.name)
	if c.name == "failing" {
		return errors.New("it failed on purpose")
	}
	return nil
}

// reserve holds value for the instance until it is disposed, as mcp-client
// holds its serverName: a second holder fails to apply.
func reserve(ctx *host.Context, value string) error {
	if value == "" {
		return nil
	}
	res := ctx.PerHost(reservationsKey{}, func() any { return &reservations{owner: map[string]string{}} }).(*reservations)
	res.mu.Lock()
	if o, taken := res.owner[value]; taken {
		res.mu.Unlock()
		return fmt.Errorf("%q is already reserved by %s", value, o)
	}
	res.owner[value] = ctx.ID()
	res.mu.Unlock()
	_, err := ctx.Defer("release", func(context.Context) error {
		res.mu.Lock()
		delete(res.owner, value)
		res.mu.Unlock()
		return nil
	})
	return err
}

func (p *probe) Apply(ctx *host.Context) error {
	rec, err := host.Use[*recorder](ctx, recorderService)
	if err != nil {
		return err
	}
	p.ctx = ctx
	id := ctx.ID()
	rec.add("%s apply", id)
	rec.mu.Lock()
	rec.instances[id] = p
	rec.mu.Unlock()
	if _, err := ctx.Defer("record", func(context.Context) error { rec.add("%s dispose", id); return nil }); err != nil {
		return err
	}
	if p.Barrier > 0 {
		if _, err := ctx.Defer("barrier", func(c context.Context) error {
			return rec.barrier(c, p.Barrier)
		}); err != nil {
			return err
		}
	}
	if err := reserve(ctx, p.Reserve); err != nil {
		return err
	}
	if p.Closer != "" {
		ctx.PerHost(closerKey(p.Closer), func() any { return &sharedCloser{rec: rec, name: p.Closer} })
	}
	if len(p.Tools) > 0 {
		reg, err := tools.From(ctx)
		if err != nil {
			return err
		}
		var batch []tools.Tool
		for _, n := range p.Tools {
			batch = append(batch, tools.Tool{Name: n, Execute: func(context.Context, json.RawMessage) (tools.Result, error) {
				return tools.Result{Text: id}, nil
			}})
		}
		if _, err := reg.Register(ctx.Fiber(), batch...); err != nil {
			return err
		}
	}
	if p.Provide != "" && !p.Async {
		if err := ctx.Provide(p.Provide, id); err != nil {
			return err
		}
	}
	if p.Async {
		// The initial work waits for the test; a service comes with its end.
		done := ctx.Begin("connect")
		gate := rec.gate(id)
		if err := ctx.Go("connect", func(c context.Context) {
			select {
			case err := <-gate:
				if err == nil && p.Provide != "" {
					err = ctx.Provide(p.Provide, id)
				}
				done(err)
			case <-c.Done():
			}
		}); err != nil {
			return err
		}
	}
	if p.Panic {
		panic("probe panicked on purpose")
	}
	if p.FailApply != "" {
		return errors.New(p.FailApply)
	}
	return nil
}

func init() {
	host.Register(host.Kind{
		Name:     "probe",
		Aliases:  []string{"probe-alias"},
		Doc:      "test plugin",
		Inject:   []string{recorderService, tools.Service},
		Provides: []string{"alpha", "beta"},
		New:      func() host.Plugin { return &probe{} },
	})
	host.Register(host.Kind{
		Name:     "consumer",
		Doc:      "test plugin that needs alpha",
		Inject:   []string{recorderService, tools.Service, "alpha"},
		Provides: []string{"beta"},
		New:      func() host.Plugin { return &probe{} },
	})
	host.Register(host.Kind{
		Name:   "orphan",
		Doc:    "test plugin that needs a service nobody provides",
		Inject: []string{recorderService, "nobody-provides-this"},
		New:    func() host.Plugin { return &probe{} },
	})
}

// fixture is one host with its recorder and tools registry.
type fixture struct {
	t     *testing.T
	h     *host.Host
	rec   *recorder
	tools *tools.Registry
	env   map[string]string
	dir   string
	logs  *testlog.Recorder // the host's log
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	fx := &fixture{t: t, rec: newRecorder(), tools: tools.New(), env: map[string]string{}, dir: t.TempDir()}
	env := jsexpr.Env{Lookup: func(k string) (string, bool) { v, ok := fx.env[k]; return v, ok }, Cwd: fx.dir}
	log, logs := testlog.New(t)
	fx.logs = logs
	fx.h = host.New(host.Options{Env: &env, Logger: log, DisposeTimeout: 5 * time.Second})
	fx.h.Provide(recorderService, fx.rec)
	fx.h.Provide(tools.Service, fx.tools)
	t.Cleanup(func() {
		if err := fx.h.Close(context.Background()); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return fx
}

func (fx *fixture) load(src string) (*host.Plan, error) {
	fx.t.Helper()
	f, err := host.ParseFile("cordis.yml", []byte(src))
	if err != nil {
		return nil, err
	}
	return fx.h.Load(context.Background(), f)
}

func (fx *fixture) mustLoad(src string) *host.Plan {
	fx.t.Helper()
	p, err := fx.load(src)
	if err != nil {
		fx.t.Fatalf("load: %v", err)
	}
	return p
}

func (fx *fixture) settle() []host.EntryStatus {
	fx.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := fx.h.Settle(ctx); err != nil {
		fx.t.Fatalf("settle: %v; snapshot %s", err, states(fx.h.Snapshot()))
	}
	return fx.h.Snapshot()
}

// waitState waits until entry id is in state s.
func (fx *fixture) waitState(id string, s host.State) host.EntryStatus {
	fx.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var got host.EntryStatus
	err := fx.h.Wait(ctx, func(snap []host.EntryStatus) bool {
		for _, e := range snap {
			if e.ID == id {
				got = e
				return e.State == s
			}
		}
		return false
	})
	if err != nil {
		fx.t.Fatalf("waiting for %s to be %s: %v; snapshot %s", id, s, err, states(fx.h.Snapshot()))
	}
	return got
}

func (fx *fixture) state(id string) host.EntryStatus {
	fx.t.Helper()
	for _, e := range fx.h.Snapshot() {
		if e.ID == id {
			return e
		}
	}
	fx.t.Fatalf("no entry %q in %s", id, states(fx.h.Snapshot()))
	return host.EntryStatus{}
}

func states(snap []host.EntryStatus) string {
	var parts []string
	for _, e := range snap {
		s := e.ID + "=" + e.State.String()
		if e.Error != "" {
			s += "(" + e.Error + ")"
		}
		parts = append(parts, s)
	}
	return strings.Join(parts, " ")
}
