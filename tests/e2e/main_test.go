package e2e

import (
	"cmp"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/harness-go/harness/internal/testkit/proctest"
)

// The binaries TestMain builds, and the module root they come from.
var (
	repoRoot   string
	harnessBin string
	demoBin    string
	fixtureBin string
)

// runTimeout bounds one one-shot harness command.
const runTimeout = 90 * time.Second

// waitTimeout bounds one wait for an expected line.
const waitTimeout = 60 * time.Second

func TestMain(m *testing.M) { os.Exit(testMain(m)) }

func testMain(m *testing.M) int {
	root, err := proctest.ModuleRoot()
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2e:", err)
		return 1
	}
	repoRoot = root
	dir, err := os.MkdirTemp("", "harness-e2e-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2e:", err)
		return 1
	}
	defer os.RemoveAll(dir)
	if err := buildBinaries(root, dir); err != nil {
		fmt.Fprintln(os.Stderr, "e2e:", err)
		return 1
	}
	harnessBin = filepath.Join(dir, "harness")
	demoBin = filepath.Join(dir, "mcp-demo")
	fixtureBin = filepath.Join(dir, "mcpfixture")
	return printed.Report(os.Stderr, "e2e", m.Run(), testing.Verbose())
}

// printed is the sweep of the package: every secret made with secret(),
// every output of a harness process (internal/testkit/proctest.Sweep).
var printed proctest.Sweep

// buildBinaries builds the harness (with -race when the tests run with it)
// and the two servers, concurrently.
func buildBinaries(root, dir string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	harnessArgs := []string{"build"}
	if raceEnabled {
		harnessArgs = append(harnessArgs, "-race")
	}
	harnessArgs = append(harnessArgs, "-o", filepath.Join(dir, "harness"), "./cmd/harness")
	return proctest.GoBuild(ctx, root, harnessArgs,
		[]string{"build", "-o", dir + string(filepath.Separator), "./cmd/mcp-demo", "./tests/fixtures/mcpfixture"})
}

// result is what one harness command did.
type result struct {
	args   []string
	stdout string
	stderr string
	code   int
}

func (r result) String() string {
	return fmt.Sprintf("harness %s\nexit code %d\n--- stdout ---\n%s--- stderr ---\n%s",
		strings.Join(r.args, " "), r.code, r.stdout, r.stderr)
}

// runConfig says how to run one harness command.
type runConfig struct {
	dir     string   // working directory
	env     []string // KEY=VALUE on top of the test's environment
	unset   []string // variables removed from the environment
	stdin   string
	timeout time.Duration
}

// environ is the test's environment with unset removed and env on top. The
// variables the seeds' example and the bundled agent read are never
// inherited: no test talks to a real model API.
func environ(env, unset []string) []string {
	drop := map[string]bool{"GITHUB_TOKEN": true, "MCP_TOKEN": true, "DEEPSEEK_API_KEY": true, "DEEPSEEK_BASE_URL": true}
	for _, k := range unset {
		drop[k] = true
	}
	for _, kv := range env {
		k, _, _ := strings.Cut(kv, "=")
		drop[k] = true
	}
	var out []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		if !drop[k] && k != "GORACE" {
			out = append(out, kv)
		}
	}
	if raceEnabled && !drop["GORACE"] {
		// A race-enabled binary sleeps a second before exiting unless told
		// otherwise; reports are printed when a race is found, not then.
		out = append(out, "GORACE="+strings.TrimSpace(os.Getenv("GORACE")+" atexit_sleep_ms=0"))
	}
	return append(out, env...)
}

// harness runs the harness binary in dir and returns what it did.
func harness(t *testing.T, dir string, args ...string) result {
	t.Helper()
	return harnessWith(t, runConfig{dir: dir}, args...)
}

func harnessWith(t *testing.T, rc runConfig, args ...string) result {
	t.Helper()
	r := proctest.Run(t, proctest.Command{
		Path: harnessBin, Args: args, Dir: rc.dir, Env: environ(rc.env, rc.unset),
		Stdin: strings.NewReader(rc.stdin), Timeout: cmp.Or(rc.timeout, runTimeout),
		Record: func(stdout, stderr string) {
			printed.Output(fmt.Sprintf("`harness %s` in %s", strings.Join(args, " "), t.Name()), stdout+"\n"+stderr)
		},
	})
	return result{args: args, stdout: r.Stdout, stderr: r.Stderr, code: r.Code}
}

// expectCode fails the test unless r exited with code.
func expectCode(t *testing.T, r result, code int) {
	t.Helper()
	if r.code != code {
		t.Fatalf("exit code %d, want %d\n%s", r.code, code, r)
	}
}

// writeConfig writes dir/cordis.yml the way editors save: a temporary file
// renamed into place, so a watcher never sees half a file.
func writeConfig(t *testing.T, dir, content string) string {
	t.Helper()
	return writeFile(t, filepath.Join(dir, "cordis.yml"), content)
}

func writeFile(t *testing.T, path, content string) string {
	t.Helper()
	tmp := filepath.Join(filepath.Dir(path), "."+filepath.Base(path)+".tmp")
	if err := os.WriteFile(tmp, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
	return path
}

// yq quotes s as a YAML single-quoted scalar.
func yq(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }

// yamlList is a YAML flow sequence of single-quoted strings.
func yamlList(items ...string) string {
	q := make([]string, len(items))
	for i, s := range items {
		q[i] = yq(s)
	}
	return "[" + strings.Join(q, ", ") + "]"
}

// fixtureEntry is a cordis.yml entry running our stdio fixture server.
func fixtureEntry(id, serverName string, args ...string) string {
	return stdioEntry(id, "mcp-client", serverName, fixtureBin, args...)
}

// stdioEntry is a cordis.yml entry for any stdio MCP server.
func stdioEntry(id, kind, serverName, command string, args ...string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "- id: %s\n  name: %s\n  config:\n    serverName: %s\n    transport: stdio\n    command: %s\n",
		id, yq(kind), serverName, yq(command))
	if len(args) > 0 {
		fmt.Fprintf(&b, "    args: %s\n", yamlList(args...))
	}
	return b.String()
}

// lines splits output into lines, without a trailing empty one.
func lines(s string) []string {
	s = strings.TrimSuffix(s, "\n")
	if s == "" {
		return nil
	}
	return strings.Split(s, "\n")
}

// toolNames is the first field of every line of a tool listing.
func toolNames(listing []string) []string {
	var names []string
	for _, l := range listing {
		name, _, _ := strings.Cut(l, "  ")
		names = append(names, name)
	}
	return names
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
