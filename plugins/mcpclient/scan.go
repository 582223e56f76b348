package mcpclient

import (
	"bytes"
	"encoding/json"
	"unicode/utf8"
)

// scanMessage reads the top level of one JSON-RPC message without decoding
// its values: the raw bytes of id, method, params, result and error, which
// alias line. It is the stdio reader's fast path — a response's result is
// copied once and decoded once, by whoever maps it — and it does not
// validate what it skips: a malformed value surfaces where it is decoded.
// ok is false when line is not a JSON object of string keys; the caller then
// decodes it the slow way.
func scanMessage(line []byte) (m rawMessage, ok bool) {
	i := skipSpace(line, 0)
	if i >= len(line) || line[i] != '{' {
		return m, false
	}
	i = skipSpace(line, i+1)
	if i < len(line) && line[i] == '}' {
		return m, true
	}
	for i < len(line) {
		if line[i] != '"' {
			return m, false
		}
		kEnd, plain := skipString(line, i)
		if kEnd < 0 || !plain {
			return m, false
		}
		key := line[i+1 : kEnd-1]
		i = skipSpace(line, kEnd)
		if i >= len(line) || line[i] != ':' {
			return m, false
		}
		i = skipSpace(line, i+1)
		vEnd := skipValue(line, i)
		if vEnd < 0 {
			return m, false
		}
		v := line[i:vEnd]
		switch string(key) {
		case "id":
			m.ID = v
		case "method":
			m.Method = v
		case "params":
			m.Params = v
		case "result":
			m.Result = v
		case "error":
			m.Error = v
		}
		i = skipSpace(line, vEnd)
		if i >= len(line) {
			return m, false
		}
		switch line[i] {
		case ',':
			i = skipSpace(line, i+1)
		case '}':
			return m, skipSpace(line, i+1) == len(line)
		default:
			return m, false
		}
	}
	return m, false
}

// rawMessage is the top level of a JSON-RPC message, undecoded.
type rawMessage struct {
	ID, Method, Params, Result, Error json.RawMessage
}

func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// skipString returns the index after the string starting at b[i] (a quote),
// or -1; plain reports a string without escapes.
func skipString(b []byte, i int) (end int, plain bool) {
	plain = true
	for j := i + 1; j < len(b); j++ {
		switch b[j] {
		case '\\':
			plain = false
			j++
		case '"':
			return j + 1, plain
		}
	}
	return -1, false
}

// skipValue returns the index after the value starting at b[i], or -1.
func skipValue(b []byte, i int) int {
	if i >= len(b) {
		return -1
	}
	switch b[i] {
	case '"':
		end, _ := skipString(b, i)
		return end
	case '{', '[':
		depth := 0
		for j := i; j < len(b); j++ {
			switch b[j] {
			case '"':
				end, _ := skipString(b, j)
				if end < 0 {
					return -1
				}
				j = end - 1
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return j + 1
				}
			}
		}
		return -1
	}
	j := i
	for j < len(b) && b[j] != ',' && b[j] != '}' && b[j] != ']' && b[j] != ' ' && b[j] != '\t' && b[j] != '\n' && b[j] != '\r' {
		j++
	}
	if j == i {
		return -1
	}
	return j
}

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

// appendRequest encodes a JSON-RPC request as encoding/json would, without
// reflection for the usual shapes (an id of ours, a method, tools/call's
// params).
func appendRequest(b []byte, id any, method string, params any) ([]byte, error) {
	b = append(b, `{"jsonrpc":"2.0","id":`...)
	switch v := id.(type) {
	case string:
		b = appendString(b, v)
	default:
		raw, err := json.Marshal(v)
		if err != nil {
			return nil, err
		}
		b = append(b, raw...)
	}
	b = append(b, `,"method":`...)
	b = appendString(b, method)
	if params != nil {
		b = append(b, `,"params":`...)
		switch p := params.(type) {
		case callParams:
			b = append(b, `{"name":`...)
			b = appendString(b, p.Name)
			b = append(b, `,"arguments":`...)
			if len(p.Arguments) == 0 {
				b = append(b, "null"...)
			} else {
				b = appendRaw(b, p.Arguments)
			}
			b = append(b, '}')
		case json.RawMessage:
			b = appendRaw(b, p)
		default:
			raw, err := json.Marshal(p)
			if err != nil {
				return nil, err
			}
			b = append(b, raw...)
		}
	}
	return append(b, '}'), nil
}
