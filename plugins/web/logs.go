package web

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// Logs keeps the harness's recent log records for its pages: the program
// adds [Logs.Handler] beside its own log handler, and every page that
// opens shows the last records, then the new ones as they come. While no
// page is served it takes nothing (its handler is disabled), so a harness
// without a page logs as it did.
type Logs struct {
	active atomic.Int32 // servers attached

	mu      sync.Mutex
	ring    []Record
	next    int // where the next record goes once the ring is full
	full    bool
	watches map[chan<- Record]struct{}
}

// logRing is how many records a page gets when it opens.
const logRing = 500

// Record is one log record as a page shows it.
type Record struct {
	Time  time.Time         `json:"time"`
	Level string            `json:"level"`
	Msg   string            `json:"msg"`
	Entry string            `json:"entry,omitempty"`
	Attrs map[string]string `json:"attrs,omitempty"`
}

// NewLogs returns an empty record keeper.
func NewLogs() *Logs { return &Logs{watches: map[chan<- Record]struct{}{}} }

// Handler returns the slog handler that feeds l, enabled for every level
// while a page is served. The program wraps it as its own handler (the
// secret set's redaction) and joins it to that one.
func (l *Logs) Handler() slog.Handler { return &logHandler{l: l} }

// attach makes the handler take records; the returned func undoes it.
func (l *Logs) attach() func() {
	l.active.Add(1)
	var once sync.Once
	return func() { once.Do(func() { l.active.Add(-1) }) }
}

// recent returns the records kept, oldest first.
func (l *Logs) recent() []Record {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.full {
		return append([]Record(nil), l.ring...)
	}
	return append(append([]Record(nil), l.ring[l.next:]...), l.ring[:l.next]...)
}

// watch sends every new record to c (dropped when c is full) until the
// returned func is called.
func (l *Logs) watch(c chan<- Record) func() {
	l.mu.Lock()
	l.watches[c] = struct{}{}
	l.mu.Unlock()
	return func() {
		l.mu.Lock()
		delete(l.watches, c)
		l.mu.Unlock()
	}
}

func (l *Logs) add(r Record) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.ring) < logRing {
		l.ring = append(l.ring, r)
	} else {
		l.ring[l.next] = r
		l.next, l.full = (l.next+1)%logRing, true
	}
	for c := range l.watches {
		select {
		case c <- r:
		default: // a page that cannot keep up gets a fresh snapshot
		}
	}
}

type logHandler struct {
	l      *Logs
	attrs  []slog.Attr
	groups string // "a.b." for attributes inside groups
}

func (h *logHandler) Enabled(context.Context, slog.Level) bool { return h.l.active.Load() > 0 }

func (h *logHandler) Handle(_ context.Context, r slog.Record) error {
	rec := Record{Time: r.Time, Level: r.Level.String(), Msg: r.Message}
	add := func(prefix string, a slog.Attr) {
		a.Value = a.Value.Resolve()
		if a.Key == "entry" && prefix == "" {
			rec.Entry = a.Value.String()
			return
		}
		if rec.Attrs == nil {
			rec.Attrs = map[string]string{}
		}
		rec.Attrs[prefix+a.Key] = a.Value.String()
	}
	var walk func(prefix string, a slog.Attr)
	walk = func(prefix string, a slog.Attr) {
		if a.Value.Kind() == slog.KindGroup {
			for _, g := range a.Value.Group() {
				walk(prefix+a.Key+".", g)
			}
			return
		}
		if a.Key != "" {
			add(prefix, a)
		}
	}
	for _, a := range h.attrs {
		walk("", a)
	}
	r.Attrs(func(a slog.Attr) bool {
		walk(h.groups, a)
		return true
	})
	h.l.add(rec)
	return nil
}

func (h *logHandler) WithAttrs(as []slog.Attr) slog.Handler {
	n := *h
	n.attrs = slices.Clone(h.attrs)
	for _, a := range as {
		a.Key = h.groups + a.Key
		n.attrs = append(n.attrs, a)
	}
	return &n
}

func (h *logHandler) WithGroup(name string) slog.Handler {
	n := *h
	n.groups = fmt.Sprintf("%s%s.", h.groups, name)
	return &n
}
