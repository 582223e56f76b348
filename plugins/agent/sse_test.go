package agent

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestRawString(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want string
	}{
		{`null`, ""},
		{`""`, ""},
		{`"plain text"`, "plain text"},
		{`"a\"b\\c\/d"`, `a"b\c/d`},
		{`"\b\f\n\r\t"`, "\b\f\n\r\t"},
		{`"caf\u00e9 \u00E9"`, "café é"},
		{`"\ud83d\ude00!"`, "😀!"},
		{`"lone \ud83d here"`, "lone \uFFFD here"},
		{`"lone \ude00"`, "lone \uFFFD"},
		{`"high then \ud83d\u0041"`, "high then \uFFFDA"},
		// A character split by a byte-level server: each half is kept as
		// sent, so the two deltas joined make it whole.
		{"\"caf\xc3\"", "caf\xc3"},
		{"\"\xa9 ok\"", "\xa9 ok"},
		{"\"\xe2\x82\" \\n", ""}, // not a string: an error below
	} {
		var s rawString
		err := json.Unmarshal([]byte(tc.in), &s)
		if strings.HasSuffix(tc.in, `\n`) {
			if err == nil {
				t.Errorf("%q: no error", tc.in)
			}
			continue
		}
		if err != nil || string(s) != tc.want {
			t.Errorf("%q: got %q, %v; want %q", tc.in, s, err, tc.want)
		}
	}
	// The halves of a split character, decoded apart, join whole.
	var a, b rawString
	if err := errors.Join(json.Unmarshal([]byte("\"\xe2\x82\""), &a), json.Unmarshal([]byte("\"\xac = euro\""), &b)); err != nil {
		t.Fatal(err)
	}
	if got := string(a) + string(b); got != "€ = euro" {
		t.Fatalf("joined %q", got)
	}
}

// For valid UTF-8 a rawString decodes exactly as encoding/json decodes a
// string.
func FuzzRawString(f *testing.F) {
	for _, s := range []string{"", "hello", "é😀", "a\"b\\c", "\x00\x1f", "\u2028", "<&>"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		enc, _ := json.Marshal(s)
		for _, in := range [][]byte{enc, bytes.ReplaceAll(enc, []byte("\\u003c"), []byte("<"))} {
			var want string
			if err := json.Unmarshal(in, &want); err != nil {
				t.Skip()
			}
			var got rawString
			if err := json.Unmarshal(in, &got); err != nil || string(got) != want {
				t.Fatalf("%q: got %q, %v; want %q", in, got, err, want)
			}
		}
		// Escaped by hand, every character as \uXXXX (surrogate pairs
		// above U+FFFF), as some servers write.
		if utf8.ValidString(s) {
			var b strings.Builder
			b.WriteByte('"')
			for _, r := range s {
				if r > 0xFFFF {
					r -= 0x10000
					b.WriteString(hexEscape(0xD800 + r>>10))
					b.WriteString(hexEscape(0xDC00 + r&0x3FF))
					continue
				}
				b.WriteString(hexEscape(r))
			}
			b.WriteByte('"')
			var got rawString
			if err := json.Unmarshal([]byte(b.String()), &got); err != nil || string(got) != s {
				t.Fatalf("%s: got %q, %v; want %q", b.String(), got, err, s)
			}
		}
	})
}

func hexEscape(r rune) string {
	const digits = "0123456789abcdef"
	return `\u` + string([]byte{digits[r>>12&15], digits[r>>8&15], digits[r>>4&15], digits[r&15]})
}

func TestEventReader(t *testing.T) {
	stream := ": a comment\n" +
		"event: message\n" +
		"id: 1\n" +
		"data: {\"a\":1}\n\n" +
		"\n\n" + // empty lines between events
		"data:{\"b\":2}\r\n\r\n" + // no space after the colon, CRLF
		"data: line one\n" +
		"data: line two\n\n" +
		"retry: 100\n\n" + // an event without data is no event
		"data: [DONE]\n\n" +
		"data: {\"cut\":" // an event the stream did not end: dropped
	r := newEventReader(strings.NewReader(stream))
	var got []string
	for {
		data, err := r.next()
		if err != nil {
			t.Fatal(err)
		}
		if data == nil {
			break
		}
		got = append(got, string(data))
	}
	want := []string{`{"a":1}`, `{"b":2}`, "line one\nline two", "[DONE]"}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Fatalf("events %q, want %q", got, want)
	}
}

// A line over maxEventLine is an error, read without holding more than the
// bound.
func TestEventReaderLineBound(t *testing.T) {
	long := io.MultiReader(strings.NewReader("data: "), io.LimitReader(zeros{}, maxEventLine+1), strings.NewReader("\n\n"))
	_, err := newEventReader(long).next()
	if !errors.Is(err, errEventLine) {
		t.Fatalf("err = %v, want errEventLine", err)
	}
}

type zeros struct{}

func (zeros) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = '0'
	}
	return len(p), nil
}
