package mcpclient

import (
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// expiry records when a deadline expired, on a channel.
type expiry struct {
	name string
	got  chan string
}

func (e *expiry) expire() { e.got <- e.name }

// One timer times out every started call (deadline.go): in the order of
// their deadlines, whatever order they were added in; a call removed first
// never expires; a deadline earlier than the timer is set for moves it;
// the timer, set for a call that ended early, fires and is set again for
// the next; after stop nothing expires.
func TestDeadlines(t *testing.T) {
	t.Parallel()
	var q deadlines
	got := make(chan string, 8)
	now := time.Now()
	calls := map[string]*deadline{}
	add := func(name string, after time.Duration) {
		d := &deadline{}
		calls[name] = d
		q.add(d, &expiry{name, got}, now.Add(after))
	}
	next := func() string {
		t.Helper()
		select {
		case name := <-got:
			return name
		case <-time.After(waitTimeout):
			t.Fatal("nothing expired")
			return ""
		}
	}

	add("late", 300*time.Millisecond)
	add("early", 40*time.Millisecond) // before the timer: it is set again
	add("gone", 80*time.Millisecond)
	add("middle", 150*time.Millisecond)
	if !q.remove(calls["gone"]) {
		t.Fatal("remove of a queued call reported false")
	}
	for _, want := range []string{"early", "middle", "late"} {
		if name := next(); name != want {
			t.Fatalf("expired %q, want %q (order of deadlines; a removed call never expires)", name, want)
		}
		if want == "early" && time.Since(now) >= 300*time.Millisecond {
			t.Fatal("early expired with late: the timer was not moved for an earlier deadline")
		}
	}
	if q.remove(calls["late"]) || q.remove(calls["gone"]) {
		t.Error("remove of an expired or removed call reported true")
	}
	if q.head != nil || q.tail != nil {
		t.Error("the queue is not empty after every call left")
	}

	// The timer was set for "first", which ends early: it fires for
	// nothing and is set again for "second".
	now = time.Now()
	add("first", 30*time.Millisecond)
	add("second", 90*time.Millisecond)
	q.remove(calls["first"])
	if name := next(); name != "second" {
		t.Fatalf("expired %q, want second", name)
	}

	now = time.Now()
	add("after stop", 20*time.Millisecond)
	q.stop()
	add("added after stop", 10*time.Millisecond)
	select {
	case name := <-got:
		t.Fatalf("%q expired after stop", name)
	case <-time.After(100 * time.Millisecond):
	}
}

// counted counts its expiries, and says each on events.
type counted struct {
	n      atomic.Int32
	events chan<- struct{}
}

func (c *counted) expire() { c.n.Add(1); c.events <- struct{}{} }

// Under calls added and removed from many goroutines while the timer
// fires: a call that remove took out never expires, every other expires
// exactly once, and the queue ends empty.
func TestDeadlinesConcurrent(t *testing.T) {
	t.Parallel()
	var q deadlines
	const workers, each = 8, 200
	events := make(chan struct{}, workers*each)
	type call struct {
		d       deadline
		c       counted
		removed bool
	}
	calls := make([][]*call, workers)
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := rand.New(rand.NewPCG(uint64(w), 7))
			for i := range each {
				c := &call{c: counted{events: events}}
				q.add(&c.d, &c.c, time.Now().Add(time.Duration(r.IntN(20))*time.Millisecond))
				if i%2 == 0 {
					c.removed = q.remove(&c.d)
				}
				calls[w] = append(calls[w], c)
			}
		}()
	}
	wg.Wait()
	want := 0
	for _, cs := range calls {
		for _, c := range cs {
			if !c.removed {
				want++
			}
		}
	}
	for range want {
		select {
		case <-events:
		case <-time.After(waitTimeout):
			t.Fatalf("fewer than %d calls expired", want)
		}
	}
	for _, cs := range calls {
		for _, c := range cs {
			expiries := int32(1)
			if c.removed {
				expiries = 0
			}
			if n := c.c.n.Load(); n != expiries {
				t.Fatalf("a call (removed: %v) expired %d times, want %d", c.removed, n, expiries)
			}
		}
	}
	q.mu.Lock()
	empty := q.head == nil && q.tail == nil
	q.mu.Unlock()
	if !empty {
		t.Error("the queue is not empty after every call expired or was removed")
	}
}
