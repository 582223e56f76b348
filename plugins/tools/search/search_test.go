package search

import (
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"testing"

	"github.com/harness-go/harness/internal/testkit/toolgen"
	"github.com/harness-go/harness/plugins/tools"
)

func collect(f func(string, func(string)), s string) []string {
	var out []string
	f(s, func(w string) { out = append(out, w) })
	return out
}

func TestNameWords(t *testing.T) {
	for _, tc := range []struct {
		name string
		want []string
	}{
		{"mcp__github__create_issue", []string{"mcp", "github", "create", "issue"}},
		{"createIssue", []string{"createissue", "create", "issue"}},
		{"mcp__srv__HTTPServer.get-v2", []string{"mcp", "srv", "httpserver", "get", "v2", "http", "server"}},
		{"getV2Beta", []string{"getv2beta", "get", "v2", "beta"}},
		{"ALLCAPS", []string{"allcaps"}},
		{"héllo_Wörld", []string{"héllo", "wörld"}},
		{"", nil},
	} {
		if got := collect(nameWords, tc.name); !slices.Equal(got, tc.want) {
			t.Errorf("nameWords(%q) = %q, want %q", tc.name, got, tc.want)
		}
	}
	if got := collect(words, "Create a new issue — in GitHub's tracker (v2)."); !slices.Equal(got, []string{"create", "a", "new", "issue", "in", "github", "s", "tracker", "v2"}) {
		t.Errorf("words: %q", got)
	}
}

func tool(name, desc string, params ...string) tools.Tool {
	props := map[string]any{}
	for _, p := range params {
		props[p] = map[string]string{"type": "string"}
	}
	schema, _ := json.Marshal(map[string]any{"type": "object", "properties": props})
	return tools.Tool{Name: name, Description: desc, Parameters: schema}
}

// The scores are BM25's, k1 = 1.2 and b = 0.75, computed here again from
// the formula for a small set whose words are counted by hand.
func TestScoresAreBM25(t *testing.T) {
	ts := []tools.Tool{
		tool("read_file", "Read a file.", "path"),                   // read, file, read, a, file, path: 6 words
		tool("write_file", "Write text to a file.", "path", "text"), // write, file, write, text, to, a, file, path, text: 9
		tool("list_dir", "List the files of a directory.", "path"),  // list, dir, list, the, files, of, a, directory, path: 9
		tool("search", "Search the web for text.", "query"),         // search, search, the, web, for, text, query: 7
	}
	x := New(ts)
	lens := []float64{6, 9, 9, 7}
	avg := (6 + 9 + 9 + 7) / 4.0
	n := 4.0
	idf := func(df float64) float64 { return math.Log(1 + (n-df+0.5)/(df+0.5)) }
	term := func(tf, docLen, df float64) float64 {
		return idf(df) * tf * (K1 + 1) / (tf + K1*(1-B+B*docLen/avg))
	}
	// "file text": file in docs 0 (tf 2) and 1 (tf 2): df 2; text in docs 1
	// (tf 2) and 3 (tf 1): df 2.
	want := map[string]float64{
		"read_file":  term(2, lens[0], 2),
		"write_file": term(2, lens[1], 2) + term(2, lens[1], 2),
		"search":     term(1, lens[3], 2),
	}
	hits, matched := x.Search("File TEXT file", 0)
	if matched != 3 || len(hits) != 3 {
		t.Fatalf("%d matched, %d hits: %+v", matched, len(hits), hits)
	}
	if hits[0].Name != "write_file" || hits[1].Name != "read_file" || hits[2].Name != "search" {
		t.Fatalf("order %+v", hits)
	}
	for _, h := range hits {
		if math.Abs(h.Score-want[h.Name]) > 1e-9 {
			t.Errorf("%s: score %v, want %v", h.Name, h.Score, want[h.Name])
		}
	}
	if hits[0].Line != "Write text to a file." {
		t.Errorf("line %q", hits[0].Line)
	}
	if hits, matched := x.Search("nothing matches this", 0); len(hits) != 0 || matched != 0 {
		t.Errorf("hits for no word: %+v", hits)
	}
	if hits, _ := x.Search("", 0); len(hits) != 0 {
		t.Errorf("hits for an empty query: %+v", hits)
	}
	if hits, matched := x.Search("path", 2); len(hits) != 2 || matched != 3 {
		t.Errorf("limit: %d hits, %d matched", len(hits), matched)
	}
}

// Ties rank by name, so a search answers the same way every time.
func TestTiesByName(t *testing.T) {
	x := New([]tools.Tool{tool("b_tool", "Same words."), tool("a_tool", "Same words."), tool("c_tool", "Same words.")})
	hits, _ := x.Search("same", 0)
	var names []string
	for _, h := range hits {
		names = append(names, h.Name)
	}
	if !slices.Equal(names, []string{"a_tool", "b_tool", "c_tool"}) {
		t.Fatalf("order %v", names)
	}
}

// Among 500 tools of five servers, each query finds its tool first: by a
// word of its description, by its parameter's name, and by its name written
// in another case.
func TestFindsTheToolAmong500(t *testing.T) {
	ts := toolgen.Tools(500)
	ts = append(ts,
		tool("mcp__github__create_issue", "Create a new issue in a GitHub repository.", "owner", "repo", "title", "body"),
		tool("mcp__weather__forecast", "Get the weather forecast for a city.", "city", "days"),
		tool("mcp__db__runQuery", "Run a read-only SQL statement.", "sql"),
	)
	x := New(ts)
	for query, want := range map[string]string{
		"create a github issue":         "mcp__github__create_issue",
		"weather forecast for tomorrow": "mcp__weather__forecast",
		"sql":                           "mcp__db__runQuery",
		"run query":                     "mcp__db__runQuery",
		"runquery":                      "mcp__db__runQuery",
	} {
		hits, _ := x.Search(query, 8)
		if len(hits) == 0 || hits[0].Name != want {
			t.Errorf("%q: first %v, want %s", query, hits, want)
		}
	}
}

func BenchmarkIndex1000(b *testing.B) {
	ts := toolgen.Tools(1000)
	b.ReportAllocs()
	for b.Loop() {
		New(ts)
	}
}

func BenchmarkSearch1000(b *testing.B) {
	x := New(toolgen.Tools(1000))
	b.ReportAllocs()
	for b.Loop() {
		x.Search("create a new issue in the repository", 8)
	}
}

func ExampleIndex_Search() {
	x := New([]tools.Tool{
		tool("mcp__fs__read_file", "Read a file from disk.", "path"),
		tool("mcp__web__fetch", "Fetch a web page.", "url"),
	})
	hits, _ := x.Search("read the file", 8)
	for _, h := range hits {
		fmt.Printf("%s %.2f %s\n", h.Name, h.Score, h.Line)
	}
	// Output: mcp__fs__read_file 1.85 Read a file from disk.
}
