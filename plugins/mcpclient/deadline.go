package mcpclient

import (
	"sync"
	"time"
)

// deadlines times out a session's started calls with one timer for all of
// them (docs/rfc/0003-mcp-client.md, "Started calls"). A timer each would
// cost more than its allocation: arming a timer earlier than anything the
// Go runtime sleeps for wakes its network poller (a write, and another
// thread woken), and with one call at a time every call armed the earliest
// timer. The rules:
//
//  1. Calls are kept in the order of their deadlines. With one timeout per
//     server that is the order they start in, so add appends; a shorter
//     timeout walks back from the end.
//  2. The timer is set for the first deadline when nothing earlier is set,
//     and only then: a call that ends early leaves it where it is.
//  3. When it fires, every call whose deadline has passed leaves the queue
//     and is expired, outside the lock; the timer is set again for the
//     first call left, if any. With calls that end well before their
//     timeout, it fires about once per timeout, whatever the rate of calls.
//  4. remove takes a call out when it ends first, and reports whether it
//     did; once it has, the call is never expired. A call is expired at
//     most once.
//  5. stop, at the end of the session, stops the timer; calls added after
//     it are never expired (the connection's end answers them).
type deadlines struct {
	mu         sync.Mutex
	head, tail *deadline
	timer      *time.Timer // nil until the first call
	at         time.Time   // when timer fires; zero: not set
	stopped    bool
}

// deadline is one call's place in a deadlines queue.
type deadline struct {
	at         time.Time
	prev, next *deadline
	queued     bool
	owner      expirer
}

// expirer is what a deadline expires.
type expirer interface{ expire() }

// add queues d, with owner, to expire at (rule 1), and sets the timer when
// at is the earliest deadline it is not set for (rule 2).
func (q *deadlines) add(d *deadline, owner expirer, at time.Time) {
	d.at, d.owner = at, owner
	q.mu.Lock()
	defer q.mu.Unlock()
	after := q.tail
	for after != nil && after.at.After(at) {
		after = after.prev
	}
	d.prev = after
	if after == nil {
		d.next, q.head = q.head, d
	} else {
		d.next, after.next = after.next, d
	}
	if d.next == nil {
		q.tail = d
	} else {
		d.next.prev = d
	}
	d.queued = true
	if !q.stopped && (q.at.IsZero() || at.Before(q.at)) {
		q.arm(at)
	}
}

// remove takes d out of the queue; it reports whether d was there (false:
// it expired, or is expiring).
func (q *deadlines) remove(d *deadline) bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	if !d.queued {
		return false
	}
	q.unlink(d)
	return true
}

func (q *deadlines) unlink(d *deadline) {
	if d.prev == nil {
		q.head = d.next
	} else {
		d.prev.next = d.next
	}
	if d.next == nil {
		q.tail = d.prev
	} else {
		d.next.prev = d.prev
	}
	d.prev, d.next, d.queued = nil, nil, false
}

// arm sets the timer for at; mu is held.
func (q *deadlines) arm(at time.Time) {
	q.at = at
	wait := time.Until(at)
	if q.timer == nil {
		q.timer = time.AfterFunc(wait, q.fire)
		return
	}
	q.timer.Reset(wait)
}

// fire expires the calls whose deadline has passed (rule 3).
func (q *deadlines) fire() {
	now := time.Now()
	var due []expirer
	q.mu.Lock()
	q.at = time.Time{}
	for d := q.head; d != nil && !d.at.After(now); d = q.head {
		q.unlink(d)
		due = append(due, d.owner)
	}
	if q.head != nil && !q.stopped {
		q.arm(q.head.at)
	}
	q.mu.Unlock()
	for _, o := range due {
		o.expire()
	}
}

// stop stops the timer (rule 5).
func (q *deadlines) stop() {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.stopped = true
	if q.timer != nil {
		q.timer.Stop()
	}
}
