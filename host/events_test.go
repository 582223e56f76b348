package host_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/harness-go/harness/host"
)

// A shelf is the smallest service whose content changes: a set of names,
// each put there by an entry's instance until its fiber is disposed. It
// records its changes with a host.Changes, as the tools registry does.
type shelf struct {
	mu      sync.Mutex
	names   map[string]bool
	changes host.Changes
}

func newShelf() *shelf { return &shelf{names: map[string]bool{}} }

func (s *shelf) Changes() *host.Changes { return &s.changes }

func (s *shelf) put(ctx *host.Context, name string) error {
	s.mu.Lock()
	s.names[name] = true
	s.changes.Record([]string{name}, nil)
	s.mu.Unlock()
	_, err := ctx.Defer("take "+name, func(context.Context) error {
		s.mu.Lock()
		defer s.mu.Unlock()
		delete(s.names, name)
		s.changes.Record(nil, []string{name})
		return nil
	})
	return err
}

const shelfService = "shelf"

// stocker puts its entry id on the shelf: in Apply, or (async) from a
// goroutine before it reports its initial work done. A stocker with
// provide: true provides a shelf of its own as "shelf2" and stocks it.
type stocker struct {
	Async   bool `yaml:"async"`
	Provide bool `yaml:"provide"`

	ctx *host.Context
}

func init() {
	host.Register(host.Kind{
		Name:     "stocker",
		Inject:   []string{shelfService},
		Provides: []string{"shelf2"},
		New:      func() host.Plugin { return &stocker{} },
	})
}

func (p *stocker) Apply(ctx *host.Context) error {
	p.ctx = ctx
	s, err := host.Use[*shelf](ctx, shelfService)
	if err != nil {
		return err
	}
	if p.Provide {
		own := newShelf()
		if err := ctx.Provide("shelf2", own); err != nil {
			return err
		}
		if err := own.put(ctx, "own-"+ctx.ID()); err != nil {
			return err
		}
	}
	if !p.Async {
		return s.put(ctx, ctx.ID())
	}
	done := ctx.Begin("stock")
	return ctx.Go("stock", func(context.Context) { done(s.put(ctx, ctx.ID())) })
}

// line is an event as the tests below compare it.
func line(ev host.Event) string {
	switch ev.Type {
	case host.ServiceChanged:
		s := fmt.Sprintf("%s v%d", ev.Service, ev.Version)
		for _, n := range ev.Added {
			s += " +" + n
		}
		for _, n := range ev.Removed {
			s += " -" + n
		}
		return s
	case host.Reloaded:
		return "reloaded"
	case host.ReloadRejected:
		return "rejected"
	}
	if ev.State == ev.Prev && !ev.Reloading && ev.Note == "" {
		return "" // nothing new (a stopped entry told again as it leaves the table)
	}
	return ev.Entry + " " + ev.State.String()
}

// collect reads sub until stop(line) holds for a line, and returns the
// lines up to it.
func collect(t *testing.T, sub *host.Subscription, stop func(string) bool) []string {
	t.Helper()
	timer := time.NewTimer(10 * time.Second)
	defer timer.Stop()
	var got []string
	for {
		select {
		case ev, ok := <-sub.C:
			if !ok {
				t.Fatalf("the stream ended after %q", got)
			}
			l := line(ev)
			if l == "" {
				continue
			}
			got = append(got, l)
			if stop(l) {
				return got
			}
		case <-timer.C:
			t.Fatalf("no end within 10s; got %q", got)
		}
	}
}

// quiet is a host's options without a log.
func quiet() host.Options { return host.Options{Logger: slog.New(slog.DiscardHandler)} }

func is(want string) func(string) bool { return func(l string) bool { return l == want } }

// What the stream promises about the order of a service's changes and the
// entries' events (docs/rfc/0001-host.md, "One event stream"): what an
// instance puts in a service comes after its entry's starting and before
// its ready, whether it does so in Apply or in its initial work; what it
// put there is gone before the event of the state its disposal leads to
// (stopped, failed, pending); every version comes once, in order.
func TestStreamOrdersServiceChangesWithEntries(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		file  string // loaded first, then the steps
		steps func(t *testing.T, h *host.Host)
		end   string // the last line to read
		skip  string // a line whose place is not promised
		want  []string
	}{{
		name: "registered in Apply",
		file: "- {id: a, name: stocker}\n",
		end:  "reloaded",
		want: []string{"a starting", "shelf v1 +a", "a ready", "reloaded"},
	}, {
		name: "registered by the initial work",
		file: "- {id: a, name: stocker, config: {async: true}}\n",
		end:  "a ready",
		skip: "reloaded", // Load returns while the work runs
		want: []string{"a starting", "shelf v1 +a", "a ready"},
	}, {
		name: "removed from the file",
		file: "- {id: a, name: stocker}\n- {id: b, name: stocker}\n",
		steps: func(t *testing.T, h *host.Host) {
			load(t, h, "- {id: b, name: stocker}\n")
		},
		end: "reloaded",
		want: []string{"a starting", "shelf v1 +a", "a ready", "b starting", "shelf v2 +b", "b ready", "reloaded",
			"shelf v3 -a", "a stopped", "reloaded"},
	}, {
		name: "restarted",
		file: "- {id: a, name: stocker}\n",
		steps: func(t *testing.T, h *host.Host) {
			if err := h.Restart(context.Background(), "a"); err != nil {
				t.Fatal(err)
			}
		},
		end:  "a ready",
		want: []string{"a starting", "shelf v1 +a", "a ready", "reloaded", "shelf v2 -a", "a stopped", "a starting", "shelf v3 +a", "a ready"},
	}, {
		name: "a provider's dependents go first",
		file: "- {id: p, name: stocker, config: {provide: true}}\n- {id: c, name: shelf2-user}\n",
		steps: func(t *testing.T, h *host.Host) {
			load(t, h, "- {id: c, name: shelf2-user}\n")
		},
		end: "reloaded",
		want: []string{"p starting", "shelf2 v1 +own-p", "shelf v1 +p", "p ready", "c starting", "shelf2 v2 +c", "c ready", "reloaded",
			// c is disposed first (it injects p's shelf), then p; the
			// states change once every disposal is done.
			"shelf2 v3 -c", "shelf v2 -p", "shelf2 v4 -own-p", "c pending", "p stopped", "reloaded"},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			h := host.New(quiet())
			t.Cleanup(func() { h.Close(context.Background()) })
			sh := newShelf()
			if err := h.Provide(shelfService, sh); err != nil {
				t.Fatal(err)
			}
			sub := h.Subscribe()
			defer sub.Close()
			load(t, h, tc.file)
			if err := h.Settle(context.Background()); err != nil {
				t.Fatal(err)
			}
			if tc.steps != nil {
				tc.steps(t, h)
			}
			// Read to the end of the steps: the last occurrence of end.
			n := strings.Count(strings.Join(tc.want, "\n")+"\n", tc.end+"\n")
			seen := 0
			got := collect(t, sub, func(l string) bool {
				if l == tc.end {
					seen++
				}
				return seen == n
			})
			got = slices.DeleteFunc(got, func(l string) bool { return l == tc.skip })
			if !slices.Equal(got, tc.want) {
				t.Fatalf("the stream told\n  %q\nwant\n  %q", got, tc.want)
			}
		})
	}
}

// shelf2User injects the shelf a stocker provides and stocks it.
type shelf2User struct{}

func init() {
	host.Register(host.Kind{
		Name:   "shelf2-user",
		Inject: []string{"shelf2"},
		New:    func() host.Plugin { return &shelf2User{} },
	})
}

func (shelf2User) Apply(ctx *host.Context) error {
	s, err := host.Use[*shelf](ctx, "shelf2")
	if err != nil {
		return err
	}
	return s.put(ctx, ctx.ID())
}

func load(t *testing.T, h *host.Host, src string) {
	t.Helper()
	f, err := host.ParseFile("cordis.yml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := h.Load(context.Background(), f); err != nil {
		t.Fatal(err)
	}
}

// Every subscriber sees the same events in the same order, also when
// services change from many goroutines at once; Seq numbers them 1, 2, …
// in that order, and the host's Seq is the last one's.
func TestStreamIsOneOrderForEverySubscriber(t *testing.T) {
	t.Parallel()
	h := host.New(quiet())
	t.Cleanup(func() { h.Close(context.Background()) })
	a, b := newShelf(), newShelf()
	if err := errors.Join(h.Provide("a", a), h.Provide("b", b)); err != nil {
		t.Fatal(err)
	}
	subs := []*host.Subscription{h.Subscribe(), h.Subscribe(), h.Subscribe()}
	const n = 200
	var wg sync.WaitGroup
	for _, s := range []*shelf{a, b} {
		wg.Go(func() {
			for i := range n {
				s.mu.Lock()
				s.changes.Record([]string{fmt.Sprint(i)}, nil)
				s.mu.Unlock()
			}
		})
	}
	wg.Wait()
	if seq := h.Seq(); seq != 2*n {
		t.Fatalf("host Seq %d after %d events", seq, 2*n)
	}
	var first []string
	for i, sub := range subs {
		got := make([]string, 0, 2*n)
		last := map[string]uint64{}
		for len(got) < 2*n {
			ev := <-sub.C
			if ev.Seq != uint64(len(got))+1 {
				t.Fatalf("subscriber %d: event %d has Seq %d", i, len(got)+1, ev.Seq)
			}
			if ev.Version != last[ev.Service]+1 {
				t.Fatalf("subscriber %d: %s v%d after v%d", i, ev.Service, ev.Version, last[ev.Service])
			}
			last[ev.Service] = ev.Version
			got = append(got, line(ev))
		}
		sub.Close()
		if i == 0 {
			first = got
		} else if !slices.Equal(got, first) {
			t.Fatalf("subscriber %d saw another order than subscriber 0", i)
		}
	}
}

// A service's record works without a host (its version and Changed), tells
// one host only, and stops telling a host once its provider withdrew it.
func TestChangesWithoutAndWithAHost(t *testing.T) {
	t.Parallel()
	sh := newShelf()
	ch := sh.changes.Changed()
	if v := sh.changes.Record([]string{"x"}, nil); v != 1 || sh.changes.Version() != 1 {
		t.Fatalf("Record without a host: version %d", v)
	}
	select {
	case <-ch:
	default:
		t.Fatal("Changed was not closed by a change")
	}

	h1, h2 := host.New(quiet()), host.New(quiet())
	t.Cleanup(func() { h1.Close(context.Background()); h2.Close(context.Background()) })
	if err := h1.Provide(shelfService, sh); err != nil {
		t.Fatal(err)
	}
	if err := h1.Provide("again", sh); err == nil || !strings.Contains(err.Error(), `already provided as "shelf"`) {
		t.Fatalf("the same record provided twice: %v", err)
	}
	if err := h2.Provide(shelfService, sh); err == nil || !strings.Contains(err.Error(), `already provided as "shelf"`) {
		t.Fatalf("the same record provided to a second host: %v", err)
	}
	// The refused provide left nothing behind: h2 can be given another.
	if err := h2.Provide(shelfService, newShelf()); err != nil {
		t.Fatalf("a provide after a refused one: %v", err)
	}
}

// An instance's service tells its host's stream while it is provided: the
// removals its disposal makes come before the service is withdrawn.
func TestChangesOfAnInstancesService(t *testing.T) {
	t.Parallel()
	h := host.New(quiet())
	t.Cleanup(func() { h.Close(context.Background()) })
	if err := h.Provide(shelfService, newShelf()); err != nil {
		t.Fatal(err)
	}
	load(t, h, "- {id: p, name: stocker, config: {provide: true}}\n")
	if err := h.Settle(context.Background()); err != nil {
		t.Fatal(err)
	}
	sub := h.Subscribe()
	defer sub.Close()
	load(t, h, "[]\n")
	got := collect(t, sub, is("reloaded"))
	want := []string{"shelf v2 -p", "shelf2 v2 -own-p", "p stopped", "reloaded"}
	if !slices.Equal(got, want) {
		t.Fatalf("got %q, want %q", got, want)
	}
}

// Subscriptions end cleanly: one closed (by its reader or by the host's
// Close) leaves no goroutine behind, with events still queued or not.
func TestSubscriptionsLeaveNoGoroutines(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	h := host.New(quiet())
	sh := newShelf()
	if err := h.Provide(shelfService, sh); err != nil {
		t.Fatal(err)
	}
	var subs []*host.Subscription
	for range 20 {
		subs = append(subs, h.Subscribe())
	}
	for i := range 50 {
		sh.mu.Lock()
		sh.changes.Record([]string{fmt.Sprint(i)}, nil)
		sh.mu.Unlock()
	}
	for _, s := range subs[:10] {
		s.Close() // with 50 events unread
	}
	if err := h.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	for _, s := range subs[10:] {
		for range s.C { // the host closed it: C ends
		}
		s.Close()
	}
	late := h.Subscribe() // after Close: already closed
	if _, open := <-late.C; open {
		t.Fatal("a subscription after Close delivered an event")
	}
	late.Close()
}

// Diff: a name removed and added again in one change was replaced in place
// and is in neither list; both come back sorted, without repeats.
func TestDiff(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name                   string
		added, removed         []string
		wantAdded, wantRemoved []string
	}{
		{"nothing", nil, nil, nil, nil},
		{"only added", []string{"b", "a", "b"}, nil, []string{"a", "b"}, nil},
		{"only removed", nil, []string{"z", "y"}, nil, []string{"y", "z"}},
		{"replaced in place", []string{"a", "b"}, []string{"b", "a"}, nil, nil},
		{"a swap", []string{"b", "c"}, []string{"a", "b"}, []string{"c"}, []string{"a"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			a, r := host.Diff(tc.added, tc.removed)
			if !slices.Equal(a, tc.wantAdded) || !slices.Equal(r, tc.wantRemoved) {
				t.Fatalf("Diff(%q, %q) = %q, %q; want %q, %q", tc.added, tc.removed, a, r, tc.wantAdded, tc.wantRemoved)
			}
		})
	}
}

func TestServiceChangedString(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		ev   host.Event
		want string
	}{
		{host.Event{Type: host.ServiceChanged, Service: "tools", Version: 3, Added: []string{"a", "b"}, Removed: []string{"c"}},
			`service "tools" changed (version 3): added a, b; removed c`},
		{host.Event{Type: host.ServiceChanged, Service: "tools", Version: 4, Removed: []string{"c"}},
			`service "tools" changed (version 4): removed c`},
		{host.Event{Type: host.ServiceChanged, Service: "resources", Version: 1},
			`service "resources" changed (version 1)`},
	} {
		if got := tc.ev.String(); got != tc.want {
			t.Errorf("String() = %q, want %q", got, tc.want)
		}
	}
}

// What a change costs the service that records it: the version, the event,
// and its queueing for each subscriber (none read here; Close drops them).
func BenchmarkRecord(b *testing.B) {
	for _, subs := range []int{0, 1, 4} {
		b.Run(fmt.Sprintf("%d subscribers", subs), func(b *testing.B) {
			h := host.New(quiet())
			defer h.Close(context.Background())
			sh := newShelf()
			if err := h.Provide(shelfService, sh); err != nil {
				b.Fatal(err)
			}
			for range subs {
				defer h.Subscribe().Close()
			}
			added := []string{"x"}
			b.ReportAllocs()
			for b.Loop() {
				sh.mu.Lock()
				sh.changes.Record(added, nil)
				sh.mu.Unlock()
			}
		})
	}
}
