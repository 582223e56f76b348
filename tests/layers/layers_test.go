// Package layers checks the import layers of the module: the table in
// docs/rfc/0001-host.md ("The layers") says which package may import
// which, and every import of every package of the module (go list -deps)
// must keep to it. An arrow pointing up the table, a production package
// importing test support, and a package in no row all fail.
package layers

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/harness-go/harness/internal/testkit/proctest"
)

const module = "github.com/harness-go/harness"

// row is one layer of the table.
type row struct {
	label    string
	patterns []string // module-relative; "x/..." is x and everything below
	within   bool     // its packages may import one another
	side     bool     // test support: beside the table, imports anything
}

var quoted = regexp.MustCompile("`([^`]+)`")

// parseTable reads the rows between the layers markers of the RFC.
func parseTable(doc []byte) ([]row, error) {
	var rows []row
	in := false
	sc := bufio.NewScanner(bytes.NewReader(doc))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		switch {
		case strings.HasPrefix(line, "<!-- layers"):
			in = true
			continue
		case strings.HasPrefix(line, "<!-- /layers"):
			in = false
			continue
		case !in || !strings.HasPrefix(line, "|") || strings.HasPrefix(line, "|---") || strings.HasPrefix(line, "| Layer"):
			continue
		}
		cells := strings.Split(strings.Trim(line, "|"), "|")
		if len(cells) != 3 {
			return nil, fmt.Errorf("layer row %q: want 3 cells, got %d", line, len(cells))
		}
		r := row{label: strings.TrimSpace(cells[0])}
		r.side = !strings.ContainsAny(r.label[:1], "0123456789")
		switch strings.TrimSpace(cells[2]) {
		case "yes":
			r.within = true
		case "no":
		default:
			return nil, fmt.Errorf("layer row %q: the last cell must be yes or no", r.label)
		}
		for _, m := range quoted.FindAllStringSubmatch(cells[1], -1) {
			r.patterns = append(r.patterns, m[1])
		}
		if len(r.patterns) == 0 {
			return nil, fmt.Errorf("layer row %q names no package", r.label)
		}
		rows = append(rows, r)
	}
	if len(rows) == 0 {
		return nil, fmt.Errorf("no layer table between <!-- layers --> and <!-- /layers -->")
	}
	return rows, sc.Err()
}

func (r row) matches(pkg string) bool {
	for _, p := range r.patterns {
		if dir, ok := strings.CutSuffix(p, "/..."); ok && (pkg == dir || strings.HasPrefix(pkg, dir+"/")) || pkg == p {
			return true
		}
	}
	return false
}

// check returns every import of graph (package → its imports, both
// module-relative) that breaks rows.
func check(rows []row, graph map[string][]string) []string {
	place := func(pkg string) (int, error) {
		found := -1
		for i, r := range rows {
			if r.matches(pkg) {
				if found >= 0 {
					return 0, fmt.Errorf("%s is in two rows (%q and %q)", pkg, rows[found].label, r.label)
				}
				found = i
			}
		}
		if found < 0 {
			return 0, fmt.Errorf("%s is in no row of the layer table (docs/rfc/0001-host.md): place it", pkg)
		}
		return found, nil
	}
	var bad []string
	pkgs := make([]string, 0, len(graph))
	for p := range graph {
		pkgs = append(pkgs, p)
	}
	slices.Sort(pkgs)
	for _, p := range pkgs {
		pi, err := place(p)
		if err != nil {
			bad = append(bad, err.Error())
			continue
		}
		from := rows[pi]
		for _, imp := range graph[p] {
			ii, err := place(imp)
			if err != nil {
				continue // reported as a package of its own
			}
			to := rows[ii]
			switch {
			case from.side:
			case to.side:
				bad = append(bad, fmt.Sprintf("%s (%s) imports test support %s", p, from.label, imp))
			case ii > pi:
				bad = append(bad, fmt.Sprintf("%s (%s) imports %s (%s): an arrow pointing up", p, from.label, imp, to.label))
			case ii == pi && !from.within:
				bad = append(bad, fmt.Sprintf("%s imports %s, of its own row (%s), whose packages are independent", p, imp, from.label))
			}
		}
	}
	return bad
}

// moduleGraph lists every package of the module and its imports of the
// module's packages (not its tests').
func moduleGraph(t *testing.T, root string) map[string][]string {
	cmd := exec.Command("go", "list", "-deps", "-json=ImportPath,Imports,Standard", "./...")
	cmd.Dir = root
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	rel := func(p string) (string, bool) { return strings.CutPrefix(p, module+"/") }
	graph := map[string][]string{}
	dec := json.NewDecoder(bytes.NewReader(out))
	for dec.More() {
		var p struct {
			ImportPath string
			Imports    []string
			Standard   bool
		}
		if err := dec.Decode(&p); err != nil {
			t.Fatal(err)
		}
		name, ok := rel(p.ImportPath)
		if p.Standard || !ok {
			continue
		}
		graph[name] = []string{}
		for _, imp := range p.Imports {
			if r, ok := rel(imp); ok {
				graph[name] = append(graph[name], r)
			}
		}
	}
	return graph
}

func TestImportsKeepToTheLayerTable(t *testing.T) {
	root, err := proctest.ModuleRoot()
	if err != nil {
		t.Fatal(err)
	}
	doc, err := os.ReadFile(filepath.Join(root, "docs", "rfc", "0001-host.md"))
	if err != nil {
		t.Fatal(err)
	}
	rows, err := parseTable(doc)
	if err != nil {
		t.Fatal(err)
	}
	graph := moduleGraph(t, root)
	for _, want := range []string{"fiber", "host", "plugins/mcpclient", "harnesscmd/internal/cli", "harnesscmd"} {
		if _, ok := graph[want]; !ok {
			t.Fatalf("go list did not list %s: %v", want, graph)
		}
	}
	for _, b := range check(rows, graph) {
		t.Error(b)
	}
}

// The check itself: each way to break the table is caught, and a graph
// that keeps to it passes.
func TestCheck(t *testing.T) {
	rows := []row{
		{label: "1 leaf", patterns: []string{"fiber", "internal/safe"}},
		{label: "2 host", patterns: []string{"host", "host/secret"}, within: true},
		{label: "5 plugins", patterns: []string{"plugins/a", "plugins/b"}},
		{label: "6 app", patterns: []string{"cmd/..."}, within: true},
		{label: "test support", patterns: []string{"internal/testkit/fixture", "tests/..."}, within: true, side: true},
	}
	for _, c := range []struct {
		name  string
		graph map[string][]string
		want  string // a substring of the one problem; "" for none
	}{
		{"down and within", map[string][]string{"host": {"fiber", "host/secret"}, "plugins/a": {"host"}, "cmd/x": {"plugins/a", "cmd/y"}, "cmd/y": {}, "tests/e2e": {"internal/testkit/fixture", "cmd/x"}}, ""},
		{"an arrow pointing up", map[string][]string{"host": {"plugins/a"}, "plugins/a": {}}, "host (2 host) imports plugins/a (5 plugins): an arrow pointing up"},
		{"a leaf importing a leaf", map[string][]string{"fiber": {"internal/safe"}, "internal/safe": {}}, "fiber imports internal/safe, of its own row (1 leaf)"},
		{"a plugin importing a plugin", map[string][]string{"plugins/a": {"plugins/b"}, "plugins/b": {}}, "of its own row (5 plugins)"},
		{"production importing test support", map[string][]string{"plugins/a": {"internal/testkit/fixture"}, "internal/testkit/fixture": {}}, "plugins/a (5 plugins) imports test support internal/testkit/fixture"},
		{"a package in no row", map[string][]string{"internal/new": {}}, "internal/new is in no row"},
	} {
		t.Run(c.name, func(t *testing.T) {
			bad := check(rows, c.graph)
			switch {
			case c.want == "" && len(bad) > 0:
				t.Errorf("problems %q, want none", bad)
			case c.want != "" && (len(bad) != 1 || !strings.Contains(bad[0], c.want)):
				t.Errorf("problems %q, want one with %q", bad, c.want)
			}
		})
	}
}

func TestParseTable(t *testing.T) {
	doc := "intro\n<!-- layers -->\n| Layer | Packages | Within the row |\n|---|---|---|\n| 1 leaf | `fiber`, `x/...` (why) | no |\n| test support | `tests/...` | yes |\n<!-- /layers -->\n| 9 outside | `nope` | yes |\n"
	rows, err := parseTable([]byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 2 || !slices.Equal(rows[0].patterns, []string{"fiber", "x/..."}) || rows[0].within || rows[0].side || !rows[1].side || !rows[1].within {
		t.Fatalf("rows %+v", rows)
	}
	if !rows[0].matches("x") || !rows[0].matches("x/y/z") || rows[0].matches("xy") {
		t.Error("x/... matches x and below only")
	}
	if _, err := parseTable([]byte("no table")); err == nil {
		t.Error("a document without the table parsed")
	}
	if _, err := parseTable([]byte("<!-- layers -->\n| 1 a | `a` | maybe |\n")); err == nil {
		t.Error("a row whose last cell is neither yes nor no parsed")
	}
}
