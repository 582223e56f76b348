package host

import "fmt"

// Key names a service and the type of its value, so that providing and
// using it is checked by the compiler rather than by a string and an
// assertion at run time:
//
//	var Tools = host.NewKey[*Registry]("tools")
//	reg, err := Tools.From(ctx)   // a *Registry
//	err = Tools.ProvideBy(h, reg) // only a *Registry
//
// Kinds list a key's [Key.Name] in Inject and Provides. A key and the
// string it names are the same service: [Use] and [Context.Service] find
// it too.
type Key[T any] struct{ name string }

// NewKey returns the key of the service name, whose value is a T.
func NewKey[T any](name string) Key[T] { return Key[T]{name: name} }

// Name is the service's name, for Kind.Inject and Kind.Provides.
func (k Key[T]) Name() string { return k.name }

// From returns the service injected into the instance of ctx (see
// [Context.Service]).
func (k Key[T]) From(ctx *Context) (T, error) { return Use[T](ctx, k.name) }

// Provide offers v from the instance of ctx (see [Context.Provide]).
func (k Key[T]) Provide(ctx *Context, v T) error { return ctx.Provide(k.name, v) }

// ProvideBy offers v from the host itself (see [Host.Provide]): the
// program's own services, provided before a load.
func (k Key[T]) ProvideBy(h *Host, v T) error { return h.Provide(k.name, v) }

// Provided returns the value provided under k and whether there is one,
// without k in the kind's Inject: how a plugin reads a setting its program
// gives before it loads a configuration ([Key.ProvideBy]: the gateway's
// options, who this harness is), for which nothing is to wait. A plugin
// that finds none goes on with its default, and the host then refuses to
// provide k later (the entry would never see it). A value under k's name
// that is not a T is an error.
func (k Key[T]) Provided(ctx *Context) (v T, ok bool, err error) {
	got, ok := ctx.provided(k.name)
	return provided[T](k.name, got, ok)
}

// ProvidedBy is [Key.Provided] for the program that runs h.
func (k Key[T]) ProvidedBy(h *Host) (v T, ok bool, err error) {
	h.mu.Lock()
	s := h.services[k.name]
	h.mu.Unlock()
	if s == nil {
		return v, false, nil
	}
	return provided[T](k.name, s.value, true)
}

func provided[T any](name string, v any, ok bool) (T, bool, error) {
	var zero T
	if !ok {
		return zero, false, nil
	}
	t, isT := v.(T)
	if !isT {
		return zero, false, fmt.Errorf("service %q is a %T, not a %T", name, v, zero)
	}
	return t, true, nil
}
