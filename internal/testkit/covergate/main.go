// Command covergate fails when statement coverage in a Go cover profile is
// below a floor, per file or per package:
//
//	go run ./internal/testkit/covergate -profile cover.out \
//	    -min plugins/mcpclient/naming.go=100 -min plugins/mcpclient=90
//
// A path names a file when it ends in .go, else a package directory; paths
// are relative to the module root.
package main

import (
	"bufio"
	"flag"
	"fmt"
	"os"
	"path"
	"sort"
	"strconv"
	"strings"
)

type floors map[string]float64

func (f floors) String() string { return fmt.Sprint(map[string]float64(f)) }

func (f floors) Set(v string) error {
	p, pct, ok := strings.Cut(v, "=")
	n, err := strconv.ParseFloat(pct, 64)
	if !ok || err != nil {
		return fmt.Errorf("want PATH=PERCENT, got %q", v)
	}
	f[p] = n
	return nil
}

type count struct{ covered, total int }

func main() {
	profile := flag.String("profile", "cover.out", "the cover profile")
	module := flag.String("module", "github.com/harness-go/harness", "the module path")
	min := floors{}
	flag.Var(min, "min", "PATH=PERCENT floor (repeatable)")
	flag.Parse()
	if err := run(*profile, *module, min); err != nil {
		fmt.Fprintln(os.Stderr, "covergate:", err)
		os.Exit(1)
	}
}

func run(profile, module string, min floors) error {
	f, err := os.Open(profile)
	if err != nil {
		return err
	}
	defer f.Close()
	// Blocks may repeat (one line per test binary that covers the file):
	// count each block once, covered if any run covered it.
	type block struct {
		file, pos string
	}
	stmts := map[block]int{}
	hit := map[block]bool{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "mode:") || line == "" {
			continue
		}
		// name.go:line.col,line.col numStmts count
		fields := strings.Fields(line)
		if len(fields) != 3 {
			return fmt.Errorf("bad profile line %q", line)
		}
		file, pos, _ := strings.Cut(fields[0], ":")
		file = strings.TrimPrefix(file, module+"/")
		n, _ := strconv.Atoi(fields[1])
		c, _ := strconv.Atoi(fields[2])
		b := block{file, pos}
		stmts[b] = n
		hit[b] = hit[b] || c > 0
	}
	if err := sc.Err(); err != nil {
		return err
	}
	byFile, byPkg := map[string]*count{}, map[string]*count{}
	for b, n := range stmts {
		for _, key := range []struct {
			m map[string]*count
			k string
		}{{byFile, b.file}, {byPkg, path.Dir(b.file)}} {
			c := key.m[key.k]
			if c == nil {
				c = &count{}
				key.m[key.k] = c
			}
			c.total += n
			if hit[b] {
				c.covered += n
			}
		}
	}
	paths := make([]string, 0, len(min))
	for p := range min {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	failed := false
	for _, p := range paths {
		m := byPkg
		if strings.HasSuffix(p, ".go") {
			m = byFile
		}
		c := m[p]
		if c == nil || c.total == 0 {
			fmt.Printf("FAIL %-40s no statements in the profile\n", p)
			failed = true
			continue
		}
		pct := 100 * float64(c.covered) / float64(c.total)
		status := "ok  "
		if pct+1e-9 < min[p] {
			status, failed = "FAIL", true
		}
		fmt.Printf("%s %-40s %6.1f%% (floor %.0f%%)\n", status, p, pct, min[p])
	}
	if failed {
		return fmt.Errorf("coverage below the floor")
	}
	return nil
}
