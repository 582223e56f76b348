package host

import (
	"errors"
	"fmt"
	"reflect"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/harness-go/harness/host/jsexpr"
	"github.com/harness-go/harness/host/secret"
)

// FieldError is a configuration error about one key. Validate methods return
// it (or several joined with [errors.Join]) so that messages point at the
// right line of cordis.yml.
type FieldError struct {
	// Field is the path below `config:`, e.g. "serverName", "env.TOKEN",
	// "args[2]".
	Field string
	Err   error
}

func (e *FieldError) Error() string { return e.Field + ": " + e.Err.Error() }
func (e *FieldError) Unwrap() error { return e.Err }

// FieldErrorf returns a [FieldError] with a formatted message.
func FieldErrorf(field, format string, args ...any) error {
	return &FieldError{Field: field, Err: fmt.Errorf(format, args...)}
}

// Unset records an undefined !!js value whose key was left out.
type Unset struct {
	Pos   Pos
	Field string // the full path, e.g. "config.env.TOKEN"
	Vars  []string
}

// withUnset adds to each problem of an entry that the keys some !!js left
// out (unset) may be why: "config.command: is required … (a !!js value is
// undefined: process.env.CMD is not set)".
func withUnset(problems []Problem, unset []Unset) []Problem {
	var vars []string
	for _, u := range unset {
		for _, v := range u.Vars {
			if v = jsexpr.EnvRef(v); !slices.Contains(vars, v) {
				vars = append(vars, v)
			}
		}
	}
	verb := " not set)"
	if len(vars) == 1 {
		verb = " is not set)"
	}
	note := " (a !!js value is undefined, its key left out: " + strings.Join(vars, ", ") + verb
	out := make([]Problem, len(problems))
	for i, p := range problems {
		p.Msg += note
		out[i] = p
	}
	return out
}

// resolved is an entry's configuration after its !!js expressions were
// evaluated: plain YAML, with positions kept for messages.
type resolved struct {
	node  *yaml.Node // nil when the entry has no config
	paths map[*yaml.Node]string
	js    map[*yaml.Node]bool // the values a !!js expression made
	unset []Unset
}

// resolve evaluates the entry's !!js expressions. A template that reads an
// unset variable is a problem for this entry; a bare unset value leaves its
// key (or sequence item) out and is recorded in unset.
func (e *Entry) resolve(env jsexpr.Env) (*resolved, []Problem) {
	r := &resolved{paths: map[*yaml.Node]string{}, js: map[*yaml.Node]bool{}}
	if e.Config == nil {
		return r, nil
	}
	var problems []Problem
	var walk func(n *yaml.Node, path string) (*yaml.Node, bool)
	walk = func(n *yaml.Node, path string) (*yaml.Node, bool) {
		if n.Kind == yaml.AliasNode && n.Alias != nil {
			n = n.Alias
		}
		out := *n
		out.Content = nil
		switch n.Kind {
		case yaml.MappingNode:
			for i := 0; i+1 < len(n.Content); i += 2 {
				k := n.Content[i]
				v, keep := walk(n.Content[i+1], path+"."+k.Value)
				if keep {
					kc := *k
					out.Content = append(out.Content, &kc, v)
				}
			}
		case yaml.SequenceNode:
			for i, c := range n.Content {
				if v, keep := walk(c, fmt.Sprintf("%s[%d]", path, i)); keep {
					out.Content = append(out.Content, v)
				}
			}
		case yaml.ScalarNode:
			if x, ok := e.exprs[n]; ok {
				val, defined, err := x.Eval(env)
				pos := Pos{File: e.file, Line: n.Line, Col: n.Column}
				if err != nil {
					problems = append(problems, Problem{Pos: pos, Entry: e.ID, Field: path, Msg: "!!js: " + err.Error()})
					return nil, false
				}
				if !defined {
					r.unset = append(r.unset, Unset{Pos: pos, Field: path, Vars: x.Vars()})
					return nil, false
				}
				out.Tag = "!!str"
				out.Style = yaml.DoubleQuotedStyle
				out.Value = val
				r.js[&out] = true
			}
		}
		r.paths[&out] = strings.TrimPrefix(strings.TrimPrefix(path, "config"), ".")
		return &out, true
	}
	r.node, _ = walk(e.Config, "config")
	return r, problems
}

// decode decodes a resolved configuration strictly into v (a plugin value
// holding its defaults) and runs its Validator.
func (e *Entry) decode(r *resolved, v any) []Problem {
	var problems []Problem
	add := func(n *yaml.Node, field, msg string) {
		pos := Pos{File: e.file, Line: e.Pos.Line, Col: e.Pos.Col}
		if n != nil && n.Line > 0 { // a child's configuration made by its parent may have no positions
			pos = Pos{File: e.file, Line: n.Line, Col: n.Column}
		}
		if field != "" {
			field = "config." + field
		}
		problems = append(problems, Problem{Pos: pos, Entry: e.ID, Field: field, Msg: msg})
	}
	if r.node != nil {
		unknownFields(r.node, reflect.TypeOf(v), "", add)
		if len(problems) > 0 {
			return problems
		}
		if err := r.node.Decode(v); err != nil {
			var te *yaml.TypeError
			if errors.As(err, &te) {
				used := map[*yaml.Node]bool{}
				for _, msg := range te.Errors {
					n, field, rest := r.locate(msg, reflect.TypeOf(v), used)
					add(n, field, r.hideValue(n, field, rest, v))
				}
			} else {
				// "cannot decode !!str `…` as a !!int" (an explicit tag): the
				// whole value is quoted; find its node by it.
				n, field, msg := r.node, "", err.Error()
				if m := typeErrLine.FindStringSubmatch(msg); m != nil {
					// A type's own unmarshaler, with an error of its own
					// that names the line.
					line, _ := strconv.Atoi(m[1])
					n, field = r.unmarshalerOn(line, reflect.TypeOf(v))
					msg = m[2]
				} else if q := quotedValue.FindString(msg); q != "" {
					if found := r.byValue(q[1 : len(q)-1]); found != nil {
						n, field = found, r.paths[found]
					}
				}
				add(n, field, r.hideValue(n, field, msg, v))
			}
			return problems
		}
	}
	if val, ok := v.(Validator); ok {
		if err := val.Validate(); err != nil {
			for _, err := range flatten(err) {
				var fe *FieldError
				if errors.As(err, &fe) {
					n := r.find(fe.Field)
					if n == nil && r.node != nil {
						n = r.node
					}
					add(n, fe.Field, fe.Err.Error())
				} else {
					add(r.node, "", err.Error())
				}
			}
		}
	}
	return problems
}

func flatten(err error) []error {
	if m, ok := err.(interface{ Unwrap() []error }); ok {
		var out []error
		for _, e := range m.Unwrap() {
			out = append(out, flatten(e)...)
		}
		return out
	}
	return []error{err}
}

var typeErrLine = regexp.MustCompile(`^line (\d+): (.*)$`)

// quotedValue is the value a yaml.v3 type error quotes, cut to a few
// characters: "cannot unmarshal !!str `ghp_R3a...` into int".
var quotedValue = regexp.MustCompile("`[^`]*`")

// hideValue removes the value a yaml.v3 message quotes when it could be a
// secret's (the redaction cannot match a value yaml.v3 cut short): one !!js
// made, one below a field of v tagged secret, one whose key is unknown, or
// one that looks like a credential itself (a token, "Bearer …").
func (r *resolved) hideValue(n *yaml.Node, field, msg string, v any) string {
	if n == r.node || r.js[n] || secretField(reflect.TypeOf(v), field) || n != nil && secret.LooksLikeCredential(n.Value) {
		return quotedValue.ReplaceAllString(msg, "(value not shown)")
	}
	return msg
}

// secretField reports whether field (a path below config: "env.TOKEN",
// "args[2]") lies below a field of struct t tagged secret (any of the
// tags: see secretValues).
func secretField(t reflect.Type, field string) bool {
	for t != nil && t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t == nil || t.Kind() != reflect.Struct || field == "" {
		return false
	}
	top := field
	if i := strings.IndexAny(field, ".["); i >= 0 {
		top = field[:i]
	}
	found := false
	eachYAMLField(t, func(name string, f reflect.StructField) {
		if name == top && f.Tag.Get("secret") != "" {
			found = true
		}
	})
	return found
}

// locate finds the node a yaml.v3 type error is about and returns it with
// its path and the message without the line prefix. The message names the
// line, the node's tag, its value (cut to seven characters) and the Go type
// it was decoded into, not its column: of the nodes on that line not taken
// by an earlier message of the same decode (used), the one with that tag
// and value — whose field in t has that type, when several do — else the
// last scalar on the line. A one-line flow mapping holds several.
func (r *resolved) locate(msg string, t reflect.Type, used map[*yaml.Node]bool) (*yaml.Node, string, string) {
	m := typeErrLine.FindStringSubmatch(msg)
	if m == nil {
		return r.node, "", msg
	}
	line, _ := strconv.Atoi(m[1])
	if path, rest, ok := strings.Cut(m[2], ": "); ok && !strings.HasPrefix(m[2], "cannot ") {
		// A type's own unmarshaler names the path: "oauth.idp: must be …".
		if n := r.find(path); n != nil && n.Line == line {
			return n, path, rest
		}
	}
	var best, last *yaml.Node
	bestTyped := false
	tm := typeErrWhat.FindStringSubmatch(m[2])
	for n, path := range r.paths {
		if n.Line != line {
			continue
		}
		if n.Kind == yaml.ScalarNode && (last == nil || n.Column > last.Column) {
			last = n
		}
		if tm == nil || used[n] || n.ShortTag() != tm[1] || !valueMatches(n, tm[2]) {
			continue
		}
		ft := typeAt(t, path)
		typed := ft != nil && ft.String() == tm[3]
		if best == nil || typed && !bestTyped || typed == bestTyped && n.Column < best.Column {
			best, bestTyped = n, typed
		}
	}
	switch {
	case best != nil:
	case last != nil:
		best = last
	default:
		return &yaml.Node{Line: line}, "", m[2]
	}
	used[best] = true
	return best, r.paths[best], m[2]
}

// typeAt is the type of the value at path ("oauth.callbackPort",
// "args[2]", "env.TOKEN") below a value of type t, pointers taken off; nil
// when the path leaves what t declares.
func typeAt(t reflect.Type, path string) reflect.Type {
	for path != "" && t != nil {
		for t.Kind() == reflect.Pointer {
			t = t.Elem()
		}
		if rest, ok := strings.CutPrefix(path, "["); ok {
			_, after, _ := strings.Cut(rest, "]")
			if t.Kind() != reflect.Slice && t.Kind() != reflect.Array {
				return nil
			}
			t, path = t.Elem(), strings.TrimPrefix(after, ".")
			continue
		}
		name := path
		if i := strings.IndexAny(path, ".["); i >= 0 {
			name, path = path[:i], strings.TrimPrefix(path[i:], ".")
		} else {
			path = ""
		}
		switch t.Kind() {
		case reflect.Map:
			t = t.Elem()
		case reflect.Struct:
			var found reflect.Type
			eachYAMLField(t, func(n string, f reflect.StructField) {
				if n == name {
					found = f.Type
				}
			})
			t = found
		default:
			return nil
		}
	}
	for t != nil && t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	return t
}

// typeErrWhat reads the tag, the quoted value (absent for a sequence or a
// mapping) and the Go type of a yaml.v3 type error: "cannot unmarshal !!str `abc` into int".
var typeErrWhat = regexp.MustCompile("^cannot unmarshal (!![a-z]+)(?: `([^`]*)`)? into (.+)$")

// valueMatches reports whether n's value is the one a yaml.v3 message
// quotes: whole, or its first seven characters and "..." when longer than
// ten.
func valueMatches(n *yaml.Node, quoted string) bool {
	if n.Kind != yaml.ScalarNode {
		return quoted == ""
	}
	if cut, ok := strings.CutSuffix(quoted, "..."); ok && len(n.Value) > 10 {
		return strings.HasPrefix(n.Value, cut)
	}
	return n.Value == quoted
}

// byValue returns the scalar node holding value, nil when none does (or
// several do: then the message cannot say which).
func (r *resolved) byValue(value string) *yaml.Node {
	var found *yaml.Node
	for n := range r.paths {
		if n.Kind == yaml.ScalarNode && n.Value == value {
			if found != nil {
				return nil
			}
			found = n
		}
	}
	return found
}

// unmarshalerOn returns the node of line whose field in t decodes itself
// (yaml.Unmarshaler), with its path — the first on the line when several
// do — else the node that starts first on the line, without a path (a
// node of that line alone, without a column, when none does). A one-line
// flow mapping holds several.
func (r *resolved) unmarshalerOn(line int, t reflect.Type) (*yaml.Node, string) {
	var first, self *yaml.Node
	for n, path := range r.paths {
		if n.Line != line {
			continue
		}
		if first == nil || n.Column < first.Column {
			first = n
		}
		if ft := typeAt(t, path); ft != nil && reflect.PointerTo(ft).Implements(unmarshalerType) && (self == nil || n.Column < self.Column) {
			self = n
		}
	}
	switch {
	case self != nil:
		return self, r.paths[self]
	case first != nil:
		return first, ""
	}
	return &yaml.Node{Line: line}, ""
}

// find returns the node at a field path ("env.TOKEN", "args[1]").
func (r *resolved) find(field string) *yaml.Node {
	for n, p := range r.paths {
		if p == field {
			return n
		}
	}
	return nil
}

var (
	unmarshalerType   = reflect.TypeOf((*yaml.Unmarshaler)(nil)).Elem()
	mappingFieldsType = reflect.TypeOf((*MappingFields)(nil)).Elem()
)

// MappingFields is implemented by a configuration type that decodes itself
// (a yaml.Unmarshaler: say, one that also takes a scalar) and whose mapping
// form has its fields' keys and no others. The host checks such a mapping
// as any struct's, so that an unknown key is reported at its own place with
// the known keys; another type that decodes itself is left to its
// unmarshaler.
type MappingFields interface {
	yaml.Unmarshaler
	MappingFields()
}

// unknownFields reports mapping keys that have no field in t: strict decoding
// with positions, which yaml.v3 only offers for whole documents.
func unknownFields(n *yaml.Node, t reflect.Type, path string, add func(*yaml.Node, string, string)) {
	self := func(t reflect.Type) bool {
		return t.Implements(unmarshalerType) && !(t.Implements(mappingFieldsType) && n.Kind == yaml.MappingNode)
	}
	for t.Kind() == reflect.Pointer {
		if self(t) {
			return
		}
		t = t.Elem()
	}
	if self(reflect.PointerTo(t)) {
		return
	}
	join := func(key string) string {
		if path == "" {
			return key
		}
		return path + "." + key
	}
	switch t.Kind() {
	case reflect.Struct:
		if n.Kind != yaml.MappingNode {
			return // the decoder reports the type mismatch
		}
		fields, open := yamlFields(t)
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			ft, ok := fields[k.Value]
			if !ok {
				if !open {
					add(k, join(k.Value), fmt.Sprintf("unknown key %q (known keys: %s)", k.Value, knownKeys(fields)))
				}
				continue
			}
			unknownFields(v, ft, join(k.Value), add)
		}
	case reflect.Map:
		if n.Kind != yaml.MappingNode {
			return
		}
		for i := 0; i+1 < len(n.Content); i += 2 {
			unknownFields(n.Content[i+1], t.Elem(), join(n.Content[i].Value), add)
		}
	case reflect.Slice, reflect.Array:
		if n.Kind != yaml.SequenceNode {
			return
		}
		for i, c := range n.Content {
			unknownFields(c, t.Elem(), fmt.Sprintf("%s[%d]", path, i), add)
		}
	}
}

// yamlFields maps the YAML keys of a struct to field types (see
// eachYAMLField). open reports an inline map, which accepts any key.
func yamlFields(t reflect.Type) (fields map[string]reflect.Type, open bool) {
	fields = map[string]reflect.Type{}
	open = eachYAMLField(t, func(name string, f reflect.StructField) { fields[name] = f.Type })
	return fields, open
}

// eachYAMLField calls fn for every YAML key of struct t, following yaml.v3's
// rules: the tag's name, else the lower-cased field name; "-" skipped;
// ",inline" structs flattened. It reports whether an inline map accepts any
// other key.
func eachYAMLField(t reflect.Type, fn func(name string, f reflect.StructField)) (open bool) {
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		tag := f.Tag.Get("yaml")
		if tag == "-" {
			continue
		}
		name, opts, _ := strings.Cut(tag, ",")
		if strings.Contains(","+opts+",", ",inline,") {
			ft := f.Type
			for ft.Kind() == reflect.Pointer {
				ft = ft.Elem()
			}
			switch ft.Kind() {
			case reflect.Struct:
				open = eachYAMLField(ft, fn) || open
			case reflect.Map:
				open = true
			}
			continue
		}
		if !f.IsExported() {
			continue
		}
		if name == "" {
			name = strings.ToLower(f.Name)
		}
		fn(name, f)
	}
	return open
}

func knownKeys(fields map[string]reflect.Type) string {
	keys := make([]string, 0, len(fields))
	for k := range fields {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return strings.Join(keys, ", ")
}
