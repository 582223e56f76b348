package mcpclient

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
)

// appendRequest writes what encoding/json writes for the same request.
func TestAppendRequest(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		id     any
		method string
		params any
	}{
		{"h1", "tools/call", callParams{Name: "echo", Arguments: json.RawMessage(`{"message":"hi"}`)}},
		{"h2", "tools/call", callParams{Name: "we\"ird\\\n\x01名前", Arguments: json.RawMessage(`{}`)}},
		{"h3", "tools/list", map[string]any{"cursor": "c1"}},
		{"h4", "tools/list", nil},
		{int64(5), "ping", json.RawMessage(`{}`)},
		{"h6", "tools/call", callParams{Name: "bad\xffutf8", Arguments: json.RawMessage(`{}`)}},
		{"h7", "tools/call", callParams{Name: "echo", Arguments: json.RawMessage("{\"message\":\n\"pasted\"\r\n}")}},
	} {
		got, err := appendRequest(nil, tc.id, tc.method, tc.params)
		if err != nil {
			t.Fatal(err)
		}
		want, err := json.Marshal(transport.JSONRPCRequest{JSONRPC: mcp.JSONRPC_VERSION, ID: mcp.NewRequestId(tc.id), Method: tc.method, Params: tc.params})
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
