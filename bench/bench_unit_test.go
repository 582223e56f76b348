package bench

import (
	"math"
	"strings"
	"testing"
	"time"

	"github.com/harness-go/harness/host"
)

func TestPercentile(t *testing.T) {
	ds := []time.Duration{5, 1, 4, 2, 3, 10, 9, 8, 7, 6}
	for _, c := range []struct {
		p    float64
		want time.Duration
	}{{50, 5}, {99, 10}, {90, 9}, {0, 1}, {100, 10}} {
		if got := Percentile(ds, c.p); got != c.want {
			t.Errorf("Percentile(%v) = %v, want %v", c.p, got, c.want)
		}
	}
	if Percentile(nil, 50) != 0 {
		t.Error("empty sample")
	}
	if ds[0] != 5 {
		t.Error("Percentile sorted its argument")
	}
}

func TestLineID(t *testing.T) {
	for line, want := range map[string]int64{
		`{"jsonrpc":"2.0","id":42,"result":{}}`:                 42,
		string(appendCall(nil, 7)):                              7,
		`{"jsonrpc":"2.0","result":{"text":"x"},"id":9}` + "\n": 9,
	} {
		if got, ok := lineID([]byte(line)); !ok || got != want {
			t.Errorf("lineID(%s) = %d, %v; want %d", line, got, ok, want)
		}
	}
	if _, ok := lineID([]byte(`{"jsonrpc":"2.0","id":"h1"}`)); ok {
		t.Error("a string id read as a number")
	}
}

// TestRenderConfig checks that the generated cordis.yml loads as written,
// with awkward paths.
func TestRenderConfig(t *testing.T) {
	servers := []Server{
		{ID: "a", ServerName: "a", Command: `/tmp/dir with "quotes"/srv`, Args: []string{"--only", "echo", `it's`}},
		{ID: "b", ServerName: "b", Command: "/bin/true"},
	}
	f, err := host.ParseFile("cordis.yml", RenderConfig(servers, "a comment"))
	if err != nil {
		t.Fatal(err)
	}
	if len(f.Entries) != 2 || f.Entries[0].ID != "a" || f.Entries[1].Name != "mcp-client" {
		t.Fatalf("entries %+v", f.Entries)
	}
	if r := host.Check(f, host.ProcessEnv(), nil); len(r.Errors) > 0 {
		t.Fatal(r.Errors)
	}
	if _, err := host.ParseFile("cordis.yml", RenderConfig(nil, "")); err != nil {
		t.Fatalf("no servers: %v", err)
	}
}

func TestUntilLine(t *testing.T) {
	r := strings.NewReader("clock  Tell the time.\necho  Echo.\nmcp__demo__base64  Encode.\nmcp__demo__calc  Calc.\n")
	if _, ok := untilLine(r, time.Now(), func(l string) bool { return strings.HasPrefix(l, "mcp__demo__") }); !ok {
		t.Fatal("the demo's line was not found")
	}
	if _, ok := untilLine(strings.NewReader("echo  Echo.\n"), time.Now(), func(l string) bool { return strings.HasPrefix(l, "mcp__demo__") }); ok {
		t.Fatal("found a line that is not there")
	}
	var tl tail
	tl.Write([]byte(strings.Repeat("a", 5000)))
	tl.Write([]byte("end"))
	if s := tl.String(); len(s) != 4096 || !strings.HasSuffix(s, "end") {
		t.Fatalf("tail kept %d bytes", len(s))
	}
}

// The cold start is left out of the quick suite, which the go test
// benchmarks (and so CI) run: it compiles for minutes.
func TestQuickSuiteLeavesOutTheColdStart(t *testing.T) {
	if QuickSuite().Cold || !FullSuite().Cold {
		t.Fatal("the quick suite runs the cold start, or the full one does not")
	}
}

// roundRatio reads ratios round by round: their median, and the standard
// error that says how far one run's figure can be trusted.
func TestRoundRatio(t *testing.T) {
	for _, tc := range []struct {
		a, b        []float64
		median, err float64
		ok          bool
	}{
		{a: []float64{2, 4, 6}, b: []float64{1, 2, 3}, median: 2, err: 0, ok: true},
		{a: []float64{1, 3}, b: []float64{1, 1}, median: 2, err: 1, ok: true},
		{a: []float64{1, 2, 9}, b: []float64{1, 1, 1}, median: 2, err: math.Sqrt(19.0 / 3), ok: true},
		{a: []float64{1}, b: []float64{1}},       // one round: no spread
		{a: []float64{1, 2}, b: []float64{1}},    // rounds that do not match
		{a: []float64{1, 2}, b: []float64{1, 0}}, // nothing measured
	} {
		median, err, ok := roundRatio(tc.a, tc.b)
		if ok != tc.ok || math.Abs(median-tc.median) > 1e-9 || math.Abs(err-tc.err) > 1e-9 {
			t.Errorf("roundRatio(%v, %v) = %v, %v, %v; want %v, %v, %v", tc.a, tc.b, median, err, ok, tc.median, tc.err, tc.ok)
		}
	}
}

// The judge's lines take each stdio row round by round against the relay,
// and leave out a row without rounds to compare.
func TestWriteRounds(t *testing.T) {
	relay := &CallResult{Name: NameRelayStdio, RoundMedians: []time.Duration{100, 200}, RoundThroughputs: []float64{1000, 2000}}
	gw := &CallResult{Name: NameGatewayStdio, RoundMedians: []time.Duration{110, 220}, RoundThroughputs: []float64{900, 1800}}
	again := &CallResult{Name: NameRelayAgain, RoundMedians: []time.Duration{100}, RoundThroughputs: []float64{1000}}
	r := &Report{Gateway: []*CallResult{relay, gw, again}}
	r.Options.Gateway.Callers = 16
	var b strings.Builder
	r.writeRounds(&b, relay)
	out := b.String()
	if !strings.Contains(out, "round by round (2 rounds)") || !strings.Contains(out, "gateway/stdio: p50 1.10 ± 0.00, 16-caller calls/s 0.90 ± 0.00") {
		t.Errorf("the gateway's line is missing or wrong:\n%s", out)
	}
	if strings.Contains(out, NameRelayAgain) {
		t.Errorf("a row with rounds that do not match the relay's was printed:\n%s", out)
	}
}
