package host

import (
	"fmt"
	"slices"
	"sync"
)

// Changes is the change record of a service whose content changes (the
// tools registry, resources, prompts, the agents' directory): a version
// that goes up once per change, a channel closed at the next change, and —
// once the service is provided to a host ([Host.Provide],
// [Context.Provide], [Key.ProvideBy]) — a [ServiceChanged] event on that
// host's stream for every change, in the order of the versions, none
// coalesced. So whoever has the host reads one stream for entries, reloads
// and services alike (docs/rfc/0001-host.md, "One event stream"), and a
// host that runs without some service (the tools registry, say) knows
// nothing of it.
//
// A service keeps one Changes (the zero value is ready; never copy it)
// and shows it through a Changes method ([Versioned]); it calls
// [Changes.Record] once per change.
type Changes struct {
	mu      sync.Mutex
	version uint64
	next    chan struct{} // closed at the next change; nil until asked for
	host    *Host         // the host whose stream tells the changes, or nil
	service string        // the name the service is provided under there
}

// Versioned is a service with a change record. A host it is provided to
// puts its changes on the host's stream.
type Versioned interface {
	Changes() *Changes
}

// Record records one change of the service: the version goes up, the
// channel of [Changes.Changed] closes, and the subscribers of the host the
// service is provided to get a [ServiceChanged] event carrying the
// version, added and removed (the names of what the change added and
// removed, for a service that names its content; nil for one that does
// not). The service calls it with its own lock held, so that events come
// in version order and an event's names are those of its version. It
// returns the new version.
func (c *Changes) Record(added, removed []string) uint64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.version++
	if c.next != nil {
		close(c.next)
		c.next = nil
	}
	if c.host != nil {
		c.host.emit(Event{Type: ServiceChanged, Service: c.service, Version: c.version, Added: added, Removed: removed})
	}
	return c.version
}

// Version is the number of changes recorded.
func (c *Changes) Version() uint64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.version
}

// Changed returns a channel closed at the next change: for a reader that
// holds the service but not the host (the gateway), and only needs to wake
// up and read it again. Take the channel before reading the service, so
// that a change in between is not missed.
func (c *Changes) Changed() <-chan struct{} {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.next == nil {
		c.next = make(chan struct{})
	}
	return c.next
}

// attach makes h's stream tell the changes, under the service's name. A
// record tells one host: a second is an error.
func (c *Changes) attach(h *Host, name string) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.host != nil {
		return fmt.Errorf("service %q: the same value is already provided as %q (to this host or another): a service that records its changes has one provider", name, c.service)
	}
	c.host, c.service = h, name
	return nil
}

// detach stops telling h (the provider withdrew the service).
func (c *Changes) detach(h *Host) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.host == h {
		c.host, c.service = nil, ""
	}
}

// Diff turns the names one change removed and (re-)added into what it
// added and removed, for [Changes.Record]: a name in both was replaced in
// place and is in neither; both come back sorted, without repeats.
func Diff(added, removed []string) (plus, minus []string) {
	if len(added) == 0 || len(removed) == 0 {
		return sortedSet(added), sortedSet(removed)
	}
	was := make(map[string]bool, len(removed))
	for _, n := range removed {
		was[n] = true
	}
	now := make(map[string]bool, len(added))
	for _, n := range added {
		now[n] = true
	}
	for n := range now {
		if !was[n] {
			plus = append(plus, n)
		}
	}
	for n := range was {
		if !now[n] {
			minus = append(minus, n)
		}
	}
	slices.Sort(plus)
	slices.Sort(minus)
	return plus, minus
}

// sortedSet returns list sorted, without repeats, in a copy.
func sortedSet(list []string) []string {
	if len(list) == 0 {
		return nil
	}
	out := slices.Clone(list)
	slices.Sort(out)
	return slices.Compact(out)
}

// changesOf returns v's change record, or nil.
func changesOf(v any) *Changes {
	if ver, ok := v.(Versioned); ok {
		return ver.Changes()
	}
	return nil
}
