package mcpserver

import (
	"context"
	"encoding/json"
	"sync"
	"sync/atomic"
	"time"

	"github.com/harness-go/harness/plugins/tools"
)

// request is one request of a stdio client in flight, and the context it
// is served with: one value per request, where a chain of
// context.WithCancel and three context.WithValue, and the bridge's
// context.AfterFunc on top, cost a call nine allocations and two maps of
// children (docs/rfc/0005-gateway.md, "One value per request"). The rules:
//
//  1. It ends — Done closes, Err is context.Canceled — when it is
//     answered (stdioConn.forget), when the client cancels it
//     (notifications/cancelled, which also sets cancelled), or when the
//     connection ends (stdioConn.endAll ends every request in flight),
//     whichever comes first. Cause is then the connection's cause, if it
//     has one, else Err. Before that, Err is nil.
//  2. Its values are its outcome, the values of its call when the fast
//     path starts one (tools.CallValues: its front, the raw result), and
//     then the connection's.
//  3. AfterFunc(f) runs f on a goroutine of its own when it ends, or at
//     once if it has: what context.AfterFunc does with it, without the
//     context of its own that makes for every call. The bridge asks for it
//     directly (mcp-client's startCall); contexts derived from it get it
//     through context's propagation.
//  4. Its deadline is the connection's (none).
type request struct {
	conn      *stdioConn
	method    string
	cancelled atomic.Bool // by the client's notifications/cancelled

	key     string          // its id's IDKey: its entry among the requests in flight
	id      json.RawMessage // its id, for a fast call's answer (stdioConn.start)
	outcome outcome
	front   relay            // the call's front, for a fast call
	call    tools.CallValues // what the fast call's context says to its tool
	first   afterEnd         // the first AfterFunc, without an allocation
	mu      sync.Mutex       // guards what follows
	err     error            // why it ended; nil while it runs
	done    chan struct{}    // made by Done, closed at the end
	afters  []*afterEnd      // the AfterFuncs not yet run nor stopped
	afterOf [1]*afterEnd     // afters' first backing array
}

var _ context.Context = (*request)(nil)

func newRequest(c *stdioConn, method, key string) *request {
	r := &request{conn: c, method: method, key: key}
	r.afters = r.afterOf[:0]
	return r
}

// answer is the done of a fast call started on r (stdioConn.answered).
func (r *request) answer(res tools.Result) { r.conn.answered(r, res) }

func (r *request) Deadline() (time.Time, bool) { return r.conn.base.Deadline() }

func (r *request) Done() <-chan struct{} {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.done == nil {
		r.done = make(chan struct{})
		if r.err != nil {
			close(r.done)
		}
	}
	return r.done
}

func (r *request) Err() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.err
}

func (r *request) Value(key any) any {
	if _, ok := key.(outcomeKey); ok {
		return &r.outcome
	}
	if v, ok := r.call.Lookup(key); ok {
		return v
	}
	return r.conn.base.Value(key)
}

// AfterFunc arranges for f to run on a goroutine of its own once r ends
// (rule 3); stop, as context.AfterFunc's, reports whether it stopped f
// from running.
func (r *request) AfterFunc(f func()) (stop func() bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.err != nil {
		go f()
		return func() bool { return false }
	}
	a := &r.first
	if a.r != nil {
		a = &afterEnd{}
	}
	a.r, a.f = r, f
	r.afters = append(r.afters, a)
	return a.stop
}

// end ends r (rule 1); a second end changes nothing.
func (r *request) end() {
	r.mu.Lock()
	if r.err != nil {
		r.mu.Unlock()
		return
	}
	r.err = context.Canceled
	if r.done != nil {
		close(r.done)
	}
	afters := r.afters
	r.afters = nil
	r.mu.Unlock()
	for _, a := range afters {
		go a.f()
	}
}

// afterEnd is one function AfterFunc registered.
type afterEnd struct {
	r *request
	f func()
}

// stop unregisters a; false when it already ran or was stopped.
func (a *afterEnd) stop() bool {
	r := a.r
	r.mu.Lock()
	defer r.mu.Unlock()
	for i, b := range r.afters {
		if b == a {
			r.afters = append(r.afters[:i], r.afters[i+1:]...)
			return true
		}
	}
	return false
}
