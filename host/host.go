package host

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"time"

	"github.com/harness-go/harness/fiber"
	"github.com/harness-go/harness/host/jsexpr"
	"github.com/harness-go/harness/host/secret"
)

// Options configure a [Host]. The zero value is usable.
type Options struct {
	// Logger receives the host's records; every record about an entry
	// carries its id as "entry". Default: slog.Default().
	Logger *slog.Logger
	// Env is what !!js expressions read. Default: the process environment and
	// working directory.
	Env *jsexpr.Env
	// DisposeTimeout bounds the disposal of one instance. Default 10s.
	DisposeTimeout time.Duration
	// Secrets is the host's secret set (see package secret): the values of
	// secret fields and of what !!js read join it, and the host's logger
	// redacts them. Default: a new, empty set. The caller seeds it with the
	// ambient credentials it knows of ([secret.Set.AddEnviron]).
	Secrets *secret.Set
	// SlowHook is how long Apply, TakeOver or Reconfigure may run before the
	// host logs a warning naming the entry and the method: they run on the
	// host's goroutine and must not block, and every change of the host
	// waits behind one that does. Default 5s.
	SlowHook time.Duration
}

// DefaultSlowHook is [Options.SlowHook] when it is zero.
const DefaultSlowHook = 5 * time.Second

// DefaultDisposeTimeout bounds the disposal of one instance when
// [Options.DisposeTimeout] is zero.
const DefaultDisposeTimeout = 10 * time.Second

// Host runs plugin instances described by a cordis.yml. All methods are safe
// for concurrent use. Changes (loads, restarts, failures reported by
// plugins) are carried out one at a time, in order, by the host's own
// goroutine; reads (snapshots, waits, subscriptions) never wait for them.
type Host struct {
	log            *slog.Logger
	env            jsexpr.Env
	disposeTimeout time.Duration
	slowHook       time.Duration
	secrets        *secret.Set
	root           *fiber.Fiber

	mu        sync.Mutex
	file      *File
	entries   map[string]*entry
	order     []string
	services  map[string]*service
	perHost   map[any]any // the per-host store (PerHost)
	perHostIn []any       // its keys, in the order they were created
	subs      map[*Subscription]struct{}
	seq       uint64 // the Seq of the last event emitted
	closed    bool
	// readUnset records the services an entry read with Key.Provided
	// before anyone provided them (name → entry id): the host refuses to
	// provide one later.
	readUnset map[string]string

	opsMu   sync.Mutex
	ops     []func()
	opsWake chan struct{}
	opsDone chan struct{}

	gen        uint64             // numbers the fibers of successors; host goroutine only
	retiring   sync.WaitGroup     // replaced instances draining and disposing
	drainCtx   context.Context    // ends when Close begins: drains stop
	stopDrains context.CancelFunc // ends drainCtx
}

type entry struct {
	spec    *Entry
	kind    *Kind
	last    Plugin // the plugin of the last instance, for status after it stopped
	state   State
	since   time.Time
	err     error
	missing []string
	inst    *instance // the instance that serves (or starts, when fresh)
	next    *instance // a successor starting beside inst (make before break)
	note    error     // a reload that failed while inst kept serving
	// parent is the entry that owns this one (rule 13), nil for an entry
	// of the file; children are the entries this one owns, in its order.
	parent   *entry
	children []*entry
}

type instance struct {
	entry    *entry
	spec     *Entry // the configuration it was applied with (the entry's may change under it)
	kind     *Kind
	plugin   Plugin
	fiber    *fiber.Fiber
	log      *slog.Logger
	begun    int
	applying bool
	pred     *instance // for a successor: the instance it is to replace
	login    error     // its initial work ended needing a login (LoginNeeded)
	unset    []Unset   // the !!js values left out of its configuration
	// listing counts the lists of children it set that the host has not
	// applied yet: its entry is not settled meanwhile (rule 13).
	listing int
}

type service struct {
	value any
	owner *instance // nil for a service the host itself provides
}

// New returns a host with no entries. Close it when done.
func New(opts Options) *Host {
	h := &Host{
		log:            opts.Logger,
		disposeTimeout: opts.DisposeTimeout,
		slowHook:       cmp.Or(opts.SlowHook, DefaultSlowHook),
		secrets:        opts.Secrets,
		entries:        map[string]*entry{},
		services:       map[string]*service{},
		perHost:        map[any]any{},
		subs:           map[*Subscription]struct{}{},
		readUnset:      map[string]string{},
		opsWake:        make(chan struct{}, 1),
		opsDone:        make(chan struct{}),
	}
	if h.log == nil {
		h.log = slog.Default()
	}
	if h.secrets == nil {
		h.secrets = secret.New()
	}
	h.log = slog.New(h.secrets.Handler(h.log.Handler()))
	if h.disposeTimeout <= 0 {
		h.disposeTimeout = DefaultDisposeTimeout
	}
	if opts.Env != nil {
		h.env = *opts.Env
	} else {
		h.env = ProcessEnv()
	}
	h.root = fiber.New(context.Background(), "host", fiber.WithFaultHandler(h.fault))
	h.drainCtx, h.stopDrains = context.WithCancel(context.Background())
	go h.run()
	return h
}

// Secrets returns the host's secret set (see [Options.Secrets]).
func (h *Host) Secrets() *secret.Set { return h.secrets }

// ProcessEnv is the environment !!js reads by default: the process's
// variables, working directory and executable.
func ProcessEnv() jsexpr.Env { return jsexpr.OSEnv() }

// Provide makes a service available to every instance, for the life of the
// host (the built-in services, such as tools). A name already provided — by
// the host or by an instance — is an error: a service has one provider.
//
// A [Versioned] service's changes go on the host's stream from then on
// ([ServiceChanged]). A program's settings for its plugins are provided
// here too, before a load, and read with [Key.Provided]: providing one
// that an entry already read as not provided is an error, for the entry
// went on with its default.
func (h *Host) Provide(name string, v any) error {
	svc := &service{value: v}
	h.mu.Lock()
	err := h.claimLocked(name, svc)
	if id := h.readUnset[name]; err == nil && id != "" {
		delete(h.services, name)
		err = fmt.Errorf("service %q is provided after entry %q read it and went on without it: provide a program's settings before loading a configuration", name, id)
	}
	h.mu.Unlock()
	if err == nil {
		err = h.attach(name, svc)
	}
	if err != nil {
		return err
	}
	h.post(h.wakePending)
	return nil
}

// attach puts the changes of svc's value, if it is a [Versioned] service,
// on h's stream under name, once svc provides name. It runs without h.mu
// (a change holds the record's lock, then h.mu); if the record already
// tells someone else, svc stops providing name.
func (h *Host) attach(name string, svc *service) error {
	c := changesOf(svc.value)
	if c == nil {
		return nil
	}
	err := c.attach(h, name)
	if err != nil {
		h.mu.Lock()
		if h.services[name] == svc {
			delete(h.services, name)
		}
		h.mu.Unlock()
	}
	return err
}

// detach undoes attach.
func (h *Host) detach(v any) {
	if c := changesOf(v); c != nil {
		c.detach(h)
	}
}

// claimLocked makes svc the provider of name, unless another provides it.
func (h *Host) claimLocked(name string, svc *service) error {
	if s := h.services[name]; s != nil {
		if s.owner != nil {
			return fmt.Errorf("service %q is already provided by entry %q", name, s.owner.entry.spec.ID)
		}
		return fmt.Errorf("service %q is already provided by the host", name)
	}
	h.services[name] = svc
	return nil
}

// PerHost returns the value of the host's per-host store under key,
// creating it with newValue on first use: the state a plugin keeps once
// per host rather than in a package variable (see [Context.PerHost]).
// newValue runs under the host's lock: it must not call the host. It is
// no place for a program's settings, which it provides ([Key.ProvideBy])
// so that a second one is an error.
func (h *Host) PerHost(key any, newValue func() any) any {
	h.mu.Lock()
	defer h.mu.Unlock()
	v, ok := h.perHost[key]
	if !ok {
		v = newValue()
		h.perHost[key] = v
		h.perHostIn = append(h.perHostIn, key)
	}
	return v
}

// --- the operation queue ----------------------------------------------------

// post queues fn to run on the host's goroutine. It never blocks, so plugins
// can report from anywhere, including from work the host is disposing.
func (h *Host) post(fn func()) {
	h.opsMu.Lock()
	h.ops = append(h.ops, fn)
	h.opsMu.Unlock()
	select {
	case h.opsWake <- struct{}{}:
	default:
	}
}

// do runs fn on the host's goroutine and waits for its result or for ctx.
// If ctx ends before fn's turn comes, fn does not run; once it runs, it
// completes (the caller may have stopped waiting).
func (h *Host) do(ctx context.Context, fn func() error) error {
	result := make(chan error, 1)
	h.post(func() {
		if ctx.Err() != nil {
			result <- context.Cause(ctx)
			return
		}
		result <- fn()
	})
	select {
	case err := <-result:
		return err
	case <-ctx.Done():
		return context.Cause(ctx)
	case <-h.opsDone:
		// The host's goroutine sends an operation's result before it can
		// end: an operation that ran (Close itself) reports what it did.
		select {
		case err := <-result:
			return err
		default:
			return ErrClosed
		}
	}
}

func (h *Host) run() {
	defer close(h.opsDone)
	for {
		h.opsMu.Lock()
		ops := h.ops
		h.ops = nil
		h.opsMu.Unlock()
		for _, op := range ops {
			op()
		}
		h.mu.Lock()
		closed := h.closed
		h.mu.Unlock()
		if closed {
			return
		}
		<-h.opsWake
	}
}

// ErrClosed is returned by operations on a closed host.
var ErrClosed = errors.New("host closed")

// ErrUnknownEntry is returned by [Host.Restart] for an id that is not in the
// configuration.
var ErrUnknownEntry = errors.New("unknown entry")

// --- loading ------------------------------------------------------------------

// Load applies a parsed cordis.yml: it checks every entry (plugin kind,
// strict decoding, validation) and, if all pass, reconciles the running
// entries with the file (see [Reconcile]). A file with problems changes
// nothing; the error is a *LoadError listing each problem with its position.
// If ctx ends before the load's turn comes (the host carries out one change
// at a time), nothing is loaded; a load that began completes.
func (h *Host) Load(ctx context.Context, f *File) (*Plan, error) {
	type result struct {
		plan *Plan
		err  error
	}
	done := make(chan result, 1)
	if err := h.do(ctx, func() error {
		p, err := h.load(f)
		done <- result{p, err}
		return nil
	}); err != nil {
		return nil, err
	}
	r := <-done
	return r.plan, r.err
}

// load checks f and carries out the reload: Reconcile plans it, facts
// gathers what the running entries allow, decide turns both into steps,
// and load executes them (stop, swap the tables, start or replace).
func (h *Host) load(f *File) (*Plan, error) {
	h.mu.Lock()
	closed := h.closed
	h.mu.Unlock()
	if closed {
		return nil, ErrClosed
	}
	checked := check(f, h.env, false, h.secrets)
	if problems := checked.errors; len(problems) > 0 {
		err := &LoadError{Problems: problems}
		h.log.Info("configuration refused; nothing changed", "file", f.Path, "err", err)
		h.emit(Event{Type: ReloadRejected, Err: err})
		return nil, err
	}
	var running []*Entry
	if h.file != nil {
		running = h.file.Entries
	}
	if err := h.childClash(f.Entries); err != nil {
		h.log.Info("configuration refused; nothing changed", "file", f.Path, "err", err)
		h.emit(Event{Type: ReloadRejected, Err: err})
		return nil, err
	}
	plan := Reconcile(running, f.Entries)
	st := decide(plan, h.gatherFacts(plan, f.Entries, checked.plugins))
	plan.Fallback = st.fallback
	h.stopFor(st, h.orphans(st, f.Entries))
	order := h.swap(f, st)
	h.startFor(plan, st, order)
	h.wakePending()
	if !plan.Empty() {
		h.log.Info("configuration applied", "file", f.Path, "changes", plan.String())
	}
	h.emit(Event{Type: Reloaded, Plan: plan})
	return plan, nil
}

// gatherFacts gathers what decide needs of the running entries. It tries the
// live updates of the plan first: an instance that takes the live settings
// has applied them.
func (h *Host) gatherFacts(plan *Plan, list []*Entry, decoded map[string]decodedEntry) facts {
	fs := facts{updated: map[string]bool{}, serving: map[string]bool{}, claimed: map[string]bool{}}
	specs := make(map[string]*Entry, len(list))
	for _, spec := range list {
		specs[spec.ID] = spec
	}
	for _, id := range plan.Update {
		fs.updated[id] = h.reconfigure(h.entries[id], specs[id])
	}
	for _, id := range plan.Replace {
		e := h.entries[id]
		fs.serving[id] = serving(e)
		fs.claimed[id] = fs.serving[id] && h.claimed(e, decoded)
	}
	return fs
}

// stopFor carries out the stops of st. Every disposal finishes before any
// apply starts: that of a successor still starting for an entry replaced
// again too (it never served, and may hold a value an entry of the new
// file claims). The children of orphans stop with them (rule 13), and
// orphans lose them.
func (h *Host) stopFor(st steps, orphans []*entry) {
	for id := range st.replace {
		h.dropNext(h.entries[id])
	}
	var stops []stopping
	for _, id := range st.stop {
		if e := h.entries[id]; e != nil {
			stops = append(stops, stopping{e: e, next: Stopped})
		}
	}
	for _, e := range orphans {
		for _, c := range e.descendants() {
			stops = append(stops, stopping{e: c, next: Stopped})
		}
	}
	h.stopAll(stops, nil)
	h.mu.Lock()
	for _, e := range orphans {
		e.children = nil
	}
	h.mu.Unlock()
}

// swap makes f the host's file: its entries, in its order, keep their
// running state; entries it no longer has are stopped, and those it
// disables are disabled. It returns the file's order of ids.
func (h *Host) swap(f *File, st steps) []string {
	h.mu.Lock()
	next := make(map[string]*entry, len(f.Entries))
	order := make([]string, 0, len(f.Entries))
	var gone []*entry
	for _, spec := range f.Entries {
		kind, _ := LookupKind(spec.Name)
		e := h.entries[spec.ID]
		if e == nil {
			e = &entry{state: Stopped}
		}
		if e.spec != nil && e.spec.digest != spec.digest && !st.keepLast[spec.ID] {
			e.last = nil
		}
		e.spec, e.kind = spec, kind
		next[spec.ID] = e
		order = append(order, spec.ID)
	}
	for _, id := range order {
		// The children of an entry kept stay its (rule 13).
		for _, c := range next[id].descendants() {
			next[c.spec.ID] = c
		}
	}
	for id, e := range h.entries {
		if next[id] == nil {
			gone = append(gone, e)
		}
	}
	h.file, h.entries, h.order = f, next, order
	h.mu.Unlock()
	for _, e := range gone {
		h.setState(e, Stopped, nil, nil)
	}
	for _, id := range order {
		if e := next[id]; e.spec.Disabled && e.state != Disabled {
			h.setState(e, Disabled, nil, nil)
		}
	}
	return order
}

// startFor applies, in the file's order, the entries st starts afresh and
// the successors of those it replaces, and records in plan which
// replacements started (Replacing) and which failed as they were applied
// (Kept: the previous instance serves on).
func (h *Host) startFor(plan *Plan, st steps, order []string) {
	for _, id := range order {
		switch {
		case st.start[id]:
			h.start(h.entries[id])
		case st.replace[id]:
			e := h.entries[id]
			h.replace(e)
			h.mu.Lock()
			// apply clears the note; one now is the successor's failure.
			if e.next == nil && e.note != nil {
				plan.Kept = append(plan.Kept, id)
			} else {
				plan.Replacing = append(plan.Replacing, id)
			}
			h.mu.Unlock()
		}
	}
}

// reconfigure applies the live keys of spec to e's running instances
// (rule 11). It reports false when that cannot be done: nothing runs, the
// configuration does not decode, or the plugin refuses.
func (h *Host) reconfigure(e *entry, spec *Entry) bool {
	if e == nil || e.inst == nil || (e.state != Ready && e.state != Reconnecting && e.state != Starting && e.state != NeedsLogin) {
		return false
	}
	r, problems := spec.resolve(recording(h.env, h.secrets))
	if len(problems) > 0 {
		return false
	}
	for _, inst := range []*instance{e.inst, e.next} {
		if inst == nil || inst.plugin == nil {
			continue
		}
		fresh := e.kind.New() // each instance gets a value of its own
		if len(spec.decode(r, fresh)) > 0 {
			return false
		}
		rc, ok := inst.plugin.(Reconfigurer)
		if !ok {
			return false
		}
		done := h.watchdog(inst.log, "Reconfigure")
		err := rc.Reconfigure(fresh)
		done()
		if err != nil {
			inst.log.Info("live settings refused; re-creating the instance", "err", err)
			return false
		}
	}
	e.inst.log.Info("live settings applied in place")
	return true
}

// serving reports whether e's instance serves (ready or reconnecting), so
// that a successor can start beside it.
func serving(e *entry) bool {
	return e != nil && e.inst != nil && e.inst.plugin != nil && (e.state == Ready || e.state == Reconnecting)
}

// claimed reports whether another entry of the new file claims a value
// (Uniquer) that e's running instance holds.
func (h *Host) claimed(e *entry, decoded map[string]decodedEntry) bool {
	held, ok := e.inst.plugin.(Uniquer)
	if !ok {
		return false
	}
	for field, value := range held.Unique() {
		for id, d := range decoded {
			if id == e.spec.ID || d.kind != e.kind {
				continue
			}
			if u, ok := d.plugin.(Uniquer); ok && u.Unique()[field] == value {
				return true
			}
		}
	}
	return false
}

// replace starts a successor of e beside the instance that serves (rule
// 10). A successor already starting never served: it goes first.
func (h *Host) replace(e *entry) {
	h.dropNext(e)
	h.apply(e, e.inst)
}

// dropNext disposes the successor of e that is still starting, if any.
func (h *Host) dropNext(e *entry) {
	if prev := e.next; prev != nil {
		h.disposeNow(prev, nil)
		h.mu.Lock()
		e.next = nil
		h.mu.Unlock()
	}
}

// Restart re-creates an entry's instance, re-reading the environment its
// !!js expressions use. It clears a failure. An entry whose kind makes
// before it breaks and that serves is replaced without a gap.
func (h *Host) Restart(ctx context.Context, id string) error {
	return h.do(ctx, func() error {
		e := h.entries[id]
		if e == nil {
			return fmt.Errorf("restart %q: %w", id, ErrUnknownEntry)
		}
		if e.spec.Disabled {
			return fmt.Errorf("restart %q: the entry is disabled", id)
		}
		if e.kind.MakeBeforeBreak && e.inst != nil && (e.state == Ready || e.state == Reconnecting) {
			h.replace(e)
			return nil
		}
		h.stop(e, Stopped, nil)
		h.start(e)
		h.wakePending()
		return nil
	})
}

// Close disposes every instance, dependents before their providers, then the
// host itself. Replaced instances still draining stop draining. Later
// operations fail with [ErrClosed].
func (h *Host) Close(ctx context.Context) error {
	err := h.do(ctx, func() error {
		h.stopDrains()
		flat := h.flat()
		all := make([]stopping, 0, len(flat))
		for i := len(flat) - 1; i >= 0; i-- {
			all = append(all, stopping{e: h.entries[flat[i]], next: Stopped})
		}
		h.stopAll(all, nil)
		for i := len(flat) - 1; i >= 0; i-- {
			h.setState(h.entries[flat[i]], Stopped, nil, nil)
		}
		h.retiring.Wait()
		dctx, cancel := context.WithTimeout(context.Background(), h.disposeTimeout)
		defer cancel()
		err := errors.Join(h.root.Dispose(dctx), h.closePerHost())
		h.mu.Lock()
		h.closed = true
		subs := h.subs
		h.subs = map[*Subscription]struct{}{}
		h.mu.Unlock()
		for s := range subs {
			go s.Close()
		}
		return err
	})
	if errors.Is(err, ErrClosed) {
		return nil
	}
	return err
}

// closePerHost closes the values of the per-host store ([Context.PerHost])
// that are io.Closers, newest first, once no instance is left to use them.
func (h *Host) closePerHost() error {
	h.mu.Lock()
	keys := h.perHostIn
	h.perHostIn = nil
	values := make([]any, len(keys))
	for i, k := range keys {
		values[i] = h.perHost[k]
	}
	h.mu.Unlock()
	var errs []error
	for i := len(values) - 1; i >= 0; i-- {
		if c, ok := values[i].(io.Closer); ok {
			if err := c.Close(); err != nil {
				errs = append(errs, fmt.Errorf("close the per-host %T: %w", values[i], err))
			}
		}
	}
	return errors.Join(errs...)
}

// --- state ------------------------------------------------------------------

// setState is the one place an entry's state changes: it records it, logs it,
// tells subscribers and wakes waiters.
//
// The change and its event are one step under the host's lock: whoever sees
// the new state in a [Host.Snapshot] finds its event counted by [Host.Seq].
func (h *Host) setState(e *entry, s State, err error, missing []string) {
	err = h.secrets.Err(err) // a reason may quote a secret: status and events show it
	h.mu.Lock()
	prev := e.state
	e.state, e.err, e.missing, e.since = s, err, missing, time.Now()
	if e.spec == nil {
		h.mu.Unlock()
		return
	}
	h.emitLocked(h.entryEventLocked(e, prev))
	h.mu.Unlock()
	// State changes are information: the harness tells people about
	// failures itself. Warn and Error are for what nobody else reports.
	// The record's entry names the entry, so err goes without the prefix.
	log := h.log.With("entry", e.spec.ID)
	why := ""
	if err != nil {
		why = reason(e.spec.ID, err)
	}
	switch {
	case s == Failed:
		log.Info("entry failed", "err", why)
	case s == Reconnecting:
		log.Info("entry reconnecting", "err", why)
	case s == NeedsLogin:
		log.Info("entry needs a login", "err", why)
	case s == Pending:
		log.Info("entry pending", "missing", missing)
	case s != prev:
		log.Info("entry "+s.String(), "was", prev.String())
	}
}

// emitEntry tells subscribers where e is: its state (prev is the one before
// a change, or the same), a reload in progress, a failed reload's note.
func (h *Host) emitEntry(e *entry, prev State) {
	h.mu.Lock()
	h.emitLocked(h.entryEventLocked(e, prev))
	h.mu.Unlock()
}

func (h *Host) entryEventLocked(e *entry, prev State) Event {
	ev := Event{Type: EntryChanged, Entry: e.spec.ID, Plugin: e.spec.Name, State: e.state, Prev: prev, Err: e.err,
		Missing: e.missing, Reloading: e.next != nil}
	if e.note != nil {
		ev.Note = e.note.Error()
	}
	return ev
}

func (h *Host) emit(ev Event) {
	h.mu.Lock()
	h.emitLocked(ev)
	h.mu.Unlock()
}

// emitLocked numbers ev and queues it for every subscriber (a push never
// blocks). h.mu is held.
func (h *Host) emitLocked(ev Event) {
	ev.Time = time.Now()
	ev.Err = h.secrets.Err(ev.Err)
	h.seq++
	ev.Seq = h.seq
	for s := range h.subs {
		s.push(ev)
	}
}

// Seq returns the Seq of the last event the host emitted (0: none yet).
// Every event up to it is already queued for every subscription that
// existed when it was emitted, so a consumer that wants to be up to date
// (the console, before it reads its first command, prints what the start
// did) reads its subscription until it has seen this Seq.
func (h *Host) Seq() uint64 {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.seq
}

// Subscribe returns a subscription to the host's events from now on.
func (h *Host) Subscribe() *Subscription {
	var s *Subscription
	s = newSubscription(func() {
		h.mu.Lock()
		delete(h.subs, s)
		h.mu.Unlock()
	})
	h.mu.Lock()
	if h.closed {
		h.mu.Unlock()
		s.Close()
		return s
	}
	h.subs[s] = struct{}{}
	h.mu.Unlock()
	return s
}

// Snapshot returns the status of every entry, in file order.
func (h *Host) Snapshot() []EntryStatus {
	h.mu.Lock()
	flat := h.flat()
	out := make([]EntryStatus, 0, len(flat))
	plugins := make([]Plugin, 0, len(flat))
	for _, id := range flat {
		e := h.entries[id]
		st := EntryStatus{ID: id, Plugin: e.spec.Name, State: e.state, Since: e.since, Missing: e.missing, Pos: e.spec.Pos, err: e.err,
			Reloading: e.next != nil}
		if e.parent != nil {
			st.Parent = e.parent.spec.ID
		}
		if e.note != nil {
			st.Note = h.secrets.Redact(e.note.Error())
		}
		if e.err != nil {
			st.Error = reason(id, e.err)
		}
		st.Settled = h.settledLocked(e, map[*entry]bool{})
		p := e.last
		if e.inst != nil && e.inst.plugin != nil {
			p = e.inst.plugin
		}
		out = append(out, st)
		plugins = append(plugins, p)
	}
	h.mu.Unlock()
	for i, p := range plugins {
		if r, ok := p.(StatusReporter); ok {
			out[i].Details = r.Status()
		}
	}
	return out
}

// settledLocked reports whether e will stay as it is unless something
// outside changes (a file edit, a restart, a crash). A pending entry is
// settled unless an entry that provides a service it misses is still on its
// way.
func (h *Host) settledLocked(e *entry, seen map[*entry]bool) bool {
	if e.next != nil {
		return false // a successor is on its way
	}
	if e.inst != nil && e.inst.listing > 0 {
		return false // its children are on their way
	}
	switch e.state {
	case Starting, Stopped:
		return false
	case Pending:
		if seen[e] {
			return true
		}
		seen[e] = true
		for _, s := range e.missing {
			for _, id := range h.flat() {
				p := h.entries[id]
				if p != e && !p.spec.Disabled && p.kind != nil && p.kind.provides(s) && !h.settledLocked(p, seen) {
					return false
				}
			}
		}
	}
	return true
}

// Wait blocks until cond holds for a snapshot, or ctx ends. It looks again
// at every event of the host: it is a function over a subscription to the
// stream of [Host.Subscribe], as [Host.Settle] is.
func (h *Host) Wait(ctx context.Context, cond func([]EntryStatus) bool) error {
	return h.waitFor(ctx, func() bool { return cond(h.Snapshot()) })
}

// Settle waits until every entry is settled: ready, failed, disabled, or
// pending on a service that nothing on its way will provide.
func (h *Host) Settle(ctx context.Context) error {
	// Wait(ctx, AllSettled), without a snapshot at every event: telling
	// whether entries settled needs no plugin's status.
	return h.waitFor(ctx, h.settled)
}

// waitFor subscribes, then checks holds now and after every event, until
// it holds or ctx ends. Every change of an entry is an event, so none is
// missed; once the stream ends (the host closed) nothing changes any more,
// and only ctx can end the wait.
func (h *Host) waitFor(ctx context.Context, holds func() bool) error {
	sub := h.Subscribe()
	defer sub.Close()
	events := sub.C
	for {
		if holds() {
			return nil
		}
		select {
		case _, open := <-events:
			if !open {
				events = nil
			}
		case <-ctx.Done():
			return context.Cause(ctx)
		}
	}
}

// settled reports whether every entry is settled.
func (h *Host) settled() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, id := range h.flat() {
		if !h.settledLocked(h.entries[id], map[*entry]bool{}) {
			return false
		}
	}
	return true
}

// AllSettled reports whether every entry of a snapshot is settled.
func AllSettled(s []EntryStatus) bool {
	for _, e := range s {
		if !e.Settled {
			return false
		}
	}
	return true
}

// File returns the configuration the host runs, or nil before the first load.
func (h *Host) File() *File {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.file
}
