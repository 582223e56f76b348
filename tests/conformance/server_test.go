package conformance_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/harness-go/harness/internal/testkit/npmtest"
)

// serverRuns are the runs of the suite's server leg against the gateway:
// what the revision 2026-07-28 requires (and what it runs unscored), and
// the scenarios of 2025-11-25, each at its revision's wire. Every scenario
// a run reports must pass with at least one check and no warning, but for
// what expectedFile lists — a scenario, or one check as scenario:check —
// and the extensions (outOfScope).
var serverRuns = []struct {
	name string
	args []string
}{
	{"2026-07-28", []string{"--requirements", "2026-07-28"}},
	{"2025-11-25", []string{"--spec-version", "2025-11-25"}},
}

// outOfScope are the suite's extensions (tasks, skills): optional by
// definition (SEP-1730: no tier requires them), run unscored by
// --requirements, and not served by the gateway.
func outOfScope(scenario string) bool {
	return strings.HasPrefix(scenario, "tasks-") || strings.HasPrefix(scenario, "sep-2640-")
}

// notRun are server scenarios of the suite that no run here holds, and
// why.
var notRun = map[string]string{
	"server-sse-polling": "needs a test_reconnection tool that closes its SSE stream mid-call, for a resumable stream: the gateway keeps no event store (mcp-go's keeps a session's every event for its life), so it serves no resumable streams",
}

// TestServerScenarios runs the suite's server scenarios against `harness
// serve --http` with the test-only kind conformance-tools (./servertools),
// one run per revision (serverRuns), in parallel, each with its own gateway
// and expectedFile as its baseline. The runner's summary is not trusted
// alone: every check of every scenario is read from what it saved (-o).
func TestServerScenarios(t *testing.T) {
	runner := npmtest.Conformance(t)
	bin := buildPackage(t, "./harness", "harness")
	baseline, legs := loadExpected(t)
	expectedFailures := legs["server"]
	var mu sync.Mutex
	seen := map[string]bool{} // scenarios some run reported
	t.Run("runs", func(t *testing.T) {
		for _, run := range serverRuns {
			t.Run(run.name, func(t *testing.T) {
				t.Parallel()
				url := startGateway(t, bin)
				out := filepath.Join(t.TempDir(), "out")
				o := runBounded(t, runner, append([]string{"server", "--url", url, "--expected-failures", baseline, "-o", out}, run.args...), boundFor(t, scenarioTimeout))
				var problems []string
				if o.timedOut || o.err != nil || o.exitCode != 0 {
					problems = append(problems, fmt.Sprintf("the runner exited with status %d (timed out: %t, err: %v)", o.exitCode, o.timedOut, o.err))
				}
				results, err := readChecks(out)
				if err != nil {
					t.Fatalf("reading the checks the runner saved: %v", err)
				}
				passed, checks, scenarios := 0, 0, 0
				for _, scenario := range sortedScenarios(results) {
					mu.Lock()
					seen[scenario] = true
					mu.Unlock()
					if outOfScope(scenario) {
						continue
					}
					scenarios++
					cs := results[scenario]
					failing := map[string]string{}
					for _, c := range cs {
						checks++
						switch c.Status {
						case "FAILURE", "WARNING":
							failing[c.ID] = c.Status + ": " + c.Message
						default:
							passed++
						}
					}
					if why, ok := expectedFailures[scenario]; ok {
						if len(failing) == 0 {
							problems = append(problems, fmt.Sprintf("%s passes now (expected to fail: %s): take it off %s", scenario, why, expectedFile))
						}
						continue
					}
					if len(cs) == 0 {
						problems = append(problems, scenario+" reported no check")
					}
					for id, what := range failing {
						if _, ok := expectedFailures[scenario+":"+id]; !ok {
							problems = append(problems, fmt.Sprintf("%s: %s %s", scenario, id, what))
						}
					}
					for entry, why := range expectedFailures {
						if id, ok := strings.CutPrefix(entry, scenario+":"); ok && failing[id] == "" && ranCheck(cs, id) {
							problems = append(problems, fmt.Sprintf("%s passes now (expected to fail: %s): take it off %s", entry, why, expectedFile))
						}
					}
				}
				t.Logf("%s: %d scenarios, %d of %d checks passed (extensions left out)", run.name, scenarios, passed, checks)
				if scenarios == 0 {
					problems = append(problems, "no scenario ran")
				}
				if len(problems) > 0 {
					sort.Strings(problems)
					t.Errorf("server scenarios of %s:\n  - %s", run.name, strings.Join(problems, "\n  - "))
					t.Logf("runner stdout:\n%s\nstderr:\n%s", o.stdout, o.stderr)
				}
			})
		}
	})
	if t.Failed() {
		return
	}
	// Every entry of the baseline is a scenario some run holds.
	for entry := range expectedFailures {
		scenario, _, _ := strings.Cut(entry, ":")
		if !seen[scenario] {
			t.Errorf("%s lists %s, which no run of the server leg holds", expectedFile, entry)
		}
	}
	for name, why := range notRun {
		t.Logf("not run: %s: %s", name, why)
	}
}

// check is one check of a scenario, as the runner saved it.
type check struct {
	ID      string `json:"id"`
	Status  string `json:"status"`
	Message string `json:"errorMessage"`
}

// savedScenario is the folder name the runner gives a scenario's results:
// server-<scenario>-<time>.
var savedScenario = regexp.MustCompile(`^server-(.+)-\d{4}-\d{2}-\d{2}T[0-9-]+Z$`)

// readChecks reads the checks.json of every scenario the runner saved in
// dir.
func readChecks(dir string) (map[string][]check, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	out := map[string][]check{}
	for _, e := range entries {
		m := savedScenario.FindStringSubmatch(e.Name())
		if !e.IsDir() || m == nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join(dir, e.Name(), "checks.json"))
		if err != nil {
			return nil, err
		}
		var cs []check
		if err := json.Unmarshal(b, &cs); err != nil {
			return nil, fmt.Errorf("%s: %w", e.Name(), err)
		}
		out[m[1]] = append(out[m[1]], cs...)
	}
	return out, nil
}

func ranCheck(cs []check, id string) bool {
	for _, c := range cs {
		if c.ID == id && c.Status != "SKIPPED" {
			return true
		}
	}
	return false
}

func sortedScenarios(m map[string][]check) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// startGateway serves a cordis.yml holding the conformance tools with
// bin (the harness built with them) over HTTP, and returns the endpoint.
func startGateway(t *testing.T, bin string) string {
	t.Helper()
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
