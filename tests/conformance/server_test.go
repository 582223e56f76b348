package conformance_test

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/harness-go/harness/internal/npmtest"
)

// serverScenarios are the suite's server scenarios the gateway serves: each
// must pass, with at least one check.
var serverScenarios = []string{
	"server-initialize",
	"ping",
	"tools-list",
	"tools-call-simple-text",
	"tools-call-image",
	"tools-call-audio",
	"tools-call-embedded-resource",
	"tools-call-mixed-content",
	"tools-call-error",
	"json-schema-2020-12", // in the suite's "all" set, not its default one
	"server-sse-multiple-streams",
	"dns-rebinding-protection",
}

// notRun are server scenarios that report no check against the gateway (a
// run of them would be a zero-check run), and why.
var notRun = map[string]string{
	"server-sse-polling": "needs a test_reconnection tool that closes its SSE stream mid-call, for a resumable stream: the gateway keeps no event store, so it serves no resumable streams; the scenario reports 0 checks",
}

// TestServerScenarios runs the suite's server scenarios against `harness
// serve --http` with the test-only kind conformance-tools (./servertools):
// the default set in one run with the expected failures (expectedFile) as
// its baseline,
// then the scenarios outside that set one by one.
func TestServerScenarios(t *testing.T) {
	runner := npmtest.Conformance(t)
	url := startGateway(t)

	baseline, legs := loadExpected(t)
	expectedFailures := legs["server"]
	dir := t.TempDir()
	o := runBounded(t, runner, []string{"server", "--url", url, "--expected-failures", baseline, "-o", filepath.Join(dir, "out")}, boundFor(t, scenarioTimeout))
	results := parseScenarioLines(o.stdout)
	var problems []string
	if o.timedOut || o.err != nil || o.exitCode != 0 {
		problems = append(problems, fmt.Sprintf("the runner exited with status %d (timed out: %t, err: %v)", o.exitCode, o.timedOut, o.err))
	}
	ran := 0
	for _, name := range serverScenarios {
		r, ok := results[name]
		if !ok {
			continue // not in the default set: run alone below
		}
		ran++
		if !r.ok || r.passed < 1 {
			problems = append(problems, fmt.Sprintf("%s: %d passed, %d failed", name, r.passed, r.failed))
		}
	}
	for name, why := range expectedFailures {
		r, ok := results[name]
		switch {
		case !ok:
			problems = append(problems, fmt.Sprintf("%s (expected to fail: %s) did not run", name, why))
		case r.ok:
			problems = append(problems, fmt.Sprintf("%s passes now: take it off the expected failures", name))
		}
	}
	for name := range results {
		if !slices.Contains(serverScenarios, name) && expectedFailures[name] == "" {
			problems = append(problems, fmt.Sprintf("the suite ran %s, which this test does not know: decide whether it applies", name))
		}
	}
	if ran == 0 {
		problems = append(problems, "no scenario of the default set ran")
	}
	for _, name := range serverScenarios {
		if r, ok := results[name]; ok {
			t.Logf("%s: %d passed, %d failed", name, r.passed, r.failed)
		}
	}
	if len(problems) > 0 {
		t.Errorf("server scenarios:\n  - %s", strings.Join(problems, "\n  - "))
		t.Logf("runner stdout:\n%s\nstderr:\n%s", o.stdout, o.stderr)
	}

	// The scenarios outside the default set, one run each.
	for _, name := range serverScenarios {
		if _, ok := results[name]; ok {
			continue
		}
		t.Run(name, func(t *testing.T) {
			o := runBounded(t, runner, []string{"server", "--url", url, "--scenario", name}, boundFor(t, scenarioTimeout))
			passed, total, ok := parsePassed(o.stdout)
			if !ok {
				passed, total, ok = parsePassed(o.stderr)
			}
			if o.exitCode != 0 || !ok || total < 1 || passed != total {
				t.Errorf("%s: exit %d, Passed: %d/%d (summary found: %t)\nstdout:\n%s\nstderr:\n%s", name, o.exitCode, passed, total, ok, o.stdout, o.stderr)
			}
		})
	}
	for name, why := range notRun {
		t.Logf("not run: %s: %s", name, why)
	}
}

// scenarioResult is one "✓ name: N passed, M failed" line of the runner.
type scenarioResult struct {
	ok             bool
	passed, failed int
}

var scenarioLine = regexp.MustCompile(`(?m)^\s*([✓✗])\s+([a-z0-9-]+):\s+(\d+) passed, (\d+) failed`)

func parseScenarioLines(out []byte) map[string]scenarioResult {
	res := map[string]scenarioResult{}
	for _, m := range scenarioLine.FindAllSubmatch(ansi.ReplaceAll(out, nil), -1) {
		p, _ := strconv.Atoi(string(m[3]))
		f, _ := strconv.Atoi(string(m[4]))
		res[string(m[2])] = scenarioResult{ok: string(m[1]) == "✓" && f == 0, passed: p, failed: f}
	}
	return res
}

// startGateway builds the harness with the conformance tools, serves a
// cordis.yml holding them over HTTP, and returns the endpoint.
func startGateway(t *testing.T) string {
	t.Helper()
	bin := buildPackage(t, "./harness", "harness")
	dir := t.TempDir()
	file := filepath.Join(dir, "cordis.yml")
	if err := os.WriteFile(file, []byte("- id: tools\n  name: conformance-tools\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, bin, "serve", "--http", "127.0.0.1:0", "-c", file)
	cmd.Dir = dir
	var stderr strings.Builder
	cmd.Stderr = &stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.WaitDelay = waitDelay
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cancel()
		_ = cmd.Wait()
		if strings.Contains(stderr.String(), "DATA RACE") {
			t.Errorf("the gateway hit a data race:\n%s", stderr.String())
		}
	})
	line := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		if sc.Scan() {
			line <- sc.Text()
		}
		close(line)
	}()
	select {
	case l, ok := <-line:
		url, found := strings.CutPrefix(l, "listening ")
		if !ok || !found {
			t.Fatalf("harness serve printed %q, not \"listening URL\"; stderr:\n%s", l, stderr.String())
		}
		return url
	case <-time.After(2 * time.Minute):
		t.Fatalf("harness serve did not listen; stderr:\n%s", stderr.String())
	}
	return ""
}

// buildPackage builds a package of this folder into a temporary folder,
// with the race detector when the test has it.
func buildPackage(t *testing.T, pkg, name string) string {
	t.Helper()
	goBin, err := goTool()
	if err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), name)
	args := []string{"build", "-o", out}
	if raceEnabled {
		args = append(args, "-race")
	}
	args = append(args, pkg)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	if b, err := exec.CommandContext(ctx, goBin, args...).CombinedOutput(); err != nil {
		t.Fatalf("go %s: %v\n%s", strings.Join(args, " "), err, b)
	}
	return out
}
