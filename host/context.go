package host

import (
	"context"
	"fmt"
	"log/slog"
	"sync"

	"github.com/harness-go/harness/fiber"
	"github.com/harness-go/harness/host/secret"
)

// Context is what a plugin's Apply receives: its fiber, its services, its
// logger and the ways to report progress to the host. It stays valid for the
// life of the instance; plugins keep it to report later failures.
type Context struct {
	host *Host
	inst *instance
}

// entryKey marks an instance's fiber context with its entry id (see
// [EntryOf]).
type entryKey struct{}

// EntryOf returns the id of the entry whose instance ctx belongs to: ctx is
// the context of an instance's fiber or of a fiber, goroutine or call below
// it. A service uses it to record which entry registered something (the
// tools registry records each tool's owner), so that no one needs to know
// the plugin behind an entry to ask what it provides.
func EntryOf(ctx context.Context) (id string, ok bool) {
	id, ok = ctx.Value(entryKey{}).(string)
	return id, ok
}

// ID returns the entry id.
func (c *Context) ID() string { return c.inst.spec.ID }

// Fiber returns the instance's fiber. Everything the instance sets up should
// be undone by a disposer on it (or on a child of it).
func (c *Context) Fiber() *fiber.Fiber { return c.inst.fiber }

// Context returns the fiber's context: cancelled when the instance is
// disposed, with the reason as its cause.
func (c *Context) Context() context.Context { return c.inst.fiber.Context() }

// Logger returns a logger whose records carry the entry id and plugin kind.
func (c *Context) Logger() *slog.Logger { return c.inst.log }

// Secrets returns the host's secret set. Redact with it whatever the
// instance prints or returns as its own text (errors, status, log values
// that did not go through [Context.Logger], which redacts already); never a
// tool result, which is the server's words.
func (c *Context) Secrets() *secret.Set { return c.host.secrets }

// Dir returns the absolute directory of the cordis.yml the entry comes from;
// relative paths in the configuration resolve against it.
func (c *Context) Dir() string { return c.inst.spec.dir }

// File returns the path of the cordis.yml the entry comes from, as given.
func (c *Context) File() string { return c.inst.spec.file }

// Unset returns the values of the entry's configuration that !!js left
// out because the variables they read are not set (Field "config.apiKey",
// Vars [DEEPSEEK_API_KEY]), so a plugin can say which variable to set.
func (c *Context) Unset() []Unset { return c.inst.unset }

// Service returns an injected service. Asking for a service the kind does not
// list in Inject is an error: the host could not have waited for it.
func (c *Context) Service(name string) (any, error) {
	if !c.inst.kind.injects(name) {
		return nil, fmt.Errorf("service %q is not injected by plugin %q (add it to Kind.Inject)", name, c.inst.kind.Name)
	}
	c.host.mu.Lock()
	defer c.host.mu.Unlock()
	s := c.host.services[name]
	if s == nil {
		return nil, fmt.Errorf("service %q is not available", name)
	}
	return s.value, nil
}

// provided returns the value of the service name, provided by the host or
// by an instance, whether or not the kind injects it (see [Key.Provided]).
// A read that finds none is recorded: the host refuses to provide name
// later.
func (c *Context) provided(name string) (any, bool) {
	h := c.host
	h.mu.Lock()
	defer h.mu.Unlock()
	if s := h.services[name]; s != nil {
		return s.value, true
	}
	if h.readUnset[name] == "" {
		h.readUnset[name] = c.inst.spec.ID
	}
	return nil, false
}

// Use returns the injected service name as a T.
func Use[T any](c *Context, name string) (T, error) {
	var zero T
	v, err := c.Service(name)
	if err != nil {
		return zero, err
	}
	t, ok := v.(T)
	if !ok {
		return zero, fmt.Errorf("service %q is a %T, not a %T", name, v, zero)
	}
	return t, nil
}

// Provide offers a service to other instances until this one is disposed.
// It may be called during Apply or later, from any goroutine (a service that
// exists only once a connection is up, say).
// The kind must list it in Provides, and no one else may provide it.
// Instances that inject it are disposed before this one is.
func (c *Context) Provide(name string, v any) error {
	k := c.inst.kind
	if !k.provides(name) {
		return fmt.Errorf("plugin %q does not declare that it provides %q (add it to Kind.Provides)", k.Name, name)
	}
	h := c.host
	svc := &service{value: v, owner: c.inst}
	h.mu.Lock()
	err := h.claimLocked(name, svc)
	h.mu.Unlock()
	if err == nil {
		err = h.attach(name, svc)
	}
	if err != nil {
		return err
	}
	h.post(h.wakePending)
	_, err = c.inst.fiber.Defer("withdraw service "+name, func(context.Context) error {
		h.mu.Lock()
		mine := h.services[name] == svc
		if mine {
			delete(h.services, name)
		}
		h.mu.Unlock()
		if mine {
			h.detach(v)
		}
		return nil
	})
	return err
}

// Begin tells the host that the instance has initial work in flight (an MCP
// connect and discovery, say). The entry stays `starting` until every done
// function returned by Begin has been called; done(err) with a non-nil err
// fails the instance. done may be called from any goroutine, once; later
// calls do nothing.
func (c *Context) Begin(step string) (done func(error)) {
	h, inst := c.host, c.inst
	h.mu.Lock()
	inst.begun++
	h.mu.Unlock()
	var once sync.Once
	return func(err error) {
		once.Do(func() { h.post(func() { h.finish(inst, step, err) }) })
	}
}

// Fail reports that the instance can no longer work (its server exited, its
// connection dropped). The host disposes it and marks the entry failed with
// err. Fail never blocks and may be called from any goroutine, including one
// the instance owns.
func (c *Context) Fail(err error) {
	h, inst := c.host, c.inst
	h.post(func() { h.failed(inst, err) })
}

// Reconnecting reports that the instance, once ready, lost what it serves
// from (its server's connection) and is getting it back; err says why. The
// entry shows state reconnecting; what the instance registered stays.
// Reconnecting(nil) reports that it is back (state ready), also from
// needs-login (see [Context.NeedsLogin]). Neither blocks;
// both may be called from any goroutine and are ignored when the entry is
// not ready or reconnecting, or the instance no longer serves it.
func (c *Context) Reconnecting(err error) {
	h, inst := c.host, c.inst
	h.post(func() { h.reconnecting(inst, err) })
}

// NeedsLogin reports that the instance, once started, cannot serve until a
// person logs in (its server's refresh token was refused, say); err says
// why and what to run. The entry shows state needs-login, which counts as
// settled; the instance keeps running, unregisters what it serves itself,
// and calls Reconnecting(nil) once the login is there (state ready). A
// fresh instance that needs a login from the start ends its initial work
// with a [LoginNeeded] error instead. It never blocks.
func (c *Context) NeedsLogin(err error) {
	h, inst := c.host, c.inst
	h.post(func() { h.needsLogin(inst, err) })
}

// Predecessor returns the plugin of the instance this one is to replace
// (make before break, see [Kind.MakeBeforeBreak]), or nil for a fresh
// start. It is the same until this instance takes over, and nil from
// then on (the host lets go of the replaced instance, so that it can be
// collected); the predecessor may be disposed at any moment (it failed, or
// this instance took over).
func (c *Context) Predecessor() Plugin {
	h := c.host
	h.mu.Lock()
	defer h.mu.Unlock()
	if p := c.inst.pred; p != nil {
		return p.plugin
	}
	return nil
}

// Go runs fn on a goroutine owned by the instance's fiber.
func (c *Context) Go(name string, fn func(ctx context.Context)) error {
	return c.inst.fiber.Go(name, fn)
}

// Defer registers a disposer on the instance's fiber.
func (c *Context) Defer(name string, fn fiber.Disposer) (release fiber.Disposer, err error) {
	return c.inst.fiber.Defer(name, fn)
}

// PerHost returns the value of the host's per-host store under key,
// creating it with newValue on first use. Plugins keep per-host state there
// (a reservation table, a process spawner) instead of in package variables,
// so that two hosts in one process never see each other's state. Use an
// unexported type as key. newValue runs under the host's lock: it must not
// call the host. What a program tells its plugins is not kept here: it
// provides it before a load ([Key.ProvideBy]) and plugins read it with
// [Key.Provided].
//
// A value that implements io.Closer is closed by [Host.Close] after every
// instance is disposed (newest value first); its error joins Close's.
func (c *Context) PerHost(key any, newValue func() any) any {
	return c.host.PerHost(key, newValue)
}
