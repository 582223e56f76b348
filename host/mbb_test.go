package host_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
	"weak"

	"github.com/harness-go/harness/host"
	"github.com/harness-go/harness/internal/testkit/hosttest"
	"github.com/harness-go/harness/plugins/tools"
)

// relay is a kind that makes before it breaks (rule 10) and has a live key
// (rule 11). Its tools answer with the instance's label, so a test can tell
// which instance a call reached; its initial work waits for the test
// (recorder gate "<id>/<label>") when async is set.
type relay struct {
	Label   string   `yaml:"label"`
	Tools   []string `yaml:"tools"`
	Async   bool     `yaml:"async"`
	Speed   int      `yaml:"speed"` // live
	Reserve string   `yaml:"reserve"`
	// PanicDrain makes Drain panic.
	PanicDrain bool `yaml:"panicDrain"`

	mu     sync.Mutex
	ctx    *host.Context
	rec    *recorder
	reg    *tools.Registry
	set    *tools.Set
	staged []tools.Tool
}

func init() {
	host.Register(host.Kind{
		Name:            "relay",
		Doc:             "test plugin that makes before it breaks",
		Inject:          []string{recorderService, tools.Service},
		MakeBeforeBreak: true,
		Live:            []string{"speed"},
		New:             func() host.Plugin { return &relay{} },
	})
	host.Register(host.Kind{
		Name:     "relay-provider",
		Doc:      "test plugin that provides alpha",
		Inject:   []string{recorderService, tools.Service},
		Provides: []string{"alpha"},
		New:      func() host.Plugin { return &probe{} },
	})
	host.Register(host.Kind{
		Name:            "relay-consumer",
		Doc:             "test plugin that makes before it breaks and needs alpha",
		Inject:          []string{recorderService, tools.Service, "alpha"},
		MakeBeforeBreak: true,
		New:             func() host.Plugin { return &relay{} },
	})
}

func (r *relay) Unique() map[string]string {
	if r.Reserve == "" {
		return nil
	}
	return map[string]string{"reserve": r.Reserve}
}

func (r *relay) Apply(ctx *host.Context) error {
	rec, err := host.Use[*recorder](ctx, recorderService)
	if err != nil {
		return err
	}
	reg, err := tools.From(ctx)
	if err != nil {
		return err
	}
	r.ctx, r.rec, r.reg = ctx, rec, reg
	id, label := ctx.ID(), r.Label
	rec.mu.Lock()
	rec.relays[id+"/"+label] = r
	rec.mu.Unlock()
	pred := ""
	if p, ok := ctx.Predecessor().(*relay); ok {
		pred = " after " + p.Label
	}
	rec.add("%s apply %s%s", id, label, pred)
	if _, err := ctx.Defer("record", func(context.Context) error { rec.add("%s dispose %s", id, label); return nil }); err != nil {
		return err
	}
	if err := reserve(ctx, r.Reserve); err != nil {
		return err
	}
	for _, n := range r.Tools {
		r.staged = append(r.staged, tools.Tool{Name: n, Execute: func(context.Context, json.RawMessage) (tools.Result, error) {
			return tools.Result{Text: label}, nil
		}})
	}
	if ctx.Predecessor() == nil {
		set, err := reg.Replace(ctx.Fiber(), nil, r.staged...)
		if err != nil {
			return err
		}
		r.set = set
	}
	if r.Async {
		done := ctx.Begin("connect")
		gate := rec.gate(id + "/" + label)
		return ctx.Go("connect", func(c context.Context) {
			select {
			case err := <-gate:
				done(err)
			case <-c.Done():
			}
		})
	}
	return nil
}

func (r *relay) TakeOver(pred host.Plugin) error {
	var old *tools.Set
	from := "nobody"
	if p, ok := pred.(*relay); ok {
		p.mu.Lock()
		old, from = p.set, p.Label
		p.set = nil
		p.mu.Unlock()
	}
	r.rec.add("%s takeover %s from %s", r.ctx.ID(), r.Label, from)
	set, err := r.reg.Replace(r.ctx.Fiber(), old, r.staged...)
	if err != nil {
		return err
	}
	r.mu.Lock()
	r.set = set
	r.mu.Unlock()
	return nil
}

func (r *relay) Drain(context.Context) {
	r.rec.add("%s drain %s", r.ctx.ID(), r.Label)
	if r.PanicDrain {
		panic("relay drain panicked on purpose")
	}
}

func (r *relay) Reconfigure(next host.Plugin) error {
	n := next.(*relay)
	if n.Speed < 0 {
		return errors.New("a negative speed is refused in place")
	}
	r.rec.add("%s speed %d→%d (%s)", r.ctx.ID(), r.Speed, n.Speed, r.Label)
	r.Speed = n.Speed
	return nil
}

// waitFor waits until the recorder holds the line (disposals of replaced
// instances run off the host's goroutine).
func (fx *fixture) waitFor(line string) {
	fx.t.Helper()
	if err := fx.rec.wait(line, 10*time.Second); err != nil {
		fx.t.Fatal(err)
	}
}

// call calls a tool and returns its text.
func (fx *fixture) call(name string) string {
	return fx.tools.Execute(context.Background(), name, nil).Text
}

func relayEntry(id, label string, extra string) string {
	return fmt.Sprintf("- id: %s\n  name: relay\n  config: {label: %s, tools: [t_%s]%s}\n", id, label, id, extra)
}

// The cases of rule 10, one table: what an edit does to a relay entry
// whose instance serves, and what it leaves behind.
func TestMakeBeforeBreak(t *testing.T) {
	t.Parallel()
	type step func(fx *fixture)
	load := func(src string) step { return func(fx *fixture) { fx.mustLoad(src) } }
	open := func(gate string, err error) step {
		return func(fx *fixture) { fx.rec.gate(gate) <- err }
	}
	wantState := func(id string, s host.State, reloading bool, note string) step {
		return func(fx *fixture) {
			fx.t.Helper()
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			var got host.EntryStatus
			if err := fx.h.Wait(ctx, func(snap []host.EntryStatus) bool {
				for _, e := range snap {
					if e.ID == id {
						got = e
						return e.State == s && e.Reloading == reloading && strings.Contains(e.Note, note) && (note != "" || e.Note == "")
					}
				}
				return false
			}); err != nil {
				fx.t.Fatalf("%s: want %s reloading=%v note %q; got %+v", id, s, reloading, note, got)
			}
		}
	}
	calls := func(tool, want string) step {
		return func(fx *fixture) {
			fx.t.Helper()
			if got := fx.call(tool); got != want {
				fx.t.Fatalf("%s answered %q, want %q", tool, got, want)
			}
		}
	}
	settled := func(want bool) step {
		return func(fx *fixture) {
			fx.t.Helper()
			if got := host.AllSettled(fx.h.Snapshot()); got != want {
				fx.t.Fatalf("settled = %v, want %v: %s", got, want, states(fx.h.Snapshot()))
			}
		}
	}
	waitFor := func(line string) step { return func(fx *fixture) { fx.waitFor(line) } }
	fail := func(key string, err error) step {
		return func(fx *fixture) {
			fx.rec.mu.Lock()
			r := fx.rec.relays[key]
			fx.rec.mu.Unlock()
			r.ctx.Fail(err)
		}
	}
	closeHost := func(fx *fixture) {
		if err := fx.h.Close(context.Background()); err != nil {
			fx.t.Fatal(err)
		}
	}
	restart := func(id string) step {
		return func(fx *fixture) {
			if err := fx.h.Restart(context.Background(), id); err != nil {
				fx.t.Fatal(err)
			}
		}
	}
	v1 := relayEntry("a", "v1", ", async: true")
	v2 := relayEntry("a", "v2", ", async: true")
	v3 := relayEntry("a", "v3", ", async: true")

	for _, tc := range []struct {
		name  string
		steps []step
		want  []string // the recorder's lines, in order, after the steps
		// unordered compares the lines as a multiset: instances disposed
		// together go concurrently.
		unordered bool
	}{
		{
			name: "the successor is ready: it takes over, then the old one drains and goes",
			steps: []step{
				load(v1), open("a/v1", nil), wantState("a", host.Ready, false, ""),
				load(v2), wantState("a", host.Ready, true, ""), settled(false),
				calls("t_a", "v1"), // the old instance serves while the new one starts
				open("a/v2", nil), wantState("a", host.Ready, false, ""), settled(true),
				calls("t_a", "v2"), waitFor("a dispose v1"),
			},
			want: []string{"a apply v1", "a apply v2 after v1", "a takeover v2 from v1", "a drain v1", "a dispose v1"},
		},
		{
			name: "the successor fails: it goes, the old one keeps serving and the entry says so",
			steps: []step{
				load(v1), open("a/v1", nil), wantState("a", host.Ready, false, ""),
				load(v2), open("a/v2", errors.New("no route to v2")),
				wantState("a", host.Ready, false, "reload failed: connect: no route to v2; the previous instance is still serving"),
				settled(true), calls("t_a", "v1"),
				// The note stays until the configuration changes…
				load(v2 + "# a comment is no change\n"), wantState("a", host.Ready, false, "reload failed"),
				// …or someone restarts the entry: the newest configuration, again beside the old one.
				restart("a"), wantState("a", host.Ready, true, ""), open("a/v2", nil),
				wantState("a", host.Ready, false, ""), calls("t_a", "v2"), waitFor("a dispose v1"),
			},
			want: []string{"a apply v1", "a apply v2 after v1", "a dispose v2", "a apply v2 after v1", "a takeover v2 from v1", "a drain v1", "a dispose v1"},
		},
		{
			name: "edited again while the successor starts: that one goes, never having served",
			steps: []step{
				load(v1), open("a/v1", nil), wantState("a", host.Ready, false, ""),
				load(v2), wantState("a", host.Ready, true, ""),
				load(v3), waitFor("a dispose v2"), calls("t_a", "v1"),
				open("a/v3", nil), wantState("a", host.Ready, false, ""), calls("t_a", "v3"), waitFor("a dispose v1"),
			},
			want: []string{"a apply v1", "a apply v2 after v1", "a dispose v2", "a apply v3 after v1", "a takeover v3 from v1", "a drain v1", "a dispose v1"},
		},
		{
			name: "removed while the successor starts: both go",
			steps: []step{
				load(v1 + relayEntry("b", "b1", "")), open("a/v1", nil), wantState("a", host.Ready, false, ""),
				load(v2 + relayEntry("b", "b1", "")), wantState("a", host.Ready, true, ""),
				load(relayEntry("b", "b1", "")), calls("t_a", `Error: unknown tool "t_a"`),
			},
			want:      []string{"a apply v1", "b apply b1", "a apply v2 after v1", "a dispose v2", "a dispose v1"},
			unordered: true,
		},
		{
			name: "the host closes mid-swap: both go",
			steps: []step{
				load(v1), open("a/v1", nil), wantState("a", host.Ready, false, ""),
				load(v2), wantState("a", host.Ready, true, ""), closeHost,
			},
			want:      []string{"a apply v1", "a apply v2 after v1", "a dispose v2", "a dispose v1"},
			unordered: true,
		},
		{
			name: "the serving one fails while its successor starts: the successor carries on alone",
			steps: []step{
				load(v1), open("a/v1", nil), wantState("a", host.Ready, false, ""),
				load(v2), wantState("a", host.Ready, true, ""),
				fail("a/v1", errors.New("server gone")), waitFor("a dispose v1"), wantState("a", host.Starting, true, ""),
				calls("t_a", `Error: unknown tool "t_a"`),
				open("a/v2", nil), wantState("a", host.Ready, false, ""), calls("t_a", "v2"),
			},
			want: []string{"a apply v1", "a apply v2 after v1", "a dispose v1", "a takeover v2 from nobody"},
		},
		{
			name: "the old one is not serving yet: stop first",
			steps: []step{
				load(v1), wantState("a", host.Starting, false, ""),
				load(v2), waitFor("a dispose v1"), open("a/v2", nil), wantState("a", host.Ready, false, ""), calls("t_a", "v2"),
			},
			want: []string{"a apply v1", "a dispose v1", "a apply v2"},
		},
		{
			name: "a value moving to another entry in the same edit: stop first",
			steps: []step{
				load(relayEntry("a", "v1", ", reserve: x")), wantState("a", host.Ready, false, ""),
				load(relayEntry("a", "v2", ", reserve: y") + relayEntry("b", "b1", ", reserve: x")),
				wantState("a", host.Ready, false, ""), wantState("b", host.Ready, false, ""), calls("t_a", "v2"),
			},
			want: []string{"a apply v1", "a dispose v1", "a apply v2", "b apply b1"},
		},
		{
			name: "a successor still starting whose value moves to another entry: it goes before anything applies",
			steps: []step{
				load(relayEntry("a", "v1", ", reserve: x")), wantState("a", host.Ready, false, ""),
				load(relayEntry("a", "v2", ", reserve: y, async: true")), wantState("a", host.Ready, true, ""),
				load(relayEntry("b", "b1", ", reserve: y") + relayEntry("a", "v3", ", reserve: z, async: true")),
				wantState("b", host.Ready, false, ""),
				open("a/v3", nil), wantState("a", host.Ready, false, ""), calls("t_a", "v3"), waitFor("a dispose v1"),
			},
			want: []string{"a apply v1", "a apply v2 after v1", "a dispose v2", "b apply b1", "a apply v3 after v1", "a takeover v3 from v1", "a drain v1", "a dispose v1"},
		},
		{
			name: "live keys only: the running instance is reconfigured, not re-created",
			steps: []step{
				load(relayEntry("a", "v1", ", speed: 1")), wantState("a", host.Ready, false, ""),
				load(relayEntry("a", "v1", ", speed: 2")), wantState("a", host.Ready, false, ""), calls("t_a", "v1"),
				load(relayEntry("a", "v2", ", speed: 3")), wantState("a", host.Ready, false, ""), calls("t_a", "v2"),
				waitFor("a dispose v1"),
			},
			want: []string{"a apply v1", "a speed 1→2 (v1)", "a apply v2 after v1", "a takeover v2 from v1", "a drain v1", "a dispose v1"},
		},
		{
			name: "a dependent of a provider that restarts: disposed and re-applied, not replaced",
			steps: []step{
				load("- id: p\n  name: relay-provider\n  config: {provide: alpha}\n" +
					"- id: c\n  name: relay-consumer\n  config: {label: c1, tools: [t_c]}\n"),
				wantState("c", host.Ready, false, ""),
				load("- id: p\n  name: relay-provider\n  config: {provide: alpha, label: p2}\n" +
					"- id: c\n  name: relay-consumer\n  config: {label: c1, tools: [t_c]}\n"),
				wantState("c", host.Ready, false, ""), calls("t_c", "c1"),
			},
			want: []string{"p apply", "c apply c1", "c dispose c1", "p dispose", "p apply", "c apply c1"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			fx := newFixture(t)
			for _, s := range tc.steps {
				s(fx)
			}
			got, want := fx.rec.events(), slices.Clone(tc.want)
			if tc.unordered {
				slices.Sort(got)
				slices.Sort(want)
			}
			if !slices.Equal(got, want) {
				t.Fatalf("recorded\n  %q\nwant\n  %q", got, want)
			}
		})
	}
}

// The old instance serves every call until the successor takes over, and
// the registry never lacks the entry's tool: the host's stream has each
// version of the set.
func TestMakeBeforeBreakNeverLacksTheTools(t *testing.T) {
	t.Parallel()
	fx := newFixture(t)
	fx.mustLoad(relayEntry("a", "v0", ""))
	fx.waitState("a", host.Ready)
	lacked := hosttest.LackingTool(t, fx.h, fx.tools, "t_a") // the first registration is not a gap
	for i := 1; i <= 20; i++ {
		fx.mustLoad(relayEntry("a", fmt.Sprintf("v%d", i), ""))
		fx.waitFor(fmt.Sprintf("a dispose v%d", i-1))
		if got := fx.call("t_a"); got != fmt.Sprintf("v%d", i) {
			t.Fatalf("after edit %d: %q", i, got)
		}
	}
	if n := lacked(); n > 0 {
		t.Fatalf("the registry lacked t_a %d times", n)
	}
}

// A replaced instance is garbage once it is disposed: the one that took
// over keeps no pointer to it (each kept its predecessor, so every edit
// kept everything since boot alive, 80–150 KiB a reload for mcp-client).
func TestReplacedInstancesAreCollected(t *testing.T) {
	t.Parallel()
	fx := newFixture(t)
	var replaced []weak.Pointer[relay]
	for i := range 4 {
		label := fmt.Sprintf("v%d", i)
		fx.mustLoad(relayEntry("a", label, ""))
		fx.waitState("a", host.Ready)
		if i == 0 {
			continue
		}
		fx.waitFor(fmt.Sprintf("a dispose v%d", i-1))
		key := fmt.Sprintf("a/v%d", i-1)
		fx.rec.mu.Lock()
		replaced = append(replaced, weak.Make(fx.rec.relays[key]))
		delete(fx.rec.relays, key) // the test's own pointer
		fx.rec.mu.Unlock()
	}
	if got := fx.call("t_a"); got != "v3" {
		t.Fatalf("t_a answered %q, want v3", got)
	}
	// The goroutine that retired an instance holds it until it returns,
	// just after the disposal the recorder saw; nothing reports that
	// return, so collect until it happened, within a bound.
	deadline := time.Now().Add(10 * time.Second)
	for {
		runtime.GC()
		var kept []string
		for i, w := range replaced {
			if w.Value() != nil {
				kept = append(kept, fmt.Sprintf("v%d", i))
			}
		}
		if len(kept) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%v still reachable 10 s after the instance that replaced each was ready and they were disposed", kept)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// A replaced instance whose Drain panics is still disposed, and the panic
// is logged with its stack (it was logged without one).
func TestDrainPanicIsLoggedWithItsStack(t *testing.T) {
	t.Parallel()
	fx := newFixture(t)
	fx.mustLoad(relayEntry("a", "v1", ", panicDrain: true"))
	fx.waitState("a", host.Ready)
	fx.mustLoad(relayEntry("a", "v2", ""))
	fx.waitFor("a dispose v1")
	logs := fx.logs.String()
	if !strings.Contains(logs, `msg="drain panicked"`) || !strings.Contains(logs, "relay drain panicked on purpose") || !strings.Contains(logs, "mbb_test.go") {
		t.Fatalf("the drain's panic is not logged with its stack:\n%s", logs)
	}
	if got := fx.call("t_a"); got != "v2" {
		t.Fatalf("t_a answered %q after the reload", got)
	}
}

// Rule 7: an instance that lost its backend reports it, and the entry shows
// it as reconnecting — settled, its tools still there — until it is back.
func TestReconnectingState(t *testing.T) {
	t.Parallel()
	fx := newFixture(t)
	sub := fx.h.Subscribe()
	defer sub.Close()
	fx.mustLoad(relayEntry("a", "v1", ""))
	fx.waitState("a", host.Ready)
	fx.rec.mu.Lock()
	r := fx.rec.relays["a/v1"]
	fx.rec.mu.Unlock()

	r.ctx.Reconnecting(errors.New("connection refused"))
	e := fx.waitState("a", host.Reconnecting)
	if e.Error != "connection refused" || !e.Settled || fx.call("t_a") != "v1" {
		t.Fatalf("reconnecting: %+v, call %q", e, fx.call("t_a"))
	}
	r.ctx.Reconnecting(nil)
	fx.waitState("a", host.Ready)
	// A stale report (the instance no longer serves) changes nothing.
	fx.mustLoad(relayEntry("a", "v2", ""))
	fx.waitFor("a dispose v1")
	r.ctx.Reconnecting(errors.New("late"))
	fx.mustLoad(relayEntry("a", "v2", "") + relayEntry("b", "b1", "")) // a host operation after the stale one
	if e := fx.state("a"); e.State != host.Ready {
		t.Fatalf("a stale report changed the state: %+v", e)
	}
	var seen []string
	for len(seen) < 1 {
		ev := <-sub.C
		if ev.Type == host.EntryChanged && ev.Entry == "a" && ev.State == host.Reconnecting {
			seen = append(seen, ev.Reason())
		}
	}
	if seen[0] != "connection refused" {
		t.Fatalf("event: %q", seen)
	}
}

// An edit whose new instance is refused as it is applied (a value another
// entry holds) keeps the running instance, and the reload says so instead
// of "restarted".
func TestReloadSaysWhichEntriesKeptTheirInstance(t *testing.T) {
	t.Parallel()
	fx := newFixture(t)
	fx.mustLoad(relayEntry("a", "a1", ", reserve: x") + relayEntry("b", "b1", ", reserve: y"))
	fx.settle()
	sub := fx.h.Subscribe()
	defer sub.Close()
	plan := fx.mustLoad(relayEntry("a", "a1", ", reserve: x") + relayEntry("b", "b2", ", reserve: x"))
	if !slices.Equal(plan.Kept, []string{"b"}) {
		t.Fatalf("Kept = %v, want [b]", plan.Kept)
	}
	if got, want := plan.String(), "kept the running b (the new instance failed)"; got != want {
		t.Fatalf("plan = %q, want %q", got, want)
	}
	ev := waitFor(t, sub, "the reload", func(ev host.Event) bool { return ev.Type == host.Reloaded })
	if got := ev.String(); !strings.Contains(got, "kept the running b") || strings.Contains(got, "restarted") {
		t.Fatalf("event = %q", got)
	}
	if s := fx.state("b"); s.State != host.Ready || !strings.Contains(s.Note, "reload failed") {
		t.Fatalf("b = %s, note %q", s.State, s.Note)
	}
	// A successor that starts is no kept instance: it is replacing the
	// old one (ready or failed, its entry's own line says later).
	plan = fx.mustLoad(relayEntry("a", "a1", ", reserve: x") + relayEntry("b", "b3", ", reserve: z"))
	if len(plan.Kept) != 0 || !slices.Equal(plan.Replacing, []string{"b"}) || plan.String() != "replacing b" {
		t.Fatalf("plan = %q, Kept %v, Replacing %v", plan.String(), plan.Kept, plan.Replacing)
	}
}

// A live edit the plugin refuses is a restart, and the reload says
// "restarted", not "updated".
func TestRefusedLiveEditIsReportedAsARestart(t *testing.T) {
	t.Parallel()
	fx := newFixture(t)
	fx.mustLoad(relayEntry("a", "v1", ", speed: 1"))
	fx.settle()
	plan := fx.mustLoad(relayEntry("a", "v1", ", speed: 2"))
	if got := plan.String(); got != "updated a" {
		t.Fatalf("plan = %q, want updated a", got)
	}
	fx.settle()
	fx.rec.reset()
	plan = fx.mustLoad(relayEntry("a", "v1", ", speed: -1"))
	if got := plan.String(); got != "restarted a" || !slices.Equal(plan.Fallback, []string{"a"}) {
		t.Fatalf("plan = %q, Fallback %v; want restarted a", got, plan.Fallback)
	}
	fx.settle()
	fx.waitFor("a dispose v1")
	if got := fx.rec.events(); !slices.Contains(got, "a apply v1") {
		t.Fatalf("events %v, want a restart (dispose, apply)", got)
	}
}

// An edit of an entry that is reconnecting whose new instance fails ends
// the old one's retries (docs/rfc/0001-host.md): nothing serves, so nothing is said
// to be "still serving"; the entry fails with the new instance's error.
func TestEditWhileReconnectingThatFails(t *testing.T) {
	t.Parallel()
	fx := newFixture(t)
	fx.mustLoad(relayEntry("a", "v1", ", reserve: x") + relayEntry("b", "b1", ", reserve: y"))
	fx.waitState("a", host.Ready)
	fx.rec.mu.Lock()
	r := fx.rec.relays["a/v1"]
	fx.rec.mu.Unlock()
	r.ctx.Reconnecting(errors.New("connection refused"))
	fx.waitState("a", host.Reconnecting)

	// The new instance is refused as it is applied: b holds y.
	fx.mustLoad(relayEntry("a", "v2", ", reserve: y") + relayEntry("b", "b1", ", reserve: y"))
	e := fx.waitState("a", host.Failed)
	if !strings.Contains(e.Error, `"y"`) || strings.Contains(e.Note, "still serving") {
		t.Fatalf("a: %+v", e)
	}
	fx.waitFor("a dispose v1")
	if got := fx.call("t_a"); !strings.Contains(got, "unknown tool") {
		t.Fatalf("the old instance's tool still answers: %q", got)
	}
}

// An instance whose initial work ends needing a login (LoginNeeded) settles
// in state needs-login: not failed, not disposed; Reconnecting(nil) makes
// it ready, NeedsLogin sends a ready one back. A successor that needs a
// login takes over like a ready one, and the entry needs a login.
func TestNeedsLoginState(t *testing.T) {
	t.Parallel()
	fx := newFixture(t)
	fx.mustLoad(relayEntry("a", "v1", ", async: true"))
	fx.rec.gate("a/v1") <- &host.LoginNeeded{Err: errors.New("run harness login a")}
	e := fx.waitState("a", host.NeedsLogin)
	if !e.Settled || e.Error != "run harness login a" || !host.AllSettled(fx.h.Snapshot()) {
		t.Fatalf("needs-login: %+v", e)
	}
	fx.rec.mu.Lock()
	r := fx.rec.relays["a/v1"]
	fx.rec.mu.Unlock()
	r.ctx.Reconnecting(nil)
	fx.waitState("a", host.Ready)
	r.ctx.NeedsLogin(errors.New("the refresh token was refused"))
	if e := fx.waitState("a", host.NeedsLogin); e.Error != "the refresh token was refused" {
		t.Fatalf("needs-login again: %+v", e)
	}
	r.ctx.Reconnecting(nil)
	fx.waitState("a", host.Ready)

	fx.mustLoad(relayEntry("a", "v2", ", async: true"))
	fx.rec.gate("a/v2") <- &host.LoginNeeded{Err: errors.New("log in to v2")}
	fx.waitFor("a dispose v1")
	if e := fx.waitState("a", host.NeedsLogin); e.Error != "log in to v2" || e.Reloading {
		t.Fatalf("successor needing a login: %+v", e)
	}
}
