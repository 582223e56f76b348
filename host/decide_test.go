package host

import (
	"fmt"
	"slices"
	"sort"
	"testing"
)

func TestDecide(t *testing.T) {
	t.Parallel()
	set := func(ids ...string) map[string]bool {
		m := map[string]bool{}
		for _, id := range ids {
			m[id] = true
		}
		return m
	}
	keys := func(m map[string]bool) string {
		var out []string
		for k, v := range m {
			if v {
				out = append(out, k)
			}
		}
		sort.Strings(out)
		return fmt.Sprint(out)
	}
	for _, tc := range []struct {
		name  string
		plan  Plan
		facts facts
		// stop in order; start, replace, keepLast as sorted sets; fallback
		// in order.
		stop, start, replace, fallback, keepLast string
	}{
		{"nothing to do", Plan{}, facts{},
			"[]", "[]", "[]", "[]", "[]"},
		{"stops and starts as planned", Plan{Stop: []string{"c", "a"}, Start: []string{"a", "d"}}, facts{},
			"[c a]", "[a d]", "[]", "[]", "[]"},
		{"a live update that took", Plan{Update: []string{"u"}}, facts{updated: set("u")},
			"[]", "[]", "[]", "[]", "[u]"},
		{"a live update that did not take is a restart", Plan{Update: []string{"u"}}, facts{},
			"[u]", "[u]", "[]", "[u]", "[u]"},
		{"a replacement beside a serving instance", Plan{Replace: []string{"r"}}, facts{serving: set("r")},
			"[]", "[]", "[r]", "[]", "[r]"},
		{"a replacement of an instance that does not serve is a restart", Plan{Replace: []string{"r"}}, facts{},
			"[r]", "[r]", "[]", "[r]", "[]"},
		{"a replacement whose value another entry claims is a restart", Plan{Replace: []string{"r"}}, facts{serving: set("r"), claimed: set("r")},
			"[r]", "[r]", "[]", "[r]", "[]"},
		{"everything at once: planned stops first, then the updates' fallbacks, then the replacements'",
			Plan{Stop: []string{"x"}, Start: []string{"y"}, Update: []string{"u1", "u2"}, Replace: []string{"r1", "r2", "r3"}},
			facts{updated: set("u2"), serving: set("r1", "r3"), claimed: set("r3")},
			"[x u1 r2 r3]", "[r2 r3 u1 y]", "[r1]", "[u1 r2 r3]", "[r1 u1 u2]"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			plan := tc.plan
			s := decide(&plan, tc.facts)
			got := []string{fmt.Sprint(s.stop), keys(s.start), keys(s.replace), fmt.Sprint(s.fallback), keys(s.keepLast)}
			want := []string{tc.stop, tc.start, tc.replace, tc.fallback, tc.keepLast}
			if !slices.Equal(got, want) {
				t.Errorf("stop, start, replace, fallback, keepLast = %v\nwant %v", got, want)
			}
			if !slices.Equal(plan.Stop, tc.plan.Stop) {
				t.Errorf("decide changed the plan's Stop: %v", plan.Stop)
			}
		})
	}
}
