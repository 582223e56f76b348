package host

import (
	"fmt"
	"strings"
	"sync"
	"time"
)

// State is where an entry is, as people see it.
type State int

const (
	// Disabled entries have `disabled: true`; nothing runs.
	Disabled State = iota
	// Pending entries wait for services that are not provided yet.
	Pending
	// Starting entries are being applied, or their initial work (an MCP
	// connect and discovery, say) is running.
	Starting
	// Ready entries are applied and their initial work has finished.
	Ready
	// Reconnecting entries were ready and lost what they serve from (an MCP
	// server's connection); they are getting it back, and what they
	// registered stays meanwhile. The error says why.
	Reconnecting
	// Failed entries stopped with an error. The state is sticky: it changes
	// only when the entry's configuration changes or someone restarts it.
	Failed
	// Stopped entries were removed from the file or the host closed; an
	// entry in this state is gone from snapshots. Only events carry it.
	Stopped
	// NeedsLogin entries are applied but cannot serve until a person logs
	// in (an MCP server that asks for OAuth): settled, not failed, with
	// nothing registered; the error says which command logs in. The
	// instance stays, and is ready once the login is there.
	NeedsLogin
)

var stateNames = [...]string{"disabled", "pending", "starting", "ready", "reconnecting", "failed", "stopped", "needs-login"}

// LoginNeeded is an error an instance's initial work ends with (through
// the done function of [Context.Begin]) when it cannot serve until a person
// logs in: the entry settles in state needs-login instead of failing. Err
// says why and what to run.
type LoginNeeded struct{ Err error }

func (e *LoginNeeded) Error() string { return e.Err.Error() }
func (e *LoginNeeded) Unwrap() error { return e.Err }

func (s State) String() string {
	if int(s) < len(stateNames) {
		return stateNames[s]
	}
	return fmt.Sprintf("State(%d)", int(s))
}

// MarshalText makes states print as words in JSON.
func (s State) MarshalText() ([]byte, error) { return []byte(s.String()), nil }

// EntryStatus is a snapshot of one entry.
type EntryStatus struct {
	ID     string `json:"id"`
	Plugin string `json:"plugin"`
	// Parent is the id of the entry that owns this one (rule 13: an
	// mcp-servers entry's servers), "" for an entry of the file. A
	// snapshot lists children right after their parent.
	Parent  string    `json:"parent,omitempty"`
	State   State     `json:"state"`
	Since   time.Time `json:"since"`
	Error   string    `json:"error,omitempty"`
	Missing []string  `json:"missing,omitempty"` // services a pending entry waits for
	// Note says that a reload of the entry failed while the previous
	// instance kept serving ("reload failed: …; the previous instance is
	// still serving"). It stays until the configuration changes or someone
	// restarts the entry.
	Note string `json:"note,omitempty"`
	// Reloading is true while a new instance starts beside the one that
	// serves (make before break).
	Reloading bool `json:"reloading,omitempty"`
	// Settled is false while the entry may still change on its own (starting,
	// or pending on a service some starting entry will provide).
	Settled bool `json:"settled"`
	// Details is the plugin's own status (see [StatusReporter]).
	Details any `json:"details,omitempty"`
	Pos     Pos `json:"-"`

	err error
}

// Err returns the error of a failed entry.
func (s EntryStatus) Err() error { return s.err }

// EventType says what an [Event] reports.
type EventType int

const (
	// EntryChanged reports a state change of one entry.
	EntryChanged EventType = iota
	// Reloaded reports a configuration that was applied.
	Reloaded
	// ReloadRejected reports a configuration that was refused; nothing
	// changed.
	ReloadRejected
	// ServiceChanged reports a change of a service's content (a tool
	// registered or removed, say): see [Changes].
	ServiceChanged
)

// Event is one thing that happened in a host, as [Host.Subscribe] delivers
// it: the console, the live lines, the web page and tests consume this
// stream. The host logs the same transitions itself, where it emits them
// (setState).
//
// Every subscriber sees the events in one order, the order in which they
// happened: an event is queued to every subscription at the moment of its
// change. So a service change a plugin makes before it reports (returns
// from Apply, calls a done function of [Context.Begin], Reconnecting)
// comes before the entry's event that report causes (ready), and the
// removal of what an instance registered comes before the event of the
// state its disposal leads to (stopped, failed, pending). A service's
// changes come in the order of its versions, every version once.
type Event struct {
	Type EventType
	Time time.Time
	// Seq numbers the host's events from 1, in the order they were
	// emitted: a consumer that has seen Seq n has seen all that
	// [Host.Seq] said had happened when it returned n (see [Host.Seq]).
	Seq uint64

	// For EntryChanged. State may equal Prev: a reload began beside the
	// instance that serves (Reloading), or failed (Note).
	Entry     string
	Plugin    string
	State     State
	Prev      State
	Err       error
	Missing   []string
	Note      string
	Reloading bool

	// For Reloaded and ReloadRejected.
	Plan *Plan

	// For ServiceChanged: the service's name (as provided), its version
	// after the change, and the names the change added and removed, for a
	// service that names its content (the tools', the prompts', the
	// servers' of resources); a name replaced in place is in neither.
	Service        string
	Version        uint64
	Added, Removed []string
}

// Reason is the error of an EntryChanged event without the "entry <id>: "
// prefix the host puts on it, for display next to the id.
func (e Event) Reason() string {
	if e.Err == nil {
		return ""
	}
	return strings.TrimPrefix(e.Err.Error(), fmt.Sprintf("entry %q: ", e.Entry))
}

func (e Event) String() string {
	switch e.Type {
	case Reloaded:
		return "reloaded: " + e.Plan.String()
	case ReloadRejected:
		return fmt.Sprintf("reload rejected: %v", e.Err)
	case ServiceChanged:
		var parts []string
		if len(e.Added) > 0 {
			parts = append(parts, "added "+strings.Join(e.Added, ", "))
		}
		if len(e.Removed) > 0 {
			parts = append(parts, "removed "+strings.Join(e.Removed, ", "))
		}
		s := fmt.Sprintf("service %q changed (version %d)", e.Service, e.Version)
		if len(parts) > 0 {
			s += ": " + strings.Join(parts, "; ")
		}
		return s
	}
	s := fmt.Sprintf("entry %q: %s → %s", e.Entry, e.Prev, e.State)
	if e.Err != nil {
		s += ": " + e.Err.Error()
	}
	if e.Reloading {
		s += " (reloading)"
	}
	if e.Note != "" {
		s += "; " + e.Note
	}
	return s
}

// Subscription delivers events in order. Events queue without bound, so a
// slow reader never blocks the host; call Close when done.
type Subscription struct {
	C <-chan Event

	c      chan Event
	mu     sync.Mutex
	queue  []Event
	wake   chan struct{}
	closed chan struct{}
	once   sync.Once
	done   chan struct{}
	unsub  func()
}

func newSubscription(unsub func()) *Subscription {
	c := make(chan Event)
	s := &Subscription{C: c, c: c, wake: make(chan struct{}, 1), closed: make(chan struct{}), done: make(chan struct{}), unsub: unsub}
	go s.pump()
	return s
}

func (s *Subscription) push(e Event) {
	s.mu.Lock()
	s.queue = append(s.queue, e)
	s.mu.Unlock()
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

func (s *Subscription) pump() {
	defer close(s.done)
	defer close(s.c)
	for {
		s.mu.Lock()
		if len(s.queue) == 0 {
			s.mu.Unlock()
			select {
			case <-s.wake:
				continue
			case <-s.closed:
				return
			}
		}
		e := s.queue[0]
		s.queue[0] = Event{}
		s.queue = s.queue[1:]
		s.mu.Unlock()
		select {
		case s.c <- e:
		case <-s.closed:
			return
		}
	}
}

// Close stops the subscription and closes C.
func (s *Subscription) Close() {
	s.once.Do(func() {
		s.unsub()
		close(s.closed)
		<-s.done
	})
}
