package cli

import (
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
)

func TestParseForm(t *testing.T) {
	t.Parallel()
	fields, err := parseForm(json.RawMessage(`{"type":"object","properties":{
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
		names = append(names, f.name)
	}
	// The server's order, not the alphabet's.
	if want := []string{"zeta", "age", "score", "ok", "plan", "color", "tags", "mail"}; !reflect.DeepEqual(names, want) {
		t.Fatalf("fields %q, want %q", names, want)
	}
	by := map[string]field{}
	for _, f := range fields {
		by[f.name] = f
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
		got, err := by[tc.field].answer(tc.typed)
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
		if got := by[field].label(); got != want {
			t.Errorf("label of %s: %q, want %q", field, got, want)
		}
	}
	if _, err := parseForm(json.RawMessage(`{"properties":{"x":{"type":"object"}}}`)); err == nil || !strings.Contains(err.Error(), `"x" has type "object"`) {
		t.Errorf("a nested object: %v; want it refused", err)
	}
}

// scripted answers a form's questions from a list and keeps what was said.
type scripted struct {
	answers []string
	said    []string
	prompts []string
}

func (s *scripted) say(text string) { s.said = append(s.said, text) }
func (s *scripted) line(_ context.Context, prompt string) (string, error) {
	s.prompts = append(s.prompts, prompt)
	if len(s.answers) == 0 {
		return "", errCancelled
	}
	a := s.answers[0]
	s.answers = s.answers[1:]
	return a, nil
}

func TestFillForm(t *testing.T) {
	t.Parallel()
	fields, _ := parseForm(json.RawMessage(`{"properties":{"name":{"type":"string"},"n":{"type":"integer","default":3}},"required":["name"]}`))
	for _, tc := range []struct {
		name    string
		answers []string
		want    map[string]any
		err     error
	}{
		{"accepted, with a re-ask and a default", []string{"", "Ada", "", "y"}, map[string]any{"action": "accept", "content": map[string]any{"name": "Ada", "n": float64(3)}}, nil},
		{"declined at a field", []string{"/decline"}, map[string]any{"action": "decline"}, nil},
		{"cancelled at a field", []string{"Ada", "/cancel"}, map[string]any{"action": "cancel"}, nil},
		{"declined at the end", []string{"Ada", "7", "d"}, map[string]any{"action": "decline"}, nil},
		{"Ctrl-C", []string{"Ada"}, nil, errCancelled},
	} {
		d := &scripted{answers: tc.answers}
		got, err := fillForm(context.Background(), d, fields)
		if !errors.Is(err, tc.err) || !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s: %#v, %v; want %#v, %v (said %q)", tc.name, got, err, tc.want, tc.err, d.said)
		}
	}
	d := &scripted{answers: []string{"", "Ada", "", "y"}}
	fillForm(context.Background(), d, fields)
	if !strings.Contains(strings.Join(d.said, "\n"), "an answer is required") {
		t.Errorf("a required field left empty is asked again with why: %q", d.said)
	}
}
