package host

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"strings"
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
}

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
	secrets        *secret.Set
	root           *fiber.Fiber

	mu       sync.Mutex
	file     *File
	entries  map[string]*entry
	order    []string
	services map[string]*service
	shared   map[any]any
	subs     map[*Subscription]struct{}
	changed  chan struct{}
	closed   bool

	opsMu   sync.Mutex
	ops     []func()
	opsWake chan struct{}
	opsDone chan struct{}
}

type entry struct {
	spec    *Entry
	kind    *Kind
	last    Plugin // the plugin of the last instance, for status after it stopped
	state   State
	since   time.Time
	err     error
	missing []string
	inst    *instance
}

type instance struct {
	entry    *entry
	plugin   Plugin
	fiber    *fiber.Fiber
	log      *slog.Logger
	begun    int
	applying bool
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
		secrets:        opts.Secrets,
		entries:        map[string]*entry{},
		services:       map[string]*service{},
		shared:         map[any]any{},
		subs:           map[*Subscription]struct{}{},
		changed:        make(chan struct{}),
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
	go h.run()
	return h
}

// Secrets returns the host's secret set (see [Options.Secrets]).
func (h *Host) Secrets() *secret.Set { return h.secrets }

// ProcessEnv is the environment !!js reads by default: the process's
// variables and working directory.
func ProcessEnv() jsexpr.Env {
	cwd, _ := os.Getwd()
	return jsexpr.Env{Lookup: os.LookupEnv, Cwd: cwd}
}

// Provide makes a service available to every instance, for the life of the
// host (the built-in services, such as tools).
func (h *Host) Provide(name string, v any) {
	h.mu.Lock()
	h.services[name] = &service{value: v}
	h.mu.Unlock()
	h.post(h.wakePending)
}

// Shared returns the host-wide value stored under key, creating it with
// newValue on first use: what plugins reach through [Context.Shared]. The
// program that runs the host sets such values before loading a
// configuration (who this harness is, say), with a newValue that returns
// them.
func (h *Host) Shared(key any, newValue func() any) any {
	h.mu.Lock()
	defer h.mu.Unlock()
	v, ok := h.shared[key]
	if !ok {
		v = newValue()
		h.shared[key] = v
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
func (h *Host) do(ctx context.Context, fn func() error) error {
	result := make(chan error, 1)
	h.post(func() { result <- fn() })
	select {
	case err := <-result:
		return err
	case <-ctx.Done():
		return context.Cause(ctx)
	case <-h.opsDone:
		return ErrClosed
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

func (h *Host) load(f *File) (*Plan, error) {
	h.mu.Lock()
	closed := h.closed
	h.mu.Unlock()
	if closed {
		return nil, ErrClosed
	}
	if problems := check(f, h.env, false, h.secrets).errors; len(problems) > 0 {
		err := &LoadError{Problems: problems}
		h.log.Info("configuration refused; nothing changed", "file", f.Path, "err", err)
		h.emit(Event{Type: ReloadRejected, Err: err})
		return nil, err
	}
	var running []*Entry
	if h.file != nil {
		running = h.file.Entries
	}
	plan := Reconcile(running, f.Entries)

	// Every disposal finishes before any apply starts.
	var stops []stopping
	for _, id := range plan.Stop {
		if e := h.entries[id]; e != nil {
			stops = append(stops, stopping{e: e, next: Stopped})
		}
	}
	h.stopAll(stops)
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
		if e.spec != nil && e.spec.digest != spec.digest {
			e.last = nil
		}
		e.spec, e.kind = spec, kind
		next[spec.ID] = e
		order = append(order, spec.ID)
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
	for _, id := range plan.Start {
		h.start(next[id])
	}
	h.wakePending()
	if !plan.Empty() {
		h.log.Info("configuration applied", "file", f.Path, "changes", plan.String())
	}
	h.emit(Event{Type: Reloaded, Plan: plan})
	return plan, nil
}

// Restart disposes an entry's instance, if any, and applies it again,
// re-reading the environment its !!js expressions use. It clears a failure.
func (h *Host) Restart(ctx context.Context, id string) error {
	return h.do(ctx, func() error {
		e := h.entries[id]
		if e == nil {
			return fmt.Errorf("restart %q: %w", id, ErrUnknownEntry)
		}
		if e.spec.Disabled {
			return fmt.Errorf("restart %q: the entry is disabled", id)
		}
		h.stop(e, Stopped, nil)
		h.start(e)
		h.wakePending()
		return nil
	})
}

// Close disposes every instance, dependents before their providers, then the
// host itself. Later operations fail with [ErrClosed].
func (h *Host) Close(ctx context.Context) error {
	err := h.do(ctx, func() error {
		all := make([]stopping, 0, len(h.order))
		for i := len(h.order) - 1; i >= 0; i-- {
			all = append(all, stopping{e: h.entries[h.order[i]], next: Stopped})
		}
		h.stopAll(all)
		for i := len(h.order) - 1; i >= 0; i-- {
			h.setState(h.entries[h.order[i]], Stopped, nil, nil)
		}
		dctx, cancel := context.WithTimeout(context.Background(), h.disposeTimeout)
		defer cancel()
		err := h.root.Dispose(dctx)
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

// --- applying and stopping ---------------------------------------------------

// start applies an entry, or leaves it pending when a service it injects is
// missing. It runs on the host's goroutine.
func (h *Host) start(e *entry) {
	if e.spec.Disabled {
		h.setState(e, Disabled, nil, nil)
		return
	}
	if missing := h.missing(e.kind); len(missing) > 0 {
		h.setState(e, Pending, nil, missing)
		return
	}
	h.apply(e)
}

func (h *Host) missing(k *Kind) []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []string
	for _, s := range k.Inject {
		if h.services[s] == nil {
			out = append(out, s)
		}
	}
	return out
}

func (h *Host) apply(e *entry) {
	log := h.log.With("entry", e.spec.ID, "plugin", e.kind.Name)
	f, err := h.root.Child(e.spec.ID)
	if err != nil {
		h.setState(e, Failed, fmt.Errorf("entry %q: %w", e.spec.ID, err), nil)
		return
	}
	inst := &instance{entry: e, fiber: f, log: log, applying: true}
	h.mu.Lock()
	e.inst = inst
	h.mu.Unlock()
	h.setState(e, Starting, nil, nil)

	plugin := e.kind.New()
	r, problems := e.spec.resolve(recording(h.env, h.secrets))
	if len(problems) == 0 {
		problems = e.spec.decode(r, plugin)
		h.secrets.Add(secretValues(plugin)...)
	}
	if len(problems) > 0 {
		h.stop(e, Failed, &LoadError{Problems: problems})
		return
	}
	h.mu.Lock()
	inst.plugin = plugin
	e.last = plugin
	h.mu.Unlock()
	for _, u := range r.unset {
		log.Debug("a !!js value is undefined; its key is left out", "field", u.Field, "vars", u.Vars, "at", u.Pos.String())
	}

	ctx := &Context{host: h, inst: inst}
	if err := safeApply(plugin, ctx); err != nil {
		h.stop(e, Failed, fmt.Errorf("entry %q: apply: %w", e.spec.ID, err))
		return
	}
	h.mu.Lock()
	inst.applying = false
	ready := inst.begun == 0 && e.inst == inst
	h.mu.Unlock()
	if ready {
		h.setState(e, Ready, nil, nil)
	}
	// The entries waiting for a service this one provides are applied by
	// the caller's wakePending (Provide also queues one).
}

func safeApply(p Plugin, ctx *Context) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("panic: %v", r)
		}
	}()
	return p.Apply(ctx)
}

// stop disposes e's instance, if any, after the instances that depend on the
// services it provides (they go back to pending), and moves e to state next.
func (h *Host) stop(e *entry, next State, cause error) {
	h.stopAll([]stopping{{e: e, next: next, cause: cause}})
}

// stopping is an entry to stop and the state it goes to.
type stopping struct {
	e     *entry
	next  State
	cause error
}

// stopAll disposes the instances of the listed entries and, first, every
// running instance that injects a service one of them provides (those go
// back to pending). Disposal runs in layers: the instances of a layer are
// disposed concurrently — each has its own bound, so ten servers that ignore
// SIGTERM cost one close ladder, not ten — and a layer starts when the one
// holding its dependents is done. States change once everything is
// disposed, so a pending entry names the services really missing.
func (h *Host) stopAll(list []stopping) {
	h.mu.Lock()
	set := map[*entry]*stopping{}
	var order []*entry // reverse file order, for stable events
	add := func(st stopping) bool {
		if set[st.e] != nil {
			return false
		}
		set[st.e] = &st
		return true
	}
	for _, st := range list {
		add(st)
	}
	// Close the set over dependents: whoever injects a service an instance
	// in the set provides.
	for grew := true; grew; {
		grew = false
		for _, id := range h.order {
			e := h.entries[id]
			if e == nil || e.inst == nil || set[e] != nil {
				continue
			}
			for p := range set {
				if p.inst != nil && h.injectsFromLocked(e, p.inst) {
					grew = add(stopping{e: e, next: Pending}) || grew
					break
				}
			}
		}
	}
	for i := len(h.order) - 1; i >= 0; i-- {
		if e := h.entries[h.order[i]]; e != nil && set[e] != nil {
			order = append(order, e)
		}
	}
	for e := range set {
		if !slices.Contains(order, e) {
			order = append(order, e) // no longer in the table (a reload replaced it)
		}
	}
	// Peel layers: an instance goes once no remaining one injects from it.
	remaining := slices.Clone(order)
	var layers [][]*entry
	for len(remaining) > 0 {
		var layer, rest []*entry
		for _, x := range remaining {
			needed := false
			for _, y := range remaining {
				if y != x && x.inst != nil && y.inst != nil && h.injectsFromLocked(y, x.inst) {
					needed = true
					break
				}
			}
			if needed {
				rest = append(rest, x)
			} else {
				layer = append(layer, x)
			}
		}
		if len(layer) == 0 { // a cycle cannot run, but never loop for ever
			layer, rest = rest, nil
		}
		layers = append(layers, layer)
		remaining = rest
	}
	h.mu.Unlock()

	for _, layer := range layers {
		var wg sync.WaitGroup
		for _, e := range layer {
			h.mu.Lock()
			inst := e.inst
			h.mu.Unlock()
			if inst == nil {
				continue
			}
			wg.Add(1)
			go func(cause error) {
				defer wg.Done()
				ctx, cancel := context.WithTimeout(context.Background(), h.disposeTimeout)
				defer cancel()
				var err error
				if cause != nil {
					err = inst.fiber.Fail(ctx, cause)
				} else {
					err = inst.fiber.Dispose(ctx)
				}
				if err != nil {
					inst.log.Error("disposal incomplete", "err", err)
				}
			}(set[e].cause)
		}
		wg.Wait()
		h.mu.Lock()
		for _, e := range layer {
			e.inst = nil
		}
		h.mu.Unlock()
	}
	for _, layer := range layers {
		for _, e := range layer {
			st := set[e]
			var missing []string
			if st.next == Pending {
				missing = h.missing(e.kind)
			}
			if st.next != Stopped || e.state != Stopped {
				h.setState(e, st.next, st.cause, missing)
			}
		}
	}
}

// injectsFromLocked reports whether e injects a service that inst provides.
func (h *Host) injectsFromLocked(e *entry, inst *instance) bool {
	if e.inst == inst {
		return false
	}
	for _, name := range e.kind.Inject {
		if s := h.services[name]; s != nil && s.owner == inst {
			return true
		}
	}
	return false
}

// wakePending applies the pending entries whose services are now all there.
func (h *Host) wakePending() {
	for progress := true; progress; {
		progress = false
		for _, id := range h.order {
			e := h.entries[id]
			if e.state == Pending && len(h.missing(e.kind)) == 0 {
				h.apply(e)
				progress = true
			} else if e.state == Pending {
				if m := h.missing(e.kind); !slices.Equal(m, e.missing) {
					h.setState(e, Pending, nil, m)
				}
			}
		}
	}
}

// finish records the end of initial work started with Context.Begin.
func (h *Host) finish(inst *instance, step string, err error) {
	e := inst.entry
	h.mu.Lock()
	current := e.inst == inst
	if current {
		inst.begun--
	}
	ready := current && inst.begun == 0 && !inst.applying && e.state == Starting
	h.mu.Unlock()
	switch {
	case !current:
		return // the instance is gone; its news is stale
	case err != nil:
		h.stop(e, Failed, fmt.Errorf("entry %q: %s: %w", e.spec.ID, step, err))
	case ready:
		h.setState(e, Ready, nil, nil)
	}
}

// failed records a failure a plugin reported after apply.
func (h *Host) failed(inst *instance, err error) {
	e := inst.entry
	h.mu.Lock()
	current := e.inst == inst
	h.mu.Unlock()
	if current {
		h.stop(e, Failed, fmt.Errorf("entry %q: %w", e.spec.ID, err))
	}
}

// fault receives a panic from a goroutine owned by some fiber and fails the
// instance that owns it.
func (h *Host) fault(f *fiber.Fiber, err error) {
	h.post(func() {
		for x := f; x != nil; x = x.Parent() {
			for _, e := range h.entries {
				if e.inst != nil && e.inst.fiber == x {
					h.failed(e.inst, err)
					return
				}
			}
		}
		h.log.Error("fault outside any instance", "err", err)
	})
}

// --- state ------------------------------------------------------------------

// setState is the one place an entry's state changes: it records it, logs it,
// tells subscribers and wakes waiters.
func (h *Host) setState(e *entry, s State, err error, missing []string) {
	err = h.secrets.Err(err) // a reason may quote a secret: status and events show it
	h.mu.Lock()
	prev := e.state
	e.state, e.err, e.missing, e.since = s, err, missing, time.Now()
	h.mu.Unlock()
	if e.spec == nil {
		return
	}
	// State changes are information: the harness tells people about
	// failures itself. Warn and Error are for what nobody else reports.
	log := h.log.With("entry", e.spec.ID)
	switch {
	case s == Failed:
		log.Info("entry failed", "err", err)
	case s == Pending:
		log.Info("entry pending", "missing", missing)
	case s != prev:
		log.Info("entry "+s.String(), "was", prev.String())
	}
	h.emit(Event{Type: EntryChanged, Entry: e.spec.ID, Plugin: e.spec.Name, State: s, Prev: prev, Err: err, Missing: missing})
}

func (h *Host) emit(ev Event) {
	ev.Time = time.Now()
	ev.Err = h.secrets.Err(ev.Err)
	h.mu.Lock()
	for s := range h.subs {
		s.push(ev)
	}
	close(h.changed)
	h.changed = make(chan struct{})
	h.mu.Unlock()
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
	out := make([]EntryStatus, 0, len(h.order))
	plugins := make([]Plugin, 0, len(h.order))
	for _, id := range h.order {
		e := h.entries[id]
		st := EntryStatus{ID: id, Plugin: e.spec.Name, State: e.state, Since: e.since, Missing: e.missing, Pos: e.spec.Pos, err: e.err}
		if e.err != nil {
			st.Error = strings.TrimPrefix(e.err.Error(), fmt.Sprintf("entry %q: ", id))
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
	switch e.state {
	case Starting, Stopped:
		return false
	case Pending:
		if seen[e] {
			return true
		}
		seen[e] = true
		for _, s := range e.missing {
			for _, id := range h.order {
				p := h.entries[id]
				if p != e && !p.spec.Disabled && p.kind != nil && p.kind.provides(s) && !h.settledLocked(p, seen) {
					return false
				}
			}
		}
	}
	return true
}

// Changed returns a channel closed at the next event of the host.
func (h *Host) Changed() <-chan struct{} {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.changed
}

// Wait blocks until cond holds for a snapshot, or ctx ends.
func (h *Host) Wait(ctx context.Context, cond func([]EntryStatus) bool) error {
	for {
		h.mu.Lock()
		ch := h.changed
		h.mu.Unlock()
		if cond(h.Snapshot()) {
			return nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return context.Cause(ctx)
		}
	}
}

// Settle waits until every entry is settled: ready, failed, disabled, or
// pending on a service that nothing on its way will provide.
func (h *Host) Settle(ctx context.Context) error {
	// Wait(ctx, AllSettled), without a snapshot at every event: telling
	// whether entries settled needs no plugin's status.
	for {
		h.mu.Lock()
		ch := h.changed
		settled := true
		for _, id := range h.order {
			if !h.settledLocked(h.entries[id], map[*entry]bool{}) {
				settled = false
				break
			}
		}
		h.mu.Unlock()
		if settled {
			return nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return context.Cause(ctx)
		}
	}
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
