package host

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strings"
)

// Schema returns a JSON Schema (draft 2020-12) of cordis.yml for the kinds
// registered in this binary: editors use it to complete and check the file.
// Each kind's config is described from its plugin type's exported fields;
// the struct tags `desc:"…"`, `enum:"a,b"` and `required:"true"` add a
// description, the allowed values, and whether the key must be present.
//
// JSON Schema cannot express YAML tags: a !!js value is a string to it, so an
// editor must be told that "!!js" is a scalar tag.
func Schema() ([]byte, error) {
	names := KindNames()
	var rules []any
	for _, k := range Kinds() {
		kindNames := append([]string{k.Name}, k.Aliases...)
		cfg := typeSchema(reflect.TypeOf(k.New()))
		if k.Doc != "" {
			cfg["description"] = k.Doc
		}
		rules = append(rules, map[string]any{
			"if":   map[string]any{"properties": map[string]any{"name": map[string]any{"enum": kindNames}}, "required": []string{"name"}},
			"then": map[string]any{"properties": map[string]any{"config": cfg}},
		})
	}
	entry := map[string]any{
		"type":                 "object",
		"required":             []string{"id", "name"},
		"additionalProperties": false,
		"properties": map[string]any{
			"id":       map[string]any{"type": "string", "minLength": 1, "maxLength": 128, "pattern": `^[^\s\x00-\x1f\x7f]+$`, "description": "Unique, stable identifier of the entry; reloads diff entries by id."},
			"name":     map[string]any{"enum": names, "description": "The plugin kind."},
			"disabled": map[string]any{"type": "boolean", "description": "true keeps the entry in the file without running it."},
			"config":   map[string]any{"type": []string{"object", "null"}, "description": "The plugin's configuration; string values may be !!js expressions."},
		},
		"allOf": rules,
	}
	doc := map[string]any{
		"$schema":     "https://json-schema.org/draft/2020-12/schema",
		"title":       "cordis.yml",
		"description": "The entries the harness runs. String values may carry the !!js tag: process.env.NAME, process.env['NAME'], 'string', `template ${…}`, a ?? b, a || b, process.cwd(), process.execPath.",
		"type":        "array",
		"items":       entry,
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(doc); err != nil {
		return nil, err
	}
	return bytes.TrimRight(b.Bytes(), "\n"), nil
}

// Schemer is a configuration type that decodes itself (yaml.Unmarshaler)
// and says what its YAML form is, for `harness schema`; without it such a
// type is described as anything.
type Schemer interface {
	YAMLSchema() map[string]any
}

var schemerType = reflect.TypeOf((*Schemer)(nil)).Elem()

// typeSchema describes the YAML form of t.
func typeSchema(t reflect.Type) map[string]any {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if reflect.PointerTo(t).Implements(schemerType) {
		return reflect.New(t).Interface().(Schemer).YAMLSchema()
	}
	if reflect.PointerTo(t).Implements(unmarshalerType) {
		return map[string]any{}
	}
	switch t.Kind() {
	case reflect.String:
		return map[string]any{"type": "string"}
	case reflect.Bool:
		return map[string]any{"type": "boolean"}
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64, reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return map[string]any{"type": "integer"}
	case reflect.Float32, reflect.Float64:
		return map[string]any{"type": "number"}
	case reflect.Slice, reflect.Array:
		return map[string]any{"type": "array", "items": typeSchema(t.Elem())}
	case reflect.Map:
		return map[string]any{"type": "object", "additionalProperties": typeSchema(t.Elem())}
	case reflect.Struct:
		props := map[string]any{}
		var required []string
		open := structSchema(t, props, &required)
		s := map[string]any{"type": "object", "properties": props}
		if !open {
			s["additionalProperties"] = false
		}
		if len(required) > 0 {
			s["required"] = required
		}
		return s
	}
	return map[string]any{}
}

// structSchema adds t's fields to props; it reports an inline map (any key
// allowed).
func structSchema(t reflect.Type, props map[string]any, required *[]string) (open bool) {
	return eachYAMLField(t, func(name string, f reflect.StructField) {
		s := typeSchema(f.Type)
		if d := f.Tag.Get("desc"); d != "" {
			s["description"] = d
		}
		if e := f.Tag.Get("enum"); e != "" {
			s["enum"] = strings.Split(e, ",")
		}
		if f.Tag.Get("required") == "true" {
			*required = append(*required, name)
		}
		props[name] = s
	})
}
