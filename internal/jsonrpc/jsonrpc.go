// Package jsonrpc reads JSON-RPC messages the fast way: the top level of a
// message without decoding its values, the keys and elements of a value
// without decoding theirs, request ids compared as JSON-RPC means them, and
// whether bytes are JSON at all (Valid). Both the MCP client's stdio transport and the gateway's read every message
// through it; the gateway's fast path of a call reads its request and its
// result with EachKey and EachElement.
package jsonrpc

import (
	"bytes"
	"encoding/json"
	"strconv"
	"unicode/utf8"
)

// Scan reads the top level of one JSON-RPC message without decoding its
// values: the raw bytes of id, method, params, result and error, which alias
// line. It is the fast path of a reader of messages — a value is copied once
// and decoded once, by whoever uses it — and it does not validate what it
// skips: a malformed value surfaces where it is decoded. ok is false when
// line is not a JSON object whose keys are plain strings; the caller then
// decodes it the slow way.
func Scan(line []byte) (m Message, ok bool) { return scan(line, false) }

// ScanValid is Scan for a reader that needs the whole line valid: ok also
// says that line is one JSON value, as [Valid] says, checked in the same
// pass. The gateway reads every request so: a call it serves itself needs
// its line valid, and a second pass for it cost as much as the scan.
func ScanValid(line []byte) (m Message, ok bool) { return scan(line, true) }

func scan(line []byte, validate bool) (m Message, ok bool) {
	i := skipSpace(line, 0)
	if i >= len(line) || line[i] != '{' {
		return m, false
	}
	i = skipSpace(line, i+1)
	if i < len(line) && line[i] == '}' {
		m.Exact = true
		return m, skipSpace(line, i+1) == len(line) || !validate
	}
	var seen uint8 // the members of JSON-RPC met, one bit each
	exact := true
	for i < len(line) {
		key, v, vEnd, plain, ok := member(line, i, validate)
		if !ok || !plain {
			return m, false
		}
		var bit uint8
		switch string(key) {
		case "jsonrpc":
			m.JSONRPC, bit = v, 1
		case "id":
			m.ID, bit = v, 2
		case "method":
			m.Method, bit = v, 4
		case "params":
			m.Params, bit = v, 8
		case "result":
			m.Result, bit = v, 16
		case "error":
			m.Error, bit = v, 32
		}
		if bit == 0 || seen&bit != 0 {
			exact = false
		}
		seen |= bit
		next, more, end := afterMember(line, skipSpace(line, vEnd), '}')
		if !more {
			m.Exact = exact
			return m, end && skipSpace(line, next) == len(line)
		}
		i = skipSpace(line, next)
	}
	return m, false
}

// member reads the member of an object that starts at b[i], the quote of
// its key: the key's body, the value, and the index just after the value;
// plain reports a key without escapes. With validate, the key and the
// value are checked as Valid would. ok is false when no member is there.
func member(b []byte, i int, validate bool) (key, v []byte, end int, plain, ok bool) {
	if i >= len(b) || b[i] != '"' {
		return nil, nil, i, false, false
	}
	var kEnd int
	if validate {
		var valid bool
		if kEnd, valid = validString(b, i); !valid {
			return nil, nil, i, false, false
		}
		plain = bytes.IndexByte(b[i+1:kEnd-1], '\\') < 0
	} else if kEnd, plain = skipString(b, i); kEnd < 0 {
		return nil, nil, i, false, false
	}
	key = b[i+1 : kEnd-1]
	i = skipSpace(b, kEnd)
	if i >= len(b) || b[i] != ':' {
		return nil, nil, i, false, false
	}
	i = skipSpace(b, i+1)
	if validate {
		var valid bool
		if end, valid = validValue(b, i, 1); !valid {
			return nil, nil, i, false, false
		}
	} else if end = skipValue(b, i); end < 0 {
		return nil, nil, i, false, false
	}
	return key, b[i:end], end, plain, true
}

// Message is the top level of a JSON-RPC message, undecoded.
type Message struct {
	JSONRPC, ID, Method, Params, Result, Error json.RawMessage
	// Exact: every key is one of the six above, spelled so, and none
	// comes twice — the message reads the same to a decoder that matches
	// keys in any case (encoding/json) or keeps the first of two.
	Exact bool
}

func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// afterMember reads the byte at b[i], the first after a member of an
// object or an element of an array and its white space: a comma (more:
// the next member starts after it, at next), the closer (end: next is
// just after it), or anything else (neither: the value is malformed).
func afterMember(b []byte, i int, closer byte) (next int, more, end bool) {
	if i < len(b) {
		switch b[i] {
		case ',':
			return i + 1, true, false
		case closer:
			return i + 1, false, true
		}
	}
	return i, false, false
}

// skipString returns the index after the string starting at b[i] (a quote),
// or -1; plain reports a string without escapes. Bytes that are neither a
// quote nor a backslash go by eight at a time (escapeStops).
func skipString(b []byte, i int) (end int, plain bool) {
	plain = true
	for j := i + 1; j < len(b); j++ {
		for len(b)-j >= 8 {
			if m := escapeStops(Word(b, j)); m != 0 {
				j += FirstMark(m)
				break
			}
			j += 8
		}
		if j >= len(b) {
			break
		}
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

// IDKey is the identity of a request id as JSON-RPC means it, for a map of
// requests in flight: "s:" and the value of a string, whatever its escapes;
// "n:" and the value of a number, whatever its spelling (7, 7.0, 7e0); "r:"
// and the raw bytes of anything else.
func IDKey(raw []byte) string {
	var buf [64]byte
	return string(AppendIDKey(buf[:0], raw))
}

// AppendIDKey appends the [IDKey] of raw to dst: a map of requests in
// flight looks a response up by it without allocating (m[string(key)]).
func AppendIDKey(dst, raw []byte) []byte {
	raw = bytes.TrimSpace(raw)
	if body, ok := plainBody(raw); ok {
		return append(append(dst, "s:"...), body...)
	}
	if len(raw) > 0 && raw[0] == '"' {
		var s string
		if json.Unmarshal(raw, &s) == nil {
			return append(append(dst, "s:"...), s...)
		}
	}
	if plainInteger(raw) {
		// What the float's shortest spelling would be: an integer of at
		// most 15 digits is one exactly, and is written as it came.
		return append(append(dst, "n:"...), raw...)
	}
	if n, err := strconv.ParseFloat(string(raw), 64); err == nil {
		return strconv.AppendFloat(append(dst, "n:"...), n, 'f', -1, 64)
	}
	return append(append(dst, "r:"...), raw...)
}

// plainInteger reports whether raw is an integer of 1 to 15 digits,
// signed or not, without leading zeros: the ids clients send, and a float64
// holds each exactly.
func plainInteger(raw []byte) bool {
	d := raw
	if len(d) > 0 && d[0] == '-' {
		d = d[1:]
	}
	if len(d) == 0 || len(d) > 15 || (d[0] == '0' && len(d) > 1) {
		return false
	}
	for _, b := range d {
		if b < '0' || b > '9' {
			return false
		}
	}
	return true
}

// PlainString returns the value of a JSON string that holds no escape, no
// control character and only valid UTF-8 — the ids we send, echoed — without
// running the decoder: such a string decodes to its bytes.
func PlainString(raw []byte) (string, bool) {
	body, ok := plainBody(raw)
	if !ok {
		return "", false
	}
	return string(body), true
}

// plainBody returns the bytes between the quotes of a JSON string that
// PlainString takes.
func plainBody(raw []byte) ([]byte, bool) {
	n := len(raw)
	if n < 2 || raw[0] != '"' || raw[n-1] != '"' || !PlainBody(raw[1:n-1]) {
		return nil, false
	}
	return raw[1 : n-1], true
}

// PlainBody reports whether the body of a JSON string (between its quotes)
// holds no escape, no control character and only valid UTF-8: it decodes
// to its bytes.
func PlainBody(body []byte) bool {
	for _, b := range body {
		if b == '"' || b == '\\' || b < 0x20 {
			return false
		}
	}
	return utf8.Valid(body)
}

// EachKey calls f with every key of the JSON object obj (valid JSON) and
// the raw bytes of its value, in order, until f returns false. It returns
// false when obj is not an object, a key is not plain ([PlainBody]), or f
// returned false. key and v alias obj.
func EachKey(obj []byte, f func(key, v []byte) bool) bool { return eachKey(obj, false, f) }

// EachKeyValid is EachKey of bytes not known to be JSON: it also returns
// false unless obj is one valid JSON value, as [Valid] says, checked in the
// same pass — a reader that would call Valid and then EachKey goes over
// the bytes once. f may have been called for the keys before the first
// invalid byte, so a caller acts on what f saw only when it returns true.
func EachKeyValid(obj []byte, f func(key, v []byte) bool) bool { return eachKey(obj, true, f) }

func eachKey(obj []byte, validate bool, f func(key, v []byte) bool) bool {
	end, ok := objectAt(obj, skipSpace(obj, 0), validate, f)
	return ok && (!validate || skipSpace(obj, end) == len(obj))
}

// objectAt walks the object that starts at b[i], calling f as EachKey
// does, and returns the index just after it; ok is false when there is no
// object there, a key is not plain, or f returned false. With validate,
// every key and value is checked as Valid would.
func objectAt(b []byte, i int, validate bool, f func(key, v []byte) bool) (end int, ok bool) {
	if i >= len(b) || b[i] != '{' {
		return i, false
	}
	i = skipSpace(b, i+1)
	if i < len(b) && b[i] == '}' {
		return i + 1, true
	}
	for i < len(b) {
		key, v, vEnd, _, ok := member(b, i, validate)
		if !ok || !PlainBody(key) || !f(key, v) {
			return i, false
		}
		next, more, closed := afterMember(b, skipSpace(b, vEnd), '}')
		if !more {
			return next, closed
		}
		i = skipSpace(b, next)
	}
	return i, false
}

// EachElement calls f with the raw bytes of every element of the JSON
// array arr (valid JSON), in order, until f returns false. It returns false
// when arr is not an array or f returned false.
func EachElement(arr []byte, f func(v []byte) bool) bool {
	return eachIn(arr, func(i int) (int, bool) {
		end := skipValue(arr, i)
		return end, end >= 0 && f(arr[i:end])
	})
}

// eachIn walks the elements of the JSON array arr: at(i) reads the
// element that starts at i and returns where it ends, or false to stop.
// It returns false when arr is not an array or at stopped.
func eachIn(arr []byte, at func(i int) (end int, ok bool)) bool {
	i := skipSpace(arr, 0)
	if i >= len(arr) || arr[i] != '[' {
		return false
	}
	i = skipSpace(arr, i+1)
	if i < len(arr) && arr[i] == ']' {
		return true
	}
	for i < len(arr) {
		end, ok := at(i)
		if !ok {
			return false
		}
		next, more, closed := afterMember(arr, skipSpace(arr, end), ']')
		if !more {
			return closed
		}
		i = skipSpace(arr, next)
	}
	return false
}

// EachObject walks the JSON array arr (valid JSON) whose elements are all
// objects, in one pass: for each element, key is called with its members
// as [EachKey] calls f, and then elem with the whole element. It returns
// false when arr is not such an array, a key is not plain, or a callback
// returned false — what EachElement with EachKey inside would say, without
// going over each element twice.
func EachObject(arr []byte, key func(k, v []byte) bool, elem func(obj []byte) bool) bool {
	return eachIn(arr, func(i int) (int, bool) {
		end, ok := objectAt(arr, i, false, key)
		return end, ok && elem(arr[i:end])
	})
}
