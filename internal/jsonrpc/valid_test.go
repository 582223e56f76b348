package jsonrpc

import (
	"encoding/json"
	"slices"
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

// bigResult is a tools/call result of one text block of about n bytes
// that reads like a file: lines of source with tabs and quotes, each line
// ending in an escaped newline, and a non-ASCII character now and then.
func bigResult(n int) []byte {
	const line = `\tif err := f(ctx, \"café\"); err != nil { return fmt.Errorf(\"step: %w\", err) }\n`
	return []byte(`{"content":[{"type":"text","text":"` + strings.Repeat(line, n/len(line)+1) + `"}]}`)
}

// BenchmarkValid compares Valid with encoding/json.Valid on a call's
// request line, a result, and a result of 64 KiB.
func BenchmarkValid(b *testing.B) {
	inputs := map[string][]byte{
		"line":   []byte(`{"jsonrpc":"2.0","id":12345,"method":"tools/call","params":{"name":"mcp__bench__echo","arguments":{"message":"hello"}}}`),
		"result": []byte(`{"content":[{"type":"text","text":"echo: hello"}],"structuredContent":{"n":[1,2.5,-3e2,true,false,null]}}`),
		"64KiB":  bigResult(64 << 10),
	}
	for name, in := range inputs {
		b.Run(name+"/jsonrpc", func(b *testing.B) {
			b.SetBytes(int64(len(in)))
			for b.Loop() {
				if !Valid(in) {
					b.Fatal("invalid")
				}
			}
		})
		b.Run(name+"/encoding-json", func(b *testing.B) {
			b.SetBytes(int64(len(in)))
			for b.Loop() {
				if !json.Valid(in) {
					b.Fatal("invalid")
				}
			}
		})
	}
}

// BenchmarkScan is the reading of a response of each size: Scan, which
// skips the result, and ScanValid, which checks it on the way.
func BenchmarkScan(b *testing.B) {
	for name, result := range map[string][]byte{"small": []byte(`{"content":[{"type":"text","text":"echo: hello"}]}`), "64KiB": bigResult(64 << 10)} {
		line := append(append([]byte(`{"jsonrpc":"2.0","id":"h12","result":`), result...), '}')
		for _, validate := range []bool{false, true} {
			b.Run(name+map[bool]string{false: "/Scan", true: "/ScanValid"}[validate], func(b *testing.B) {
				b.SetBytes(int64(len(line)))
				for b.Loop() {
					if _, ok := scan(line, validate); !ok {
						b.Fatal("not scanned")
					}
				}
			})
		}
	}
}

// Strings are read eight bytes at a time: a byte that stops the reader (a
// quote, an escape, a control character) at every place in and around a
// word, in strings of every length up to three words, is read as
// encoding/json reads it, by Valid and by Scan's skipping alike.
func TestStringsAtWordBoundaries(t *testing.T) {
	t.Parallel()
	stops := []string{`\"`, `\\`, `\n`, `\u00e9`, `\u00`, `\x`, "\x01", "\x1f", "\x7f", "\x80", "\xe2\x80\xa8", "\xff", `"`, `\`}
	for n := 0; n <= 24; n++ {
		for at := 0; at <= n; at++ {
			for _, stop := range stops {
				body := strings.Repeat("a", at) + stop + strings.Repeat("b", n-at)
				for _, s := range []string{`"` + body + `"`, `{"k":"` + body + `","n":1}`, `["` + body + `",2]`} {
					if got, want := Valid([]byte(s)), json.Valid([]byte(s)); got != want {
						t.Fatalf("Valid(%q) = %v, encoding/json says %v", s, got, want)
					}
				}
				line := `{"id":"` + body + `","result":1}`
				if json.Valid([]byte(line)) {
					checkScan(t, []byte(line))
				}
				if end, _ := skipString([]byte(`"`+body+`"`), 0); json.Valid([]byte(`"`+body+`"`)) && end != len(body)+2 {
					t.Fatalf("skipString(%q) = %d, want %d", `"`+body+`"`, end, len(body)+2)
				}
			}
		}
	}
}

// EachKeyValid is Valid and EachKey in one pass: it agrees with the two on
// every input, and gives f the same keys and values.
func FuzzEachKeyValid(f *testing.F) {
	for _, c := range append(append([]string{`{"a":1} x`, `{"a":1}  `, `{} {}`, `{"a":[1,}`, "{\"\xff\":1}"}, validCases...), scanCases...) {
		f.Add([]byte(c))
	}
	f.Fuzz(func(t *testing.T, b []byte) { checkEachKeyValid(t, b) })
}

func checkEachKeyValid(t *testing.T, b []byte) {
	t.Helper()
	var got, want []string
	okGot := EachKeyValid(b, func(k, v []byte) bool { got = append(got, string(k), string(v)); return true })
	okWant := Valid(b) && EachKey(b, func(k, v []byte) bool { want = append(want, string(k), string(v)); return true })
	if okGot != okWant {
		t.Fatalf("EachKeyValid(%q) = %v; Valid and EachKey say %v", b, okGot, okWant)
	}
	if okGot && strings.Join(got, "\x00") != strings.Join(want, "\x00") {
		t.Fatalf("EachKeyValid(%q) saw %q; EachKey %q", b, got, want)
	}
}

func TestEachKeyValid(t *testing.T) {
	t.Parallel()
	for _, c := range append(append([]string{`{"a":1} x`, `{"a":1}  `, `{} {}`, ` {} `, `{"a":[1,}`, `{"a":"\x"}`, "{\"\xff\":1}", `{"a":1,"b":{"c":[true,null]}}`}, validCases...), scanCases...) {
		checkEachKeyValid(t, []byte(c))
	}
}

// EachObject says what EachElement with EachKey inside says, on valid
// JSON, and sees the same keys and elements; on other bytes it returns
// without a panic.
func FuzzEachObject(f *testing.F) {
	for _, c := range append(append([]string{`[]`, ` [ {} , {"a":1} ] `, `[{"a":1},2]`, `[{"stop":1},{"b":2}]`, `[{"a":[{"b":1}]},{"c":"}]"}]`, `[{"a\u0062":1}]`, `[{"a":1}`, `[{"a":1},]`}, validCases...), scanCases...) {
		f.Add([]byte(c))
	}
	f.Fuzz(func(t *testing.T, b []byte) { checkEachObject(t, b) })
}

func TestEachObject(t *testing.T) {
	t.Parallel()
	for _, c := range append(append([]string{`[]`, ` [ {} , {"a":1} ] `, `[{"a":1},2]`, `[2,{"a":1}]`, `[{"stop":1},{"b":2}]`, `[{"a":1},{"stop":1}]`, `[{"a":[{"b":1}]},{"c":"}]"}]`, `[{"a\u0062":1}]`, `{"a":1}`, `[{"a":1}`, `[{"a":1},]`, `[{"a":1} {"b":2}]`}, validCases...), scanCases...) {
		checkEachObject(t, []byte(c))
	}
	// What the gateway asks of a result's content, on its own.
	var types []string
	ok := EachObject([]byte(`[{"type":"text","text":"a"}, {"text":"b","type":"image"}]`),
		func(k, v []byte) bool {
			if string(k) == "type" {
				types = append(types, string(v))
			}
			return true
		},
		func(obj []byte) bool { types = append(types, string(obj)); return true })
	want := []string{`"text"`, `{"type":"text","text":"a"}`, `"image"`, `{"text":"b","type":"image"}`}
	if !ok || !slices.Equal(types, want) {
		t.Errorf("EachObject saw %v %q, want true %q", ok, types, want)
	}
}

func checkEachObject(t *testing.T, b []byte) {
	t.Helper()
	var got, want []string
	key := func(seen *[]string) func(k, v []byte) bool {
		return func(k, v []byte) bool { *seen = append(*seen, string(k), string(v)); return string(k) != "stop" }
	}
	elem := func(seen *[]string) func(obj []byte) bool {
		return func(obj []byte) bool { *seen = append(*seen, "elem", string(obj)); return true }
	}
	okGot := EachObject(b, key(&got), elem(&got))
	if !Valid(b) {
		return // no promise but no panic
	}
	wantKey, wantElem := key(&want), elem(&want)
	okWant := EachElement(b, func(v []byte) bool { return EachKey(v, wantKey) && wantElem(v) })
	if okGot != okWant || strings.Join(got, "\x00") != strings.Join(want, "\x00") {
		t.Fatalf("EachObject(%q) = %v, saw %q; EachElement and EachKey say %v, %q", b, okGot, got, okWant, want)
	}
}
