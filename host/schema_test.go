package host_test

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"gopkg.in/yaml.v3"

	"github.com/harness-go/harness/host"
)

// TestSchemaAcceptsGoodFilesAndRejectsBadOnes compiles the generated JSON
// Schema and checks files against it, the way an editor would (a !!js value
// is a string to it).
func TestSchemaAcceptsGoodFilesAndRejectsBadOnes(t *testing.T) {
	t.Parallel()
	raw, err := host.Schema()
	if err != nil {
		t.Fatal(err)
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		t.Fatalf("the schema is not JSON: %v", err)
	}
	c := jsonschema.NewCompiler()
	if err := c.AddResource("cordis.schema.json", doc); err != nil {
		t.Fatal(err)
	}
	schema, err := c.Compile("cordis.schema.json")
	if err != nil {
		t.Fatalf("the schema does not compile: %v", err)
	}
	for _, tc := range []struct {
		name, src string
		ok        bool
	}{
		{"probe", "- id: a\n  name: probe\n  config: {label: x, tools: [a], count: 2}\n", true},
		{"alias and js", "- id: a\n  name: probe-alias\n  disabled: true\n  config:\n    secret: !!js process.env.X\n", true},
		{"empty", "[]", true},
		{"unknown config key", "- id: a\n  name: probe\n  config: {lable: x}\n", false},
		{"wrong type", "- id: a\n  name: probe\n  config: {count: many}\n", false},
		{"unknown kind", "- id: a\n  name: nope\n", false},
		{"unknown entry key", "- id: a\n  name: probe\n  conifg: {}\n", false},
		{"no id", "- name: probe\n", false},
	} {
		var v any
		if err := yaml.Unmarshal([]byte(tc.src), &v); err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		// Through JSON, as an editor sees it.
		j, _ := json.Marshal(v)
		inst, _ := jsonschema.UnmarshalJSON(bytes.NewReader(j))
		err := schema.Validate(inst)
		if (err == nil) != tc.ok {
			t.Errorf("%s: valid=%v, want %v (%v)", tc.name, err == nil, tc.ok, err)
		}
	}
	if !strings.Contains(string(raw), `"probe-alias"`) || !strings.Contains(string(raw), `"description": "test plugin"`) {
		t.Fatalf("kinds, aliases or docs missing from the schema")
	}
}
