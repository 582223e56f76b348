package bench_test

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"sync"
	"testing"
	"time"

	"github.com/harness-go/harness/bench"
	"github.com/harness-go/harness/internal/testkit/npmtest"
)

// TestMain removes the binaries built for the run.
func TestMain(m *testing.M) {
	code := m.Run()
	if built.bins != nil {
		built.bins.Remove()
	}
	os.Exit(code)
}

var built struct {
	once sync.Once
	bins *bench.Binaries
	err  error
}

// binaries builds the fixture, the harness and pipeecho once per test binary.
func binaries(tb testing.TB) *bench.Binaries {
	tb.Helper()
	built.once.Do(func() { built.bins, built.err = bench.Build() })
	if built.err != nil {
		tb.Fatal(built.err)
	}
	return built.bins
}

// callers is the number of concurrent callers of the *16 benchmarks.
const callers = 16

// benchClient runs a client's sequential and concurrent benchmarks. ns/op
// is the wall time per call; p50-ns and p99-ns are per-call latencies.
func benchClient(b *testing.B, start func(b *testing.B) bench.Client) {
	c := start(b)
	defer c.Close()
	ctx := context.Background()
	b.Run("seq", func(b *testing.B) {
		s, err := c.Seq(ctx, b.N)
		if err != nil {
			b.Fatal(err)
		}
		report(b, s)
	})
	b.Run(fmt.Sprintf("par%d", callers), func(b *testing.B) {
		s, err := c.Par(ctx, callers, (b.N+callers-1)/callers)
		if err != nil {
			b.Fatal(err)
		}
		report(b, s)
	})
}

func report(b *testing.B, s bench.Sample) {
	sum := s.Summarize()
	b.ReportMetric(float64(s.Wall.Nanoseconds())/float64(len(s.Lat)), "ns/op")
	b.ReportMetric(float64(sum.Median.Nanoseconds()), "p50-ns")
	b.ReportMetric(float64(sum.P99.Nanoseconds()), "p99-ns")
	b.ReportMetric(sum.Throughput, "calls/s")
	b.ReportMetric(float64(sum.CPU.Nanoseconds()), "cpu-ns/op")
}

func must(b *testing.B, c bench.Client, err error) bench.Client {
	b.Helper()
	if err != nil {
		b.Fatal(err)
	}
	return c
}

// BenchmarkPipe is the physical limit: a line to another process and back.
func BenchmarkPipe(b *testing.B) {
	benchClient(b, func(b *testing.B) bench.Client {
		c, err := bench.StartPipe(binaries(b))
		return must(b, c, err)
	})
}

// BenchmarkCall is one echo call through each client, against the same
// fixture server: raw JSON-RPC lines (the server's own share), a bare
// mcp-go client, the bridge (tools.Execute → mcp-client) and the
// TypeScript SDK client.
func BenchmarkCall(b *testing.B) {
	ctx := context.Background()
	b.Run(bench.NameRaw, func(b *testing.B) {
		benchClient(b, func(b *testing.B) bench.Client {
			c, err := bench.StartRaw(binaries(b))
			return must(b, c, err)
		})
	})
	b.Run(bench.NameMCPGo, func(b *testing.B) {
		benchClient(b, func(b *testing.B) bench.Client {
			c, err := bench.StartMCPGo(ctx, binaries(b))
			return must(b, c, err)
		})
	})
	b.Run(bench.NameBridge, func(b *testing.B) {
		benchClient(b, func(b *testing.B) bench.Client {
			c, err := bench.StartBridge(ctx, binaries(b), b.TempDir(), bench.QuietLogger(io.Discard))
			return must(b, c, err)
		})
	})
	b.Run(bench.NameTS, func(b *testing.B) {
		benchClient(b, func(b *testing.B) bench.Client {
			dir := npmtest.Dir(b) // in CI a missing node fails here
			c, err := bench.StartTS(ctx, binaries(b), npmtest.Node(b), dir)
			return must(b, c, err)
		})
	})
}

// BenchmarkGateway is the TypeScript SDK client's echo call straight to the
// fixture and through harness serve, over stdio and Streamable HTTP.
func BenchmarkGateway(b *testing.B) {
	dir := npmtest.Dir(b) // in CI a missing node fails here
	clients, err := bench.StartGatewayClients(context.Background(), binaries(b), b.TempDir(), npmtest.Node(b), dir)
	if err != nil {
		b.Fatal(err)
	}
	defer func() {
		for _, c := range clients {
			c.Close()
		}
	}()
	for _, c := range clients {
		b.Run(c.Name(), func(b *testing.B) {
			benchClient(b, func(*testing.B) bench.Client { return noClose{c} })
		})
	}
}

// noClose leaves the closing to its owner.
type noClose struct{ bench.Client }

func (noClose) Close() error { return nil }

// BenchmarkReload edits cordis.yml under a watching host: ns/op is write →
// new tools visible; host-ns is that minus the server's own connect and
// discovery.
func BenchmarkReload(b *testing.B) {
	res, err := bench.RunReload(context.Background(), binaries(b), b.TempDir(), b.N, bench.QuietLogger(io.Discard))
	if err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64(bench.Median(res.Total).Nanoseconds()), "ns/op")
	b.ReportMetric(float64(bench.Median(res.Server).Nanoseconds()), "server-ns")
	b.ReportMetric(float64(bench.Median(res.Host).Nanoseconds()), "host-ns")
}

// BenchmarkStartup starts N stdio servers: through an in-process harness
// (until every entry settled) and through a bare mcp-go program (until each
// server listed its tools).
func BenchmarkStartup(b *testing.B) {
	ctx := context.Background()
	for _, n := range []int{1, 10, 50} {
		b.Run(fmt.Sprintf("servers=%d", n), func(b *testing.B) {
			b.Run("harness", func(b *testing.B) {
				var total time.Duration
				for range b.N {
					d, _, err := bench.StartBridgeServers(ctx, binaries(b), b.TempDir(), n, bench.QuietLogger(io.Discard))
					if err != nil {
						b.Fatal(err)
					}
					total += d
				}
				b.ReportMetric(float64(total.Nanoseconds())/float64(b.N), "ns/op")
			})
			b.Run("mcp-go", func(b *testing.B) {
				var total time.Duration
				for range b.N {
					d, _, err := bench.StartFloorServers(ctx, binaries(b), n)
					if err != nil {
						b.Fatal(err)
					}
					total += d
				}
				b.ReportMetric(float64(total.Nanoseconds())/float64(b.N), "ns/op")
			})
		})
	}
}

// BenchmarkMemory reports the harness binary's RSS with 0, 10 and 50
// servers connected, and the in-process heap per connected server.
func BenchmarkMemory(b *testing.B) {
	ctx := context.Background()
	for _, n := range []int{0, 10, 50} {
		b.Run(fmt.Sprintf("rss/servers=%d", n), func(b *testing.B) {
			var rss int64
			for range b.N {
				v, err := bench.HarnessRSS(ctx, binaries(b), b.TempDir(), n)
				if err != nil {
					b.Fatal(err)
				}
				rss += v
			}
			b.ReportMetric(float64(rss)/float64(b.N)/(1<<20), "MiB")
		})
	}
	b.Run("heap/servers=10", func(b *testing.B) {
		var heap int64
		for range b.N {
			v, _, err := bench.BridgeHeap(ctx, binaries(b), b.TempDir(), 10)
			if err != nil {
				b.Fatal(err)
			}
			heap += v
		}
		b.ReportMetric(float64(heap)/float64(b.N)/10, "B/server")
	})
}

// BenchmarkRegistry10k reports what 10 000 registered tools cost: the heap,
// and List, Lookup and the model-visible JSON (each ns/op-style metric is
// the time of one such operation).
func BenchmarkRegistry10k(b *testing.B) {
	var c bench.ToolsCost
	for range b.N {
		var err error
		if c, err = bench.MeasureTools(10_000, 5); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(c.HeapBytes)/float64(c.N), "heap-B/tool")
	b.ReportMetric(float64(c.Register.Nanoseconds()), "register-ns")
	b.ReportMetric(float64(c.List.Nanoseconds()), "list-ns")
	b.ReportMetric(float64(c.Lookup.Nanoseconds()), "lookup-ns")
	b.ReportMetric(float64(c.ModelJSON.Nanoseconds()), "json-cached-ns")
	b.ReportMetric(float64(c.ModelJSONAfter.Nanoseconds()), "json-after-change-ns")
}

// BenchmarkSuite runs the benchtable suite at its smallest size, so that
// the runner cannot rot: a check, not a measurement.
func BenchmarkSuite(b *testing.B) {
	o := bench.QuickSuite()
	// Without node (outside CI) the rest of the suite still runs.
	if _, err := exec.LookPath("node"); err == nil || npmtest.InCI() {
		o.NPMDir = npmtest.Dir(b)
		o.Node = npmtest.Node(b)
	}
	for range b.N {
		rep, err := bench.RunSuite(context.Background(), binaries(b), o, nil)
		if err != nil {
			b.Fatal(err)
		}
		rep.WriteTable(io.Discard)
		if rep.SoakErr != nil {
			b.Fatal(rep.SoakErr)
		}
	}
}

// BenchmarkAgentStep is one step of a turn, the model and the tools
// answering at once: ns/op is the harness's own time per step with 100
// tools sent.
func BenchmarkAgentStep(b *testing.B) {
	sb, err := bench.NewStepBench(100)
	if err != nil {
		b.Fatal(err)
	}
	defer sb.Close()
	ctx := context.Background()
	b.ReportAllocs()
	var total time.Duration
	for b.Loop() {
		d, err := sb.Turn(ctx)
		if err != nil {
			b.Fatal(err)
		}
		total += d
	}
	b.ReportMetric(float64(total.Nanoseconds())/float64(2*b.N), "ns/step")
}

// BenchmarkAgentTTFB is the time to the first text byte of an answer from
// the fake server: through the agent, and with a bare HTTP client.
func BenchmarkAgentTTFB(b *testing.B) {
	tb, err := bench.NewTTFBBench(100)
	if err != nil {
		b.Fatal(err)
	}
	defer tb.Close()
	ctx := context.Background()
	for _, c := range []struct {
		name string
		fn   func(context.Context) (time.Duration, error)
	}{{"harness", tb.Harness}, {"bare", tb.Raw}} {
		b.Run(c.name, func(b *testing.B) {
			var ds []time.Duration
			for b.Loop() {
				d, err := c.fn(ctx)
				if err != nil {
					b.Fatal(err)
				}
				ds = append(ds, d)
			}
			b.ReportMetric(float64(bench.Median(ds).Nanoseconds()), "p50-ns")
		})
	}
}

// BenchmarkAgentSearchStep is one step of a turn in tool search mode with
// 1000 tools (search_tools, the tool it found, the answer), the model and
// the tools answering at once.
func BenchmarkAgentSearchStep(b *testing.B) {
	sb, err := bench.NewSearchStepBench(1000)
	if err != nil {
		b.Fatal(err)
	}
	defer sb.Close()
	ctx := context.Background()
	b.ReportAllocs()
	var total time.Duration
	for b.Loop() {
		d, err := sb.Turn(ctx)
		if err != nil {
			b.Fatal(err)
		}
		total += d
	}
	b.ReportMetric(float64(total.Nanoseconds())/float64(3*b.N), "ns/step")
}
