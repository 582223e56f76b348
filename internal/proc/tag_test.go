package proc

import (
	"slices"
	"testing"
)

func TestWithTag(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		env  []string
		want []string
	}{
		{"added", []string{"A=1"}, []string{"A=1", "HARNESS_PROC=s.1"}},
		{"after a parent harness's tag", []string{"HARNESS_PROC=p.7", "A=1"}, []string{"A=1", "HARNESS_PROC=p.7,s.1"}},
		{"an empty value is replaced", []string{"HARNESS_PROC="}, []string{"HARNESS_PROC=s.1"}},
		{"duplicates collapse, the last wins", []string{"HARNESS_PROC=x.1", "HARNESS_PROC=p.2"}, []string{"HARNESS_PROC=p.2,s.1"}},
		{"a similar name is kept", []string{"HARNESS_PROCX=1"}, []string{"HARNESS_PROCX=1", "HARNESS_PROC=s.1"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if got := withTag(tc.env, "s.1"); !slices.Equal(got, tc.want) {
				t.Fatalf("withTag(%q) = %q, want %q", tc.env, got, tc.want)
			}
		})
	}
}

func TestHasTag(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		value  string
		tag    string
		prefix bool
		want   bool
	}{
		{"exact", "s.1", "s.1", false, true},
		{"in a list", "p.7,s.1", "s.1", false, true},
		{"another server of the spawner", "s.12", "s.1", false, false},
		{"prefix of the spawner", "p.7,s.12", "s.", true, true},
		{"another spawner", "t.1", "s.", true, false},
		{"empty", "", "s.1", false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if got := hasTag(tc.value, tc.tag, tc.prefix); got != tc.want {
				t.Fatalf("hasTag(%q, %q, %v) = %v", tc.value, tc.tag, tc.prefix, got)
			}
		})
	}
}
