package mcpclient

import (
	"bytes"
	"encoding/json"
	"testing"
)

// appendRequest writes what encoding/json writes for the same request, on
// one line.
func TestAppendRequest(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		id     string
		method string
		params json.RawMessage
	}{
		{`"h1"`, "tools/call", mustJSON(toolCall{Name: "echo", Arguments: json.RawMessage(`{"message":"hi"}`)})},
		{`"h2"`, "tools/call", mustJSON(toolCall{Name: "we\"ird\\\n\x01名前", Arguments: json.RawMessage(`{}`)})},
		{`"h3"`, "tools/list", mustJSON(map[string]any{"cursor": "c1"})},
		{`"h4"`, "tools/list", nil},
		{`5`, "ping", json.RawMessage(`{}`)},
		{`"h6"`, "we\"ird\x01", json.RawMessage(`{}`)},
		{`"h7"`, "tools/call", json.RawMessage("{\"name\":\"echo\",\"arguments\":{\"message\":\n\"pasted\"\r\n}}")},
	} {
		got, err := appendRequest(nil, json.RawMessage(tc.id), tc.method, tc.params)
		if err != nil {
			t.Fatal(err)
		}
		req := map[string]any{"jsonrpc": "2.0", "id": json.RawMessage(tc.id), "method": tc.method}
		if tc.params != nil {
			req["params"] = tc.params
		}
		want, err := json.Marshal(req)
		if err != nil {
			t.Fatal(err)
		}
		if bytes.ContainsAny(got, "\n\r") {
			t.Errorf("appendRequest wrote a line break: %q", got)
		}
		var a, b any
		if json.Unmarshal(got, &a) != nil || json.Unmarshal(want, &b) != nil {
			t.Fatalf("not JSON: %s / %s", got, want)
		}
		ja, _ := json.Marshal(a)
		jb, _ := json.Marshal(b)
		if !bytes.Equal(ja, jb) {
			t.Errorf("appendRequest = %s\nencoding/json  %s", got, want)
		}
	}
}

// A started call's request, built in one buffer, is byte for byte the
// request the general path builds: appendRequest with legacyParams.
func TestToolCallRequestAsRequest(t *testing.T) {
	t.Parallel()
	id := json.RawMessage(`"h42"`)
	for _, tc := range []struct {
		name, args, token string
	}{
		{"echo", `{"message":"hi"}`, ""},
		{"echo", `{"message":"hi"}`, "p7"},
		{`odd "name"` + "\n", "{\n  \"a\": [1,\n 2]\n}", ""},
		{"none", "", "p8"},
	} {
		call := toolCall{Name: tc.name, Arguments: json.RawMessage(tc.args)}
		params, err := legacyParams(call, &callInfo{token: tc.token})
		if err != nil {
			t.Fatal(err)
		}
		want, err := appendRequest(nil, id, "tools/call", params)
		if err != nil {
			t.Fatal(err)
		}
		if got := appendToolCallRequest(nil, id, call, tc.token); string(got) != string(want) {
			t.Errorf("%q, token %q:\n got %s\nwant %s", tc.name, tc.token, got, want)
		}
	}
}
