package mcpclient

import (
	"encoding/json"
	"strings"
	"testing"
)

// The gateway serves what the model's list has no room for: the tool as the
// server listed it, and the server's result as it arrived.
func TestStdioRawDefinitionsAndResults(t *testing.T) {
	t.Parallel()
	hx := newHarness(t)
	hx.mustLoad(yml(hx.stdio("a", "srv", map[string]any{"maxResultBytes": 8}, "--only", "structured,hologram,echo,fail")))

	tool, ok := hx.Tools.Lookup("mcp__srv__structured")
	if !ok {
		t.Fatal("mcp__srv__structured is not registered")
	}
	var def struct {
		Name         string          `json:"name"`
		OutputSchema json.RawMessage `json:"outputSchema"`
	}
	if err := json.Unmarshal(tool.Definition, &def); err != nil {
		t.Fatalf("definition %s: %v", tool.Definition, err)
	}
	if def.Name != "structured" || !strings.Contains(string(def.OutputSchema), `"answer"`) {
		t.Fatalf("definition = %s, want the server's tool with its outputSchema", tool.Definition)
	}

	for _, tc := range []struct {
		tool, args string
		text       string // what the model reads
		raw        []string
		isError    bool
	}{
		// An unknown block type reaches the gateway as the server sent it.
		{tool: "hologram", text: "[unsuppo\n[result truncated: 8 of 44 bytes shown (maxResultBytes)]", raw: []string{`"type":"hologram"`, `"text":"visible"`}},
		{tool: "structured", text: "{\"answer\n[result truncated: 8 of 27 bytes shown (maxResultBytes)]", raw: []string{`"structuredContent":{"answer":42,"unit":"none"}`}},
		// maxResultBytes cuts the model's text, never the raw result.
		{tool: "echo", args: `{"message":"a long message"}`, text: "echo: a \n[result truncated: 8 of 20 bytes shown (maxResultBytes)]", raw: []string{`"text":"echo: a long message"`}},
		{tool: "fail", args: `{"message":"no"}`, text: "Error: no", raw: []string{`"isError":true`, `"text":"no"`}, isError: true},
	} {
		args := tc.args
		if args == "" {
			args = "{}"
		}
		res := hx.Call("mcp__srv__"+tc.tool, args)
		if res.Text != tc.text || res.IsError != tc.isError {
			t.Errorf("%s: text %q isError=%v, want %q isError=%v", tc.tool, res.Text, res.IsError, tc.text, tc.isError)
		}
		if !json.Valid(res.Raw) {
			t.Errorf("%s: raw result %q is not JSON", tc.tool, res.Raw)
		}
		for _, want := range tc.raw {
			if !strings.Contains(string(res.Raw), want) {
				t.Errorf("%s: raw result %s lacks %s", tc.tool, res.Raw, want)
			}
		}
	}
}
