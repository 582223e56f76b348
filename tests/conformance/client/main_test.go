package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/harness-go/harness/host"
	"github.com/harness-go/harness/plugins/tools"
)

func TestArgsFromSchema(t *testing.T) {
	cases := []struct{ schema, want string }{
		{`{"type":"object","properties":{"a":{"type":"number"},"b":{"type":"number"}},"required":["a","b"]}`, `{"a":2,"b":3}`},
		{`{"type":"object","properties":{"n":{"type":"integer"},"s":{"type":"string"},"f":{"type":"boolean"},"o":{"type":"object"},"x":{}},"required":["s","n","f","o","x"]}`, `{"s":"test","n":2,"f":true,"o":{},"x":{}}`},
		{`{"type":"object","properties":{"a":{"type":"number"},"opt":{"type":"string"}},"required":["a"]}`, `{"a":2}`},
		{`{"type":"object","properties":{"a":{"type":["null","number"]}},"required":["a","a"]}`, `{"a":2}`},
		{`{"type":"object","properties":{}}`, `{}`},
		{`{"type":"object","required":["missing"]}`, `{"missing":{}}`},
		{`not json`, `{}`},
		{``, `{}`},
	}
	for _, c := range cases {
		got := argsFromSchema(json.RawMessage(c.schema))
		if string(got) != c.want {
			t.Errorf("argsFromSchema(%s) = %s, want %s", c.schema, got, c.want)
		}
		if !json.Valid(got) {
			t.Errorf("argsFromSchema(%s) = %s, not JSON", c.schema, got)
		}
	}
}

func TestCordisYMLLoads(t *testing.T) {
	src, err := cordisYML(`http://localhost:1234/mcp?x="y"#z`, "auto", 20*time.Second, oauthFromContext("auth/pre-registration", `{"client_id":"pre","client_secret":"pre-secret"}`))
	if err != nil {
		t.Fatal(err)
	}
	f, err := host.ParseFile("cordis.yml", src)
	if err != nil {
		t.Fatalf("ParseFile: %v\n%s", err, src)
	}
	if len(f.Entries) != 1 || f.Entries[0].ID != entryID || f.Entries[0].Name != "mcp-client" {
		t.Fatalf("entries %+v\n%s", f.Entries, src)
	}
	for _, want := range []string{"transport: streamable-http", "serverName: conformance", "protocol: auto", "startupTimeoutMs: 10000", "toolCallTimeoutMs: 10000", "clientId: pre", "clientMetadataUrl: " + clientMetadataURL} {
		if !strings.Contains(string(src), want) {
			t.Errorf("cordis.yml lacks %q:\n%s", want, src)
		}
	}
}

func TestUsage(t *testing.T) {
	for _, args := range [][]string{nil, {"not-a-url"}, {"-bogus", "http://localhost:1"}, {"extra", "http://localhost:1"}, {"-deadline", "0s", "http://localhost:1"}} {
		var out, errb bytes.Buffer
		if code := run(args, &out, &errb); code != 2 {
			t.Errorf("run(%q) = %d, want 2; stderr:\n%s", args, code, errb.String())
		}
	}
}

func TestUnreachableServerFails(t *testing.T) {
	var out, errb bytes.Buffer
	start := time.Now()
	code := run([]string{"-deadline", "5s", "-log-level", "error", "http://127.0.0.1:1/mcp"}, &out, &errb)
	if code != 1 {
		t.Fatalf("exit %d, want 1; stderr:\n%s", code, errb.String())
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("took %s", d)
	}
	if !strings.Contains(errb.String(), "the entry is failed") {
		t.Errorf("stderr does not say the entry failed:\n%s", errb.String())
	}
}

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// The test-only front accepts every elicitation with its form's defaults
// (SEP-1034) and answers nothing else.
func TestDefaultsFront(t *testing.T) {
	f := defaultsFront{}
	params := json.RawMessage(`{"message":"m","requestedSchema":{"type":"object","properties":{"name":{"type":"string","default":"John Doe"},"age":{"type":"integer","default":30},"score":{"type":"number","default":95.5},"verified":{"type":"boolean","default":true},"note":{"type":"string"}}}}`)
	got, err := f.Ask(context.Background(), tools.Question{Method: tools.MethodElicit, Params: params})
	if err != nil || string(got) != `{"action":"accept","content":{"age":30,"name":"John Doe","score":95.5,"verified":true}}` {
		t.Fatalf("form: %s, %v", got, err)
	}
	got, err = f.Ask(context.Background(), tools.Question{Method: tools.MethodElicit, Params: json.RawMessage(`{"mode":"url","url":"https://x"}`)})
	if err != nil || string(got) != `{"action":"accept"}` {
		t.Fatalf("url: %s, %v", got, err)
	}
	if _, err := f.Ask(context.Background(), tools.Question{Method: tools.MethodSample}); !errors.Is(err, tools.ErrUnsupported) {
		t.Fatalf("sampling: %v", err)
	}
	if o := f.Offers(); !o.Elicitation || !o.ElicitationURL || o.Sampling {
		t.Fatalf("offers %+v", o)
	}
}

// The calls a scenario asks for: those of the suite's context, with their
// arguments; the schema echo of json-schema-2020-12-preservation; else all.
func TestPlanCalls(t *testing.T) {
	schemas := map[string]json.RawMessage{
		"mcp__conformance__json_schema_2020_12_tool": json.RawMessage(`{"$schema":"https://json-schema.org/draft/2020-12/schema","type":"object"}`),
		"mcp__conformance__json_schema_echo":         json.RawMessage(`{"type":"object","properties":{"schema":{"type":"object"}},"required":["schema"]}`),
	}
	calls, err := planCalls("http-custom-headers", `{"toolCalls":[{"name":"test_custom_headers","arguments":{"region":"us-west1"}},{"name":"x"}]}`, schemas)
	if err != nil || len(calls) != 2 || calls[0].tool != "mcp__conformance__test_custom_headers" || string(calls[0].args) != `{"region":"us-west1"}` || string(calls[1].args) != `{}` {
		t.Fatalf("context: %+v, %v", calls, err)
	}
	calls, err = planCalls("json-schema-2020-12-preservation", "", schemas)
	if err != nil || len(calls) != 2 || calls[0].tool != "mcp__conformance__json_schema_2020_12_tool" ||
		string(calls[1].args) != `{"schema":{"$schema":"https://json-schema.org/draft/2020-12/schema","type":"object"}}` {
		t.Fatalf("preservation: %+v, %v", calls, err)
	}
	if calls, err := planCalls("tools_call", "", schemas); calls != nil || err != nil {
		t.Fatalf("default: %+v, %v", calls, err)
	}
	if _, err := planCalls("x", "not json", schemas); err == nil {
		t.Fatal("a context that is not JSON")
	}
}
