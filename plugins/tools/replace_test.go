package tools_test

import (
	"context"
	"errors"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/harness-go/harness/fiber"
	"github.com/harness-go/harness/host"
	"github.com/harness-go/harness/plugins/tools"
)

// seen is what the host's stream told of one version.
type seen struct {
	version uint64
	names   []string
}

// record provides r to a host and follows its stream: got returns, for
// each version of r since, the names (of want) its set held, read from the
// events' added and removed names alone, and checks that they add up to
// r's set. stop ends the subscription.
func record(t *testing.T, r *tools.Registry, want ...string) (got func() []seen, stop func()) {
	t.Helper()
	h := host.New(host.Options{})
	t.Cleanup(func() { h.Close(context.Background()) })
	if err := tools.Key.ProvideBy(h, r); err != nil {
		t.Fatal(err)
	}
	sub := h.Subscribe()
	set := map[string]bool{}
	for _, n := range r.Names() {
		set[n] = true
	}
	last := r.Version()
	var views []seen
	stopped := false
	got = func() []seen {
		t.Helper()
		for !stopped && last < r.Version() {
			ev := <-sub.C
			if ev.Type != host.ServiceChanged || ev.Service != tools.Service {
				continue
			}
			if ev.Version != last+1 {
				t.Fatalf("version %d came after %d", ev.Version, last)
			}
			last = ev.Version
			for _, n := range ev.Removed {
				delete(set, n)
			}
			for _, n := range ev.Added {
				set[n] = true
			}
			s := seen{version: ev.Version}
			for _, n := range want {
				if set[n] {
					s.names = append(s.names, n)
				}
			}
			views = append(views, s)
		}
		if !stopped {
			if names := slices.Sorted(maps.Keys(set)); !slices.Equal(names, r.Names()) {
				t.Errorf("the events add up to %q, the registry holds %q", names, r.Names())
			}
		}
		return views
	}
	return got, func() { stopped = true; sub.Close() }
}

func TestReplaceSwapsInOneStep(t *testing.T) {
	t.Parallel()
	r := tools.New()
	f := newFiber(t, "f")
	got, stop := record(t, r, "a", "b", "c")

	old, err := r.Replace(f, nil, tool("a"), tool("b"))
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(old.Names(), []string{"a", "b"}) {
		t.Fatalf("Names() = %q", old.Names())
	}
	next, err := r.Replace(f, old, tool("b"), tool("c"))
	if err != nil {
		t.Fatal(err)
	}
	wantNames(t, r, "b", "c")
	// Each Replace is one version: the stream never told a mix or nothing.
	want := []seen{{1, []string{"a", "b"}}, {2, []string{"b", "c"}}}
	if v := got(); !slices.EqualFunc(v, want, func(a, b seen) bool { return a.version == b.version && slices.Equal(a.names, b.names) }) {
		t.Fatalf("observed %v, want %v", v, want)
	}

	// The replaced set let go of its disposer: releasing it changes nothing.
	release(t, old.Release)
	wantNames(t, r, "b", "c")
	release(t, next.Release)
	wantNames(t, r)
	if n := len(got()); n != 3 || got()[2].names != nil {
		t.Fatalf("after release observed %v", got())
	}

	stop()
	mustRegister(t, r, f, tool("a"))
	if n := len(got()); n != 3 {
		t.Fatalf("a closed subscription still recorded: %v", got())
	}
}

func TestReplaceWithAConflictRemovesTheOldGeneration(t *testing.T) {
	t.Parallel()
	r := tools.New()
	mine, other := newFiber(t, "mine"), newFiber(t, "other")
	mustRegister(t, r, other, tool("x"))
	old, err := r.Replace(mine, nil, tool("a"))
	if err != nil {
		t.Fatal(err)
	}
	got, stop := record(t, r, "a", "x")
	defer stop()

	if _, err := r.Replace(mine, old, tool("a"), tool("x")); !errors.Is(err, tools.ErrConflict) || !strings.Contains(err.Error(), `"x"`) {
		t.Fatalf("Replace over another's tool: %v, want ErrConflict naming x", err)
	}
	// Never half a generation: the old one is gone, the new one not there.
	wantNames(t, r, "x")
	if v := got(); len(v) != 1 || !slices.Equal(v[0].names, []string{"x"}) {
		t.Fatalf("observed %v", v)
	}
	// The old set's disposer left the fiber with it.
	before := r.Version()
	dispose(t, mine)
	if r.Version() != before {
		t.Fatal("disposing the fiber changed the registry: the old set's disposer stayed")
	}
}

func TestReplaceWithAnInvalidBatchKeepsTheOld(t *testing.T) {
	t.Parallel()
	r := tools.New()
	f := newFiber(t, "f")
	old, err := r.Replace(f, nil, tool("a"))
	if err != nil {
		t.Fatal(err)
	}
	before := r.Version()
	if _, err := r.Replace(f, old, tool("b"), tools.Tool{Name: "c"}); err == nil || !strings.Contains(err.Error(), `tool "c": no executor`) {
		t.Fatalf("Replace with a tool without executor: %v", err)
	}
	wantNames(t, r, "a")
	if r.Version() != before {
		t.Fatal("a rejected batch changed the registry")
	}
	release(t, old.Release)
	wantNames(t, r)
}

func TestReplaceOnADisposedFiber(t *testing.T) {
	t.Parallel()
	r := tools.New()
	f := fiber.New(context.Background(), "gone")
	dispose(t, f)
	if _, err := r.Replace(f, nil, tool("a")); err == nil || !strings.Contains(err.Error(), "register tools:") {
		t.Fatalf("Replace on a disposed fiber: %v", err)
	}
	wantNames(t, r)
}
