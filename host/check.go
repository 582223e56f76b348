package host

import (
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/harness-go/harness/host/jsexpr"
	"github.com/harness-go/harness/host/secret"
)

// Report is the outcome of checking a parsed cordis.yml without starting
// anything.
type Report struct {
	// Errors stop the file from loading.
	Errors []Problem
	// Warnings do not: an undefined !!js value whose key will be left out, a
	// template reading an unset variable (that entry alone will fail when
	// applied).
	Warnings []Problem
}

// Check checks a parsed cordis.yml the way `harness validate` does: every
// entry's plugin kind, the strict decoding and validation of its config with
// the !!js values of env, and values that must be unique among enabled
// entries (see [Uniquer]). The values of secret fields, and whatever !!js
// read from env, are added to secrets (nil: nowhere), before any problem is
// reported: a problem may quote them.
func Check(f *File, env jsexpr.Env, secrets *secret.Set) Report {
	r := check(f, env, true, secrets)
	return Report{Errors: r.errors, Warnings: r.warnings}
}

// Decode checks f as [Check] does and returns the decoded configuration of
// every enabled entry that checked out, by id, without applying anything:
// for commands that work on one entry's settings (`harness login`).
func Decode(f *File, env jsexpr.Env, secrets *secret.Set) (map[string]Plugin, Report) {
	r := check(f, env, true, secrets)
	out := make(map[string]Plugin, len(r.plugins))
	for id, d := range r.plugins {
		out[id] = d.plugin
	}
	return out, Report{Errors: r.errors, Warnings: r.warnings}
}

type checkResult struct {
	errors, warnings []Problem
	// plugins holds the decoded configuration of every enabled entry that
	// checked out, by id.
	plugins map[string]decodedEntry
}

type decodedEntry struct {
	kind   *Kind
	plugin Plugin
}

// check validates every entry of f. With unique set it also reports values
// that must be unique; a running host leaves that to the plugins, so that
// only the later instance fails.
func check(f *File, env jsexpr.Env, unique bool, secrets *secret.Set) checkResult {
	out := checkResult{plugins: map[string]decodedEntry{}}
	env = recording(env, secrets)
	type owner struct {
		id  string
		pos Pos
	}
	seen := map[string]owner{}
	for _, e := range f.Entries {
		kind, ok := LookupKind(e.Name)
		if !ok {
			out.errors = append(out.errors, Problem{Pos: e.namePos, Entry: e.ID, Field: "name",
				Msg: fmt.Sprintf("unknown plugin %q (known: %s)", e.Name, strings.Join(KindNames(), ", "))})
			continue
		}
		r, envProblems := e.resolve(env)
		if len(envProblems) > 0 {
			if !e.Disabled {
				out.warnings = append(out.warnings, envProblems...)
			}
			continue // the entry fails when applied; its other keys are checked then
		}
		for _, u := range r.unset {
			if !e.Disabled {
				out.warnings = append(out.warnings, Problem{Pos: u.Pos, Entry: e.ID, Field: u.Field,
					Msg: fmt.Sprintf("undefined (%s not set): the key is left out", strings.Join(u.Vars, ", "))})
			}
		}
		p := kind.New()
		problems := e.decode(r, p)
		secretValues(p).addTo(secrets)
		if len(problems) > 0 && len(r.unset) > 0 {
			// What the configuration lacks may be the keys left out: the
			// entry depends on the environment, and fails alone when
			// applied, as one whose template reads an unset variable does.
			if !e.Disabled {
				out.warnings = append(out.warnings, withUnset(problems, r.unset)...)
			}
			continue
		}
		if len(problems) > 0 {
			out.errors = append(out.errors, problems...)
			continue
		}
		if !e.Disabled {
			out.plugins[e.ID] = decodedEntry{kind: kind, plugin: p}
		}
		if u, ok := p.(Uniquer); ok && unique && !e.Disabled {
			fields := u.Unique()
			keys := make([]string, 0, len(fields))
			for k := range fields {
				keys = append(keys, k)
			}
			sort.Strings(keys)
			for _, field := range keys {
				key := kind.Name + "\x00" + field + "\x00" + fields[field]
				pos := e.Pos
				if n := r.find(field); n != nil {
					pos = Pos{File: e.file, Line: n.Line, Col: n.Column}
				}
				if prev, dup := seen[key]; dup {
					out.errors = append(out.errors, Problem{Pos: pos, Entry: e.ID, Field: "config." + field,
						Msg: fmt.Sprintf("%q is already used by entry %q (%s); it must be unique among enabled entries", fields[field], prev.id, prev.pos)})
					continue
				}
				seen[key] = owner{e.ID, pos}
			}
		}
	}
	return out
}

// CheckChildren checks the children an entry would list
// ([Context.SetChildren]) as [Check] checks the entries of a file, applying
// nothing: for `harness validate`, which reads an mcp-servers entry's file
// as the entry will. A child with Err is left out (its source said why).
func CheckChildren(parent *Entry, children []Child, env jsexpr.Env, secrets *secret.Set) Report {
	list, err := childEntries(parent, children)
	if err != nil {
		var le *LoadError
		if errors.As(err, &le) {
			return Report{Errors: le.Problems}
		}
		return Report{Errors: []Problem{{Pos: parent.Pos, Entry: parent.ID, Msg: err.Error()}}}
	}
	var live []*Entry
	for _, e := range list {
		if e.fault == nil {
			live = append(live, e)
		}
	}
	r := check(&File{Entries: live}, env, false, secrets)
	return Report{Errors: r.errors, Warnings: r.warnings}
}
