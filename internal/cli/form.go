package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/mail"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/harness-go/harness/internal/safe"
)

// An MCP server's elicitation asks a person to fill a form whose schema is
// flat: an object of properties each a string (with minLength, maxLength,
// format email, uri, date or date-time), a number or integer (minimum,
// maximum), a boolean, a single choice (enum, possibly titled by enumNames
// or by oneOf const/title) or a multiple choice (an array of such items,
// minItems, maxItems); each may have a default (SEP-1034) and the object
// lists the required ones. docs/rfc/0006-console.md, "Questions", shows the
// dialog; this file holds what it decides, apart from the terminal, so that
// a test drives it with scripted answers.

// field is one property of an elicitation's form.
type field struct {
	name, title, description string
	kind                     string // "string", "number", "integer", "boolean", "choice", "choices"
	required                 bool
	def                      any // the default, decoded; nil: none
	options                  []option
	minLength, maxLength     int // -1: unset
	format                   string
	minimum, maximum         *float64
	minItems, maxItems       int // -1: unset
}

// option is one value of a choice, and what the person reads for it.
type option struct{ value, title string }

// parseForm reads an elicitation's requestedSchema into its fields, in the
// order the server wrote them. A property of a type the form does not know
// is an error: the person could not answer it.
func parseForm(schema json.RawMessage) ([]field, error) {
	var s struct {
		Properties json.RawMessage `json:"properties"`
		Required   []string        `json:"required"`
	}
	if len(bytes.TrimSpace(schema)) == 0 {
		return nil, nil
	}
	if err := json.Unmarshal(schema, &s); err != nil {
		return nil, fmt.Errorf("the form's schema is not a JSON object: %v", err)
	}
	names, props, err := orderedMembers(s.Properties)
	if err != nil {
		return nil, fmt.Errorf("the form's properties: %v", err)
	}
	out := make([]field, 0, len(names))
	for i, name := range names {
		f, err := parseField(name, props[i])
		if err != nil {
			return nil, err
		}
		for _, r := range s.Required {
			if r == name {
				f.required = true
			}
		}
		out = append(out, f)
	}
	return out, nil
}

// orderedMembers returns the members of a JSON object in their order.
func orderedMembers(raw json.RawMessage) ([]string, []json.RawMessage, error) {
	if len(bytes.TrimSpace(raw)) == 0 || string(bytes.TrimSpace(raw)) == "null" {
		return nil, nil, nil
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return nil, nil, errors.New("not a JSON object")
	}
	var names []string
	var values []json.RawMessage
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return nil, nil, err
		}
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, nil, err
		}
		names, values = append(names, t.(string)), append(values, v)
	}
	return names, values, nil
}

type propSchema struct {
	Type        string            `json:"type"`
	Title       string            `json:"title"`
	Description string            `json:"description"`
	Default     json.RawMessage   `json:"default"`
	Enum        []json.RawMessage `json:"enum"`
	EnumNames   []string          `json:"enumNames"`
	OneOf       []titled          `json:"oneOf"`
	AnyOf       []titled          `json:"anyOf"`
	Items       *propSchema       `json:"items"`
	MinLength   *int              `json:"minLength"`
	MaxLength   *int              `json:"maxLength"`
	Format      string            `json:"format"`
	Minimum     *float64          `json:"minimum"`
	Maximum     *float64          `json:"maximum"`
	MinItems    *int              `json:"minItems"`
	MaxItems    *int              `json:"maxItems"`
}

type titled struct {
	Const json.RawMessage `json:"const"`
	Title string          `json:"title"`
}

func parseField(name string, raw json.RawMessage) (field, error) {
	var p propSchema
	if err := json.Unmarshal(raw, &p); err != nil {
		return field{}, fmt.Errorf("the form's field %q: %v", name, err)
	}
	f := field{name: name, title: p.Title, description: p.Description, format: p.Format,
		minimum: p.Minimum, maximum: p.Maximum, minLength: -1, maxLength: -1, minItems: -1, maxItems: -1}
	if p.MinLength != nil {
		f.minLength = *p.MinLength
	}
	if p.MaxLength != nil {
		f.maxLength = *p.MaxLength
	}
	if p.MinItems != nil {
		f.minItems = *p.MinItems
	}
	if p.MaxItems != nil {
		f.maxItems = *p.MaxItems
	}
	switch {
	case p.Type == "array":
		if p.Items == nil {
			return field{}, fmt.Errorf("the form's field %q: a list without items", name)
		}
		f.kind, f.options = "choices", choices(*p.Items)
		if len(f.options) == 0 {
			return field{}, fmt.Errorf("the form's field %q: a list whose items are not choices", name)
		}
	case len(p.Enum) > 0 || len(p.OneOf) > 0 || len(p.AnyOf) > 0:
		f.kind, f.options = "choice", choices(p)
	case p.Type == "string", p.Type == "number", p.Type == "integer", p.Type == "boolean":
		f.kind = p.Type
	default:
		return field{}, fmt.Errorf("the form's field %q has type %q, which a form cannot ask", name, p.Type)
	}
	if len(p.Default) > 0 && string(p.Default) != "null" {
		var d any
		if err := json.Unmarshal(p.Default, &d); err == nil {
			f.def = d
		}
	}
	return f, nil
}

// choices are the options of an enum (titled by enumNames), or of
// oneOf/anyOf const/title lists.
func choices(p propSchema) []option {
	var out []option
	for i, e := range p.Enum {
		v := jsonText(e)
		o := option{value: v, title: v}
		if i < len(p.EnumNames) && p.EnumNames[i] != "" {
			o.title = p.EnumNames[i]
		}
		out = append(out, o)
	}
	for _, t := range append(p.OneOf, p.AnyOf...) {
		v := jsonText(t.Const)
		o := option{value: v, title: t.Title}
		if o.title == "" {
			o.title = v
		}
		out = append(out, o)
	}
	return out
}

// jsonText is a JSON string's text, or the JSON itself.
func jsonText(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	return string(raw)
}

// label is how the field is asked: its title (or name) and what it takes.
func (f field) label() string {
	name := f.title
	if name == "" {
		name = f.name
	}
	var hints []string
	switch f.kind {
	case "string":
		switch f.format {
		case "email":
			hints = append(hints, "email address")
		case "uri":
			hints = append(hints, "URL")
		case "date":
			hints = append(hints, "date YYYY-MM-DD")
		case "date-time":
			hints = append(hints, "date and time, RFC 3339")
		default:
			hints = append(hints, "text")
		}
	case "integer":
		hints = append(hints, "whole number"+bounds(f))
	case "number":
		hints = append(hints, "number"+bounds(f))
	case "boolean":
		hints = append(hints, "yes or no")
	case "choice":
		hints = append(hints, "one of: "+optionList(f.options))
	case "choices":
		hints = append(hints, "any of, separated by commas: "+optionList(f.options))
	}
	if f.required {
		hints = append(hints, "required")
	}
	if f.def != nil {
		hints = append(hints, "Enter for "+f.defaultText())
	}
	return safe.Line(name) + " (" + safe.Line(strings.Join(hints, "; ")) + "): "
}

func bounds(f field) string {
	switch {
	case f.minimum != nil && f.maximum != nil:
		return fmt.Sprintf(" from %v to %v", *f.minimum, *f.maximum)
	case f.minimum != nil:
		return fmt.Sprintf(" of at least %v", *f.minimum)
	case f.maximum != nil:
		return fmt.Sprintf(" of at most %v", *f.maximum)
	}
	return ""
}

// optionList shows the options numbered: "1 Red, 2 Green".
func optionList(opts []option) string {
	parts := make([]string, len(opts))
	for i, o := range opts {
		parts[i] = fmt.Sprintf("%d %s", i+1, o.title)
	}
	return strings.Join(parts, ", ")
}

// defaultText is the default as the person would type it.
func (f field) defaultText() string {
	switch d := f.def.(type) {
	case bool:
		if d {
			return "yes"
		}
		return "no"
	case []any:
		parts := make([]string, len(d))
		for i, v := range d {
			parts[i] = f.titleOf(fmt.Sprint(v))
		}
		return strings.Join(parts, ", ")
	case string:
		if f.kind == "choice" {
			return f.titleOf(d)
		}
		return d
	}
	b, _ := json.Marshal(f.def)
	return string(b)
}

func (f field) titleOf(v string) string {
	for _, o := range f.options {
		if o.value == v {
			return o.title
		}
	}
	return v
}

// errSkip is an empty answer to a field that is not required and has no
// default: the field is left out.
var errSkip = errors.New("left out")

// answer turns what the person typed into the field's value: the default
// when nothing was typed (SEP-1034), a value of the field's type checked
// against its bounds, or an error that says what is wanted.
func (f field) answer(text string) (any, error) {
	text = strings.TrimSpace(text)
	if text == "" {
		switch {
		case f.def != nil:
			return f.def, nil
		case f.required:
			return nil, errors.New("an answer is required")
		default:
			return nil, errSkip
		}
	}
	switch f.kind {
	case "string":
		return f.text(text)
	case "integer", "number":
		v, err := strconv.ParseFloat(text, 64)
		if err != nil || math.IsInf(v, 0) || math.IsNaN(v) {
			return nil, fmt.Errorf("%q is not a number", text)
		}
		if f.kind == "integer" && v != math.Trunc(v) {
			return nil, fmt.Errorf("%q is not a whole number", text)
		}
		if f.minimum != nil && v < *f.minimum || f.maximum != nil && v > *f.maximum {
			return nil, fmt.Errorf("%v is out of range: want a number%s", v, bounds(f))
		}
		if f.kind == "integer" {
			return int64(v), nil
		}
		return v, nil
	case "boolean":
		switch strings.ToLower(text) {
		case "y", "yes", "true", "1", "on":
			return true, nil
		case "n", "no", "false", "0", "off":
			return false, nil
		}
		return nil, fmt.Errorf("%q is not yes or no", text)
	case "choice":
		return f.pick(text)
	case "choices":
		var out []any
		for _, part := range strings.Split(text, ",") {
			if part = strings.TrimSpace(part); part == "" {
				continue
			}
			v, err := f.pick(part)
			if err != nil {
				return nil, err
			}
			out = append(out, v)
		}
		if f.minItems >= 0 && len(out) < f.minItems || f.maxItems >= 0 && len(out) > f.maxItems {
			return nil, fmt.Errorf("pick %s", itemBounds(f))
		}
		return out, nil
	}
	return nil, fmt.Errorf("the field has no type the form knows")
}

func itemBounds(f field) string {
	switch {
	case f.minItems >= 0 && f.maxItems >= 0:
		return fmt.Sprintf("from %d to %d of them", f.minItems, f.maxItems)
	case f.minItems >= 0:
		return fmt.Sprintf("at least %d of them", f.minItems)
	default:
		return fmt.Sprintf("at most %d of them", f.maxItems)
	}
}

// pick finds a choice by its number, value or title.
func (f field) pick(text string) (any, error) {
	if n, err := strconv.Atoi(text); err == nil && n >= 1 && n <= len(f.options) {
		return f.options[n-1].value, nil
	}
	for _, o := range f.options {
		if o.value == text || strings.EqualFold(o.title, text) {
			return o.value, nil
		}
	}
	return nil, fmt.Errorf("%q is none of the choices: answer with a number from 1 to %d, or a choice as shown", text, len(f.options))
}

var datePattern = regexp.MustCompile(`^\d{4}-\d{2}-\d{2}$`)

// text checks a string answer against the field's length and format.
func (f field) text(s string) (any, error) {
	n := len([]rune(s))
	if f.minLength >= 0 && n < f.minLength {
		return nil, fmt.Errorf("at least %d characters, please", f.minLength)
	}
	if f.maxLength >= 0 && n > f.maxLength {
		return nil, fmt.Errorf("at most %d characters, please", f.maxLength)
	}
	switch f.format {
	case "email":
		if a, err := mail.ParseAddress(s); err != nil || a.Address != s {
			return nil, fmt.Errorf("%q is not an email address", s)
		}
	case "uri":
		if u, err := url.Parse(s); err != nil || u.Scheme == "" {
			return nil, fmt.Errorf("%q is not a URL", s)
		}
	case "date":
		if _, err := time.Parse("2006-01-02", s); err != nil || !datePattern.MatchString(s) {
			return nil, fmt.Errorf("%q is not a date YYYY-MM-DD", s)
		}
	case "date-time":
		if _, err := time.Parse(time.RFC3339, s); err != nil {
			return nil, fmt.Errorf("%q is not an RFC 3339 date and time", s)
		}
	}
	return s, nil
}

// A person's answer to an elicitation: accept with content, decline, or
// cancel.
const (
	actionAccept  = "accept"
	actionDecline = "decline"
	actionCancel  = "cancel"
)

// errCancelled is a question the person cancelled (Ctrl-C, Ctrl-D).
var errCancelled = errors.New("cancelled")

// dialog is how a form talks to the person: it says lines and reads
// answers. line returns errCancelled when the person cancels.
type dialog interface {
	say(text string)
	line(ctx context.Context, prompt string) (string, error)
}

// fillForm asks every field of the form and then whether to send; it
// returns the elicitation result. Typing /decline or /cancel at any field
// answers so; an answer that does not fit its field is asked again, with
// what is wanted.
func fillForm(ctx context.Context, d dialog, fields []field) (map[string]any, error) {
	content := map[string]any{}
	d.say("  (Enter keeps the default; /decline or /cancel at any field; Ctrl-C cancels)")
	for _, f := range fields {
		if f.description != "" && f.description != f.title {
			d.say("  " + safe.Line(f.description))
		}
		for {
			text, err := d.line(ctx, "  "+f.label())
			if err != nil {
				return nil, err
			}
			switch strings.TrimSpace(text) {
			case "/decline":
				return map[string]any{"action": actionDecline}, nil
			case "/cancel":
				return map[string]any{"action": actionCancel}, nil
			}
			v, err := f.answer(text)
			if errors.Is(err, errSkip) {
				break
			}
			if err != nil {
				d.say("    " + safe.Line(err.Error()))
				continue
			}
			content[f.name] = v
			break
		}
	}
	for {
		text, err := d.line(ctx, "  send? [Y]es, [d]ecline, [c]ancel: ")
		if err != nil {
			return nil, err
		}
		switch strings.ToLower(strings.TrimSpace(text)) {
		case "", "y", "yes":
			return map[string]any{"action": actionAccept, "content": content}, nil
		case "d", "decline", "n", "no":
			return map[string]any{"action": actionDecline}, nil
		case "c", "cancel":
			return map[string]any{"action": actionCancel}, nil
		}
		d.say("    answer y, d or c")
	}
}
