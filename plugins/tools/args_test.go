package tools_test

import (
	"encoding/json"
	"testing"

	"github.com/harness-go/harness/plugins/tools"
)

func TestObjectArgs(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		``:                 `{}`,
		`  `:               `{}`,
		` {"a":1} `:        `{"a":1}`,
		`[1]`:              `{}`,
		`"text"`:           `{}`,
		`null`:             `{}`,
		`{"a":`:            `{}`,
		"\n{}\n":           `{}`,
		`{"a":{"b":[1]}} `: `{"a":{"b":[1]}}`,
	} {
		if got := string(tools.ObjectArgs(json.RawMessage(in))); got != want {
			t.Errorf("ObjectArgs(%q) = %s, want %s", in, got, want)
		}
	}
}

func TestSelected(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		enabled, disabled []string
		name              string
		want              bool
	}{
		{nil, nil, "echo", true},
		{[]string{"get-*"}, nil, "echo", false},
		{[]string{"get-*", "echo"}, nil, "echo", true},
		{[]string{"get-*"}, []string{"get-env"}, "get-env", false},
		{nil, []string{"e?ho"}, "echo", false},
		{nil, []string{"[a-d]*"}, "echo", true},
	} {
		if got := tools.Selected(tc.enabled, tc.disabled, tc.name); got != tc.want {
			t.Errorf("Selected(%q, %q, %q) = %v", tc.enabled, tc.disabled, tc.name, got)
		}
	}
	for p, want := range map[string]bool{"": false, "[a-": false, "get-*": true, "a?c": true, "[a-z]x": true} {
		if got := tools.ValidPattern(p); got != want {
			t.Errorf("ValidPattern(%q) = %v", p, got)
		}
	}
}
