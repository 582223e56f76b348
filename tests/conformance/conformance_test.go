// Package conformance runs the MCP conformance suite
// (@modelcontextprotocol/conformance, pinned in tests/npm) against a client
// built on harness's mcp-client plugin (./client), and its server scenarios
// against the gateway, `harness serve --http` (server_test.go, with the
// test-only tools of ./servertools built into ./harness).
//
// The suite starts a mock server per scenario and runs the client command
// with the server's URL appended. Its exit status alone is not trusted: a
// client that never connects gets "Passed: 0/0" and exit 0. A scenario
// passes only when the runner exits 0 and reports Passed: X/Y with Y ≥ 1 and
// X == Y.
package conformance_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/harness-go/harness/internal/testkit/npmtest"
)

// The client scenarios of the suite at each revision: each must pass with
// at least one check, no failure and no warning. json-schema-2020-12-preservation
// is run unscored by --requirements 2026-07-28 (added after the revision);
// it must pass too, and so must every OAuth extension it also runs
// unscored: client credentials, workload identity, DPoP and
// enterprise-managed authorization.
var (
	authScenarios20251125 = []string{"auth/metadata-default", "auth/metadata-var1", "auth/metadata-var2", "auth/metadata-var3",
		"auth/basic-cimd", "auth/scope-from-www-authenticate", "auth/scope-from-scopes-supported", "auth/scope-omitted-when-undefined",
		"auth/scope-step-up", "auth/scope-retry-limit", "auth/token-endpoint-auth-basic", "auth/token-endpoint-auth-post",
		"auth/token-endpoint-auth-none", "auth/pre-registration"}
	authScenarios20260728 = append(slices.Clone(authScenarios20251125), "auth/resource-mismatch", "auth/offline-access-scope",
		"auth/offline-access-not-supported", "auth/authorization-server-migration", "auth/iss-supported", "auth/iss-not-advertised",
		"auth/iss-supported-missing", "auth/iss-wrong-issuer", "auth/iss-unexpected", "auth/iss-normalized", "auth/metadata-issuer-mismatch")
	authScenarios20250326 = []string{"auth/2025-03-26-oauth-metadata-backcompat", "auth/2025-03-26-oauth-endpoint-fallback"}

	clientScenarios20260728 = append([]string{"tools_call", "request-metadata", "sep-2322-client-request-state", "http-standard-headers",
		"http-custom-headers", "http-invalid-tool-headers", "json-schema-ref-no-deref", "json-schema-2020-12-preservation"}, append(authScenarios20260728, authExtensionScenarios...)...)
	// The OAuth extensions, which --requirements 2026-07-28 runs unscored:
	// client credentials (SEP-1046), workload identity (SEP-1933), DPoP
	// (SEP-1932) and enterprise-managed authorization (SEP-990).
	authExtensionScenarios = []string{"auth/client-credentials-basic", "auth/client-credentials-jwt", "auth/wif-jwt-bearer", "auth/dpop", "auth/dpop-nonce",
		"auth/enterprise-managed-authorization"}

	clientScenarios20251125 = append([]string{"initialize", "tools_call", "elicitation-sep1034-client-defaults", "sse-retry", "json-schema-2020-12-preservation"}, authScenarios20251125...)
)

const (
	// scenarioTimeout bounds one run of the suite: its own --timeout for
	// the client is runnerTimeout, and the client gives up after its own
	// clientDeadline.
	scenarioTimeout = 90 * time.Second
	// setTimeout bounds one run of a set of scenarios (they run in
	// parallel, each within runnerTimeout).
	setTimeout     = 3 * time.Minute
	runnerTimeout  = 30 * time.Second
	clientDeadline = 20 * time.Second
	// waitDelay is how long Wait waits for the pipes once the runner has
	// exited or been killed.
	waitDelay = 5 * time.Second
)

// TestConformance runs the suite's client scenarios against ./client: the
// set --requirements 2026-07-28 runs and the 2025-11-25 one (--suite all
// --spec-version 2025-11-25: every auth/* scenario of that revision with
// the rest), each in one run with expectedFile as its baseline, the two
// 2025-03-26 OAuth back-compat scenarios (--suite backcompat), and one run
// of tools_call at 2026-07-28 with protocol auto (the client falls back to
// server/discover when the stateless mock refuses initialize). The four
// runs are parallel; the suite runs the scenarios of a set in parallel.
func TestConformance(t *testing.T) {
	runner := npmtest.Conformance(t) // fails in CI without node/npm, skips elsewhere
	client := buildClient(t)
	baseline, legs := loadExpected(t)
	command := shellQuote(client) + " -deadline " + clientDeadline.String()

	t.Run("requirements 2026-07-28", func(t *testing.T) {
		t.Parallel()
		runSet(t, runner, []string{"--command", command, "--requirements", "2026-07-28"}, baseline, legs["client"], clientScenarios20260728)
	})
	t.Run("spec-version 2025-11-25", func(t *testing.T) {
		t.Parallel()
		runSet(t, runner, []string{"--command", command, "--suite", "all", "--spec-version", "2025-11-25"}, baseline, legs["client"], clientScenarios20251125)
	})
	t.Run("backcompat 2025-03-26", func(t *testing.T) {
		t.Parallel()
		runSet(t, runner, []string{"--command", command, "--suite", "backcompat"}, baseline, legs["client"], authScenarios20250326)
	})
	t.Run("tools_call 2026-07-28 protocol auto", func(t *testing.T) {
		t.Parallel()
		runScenario(t, runner, command+" -protocol auto", "tools_call", "--spec-version", "2026-07-28")
	})
}

// runSet runs a set of client scenarios in one run of the suite, with
// baseline, and judges every scenario from the checks the runner saved
// (-o), not from its summary: one of want passes with at least one check,
// no failure and no warning; an expected failure fails (one that passes is
// taken off the list); any other is a scenario this test does not know.
func runSet(t *testing.T, runner, args []string, baseline string, failing expected, want []string) {
	outDir := t.TempDir()
	args = append([]string{"client", "--timeout", strconv.FormatInt(runnerTimeout.Milliseconds(), 10), "--expected-failures", baseline, "-o", outDir}, args...)
	o := runBounded(t, runner, args, boundFor(t, setTimeout))
	var problems []string
	if o.timedOut || o.err != nil || o.exitCode != 0 {
		problems = append(problems, fmt.Sprintf("the runner exited with status %d (timed out: %t, err: %v)", o.exitCode, o.timedOut, o.err))
	}
	results, err := readClientChecks(outDir)
	if err != nil {
		t.Fatalf("reading the checks the runner saved: %v", err)
	}
	for _, name := range want {
		if _, ok := results[name]; !ok {
			problems = append(problems, name+" did not run")
		}
	}
	passedChecks := 0
	for _, name := range sortedScenarios(results) {
		cs := results[name]
		var bad []string
		passed := 0
		for _, c := range cs {
			switch c.Status {
			case "FAILURE", "WARNING":
				bad = append(bad, fmt.Sprintf("%s %s: %s", c.ID, c.Status, c.Message))
			case "SUCCESS":
				passed++
			}
		}
		switch why, isExpected := failing[name]; {
		case slices.Contains(want, name):
			if passed < 1 || len(bad) > 0 {
				problems = append(problems, fmt.Sprintf("%s: %d checks passed; %s", name, passed, strings.Join(bad, "; ")))
			}
			passedChecks += passed
		case isExpected && len(bad) == 0:
			problems = append(problems, fmt.Sprintf("%s passes now (expected to fail: %s): take it off %s", name, why, expectedFile))
		case isExpected:
		default:
			problems = append(problems, fmt.Sprintf("the suite ran %s, which this test does not know: decide whether it applies", name))
		}
	}
	t.Logf("%d scenarios that apply, %d checks passed (%d of them auth/*); the expected failures fail (%s)", len(want), passedChecks, countAuth(want), expectedFile)
	if len(problems) > 0 {
		sort.Strings(problems)
		t.Errorf("client scenarios:\n  - %s", strings.Join(problems, "\n  - "))
		t.Logf("runner: %s %s", strings.Join(runner, " "), strings.Join(args, " "))
		t.Logf("runner stdout:\n%s\nstderr:\n%s", o.stdout, o.stderr)
	}
}

func countAuth(names []string) int {
	n := 0
	for _, s := range names {
		if strings.HasPrefix(s, "auth/") {
			n++
		}
	}
	return n
}

// savedClientScenario is the folder the runner saves a client scenario's
// results in, relative to -o: <scenario>-<time> (a scenario name may hold
// a slash: auth/…).
var savedClientScenario = regexp.MustCompile(`^(.+)-\d{4}-\d{2}-\d{2}T[0-9-]+Z$`)

// readClientChecks reads the checks.json of every client scenario the
// runner saved in dir.
func readClientChecks(dir string) (map[string][]check, error) {
	out := map[string][]check{}
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || d.Name() != "checks.json" {
			return err
		}
		rel, err := filepath.Rel(dir, filepath.Dir(path))
		if err != nil {
			return err
		}
		m := savedClientScenario.FindStringSubmatch(filepath.ToSlash(rel))
		if m == nil {
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		var cs []check
		if err := json.Unmarshal(b, &cs); err != nil {
			return fmt.Errorf("%s: %w", rel, err)
		}
		out[m[1]] = append(out[m[1]], cs...)
		return nil
	})
	return out, err
}

// buildClient builds ./client into a temporary folder, with the race
// detector when the test has it, and returns the binary's path.
func buildClient(t *testing.T) string {
	t.Helper()
	goBin, err := goTool()
	if err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "conformance-client")
	args := []string{"build", "-o", out}
	if raceEnabled {
		args = append(args, "-race")
	}
	args = append(args, "./client")
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, goBin, args...)
	start := time.Now()
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go %s: %v\n%s", strings.Join(args, " "), err, b)
	}
	t.Logf("built the client in %s (race: %t)", time.Since(start).Round(time.Millisecond), raceEnabled)
	return out
}

// goTool finds the go command: on PATH, else in $GOROOT/bin.
func goTool() (string, error) {
	if p, err := exec.LookPath("go"); err == nil {
		return p, nil
	}
	if root := os.Getenv("GOROOT"); root != "" {
		p := filepath.Join(root, "bin", "go")
		if _, err := os.Stat(p); err == nil {
			return p, nil
		}
	}
	return "", errors.New("the go command is neither on PATH nor in $GOROOT/bin: cannot build the conformance client")
}

// outcome is what one run of the suite produced.
type outcome struct {
	stdout, stderr []byte
	exitCode       int
	err            error // a failure to run or wait, other than the exit status
	timedOut       bool
	elapsed        time.Duration
}

func runScenario(t *testing.T, runner []string, command, scenario string, extra ...string) {
	outDir := t.TempDir()
	args := append([]string{
		"client",
		"--scenario", scenario,
		"--command", command,
		"--timeout", strconv.FormatInt(runnerTimeout.Milliseconds(), 10),
		"-o", outDir,
	}, extra...)
	o := runBounded(t, runner, args, boundFor(t, scenarioTimeout))

	var problems []string
	if o.timedOut {
		problems = append(problems, fmt.Sprintf("the runner did not finish within %s and its process group was killed", o.elapsed.Round(time.Millisecond)))
	} else if o.err != nil {
		problems = append(problems, fmt.Sprintf("running the suite: %v", o.err))
	}
	if o.exitCode != 0 && !o.timedOut {
		problems = append(problems, fmt.Sprintf("the runner exited with status %d", o.exitCode))
	}
	passed, total, ok := parsePassed(o.stderr)
	switch {
	case !ok:
		problems = append(problems, "the runner printed no \"Passed: X/Y\" summary")
	case total < 1:
		problems = append(problems, fmt.Sprintf("the scenario reported %d checks (Passed: %d/%d): the client never got far enough to be checked", total, passed, total))
	case passed != total:
		problems = append(problems, fmt.Sprintf("Passed: %d/%d", passed, total))
	}

	if len(problems) == 0 {
		t.Logf("%s: Passed: %d/%d in %s", scenario, passed, total, o.elapsed.Round(time.Millisecond))
		return
	}
	t.Errorf("scenario %s failed after %s:\n  - %s", scenario, o.elapsed.Round(time.Millisecond), strings.Join(problems, "\n  - "))
	t.Logf("runner: %s %s", strings.Join(runner, " "), strings.Join(args, " "))
	t.Logf("runner stderr:\n%s", o.stderr)
	t.Logf("runner stdout:\n%s", o.stdout)
	logSaved(t, outDir)
}

// boundFor is d, shortened to end before the test binary's deadline.
func boundFor(t *testing.T, d time.Duration) time.Duration {
	if end, ok := t.Deadline(); ok {
		if left := time.Until(end) - 10*time.Second; left < d {
			d = max(left, 5*time.Second)
		}
	}
	return d
}

// runBounded runs the suite (runner: its command, npmtest.Conformance) in a process group of its own and kills the
// whole group when bound passes: the runner waits for the pipes of the
// client it started, so killing the runner alone is not enough. Whatever is
// left of the group when the runner has exited is killed too.
func runBounded(t *testing.T, runner, args []string, bound time.Duration) outcome {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), bound)
	defer cancel()
	var stdout, stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, runner[0], append(runner[1:len(runner):len(runner)], args...)...)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	cmd.Env = append(os.Environ(), "NO_COLOR=1")
	ownGroup(cmd)
	cmd.Cancel = func() error { return killGroup(cmd) }
	cmd.WaitDelay = waitDelay

	start := time.Now()
	err := cmd.Run()
	o := outcome{elapsed: time.Since(start), exitCode: -1}
	if cmd.Process != nil {
		_ = killGroup(cmd) // stragglers; an empty group is fine
	}
	o.stdout, o.stderr = stdout.Bytes(), stderr.Bytes()
	o.timedOut = errors.Is(ctx.Err(), context.DeadlineExceeded)
	if cmd.ProcessState != nil {
		o.exitCode = cmd.ProcessState.ExitCode()
	}
	var exitErr *exec.ExitError
	if err != nil && !errors.As(err, &exitErr) {
		o.err = err
	}
	return o
}

var (
	ansi       = regexp.MustCompile(`\x1b\[[0-9;]*[A-Za-z]`)
	passedLine = regexp.MustCompile(`(?m)^\s*Passed:\s*(\d+)/(\d+)\b`)
)

// parsePassed reads the last "Passed: X/Y" summary of the runner's output.
func parsePassed(out []byte) (passed, total int, ok bool) {
	m := passedLine.FindAllSubmatch(ansi.ReplaceAll(out, nil), -1)
	if len(m) == 0 {
		return 0, 0, false
	}
	last := m[len(m)-1]
	passed, err1 := strconv.Atoi(string(last[1]))
	total, err2 := strconv.Atoi(string(last[2]))
	if err1 != nil || err2 != nil {
		return 0, 0, false
	}
	return passed, total, true
}

// logSaved logs the files the runner saved with -o: the checks as JSON
// and the client's own stdout and stderr.
func logSaved(t *testing.T, dir string) {
	t.Helper()
	_ = filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return nil
		}
		rel, _ := filepath.Rel(dir, path)
		t.Logf("%s:\n%s", rel, b)
		return nil
	})
}

// shellQuote quotes s for /bin/sh: the runner passes --command to a shell.
func shellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

func TestParsePassed(t *testing.T) {
	cases := []struct {
		out           string
		passed, total int
		ok            bool
	}{
		{"Test Results:\nPassed: 1/1, 0 failed, 0 warnings\n", 1, 1, true},
		{"Test Results:\nPassed: 0/0, 0 failed, 0 warnings\n\n✅ OVERALL: PASSED\n", 0, 0, true},
		{"\x1b[32mPassed: 2/3, 1 failed, 0 warnings\x1b[0m\n", 2, 3, true},
		{"Passed: 1/1\nlater\nPassed: 3/3, 0 failed\n", 3, 3, true},
		{"Client exited with code 3\n", 0, 0, false},
		{"", 0, 0, false},
	}
	for _, c := range cases {
		p, n, ok := parsePassed([]byte(c.out))
		if p != c.passed || n != c.total || ok != c.ok {
			t.Errorf("parsePassed(%q) = %d, %d, %t; want %d, %d, %t", c.out, p, n, ok, c.passed, c.total, c.ok)
		}
	}
}

func TestShellQuote(t *testing.T) {
	for in, want := range map[string]string{
		"/tmp/a b/client": `'/tmp/a b/client'`,
		"it's":            `'it'\''s'`,
		"$HOME":           `'$HOME'`,
	} {
		if got := shellQuote(in); got != want {
			t.Errorf("shellQuote(%q) = %s, want %s", in, got, want)
		}
	}
}
