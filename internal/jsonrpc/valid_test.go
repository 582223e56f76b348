package jsonrpc

import (
	"encoding/json"
	"strings"
	"testing"
)

// validCases are inputs at the edges of the grammar, valid or not.
var validCases = []string{
	``, ` `, `0`, `-0`, `01`, `-`, `1.`, `1.5`, `.5`, `1e`, `1e+`, `1e+5`, `1E-5`, `-1.5e10`, `1.5e1.5`,
	`true`, `tru`, `truex`, `false`, `null`, `nul`, `NaN`, `Infinity`,
	`""`, `"a"`, `"\"\\\/\b\f\n\r\t"`, `"\u00e9"`, `"\u00g9"`, `"\u00e"`, `"\x"`, "\"a\x01b\"", "\"\xff\xfe\"", `"unterminated`,
	`{}`, `{ }`, `{"a":1}`, `{"a":1,}`, `{"a"}`, `{"a":}`, `{1:2}`, `{"a":1 "b":2}`, `{"a":[1,{"b":null}]}`,
	`[]`, `[1,]`, `[,1]`, `[1 2]`, `[[[]]]`, `[`, `]`, `{`, `}`, ` {"a" : [ 1 , 2 ] } `, "{\"a\":1}\n", `1 2`, `{}{}`,
	`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"echo","arguments":{"message":"hi"}}}`,
}

// Valid agrees with encoding/json.Valid on the edges of the grammar, and
// on nesting up to its limit and beyond it.
func TestValid(t *testing.T) {
	t.Parallel()
	for _, c := range validCases {
		if got, want := Valid([]byte(c)), json.Valid([]byte(c)); got != want {
			t.Errorf("Valid(%q) = %v, encoding/json says %v", c, got, want)
		}
	}
	for _, depth := range []int{maxDepth, maxDepth + 1} {
		for _, open := range []string{"[", `{"a":`} {
			close := map[string]string{"[": "]", `{"a":`: "}"}[open]
			c := []byte(strings.Repeat(open, depth) + "1" + strings.Repeat(close, depth))
			if got, want := Valid(c), json.Valid(c); got != want {
				t.Errorf("%d deep in %s: Valid = %v, encoding/json says %v", depth, open, got, want)
			}
		}
	}
}

func FuzzValid(f *testing.F) {
	for _, c := range validCases {
		f.Add([]byte(c))
	}
	for _, c := range scanCases {
		f.Add([]byte(c))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if got, want := Valid(b), json.Valid(b); got != want {
			t.Fatalf("Valid(%q) = %v, encoding/json says %v", b, got, want)
		}
	})
}

// BenchmarkValid compares Valid with encoding/json.Valid on a call's
// request line and a result.
func BenchmarkValid(b *testing.B) {
	inputs := map[string][]byte{
		"line":   []byte(`{"jsonrpc":"2.0","id":12345,"method":"tools/call","params":{"name":"mcp__bench__echo","arguments":{"message":"hello"}}}`),
		"result": []byte(`{"content":[{"type":"text","text":"echo: hello"}],"structuredContent":{"n":[1,2.5,-3e2,true,false,null]}}`),
	}
	for name, in := range inputs {
		b.Run(name+"/jsonrpc", func(b *testing.B) {
			for b.Loop() {
				if !Valid(in) {
					b.Fatal("invalid")
				}
			}
		})
		b.Run(name+"/encoding-json", func(b *testing.B) {
			for b.Loop() {
				if !json.Valid(in) {
					b.Fatal("invalid")
				}
			}
		})
	}
}
