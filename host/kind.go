package host

import (
	"context"
	"fmt"
	"reflect"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
)

// Kind describes one plugin kind: what `name:` in cordis.yml selects.
//
// Kinds are registered once, at program start, from an init function in the
// plugin's package (see [Register]); the set of kinds a binary offers is the
// set of plugin packages it imports.
type Kind struct {
	// Name is the value of `name:` in cordis.yml that selects this kind.
	Name string
	// Aliases are further names for the same kind.
	Aliases []string
	// Doc is one line saying what the kind does; help and `harness schema`
	// show it.
	Doc string
	// Inject lists the services an instance needs. An instance is applied
	// only when all of them are provided, and is disposed before any of their
	// providers is.
	Inject []string
	// Provides lists the services an instance may provide with
	// [Context.Provide]. The host uses it to tell an instance that waits for a
	// service that will come from one that waits for nothing.
	Provides []string
	// New returns a fresh plugin value holding the defaults. The entry's
	// `config:` is decoded strictly into it: its exported fields, named by
	// their yaml tags, are the configuration.
	New func() Plugin
	// MakeBeforeBreak opts the kind in to make-before-break reloads: when an
	// entry's configuration changes, the new instance starts beside the one
	// that runs and takes over from it once ready (rule 10 of the package
	// documentation). Its plugin must implement [Successor]. A kind that
	// provides services, or holds a resource two instances cannot share,
	// does not opt in.
	MakeBeforeBreak bool
	// Live lists the top-level keys of `config:` that apply to a running
	// instance without re-creating it (rule 11). Its plugin must implement
	// [Reconfigurer].
	Live []string
}

// Plugin is one instance of a kind. See the package documentation for the
// order in which the host calls its methods.
type Plugin interface {
	// Apply starts the instance inside ctx's fiber. It must not block on
	// slow work: start goroutines with [Context.Go] and report initial work
	// with [Context.Begin]. The host logs a warning naming the entry when
	// Apply (or TakeOver, or Reconfigure) runs longer than
	// [Options.SlowHook].
	Apply(ctx *Context) error
}

// Successor is implemented by the plugins of a kind with
// [Kind.MakeBeforeBreak].
type Successor interface {
	// TakeOver is called on the host's goroutine once the new instance is
	// ready, with the plugin of the instance it replaces. It moves what the
	// predecessor registered to itself in one step (for tools:
	// tools.Registry.Replace with the predecessor's set), so that readers
	// see the old registrations or the new ones, never neither. It must not
	// block. An error fails the new instance; the predecessor keeps serving.
	TakeOver(pred Plugin) error
}

// Drainer is implemented by plugins whose work in flight (calls already
// routed to them) should finish before they are disposed. The host calls
// Drain on an instance that a make-before-break replaced, then disposes it;
// ctx ends when the host closes. Drain bounds itself (each call has its own
// timeout).
type Drainer interface {
	Drain(ctx context.Context)
}

// Reconfigurer is implemented by the plugins of a kind with [Kind.Live].
type Reconfigurer interface {
	// Reconfigure applies the live fields of next — a fresh plugin value
	// decoded from the edited entry, which differs from the running
	// configuration in live keys only — to the running instance. It runs on
	// the host's goroutine and must not block. An error makes the host
	// re-create the instance instead.
	Reconfigure(next Plugin) error
}

// Validator is implemented by plugins that check their decoded configuration.
// A [FieldError] (or an error joining several) points the message at the
// offending key of cordis.yml.
type Validator interface {
	Validate() error
}

// StatusReporter is implemented by plugins that describe their live state for
// `harness status`. The value must marshal to JSON; if it also implements
// [TextStatus] the text form uses those lines.
type StatusReporter interface {
	Status() any
}

// TextStatus renders a status value as indented lines for people.
type TextStatus interface {
	StatusLines() []string
}

// Uniquer is implemented by plugins with configuration values that must be
// unique among the enabled entries of a file (an MCP serverName, say).
// `harness validate` reports duplicates; at run time the plugin itself
// enforces the rule, so that a duplicate fails only the later instance.
type Uniquer interface {
	// Unique returns field path → value pairs, e.g. {"serverName": "github"}.
	Unique() map[string]string
}

var kindName = regexp.MustCompile(`^[A-Za-z0-9@][A-Za-z0-9@/._-]*$`)

// registry holds the plugin kinds. It is filled by init functions and only
// read afterwards, like database/sql's drivers: the one package-level table.
var registry = struct {
	sync.RWMutex
	byName map[string]*Kind
}{byName: map[string]*Kind{}}

// Register adds a plugin kind. It panics on a programming mistake (an empty
// or malformed name, a nil New, a name or alias already taken), so that the
// mistake stops the program at start-up.
func Register(k Kind) {
	if k.New == nil {
		panic(fmt.Sprintf("host.Register(%q): New is nil", k.Name))
	}
	if k.MakeBeforeBreak {
		if _, ok := k.New().(Successor); !ok {
			panic(fmt.Sprintf("host.Register(%q): MakeBeforeBreak needs a plugin that implements host.Successor", k.Name))
		}
		if len(k.Provides) > 0 {
			panic(fmt.Sprintf("host.Register(%q): a kind that provides services cannot make before break (a service has one provider at a time)", k.Name))
		}
	}
	if len(k.Live) > 0 {
		if _, ok := k.New().(Reconfigurer); !ok {
			panic(fmt.Sprintf("host.Register(%q): Live fields need a plugin that implements host.Reconfigurer", k.Name))
		}
		if bad := unknownLive(k); len(bad) > 0 {
			panic(fmt.Sprintf("host.Register(%q): Live names %s, not a key of config: (a misspelt key would silently restart)", k.Name, strings.Join(bad, ", ")))
		}
	}
	registry.Lock()
	defer registry.Unlock()
	kp := &k
	for _, n := range append([]string{k.Name}, k.Aliases...) {
		if !kindName.MatchString(n) {
			panic(fmt.Sprintf("host.Register: invalid plugin name %q", n))
		}
		if _, dup := registry.byName[n]; dup {
			panic(fmt.Sprintf("host.Register: plugin name %q registered twice", n))
		}
		registry.byName[n] = kp
	}
}

// unknownLive returns the Live keys that are not top-level keys of the
// kind's configuration (the yaml keys of New's struct), quoted.
func unknownLive(k Kind) []string {
	t := reflect.TypeOf(k.New())
	for t != nil && t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t == nil || t.Kind() != reflect.Struct {
		return nil // decoding reports such a kind's configuration itself
	}
	keys, open := yamlFields(t)
	var bad []string
	for _, l := range k.Live {
		if _, ok := keys[l]; !ok && !open {
			bad = append(bad, strconv.Quote(l))
		}
	}
	return bad
}

// LookupKind returns the kind registered under name (or an alias).
func LookupKind(name string) (*Kind, bool) {
	registry.RLock()
	defer registry.RUnlock()
	k, ok := registry.byName[name]
	return k, ok
}

// Kinds returns every registered kind once, sorted by name.
func Kinds() []*Kind {
	registry.RLock()
	defer registry.RUnlock()
	seen := map[*Kind]bool{}
	var out []*Kind
	for _, k := range registry.byName {
		if !seen[k] {
			seen[k] = true
			out = append(out, k)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// KindNames returns every registered name and alias, sorted.
func KindNames() []string {
	registry.RLock()
	defer registry.RUnlock()
	out := make([]string, 0, len(registry.byName))
	for n := range registry.byName {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// ConfigKeys returns the top-level keys of the kind's `config:` (the yaml
// keys of New's struct), sorted; none for a configuration that is not a
// struct.
func (k *Kind) ConfigKeys() []string {
	t := reflect.TypeOf(k.New())
	for t != nil && t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t == nil || t.Kind() != reflect.Struct {
		return nil
	}
	fields, _ := yamlFields(t)
	keys := make([]string, 0, len(fields))
	for key := range fields {
		keys = append(keys, key)
	}
	sort.Strings(keys)
	return keys
}

func (k *Kind) injects(service string) bool { return slices.Contains(k.Inject, service) }

func (k *Kind) live(key string) bool { return slices.Contains(k.Live, key) }

func (k *Kind) provides(service string) bool { return slices.Contains(k.Provides, service) }
