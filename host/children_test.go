package host_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/harness-go/harness/host"
)

// brood is a test plugin that owns child entries, as mcp-servers does: its
// children key lists them, and an edit of that key alone (live) sets them
// again, as a file the instance follows would. broken refuses the list
// instead (a file that does not parse); fail fails the instance once its
// children are set.
type brood struct {
	Children []broodChild `yaml:"children"`
	Broken   string       `yaml:"broken"`
	Fail     string       `yaml:"fail"`

	ctx *host.Context
}

type broodChild struct {
	Name     string         `yaml:"name"`
	Kind     string         `yaml:"kind"`
	Config   map[string]any `yaml:"config"`
	Disabled bool           `yaml:"disabled"`
}

func init() {
	host.Register(host.Kind{
		Name:   "brood",
		Doc:    "test plugin whose instance owns child entries",
		Inject: []string{recorderService},
		Live:   []string{"children", "broken"},
		New:    func() host.Plugin { return &brood{} },
	})
}

func (b *brood) Apply(ctx *host.Context) error {
	rec, err := host.Use[*recorder](ctx, recorderService)
	if err != nil {
		return err
	}
	b.ctx = ctx
	id := ctx.ID()
	rec.add("%s apply", id)
	if _, err := ctx.Defer("record", func(context.Context) error { rec.add("%s dispose", id); return nil }); err != nil {
		return err
	}
	if err := b.set(); err != nil {
		return err
	}
	if b.Fail != "" {
		ctx.Fail(errors.New(b.Fail))
	}
	return nil
}

func (b *brood) Reconfigure(next host.Plugin) error {
	n := next.(*brood)
	b.Children, b.Broken = n.Children, n.Broken
	return b.set()
}

func (b *brood) set() error {
	if b.Broken != "" {
		b.ctx.RejectChildren(errors.New(b.Broken))
		return nil
	}
	var list []host.Child
	for i, c := range b.Children {
		ch := host.Child{Name: c.Name, Kind: c.Kind, Disabled: c.Disabled, Pos: host.Pos{File: "servers.json", Line: i + 1, Col: 1}}
		if c.Config != nil {
			var n yaml.Node
			if err := n.Encode(c.Config); err != nil {
				return err
			}
			ch.Config = &n
		}
		list = append(list, ch)
	}
	return b.ctx.SetChildren(list)
}

func ids(snap []host.EntryStatus) []string {
	var out []string
	for _, e := range snap {
		out = append(out, e.ID)
	}
	return out
}

// Child entries (rule 13): listed under their parent, reconciled by the
// rules of the file's entries when the parent sets them again — an
// unchanged child untouched, a changed one re-created, a removed one
// disposed, a broken one failing alone, a refused list changing nothing —
// restartable by their id, and disposed with their parent when it is
// disabled, fails or is removed.
func TestChildEntries(t *testing.T) {
	t.Parallel()
	fx := newFixture(t)
	entry := func(children, extra string) string {
		return "- id: solo\n  name: probe\n- id: fam\n  name: brood\n  config:\n    children: " + children + "\n" + extra
	}
	fx.mustLoad(entry(`[{name: a, kind: probe, config: {tools: [a_tool]}}, {name: b, kind: probe, config: {tools: [b_tool]}}]`, ""))
	snap := fx.settle()
	if got := ids(snap); !slices.Equal(got, []string{"solo", "fam", "fam/a", "fam/b"}) {
		t.Fatalf("snapshot %v: the children must follow their parent", got)
	}
	for _, e := range snap[2:] {
		if e.Parent != "fam" || e.State != host.Ready || e.Plugin != "probe" {
			t.Fatalf("child %+v", e)
		}
	}
	if snap[0].Parent != "" || snap[1].Parent != "" {
		t.Fatalf("entries of the file have no parent: %+v", snap[:2])
	}
	if got := fx.tools.Names(); !slices.Equal(got, []string{"a_tool", "b_tool"}) {
		t.Fatalf("tools %v", got)
	}

	// The parent sets its children again (a live edit: the parent runs on):
	// b changed, c added; a untouched.
	fx.rec.reset()
	sub := fx.h.Subscribe()
	defer sub.Close()
	fx.mustLoad(entry(`[{name: a, kind: probe, config: {tools: [a_tool]}}, {name: b, kind: probe, config: {tools: [b2_tool]}}, {name: c, kind: probe}]`, ""))
	// (Settle may return just before the first list's own event: skip it.)
	ev := nextOf(t, sub, func(ev host.Event) bool {
		return ev.Type == host.Reloaded && ev.Entry == "fam" && strings.Contains(ev.Plan.String(), "fam/c")
	})
	if got := ev.Plan.String(); got != "added fam/c; restarted fam/b" {
		t.Errorf("the children's plan: %q", got)
	}
	fx.settle()
	if got, want := fx.rec.events(), []string{"fam/b dispose", "fam/b apply", "fam/c apply"}; !slices.Equal(got, want) {
		t.Fatalf("events %v, want %v: only what changed moves", got, want)
	}

	// Restart one child by its id.
	fx.rec.reset()
	if err := fx.h.Restart(context.Background(), "fam/a"); err != nil {
		t.Fatal(err)
	}
	fx.settle()
	if got, want := fx.rec.events(), []string{"fam/a dispose", "fam/a apply"}; !slices.Equal(got, want) {
		t.Fatalf("restart of a child: %v, want %v", got, want)
	}

	// A child that does not check out fails alone, with its file's position.
	fx.rec.reset()
	fx.mustLoad(entry(`[{name: a, kind: probe, config: {tools: [a_tool]}}, {name: b, kind: probe, config: {count: -1}}, {name: c, kind: probe}]`, ""))
	fx.settle()
	if b := fx.state("fam/b"); b.State != host.Failed || !strings.Contains(b.Error, "servers.json:2:1: ") || !strings.Contains(b.Error, "config.count: must not be negative") {
		t.Fatalf("fam/b = %s %q", b.State, b.Error)
	}
	if fx.state("fam/a").State != host.Ready || fx.state("fam/c").State != host.Ready {
		t.Fatalf("siblings of the broken child: %s", states(fx.h.Snapshot()))
	}

	// A refused list changes nothing and says why, on the parent.
	fx.rec.reset()
	fx.mustLoad(entry(`[{name: a, kind: probe}]`, "    broken: \"servers.json:3:7: invalid JSON\"\n"))
	ev = nextOf(t, sub, func(ev host.Event) bool { return ev.Type == host.ReloadRejected && ev.Entry == "fam" })
	if ev.Err == nil || ev.Err.Error() != "servers.json:3:7: invalid JSON" {
		t.Fatalf("the rejection: %v", ev.Err)
	}
	snap = fx.settle()
	if got := ids(snap); !slices.Equal(got, []string{"solo", "fam", "fam/a", "fam/b", "fam/c"}) || len(fx.rec.events()) != 0 {
		t.Fatalf("a refused list changed something: %v, %v", got, fx.rec.events())
	}
	if note := fx.state("fam").Note; note != "servers.json:3:7: invalid JSON; its children are unchanged" {
		t.Fatalf("the parent's note: %q", note)
	}
	// The next list that applies clears the note.
	fx.mustLoad(entry(`[{name: a, kind: probe, config: {tools: [a_tool]}}, {name: c, kind: probe}]`, ""))
	fx.settle()
	if fam := fx.state("fam"); fam.Note != "" {
		t.Fatalf("the note stayed: %q", fam.Note)
	}
	if got := ids(fx.h.Snapshot()); !slices.Equal(got, []string{"solo", "fam", "fam/a", "fam/c"}) {
		t.Fatalf("after removing b: %v", got)
	}

	// An entry of the file may not take a child's id.
	if _, err := fx.load(entry(`[{name: a, kind: probe, config: {tools: [a_tool]}}, {name: c, kind: probe}]`, "- id: fam/a\n  name: probe\n")); err == nil ||
		!strings.Contains(err.Error(), `entry "fam/a": id: is the id of a child of entry "fam"`) {
		t.Fatalf("a file entry with a child's id: %v", err)
	}

	// An edit of the parent that re-creates it (a key that is not live)
	// keeps the children its new instance lists the same.
	fx.rec.reset()
	fx.mustLoad(entry(`[{name: a, kind: probe, config: {tools: [a_tool]}}, {name: c, kind: probe}]`, "    fail: \"\"\n  disabled: false\n"))
	fx.settle()
	if got, want := fx.rec.events(), []string{"fam dispose", "fam apply"}; !slices.Equal(got, want) {
		t.Fatalf("re-creating the parent: %v, want %v (its children untouched)", got, want)
	}

	// Disabled, the parent takes its children with it; enabled, they come
	// back.
	fx.rec.reset()
	fx.mustLoad(entry(`[{name: a, kind: probe, config: {tools: [a_tool]}}, {name: c, kind: probe}]`, "  disabled: true\n"))
	snap = fx.settle()
	if got := ids(snap); !slices.Equal(got, []string{"solo", "fam"}) || snap[1].State != host.Disabled {
		t.Fatalf("disabled parent: %s", states(snap))
	}
	if got := fx.rec.events(); !sameSet(got, []string{"fam dispose", "fam/a dispose", "fam/c dispose"}) {
		t.Fatalf("disabling the parent disposed %v", got)
	}
	if got := fx.tools.Names(); len(got) != 0 {
		t.Fatalf("the children's tools stayed: %v", got)
	}
	fx.mustLoad(entry(`[{name: a, kind: probe, config: {tools: [a_tool]}}, {name: c, kind: probe}]`, ""))
	if got := ids(fx.settle()); !slices.Equal(got, []string{"solo", "fam", "fam/a", "fam/c"}) {
		t.Fatalf("enabled again: %v", got)
	}

	// Restarting the parent restarts its children.
	fx.rec.reset()
	if err := fx.h.Restart(context.Background(), "fam"); err != nil {
		t.Fatal(err)
	}
	fx.settle()
	if got := fx.rec.events(); !sameSet(got, []string{"fam dispose", "fam/a dispose", "fam/c dispose", "fam apply", "fam/a apply", "fam/c apply"}) {
		t.Fatalf("restart of the parent: %v", got)
	}

	// Removed, the parent's children go.
	fx.rec.reset()
	fx.mustLoad("- id: solo\n  name: probe\n")
	if got := ids(fx.settle()); !slices.Equal(got, []string{"solo"}) {
		t.Fatalf("removed parent: %v", got)
	}
	if got := fx.rec.events(); !sameSet(got, []string{"fam dispose", "fam/a dispose", "fam/c dispose"}) {
		t.Fatalf("removing the parent disposed %v", got)
	}
}

// A parent that fails takes its children with it; Close disposes children
// too; a list that cannot be made is an error of SetChildren.
func TestChildEntriesFailAndClose(t *testing.T) {
	t.Parallel()
	fx := newFixture(t)
	fx.mustLoad("- id: fam\n  name: brood\n  config:\n    children: [{name: a, kind: probe}]\n    fail: gone\n")
	fx.waitState("fam", host.Failed)
	snap := fx.settle()
	if got := ids(snap); !slices.Equal(got, []string{"fam"}) || snap[0].Error != "gone" {
		t.Fatalf("a failed parent: %s", states(snap))
	}

	for _, tc := range []struct{ children, want string }{
		{`[{name: a, kind: probe}, {name: a, kind: probe}]`, `servers.json:2:1: entry "fam2/a": a second child named "a" (the first at servers.json:1:1)`},
		{`[{name: "x/y", kind: probe}]`, `"x/y" cannot name a child`},
		{`[{name: a, kind: nosuch}]`, `entry "fam2/a": name: unknown plugin "nosuch"`},
	} {
		fx.mustLoad("- id: fam2\n  name: brood\n  config:\n    children: " + tc.children + "\n")
		if s := fx.waitState("fam2", host.Failed); !strings.Contains(s.Error, tc.want) {
			t.Errorf("%s: %q, want %q", tc.children, s.Error, tc.want)
		}
	}

	fx.mustLoad("- id: fam\n  name: brood\n  config:\n    children: [{name: a, kind: probe}, {name: b, kind: probe, disabled: true}]\n")
	snap = fx.settle()
	if got := ids(snap); !slices.Equal(got, []string{"fam", "fam/a", "fam/b"}) || snap[2].State != host.Disabled {
		t.Fatalf("a disabled child: %s", states(snap))
	}
	fx.rec.reset()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := fx.h.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if got := fx.rec.events(); !sameSet(got, []string{"fam dispose", "fam/a dispose"}) {
		t.Fatalf("Close disposed %v", got)
	}
}

// nextOf returns the next event of sub that match accepts.
func nextOf(t *testing.T, sub *host.Subscription, match func(host.Event) bool) host.Event {
	t.Helper()
	timeout := time.After(10 * time.Second)
	for {
		select {
		case ev, ok := <-sub.C:
			if !ok {
				t.Fatal("the subscription ended")
			}
			if match(ev) {
				return ev
			}
		case <-timeout:
			t.Fatal("no such event within 10 s")
		}
	}
}
