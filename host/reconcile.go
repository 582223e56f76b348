package host

import (
	"fmt"
	"slices"
	"strings"
)

// Plan is what a reload does, computed by [Reconcile] from the entries that
// run and the entries the file asks for. Entries are identified by id.
type Plan struct {
	// Stop lists the ids to dispose, in reverse order of the old file.
	Stop []string
	// Start lists the ids to apply, in order of the new file.
	Start []string
	// Replace lists the ids of changed entries whose kind makes before it
	// breaks: the new instance starts beside the old one, which it replaces
	// once ready. They are in neither Stop nor Start. The host falls back to
	// stopping and starting when the old instance does not serve, or when
	// another entry of the file claims a value the old one holds.
	Replace []string
	// Update lists the ids whose live keys alone changed (Kind.Live): the
	// running instance is reconfigured in place. The host falls back to a
	// restart when nothing runs or the plugin refuses.
	Update []string

	// The report, for people: what became of each entry. Changed entries
	// are enabled before and after; an entry enabled or disabled by the
	// edit is Enabled or Disabled whether or not its configuration changed
	// too; Idle lists the disabled entries whose configuration changed
	// (nothing starts or stops).
	Added, Changed, Removed, Enabled, Disabled, Unchanged, Idle []string

	// Replacing lists the ids of Replace whose new instance started beside
	// the old one (its outcome, ready or failed, comes later), and Kept
	// those whose new instance failed as it was applied, so that the
	// previous one still serves. Fallback lists the ids of Update and
	// Replace that were stopped and started instead (nothing ran, the
	// plugin refused the live settings, the old instance did not serve, or
	// another entry claims a value it holds). Reconcile leaves the three
	// empty; [Host.Load] fills them in the plan it returns and reports.
	Replacing, Kept, Fallback []string
}

// Reconcile compares the running entries with the desired ones. It is a pure
// function: the host carries the plan out, all of Stop before any of Start
// and Replace, so that a value reserved by one entry (an MCP serverName) can
// move to another in a single edit.
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
		case !o.Disabled && n.Disabled:
			p.Disabled = append(p.Disabled, o.ID)
		case o.digest != n.digest:
			if liveOnly(o, n) || replaceable(o, n) {
				continue
			}
			// Changed; reported in desired order below.
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
		case o.Disabled && !n.Disabled:
			p.Enabled = append(p.Enabled, n.ID)
		case o.digest == n.digest:
			p.Unchanged = append(p.Unchanged, n.ID)
			continue
		case n.Disabled:
			if o.Disabled {
				p.Idle = append(p.Idle, n.ID)
			}
			continue // else reported as Disabled above
		case liveOnly(o, n):
			p.Update = append(p.Update, n.ID)
			continue
		default:
			p.Changed = append(p.Changed, n.ID)
			if replaceable(o, n) {
				p.Replace = append(p.Replace, n.ID)
				continue
			}
		}
		if !n.Disabled {
			p.Start = append(p.Start, n.ID)
		}
	}
	return p
}

// liveOnly reports a change of live keys alone, of an enabled entry.
func liveOnly(o, n *Entry) bool {
	return !o.Disabled && !n.Disabled && o.restart == n.restart
}

// replaceable reports a change that can make before it breaks: an enabled
// entry of a kind that opts in, whose kind stays the same.
func replaceable(o, n *Entry) bool {
	if o.Disabled || n.Disabled {
		return false
	}
	ko, ok1 := LookupKind(o.Name)
	kn, ok2 := LookupKind(n.Name)
	return ok1 && ok2 && ko == kn && kn.MakeBeforeBreak
}

func reverse(s []string) {
	for i, j := 0, len(s)-1; i < j; i, j = i+1, j-1 {
		s[i], s[j] = s[j], s[i]
	}
}

// Empty reports whether the plan changes nothing.
func (p *Plan) Empty() bool {
	return len(p.Added)+len(p.Changed)+len(p.Update)+len(p.Removed)+len(p.Enabled)+len(p.Disabled)+len(p.Idle) == 0
}

func (p *Plan) String() string {
	if p.Empty() {
		return "no changes"
	}
	restarted := slices.DeleteFunc(slices.Clone(p.Changed), func(id string) bool {
		return slices.Contains(p.Kept, id) || slices.Contains(p.Replacing, id)
	})
	var updated []string
	for _, id := range p.Update {
		if slices.Contains(p.Fallback, id) {
			restarted = append(restarted, id) // the live settings did not take
		} else {
			updated = append(updated, id)
		}
	}
	var parts []string
	for _, g := range []struct {
		verb string
		ids  []string
	}{{"added", p.Added}, {"restarted", restarted}, {"replacing", p.Replacing}, {"updated", updated}, {"removed", p.Removed}, {"enabled", p.Enabled}, {"disabled", p.Disabled}} {
		if len(g.ids) > 0 {
			parts = append(parts, fmt.Sprintf("%s %s", g.verb, strings.Join(g.ids, ", ")))
		}
	}
	if len(p.Idle) > 0 {
		parts = append(parts, fmt.Sprintf("changed %s (disabled: nothing runs)", strings.Join(p.Idle, ", ")))
	}
	if len(p.Kept) > 0 {
		parts = append(parts, fmt.Sprintf("kept the running %s (the new instance failed)", strings.Join(p.Kept, ", ")))
	}
	return strings.Join(parts, "; ")
}
