// Package fiber provides lifetimes: a tree of scopes, each owning a context,
// a stack of disposers and a set of goroutines.
//
// A plugin instance in the host runs inside a fiber. Whatever the plugin sets
// up (a tool registration, a child process, a watcher goroutine) registers its
// teardown on that fiber, so disposing the fiber undoes everything the plugin
// did, in reverse order, and nothing outlives it.
//
// # Rules
//
//  1. A fiber is created by [New] (a root) or [Fiber.Child]. A child is
//     disposed whenever its parent is.
//  2. Every fiber owns a [context.Context], derived from its parent's. It is
//     cancelled, with a cause, the moment disposal begins. Work started for
//     the fiber should use it.
//  3. [Fiber.Defer] pushes a disposer. [Fiber.Go] starts an owned goroutine.
//     Both refuse once disposal has begun: a late disposer runs at once (it
//     never leaks) and a late goroutine is not started.
//  4. [Fiber.Dispose] is idempotent. The first call performs the disposal;
//     every call waits for it (bounded by its own ctx) and returns its result.
//  5. Disposal order: cancel the context; dispose the children, newest first;
//     run the disposers, newest first; wait for the owned goroutines.
//  6. Every disposer runs, even when an earlier one failed. Their errors are
//     aggregated into one error that lists each.
//  7. Disposal respects the deadline of the ctx given to Dispose. A disposer
//     still running at the deadline is named in the error as hung; the
//     disposers after it are still started, in order, in the background. A
//     goroutine still running at the deadline is likewise named.
//  8. A panic in a disposer or an owned goroutine is recovered and turned into
//     an error that holds its stack; an owned goroutine's panic is reported
//     to the fault handler (see [WithFaultHandler]), so one plugin's bug
//     never takes the process down.
//  9. [Fiber.Fail] disposes a fiber because of an error: the context's cause
//     and [Fiber.Err] carry that error and the final state is [Failed].
package fiber

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"sort"
	"strings"
	"sync"

	"github.com/hashicorp/go-multierror"
)

// State is where a fiber is in its life.
type State int

const (
	// Active fibers accept disposers, children and goroutines.
	Active State = iota
	// Disposing fibers are running their teardown.
	Disposing
	// Disposed fibers have finished their teardown.
	Disposed
	// Failed fibers were disposed through [Fiber.Fail].
	Failed
)

func (s State) String() string {
	switch s {
	case Active:
		return "active"
	case Disposing:
		return "disposing"
	case Disposed:
		return "disposed"
	case Failed:
		return "failed"
	}
	return fmt.Sprintf("State(%d)", int(s))
}

// ErrDisposed is the context cause of a fiber disposed without an error, and
// what [Fiber.Defer], [Fiber.Child] and [Fiber.Go] report when they are too
// late.
var ErrDisposed = errors.New("fiber disposed")

// Disposer undoes one thing. The ctx carries the deadline of the disposal.
type Disposer func(ctx context.Context) error

// FaultHandler receives errors that have no caller to return to: a panic in an
// owned goroutine. It runs on its own goroutine.
type FaultHandler func(f *Fiber, err error)

// Option configures a fiber: a root ([New]) or a child ([Fiber.Child]).
type Option func(*Fiber)

// WithFaultHandler sets the handler for faults of this fiber and its
// descendants.
func WithFaultHandler(h FaultHandler) Option {
	return func(f *Fiber) { f.fault = h }
}

// WithValue makes the fiber's context carry val under key, as
// [context.WithValue] does; the fiber's descendants inherit it through their
// contexts. The host marks each instance's fiber with its entry this way, so
// a service can tell which entry a fiber belongs to.
func WithValue(key, val any) Option {
	return func(f *Fiber) { f.ctx = context.WithValue(f.ctx, key, val) }
}

// Fiber is one lifetime. The zero value is not usable; see [New].
type Fiber struct {
	name   string
	parent *Fiber
	ctx    context.Context
	cancel context.CancelCauseFunc
	fault  FaultHandler

	mu        sync.Mutex
	state     State
	cause     error // why disposal began; ErrDisposed unless failed
	children  []*Fiber
	disposers []*disposer
	running   map[string]int // owned goroutines still running, by name
	wg        sync.WaitGroup
	done      chan struct{} // closed when disposal has finished
	result    error         // the aggregated disposal error
}

type disposer struct {
	name string
	fn   Disposer
	done bool // ran early through its release function
}

// New returns a root fiber whose context derives from parent.
func New(parent context.Context, name string, opts ...Option) *Fiber {
	f := newFiber(parent, name, nil)
	for _, o := range opts {
		o(f)
	}
	return f
}

func newFiber(parent context.Context, name string, p *Fiber) *Fiber {
	ctx, cancel := context.WithCancelCause(parent)
	f := &Fiber{
		name:    name,
		parent:  p,
		ctx:     ctx,
		cancel:  cancel,
		running: map[string]int{},
		done:    make(chan struct{}),
	}
	if p != nil {
		f.fault = p.fault
	}
	return f
}

// Name returns the fiber's own name.
func (f *Fiber) Name() string { return f.name }

// Parent returns the fiber f was created from, or nil for a root.
func (f *Fiber) Parent() *Fiber { return f.parent }

// Path returns the names from the root to f, joined by "/".
func (f *Fiber) Path() string {
	if f.parent == nil {
		return f.name
	}
	return f.parent.Path() + "/" + f.name
}

// Context returns the fiber's context. It is cancelled when disposal begins;
// [context.Cause] then returns [ErrDisposed] or the error given to [Fiber.Fail].
func (f *Fiber) Context() context.Context { return f.ctx }

// State reports where the fiber is in its life.
func (f *Fiber) State() State {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.state
}

// Err returns the error the fiber failed with, or nil.
func (f *Fiber) Err() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.state == Failed || (f.state == Disposing && !errors.Is(f.cause, ErrDisposed)) {
		return f.cause
	}
	return nil
}

// Done is closed when disposal has finished.
func (f *Fiber) Done() <-chan struct{} { return f.done }

// Child creates a child fiber. It fails with [ErrDisposed] once f's disposal
// has begun. A [WithFaultHandler] among opts replaces the inherited handler
// for c and its descendants.
func (f *Fiber) Child(name string, opts ...Option) (*Fiber, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.state != Active {
		return nil, fmt.Errorf("fiber %s: child %q: %w", f.Path(), name, ErrDisposed)
	}
	c := newFiber(f.ctx, name, f)
	for _, o := range opts {
		o(c)
	}
	f.children = append(f.children, c)
	return c, nil
}

// Defer pushes fn onto f's disposer stack and returns a release function that
// runs fn early (at most once) and takes it off the stack.
//
// Once f's disposal has begun, Defer runs fn at once, with a context that is
// already cancelled, and returns an error wrapping [ErrDisposed] (joined with
// fn's own error): the caller learns it was too late, and nothing leaks.
func (f *Fiber) Defer(name string, fn Disposer) (release Disposer, err error) {
	d := &disposer{name: name, fn: fn}
	f.mu.Lock()
	if f.state != Active {
		f.mu.Unlock()
		late := fmt.Errorf("fiber %s: disposer %q registered after disposal began and ran at once: %w", f.Path(), name, ErrDisposed)
		if err := runDisposer(f.ctx, d); err != nil {
			return noop, errors.Join(late, err)
		}
		return noop, late
	}
	f.disposers = append(f.disposers, d)
	f.mu.Unlock()
	return func(ctx context.Context) error {
		f.mu.Lock()
		if d.done {
			f.mu.Unlock()
			return nil
		}
		d.done = true
		f.removeDisposer(d)
		f.mu.Unlock()
		return runDisposer(ctx, d)
	}, nil
}

func noop(context.Context) error { return nil }

// removeDisposer drops d from the stack; f.mu must be held.
func (f *Fiber) removeDisposer(d *disposer) {
	for i, x := range f.disposers {
		if x == d {
			f.disposers = append(f.disposers[:i:i], f.disposers[i+1:]...)
			return
		}
	}
}

// Go runs fn on a goroutine owned by f: disposal cancels fn's context (the
// fiber's) and waits for fn to return. It returns [ErrDisposed] without
// starting fn once disposal has begun. A panic in fn is recovered and reported
// to the fault handler.
func (f *Fiber) Go(name string, fn func(ctx context.Context)) error {
	f.mu.Lock()
	if f.state != Active {
		f.mu.Unlock()
		return fmt.Errorf("fiber %s: goroutine %q: %w", f.Path(), name, ErrDisposed)
	}
	f.wg.Add(1)
	f.running[name]++
	f.mu.Unlock()
	go func() {
		defer func() {
			r := recover()
			f.mu.Lock()
			if f.running[name]--; f.running[name] == 0 {
				delete(f.running, name)
			}
			f.mu.Unlock()
			f.wg.Done()
			if r != nil && f.fault != nil {
				err := fmt.Errorf("fiber %s: goroutine %q panicked: %v\n%s", f.Path(), name, r, debug.Stack())
				go f.fault(f, err)
			}
		}()
		fn(f.ctx)
	}()
	return nil
}

// Dispose tears f down (see the package rules) and returns the aggregated
// error of its children, disposers and goroutines. It returns early, with an
// error naming what hung, when ctx ends.
func (f *Fiber) Dispose(ctx context.Context) error {
	return f.dispose(ctx, ErrDisposed)
}

// Fail disposes f because of err: the context cause and [Fiber.Err] become
// err, and the final state is [Failed]. If disposal already began, Fail only
// waits for it. The returned error is the disposal's, not err.
func (f *Fiber) Fail(ctx context.Context, err error) error {
	if err == nil {
		err = errors.New("failed without a reason")
	}
	return f.dispose(ctx, err)
}

func (f *Fiber) dispose(ctx context.Context, cause error) error {
	f.mu.Lock()
	if f.state != Active {
		f.mu.Unlock()
		return f.wait(ctx)
	}
	f.state = Disposing
	f.cause = cause
	children := f.children
	disposers := f.disposers
	f.children, f.disposers = nil, nil
	f.mu.Unlock()

	f.cancel(cause)
	// The teardown is itself bounded by ctx (rule 7), so the first caller
	// waits for it to finish and gets the error that names what hung.
	f.teardown(ctx, children, disposers)
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.result
}

// wait waits for the disposal to finish, or for ctx to end.
func (f *Fiber) wait(ctx context.Context) error {
	select {
	case <-f.done:
		f.mu.Lock()
		defer f.mu.Unlock()
		return f.result
	case <-ctx.Done():
		return fmt.Errorf("fiber %s: dispose: %w", f.Path(), context.Cause(ctx))
	}
}

// teardown runs every step; once ctx ends, the steps left are started in
// the background and teardown returns.
func (f *Fiber) teardown(ctx context.Context, children []*Fiber, disposers []*disposer) {
	var errs *multierror.Error
	for i := len(children) - 1; i >= 0; i-- {
		if err := children[i].Dispose(ctx); err != nil {
			errs = multierror.Append(errs, err)
		}
	}
	for i := len(disposers) - 1; i >= 0; i-- {
		d := disposers[i]
		if err := f.runBounded(ctx, d); err != nil {
			errs = multierror.Append(errs, err)
		}
	}
	if err := f.waitGoroutines(ctx); err != nil {
		errs = multierror.Append(errs, err)
	}

	f.mu.Lock()
	if errs != nil {
		errs.ErrorFormat = listFormat
		f.result = fmt.Errorf("fiber %s: dispose: %w", f.Path(), errs)
	}
	if f.cause != nil && !errors.Is(f.cause, ErrDisposed) {
		f.state = Failed
	} else {
		f.state = Disposed
	}
	f.mu.Unlock()
	close(f.done)
	if p := f.parent; p != nil {
		p.mu.Lock()
		p.removeChild(f)
		p.mu.Unlock()
	}
}

// removeChild forgets a child that finished its own disposal; f.mu must be held.
func (f *Fiber) removeChild(c *Fiber) {
	for i, x := range f.children {
		if x == c {
			f.children = append(f.children[:i:i], f.children[i+1:]...)
			return
		}
	}
}

// runBounded runs one disposer, giving up on waiting for it when ctx ends.
func (f *Fiber) runBounded(ctx context.Context, d *disposer) error {
	if ctx.Err() != nil {
		// Past the deadline: still run it, without waiting.
		go func() { _ = runDisposer(ctx, d) }()
		return fmt.Errorf("disposer %q started after the deadline: %w", d.name, context.Cause(ctx))
	}
	result := make(chan error, 1)
	go func() { result <- runDisposer(ctx, d) }()
	select {
	case err := <-result:
		return err
	case <-ctx.Done():
		return fmt.Errorf("disposer %q hung: %w", d.name, context.Cause(ctx))
	}
}

func runDisposer(ctx context.Context, d *disposer) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("disposer %q panicked: %v\n%s", d.name, r, debug.Stack())
		}
	}()
	if err := d.fn(ctx); err != nil {
		return fmt.Errorf("disposer %q: %w", d.name, err)
	}
	return nil
}

func (f *Fiber) waitGoroutines(ctx context.Context) error {
	all := make(chan struct{})
	go func() {
		f.wg.Wait()
		close(all)
	}()
	select {
	case <-all:
		return nil
	case <-ctx.Done():
		f.mu.Lock()
		names := make([]string, 0, len(f.running))
		for n, c := range f.running {
			if c > 1 {
				n = fmt.Sprintf("%s (×%d)", n, c)
			}
			names = append(names, fmt.Sprintf("%q", n))
		}
		f.mu.Unlock()
		sort.Strings(names)
		return fmt.Errorf("goroutines still running: %s: %w", strings.Join(names, ", "), context.Cause(ctx))
	}
}

// listFormat renders an aggregated error on one line per cause.
func listFormat(errs []error) string {
	if len(errs) == 1 {
		return errs[0].Error()
	}
	parts := make([]string, len(errs))
	for i, e := range errs {
		parts[i] = e.Error()
	}
	return fmt.Sprintf("%d errors: %s", len(errs), strings.Join(parts, "; "))
}
