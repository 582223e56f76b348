package mcpclient

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/harness-go/harness/plugins/tools"
)

func TestMapResult(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name      string
		raw       string
		want      string
		isError   bool
		discarded []string
	}{
		{name: "one text block", raw: `{"content":[{"type":"text","text":"hello"}]}`, want: "hello"},
		{name: "text blocks joined with a newline", raw: `{"content":[{"type":"text","text":"one"},{"type":"text","text":"two"},{"type":"text","text":"three"}]}`, want: "one\ntwo\nthree"},
		{name: "newlines inside blocks are kept", raw: `{"content":[{"type":"text","text":"a\n"},{"type":"text","text":"\nb"}]}`, want: "a\n\n\nb"},
		{name: "an empty text block is text", raw: `{"content":[{"type":"text","text":""}]}`, want: ""},
		{name: "image", raw: `{"content":[{"type":"image","data":"iVBORw0KGgo=","mimeType":"image/png"}]}`,
			want: "[image: image/png, content discarded]", discarded: []string{"[image: image/png, content discarded]"}},
		{name: "audio", raw: `{"content":[{"type":"audio","data":"UklGRg==","mimeType":"audio/wav"}]}`,
			want: "[audio: audio/wav, content discarded]", discarded: []string{"[audio: audio/wav, content discarded]"}},
		{name: "image without a mime type", raw: `{"content":[{"type":"image","data":""}]}`,
			want: "[image: unknown, content discarded]", discarded: []string{"[image: unknown, content discarded]"}},
		{name: "embedded resource", raw: `{"content":[{"type":"resource","resource":{"uri":"file:///x","text":"secret file"}}]}`,
			want: "[resource: content discarded]", discarded: []string{"[resource: content discarded]"}},
		{name: "resource link", raw: `{"content":[{"type":"resource_link","uri":"file:///x","name":"x"}]}`,
			want: "[resource: content discarded]", discarded: []string{"[resource: content discarded]"}},
		{name: "unknown type", raw: `{"content":[{"type":"hologram","data":"x"},{"type":"text","text":"visible"}]}`,
			want: "[unsupported content type: hologram]\nvisible"},
		{name: "block without a type", raw: `{"content":[{"text":"typeless"}]}`, want: "[unsupported content type: ]"},
		{name: "block that is not an object", raw: `{"content":[42,"str",{"type":"text","text":"ok"}]}`,
			want: "[unsupported content: not an object]\n[unsupported content: not an object]\nok"},
		{name: "null block", raw: `{"content":[null]}`, want: "[unsupported content type: ]"},
		{name: "mixed", raw: `{"content":[{"type":"text","text":"here is an image"},{"type":"image","data":"x","mimeType":"image/png"},{"type":"text","text":"and a link"},{"type":"resource_link","uri":"u","name":"n"}]}`,
			want:      "here is an image\n[image: image/png, content discarded]\nand a link\n[resource: content discarded]",
			discarded: []string{"[image: image/png, content discarded]", "[resource: content discarded]"}},
		{name: "structured only, rendered compact", raw: `{"content":[],"structuredContent":{ "answer" : 42, "unit": "none", "list": [1, 2] }}`,
			want: `{"answer":42,"unit":"none","list":[1,2]}`},
		{name: "structured without a content key", raw: `{"structuredContent":{"b":1,"a":[true,null]}}`, want: `{"b":1,"a":[true,null]}`},
		{name: "structured array", raw: `{"structuredContent":[1, "two"]}`, want: `[1,"two"]`},
		{name: "structured scalar", raw: `{"structuredContent":"just text"}`, want: `"just text"`},
		{name: "content wins over structured", raw: `{"content":[{"type":"text","text":"{\"answer\":42}"}],"structuredContent":{"answer":42}}`, want: `{"answer":42}`},
		{name: "structured null is nothing", raw: `{"content":[],"structuredContent":null}`, want: "(probe returned no text content)"},
		{name: "empty content", raw: `{"content":[]}`, want: "(probe returned no text content)"},
		{name: "no content at all", raw: `{}`, want: "(probe returned no text content)"},
		{name: "null content", raw: `{"content":null}`, want: "(probe returned no text content)"},
		{name: "isError with text", raw: `{"content":[{"type":"text","text":"it broke"}],"isError":true}`, want: "it broke", isError: true},
		{name: "isError with nothing", raw: `{"isError":true}`, want: "(probe returned no text content)", isError: true},
		{name: "isError false", raw: `{"content":[{"type":"text","text":"fine"}],"isError":false}`, want: "fine"},
		{name: "unknown keys are ignored", raw: `{"content":[{"type":"text","text":"x","annotations":{"audience":["user"]}}],"_meta":{"k":1},"resultType":"complete"}`, want: "x"},
		{name: "invalid UTF-8 in text passes through replaced", raw: "{\"content\":[{\"type\":\"text\",\"text\":\"a\xffb\"}]}", want: "a\uFFFDb"},
		{name: "escapes pass through unchanged", raw: `{"content":[{"type":"text","text":"\u001b[31mred\u001b[0m"}]}`, want: "\x1b[31mred\x1b[0m"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, err := mapResult(json.RawMessage(tc.raw), "probe")
			if err != nil {
				t.Fatalf("mapResult: %v", err)
			}
			if got.Text != tc.want || got.IsError != tc.isError || !slices.Equal(got.Discarded, tc.discarded) {
				t.Fatalf("mapResult(%s) =\n %+v\nwant {Text:%q IsError:%v Discarded:%q}", tc.raw, got, tc.want, tc.isError, tc.discarded)
			}
			// The executor's fast path agrees.
			if fast, err := mapTextResult(json.RawMessage(tc.raw), "probe"); err != nil || fast.Text != tc.want || fast.IsError != tc.isError || !slices.Equal(fast.Discarded, tc.discarded) {
				t.Fatalf("mapTextResult(%s) = %+v, %v", tc.raw, fast, err)
			}
		})
	}
}

func TestMapResultRejects(t *testing.T) {
	t.Parallel()
	for _, raw := range []string{``, `null x`, `[]`, `"text"`, `42`, `{"content":5}`, `{"content":{"type":"text"}}`, `{"isError":"yes"}`, `{"content":[`} {
		got, err := mapResult(json.RawMessage(raw), "probe")
		if err == nil {
			t.Errorf("mapResult(%q) = %+v, want an error", raw, got)
			continue
		}
		if !strings.HasPrefix(err.Error(), "the server's result is not a tools/call result: ") {
			t.Errorf("mapResult(%q): %v", raw, err)
		}
	}
}

func TestObjectArgs(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ name, in, want string }{
		{"object", `{"message":"hi"}`, `{"message":"hi"}`},
		{"object with spaces around", " \n{\"a\": 1}\t ", `{"a": 1}`},
		{"empty object", `{}`, `{}`},
		{"nested object", `{"a":{"b":[1,2]}}`, `{"a":{"b":[1,2]}}`},
		{"nothing", ``, `{}`},
		{"blank", `   `, `{}`},
		{"null", `null`, `{}`},
		{"array", `[1,2]`, `{}`},
		{"string", `"hello"`, `{}`},
		{"number", `42`, `{}`},
		{"boolean", `true`, `{}`},
		{"truncated object", `{"a":`, `{}`},
		{"object followed by garbage", `{"a":1} x`, `{}`},
		{"two objects", `{}{}`, `{}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if got := string(tools.ObjectArgs(json.RawMessage(tc.in))); got != tc.want {
				t.Fatalf("tools.ObjectArgs(%q) = %q, want %q", tc.in, got, tc.want)
			}
		})
	}
}

func FuzzMapResult(f *testing.F) {
	for _, s := range []string{
		`{"content":[{"type":"text","text":"a"},{"type":"text","text":"b"}]}`,
		`{"content":[{"type":"image","data":"x","mimeType":"image/png"}],"isError":true}`,
		`{"content":[{"type":"audio","mimeType":"audio/wav"},{"type":"resource"},{"type":"resource_link"}]}`,
		`{"content":[{"type":"hologram"},7,null,[],"s"]}`,
		`{"content":[],"structuredContent":{"a":[1,{"b":null}]}}`,
		`{"structuredContent":null}`,
		`{}`, `[]`, `null`, `"x"`, ``, `{"content":[{"type":1}]}`, "{\"content\":[{\"type\":\"text\",\"text\":\"\xff\"}]}",
	} {
		f.Add([]byte(s), "tool")
	}
	f.Fuzz(func(t *testing.T, raw []byte, name string) {
		m, err := mapResult(raw, name)
		if err != nil {
			if m.Text != "" || m.IsError || m.Discarded != nil {
				t.Fatalf("an error came with a result: %+v", m)
			}
			if _, ferr := mapTextResult(raw, name); ferr == nil {
				t.Fatalf("mapTextResult accepted what mapResult refused: %q", raw)
			}
			return
		}
		if !json.Valid(raw) {
			t.Fatalf("mapResult accepted invalid JSON %q", raw)
		}
		for _, d := range m.Discarded {
			if !strings.Contains(m.Text, d) {
				t.Fatalf("placeholder %q is not in the text %q", d, m.Text)
			}
		}
		again, _ := mapResult(raw, name)
		if again.Text != m.Text || again.IsError != m.IsError {
			t.Fatalf("mapResult is not deterministic: %+v then %+v", m, again)
		}
		// The executor's fast path for text-only results says the same.
		fast, ferr := mapTextResult(raw, name)
		if ferr != nil || fast.Text != m.Text || fast.IsError != m.IsError || len(fast.Discarded) != len(m.Discarded) {
			t.Fatalf("mapTextResult = %+v, %v; mapResult = %+v", fast, ferr, m)
		}
		args := tools.ObjectArgs(raw)
		if !json.Valid(args) || args[0] != '{' {
			t.Fatalf("tools.ObjectArgs(%q) = %q is not an object", raw, args)
		}
	})
}

// rawOnly passes a result on undecoded only when a caller can decode it
// as it is; anything else is mapped as for the model.
func TestRawOnly(t *testing.T) {
	for _, tc := range []struct {
		raw     string
		ok      bool
		isError bool
	}{
		{`{"content":[{"type":"text","text":"hi"}]}`, true, false},
		{`{"content":[{"type":"image","data":"AA==","mimeType":"image/png"}],"isError":true}`, true, true},
		{`{"content":[],"isError":false,"_meta":{"k":1},"structuredContent":{"a":1}}`, true, false},
		{`{"isError":true}`, false, false},                        // no content
		{`{"content":null}`, false, false},                        // not an array
		{`{"Content":"x"}`, false, false},                         // encoding/json matches any case
		{`{"content":[],"isError":"yes"}`, false, false},          // not a boolean
		{`{"content":[],"_meta":5}`, false, false},                // not an object
		{`{"content":[{"type":"text","text":"hi"}`, false, false}, // not valid JSON
		{`[1]`, false, false},
		{`"text"`, false, false},
	} {
		res, ok := rawOnly(json.RawMessage(tc.raw))
		if ok != tc.ok || (ok && (res.IsError != tc.isError || string(res.Raw) != tc.raw || res.Text != "")) {
			t.Errorf("rawOnly(%s) = %+v, %v; want ok=%v isError=%v", tc.raw, res, ok, tc.ok, tc.isError)
		}
	}
}
