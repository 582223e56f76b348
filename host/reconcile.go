package host

import (
	"fmt"
	"strings"
)

// Plan is what a reload does, computed by [Reconcile] from the entries that
// run and the entries the file asks for. Entries are identified by id; an
// entry whose kind or configuration changed is stopped and started again.
type Plan struct {
	// Stop lists the ids to dispose, in reverse order of the old file.
	Stop []string
	// Start lists the ids to apply, in order of the new file.
	Start []string

	Added, Changed, Removed, Enabled, Disabled, Unchanged []string
}

// Reconcile compares the running entries with the desired ones. It is a pure
// function: the host carries the plan out, all of Stop before any of Start,
// so that a value reserved by one entry (an MCP serverName) can move to
// another in a single edit.
func Reconcile(running, desired []*Entry) *Plan {
	p := &Plan{}
	old := make(map[string]*Entry, len(running))
	for _, e := range running {
		old[e.ID] = e
	}
	want := make(map[string]*Entry, len(desired))
	for _, e := range desired {
		want[e.ID] = e
	}
	for i := len(running) - 1; i >= 0; i-- {
		o := running[i]
		n, kept := want[o.ID]
		switch {
		case !kept:
			p.Removed = append(p.Removed, o.ID)
		case o.digest != n.digest:
			// Changed; reported in desired order below.
		case !o.Disabled && n.Disabled:
			p.Disabled = append(p.Disabled, o.ID)
		default:
			continue
		}
		if !o.Disabled {
			p.Stop = append(p.Stop, o.ID)
		}
	}
	reverse(p.Removed)
	reverse(p.Disabled)
	for _, n := range desired {
		o, existed := old[n.ID]
		switch {
		case !existed:
			p.Added = append(p.Added, n.ID)
		case o.digest != n.digest:
			p.Changed = append(p.Changed, n.ID)
		case o.Disabled && !n.Disabled:
			p.Enabled = append(p.Enabled, n.ID)
		default:
			p.Unchanged = append(p.Unchanged, n.ID)
			continue
		}
		if !n.Disabled {
			p.Start = append(p.Start, n.ID)
		}
	}
	return p
}

func reverse(s []string) {
	for i, j := 0, len(s)-1; i < j; i, j = i+1, j-1 {
		s[i], s[j] = s[j], s[i]
	}
}

// Empty reports whether the plan changes nothing.
func (p *Plan) Empty() bool {
	return len(p.Added)+len(p.Changed)+len(p.Removed)+len(p.Enabled)+len(p.Disabled) == 0
}

func (p *Plan) String() string {
	if p.Empty() {
		return "no changes"
	}
	var parts []string
	for _, g := range []struct {
		verb string
		ids  []string
	}{{"added", p.Added}, {"restarted", p.Changed}, {"removed", p.Removed}, {"enabled", p.Enabled}, {"disabled", p.Disabled}} {
		if len(g.ids) > 0 {
			parts = append(parts, fmt.Sprintf("%s %s", g.verb, strings.Join(g.ids, ", ")))
		}
	}
	return strings.Join(parts, "; ")
}
