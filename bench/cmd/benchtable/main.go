// Command benchtable runs the whole benchmark suite of the harness in one
// process and prints its results and the table of ratios against the
// targets (see docs/benchmarks.md):
//
//	go run ./bench/cmd/benchtable
//
// It builds the fixture server, the harness binary and the pipe echo,
// installs the pinned npm packages for the TypeScript SDK client if needed
// (internal/testkit/npmtest), and takes about two minutes on a 2-core machine.
// Progress goes to stderr, the report to stdout. It exits 1 when a target
// is missed.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"runtime/pprof"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/harness-go/harness/bench"
	"github.com/harness-go/harness/internal/testkit/npmtest"
)

func main() { os.Exit(run()) }

func run() int {
	quick := flag.Bool("quick", false, "run every part once at the smallest size (checks the suite, measures nothing)")
	noTS := flag.Bool("no-ts", false, "leave out the TypeScript SDK client (no node needed)")
	soak := flag.Int("soak", 0, "reload cycles of the leak soak (default 1000; -quick 4)")
	parts := flag.String("parts", strings.Join(bench.Parts, ","), "the parts of the suite to run, comma-separated")
	cpuProfile := flag.String("cpuprofile", "", "write a CPU profile of this process (the Go clients and the in-process harness) to `file`")
	flag.Parse()

	o := bench.FullSuite()
	if *quick {
		o = bench.QuickSuite()
	}
	if *soak > 0 {
		o.SoakCycles = *soak
	}
	for p := range strings.SplitSeq(*parts, ",") {
		if p = strings.TrimSpace(p); !slices.Contains(bench.Parts, p) {
			return fail(fmt.Errorf("-parts: unknown part %q (the parts: %s)", p, strings.Join(bench.Parts, ", ")))
		}
		o.Parts = append(o.Parts, p)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	progress := func(s string) { fmt.Fprintf(os.Stderr, "%s  %s\n", time.Now().Format("15:04:05"), s) }

	if !*noTS && (slices.Contains(o.Parts, "calls") || slices.Contains(o.Parts, "gateway")) {
		var err error
		if o.Node, err = exec.LookPath("node"); err != nil {
			return fail(fmt.Errorf("node is needed for the TypeScript SDK client (or run with -no-ts): %w", err))
		}
		progress("npm: the pinned @modelcontextprotocol/sdk (tests/npm)")
		if o.NPMDir, err = npmDir(); err != nil {
			return fail(err)
		}
	}
	progress("building mcpfixture, harness and pipeecho")
	bins, err := bench.Build()
	if err != nil {
		return fail(err)
	}
	defer bins.Remove()

	if *cpuProfile != "" {
		f, err := os.Create(*cpuProfile)
		if err != nil {
			return fail(err)
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return fail(err)
		}
		defer pprof.StopCPUProfile()
	}
	rep, err := bench.RunSuite(ctx, bins, o, progress)
	if err != nil {
		return fail(err)
	}
	rep.WriteTable(os.Stdout)
	for _, t := range rep.Targets() {
		if !t.Met {
			return 1
		}
	}
	return 0
}

func fail(err error) int {
	fmt.Fprintln(os.Stderr, "benchtable:", err)
	return 1
}

// npmDir installs (or finds) the pinned npm packages with internal/testkit/npmtest,
// which reports through a testing.TB.
func npmDir() (dir string, err error) {
	t := &reporter{}
	defer func() {
		if r := recover(); r != nil {
			if a, ok := r.(abort); ok {
				err = fmt.Errorf("npm: %s", string(a))
				return
			}
			panic(r)
		}
	}()
	return npmtest.Dir(t), nil
}

// reporter is the part of testing.TB that npmtest uses; Fatal and Skip
// abort the call (recovered by npmDir). The embedded TB is nil: any other
// method would panic.
type reporter struct{ testing.TB }

type abort string

func (*reporter) Helper()                         {}
func (*reporter) Name() string                    { return "benchtable" }
func (*reporter) Log(args ...any)                 { fmt.Fprintln(os.Stderr, args...) }
func (*reporter) Logf(format string, args ...any) { fmt.Fprintf(os.Stderr, format+"\n", args...) }
func (*reporter) Fatal(args ...any)               { panic(abort(fmt.Sprint(args...))) }
func (*reporter) Fatalf(format string, args ...any) {
	panic(abort(fmt.Sprintf(format, args...)))
}
func (*reporter) Skip(args ...any) { panic(abort(fmt.Sprint(args...))) }
func (*reporter) Skipf(format string, args ...any) {
	panic(abort(fmt.Sprintf(format, args...)))
}
