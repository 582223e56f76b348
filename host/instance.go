package host

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"runtime/debug"
	"slices"
	"sync"
	"time"

	"github.com/harness-go/harness/fiber"
)

// Everything in this file runs on the host's goroutine.

// start applies an entry, or leaves it pending when a service it injects is
// missing.
func (h *Host) start(e *entry) {
	if e.spec.Disabled {
		h.setState(e, Disabled, nil, nil)
		return
	}
	if err := e.spec.fault; err != nil {
		h.setState(e, Failed, fmt.Errorf("entry %q: %w", e.spec.ID, err), nil)
		return
	}
	if missing := h.missing(e.kind); len(missing) > 0 {
		h.setState(e, Pending, nil, missing)
		return
	}
	h.apply(e, nil)
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

// apply creates an instance of e and applies it. With pred set, the
// instance is a successor (make before break): it starts beside pred as
// e.next, and the entry keeps its state while it does.
func (h *Host) apply(e *entry, pred *instance) {
	h.gen++
	name := e.spec.ID
	if pred != nil {
		name = fmt.Sprintf("%s#%d", e.spec.ID, h.gen)
	}
	log := h.log.With("entry", e.spec.ID, "plugin", e.kind.Name)
	f, err := h.root.Child(name, fiber.WithValue(entryKey{}, e.spec.ID))
	if err != nil {
		if pred == nil {
			h.setState(e, Failed, fmt.Errorf("entry %q: %w", e.spec.ID, err), nil)
		}
		return
	}
	inst := &instance{entry: e, spec: e.spec, kind: e.kind, fiber: f, log: log, applying: true, pred: pred}
	h.mu.Lock()
	if pred != nil {
		e.next = inst
	} else {
		e.inst = inst
	}
	e.note = nil
	h.mu.Unlock()
	if pred != nil {
		log.Info("entry reloading: the new instance starts beside the one that serves")
		h.emitEntry(e, e.state)
	} else {
		h.setState(e, Starting, nil, nil)
	}

	plugin := e.kind.New()
	r, problems := e.spec.resolve(recording(h.env, h.secrets))
	if len(problems) == 0 {
		problems = e.spec.decode(r, plugin)
		secretValues(plugin).addTo(h.secrets)
	}
	if len(problems) > 0 {
		if r != nil && len(r.unset) > 0 {
			problems = withUnset(problems, r.unset)
		}
		for i := range problems {
			problems[i].Entry = "" // the entry's own state: whoever shows it names the entry
		}
		h.abort(inst, &LoadError{Problems: problems})
		return
	}
	h.mu.Lock()
	inst.plugin = plugin
	if pred == nil {
		e.last = plugin
	}
	h.mu.Unlock()
	for _, u := range r.unset {
		log.Debug("a !!js value is undefined; its key is left out", "field", u.Field, "vars", u.Vars, "at", u.Pos.String())
	}
	inst.unset = r.unset

	ctx := &Context{host: h, inst: inst}
	done := h.watchdog(log, "Apply")
	err = safeApply(plugin, ctx)
	done()
	if err != nil {
		h.abort(inst, fmt.Errorf("entry %q: apply: %w", e.spec.ID, err))
		return
	}
	h.mu.Lock()
	inst.applying = false
	ready := inst.begun == 0 && h.currentLocked(inst)
	h.mu.Unlock()
	if ready {
		h.ready(inst)
	}
	// The entries waiting for a service this one provides are applied by
	// the caller's wakePending (Provide also queues one).
}

// watchdog bounds a plugin method that runs on the host's goroutine the way
// fx bounds its hooks, by telling: when the method has not returned within
// [Options.SlowHook], log (whose records carry the entry) warns that it
// blocks the host, naming the method; once it returns, how long it took.
// Call the returned function when the method returns.
func (h *Host) watchdog(log *slog.Logger, method string) (returned func()) {
	start := time.Now()
	var mu sync.Mutex
	warned := false
	t := time.AfterFunc(h.slowHook, func() {
		mu.Lock()
		defer mu.Unlock()
		warned = true
		log.Warn(method+" has not returned: it blocks the host, whose every change waits for it", "method", method, "after", h.slowHook)
	})
	return func() {
		t.Stop()
		mu.Lock()
		defer mu.Unlock()
		if warned {
			log.Warn(method+" returned, late", "method", method, "took", time.Since(start).Round(time.Millisecond))
		}
	}
}

// safeApply calls Apply, turning a panic into an error that keeps its stack
// (the fiber keeps the stacks of its goroutines' panics too).
func safeApply(p Plugin, ctx *Context) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = &PanicError{Value: r, Stack: debug.Stack()}
		}
	}()
	return p.Apply(ctx)
}

// PanicError is a panic of a plugin's Apply or TakeOver, recovered.
type PanicError struct {
	Value any
	Stack []byte
}

func (e *PanicError) Error() string { return fmt.Sprintf("panic: %v", e.Value) }

// currentLocked reports whether inst is one of its entry's live instances.
func (h *Host) currentLocked(inst *instance) bool {
	e := inst.entry
	return e.inst == inst || e.next == inst
}

// ready records that inst finished starting.
func (h *Host) ready(inst *instance) {
	e := inst.entry
	st, err := Ready, error(nil)
	if inst.login != nil {
		st, err = NeedsLogin, fmt.Errorf("entry %q: %w", e.spec.ID, inst.login)
	}
	switch {
	case e.next == inst:
		h.promote(e, st, err)
	case e.inst == inst && e.state == Starting:
		h.setState(e, st, err, nil)
	}
}

// abort ends an instance that could not start: a fresh one fails its entry;
// a successor fails alone, and the instance it was to replace keeps serving.
func (h *Host) abort(inst *instance, err error) {
	e := inst.entry
	var pe *PanicError
	if errors.As(err, &pe) {
		inst.log.Error("the plugin panicked", "panic", fmt.Sprint(pe.Value), "stack", string(pe.Stack))
	}
	switch {
	case e.next == inst:
		h.reloadFailed(inst, err)
	case e.inst == inst:
		h.stop(e, Failed, err)
	}
}

// promote makes e's successor the instance that serves: it takes over from
// its predecessor in one step, then the predecessor retires.
func (h *Host) promote(e *entry, st State, stErr error) {
	next, prev := e.next, e.inst
	var pred Plugin
	if prev != nil {
		pred = prev.plugin
	}
	done := h.watchdog(next.log, "TakeOver")
	err := safeTakeOver(next.plugin, pred)
	done()
	if err != nil {
		h.reloadFailed(next, fmt.Errorf("entry %q: take over: %w", e.spec.ID, err))
		return
	}
	h.mu.Lock()
	e.inst, e.next, e.last, e.note = next, nil, next.plugin, nil
	next.pred = nil // else every instance holds the one it replaced, back to boot
	h.mu.Unlock()
	h.setState(e, st, stErr, nil)
	if prev != nil {
		h.retire(prev)
	}
}

func safeTakeOver(p Plugin, pred Plugin) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = &PanicError{Value: r, Stack: debug.Stack()}
		}
	}()
	s, ok := p.(Successor)
	if !ok {
		return errors.New("the plugin cannot take over (it does not implement host.Successor)")
	}
	return s.TakeOver(pred)
}

// reloadFailed disposes a successor that could not start. The instance it
// was to replace keeps serving, and the entry says so until its
// configuration changes or someone restarts it.
func (h *Host) reloadFailed(next *instance, cause error) {
	e := next.entry
	h.disposeNow(next, cause)
	note := fmt.Errorf("reload failed: %s; the previous instance is still serving", reason(e.spec.ID, cause))
	h.mu.Lock()
	if e.next == next {
		e.next = nil
	}
	serving := e.inst != nil
	reconnecting := e.state == Reconnecting
	h.mu.Unlock()
	switch {
	case !serving:
		// The predecessor stopped while its successor was starting: there
		// is nothing left to serve.
		h.setState(e, Failed, cause, nil)
		return
	case reconnecting:
		// The predecessor's connection is gone and it was retrying with
		// the configuration the edit replaced: the edit ends its retries
		// (docs/rfc/0001-host.md, "Make before break"), and the entry fails with what the new one said.
		h.stop(e, Failed, cause)
		return
	}
	h.mu.Lock()
	e.note = h.secrets.Err(note)
	h.mu.Unlock()
	next.log.Info("reload failed; the previous instance is still serving", "err", reason(e.spec.ID, cause))
	h.emitEntry(e, e.state)
}

// reason is an error's text without the "entry <id>: " prefix.
func reason(id string, err error) string {
	msg := err.Error()
	prefix := fmt.Sprintf("entry %q: ", id)
	if len(msg) > len(prefix) && msg[:len(prefix)] == prefix {
		return msg[len(prefix):]
	}
	return msg
}

// retire lets an instance that a successor replaced finish its work in
// flight (Drainer), then disposes it, off the host's goroutine: draining is
// bounded by the calls' own timeouts, not by the host's pace. Close stops
// the draining and waits for the disposal.
func (h *Host) retire(old *instance) {
	old.log.Debug("retiring the replaced instance")
	h.retiring.Add(1)
	go func() {
		defer h.retiring.Done()
		if d, ok := old.plugin.(Drainer); ok {
			func() {
				defer func() {
					if r := recover(); r != nil {
						old.log.Error("drain panicked", "panic", fmt.Sprint(r), "stack", string(debug.Stack()))
					}
				}()
				d.Drain(h.drainCtx)
			}()
		}
		ctx, cancel := context.WithTimeout(context.Background(), h.disposeTimeout)
		defer cancel()
		if err := old.fiber.Dispose(ctx); err != nil {
			old.log.Error("disposal incomplete", "err", err)
		}
	}()
}

// disposeNow disposes one instance, bounded, with cause as its failure (nil:
// a plain disposal). It is for instances no other instance depends on:
// successors, and the instances of make-before-break kinds, which provide
// no services.
func (h *Host) disposeNow(inst *instance, cause error) {
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
}

// stop disposes e's instances, if any, after the instances that depend on
// the services it provides (they go back to pending), and moves e to state
// next.
//
// Its children go with it (rule 13): an entry that fails, restarts or goes
// back to pending has none until its next instance sets them.
func (h *Host) stop(e *entry, next State, cause error) {
	list := []stopping{{e: e, next: next, cause: cause}}
	kids := e.descendants()
	for _, c := range kids {
		list = append(list, stopping{e: c, next: Stopped})
	}
	// The children leave the tree before the states change: a waiter woken
	// by the last state's event (Settle) must not find them still there,
	// stopped, with no event to come.
	h.stopAll(list, func() {
		e.children = nil
		for _, c := range kids {
			delete(h.entries, c.spec.ID)
		}
	})
}

// stopping is an entry to stop and the state it goes to.
type stopping struct {
	e     *entry
	next  State
	cause error
}

// stopAll disposes the instances of the listed entries and, first, every
// running instance that injects a service one of them provides (those go
// back to pending). Disposal runs in the layers of planStop: the instances
// of a layer are disposed concurrently — each has its own bound, so ten
// servers that ignore SIGTERM cost one close ladder, not ten — and a layer
// starts when the one holding its dependents is done. States change once
// everything is disposed, so a pending entry names the services really
// missing. detach, when not nil, runs under h.mu once everything is
// disposed and before the states change.
func (h *Host) stopAll(list []stopping, detach func()) {
	h.mu.Lock()
	byID := map[string]*entry{}
	set := map[*entry]stopping{}
	var targets []string
	for _, st := range list {
		if _, dup := set[st.e]; dup {
			continue
		}
		set[st.e] = st
		byID[st.e.spec.ID] = st.e
		targets = append(targets, st.e.spec.ID)
	}
	providers := map[string][]string{}
	order := h.flat()
	for _, id := range order {
		e := h.entries[id]
		if e == nil || e.inst == nil {
			continue
		}
		for _, name := range e.kind.Inject {
			if s := h.services[name]; s != nil && s.owner != nil && s.owner != e.inst {
				providers[id] = append(providers[id], s.owner.entry.spec.ID)
			}
		}
	}
	plan := planStop(order, providers, targets)
	for _, id := range plan.Dependents {
		e := h.entries[id]
		byID[id] = e
		set[e] = stopping{e: e, next: Pending}
	}
	h.mu.Unlock()

	for _, layer := range plan.Layers {
		var wg sync.WaitGroup
		for _, id := range layer {
			e := byID[id]
			h.mu.Lock()
			insts := []*instance{e.inst, e.next}
			h.mu.Unlock()
			for _, inst := range insts {
				if inst == nil {
					continue
				}
				wg.Add(1)
				go func(inst *instance, cause error) {
					defer wg.Done()
					h.disposeNow(inst, cause)
				}(inst, set[e].cause)
			}
		}
		wg.Wait()
		h.mu.Lock()
		for _, id := range layer {
			e := byID[id]
			e.inst, e.next, e.note = nil, nil, nil
		}
		h.mu.Unlock()
	}
	if detach != nil {
		h.mu.Lock()
		detach()
		h.mu.Unlock()
	}
	for _, layer := range plan.Layers {
		for _, id := range layer {
			e := byID[id]
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

// wakePending applies the pending entries whose services are now all there.
func (h *Host) wakePending() {
	for progress := true; progress; {
		progress = false
		for _, id := range h.flat() {
			e := h.entries[id]
			if e.state == Pending && len(h.missing(e.kind)) == 0 {
				h.apply(e, nil)
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
	current := h.currentLocked(inst)
	if current {
		inst.begun--
	}
	ready := current && inst.begun == 0 && !inst.applying
	h.mu.Unlock()
	var login *LoginNeeded
	switch {
	case !current:
		return // the instance is gone; its news is stale
	case errors.As(err, &login):
		// Settled, not failed: the instance stays, waiting for a login.
		h.mu.Lock()
		inst.login = login.Err
		h.mu.Unlock()
		if ready {
			h.ready(inst)
		}
	case err != nil:
		h.abort(inst, fmt.Errorf("entry %q: %s: %w", e.spec.ID, step, err))
	case ready:
		h.ready(inst)
	}
}

// failed records a failure a plugin reported after apply.
func (h *Host) failed(inst *instance, err error) {
	e := inst.entry
	err = fmt.Errorf("entry %q: %w", e.spec.ID, err)
	switch {
	case e.next == inst:
		h.reloadFailed(inst, err)
	case e.inst == inst && e.next != nil:
		// The serving instance stopped while its successor starts: the
		// successor carries on alone, and takes over from nobody.
		h.disposeNow(inst, err)
		h.mu.Lock()
		e.inst = nil
		h.mu.Unlock()
		inst.log.Info("the serving instance failed during a reload; the new one carries on", "err", reason(e.spec.ID, err))
		h.setState(e, Starting, nil, nil)
	case e.inst == inst:
		h.stop(e, Failed, err)
	}
}

// reconnecting records that a ready instance lost what it serves from and
// is getting it back (err is why), or, with err nil, that it is back.
func (h *Host) reconnecting(inst *instance, err error) {
	e := inst.entry
	if e.inst != inst {
		return
	}
	switch {
	case err != nil && (e.state == Ready || e.state == Reconnecting):
		h.setState(e, Reconnecting, fmt.Errorf("entry %q: %w", e.spec.ID, err), nil)
	case err == nil && (e.state == Reconnecting || e.state == NeedsLogin):
		h.setState(e, Ready, nil, nil)
	}
}

// needsLogin records that an instance that started can no longer serve
// until a person logs in (err says why, and what to run).
func (h *Host) needsLogin(inst *instance, err error) {
	e := inst.entry
	if e.inst != inst || (e.state != Ready && e.state != Reconnecting && e.state != NeedsLogin) {
		return
	}
	h.setState(e, NeedsLogin, fmt.Errorf("entry %q: %w", e.spec.ID, err), nil)
}

// fault receives a panic from a goroutine owned by some fiber and fails the
// instance that owns it.
func (h *Host) fault(f *fiber.Fiber, err error) {
	h.post(func() {
		for x := f; x != nil; x = x.Parent() {
			for _, e := range h.entries {
				for _, inst := range []*instance{e.inst, e.next} {
					if inst != nil && inst.fiber == x {
						h.failed(inst, err)
						return
					}
				}
			}
		}
		h.log.Error("fault outside any instance", "err", err)
	})
}
