package mcpclient

import (
	"bytes"
	"encoding/json"
	"unicode/utf8"

	"github.com/mark3labs/mcp-go/mcp"
)

// appendString appends s as a JSON string. Text that is not valid UTF-8
// takes encoding/json's path (it replaces invalid bytes).
func appendString(b []byte, s string) []byte {
	if !utf8.ValidString(s) {
		q, _ := json.Marshal(s)
		return append(b, q...)
	}
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 0x20 && c != '"' && c != '\\' {
			continue
		}
		b = append(b, s[start:i]...)
		switch c {
		case '"', '\\':
			b = append(b, '\\', c)
		case '\n':
			b = append(b, '\\', 'n')
		case '\r':
			b = append(b, '\\', 'r')
		case '\t':
			b = append(b, '\\', 't')
		default:
			b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
		}
		start = i + 1
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}

const hexDigits = "0123456789abcdef"

// appendRaw appends raw JSON on one line: a line is one message, so a
// value holding line breaks (whitespace between tokens; inside strings they
// are escaped) is compacted, as encoding/json does.
func appendRaw(b []byte, raw json.RawMessage) []byte {
	if !bytes.ContainsAny(raw, "\n\r") {
		return append(b, raw...)
	}
	var buf bytes.Buffer
	if json.Compact(&buf, raw) != nil {
		return append(b, raw...) // not JSON: the server will say so
	}
	return append(b, buf.Bytes()...)
}

// appendRequest encodes a JSON-RPC request as encoding/json would: id is
// an encoded id of ours, params an encoded object (nil: none).
func appendRequest(b []byte, id json.RawMessage, method string, params json.RawMessage) ([]byte, error) {
	b = appendRequestHead(b, id, method)
	if params != nil {
		b = append(b, `,"params":`...)
		b = appendRaw(b, params)
	}
	return append(b, '}'), nil
}

// appendRequestHead appends the start of a request, up to its params.
func appendRequestHead(b []byte, id json.RawMessage, method string) []byte {
	b = append(b, `{"jsonrpc":"2.0","id":`...)
	b = append(b, id...)
	b = append(b, `,"method":`...)
	return appendString(b, method)
}

// appendToolCallRequest appends a tools/call request as appendRequest
// writes it with the params of legacyParams, in one buffer: a started call
// is the gateway's every call.
func appendToolCallRequest(b []byte, id json.RawMessage, tc toolCall, token string) []byte {
	b = append(appendRequestHead(b, id, string(mcp.MethodToolsCall)), `,"params":`...)
	return append(appendToolCallParams(b, tc, progressMeta(token)), '}')
}

// appendToolCallParams appends tools/call's params, with meta (nil: none)
// as its _meta, first.
func appendToolCallParams(b []byte, tc toolCall, meta []byte) []byte {
	b = append(b, '{')
	if meta != nil {
		b = append(append(append(b, `"_meta":`...), meta...), ',')
	}
	b = appendString(append(b, `"name":`...), tc.Name)
	b = append(b, `,"arguments":`...)
	if len(tc.Arguments) == 0 {
		b = append(b, "null"...)
	} else {
		b = appendRaw(b, tc.Arguments)
	}
	return append(b, '}')
}

// progressMeta is the _meta of a request that asks for progress with token,
// or nil for "".
func progressMeta(token string) []byte {
	if token == "" {
		return nil
	}
	return append(appendString([]byte(`{"progressToken":`), token), '}')
}
