package tools_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/harness-go/harness/fiber"
	"github.com/harness-go/harness/plugins/tools"
)

const benchTools = 10_000

var benchParams = json.RawMessage(`{"type":"object","properties":{"query":{"type":"string","description":"What to look for."},"limit":{"type":"integer"}},"required":["query"]}`)

func trivial(context.Context, json.RawMessage) (tools.Result, error) {
	return tools.Result{Text: "ok"}, nil
}

// manyTools returns n tools with realistic names, descriptions and schemas.
func manyTools(n int) []tools.Tool {
	out := make([]tools.Tool, n)
	for i := range out {
		out[i] = tools.Tool{
			Name:        fmt.Sprintf("mcp__server%03d__tool_%05d", i%100, i),
			Description: "Look something up in the index of server " + fmt.Sprint(i%100) + ".",
			Parameters:  benchParams,
			Execute:     trivial,
		}
	}
	return out
}

// fullRegistry returns a registry holding n tools on a fiber disposed with b.
func fullRegistry(b *testing.B, n int) (*tools.Registry, []tools.Tool) {
	b.Helper()
	r := tools.New()
	ts := manyTools(n)
	if _, err := r.Register(newFiber(b, "bench"), ts...); err != nil {
		b.Fatal(err)
	}
	return r, ts
}

// BenchmarkRegister registers 10 000 tools into an empty registry: as one
// batch, and one Register call per tool. One op is all 10 000.
func BenchmarkRegister(b *testing.B) {
	ts := manyTools(benchTools)
	ctx := context.Background()
	b.Run("batch", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			r := tools.New()
			f := fiber.New(ctx, "bench")
			if _, err := r.Register(f, ts...); err != nil {
				b.Fatal(err)
			}
			b.StopTimer()
			_ = f.Dispose(ctx)
			b.StartTimer()
		}
	})
	b.Run("one-by-one", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			r := tools.New()
			f := fiber.New(ctx, "bench")
			for _, t := range ts {
				if _, err := r.Register(f, t); err != nil {
					b.Fatal(err)
				}
			}
			b.StopTimer()
			_ = f.Dispose(ctx)
			b.StartTimer()
		}
	})
}

// BenchmarkLookup finds one tool among 10 000.
func BenchmarkLookup(b *testing.B) {
	r, ts := fullRegistry(b, benchTools)
	names := make([]string, len(ts))
	for i, t := range ts {
		names[i] = t.Name
	}
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		if _, ok := r.Lookup(names[i%len(names)]); !ok {
			b.Fatal("not found")
		}
		i += 7919 // a prime: visit the names out of order
	}
}

// BenchmarkModelJSON renders 10 000 tools: from the cache, and after a change
// (one op is a register or release of one tool, then the render).
func BenchmarkModelJSON(b *testing.B) {
	b.Run("cached", func(b *testing.B) {
		r, _ := fullRegistry(b, benchTools)
		r.ModelJSON()
		b.ReportAllocs()
		for b.Loop() {
			r.ModelJSON()
		}
	})
	b.Run("after-change", func(b *testing.B) {
		r, _ := fullRegistry(b, benchTools)
		f := newFiber(b, "toggle")
		b.SetBytes(int64(len(r.ModelJSON())))
		b.ReportAllocs()
		var release fiber.Disposer
		for b.Loop() {
			if release == nil {
				var err error
				if release, err = r.Register(f, tools.Tool{Name: "toggled", Execute: trivial}); err != nil {
					b.Fatal(err)
				}
			} else {
				_ = release(context.Background())
				release = nil
			}
			r.ModelJSON()
		}
	})
}

// BenchmarkExecute measures the registry's overhead around a trivial tool.
func BenchmarkExecute(b *testing.B) {
	r, ts := fullRegistry(b, benchTools)
	name := ts[len(ts)/2].Name
	args := json.RawMessage(`{"query":"x"}`)
	ctx := context.Background()
	b.Run("direct", func(b *testing.B) {
		// The executor alone, for comparison.
		b.ReportAllocs()
		for b.Loop() {
			if res, _ := trivial(ctx, args); res.IsError {
				b.Fatal(res.Text)
			}
		}
	})
	b.Run("sequential", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if res := r.Execute(ctx, name, args); res.IsError {
				b.Fatal(res.Text)
			}
		}
	})
	b.Run("parallel", func(b *testing.B) {
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				if res := r.Execute(ctx, name, args); res.IsError {
					b.Error(res.Text)
					return
				}
			}
		})
	})
	b.Run("unknown", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if res := r.Execute(ctx, "no_such_tool", args); !res.IsError {
				b.Fatal("unknown tool ran")
			}
		}
	})
}
