//go:build unix

package faults

// Row 10: fuzz targets for the public-name function, the !!js evaluator,
// cordis.yml decoding and result mapping, each run by CI for a bounded time
// of at least 30 s; and every row of the matrix run by CI with the race
// detector. The fuzz targets fail on any panic, so no fuzzed input can
// panic in front of a user. This test fails when scripts/test.sh (which
// .ci/run calls) stops doing either.

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

func TestFuzzTargetsRunInCI(t *testing.T) {
	t.Parallel()
	script, err := os.ReadFile(filepath.Join(repoRoot, "scripts", "test.sh"))
	if err != nil {
		t.Fatal(err)
	}
	text := string(script)

	m := regexp.MustCompile(`FUZZTIME="\$\{FUZZTIME:-([0-9a-z.]+)\}"`).FindStringSubmatch(text)
	if m == nil {
		t.Fatal("scripts/test.sh sets no default FUZZTIME")
	}
	if d, err := time.ParseDuration(m[1]); err != nil || d < 30*time.Second {
		t.Errorf("the default FUZZTIME is %s; every target must run at least 30s", m[1])
	}
	if !strings.Contains(text, `-fuzztime "$FUZZTIME"`) {
		t.Error("scripts/test.sh does not bound the fuzz runs with $FUZZTIME")
	}
	if !regexp.MustCompile(`go test -race [^\n]*\./\.\.\.`).MatchString(text) {
		t.Error("scripts/test.sh does not run go test -race ./... (the fault matrix needs the race detector)")
	}

	for _, target := range []struct{ pkg, name, what string }{
		{"plugins/mcpclient", "FuzzPublicName", "the public-name function"},
		{"host/jsexpr", "FuzzParse", "the !!js parser"},
		{"host/jsexpr", "FuzzEval", "the !!js evaluator"},
		{"host", "FuzzParseFile", "cordis.yml decoding"},
		{"plugins/mcpclient", "FuzzMapResult", "result mapping"},
	} {
		line := regexp.MustCompile(`(?m)^\./` + regexp.QuoteMeta(target.pkg) + `\s+` + target.name + `$`)
		if !line.MatchString(text) {
			t.Errorf("scripts/test.sh does not fuzz %s (%s in ./%s)", target.what, target.name, target.pkg)
		}
		files, _ := filepath.Glob(filepath.Join(repoRoot, target.pkg, "*_test.go"))
		defined := false
		for _, f := range files {
			src, err := os.ReadFile(f)
			if err == nil && strings.Contains(string(src), "func "+target.name+"(f *testing.F)") {
				defined = true
			}
		}
		if !defined {
			t.Errorf("./%s has no fuzz target %s (%s)", target.pkg, target.name, target.what)
		}
	}
}

// The matrix in docs/RELIABILITY.md names real tests: every test it names
// exists in the package it says, and every test of this package is in it.
func TestMatrixNamesRealTests(t *testing.T) {
	t.Parallel()
	doc, err := os.ReadFile(filepath.Join(repoRoot, "docs", "RELIABILITY.md"))
	if err != nil {
		t.Fatal(err)
	}
	named := map[string]bool{}
	ref := regexp.MustCompile("`((?:[a-z][a-z0-9]*/)*[a-z][a-z0-9]*)\\.((?:Test|Fuzz)[A-Za-z0-9_]+)`")
	for _, m := range ref.FindAllStringSubmatch(string(doc), -1) {
		pkg, name := m[1], m[2]
		named[pkg+"."+name] = true
		files, _ := filepath.Glob(filepath.Join(repoRoot, pkg, "*_test.go"))
		found := false
		for _, f := range files {
			src, err := os.ReadFile(f)
			if err == nil && regexp.MustCompile(`(?m)^func `+name+`\(`).Match(src) {
				found = true
				break
			}
		}
		if !found {
			t.Errorf("docs/RELIABILITY.md names %s.%s, which does not exist", pkg, name)
		}
	}
	if len(named) < 40 {
		t.Errorf("docs/RELIABILITY.md names only %d tests", len(named))
	}
	files, _ := filepath.Glob(filepath.Join(repoRoot, "tests", "faults", "*_test.go"))
	def := regexp.MustCompile(`(?m)^func ((?:Test|Fuzz)[A-Za-z0-9_]+)\(`)
	for _, f := range files {
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range def.FindAllStringSubmatch(string(src), -1) {
			if m[1] != "TestMain" && !named["tests/faults."+m[1]] {
				t.Errorf("tests/faults.%s is not in the matrix of docs/RELIABILITY.md", m[1])
			}
		}
	}
}
