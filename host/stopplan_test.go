package host

import (
	"fmt"
	"testing"
)

func TestPlanStop(t *testing.T) {
	t.Parallel()
	order := []string{"p", "c1", "c2", "gc", "x", "y"}
	// c1 and c2 inject from p; gc injects from c1; x and y stand alone.
	providers := map[string][]string{"c1": {"p"}, "c2": {"p"}, "gc": {"c1"}}
	for _, tc := range []struct {
		name       string
		providers  map[string][]string
		targets    []string
		layers     string
		dependents string
	}{
		{"one alone", providers, []string{"x"}, "[[x]]", "[]"},
		{"independent ones go together, in reverse file order", providers, []string{"x", "y"}, "[[y x]]", "[]"},
		{"a leaf", providers, []string{"gc"}, "[[gc]]", "[]"},
		{"a provider takes its dependents, layer by layer", providers, []string{"p"}, "[[gc c2] [c1] [p]]", "[c1 c2 gc]"},
		{"a middle provider", providers, []string{"c1"}, "[[gc] [c1]]", "[gc]"},
		{"everything", providers, []string{"y", "x", "gc", "c2", "c1", "p"}, "[[y x gc c2] [c1] [p]]", "[]"},
		{"gone from the table", providers, []string{"old", "x"}, "[[x old]]", "[]"},
		{"a cycle still ends", map[string][]string{"x": {"y"}, "y": {"x"}}, []string{"x"}, "[[y x]]", "[y]"},
		{"nothing", providers, nil, "[]", "[]"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			p := planStop(order, tc.providers, tc.targets)
			if got := fmt.Sprint(p.Layers); got != tc.layers {
				t.Errorf("layers %s, want %s", got, tc.layers)
			}
			if got := fmt.Sprint(p.Dependents); got != tc.dependents {
				t.Errorf("dependents %s, want %s", got, tc.dependents)
			}
		})
	}
}
