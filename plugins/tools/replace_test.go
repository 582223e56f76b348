package tools_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/harness-go/harness/fiber"
	"github.com/harness-go/harness/plugins/tools"
)

// seen is what an observer recorded of one version.
type seen struct {
	version uint64
	names   []string
}

// record observes r and returns what it saw so far, each version with the
// names (of want) it held.
func record(t *testing.T, r *tools.Registry, want ...string) (got func() []seen, stop func()) {
	t.Helper()
	var views []seen
	stop = r.Observe(func(v tools.View) {
		s := seen{version: v.Version()}
		for _, n := range want {
			if tool, ok := v.Lookup(n); ok {
				if tool.Name != n {
					t.Errorf("View.Lookup(%q) returned %q", n, tool.Name)
				}
				s.names = append(s.names, n)
			}
		}
		if len(s.names) != v.Len() {
			t.Errorf("version %d: Len() = %d, names %q", v.Version(), v.Len(), s.names)
		}
		views = append(views, s)
	})
	return func() []seen { return views }, stop
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
	// Each Replace is one version: the observer never saw a mix or nothing.
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
		t.Fatalf("an observer that stopped was called: %v", got())
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
