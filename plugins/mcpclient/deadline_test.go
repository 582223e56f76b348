package mcpclient

import (
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
