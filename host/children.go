package host

import (
	"fmt"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/harness-go/harness/host/jsexpr"
)

// Child is an entry that an instance owns (rule 13 of the package
// documentation): one server of an mcp-servers entry's file, say. Its id
// is "<parent id>/<Name>".
type Child struct {
	// Name is the child's own name; its id is the parent's id, "/" and
	// Name. It follows the rules of an id, without "/".
	Name string
	// Kind is its plugin kind, as `name:` of an entry.
	Kind string
	// Config is its configuration, as `config:` of an entry: a mapping,
	// whose !!js values are evaluated when the child is applied; nil for
	// none. Its positions are those of the file it comes from (Pos.File).
	Config *yaml.Node
	// Disabled: the child is listed, and nothing runs.
	Disabled bool
	// Pos is where the child is defined; messages about its configuration
	// name this file.
	Pos Pos
	// Dir is the folder its relative paths resolve against ([Context.Dir]);
	// "" is the parent's.
	Dir string
	// Err, when set, is why the child cannot run as its source describes
	// it (a server of a transport the harness lacks): it is listed, failed
	// with Err, and nothing is applied.
	Err error
}

// SetChildren makes children the child entries of this instance's entry.
// The host reconciles them with the children the entry has as it
// reconciles an edited cordis.yml with the running entries (rules 3, 10
// and 11): unchanged children are not touched, changed ones are replaced
// or re-created, removed ones disposed; a child that does not check out
// (its configuration does not decode, a variable it reads is unset) fails
// alone. A list that cannot be made at all — a name twice or not a valid
// id, an unknown kind, a !!js that does not parse — is an error, and
// nothing changes. The reconciliation runs on the host's goroutine after
// SetChildren returns (it may be called from Apply); its outcome is a
// Reloaded event of this entry, with its plan.
func (c *Context) SetChildren(children []Child) error {
	list, err := childEntries(c.inst.spec, children)
	if err != nil {
		return err
	}
	h, inst := c.host, c.inst
	h.mu.Lock()
	inst.listing++
	h.mu.Unlock()
	h.post(func() { h.setChildren(inst, list) })
	return nil
}

// RejectChildren reports that a new list of children could not be made
// (the file that lists them does not parse, say): nothing changes, the
// children run as they are, and the entry carries the note "<err>; its
// children are unchanged" until its next list is applied. The host logs
// it and emits a ReloadRejected event of this entry.
func (c *Context) RejectChildren(err error) {
	h, inst := c.host, c.inst
	h.post(func() { h.rejectChildren(inst, err) })
}

// childEntries turns children into the entries of parent's children,
// checking what a cordis.yml's parse would: ids, kinds, !!js syntax.
func childEntries(parent *Entry, children []Child) ([]*Entry, error) {
	var problems []Problem
	seen := map[string]Pos{}
	list := make([]*Entry, 0, len(children))
	for _, ch := range children {
		id := parent.ID + "/" + ch.Name
		add := func(field, msg string) {
			problems = append(problems, Problem{Pos: ch.Pos, Entry: id, Field: field, Msg: msg})
		}
		switch {
		case ch.Name == "" || strings.Contains(ch.Name, "/") || !idPattern.MatchString(id):
			add("", fmt.Sprintf("%q cannot name a child: a name without \"/\", spaces or control characters (its id, %q, at most 128 bytes)", ch.Name, id))
			continue
		case seen[id] != (Pos{}):
			add("", fmt.Sprintf("a second child named %q (the first at %s)", ch.Name, seen[id]))
			continue
		}
		seen[id] = ch.Pos
		kind, ok := LookupKind(ch.Kind)
		if !ok {
			add("name", fmt.Sprintf("unknown plugin %q (known: %s)", ch.Kind, strings.Join(KindNames(), ", ")))
			continue
		}
		dir := ch.Dir
		if dir == "" {
			dir = parent.dir
		}
		e := &Entry{ID: id, Name: ch.Kind, Disabled: ch.Disabled, Pos: ch.Pos, file: ch.Pos.File, dir: dir,
			exprs: map[*yaml.Node]*jsexpr.Expr{}, namePos: ch.Pos}
		if ch.Config != nil {
			if ch.Config.Kind != yaml.MappingNode {
				add("config", "must be a mapping")
				continue
			}
			e.Config = ch.Config
			p := &parser{file: &File{Path: ch.Pos.File}}
			p.walkExprs(e, e.Config, "config")
			if len(p.problems) > 0 {
				problems = append(problems, p.problems...)
				continue
			}
		}
		e.digest = digest(e, nil)
		e.restart = e.digest
		if len(kind.Live) > 0 {
			e.restart = digest(e, kind.live)
		}
		if ch.Err != nil {
			// Another reason is another configuration: the entry restarts
			// and says the new one.
			e.fault = ch.Err
			e.digest += "\x00fault " + ch.Err.Error()
			e.restart += "\x00fault " + ch.Err.Error()
		}
		list = append(list, e)
	}
	if len(problems) > 0 {
		return nil, &LoadError{Problems: problems}
	}
	return list, nil
}

// setChildren applies a new list of inst's entry's children, unless inst
// no longer serves its entry (its news is stale).
func (h *Host) setChildren(inst *instance, list []*Entry) {
	applied := func() {
		h.mu.Lock()
		inst.listing--
		h.mu.Unlock()
	}
	p := inst.entry
	if p.inst != inst || h.entries[p.spec.ID] != p {
		applied()
		return
	}
	for _, spec := range list {
		if other := h.entries[spec.ID]; other != nil && other.parent != p {
			applied()
			h.rejectChildren(inst, fmt.Errorf("%s: child %q: the id is that of the entry at %s: rename one", spec.Pos, spec.ID, other.spec.Pos))
			return
		}
	}
	running := make([]*Entry, len(p.children))
	for i, c := range p.children {
		running[i] = c.spec
	}
	// The steps of a reload of the file (load), on the children's list.
	plan := Reconcile(running, list)
	// Decoded for the make-before-break claims (Uniquer) only: a child
	// with a problem fails alone when it is applied, with that problem.
	checked := check(&File{Entries: list}, h.env, false, h.secrets)
	st := decide(plan, h.gatherFacts(plan, list, checked.plugins))
	plan.Fallback = st.fallback
	h.stopFor(st, h.orphans(st, list))
	order := h.swapChildren(p, list, st)
	h.startFor(plan, st, order)
	h.wakePending()
	h.mu.Lock()
	noted := p.note != nil
	p.note = nil
	inst.listing-- // the children are in place, starting: the entry's settling is theirs now
	h.mu.Unlock()
	if !plan.Empty() {
		inst.log.Info("children applied", "changes", plan.String())
	}
	if noted {
		h.emitEntry(p, p.state) // the note of a refused list is gone
	}
	h.emit(Event{Type: Reloaded, Entry: p.spec.ID, Plugin: p.spec.Name, Plan: plan})
}

// swapChildren makes list p's children, as swap makes a file the host's:
// children it keeps keep their running state, those it no longer has (and
// theirs) are stopped, those it disables are disabled. It returns the
// children's order of ids.
func (h *Host) swapChildren(p *entry, list []*Entry, st steps) []string {
	h.mu.Lock()
	kids := make([]*entry, 0, len(list))
	order := make([]string, 0, len(list))
	in := map[string]bool{}
	for _, spec := range list {
		kind, _ := LookupKind(spec.Name)
		e := h.entries[spec.ID]
		if e == nil {
			e = &entry{state: Stopped, parent: p}
		}
		if e.spec != nil && e.spec.digest != spec.digest && !st.keepLast[spec.ID] {
			e.last = nil
		}
		e.spec, e.kind = spec, kind
		h.entries[spec.ID] = e
		kids = append(kids, e)
		order = append(order, spec.ID)
		in[spec.ID] = true
	}
	var gone []*entry
	for _, c := range p.children {
		if !in[c.spec.ID] {
			for _, x := range append([]*entry{c}, c.descendants()...) {
				gone = append(gone, x)
				delete(h.entries, x.spec.ID)
			}
		}
	}
	p.children = kids
	h.mu.Unlock()
	for _, e := range gone {
		h.setState(e, Stopped, nil, nil)
	}
	for _, e := range kids {
		if e.spec.Disabled && e.state != Disabled {
			h.setState(e, Disabled, nil, nil)
		}
	}
	return order
}

// rejectChildren records that inst's new list of children was refused.
func (h *Host) rejectChildren(inst *instance, err error) {
	p := inst.entry
	if p.inst != inst || h.entries[p.spec.ID] != p {
		return
	}
	err = h.secrets.Err(err)
	inst.log.Info("children unchanged: the new list was refused", "err", err)
	h.mu.Lock()
	p.note = fmt.Errorf("%w; its children are unchanged", err)
	h.mu.Unlock()
	h.emitEntry(p, p.state)
	h.emit(Event{Type: ReloadRejected, Entry: p.spec.ID, Plugin: p.spec.Name, Err: err})
}

// orphans are the entries the steps stop whose children go with them:
// removed, disabled, or now of another kind (rule 13). Those re-created
// by the plan keep their children until their new instance sets them.
func (h *Host) orphans(st steps, list []*Entry) []*entry {
	var out []*entry
	for _, id := range st.stop {
		if e := h.entries[id]; e != nil && len(e.children) > 0 {
			if spec := specOf(list, id); spec == nil || spec.Disabled || spec.Name != e.spec.Name {
				out = append(out, e)
			}
		}
	}
	return out
}

func specOf(list []*Entry, id string) *Entry {
	for _, s := range list {
		if s.ID == id {
			return s
		}
	}
	return nil
}

// childClash refuses a file that gives an entry the id of a running child
// whose parent stays: one id, two entries.
func (h *Host) childClash(list []*Entry) error {
	var problems []Problem
	for _, spec := range list {
		e := h.entries[spec.ID]
		if e == nil || e.parent == nil {
			continue
		}
		if ps := specOf(list, e.parent.spec.ID); ps != nil && !ps.Disabled && ps.Name == e.parent.spec.Name {
			problems = append(problems, Problem{Pos: spec.Pos, Entry: spec.ID, Field: "id",
				Msg: fmt.Sprintf("is the id of a child of entry %q (defined at %s): rename the entry", e.parent.spec.ID, e.spec.Pos)})
		}
	}
	if len(problems) > 0 {
		return &LoadError{Problems: problems}
	}
	return nil
}

// descendants are e's children, each followed by its own, in order.
func (e *entry) descendants() []*entry {
	var out []*entry
	for _, c := range e.children {
		out = append(out, c)
		out = append(out, c.descendants()...)
	}
	return out
}

// flat is every entry's id, each entry of the file followed by its
// descendants: the order of snapshots, settling and stopping. The host's
// goroutine changes the table; call it there or under h.mu.
func (h *Host) flat() []string {
	out := make([]string, 0, len(h.entries))
	for _, id := range h.order {
		out = append(out, id)
		if e := h.entries[id]; e != nil {
			for _, c := range e.descendants() {
				out = append(out, c.spec.ID)
			}
		}
	}
	return out
}
