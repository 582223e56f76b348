// Package prompts provides the prompts service: the registry of the prompts
// servers offer, under public names, beside the tools service
// (docs/rfc/0008-resources-prompts.md).
//
// It follows the tools registry's rules (docs/rfc/0002-tools-service.md):
//
//  1. A registration belongs to a fiber: it is gone when the fiber is
//     disposed, or earlier through [Set.Release].
//  2. [Registry.Replace] swaps one generation for another in one step, all
//     or nothing: a reader sees the old prompts or the new ones.
//  3. Every change is one event: [Registry.Version] goes up once,
//     [Registry.Changed] is closed, and the host the registry is provided to
//     tells it on its stream (host.ServiceChanged, with the names added and
//     removed).
//  4. A server's prompt is published as [PublicName] of its server and its
//     own name — the naming algorithm of tools (docs/rfc/0003-mcp-client.md,
//     "Names"); a native prompt (no server: a plugin's own, as a native
//     tool is) under its own name, which must keep the function-name
//     contract as a native tool's does. A name registered by someone else
//     is a conflict.
package prompts

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
	"github.com/harness-go/harness/internal/mcpname"
)

// Service is the name under which the host provides the registry.
const Service = "prompts"

// Key is the registry's service key: Key.From(ctx) in a plugin's Apply,
// Key.ProvideBy(h, reg) in a program.
var Key = host.NewKey[*Registry](Service)

// PublicName is the name a prompt of server is published under:
// mcp__<server>__<name>, normalized as tool names are.
func PublicName(server, name string) string { return mcpname.Public(server, name) }

// Argument is one argument a prompt takes.
type Argument struct {
	Name        string `json:"name"`
	Title       string `json:"title,omitempty"`
	Description string `json:"description,omitempty"`
	Required    bool   `json:"required,omitempty"`
}

// Prompt is one prompt.
type Prompt struct {
	// Name is the public name; the registry sets it from Server and
	// RawName.
	Name string `json:"name"`
	// Server and RawName are the server and the prompt's name there. A
	// native prompt, a plugin's own, has no server: it is published
	// under RawName unchanged, as a native tool is under its name
	// (docs/rfc/0008-resources-prompts.md, "Native prompts").
	Server      string     `json:"server,omitempty"`
	RawName     string     `json:"rawName"`
	Title       string     `json:"title,omitempty"`
	Description string     `json:"description,omitempty"`
	Arguments   []Argument `json:"arguments,omitempty"`
	// Definition is the prompt object as the server listed it, raw, for
	// the gateway; nil for native prompts.
	Definition json.RawMessage `json:"-"`
	// Get renders the prompt with args. Required.
	Get func(ctx context.Context, args map[string]string) (Result, error) `json:"-"`
	// Complete answers completion/complete for one of the prompt's
	// arguments: params are the request's, raw (its ref names the prompt
	// by its public name; mcp-client renames it for its server); the
	// result is a CompleteResult, raw. Nil: none.
	Complete func(ctx context.Context, params json.RawMessage) (json.RawMessage, error) `json:"-"`
}

// Message is one message of a rendered prompt; Content is MCP's content
// block, raw.
type Message struct {
	Role    string          `json:"role"`
	Content json.RawMessage `json:"content"`
}

// Result is a rendered prompt (MCP's GetPromptResult).
type Result struct {
	Description string    `json:"description,omitempty"`
	Messages    []Message `json:"messages"`
	// Raw is the server's GetPromptResult as it came, for the gateway; nil
	// for native prompts.
	Raw json.RawMessage `json:"-"`
}

// TextMessage is a message of one text block.
func TextMessage(role, text string) Message {
	b, _ := json.Marshal(map[string]string{"type": "text", "text": text})
	return Message{Role: role, Content: b}
}

// Text returns what a message says, as a person or a model reads it: a
// text block's text, an embedded resource's text, and a placeholder for
// anything else ([image: image/png, content discarded], as in tool
// results).
func (m Message) Text() string {
	var c struct {
		Type     string `json:"type"`
		Text     string `json:"text"`
		MIMEType string `json:"mimeType"`
		URI      string `json:"uri"`
		Resource *struct {
			URI      string  `json:"uri"`
			MIMEType string  `json:"mimeType"`
			Text     *string `json:"text"`
		} `json:"resource"`
	}
	if err := json.Unmarshal(m.Content, &c); err != nil {
		return "[unreadable content]"
	}
	mime := func(s string) string {
		if s == "" {
			return "unknown"
		}
		return s
	}
	switch c.Type {
	case "text":
		return c.Text
	case "image", "audio":
		return fmt.Sprintf("[%s: %s, content discarded]", c.Type, mime(c.MIMEType))
	case "resource":
		if c.Resource != nil && c.Resource.Text != nil {
			return *c.Resource.Text
		}
		if c.Resource != nil {
			return fmt.Sprintf("[resource %s: %s, content discarded]", c.Resource.URI, mime(c.Resource.MIMEType))
		}
	case "resource_link":
		return fmt.Sprintf("[resource link: %s]", c.URI)
	}
	return fmt.Sprintf("[unsupported content type: %s]", c.Type)
}

// ErrConflict is wrapped by registration errors about a name that is taken;
// ErrUnknown by a Get of a name nobody registered.
var (
	ErrConflict = errors.New("already registered")
	ErrUnknown  = errors.New("unknown prompt")
)

// Registry holds the registered prompts. It is safe for concurrent use.
type Registry struct {
	mu      sync.RWMutex
	prompts map[string]*entry
	sorted  []*entry // nil when stale
	changes host.Changes
}

type entry struct{ p Prompt }

// New returns an empty registry.
func New() *Registry {
	return &Registry{prompts: map[string]*entry{}}
}

// From returns the registry injected into a plugin instance.
func From(ctx *host.Context) (*Registry, error) { return Key.From(ctx) }

// Set is one registration.
type Set struct {
	entries []*entry
	release fiber.Disposer
}

// Release unregisters the set's prompts. It runs once.
func (s *Set) Release(ctx context.Context) error { return s.release(ctx) }

// Names returns the public names of the set, in registration order.
func (s *Set) Names() []string {
	out := make([]string, len(s.entries))
	for i, e := range s.entries {
		out[i] = e.p.Name
	}
	return out
}

// Register adds prompts, all or none, tied to f.
func (r *Registry) Register(f *fiber.Fiber, batch ...Prompt) (*Set, error) {
	return r.Replace(f, nil, batch...)
}

// Replace registers batch in place of old (nil for none) in one step. The
// batch is all or nothing; a name registered by someone other than old
// removes the old prompts anyway and registers nothing.
func (r *Registry) Replace(f *fiber.Fiber, old *Set, batch ...Prompt) (*Set, error) {
	entries := make([]*entry, len(batch))
	seen := map[string]bool{}
	for i, p := range batch {
		if p.RawName == "" {
			return nil, fmt.Errorf("prompt %d: a prompt needs a name", i)
		}
		if p.Get == nil {
			return nil, fmt.Errorf("prompt %q of server %q: no Get", p.RawName, p.Server)
		}
		if p.Server == "" {
			if !mcpname.Valid(p.RawName) {
				return nil, fmt.Errorf("prompt %q: a native prompt's name is published as it is, so it must be 1 to 64 letters, digits, _ or -", p.RawName)
			}
			p.Name = p.RawName
		} else {
			p.Name = PublicName(p.Server, p.RawName)
		}
		if seen[p.Name] {
			return nil, fmt.Errorf("prompt %q is listed twice in one registration", p.Name)
		}
		seen[p.Name] = true
		p.Arguments = slices.Clone(p.Arguments)
		entries[i] = &entry{p: p}
	}
	mine := map[*entry]bool{}
	if old != nil {
		for _, e := range old.entries {
			mine[e] = true
		}
	}
	r.mu.Lock()
	var conflict error
	for _, e := range entries {
		if cur, taken := r.prompts[e.p.Name]; taken && !mine[cur] {
			conflict = fmt.Errorf("prompt %q is %w", e.p.Name, ErrConflict)
			break
		}
	}
	removed := r.removeLocked(mine)
	var added []string
	if conflict == nil {
		for _, e := range entries {
			r.prompts[e.p.Name] = e
			added = append(added, e.p.Name)
		}
	}
	if len(added)+len(removed) > 0 {
		r.changedLocked(added, removed)
	}
	r.mu.Unlock()
	if old != nil {
		_ = old.release(context.Background())
	}
	if conflict != nil {
		return nil, conflict
	}
	set := &Set{entries: entries}
	rel, err := f.Defer(fmt.Sprintf("unregister %d prompt(s)", len(entries)), func(context.Context) error {
		own := make(map[*entry]bool, len(entries))
		for _, e := range entries {
			own[e] = true
		}
		r.mu.Lock()
		defer r.mu.Unlock()
		if removed := r.removeLocked(own); len(removed) > 0 {
			r.changedLocked(nil, removed)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("register prompts: %w", err)
	}
	set.release = rel
	return set, nil
}

// removeLocked removes the given entries that are still registered and
// returns their names.
func (r *Registry) removeLocked(own map[*entry]bool) []string {
	var removed []string
	for e := range own {
		if r.prompts[e.p.Name] == e {
			delete(r.prompts, e.p.Name)
			removed = append(removed, e.p.Name)
		}
	}
	return removed
}

// changedLocked records one change (a name re-added is in neither list).
func (r *Registry) changedLocked(added, removed []string) {
	r.sorted = nil
	r.changes.Record(host.Diff(added, removed))
}

// Changes is the registry's change record (see [host.Changes]).
func (r *Registry) Changes() *host.Changes { return &r.changes }

// Changed returns a channel closed at the next change, for a reader that
// has the registry but not its host (the gateway).
func (r *Registry) Changed() <-chan struct{} { return r.changes.Changed() }

// Version increases with every change.
func (r *Registry) Version() uint64 { return r.changes.Version() }

// Lookup returns the prompt registered under its public name.
func (r *Registry) Lookup(name string) (Prompt, bool) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	e, ok := r.prompts[name]
	if !ok {
		return Prompt{}, false
	}
	return e.p, true
}

// List returns the prompts sorted by public name.
func (r *Registry) List() []Prompt {
	r.mu.RLock()
	if s := r.sorted; s != nil {
		r.mu.RUnlock()
		return promptsOf(s)
	}
	r.mu.RUnlock()
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.sorted == nil {
		s := make([]*entry, 0, len(r.prompts))
		for _, e := range r.prompts {
			s = append(s, e)
		}
		slices.SortFunc(s, func(a, b *entry) int { return strings.Compare(a.p.Name, b.p.Name) })
		r.sorted = s
	}
	return promptsOf(r.sorted)
}

func promptsOf(s []*entry) []Prompt {
	out := make([]Prompt, len(s))
	for i, e := range s {
		out[i] = e.p
	}
	return out
}

// Count returns how many prompts server has.
func (r *Registry) Count(server string) int {
	r.mu.RLock()
	defer r.mu.RUnlock()
	n := 0
	for _, e := range r.prompts {
		if e.p.Server == server {
			n++
		}
	}
	return n
}

// Len is the number of prompts.
func (r *Registry) Len() int {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return len(r.prompts)
}

// Completion is what a server suggests for the value of an argument
// (MCP's CompleteResult.completion).
type Completion = completion.Result

// CompleteWith is a Prompt.Complete for a native prompt: suggest gets the
// argument's name, its value so far and the arguments already given, and
// returns the values to offer (the first 100 are sent, MCP's bound; the
// rest is counted in total).
func CompleteWith(suggest func(arg, value string, given map[string]string) []string) func(context.Context, json.RawMessage) (json.RawMessage, error) {
	return func(_ context.Context, params json.RawMessage) (json.RawMessage, error) {
		req, err := completion.ReadParams(params)
		if err != nil {
			return nil, err
		}
		return completion.Answer(suggest(req.Arg, req.Value, req.Given)), nil
	}
}

// CompleteArgument asks the server of the prompt registered under name for
// values of its argument arg that go on from value (completion/complete),
// given the arguments already given (the request's context.arguments). A
// prompt that offers no completion answers none; an unknown name wraps
// ErrUnknown; the server's error is returned as it is (the caller names
// the prompt, as of Get).
func (r *Registry) CompleteArgument(ctx context.Context, name, arg, value string, given map[string]string) (Completion, error) {
	p, ok := r.Lookup(name)
	if !ok {
		return Completion{}, fmt.Errorf("prompt %q: %w", name, ErrUnknown)
	}
	if p.Complete == nil {
		return Completion{Values: []string{}}, nil
	}
	raw, err := p.Complete(ctx, completion.Params(map[string]string{"type": "ref/prompt", "name": name}, arg, value, given))
	if err != nil {
		return Completion{}, err
	}
	return completion.Parse(raw)
}

// Get renders the prompt registered under name. An unknown name wraps
// ErrUnknown; a missing required argument is an error naming it, before
// the server is asked.
func (r *Registry) Get(ctx context.Context, name string, args map[string]string) (Result, error) {
	p, ok := r.Lookup(name)
	if !ok {
		return Result{}, fmt.Errorf("prompt %q: %w", name, ErrUnknown)
	}
	for _, a := range p.Arguments {
		if _, given := args[a.Name]; a.Required && !given {
			return Result{}, fmt.Errorf("prompt %q: the argument %q is required", name, a.Name)
		}
	}
	if args == nil {
		args = map[string]string{}
	}
	return p.Get(ctx, args)
}

// JSON returns the prompt as MCP lists it, under its public name, with
// "server" added (none for a native prompt): the server's own object when
// there is one.
func (p Prompt) JSON() json.RawMessage {
	if len(p.Definition) > 0 {
		var obj map[string]json.RawMessage
		if json.Unmarshal(p.Definition, &obj) == nil && obj != nil {
			name, _ := json.Marshal(p.Name)
			server, _ := json.Marshal(p.Server)
			obj["name"], obj["server"] = name, server
			b, _ := json.Marshal(obj)
			return b
		}
	}
	b, _ := json.Marshal(struct {
		Name        string     `json:"name"`
		Server      string     `json:"server,omitempty"`
		Title       string     `json:"title,omitempty"`
		Description string     `json:"description,omitempty"`
		Arguments   []Argument `json:"arguments,omitempty"`
	}{p.Name, p.Server, p.Title, p.Description, p.Arguments})
	return b
}
