package e2e

// The bundled cordis.yml, as someone meets it on a fresh clone: offline,
// no keys, `go run` compiling the demo server.

import (
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestBundledConfig(t *testing.T) {
	t.Parallel()
	conf := filepath.Join(repoRoot, "cordis.yml")
	// Offline: the go command may not fetch anything.
	rc := runConfig{dir: repoRoot, env: []string{"GOPROXY=off"}, timeout: 4 * time.Minute}

	r := harnessWith(t, rc, "validate", "-c", conf)
	expectCode(t, r, 0)

	r = harnessWith(t, rc, "tools", "-c", conf, "--wait", "3m")
	expectCode(t, r, 0)
	names := toolNames(lines(r.stdout))
	for _, want := range []string{"echo", "clock", "mcp__demo__calc", "mcp__demo__base64", "mcp__demo__hash",
		"mcp__demo__now", "mcp__demo__uuid", "mcp__demo__wordcount"} {
		if !contains(names, want) {
			t.Errorf("the bundled cordis.yml does not provide %s\n%s", want, r)
		}
	}
	for _, n := range names {
		if n != "echo" && n != "clock" && !strings.HasPrefix(n, "mcp__demo__") {
			t.Errorf("unexpected tool %q\n%s", n, r)
		}
	}

	// Run in the repository root without -c: the default ./cordis.yml.
	r = harnessWith(t, rc, "call", "mcp__demo__calc", `{"expression":"6*7"}`, "--wait", "3m")
	expectCode(t, r, 0)
	if r.stdout != "42\n" {
		t.Errorf("calc 6*7 printed %q, want 42\n%s", r.stdout, r)
	}
}
