package host_test

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/harness-go/harness/host"
	"github.com/harness-go/harness/host/jsexpr"
	"github.com/harness-go/harness/plugins/tools"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestApplyFailureLeavesNothingAndSiblingsRun(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, cfg, reason string
	}{
		{"error", `failApply: "halfway there"`, `apply: halfway there`},
		{"panic", `panic: true`, `apply: panic: probe panicked on purpose`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			fx := newFixture(t)
			fx.mustLoad(`
- id: good
  name: probe
  config: {tools: [good_tool]}
- id: bad
  name: probe
  config: {tools: [bad_one, bad_two], provide: alpha, ` + tc.cfg + `}
`)
			fx.settle()
			bad := fx.state("bad")
			if bad.State != host.Failed || bad.Error != tc.reason {
				t.Fatalf("bad = %s %q, want failed %q", bad.State, bad.Error, tc.reason)
			}
			if got := fx.tools.Names(); !slices.Equal(got, []string{"good_tool"}) {
				t.Fatalf("tools = %v: the failed apply left registrations behind", got)
			}
			if fx.state("good").State != host.Ready {
				t.Fatalf("sibling is %s", fx.state("good").State)
			}
			// Its disposers ran: the service it provided is gone.
			if !slices.Contains(fx.rec.events(), "bad dispose") {
				t.Fatalf("failed apply was not disposed: %v", fx.rec.events())
			}
			fx.mustLoad(`
- id: good
  name: probe
  config: {tools: [good_tool]}
- id: c
  name: consumer
`)
			if s := fx.settle(); s[1].State != host.Pending || !slices.Equal(s[1].Missing, []string{"alpha"}) {
				t.Fatalf("consumer = %s missing %v: alpha must be gone with the failed instance", s[1].State, s[1].Missing)
			}
		})
	}
}

func TestInjectPendingActiveAndDisposedBeforeProvider(t *testing.T) {
	t.Parallel()
	fx := newFixture(t)
	fx.mustLoad(`
- id: c
  name: consumer
- id: p
  name: probe
  disabled: true
  config: {provide: alpha}
`)
	snap := fx.settle()
	if c := snap[0]; c.State != host.Pending || !slices.Equal(c.Missing, []string{"alpha"}) || !c.Settled {
		t.Fatalf("consumer = %+v, want settled pending on alpha", c)
	}
	if snap[1].State != host.Disabled {
		t.Fatalf("provider = %s, want disabled", snap[1].State)
	}

	fx.mustLoad(`
- id: c
  name: consumer
- id: p
  name: probe
  config: {provide: alpha}
`)
	fx.settle()
	if got := fx.state("c").State; got != host.Ready {
		t.Fatalf("consumer = %s after its provider appeared", got)
	}

	fx.rec.reset()
	fx.mustLoad(`
- id: c
  name: consumer
`)
	fx.settle()
	if got, want := fx.rec.events(), []string{"c dispose", "p dispose"}; !slices.Equal(got, want) {
		t.Fatalf("disposal order %v, want %v", got, want)
	}
	if c := fx.state("c"); c.State != host.Pending || !slices.Equal(c.Missing, []string{"alpha"}) {
		t.Fatalf("consumer = %s missing %v, want pending on alpha", c.State, c.Missing)
	}

	// The provider comes back: so does the consumer.
	fx.rec.reset()
	fx.mustLoad(`
- id: c
  name: consumer
- id: p2
  name: probe
  config: {provide: alpha}
`)
	fx.settle()
	if got, want := fx.rec.events(), []string{"p2 apply", "c apply"}; !slices.Equal(got, want) {
		t.Fatalf("events %v, want %v", got, want)
	}
}

func TestProviderFailureDisposesDependentsFirst(t *testing.T) {
	t.Parallel()
	fx := newFixture(t)
	fx.mustLoad(`
- id: p
  name: probe
  config: {provide: alpha}
- id: c
  name: consumer
`)
	fx.settle()
	fx.rec.reset()
	fx.rec.instance("p").ctx.Fail(errors.New("server exited with status 3"))
	p := fx.waitState("p", host.Failed)
	if !strings.Contains(p.Error, "server exited with status 3") {
		t.Fatalf("reason = %q", p.Error)
	}
	fx.waitState("c", host.Pending)
	if got, want := fx.rec.events(), []string{"c dispose", "p dispose"}; !slices.Equal(got, want) {
		t.Fatalf("order %v, want %v", got, want)
	}
}

func TestOrphanIsPendingAndSettledAtOnce(t *testing.T) {
	t.Parallel()
	fx := newFixture(t)
	fx.mustLoad(`
- id: lonely
  name: orphan
- id: ok
  name: probe
`)
	snap := fx.settle()
	if o := snap[0]; o.State != host.Pending || !o.Settled || !slices.Equal(o.Missing, []string{"nobody-provides-this"}) {
		t.Fatalf("orphan = %+v", o)
	}
}

func TestPendingOnAStartingProviderIsNotSettled(t *testing.T) {
	t.Parallel()
	fx := newFixture(t)
	fx.mustLoad(`
- id: c
  name: consumer
- id: p
  name: probe
  config: {async: true, provide: alpha}
`)
	snap := fx.h.Snapshot()
	if snap[0].Settled || snap[1].Settled || snap[1].State != host.Starting {
		t.Fatalf("snapshot %+v: nothing may be settled while p starts", snap)
	}
	fx.rec.gate("p") <- nil
	fx.settle()
	if fx.state("c").State != host.Ready || fx.state("p").State != host.Ready {
		t.Fatalf("after p finished: %s", states(fx.h.Snapshot()))
	}
}

func TestAsyncStartFailure(t *testing.T) {
	t.Parallel()
	fx := newFixture(t)
	fx.mustLoad(`
- id: a
  name: probe
  config: {async: true, tools: [a_tool]}
`)
	if s := fx.state("a"); s.State != host.Starting {
		t.Fatalf("a = %s, want starting", s.State)
	}
	fx.rec.gate("a") <- errors.New("initialize: connection refused")
	a := fx.waitState("a", host.Failed)
	if a.Error != `connect: initialize: connection refused` {
		t.Fatalf("reason %q", a.Error)
	}
	if n := len(fx.tools.Names()); n != 0 {
		t.Fatalf("%d tools left after a failed start", n)
	}
}

func TestReloadTouchesOnlyWhatChanged(t *testing.T) {
	t.Parallel()
	fx := newFixture(t)
	fx.mustLoad(`
- id: a
  name: probe
  config: {label: one}
- id: b
  name: probe
  config: {label: two}
- id: c
  name: probe
- id: d
  name: probe
`)
	fx.settle()
	a, c := fx.rec.instance("a"), fx.rec.instance("c")
	fx.rec.reset()

	plan := fx.mustLoad(`
# a comment, new quoting and key order change nothing
- name: probe
  id: a
  config: {label: "one"}
- id: b
  name: probe-alias
  config: {label: three}
- id: c
  name: probe
  disabled: true
- id: e
  name: probe
`)
	fx.settle()
	if got := plan.String(); got != "added e; restarted b; removed d; disabled c" {
		t.Fatalf("plan = %s", got)
	}
	// Disposals run concurrently, all before any apply; applies in file order.
	got := fx.rec.events()
	if len(got) != 5 || !sameSet(got[:3], []string{"d dispose", "c dispose", "b dispose"}) || !slices.Equal(got[3:], []string{"b apply", "e apply"}) {
		t.Fatalf("events %v, want the disposals of b, c, d, then b apply, e apply", got)
	}
	if fx.rec.instance("a") != a {
		t.Fatal("the unchanged entry was re-created")
	}
	if fx.state("c").State != host.Disabled {
		t.Fatalf("c = %s", fx.state("c").State)
	}
	for _, e := range fx.h.Snapshot() {
		if e.ID == "d" {
			t.Fatal("removed entry still listed")
		}
	}
	// Re-enabling applies again, as a new object.
	fx.mustLoad(`
- id: c
  name: probe
`)
	fx.settle()
	if fx.rec.instance("c") == c || fx.state("c").State != host.Ready {
		t.Fatal("re-enabled entry was not applied anew")
	}
}

func TestReloadMovesAReservedValue(t *testing.T) {
	t.Parallel()
	fx := newFixture(t)
	fx.mustLoad(`
- id: one
  name: probe
  config: {reserve: github}
- id: two
  name: probe
  config: {reserve: web}
`)
	fx.settle()
	// Swap the reserved values in one edit: every disposal finishes before any apply.
	fx.mustLoad(`
- id: one
  name: probe
  config: {reserve: web}
- id: two
  name: probe
  config: {reserve: github}
`)
	for _, e := range fx.settle() {
		if e.State != host.Ready {
			t.Fatalf("%s = %s %s", e.ID, e.State, e.Error)
		}
	}
	// A true duplicate fails only the later instance.
	fx.mustLoad(`
- id: one
  name: probe
  config: {reserve: web}
- id: two
  name: probe
  config: {reserve: github}
- id: three
  name: probe
  config: {reserve: web}
`)
	fx.settle()
	if s := fx.state("three"); s.State != host.Failed || !strings.Contains(s.Error, `"web" is already reserved by one`) {
		t.Fatalf("three = %s %q", s.State, s.Error)
	}
}

// The per-host store is one for the program and its plugins: what the
// program put in Host.PerHost is what plugins find through
// Context.PerHost.
func TestPerHostStoreIsOneForProgramAndPlugins(t *testing.T) {
	t.Parallel()
	fx := newFixture(t)
	seeded := &reservations{owner: map[string]string{"github": "the program"}}
	if got := fx.h.PerHost(reservationsKey{}, func() any { return seeded }); got != seeded {
		t.Fatalf("PerHost returned %v, want the seeded value", got)
	}
	if got := fx.h.PerHost(reservationsKey{}, func() any { return &reservations{} }); got != seeded {
		t.Fatal("a second PerHost replaced the value")
	}
	fx.mustLoad(`
- id: one
  name: probe
  config: {reserve: github}
`)
	fx.settle()
	if s := fx.state("one"); s.State != host.Failed || !strings.Contains(s.Error, `"github" is already reserved by the program`) {
		t.Fatalf("one = %s %q", s.State, s.Error)
	}
}

func TestBadFilesChangeNothing(t *testing.T) {
	t.Parallel()
	fx := newFixture(t)
	good := `
- id: a
  name: probe
  config: {label: one, tools: [a_tool]}
`
	fx.mustLoad(good)
	fx.settle()
	a := fx.rec.instance("a")
	for _, tc := range []struct{ name, src, want string }{
		{"yaml", "- id: a\n  name: probe\n  config: {label: [\n", "cordis.yml:3: invalid YAML"},
		{"unknown plugin", "- id: a\n  name: probe\n- id: b\n  name: nope\n", `cordis.yml:4:9: entry "b": name: unknown plugin "nope" (known: `},
		{"unknown key", "- id: a\n  name: probe\n  config:\n    lable: x\n", `cordis.yml:4:5: entry "a": config.lable: unknown key "lable" (known keys: argv, async, barrier, closer, count, `},
		{"type", "- id: a\n  name: probe\n  config:\n    count: many\n", `cordis.yml:4:12: entry "a": config.count: cannot unmarshal !!str ` + "`many`" + ` into int`},
		// One line of flow style: each type error at its own value.
		{"type in flow style (a sequence)", "- id: a\n  name: probe\n  config: {count: 1, label: [x], barrier: nope, tools: [t]}\n", `cordis.yml:3:29: entry "a": config.label: cannot unmarshal !!seq into string`},
		{"type in flow style (a value)", "- id: a\n  name: probe\n  config: {count: 1, label: [x], barrier: nope, tools: [t]}\n", `cordis.yml:3:43: entry "a": config.barrier: cannot unmarshal !!str ` + "`nope`" + ` into int`},
		{"type in flow style (a long value)", "- id: a\n  name: probe\n  config: {label: a-long-label, count: a-long-count}\n", `cordis.yml:3:40: entry "a": config.count: cannot unmarshal !!str ` + "`a-long-...`" + ` into int`},
		// A type that decodes itself (host.MappingFields): its unknown key
		// and its own message at their places, beside the entry's others.
		{"unknown key of a type that decodes itself", "- id: a\n  name: probe\n  config: {count: x, mode: {level: 1, lvl: 2}}\n", `cordis.yml:3:39: entry "a": config.mode.lvl: unknown key "lvl" (known keys: level, name)`},
		{"its own message", "- id: a\n  name: probe\n  config: {count: x, mode: [1]}\n", `cordis.yml:3:28: entry "a": config.mode: must be false or a mapping of level and name`},
		{"and the entry's other type error", "- id: a\n  name: probe\n  config: {count: x, mode: [1]}\n", `cordis.yml:3:19: entry "a": config.count: cannot unmarshal !!str ` + "`x`" + ` into int`},
		{"a type error inside it", "- id: a\n  name: probe\n  config: {count: 1, mode: {level: high}}\n", `cordis.yml:3:36: entry "a": config.mode.level: cannot unmarshal !!str ` + "`high`" + ` into int`},
		// A type's own unmarshaler whose error is plain "line N: …": at its
		// value on that line, a one-line flow mapping's too.
		{"its own plain error", "- id: a\n  name: probe\n  config:\n    count: 1\n    window: soon\n", `cordis.yml:5:13: entry "a": config.window: window must be a duration such as 5s`},
		{"its own plain error in flow style", "- id: a\n  name: probe\n  config: {count: 1, window: soon}\n", `cordis.yml:3:30: entry "a": config.window: window must be a duration such as 5s`},
		{"validate", "- id: a\n  name: probe\n  config:\n    count: -1\n", `cordis.yml:4:12: entry "a": config.count: must not be negative`},
		{"duplicate id", "- id: a\n  name: probe\n- id: a\n  name: probe\n", `cordis.yml:3:3: entry "a": id: duplicate id (first used at cordis.yml:1:3)`},
		{"a second id in an entry", "- id: a\n  name: probe\n  id: b\n", `cordis.yml:3:3: entry "a": duplicate key "id" in this entry (first at cordis.yml:1:3): keep one`},
		{"a second name in an entry", "- id: a\n  name: probe\n  name: relay\n", `cordis.yml:3:3: entry "a": duplicate key "name" in this entry (first at cordis.yml:2:3): keep one`},
		{"a key twice in config", "- id: a\n  name: probe\n  config:\n    label: x\n    label: y\n", `cordis.yml:5:12: entry "a": config.label: mapping key "label" already defined at line 4`},
		{"not a list", "a: b\n", "cordis.yml:1:1: the file must be a YAML sequence"},
		{"empty", "\n", "cordis.yml: the file is empty; write [] to run no entries"},
		{"bad js", "- id: a\n  name: probe\n  config:\n    label: !!js require('fs')\n", `cordis.yml:4:17: entry "a": config.label: !!js: unsupported`},
	} {
		_, err := fx.load(tc.src)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: err = %v, want it to contain %q", tc.name, err, tc.want)
		}
	}
	if fx.rec.instance("a") != a || fx.state("a").State != host.Ready || len(fx.tools.Names()) != 1 {
		t.Fatal("a refused file changed the running entries")
	}
	// Fixing the file applies it.
	fx.mustLoad(strings.Replace(good, "one", "two", 1))
	fx.settle()
	if fx.rec.instance("a") == a || fx.rec.instance("a").Label != "two" {
		t.Fatal("the fixed file was not applied")
	}
}

func TestFailedIsStickyUntilConfigChangesOrRestart(t *testing.T) {
	t.Parallel()
	fx := newFixture(t)
	src := `
- id: f
  name: probe
  config: {failApply: nope}
- id: ok
  name: probe
`
	fx.mustLoad(src)
	fx.settle()
	fx.rec.reset()
	fx.mustLoad(src + "- id: new\n  name: probe\n")
	fx.settle()
	if got := fx.rec.events(); !slices.Equal(got, []string{"new apply"}) {
		t.Fatalf("reload of an unchanged failed entry did %v", got)
	}
	if fx.state("f").State != host.Failed {
		t.Fatal("failed entry changed state on an unrelated reload")
	}
	fx.rec.reset()
	if err := fx.h.Restart(context.Background(), "f"); err != nil {
		t.Fatal(err)
	}
	fx.settle()
	if got := fx.rec.events(); !slices.Equal(got, []string{"f apply", "f dispose"}) {
		t.Fatalf("restart did %v", got)
	}
	if err := fx.h.Restart(context.Background(), "nope"); !errors.Is(err, host.ErrUnknownEntry) {
		t.Fatalf("restart of an unknown id: %v", err)
	}
	fx.mustLoad(strings.Replace(src, "{failApply: nope}", "{label: fixed}", 1))
	fx.settle()
	if s := fx.state("f"); s.State != host.Ready {
		t.Fatalf("f = %s after its config changed", s.State)
	}
}

func TestTemplateWithUnsetVariableFailsOnlyThatEntry(t *testing.T) {
	t.Parallel()
	fx := newFixture(t)
	fx.env["PRESENT"] = "yes"
	fx.mustLoad("- id: t\n  name: probe\n  config:\n    secret: !!js '`Bearer ${process.env.MCP_TOKEN}`'\n" +
		"- id: bare\n  name: probe\n  config:\n    label: !!js process.env.ABSENT\n    secret: !!js process.env.PRESENT\n" +
		"- id: needs\n  name: probe\n  config:\n    needsLabel: true\n    label: !!js process.env.NEEDED\n")
	fx.settle()
	s := fx.state("t")
	if s.State != host.Failed || !strings.Contains(s.Error, `cordis.yml:4:13: config.secret: !!js: process.env.MCP_TOKEN is not set`) {
		t.Fatalf("t = %s %q", s.State, s.Error)
	}
	if strings.Contains(s.Error, "undefined") {
		t.Fatalf("message %q", s.Error)
	}
	// A required key left out by an unset variable fails only its entry
	// too, saying why.
	if s := fx.state("needs"); s.State != host.Failed || !strings.Contains(s.Error, `config.label: is required (a !!js value is undefined, its key left out: process.env.NEEDED is not set)`) {
		t.Fatalf("needs = %s %q", s.State, s.Error)
	}
	bare := fx.rec.instance("bare")
	if fx.state("bare").State != host.Ready || bare.Label != "" || bare.Secret != "yes" {
		t.Fatalf("bare = %s %+v", fx.state("bare").State, bare)
	}
	// Values are read at apply time: set the variable and restart.
	fx.env["MCP_TOKEN"] = "abc"
	if err := fx.h.Restart(context.Background(), "t"); err != nil {
		t.Fatal(err)
	}
	fx.settle()
	if got := fx.rec.instance("t").Secret; got != "Bearer abc" {
		t.Fatalf("secret = %q", got)
	}
}

func TestEventsReportEveryTransition(t *testing.T) {
	t.Parallel()
	fx := newFixture(t)
	sub := fx.h.Subscribe()
	defer sub.Close()
	fx.mustLoad("- id: a\n  name: probe\n  config: {async: true}\n")
	fx.rec.gate("a") <- nil
	fx.settle()
	_, _ = fx.load("- id: a\n  name: nope\n")
	var got []string
	for len(got) < 4 {
		ev := <-sub.C
		got = append(got, ev.String())
	}
	want := []string{`entry "a": stopped → starting`, "reloaded: added a", `entry "a": starting → ready`,
		`reload rejected: cordis.yml:2:9: entry "a": name: unknown plugin "nope" (known: `}
	for i := range want {
		if !strings.HasPrefix(got[i], want[i]) {
			t.Fatalf("event %d = %q, want %q", i, got[i], want[i])
		}
	}
}

func TestTwoHostsAreIsolated(t *testing.T) {
	t.Parallel()
	var wg sync.WaitGroup
	for i := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			fx := newFixture(t)
			// The same ids, reserved values and tool names in every host.
			fx.mustLoad(`
- id: p
  name: probe
  config: {provide: alpha, reserve: github, tools: [same_name]}
- id: c
  name: consumer
`)
			for _, e := range fx.settle() {
				if e.State != host.Ready {
					t.Errorf("host %d: %s = %s %s", i, e.ID, e.State, e.Error)
				}
			}
		}()
	}
	wg.Wait()
}

func TestCloseDisposesEverythingDependentsFirst(t *testing.T) {
	t.Parallel()
	fx := newFixture(t)
	fx.mustLoad(`
- id: p
  name: probe
  config: {provide: alpha}
- id: c
  name: consumer
- id: x
  name: probe
`)
	fx.settle()
	fx.rec.reset()
	if err := fx.h.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	// x and c go together, c (which injects alpha) before p (which provides it).
	got := fx.rec.events()
	if len(got) != 3 || !sameSet(got[:2], []string{"x dispose", "c dispose"}) || got[2] != "p dispose" {
		t.Fatalf("close order %v, want x and c, then p", got)
	}
	if _, err := fx.load("- id: a\n  name: probe\n"); !errors.Is(err, host.ErrClosed) {
		t.Fatalf("load after close: %v", err)
	}
}

// Per-host values that are io.Closers live as long as the host: disposing
// every instance leaves them; Close closes them after the instances, newest
// first, and reports their errors.
func TestCloseClosesPerHostValuesLast(t *testing.T) {
	t.Parallel()
	fx := newFixture(t)
	fx.mustLoad(`
- id: a
  name: probe
  config: {closer: first}
- id: b
  name: probe
  config: {closer: failing}
- id: c
  name: probe
  config: {closer: first}
`)
	fx.settle()
	fx.mustLoad("- id: a\n  name: probe\n  config: {closer: first}\n")
	fx.settle()
	for _, e := range fx.rec.events() {
		if strings.HasPrefix(e, "shared ") {
			t.Fatalf("a shared value was closed before the host: %v", fx.rec.events())
		}
	}
	fx.rec.reset()
	err := fx.h.Close(context.Background())
	if err == nil || !strings.Contains(err.Error(), "close the per-host *host_test.sharedCloser: it failed on purpose") {
		t.Fatalf("Close = %v, want the closer's error", err)
	}
	want := []string{"a dispose", "shared failing close", "shared first close"}
	if got := fx.rec.events(); !slices.Equal(got, want) {
		t.Fatalf("close order %v, want %v", got, want)
	}
}

func TestStatusDetailsAndStates(t *testing.T) {
	t.Parallel()
	fx := newFixture(t)
	fx.mustLoad("- id: a\n  name: probe\n  config: {label: hello}\n")
	s := fx.settle()[0]
	if d, ok := s.Details.(map[string]string); !ok || d["label"] != "hello" {
		t.Fatalf("details %#v", s.Details)
	}
	for st, want := range map[host.State]string{host.Disabled: "disabled", host.Pending: "pending", host.Starting: "starting", host.Ready: "ready", host.Failed: "failed", host.Stopped: "stopped", host.State(42): "State(42)"} {
		if st.String() != want {
			t.Errorf("%d = %q", int(st), st.String())
		}
	}
}

func TestSettleIsBoundedByContext(t *testing.T) {
	t.Parallel()
	fx := newFixture(t)
	fx.mustLoad("- id: a\n  name: probe\n  config: {async: true}\n")
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	if err := fx.h.Settle(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("settle: %v", err)
	}
}

// sameSet reports whether a and b hold the same strings, in any order.
func sameSet(a, b []string) bool {
	return len(a) == len(b) && slices.Equal(slices.Sorted(slices.Values(a)), slices.Sorted(slices.Values(b)))
}

func TestStopsRunConcurrently(t *testing.T) {
	t.Parallel()
	fx := newFixture(t)
	// Four entries whose disposal blocks until all four have started it: a
	// host that stopped them one at a time would never finish.
	fx.mustLoad(`
- id: a
  name: probe
  config: {barrier: 4}
- id: b
  name: probe
  config: {barrier: 4}
- id: c
  name: probe
  config: {barrier: 4}
- id: d
  name: probe
  config: {barrier: 4}
`)
	fx.settle()
	done := make(chan error, 1)
	go func() { _, err := fx.load("[]"); done <- err }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the four disposals did not run together")
	}
}

// The host's secret set: the values of fields tagged secret (literal or
// !!js) and whatever !!js read from the environment, in any field, join it
// when a file is checked — before anything is reported — and the host's
// logger, the entries' errors and the events redact them. process.cwd() is
// not a secret.
func TestSecretsOfTheConfiguration(t *testing.T) {
	t.Parallel()
	fx := newFixture(t)
	fx.env["HDR_SECRET"] = "hdr-secret-0123"
	fx.env["LABEL_SECRET"] = "label-secret-0123"
	fx.env["MODE_VALUE"] = "ordinarymode"
	var buf syncBuffer
	h := host.New(host.Options{Env: &jsexpr.Env{Lookup: func(k string) (string, bool) { v, ok := fx.env[k]; return v, ok }, Cwd: "/work/dir-long-enough"},
		Logger: slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug}))})
	h.Provide(recorderService, fx.rec)
	h.Provide(tools.Service, tools.New())
	t.Cleanup(func() { _ = h.Close(context.Background()) })
	f, err := host.ParseFile("cordis.yml", []byte(`
- id: a
  name: probe
  config:
    token: literal-token-0123
    headers:
      Authorization: !!js '`+"`Bearer ${process.env.HDR_SECRET}`"+`'
      X-Request-Source: harness-console
      X-Upstream-Token: plainwordvalue
      X-Trace: "Basic dXNlcjpwYXNzd29yZA=="
    env:
      NODE_ENV: production
      FIXTURE_MODE: stubborn
      LONG_SENTENCE: "a sentence of ordinary words"
      SERVICE_PATH: /usr/local/share/service
      DEPLOY_ID: a1B2c3D4e5F6g7H8
      HEXDIGEST: 9f86d081884c7d659a2feaa0c55ad015
      MY_API_KEY: plainword1
      DB: postgres://app:db-password-0123@db/app
      MODE: !!js process.env.MODE_VALUE
    label: !!js process.env.LABEL_SECRET
    secret: !!js process.cwd()
    failApply: "refused literal-token-0123 and label-secret-0123"
    endpoint: "https://u:url-password-0123@example.com/mcp?api_key=query-key-0123&page=page-value-0123"
    argv: ["--api-key=flag-key-0123", "--token", "flag-token-0123", "-e", "GITHUB_TOKEN=env-token-0123", "--name", "plain-name-0123"]
`))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := h.Load(context.Background(), f); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := h.Settle(ctx); err != nil {
		t.Fatal(err)
	}
	set := h.Secrets()
	for in, want := range map[string]string{
		"literal-token-0123":     "<redacted>",
		"Bearer hdr-secret-0123": "<redacted>",
		"hdr-secret-0123":        "<redacted>",
		"label-secret-0123":      "<redacted>",
		"/work/dir-long-enough":  "/work/dir-long-enough",
		// secret:"url" and secret:"args": the credentials in them only.
		"url-password-0123": "<redacted>",
		"query-key-0123":    "<redacted>",
		"page-value-0123":   "page-value-0123",
		"flag-key-0123":     "<redacted>",
		"flag-token-0123":   "<redacted>",
		"env-token-0123":    "<redacted>",
		"plain-name-0123":   "plain-name-0123",
		// env and headers: by the name, or the shape of the value; an
		// ordinary word prints.
		"production":                       "production",
		"stubborn":                         "stubborn",
		"harness-console":                  "harness-console",
		"a sentence of ordinary words":     "a sentence of ordinary words",
		"/usr/local/share/service":         "/usr/local/share/service",
		"plainwordvalue":                   "<redacted>", // X-Upstream-Token
		"dXNlcjpwYXNzd29yZA==":             "<redacted>", // Basic …
		"a1B2c3D4e5F6g7H8":                 "<redacted>", // a token's shape
		"9f86d081884c7d659a2feaa0c55ad015": "<redacted>",
		"plainword1":                       "<redacted>", // MY_API_KEY
		"db-password-0123":                 "<redacted>", // a URL with a password
		"ordinarymode":                     "<redacted>", // !!js read it
	} {
		if got := set.Redact(in); got != want {
			t.Errorf("Redact(%q) = %q, want %q", in, got, want)
		}
	}
	// What !!js read and what a field tagged secret holds are credentials:
	// kept from stdio servers by value. The rest is only hidden.
	for v, want := range map[string]bool{"ordinarymode": true, "literal-token-0123": true, "label-secret-0123": true, "hdr-secret-0123": true, "a1B2c3D4e5F6g7H8": false, "plainword1": false} {
		if got := set.IsCredential(v); got != want {
			t.Errorf("IsCredential(%q) = %v, want %v", v, got, want)
		}
	}
	snap := h.Snapshot()
	if snap[0].State != host.Failed || !strings.Contains(snap[0].Error, "refused <redacted> and <redacted>") {
		t.Fatalf("the entry should fail with the reason redacted: %+v", snap[0])
	}
	if out := buf.String(); strings.Contains(out, "literal-token-0123") || strings.Contains(out, "label-secret-0123") || !strings.Contains(out, "refused <redacted> and <redacted>") {
		t.Fatalf("the host's log should show the failure redacted:\n%s", out)
	}
}

// A value of the wrong type is quoted in the message (cut to a few
// characters by yaml.v3), except where that start could be a secret's: a
// value !!js made, and any value below a field tagged secret. The redaction
// cannot match a cut secret.
func TestTypeErrorsDoNotQuoteSecrets(t *testing.T) {
	t.Parallel()
	fx := newFixture(t)
	fx.env["COUNT_SECRET"] = "ghp_R3alLookingTokenValue"
	for _, tc := range []struct{ name, config, want, secret string }{
		{"!!js", "count: !!js process.env.COUNT_SECRET", `config.count: cannot unmarshal !!str (value not shown) into int`, "ghp_R3a"},
		{"secret map", `headers: "Bearer abcdefgh"`, `config.headers: cannot unmarshal !!str (value not shown) into map[string]string`, "Bearer"},
		{"secret string", "token: [tok_abcdefgh]", `cannot unmarshal !!seq into string`, "tok_abc"},
		{"plain", "count: many", "config.count: cannot unmarshal !!str `many` into int", ""},
		{"a token in a plain field", "count: sk-lite-Abcdef0123456789", `config.count: cannot unmarshal !!str (value not shown) into int`, "sk-lite"},
		// An explicit tag: yaml.v3 quotes the whole value, and says nothing
		// of where.
		{"tagged secret", "headers: {A: !!int sk-live-INTTAG-1234}", "cordis.yml:4:18: entry \"a\": config.headers.A: yaml: cannot decode !!str (value not shown) as a !!int", "INTTAG"},
		{"tagged plain", "label: !!float nope", "cordis.yml:4:12: entry \"a\": config.label: yaml: cannot decode !!str `nope` as a !!float", ""},
	} {
		_, err := fx.load("- id: a\n  name: probe\n  config:\n    " + tc.config + "\n")
		if err == nil || !strings.Contains(err.Error(), tc.want) || tc.secret != "" && strings.Contains(err.Error(), tc.secret) {
			t.Errorf("%s: err = %v, want %q and not %q", tc.name, err, tc.want, tc.secret)
		}
	}
}

// syncBuffer is a bytes.Buffer safe for concurrent writers.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// A service has one provider: providing a name twice is an error, whoever
// holds it.
func TestProvideTwiceIsAnError(t *testing.T) {
	t.Parallel()
	fx := newFixture(t)
	if err := fx.h.Provide(tools.Service, tools.New()); err == nil || !strings.Contains(err.Error(), `service "tools" is already provided by the host`) {
		t.Fatalf("Provide twice: %v", err)
	}
	fx.mustLoad("- id: p\n  name: probe\n  config: {provide: alpha}\n")
	fx.waitState("p", host.Ready)
	if err := fx.h.Provide("alpha", 1); err == nil || !strings.Contains(err.Error(), `already provided by entry "p"`) {
		t.Fatalf("Provide of an instance's service: %v", err)
	}
}

// A load whose turn has not come when its context ends does not happen.
func TestCancelledLoadDoesNotHappen(t *testing.T) {
	t.Parallel()
	fx := newFixture(t)
	f, err := host.ParseFile("cordis.yml", []byte("- id: a\n  name: probe\n"))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := fx.h.Load(ctx, f); !errors.Is(err, context.Canceled) {
		t.Fatalf("Load with a cancelled context: %v", err)
	}
	fx.mustLoad("[]\n") // a later operation: the cancelled one was before it
	if got := fx.rec.events(); len(got) != 0 {
		t.Fatalf("the cancelled load ran: %q", got)
	}
}

// A typed key is its service's name: what the host provides by key a
// plugin finds by name, and the other way round; the value keeps its type.
func TestKeyIsTheServiceOfItsName(t *testing.T) {
	t.Parallel()
	fx := newFixture(t)
	key := host.NewKey[*recorder](recorderService)
	if key.Name() != recorderService {
		t.Fatalf("Name() = %q", key.Name())
	}
	if err := key.ProvideBy(fx.h, newRecorder()); err == nil || !strings.Contains(err.Error(), `service "recorder" is already provided by the host`) {
		t.Fatalf("a second provider by key: %v", err)
	}
	if err := tools.Key.ProvideBy(fx.h, tools.New()); err == nil {
		t.Fatal("the tools service was provided twice")
	}
}
