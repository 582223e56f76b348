package bench

import (
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
