// Package resources provides the resources service: the registry of the
// resources (and resource templates) that servers offer, beside the tools
// service (docs/rfc/0008-resources-prompts.md).
//
// A registration is a [Source]: one server's resources, its templates, and
// how to read (and subscribe to) them. It follows the tools registry's rules
// (docs/rfc/0002-tools-service.md):
//
//  1. A registration belongs to a fiber: it is gone when the fiber is
//     disposed, or earlier through [Set.Release].
//  2. [Registry.Replace] swaps one registration for another in one step: a
//     reader sees the old source or the new one, never neither.
//  3. Every change is one event: [Registry.Version] goes up once,
//     [Registry.Changed] is closed, and the host the registry is provided to
//     tells it on its stream (host.ServiceChanged, with the servers added
//     and removed).
//  4. A server is registered by one source at a time; resources are keyed
//     by (server, uri), templates by (server, uriTemplate).
//  5. Subscriptions are counted per (server, uri): the first subscriber asks
//     the source ([Source.Subscribe]), the last to leave tells it
//     ([Source.Unsubscribe]); [Set.Updated] reaches every subscriber. They
//     outlive a Replace (a reconnect, a make-before-break): the new source
//     finds them in [Registry.Subscribed].
package resources

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/harness-go/harness/fiber"
	"github.com/harness-go/harness/host"
	"github.com/harness-go/harness/internal/completion"
)

// Service is the name under which the host provides the registry.
const Service = "resources"

// Key is the registry's service key: Key.From(ctx) in a plugin's Apply,
// Key.ProvideBy(h, reg) in a program.
var Key = host.NewKey[*Registry](Service)

// Resource is one resource a server lists (MCP's Resource).
type Resource struct {
	Server      string          `json:"server"`
	URI         string          `json:"uri"`
	Name        string          `json:"name"`
	Title       string          `json:"title,omitempty"`
	Description string          `json:"description,omitempty"`
	MIMEType    string          `json:"mimeType,omitempty"`
	Size        *int64          `json:"size,omitempty"`
	Annotations json.RawMessage `json:"annotations,omitempty"`
	// Definition is the resource object as the server listed it, kept raw
	// so that the gateway serves it unchanged (_meta, icons…); nil for
	// native resources. The fields above are what counts.
	Definition json.RawMessage `json:"-"`
}

// Template is one resource template a server lists (MCP's
// ResourceTemplate).
type Template struct {
	Server      string          `json:"server"`
	URITemplate string          `json:"uriTemplate"`
	Name        string          `json:"name"`
	Title       string          `json:"title,omitempty"`
	Description string          `json:"description,omitempty"`
	MIMEType    string          `json:"mimeType,omitempty"`
	Annotations json.RawMessage `json:"annotations,omitempty"`
	// Definition is the template object as listed, raw; nil for native
	// templates.
	Definition json.RawMessage `json:"-"`
}

// Content is one item of a read: text, or a blob (base64, as MCP sends it).
type Content struct {
	URI      string  `json:"uri"`
	MIMEType string  `json:"mimeType,omitempty"`
	Text     *string `json:"text,omitempty"`
	Blob     string  `json:"blob,omitempty"`
}

// IsText reports whether the content is text (a blob otherwise).
func (c Content) IsText() bool { return c.Text != nil }

// ReadResult is what a read gives back.
type ReadResult struct {
	Contents []Content
	// Raw is, for a resource an MCP server provides, the server's
	// ReadResourceResult as it came, for callers that pass it on unchanged
	// (the gateway). Nil for native sources.
	Raw json.RawMessage
}

// Source is one server's registration.
type Source struct {
	// Server names the server: mcp-client's serverName, or the name a
	// native plugin chose.
	Server    string
	Resources []Resource
	Templates []Template
	// Read reads uri, listed or not (a template's expansion is not).
	// Required.
	Read func(ctx context.Context, uri string) (ReadResult, error)
	// Subscribe asks to hear of changes of uri (the source calls
	// Set.Updated); Unsubscribe ends that. Nil: the server offers no
	// subscriptions.
	Subscribe   func(ctx context.Context, uri string) error
	Unsubscribe func(ctx context.Context, uri string) error
	// Complete answers completion/complete for one of the server's
	// templates: params are the request's, raw; the result is the
	// server's CompleteResult, raw. Nil: no completion.
	Complete func(ctx context.Context, params json.RawMessage) (json.RawMessage, error)
}

// Errors a read or a subscription wraps.
var (
	ErrConflict       = errors.New("already registered")
	ErrUnknownServer  = errors.New("no such server")
	ErrNoSubscription = errors.New("the server offers no subscriptions")
)

// Registry holds the registered sources. It is safe for concurrent use.
type Registry struct {
	mu      sync.RWMutex
	sources map[string]*entry // by server
	changes host.Changes
	subs    map[subKey]*subscription
}

type entry struct{ src Source }

type subKey struct{ server, uri string }

// subscription is the set of subscribers of one (server, uri).
type subscription struct {
	fns map[*Subscriber]func(uri string)
}

// Subscriber is one subscription (see [Registry.Subscribe]).
type Subscriber struct {
	r    *Registry
	key  subKey
	once sync.Once
}

// New returns an empty registry.
func New() *Registry {
	return &Registry{sources: map[string]*entry{}, subs: map[subKey]*subscription{}}
}

// From returns the registry injected into a plugin instance.
func From(ctx *host.Context) (*Registry, error) { return Key.From(ctx) }

// Set is one registration.
type Set struct {
	r       *Registry
	e       *entry
	release fiber.Disposer
}

// Release unregisters the source. It runs once; later calls do nothing.
func (s *Set) Release(ctx context.Context) error { return s.release(ctx) }

// Server is the server the set registers.
func (s *Set) Server() string { return s.e.src.Server }

// Updated tells the subscribers of uri that it changed. It never blocks
// for long: subscribers are called in turn, and must be quick.
func (s *Set) Updated(uri string) {
	s.r.mu.RLock()
	var fns []func(string)
	if sub := s.r.subs[subKey{s.e.src.Server, uri}]; sub != nil {
		for _, fn := range sub.fns {
			fns = append(fns, fn)
		}
	}
	s.r.mu.RUnlock()
	for _, fn := range fns {
		fn(uri)
	}
}

// Register adds src, tied to f (see [Registry.Replace]).
func (r *Registry) Register(f *fiber.Fiber, src Source) (*Set, error) {
	return r.Replace(f, nil, src)
}

// Replace registers src in place of old (nil for none) in one step, tied
// to f. A server registered by someone other than old is a conflict: the
// old source is removed anyway and nothing is registered.
func (r *Registry) Replace(f *fiber.Fiber, old *Set, src Source) (*Set, error) {
	if err := check(&src); err != nil {
		return nil, err
	}
	e := &entry{src: src}
	r.mu.Lock()
	var conflict error
	if cur, taken := r.sources[src.Server]; taken && (old == nil || cur != old.e) {
		conflict = fmt.Errorf("resources of server %q are %w", src.Server, ErrConflict)
	}
	var added, removed []string
	if old != nil && r.sources[old.e.src.Server] == old.e {
		delete(r.sources, old.e.src.Server)
		removed = append(removed, old.e.src.Server)
	}
	if conflict == nil {
		r.sources[src.Server] = e
		added = append(added, src.Server)
	}
	if len(added)+len(removed) > 0 {
		r.changes.Record(host.Diff(added, removed))
	}
	r.mu.Unlock()
	if old != nil {
		_ = old.release(context.Background())
	}
	if conflict != nil {
		return nil, conflict
	}
	set := &Set{r: r, e: e}
	rel, err := f.Defer("unregister the resources of "+src.Server, func(context.Context) error {
		r.mu.Lock()
		defer r.mu.Unlock()
		if r.sources[src.Server] == e {
			delete(r.sources, src.Server)
			r.changes.Record(nil, []string{src.Server})
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("register resources: %w", err)
	}
	set.release = rel
	return set, nil
}

// check validates a source and fills in the server of each item.
func check(src *Source) error {
	if src.Server == "" {
		return errors.New("resources: a source needs a server name")
	}
	if src.Read == nil {
		return fmt.Errorf("resources of server %q: no Read", src.Server)
	}
	seen := map[string]bool{}
	res := slices.Clone(src.Resources)
	for i := range res {
		if res[i].URI == "" {
			return fmt.Errorf("resources of server %q: resource %d has no uri", src.Server, i)
		}
		if seen[res[i].URI] {
			return fmt.Errorf("resources of server %q: resource %q is listed twice", src.Server, res[i].URI)
		}
		seen[res[i].URI] = true
		res[i].Server = src.Server
	}
	slices.SortFunc(res, func(a, b Resource) int { return strings.Compare(a.URI, b.URI) })
	src.Resources = res
	seen = map[string]bool{}
	tpl := slices.Clone(src.Templates)
	for i := range tpl {
		if tpl[i].URITemplate == "" {
			return fmt.Errorf("resources of server %q: template %d has no uriTemplate", src.Server, i)
		}
		if seen[tpl[i].URITemplate] {
			return fmt.Errorf("resources of server %q: template %q is listed twice", src.Server, tpl[i].URITemplate)
		}
		seen[tpl[i].URITemplate] = true
		tpl[i].Server = src.Server
	}
	slices.SortFunc(tpl, func(a, b Template) int { return strings.Compare(a.URITemplate, b.URITemplate) })
	src.Templates = tpl
	return nil
}

// Changes is the registry's change record (see [host.Changes]).
func (r *Registry) Changes() *host.Changes { return &r.changes }

// Changed returns a channel closed at the next change, for a reader that
// has the registry but not its host (the gateway).
func (r *Registry) Changed() <-chan struct{} { return r.changes.Changed() }

// Version increases with every change.
func (r *Registry) Version() uint64 { return r.changes.Version() }

// Servers returns the registered servers, sorted.
func (r *Registry) Servers() []string {
	r.mu.RLock()
	defer r.mu.RUnlock()
	out := make([]string, 0, len(r.sources))
	for s := range r.sources {
		out = append(out, s)
	}
	slices.Sort(out)
	return out
}

// Has reports whether server is registered.
func (r *Registry) Has(server string) bool {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return r.sources[server] != nil
}

// List returns the resources of server ("" for every server), sorted by
// server, then uri.
func (r *Registry) List(server string) []Resource {
	r.mu.RLock()
	defer r.mu.RUnlock()
	var out []Resource
	for _, name := range r.serversLocked(server) {
		out = append(out, r.sources[name].src.Resources...)
	}
	return out
}

// Templates returns the templates of server ("" for every server), sorted
// by server, then uriTemplate.
func (r *Registry) Templates(server string) []Template {
	r.mu.RLock()
	defer r.mu.RUnlock()
	var out []Template
	for _, name := range r.serversLocked(server) {
		out = append(out, r.sources[name].src.Templates...)
	}
	return out
}

// Counts returns how many resources and templates server has.
func (r *Registry) Counts(server string) (resources, templates int) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	if e := r.sources[server]; e != nil {
		return len(e.src.Resources), len(e.src.Templates)
	}
	return 0, 0
}

// Len is the number of resources and templates of every server.
func (r *Registry) Len() int {
	r.mu.RLock()
	defer r.mu.RUnlock()
	n := 0
	for _, e := range r.sources {
		n += len(e.src.Resources) + len(e.src.Templates)
	}
	return n
}

func (r *Registry) serversLocked(server string) []string {
	if server != "" {
		if r.sources[server] == nil {
			return nil
		}
		return []string{server}
	}
	out := make([]string, 0, len(r.sources))
	for s := range r.sources {
		out = append(out, s)
	}
	slices.Sort(out)
	return out
}

// Lookup returns the resource server lists under uri.
func (r *Registry) Lookup(server, uri string) (Resource, bool) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	e := r.sources[server]
	if e == nil {
		return Resource{}, false
	}
	i, ok := slices.BinarySearchFunc(e.src.Resources, uri, func(a Resource, uri string) int { return strings.Compare(a.URI, uri) })
	if !ok {
		return Resource{}, false
	}
	return e.src.Resources[i], true
}

func (r *Registry) source(server string) (Source, error) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	e := r.sources[server]
	if e == nil {
		return Source{}, fmt.Errorf("server %q: %w", server, ErrUnknownServer)
	}
	return e.src, nil
}

// Read reads uri of server. The server decides whether uri exists (a
// template's expansion is not listed); an unknown server wraps
// ErrUnknownServer.
func (r *Registry) Read(ctx context.Context, server, uri string) (ReadResult, error) {
	src, err := r.source(server)
	if err != nil {
		return ReadResult{}, err
	}
	return src.Read(ctx, uri)
}

// Completion is what a server suggests for the value of a template's
// variable (MCP's CompleteResult.completion).
type Completion = completion.Result

// Completes reports whether server suggests values of its templates'
// variables (completion/complete).
func (r *Registry) Completes(server string) bool {
	src, err := r.source(server)
	return err == nil && src.Complete != nil
}

// CompleteTemplate asks server for values of the variable arg of its
// template uriTemplate that go on from value, given the variables already
// filled in (the request's context.arguments). A server that offers no
// completion answers none; an unknown server wraps ErrUnknownServer.
func (r *Registry) CompleteTemplate(ctx context.Context, server, uriTemplate, arg, value string, given map[string]string) (Completion, error) {
	src, err := r.source(server)
	if err != nil {
		return Completion{}, err
	}
	if src.Complete == nil {
		return Completion{Values: []string{}}, nil
	}
	raw, err := src.Complete(ctx, completion.Params(map[string]string{"type": "ref/resource", "uri": uriTemplate}, arg, value, given))
	if err != nil {
		return Completion{}, err
	}
	return completion.Parse(raw)
}

// Subscribe calls fn at every change of uri of server until the
// subscriber stops. The first subscriber of (server, uri) asks the source;
// when that fails, nothing is subscribed.
func (r *Registry) Subscribe(ctx context.Context, server, uri string, fn func(uri string)) (*Subscriber, error) {
	src, err := r.source(server)
	if err != nil {
		return nil, err
	}
	if src.Subscribe == nil {
		return nil, fmt.Errorf("server %q: %w", server, ErrNoSubscription)
	}
	key := subKey{server, uri}
	sub := &Subscriber{r: r, key: key}
	r.mu.Lock()
	s := r.subs[key]
	first := s == nil
	if first {
		s = &subscription{fns: map[*Subscriber]func(string){}}
		r.subs[key] = s
	}
	s.fns[sub] = fn
	r.mu.Unlock()
	if first {
		if err := src.Subscribe(ctx, uri); err != nil {
			r.drop(sub)
			return nil, err
		}
	}
	return sub, nil
}

// drop removes sub and reports whether it was the last of its key.
func (r *Registry) drop(sub *Subscriber) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	s := r.subs[sub.key]
	if s == nil {
		return false
	}
	delete(s.fns, sub)
	if len(s.fns) == 0 {
		delete(r.subs, sub.key)
		return true
	}
	return false
}

// Stop ends the subscription; the last subscriber of its uri tells the
// source. It runs once.
func (s *Subscriber) Stop(ctx context.Context) error {
	var err error
	s.once.Do(func() {
		if !s.r.drop(s) {
			return
		}
		src, serr := s.r.source(s.key.server)
		if serr != nil || src.Unsubscribe == nil {
			return // the server is gone: nothing to tell
		}
		err = src.Unsubscribe(ctx, s.key.uri)
	})
	return err
}

// Subscribed returns the uris of server someone is subscribed to, sorted:
// what a source registered in place of another (a reconnect, an edit)
// subscribes to anew.
func (r *Registry) Subscribed(server string) []string {
	r.mu.RLock()
	defer r.mu.RUnlock()
	var out []string
	for k := range r.subs {
		if k.server == server {
			out = append(out, k.uri)
		}
	}
	slices.Sort(out)
	return out
}

// JSON returns the resource as MCP lists it, with "server" added: the
// server's own object when there is one (what it listed, unchanged).
func (res Resource) JSON() json.RawMessage {
	if len(res.Definition) > 0 {
		return withServer(res.Definition, res.Server)
	}
	b, _ := json.Marshal(res)
	return b
}

// JSON returns the template as MCP lists it, with "server" added.
func (t Template) JSON() json.RawMessage {
	if len(t.Definition) > 0 {
		return withServer(t.Definition, t.Server)
	}
	b, _ := json.Marshal(t)
	return b
}

// withServer puts "server" first in a JSON object.
func withServer(obj json.RawMessage, server string) json.RawMessage {
	s, _ := json.Marshal(server)
	body := strings.TrimSpace(string(obj))
	body = strings.TrimPrefix(body, "{")
	out := `{"server":` + string(s)
	if strings.TrimSpace(strings.TrimSuffix(body, "}")) != "" {
		out += ","
	}
	return json.RawMessage(out + body)
}
