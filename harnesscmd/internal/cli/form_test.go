package cli

import (
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/harness-go/harness/internal/form"
)

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
	fields, _ := form.Parse(json.RawMessage(`{"properties":{"name":{"type":"string"},"n":{"type":"integer","default":3}},"required":["name"]}`))
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
