package mcpclient

import (
	"encoding/json"
	"strings"
	"testing"
)

// The fast paths of one call, beside what encoding/json does for the same
// work (docs/benchmarks.md, "what the fast paths save").

var benchResponse = []byte(`{"jsonrpc":"2.0","id":"h42","result":{"content":[{"type":"text","text":"` + strings.Repeat("echo: hello ", 20) + `"}]}}`)

func BenchmarkDecodeResponse(b *testing.B) {
	b.Run("scan", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, ok := decode(benchResponse); !ok {
				b.Fatal("not decoded")
			}
		}
	})
	// A result of 64 KiB: copied (a waiting caller keeps it), or borrowed
	// from the read buffer (a started call's responder: decodeLine).
	big := []byte(`{"jsonrpc":"2.0","id":"h42","result":{"content":[{"type":"text","text":"` + strings.Repeat("a line of a file\\n", 64<<10/18) + `"}]}}`)
	for _, borrow := range []bool{false, true} {
		name := "scan-64KiB-copied"
		if borrow {
			name = "scan-64KiB-borrowed"
		}
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(big)))
			for b.Loop() {
				if _, ok := decodeLine(big, borrow); !ok {
					b.Fatal("not decoded")
				}
			}
		})
	}
	b.Run("encoding/json", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			var m struct {
				ID     json.RawMessage `json:"id"`
				Method string          `json:"method"`
				Params json.RawMessage `json:"params"`
				Result json.RawMessage `json:"result"`
				Error  *wireError      `json:"error"`
			}
			if err := json.Unmarshal(benchResponse, &m); err != nil {
				b.Fatal(err)
			}
		}
	})
}

func BenchmarkEncodeToolCall(b *testing.B) {
	args := json.RawMessage(`{"message":"hello"}`)
	id := json.RawMessage(`"h42"`)
	b.Run("append", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			p, _ := encodeParams(toolCall{Name: "echo", Arguments: args}, nil)
			if _, err := appendRequest(make([]byte, 0, 128), id, "tools/call", p); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("encoding/json", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			p, _ := json.Marshal(toolCall{Name: "echo", Arguments: args})
			if _, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": json.RawMessage(p)}); err != nil {
				b.Fatal(err)
			}
		}
	})
}
