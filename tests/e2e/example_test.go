package e2e

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/harness-go/harness/internal/testkit/proctest"
)

// examples/sibling is a module of its own that builds the harness through
// its public entry point (harnesscmd.Main) with a kind of its own, greet,
// and the bundled kinds: its binary lists and calls greet's tool beside
// echo's. The build shares the go build cache with the harness binary's
// (same flags), so it compiles the example's two packages and links.
func TestExampleModuleAddsItsOwnKind(t *testing.T) {
	t.Parallel()
	bin := filepath.Join(t.TempDir(), "sibling")
	args := []string{"build"}
	if raceEnabled {
		args = append(args, "-race")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	if err := proctest.GoBuild(ctx, filepath.Join(repoRoot, "examples", "sibling"), append(args, "-o", bin, ".")); err != nil {
		t.Fatalf("%v\n(a dependency the harness gained needs `go mod tidy` in examples/sibling too)", err)
	}
	dir := t.TempDir()
	writeConfig(t, dir, "- {id: hello, name: greet, config: {greeting: Hi}}\n- {id: echo, name: echo}\n")
	run := func(args ...string) result {
		t.Helper()
		r := proctest.Run(t, proctest.Command{Path: bin, Args: args, Dir: dir, Env: environ(nil, nil), Timeout: runTimeout})
		return result{args: args, stdout: r.Stdout, stderr: r.Stderr, code: r.Code}
	}

	r := run("tools")
	expectCode(t, r, 0)
	var names []string
	for _, line := range strings.Split(strings.TrimSpace(r.stdout), "\n") {
		names = append(names, strings.Fields(line)[0])
	}
	if got := strings.Join(names, " "); got != "clock echo greet" {
		t.Errorf("tools lists %q, want clock echo greet\n%s", got, r)
	}
	r = run("call", "greet", `{"name":"Ada"}`)
	expectCode(t, r, 0)
	if r.stdout != "Hi, Ada!\n" {
		t.Errorf("call greet printed %q, want %q\n%s", r.stdout, "Hi, Ada!\n", r)
	}
	r = run("call", "greet", `{}`)
	expectCode(t, r, 1)
	if r.stdout != "Error: greet needs a name\n" {
		t.Errorf("call greet without a name printed %q\n%s", r.stdout, r)
	}
	r = run("validate")
	expectCode(t, r, 0)
}
