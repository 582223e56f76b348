// Package form reads the form an MCP server's elicitation asks a person to
// fill, and checks the answers, with one set of rules for every front that
// shows it: the console asks the fields one at a time on a terminal
// (docs/rfc/0006-console.md, "Questions"), the web page shows them as one
// form and sends back what was typed (docs/rfc/0009-web.md, "Questions").
//
// An elicitation's schema is flat: an object of properties each a string
// (with minLength, maxLength, format email, uri, date or date-time), a
// number or integer (minimum, maximum), a boolean, a single choice (enum,
// possibly titled by enumNames or by oneOf const/title) or a multiple
// choice (an array of such items, minItems, maxItems); each may have a
// default (SEP-1034) and the object lists the required ones.
//
// Answers are text, as a person types them: [Field.Answer] turns the text
// into the field's value (the default when nothing was typed) or says what
// is wanted.
package form

import (
	"bytes"
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

// Kinds of field.
const (
	String  = "string"
	Number  = "number"
	Integer = "integer"
	Boolean = "boolean"
	Choice  = "choice"  // one of Options
	Choices = "choices" // any of Options
)

// Field is one property of an elicitation's form.
type Field struct {
	Name, Title, Description string
	// Kind is one of the kinds above.
	Kind     string
	Required bool
	// Default is the default, decoded from JSON; nil: none.
	Default any
	// Options are the values of a Choice or Choices field.
	Options []Option
	// MinLength, MaxLength, MinItems and MaxItems are -1 when unset.
	MinLength, MaxLength int
	Format               string
	Minimum, Maximum     *float64
	MinItems, MaxItems   int
}

// Option is one value of a choice, and what the person reads for it.
type Option struct {
	Value string `json:"value"`
	Title string `json:"title"`
}

// Parse reads an elicitation's requestedSchema into its fields, in the
// order the server wrote them. A property of a type the form does not know
// is an error: the person could not answer it.
func Parse(schema json.RawMessage) ([]Field, error) {
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
	out := make([]Field, 0, len(names))
	for i, name := range names {
		f, err := parseField(name, props[i])
		if err != nil {
			return nil, err
		}
		for _, r := range s.Required {
			if r == name {
				f.Required = true
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

func parseField(name string, raw json.RawMessage) (Field, error) {
	var p propSchema
	if err := json.Unmarshal(raw, &p); err != nil {
		return Field{}, fmt.Errorf("the form's field %q: %v", name, err)
	}
	f := Field{Name: name, Title: p.Title, Description: p.Description, Format: p.Format,
		Minimum: p.Minimum, Maximum: p.Maximum, MinLength: -1, MaxLength: -1, MinItems: -1, MaxItems: -1}
	if p.MinLength != nil {
		f.MinLength = *p.MinLength
	}
	if p.MaxLength != nil {
		f.MaxLength = *p.MaxLength
	}
	if p.MinItems != nil {
		f.MinItems = *p.MinItems
	}
	if p.MaxItems != nil {
		f.MaxItems = *p.MaxItems
	}
	switch {
	case p.Type == "array":
		if p.Items == nil {
			return Field{}, fmt.Errorf("the form's field %q: a list without items", name)
		}
		f.Kind, f.Options = Choices, choices(*p.Items)
		if len(f.Options) == 0 {
			return Field{}, fmt.Errorf("the form's field %q: a list whose items are not choices", name)
		}
	case len(p.Enum) > 0 || len(p.OneOf) > 0 || len(p.AnyOf) > 0:
		f.Kind, f.Options = Choice, choices(p)
	case p.Type == String, p.Type == Number, p.Type == Integer, p.Type == Boolean:
		f.Kind = p.Type
	default:
		return Field{}, fmt.Errorf("the form's field %q has type %q, which a form cannot ask", name, p.Type)
	}
	if len(p.Default) > 0 && string(p.Default) != "null" {
		var d any
		if err := json.Unmarshal(p.Default, &d); err == nil {
			f.Default = d
		}
	}
	return f, nil
}

// choices are the options of an enum (titled by enumNames), or of
// oneOf/anyOf const/title lists.
func choices(p propSchema) []Option {
	var out []Option
	for i, e := range p.Enum {
		v := JSONText(e)
		o := Option{Value: v, Title: v}
		if i < len(p.EnumNames) && p.EnumNames[i] != "" {
			o.Title = p.EnumNames[i]
		}
		out = append(out, o)
	}
	for _, t := range append(p.OneOf, p.AnyOf...) {
		v := JSONText(t.Const)
		o := Option{Value: v, Title: t.Title}
		if o.Title == "" {
			o.Title = v
		}
		out = append(out, o)
	}
	return out
}

// JSONText is a JSON string's text, or the JSON itself.
func JSONText(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	return string(raw)
}

// DisplayName is what the person reads for the field: its title, or its name.
func (f Field) DisplayName() string {
	if f.Title != "" {
		return f.Title
	}
	return f.Name
}

// Hint says what the field takes, as a person reads it: "whole number from
// 0 to 150; Enter for 30". Choices are numbered (a person at a terminal
// answers with the number); with numbered false they are not (a page shows
// them as choices of their own).
func (f Field) Hint(numbered bool) string {
	var hints []string
	switch f.Kind {
	case String:
		switch f.Format {
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
	case Integer:
		hints = append(hints, "whole number"+bounds(f))
	case Number:
		hints = append(hints, "number"+bounds(f))
	case Boolean:
		hints = append(hints, "yes or no")
	case Choice:
		if numbered {
			hints = append(hints, "one of: "+optionList(f.Options))
		} else {
			hints = append(hints, "one of them")
		}
	case Choices:
		if numbered {
			hints = append(hints, "any of, separated by commas: "+optionList(f.Options))
		} else if b := itemBounds(f); b != "" {
			hints = append(hints, "pick "+b)
		} else {
			hints = append(hints, "any of them")
		}
	}
	if f.Required {
		hints = append(hints, "required")
	}
	if f.Default != nil && numbered {
		hints = append(hints, "Enter for "+f.DefaultText())
	}
	return strings.Join(hints, "; ")
}

// Label is how a terminal asks the field: its name and what it takes,
// escaped: "Zeta (text; required): ".
func (f Field) Label() string {
	return safe.Line(f.DisplayName()) + " (" + safe.Line(f.Hint(true)) + "): "
}

func bounds(f Field) string {
	switch {
	case f.Minimum != nil && f.Maximum != nil:
		return fmt.Sprintf(" from %v to %v", *f.Minimum, *f.Maximum)
	case f.Minimum != nil:
		return fmt.Sprintf(" of at least %v", *f.Minimum)
	case f.Maximum != nil:
		return fmt.Sprintf(" of at most %v", *f.Maximum)
	}
	return ""
}

// optionList shows the options numbered: "1 Red, 2 Green".
func optionList(opts []Option) string {
	parts := make([]string, len(opts))
	for i, o := range opts {
		parts[i] = fmt.Sprintf("%d %s", i+1, o.Title)
	}
	return strings.Join(parts, ", ")
}

// DefaultText is the default as the person would type it ("" without
// one).
func (f Field) DefaultText() string {
	switch d := f.Default.(type) {
	case nil:
		return ""
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
		if f.Kind == Choice {
			return f.titleOf(d)
		}
		return d
	}
	b, _ := json.Marshal(f.Default)
	return string(b)
}

func (f Field) titleOf(v string) string {
	for _, o := range f.Options {
		if o.Value == v {
			return o.Title
		}
	}
	return v
}

// ErrSkip is an empty answer to a field that is not required and has no
// default: the field is left out.
var ErrSkip = errors.New("left out")

// Answer turns what the person typed into the field's value: the default
// when nothing was typed (SEP-1034), a value of the field's type checked
// against its bounds, or an error that says what is wanted. A choice is
// picked by its number, value or title; several are separated by commas.
func (f Field) Answer(text string) (any, error) {
	text = strings.TrimSpace(text)
	if text == "" {
		switch {
		case f.Default != nil:
			return f.Default, nil
		case f.Required:
			return nil, errors.New("an answer is required")
		default:
			return nil, ErrSkip
		}
	}
	switch f.Kind {
	case String:
		return f.text(text)
	case Integer, Number:
		v, err := strconv.ParseFloat(text, 64)
		if err != nil || math.IsInf(v, 0) || math.IsNaN(v) {
			return nil, fmt.Errorf("%q is not a number", text)
		}
		if f.Kind == Integer && v != math.Trunc(v) {
			return nil, fmt.Errorf("%q is not a whole number", text)
		}
		if f.Minimum != nil && v < *f.Minimum || f.Maximum != nil && v > *f.Maximum {
			return nil, fmt.Errorf("%v is out of range: want a number%s", v, bounds(f))
		}
		if f.Kind == Integer {
			return int64(v), nil
		}
		return v, nil
	case Boolean:
		switch strings.ToLower(text) {
		case "y", "yes", "true", "1", "on":
			return true, nil
		case "n", "no", "false", "0", "off":
			return false, nil
		}
		return nil, fmt.Errorf("%q is not yes or no", text)
	case Choice:
		return f.pick(text)
	case Choices:
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
		if f.MinItems >= 0 && len(out) < f.MinItems || f.MaxItems >= 0 && len(out) > f.MaxItems {
			return nil, fmt.Errorf("pick %s", itemBounds(f))
		}
		return out, nil
	}
	return nil, fmt.Errorf("the field has no type the form knows")
}

func itemBounds(f Field) string {
	switch {
	case f.MinItems >= 0 && f.MaxItems >= 0:
		return fmt.Sprintf("from %d to %d of them", f.MinItems, f.MaxItems)
	case f.MinItems >= 0:
		return fmt.Sprintf("at least %d of them", f.MinItems)
	case f.MaxItems >= 0:
		return fmt.Sprintf("at most %d of them", f.MaxItems)
	}
	return ""
}

// pick finds a choice by its number, value or title.
func (f Field) pick(text string) (any, error) {
	if n, err := strconv.Atoi(text); err == nil && n >= 1 && n <= len(f.Options) {
		return f.Options[n-1].Value, nil
	}
	for _, o := range f.Options {
		if o.Value == text || strings.EqualFold(o.Title, text) {
			return o.Value, nil
		}
	}
	return nil, fmt.Errorf("%q is none of the choices: answer with a number from 1 to %d, or a choice as shown", text, len(f.Options))
}

var datePattern = regexp.MustCompile(`^\d{4}-\d{2}-\d{2}$`)

// text checks a string answer against the field's length and format.
func (f Field) text(s string) (any, error) {
	n := len([]rune(s))
	if f.MinLength >= 0 && n < f.MinLength {
		return nil, fmt.Errorf("at least %d characters, please", f.MinLength)
	}
	if f.MaxLength >= 0 && n > f.MaxLength {
		return nil, fmt.Errorf("at most %d characters, please", f.MaxLength)
	}
	switch f.Format {
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

// Fill checks a whole form's answers at once, as a page sends them (field
// name → the text typed; a field not in texts was left empty): the
// content of an accepted elicitation, or the problem of each field that
// does not fit, by name.
func Fill(fields []Field, texts map[string]string) (content map[string]any, problems map[string]string) {
	content = map[string]any{}
	for _, f := range fields {
		v, err := f.Answer(texts[f.Name])
		switch {
		case errors.Is(err, ErrSkip):
		case err != nil:
			if problems == nil {
				problems = map[string]string{}
			}
			problems[f.Name] = err.Error()
		default:
			content[f.Name] = v
		}
	}
	return content, problems
}
