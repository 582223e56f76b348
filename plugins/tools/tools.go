// Package tools provides the tools service: the registry of the tools a model
// sees and can call.
//
// Plugins register tools with [Registry.Register], tied to their fiber, so
// that disposing a plugin can never leave a tool behind. The model receives
// [Registry.ModelJSON]: the tools sorted by name in the OpenAI/DeepSeek
// function-calling shape, byte-identical as long as the set does not change
// (so a provider's prompt cache keeps its prefix). [Registry.Execute] never
// fails at the Go level: every problem becomes an error result the model
// reads.
package tools

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"regexp"
	"runtime/debug"
	"slices"
	"strings"
	"sync"

	"github.com/harness-go/harness/fiber"
	"github.com/harness-go/harness/host"
	"github.com/harness-go/harness/internal/safe"
)

// Service is the name under which the host provides the registry.
const Service = "tools"

// Key is the registry's service key: Key.From(ctx) in a plugin's Apply,
// Key.ProvideBy(h, reg) in a program.
var Key = host.NewKey[*Registry](Service)

// NamePattern is the function-name contract of the model APIs we target.
var NamePattern = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)

// Result is what a tool call gives back to the model.
type Result struct {
	Text    string `json:"text"`
	IsError bool   `json:"isError"`
	// Raw is, for a tool an MCP server provides, the server's
	// CallToolResult as it arrived (content blocks, structuredContent,
	// isError), for callers that pass results on unchanged (the gateway).
	// Text stays what the model reads. Nil for a call that failed before
	// the server answered, and usually for native tools (one may set it to
	// answer more than text to MCP clients).
	Raw json.RawMessage `json:"-"`
	// Burst, on a result a [Starter] gives its done, is the burst of
	// results the tool's connection is reading (more are buffered behind
	// this one): a caller that writes the result out may hold the write
	// until the burst ends ([Burst.Hold]). Nil: write it now.
	Burst *Burst `json:"-"`
}

type rawKey struct{}

// WithRawResult returns ctx asking the tools called with it for their Raw
// result alone: a caller that passes a server's result on unchanged (the
// gateway) has no use for the model's text. A tool that sets Raw may then
// leave Text empty — and reports no content as discarded, since none is.
// IsError is still set. A tool without a Raw result answers as always.
func WithRawResult(ctx context.Context) context.Context {
	return context.WithValue(ctx, rawKey{}, true)
}

// WantsRawResult reports whether ctx asks for the Raw result alone
// ([WithRawResult]).
func WantsRawResult(ctx context.Context) bool {
	v, _ := ctx.Value(rawKey{}).(bool)
	return v
}

// CallValues are the values a call's context gives this package — its
// front ([WithFront]) and whether it wants the Raw result alone
// ([WithRawResult]) — for a caller whose context is a type of its own: one
// value per call, where a chain of context.WithValue costs an allocation
// for each. Its Value method asks Lookup first. The gateway's stdio
// requests are such contexts.
type CallValues struct {
	Front     Front
	RawResult bool
}

// Lookup returns what a context carrying v answers for key, and whether v
// answers it at all (when not, the context asks its parent).
func (v *CallValues) Lookup(key any) (any, bool) {
	switch key.(type) {
	case frontKey:
		if v.Front != nil {
			return v.Front, true
		}
	case rawKey:
		if v.RawResult {
			return true, true
		}
	}
	return nil, false
}

// A Starter starts one call and returns at once, without waiting for its
// result: done gets it later, exactly once, on whatever goroutine has it
// (it must not block). ok false means the tool cannot start this call
// without waiting — it is not connected now, say — and done is not called:
// the caller uses Execute. A tool whose calls go to another process and
// come back (an MCP server's) may have one: a caller that serves many
// calls at once (the gateway) then needs no goroutine waiting per call.
// The Result done gets may borrow its Raw from the tool's read buffer: it
// is valid until done returns, and a caller that keeps it longer copies
// it (the gateway writes its answer, or copies it to hold it, before it
// returns; an mcp-client tool then copies a large result no more).
type Starter func(ctx context.Context, args json.RawMessage, done func(Result, error)) (ok bool)

// Executor runs one call. args is the JSON object the model sent. An error
// (or a Result with IsError) becomes an error result; the ctx ends when the
// caller gives up.
type Executor func(ctx context.Context, args json.RawMessage) (Result, error)

// Tool is one model-visible tool.
type Tool struct {
	Name        string
	Description string
	// Parameters is the JSON Schema of the arguments, kept byte for byte.
	// Nil means an object with no properties.
	Parameters json.RawMessage
	Execute    Executor
	// Start, when set, starts a call without waiting for it (a [Starter]);
	// Execute still runs every call for callers that wait.
	Start Starter
	// Definition is, for a tool an MCP server provides, the tool object as
	// the server listed it, kept raw so that the gateway can serve what
	// the model's list has no room for (title, annotations, outputSchema).
	// Name, Description and Parameters above are what counts; nil for
	// native tools.
	Definition json.RawMessage
	// Annotations are what a native tool tells MCP clients about itself
	// (the gateway serves them): whether it only reads, may destroy, can
	// be called twice to the same effect, reaches outside the harness.
	// Clients act on them — Codex runs a tool marked read-only without
	// asking. Nil says nothing (MCP's defaults: it may write and destroy).
	// A bridged tool's server's annotations are in Definition instead.
	Annotations *Annotations
	// AlwaysLoad asks an agent in tool search mode to send this tool with
	// every request, as it sends the tools its own alwaysLoad patterns
	// name, instead of waiting for search_tools to find it (an MCP entry's
	// alwaysLoad: true sets it on every tool of its server).
	AlwaysLoad bool
}

// Annotations are MCP's tool annotations (the schema's ToolAnnotations):
// hints, which a client may trust or not. A nil hint is not sent, and the
// client assumes MCP's default, given with each.
type Annotations struct {
	// Title is a name for people.
	Title string `json:"title,omitempty"`
	// ReadOnly: the tool changes nothing (default false).
	ReadOnly *bool `json:"readOnlyHint,omitempty"`
	// Destructive: what it changes, it may destroy (default true; only
	// meaningful when not read-only).
	Destructive *bool `json:"destructiveHint,omitempty"`
	// Idempotent: calling it again with the same arguments does nothing
	// more (default false; only meaningful when not read-only).
	Idempotent *bool `json:"idempotentHint,omitempty"`
	// OpenWorld: it reaches outside the harness, to the network or other
	// systems (default true).
	OpenWorld *bool `json:"openWorldHint,omitempty"`
}

// ReadOnly is the annotation of a tool that only reads and reaches
// nothing outside the harness (echo, clock): every client may run it
// without asking.
func ReadOnly() *Annotations {
	yes, no := true, false
	return &Annotations{ReadOnly: &yes, OpenWorld: &no}
}

// emptyParameters is the schema of a tool that declares none.
var emptyParameters = json.RawMessage(`{"type":"object","properties":{}}`)

// ErrConflict is wrapped by registration errors about a name that is taken.
var ErrConflict = errors.New("already registered")

type entry struct {
	tool  Tool
	model []byte // the tool's element of the model-visible JSON
	owner string // the entry that registered it ([host.EntryOf]), or ""
}

// Registry holds the registered tools. It is safe for concurrent use.
// Its changes go on the stream of the host it is provided to
// ([host.ServiceChanged], with the names added and removed).
type Registry struct {
	mu      sync.RWMutex
	tools   map[string]*entry
	sorted  []*entry // nil when stale
	model   []byte   // nil when stale
	changes host.Changes
	log     *slog.Logger
}

// New returns an empty registry.
func New(opts ...Option) *Registry {
	r := &Registry{tools: map[string]*entry{}, log: slog.Default()}
	for _, o := range opts {
		o(r)
	}
	return r
}

// Option configures a [Registry].
type Option func(*Registry)

// WithLogger sets where the registry reports what no caller sees: a tool
// that panicked, with its stack (the model sees only an error result). The
// default is slog.Default().
func WithLogger(log *slog.Logger) Option {
	return func(r *Registry) {
		if log != nil {
			r.log = log
		}
	}
}

// From returns the registry injected into a plugin instance.
func From(ctx *host.Context) (*Registry, error) { return Key.From(ctx) }

// Register adds tools, all or none, and ties them to f: they are removed when
// f is disposed, or earlier through the returned release function. A name
// that breaks the contract, appears twice in the batch, or is already
// registered fails the whole batch: `tool "<name>" is already registered`.
func (r *Registry) Register(f *fiber.Fiber, batch ...Tool) (release fiber.Disposer, err error) {
	set, err := r.Replace(f, nil, batch...)
	if err != nil {
		return nil, err
	}
	return set.Release, nil
}

// Set is one registration: tools that stay registered until the set is
// released or replaced, or its fiber is disposed.
type Set struct {
	entries []*entry
	release fiber.Disposer
}

// Release unregisters the set's tools. It runs once; later calls do nothing.
func (s *Set) Release(ctx context.Context) error { return s.release(ctx) }

// Names returns the names of the set's tools, in registration order.
func (s *Set) Names() []string {
	out := make([]string, len(s.entries))
	for i, e := range s.entries {
		out[i] = e.tool.Name
	}
	return out
}

// Replace registers batch in place of old (nil for none) in one step: a
// reader sees the old tools or the new ones, never a mix and never neither,
// and a change is announced once. The batch is all or nothing; if one of its
// names is registered by someone other than old, the old tools are removed
// anyway and nothing is registered — a generation is never half there.
func (r *Registry) Replace(f *fiber.Fiber, old *Set, batch ...Tool) (*Set, error) {
	entries, err := prepare(batch)
	if err != nil {
		return nil, err
	}
	if owner, ok := host.EntryOf(f.Context()); ok {
		for _, e := range entries {
			e.owner = owner
		}
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
		if cur, taken := r.tools[e.tool.Name]; taken && !mine[cur] {
			conflict = fmt.Errorf("tool %q is %w", e.tool.Name, ErrConflict)
			break
		}
	}
	removed := r.removeLocked(mine)
	var added []string
	if conflict == nil {
		for _, e := range entries {
			r.tools[e.tool.Name] = e
			added = append(added, e.tool.Name)
		}
	}
	if len(removed)+len(added) > 0 {
		r.changedLocked(added, removed)
	}
	r.mu.Unlock()
	if old != nil {
		_ = old.release(context.Background()) // takes its disposer off the fiber
	}
	if conflict != nil {
		return nil, conflict
	}

	set := &Set{entries: entries}
	remove := func(context.Context) error {
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
	}
	set.release, err = f.Defer(fmt.Sprintf("unregister %d tool(s)", len(entries)), remove)
	if err != nil {
		// The fiber is gone; the disposer already ran and removed the tools.
		return nil, fmt.Errorf("register tools: %w", err)
	}
	return set, nil
}

// prepare checks a batch and encodes each tool's model-visible element.
func prepare(batch []Tool) ([]*entry, error) {
	entries := make([]*entry, len(batch))
	seen := make(map[string]bool, len(batch))
	for i, t := range batch {
		if !NamePattern.MatchString(t.Name) {
			return nil, fmt.Errorf("tool %q: the name must match %s", t.Name, NamePattern)
		}
		if seen[t.Name] {
			return nil, fmt.Errorf("tool %q is listed twice in one registration", t.Name)
		}
		seen[t.Name] = true
		if t.Execute == nil {
			return nil, fmt.Errorf("tool %q: no executor", t.Name)
		}
		if len(t.Parameters) == 0 {
			t.Parameters = emptyParameters
		} else if !json.Valid(t.Parameters) {
			return nil, fmt.Errorf("tool %q: parameters are not valid JSON", t.Name)
		}
		if len(t.Definition) > 0 && !json.Valid(t.Definition) {
			return nil, fmt.Errorf("tool %q: the definition is not valid JSON", t.Name)
		}
		entries[i] = &entry{tool: t, model: modelJSON(t)}
	}
	return entries, nil
}

// removeLocked removes the given entries that are still registered and
// returns their names.
func (r *Registry) removeLocked(own map[*entry]bool) []string {
	var removed []string
	for e := range own {
		if r.tools[e.tool.Name] == e {
			delete(r.tools, e.tool.Name)
			removed = append(removed, e.tool.Name)
		}
	}
	return removed
}

// changedLocked records one change: the names the tool set gained and
// lost (a name in both was replaced in place, and is in neither).
func (r *Registry) changedLocked(added, removed []string) {
	r.sorted, r.model = nil, nil
	added, removed = host.Diff(added, removed)
	r.changes.Record(added, removed)
}

// Changes is the registry's change record: its version, and the channel
// of Changed. A host the registry is provided to tells every change on its
// stream.
func (r *Registry) Changes() *host.Changes { return &r.changes }

// Changed returns a channel closed at the next change of the set of tools,
// for a reader that has the registry but not its host (the gateway); one
// that has the host reads its stream ([host.Host.Subscribe]).
func (r *Registry) Changed() <-chan struct{} { return r.changes.Changed() }

// Version increases with every change of the set of tools.
func (r *Registry) Version() uint64 { return r.changes.Version() }

// Lookup returns the tool registered under name.
func (r *Registry) Lookup(name string) (Tool, bool) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	e, ok := r.tools[name]
	if !ok {
		return Tool{}, false
	}
	return e.tool, true
}

// A Claimer is an entry's status (host.EntryStatus.Details) whose plugin
// names its tools by a rule a name can be read back from: the CLI asks it
// about a tool that is not registered, to say which entry would provide it
// and in what state that entry is. mcp-client's status is one
// (mcp__<serverName>__<tool>).
type Claimer interface {
	// ClaimTool reports, for a name that follows the plugin's naming, what
	// the name points at, for a person (`serverName "gh"`), and whether that
	// is this entry; who is "" for a name of another naming.
	ClaimTool(name string) (who string, mine bool)
}

// Owner returns the id of the entry that registered name: the entry whose
// instance's fiber (or one below it) was given to [Registry.Register] or
// [Registry.Replace]. ok is false for an unknown name, and id is "" for a
// tool registered outside any instance (a program's own).
func (r *Registry) Owner(name string) (id string, ok bool) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	e, ok := r.tools[name]
	if !ok {
		return "", false
	}
	return e.owner, true
}

// Owned returns the names of the tools entry id registered, sorted.
func (r *Registry) Owned(id string) []string {
	var out []string
	for _, e := range r.sortedEntries() {
		if e.owner == id {
			out = append(out, e.tool.Name)
		}
	}
	return out
}

// List returns the tools sorted by name.
func (r *Registry) List() []Tool {
	sorted := r.sortedEntries()
	out := make([]Tool, len(sorted))
	for i, e := range sorted {
		out[i] = e.tool
	}
	return out
}

// Names returns the registered names, sorted.
func (r *Registry) Names() []string {
	sorted := r.sortedEntries()
	out := make([]string, len(sorted))
	for i, e := range sorted {
		out[i] = e.tool.Name
	}
	return out
}

func (r *Registry) sortedEntries() []*entry {
	r.mu.RLock()
	if s := r.sorted; s != nil {
		r.mu.RUnlock()
		return s
	}
	r.mu.RUnlock()
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.sorted == nil {
		s := make([]*entry, 0, len(r.tools))
		for _, e := range r.tools {
			s = append(s, e)
		}
		slices.SortFunc(s, func(a, b *entry) int { return strings.Compare(a.tool.Name, b.tool.Name) })
		r.sorted = s
	}
	return r.sorted
}

// ModelJSON returns the tools as the model receives them: a JSON array,
// sorted by name, of {"type":"function","function":{"name","description",
// "parameters"}} with each schema exactly as registered. The bytes are
// identical until the set changes; the caller must not modify them.
func (r *Registry) ModelJSON() []byte {
	b, _ := r.ModelSubset(nil)
	return b
}

// ModelSubset is [Registry.ModelJSON] restricted to the tools whose names
// keep accepts (every tool when keep is nil), with their number; both come
// from one state of the registry. Each tool's element is the same bytes as
// in ModelJSON, so a filtered list is still byte-stable while the set does
// not change. Only the unfiltered list is cached; the caller must not modify
// the bytes.
func (r *Registry) ModelSubset(keep func(name string) bool) ([]byte, int) {
	if keep == nil {
		r.mu.RLock()
		if m := r.model; m != nil {
			n := len(r.sorted) // the set m was built from (see below)
			r.mu.RUnlock()
			return m, n
		}
		r.mu.RUnlock()
	}
	sorted := r.sortedEntries()
	size, n := 2, 0 // [ and ]
	for _, e := range sorted {
		if keep == nil || keep(e.tool.Name) {
			size += len(e.model) + 1
			n++
		}
	}
	b := bytes.NewBuffer(make([]byte, 0, size)) // one allocation, however many tools
	b.WriteByte('[')
	first := true
	for _, e := range sorted {
		if keep != nil && !keep(e.tool.Name) {
			continue
		}
		if !first {
			b.WriteByte(',')
		}
		first = false
		b.Write(e.model)
	}
	b.WriteByte(']')
	if keep != nil {
		return b.Bytes(), n
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	// Cache the bytes only if the set is still the one they were built from.
	// A nil r.sorted means a change came in since: it must not compare equal
	// to an empty listing taken before that change.
	if r.model == nil && r.sorted != nil && sameEntries(r.sorted, sorted) {
		r.model = b.Bytes()
	}
	return b.Bytes(), n
}

// ModelOf is [Registry.ModelJSON] restricted to the tools named (those of
// them registered; a name twice counts once), with their number: the same
// bytes per tool, in the same sorted order. It costs what the few names
// cost, not a pass over every tool (an agent's tool search sends a handful
// of a thousand). The caller may modify the bytes.
func (r *Registry) ModelOf(names []string) ([]byte, int) {
	r.mu.RLock()
	picked := make([]*entry, 0, len(names))
	size := 2
	for _, name := range names {
		if e, ok := r.tools[name]; ok && !slices.Contains(picked, e) {
			picked = append(picked, e)
			size += len(e.model) + 1
		}
	}
	r.mu.RUnlock()
	slices.SortFunc(picked, func(a, b *entry) int { return strings.Compare(a.tool.Name, b.tool.Name) })
	b := make([]byte, 0, size)
	b = append(b, '[')
	for i, e := range picked {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, e.model...)
	}
	return append(b, ']'), len(picked)
}

func sameEntries(a, b []*entry) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func modelJSON(t Tool) []byte {
	name, _ := json.Marshal(t.Name)
	desc, _ := json.Marshal(t.Description)
	var b bytes.Buffer
	b.WriteString(`{"type":"function","function":{"name":`)
	b.Write(name)
	b.WriteString(`,"description":`)
	b.Write(desc)
	b.WriteString(`,"parameters":`)
	b.Write(t.Parameters)
	b.WriteString(`}}`)
	return b.Bytes()
}

// Execute calls a tool and returns what the model sees. It never fails: an
// unknown tool, an executor error or panic, and an error result all become a
// Result with IsError set and text starting with "Error: ". An executor's
// error is text of ours that may quote the outside world (an HTTP error
// page, say): its control characters are escaped, so printing it cannot
// drive a terminal. A result the tool returned is its own words, unchanged,
// and its Raw result is kept.
func (r *Registry) Execute(ctx context.Context, name string, args json.RawMessage) Result {
	t, ok := r.Lookup(name)
	if !ok {
		return Result{Text: fmt.Sprintf("Error: unknown tool %q", name), IsError: true}
	}
	return finish(r.run(ctx, t, args))
}

// finish is what Execute and Start make of what a tool returned; the
// burst a result was given in stays with it.
func finish(res Result, err error) Result {
	switch {
	case err != nil:
		return Result{Text: "Error: " + safe.Text(err.Error()), IsError: true, Burst: res.Burst}
	case res.IsError:
		return Result{Text: "Error: " + res.Text, IsError: true, Raw: res.Raw, Burst: res.Burst}
	}
	return res
}

// Start starts a call of a tool that has a [Starter] and returns at once:
// done gets, exactly once, what Execute would have returned, its Raw
// valid until done returns (see [Starter]). ok false means the call was
// not started — an unknown tool, a tool without a Starter, or one that
// cannot start this call without waiting — and done is not called: the
// caller uses Execute. A Starter's panic is what an
// executor's is: an error result, logged with its stack.
func (r *Registry) Start(ctx context.Context, name string, args json.RawMessage, done func(Result)) (ok bool) {
	t, found := r.Lookup(name)
	if !found || t.Start == nil {
		return false
	}
	var once sync.Once
	finished := func(res Result, err error) { once.Do(func() { done(finish(res, err)) }) }
	defer func() {
		if p := recover(); p != nil {
			r.log.Error("a tool panicked", "tool", safe.Line(t.Name), "panic", fmt.Sprint(p), "stack", string(debug.Stack()))
			finished(Result{}, fmt.Errorf("tool %q panicked: %v", t.Name, p))
			ok = true
		}
	}()
	return t.Start(ctx, args, finished)
}

// run calls the executor; a panic becomes an error for the model, and is
// logged with its stack for whoever can fix the tool.
func (r *Registry) run(ctx context.Context, t Tool, args json.RawMessage) (res Result, err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("tool %q panicked: %v", t.Name, p)
			r.log.Error("a tool panicked", "tool", safe.Line(t.Name), "panic", fmt.Sprint(p), "stack", string(debug.Stack()))
		}
	}()
	return t.Execute(ctx, args)
}
