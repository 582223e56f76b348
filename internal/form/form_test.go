package form

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
)

func TestParseForm(t *testing.T) {
	t.Parallel()
	fields, err := Parse(json.RawMessage(`{"type":"object","properties":{
		"zeta":{"type":"string","title":"Zeta","minLength":2},
		"age":{"type":"integer","minimum":0,"maximum":150,"default":30},
		"score":{"type":"number"},
		"ok":{"type":"boolean","default":true},
		"plan":{"type":"string","enum":["free","pro"],"enumNames":["Free","Pro"],"default":"pro"},
		"color":{"type":"string","oneOf":[{"const":"r","title":"Red"},{"const":"g","title":"Green"}]},
		"tags":{"type":"array","minItems":1,"maxItems":2,"items":{"anyOf":[{"const":"a","title":"Apple"},{"const":"b","title":"Banana"},{"const":"c","title":"Cherry"}]}},
		"mail":{"type":"string","format":"email"}
	},"required":["zeta","mail"]}`))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, f := range fields {
		names = append(names, f.Name)
	}
	// The server's order, not the alphabet's.
	if want := []string{"zeta", "age", "score", "ok", "plan", "color", "tags", "mail"}; !reflect.DeepEqual(names, want) {
		t.Fatalf("fields %q, want %q", names, want)
	}
	by := map[string]Field{}
	for _, f := range fields {
		by[f.Name] = f
	}
	for _, tc := range []struct {
		field, typed string
		want         any
		wantErr      string
	}{
		{"zeta", "", nil, "an answer is required"},
		{"zeta", "x", nil, "at least 2 characters"},
		{"zeta", " Ada ", "Ada", ""},
		{"age", "", float64(30), ""}, // SEP-1034: the default, as the server wrote it
		{"age", "41", int64(41), ""},
		{"age", "4.5", nil, "not a whole number"},
		{"age", "200", nil, "out of range"},
		{"age", "many", nil, "not a number"},
		{"score", "", nil, "left out"},
		{"score", "9.5", 9.5, ""},
		{"ok", "", true, ""},
		{"ok", "no", false, ""},
		{"ok", "maybe", nil, "not yes or no"},
		{"plan", "", "pro", ""},
		{"plan", "1", "free", ""},
		{"plan", "Free", "free", ""},
		{"plan", "gold", nil, "none of the choices"},
		{"color", "green", "g", ""},
		{"tags", "1, Cherry", []any{"a", "c"}, ""},
		{"tags", "1,2,3", nil, "from 1 to 2"},
		{"mail", "ada@example.com", "ada@example.com", ""},
		{"mail", "not an address", nil, "not an email address"},
	} {
		got, err := by[tc.field].Answer(tc.typed)
		switch {
		case tc.wantErr != "":
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("%s %q: %v, %v; want an error saying %q", tc.field, tc.typed, got, err, tc.wantErr)
			}
		case err != nil || !reflect.DeepEqual(got, tc.want):
			t.Errorf("%s %q: %#v, %v; want %#v", tc.field, tc.typed, got, err, tc.want)
		}
	}
	// What the person reads.
	for field, want := range map[string]string{
		"zeta": "Zeta (text; required): ",
		"age":  "age (whole number from 0 to 150; Enter for 30): ",
		"plan": "plan (one of: 1 Free, 2 Pro; Enter for Pro): ",
		"tags": "tags (any of, separated by commas: 1 Apple, 2 Banana, 3 Cherry): ",
		"ok":   "ok (yes or no; Enter for yes): ",
	} {
		if got := by[field].Label(); got != want {
			t.Errorf("label of %s: %q, want %q", field, got, want)
		}
	}
	if _, err := Parse(json.RawMessage(`{"properties":{"x":{"type":"object"}}}`)); err == nil || !strings.Contains(err.Error(), `"x" has type "object"`) {
		t.Errorf("a nested object: %v; want it refused", err)
	}
}

func TestFill(t *testing.T) {
	t.Parallel()
	fields, err := Parse(json.RawMessage(`{"properties":{"name":{"type":"string","minLength":2},"n":{"type":"integer","default":3},"note":{"type":"string"}},"required":["name"]}`))
	if err != nil {
		t.Fatal(err)
	}
	content, problems := Fill(fields, map[string]string{"name": "Ada"})
	if want := map[string]any{"name": "Ada", "n": float64(3)}; !reflect.DeepEqual(content, want) || problems != nil {
		t.Errorf("Fill: %#v, %v; want %#v and no problem", content, problems, want)
	}
	_, problems = Fill(fields, map[string]string{"name": "A", "n": "x"})
	if !strings.Contains(problems["name"], "at least 2 characters") || !strings.Contains(problems["n"], "not a number") || len(problems) != 2 {
		t.Errorf("Fill of two bad answers: %v; want both named", problems)
	}
	if got := fields[1].Hint(false); got != "whole number" {
		t.Errorf("Hint(false) = %q", got)
	}
}
