package e2e

// The bundled cordis.yml, as someone meets it on a fresh clone: offline,
// no keys, the demo server served by the harness binary itself
// (process.execPath).

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/harness-go/harness/internal/testkit/fakellm"
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

	// The agent entry without DEEPSEEK_API_KEY: the harness boots clean,
	// the agent is ready with a note, and ask says in one line how to set
	// the key.
	r = harnessWith(t, rc, "status", "--wait", "3m")
	expectCode(t, r, 0)
	if !strings.Contains(r.stdout, "deepseek  agent  ready\n") || !strings.Contains(r.stdout, "no API key") {
		t.Errorf("status does not show the keyless agent\n%s", r)
	}
	r = harnessWith(t, rc, "ask", "hi")
	expectCode(t, r, 2)
	if want := `harness ask: agent entry "deepseek" has no API key: set DEEPSEEK_API_KEY (export DEEPSEEK_API_KEY=…) and run again` + "\n"; r.stderr != want {
		t.Errorf("ask without a key: stderr %q, want %q\n%s", r.stderr, want, r)
	}

	// DEEPSEEK_BASE_URL points the agent at our fake server: the model
	// calls the demo calculator and answers.
	srv := fakellm.Start(t,
		fakellm.Call(fakellm.ToolCallSpec{ID: "c1", Name: "mcp__demo__calc", Arguments: `{"expression":"6*7"}`}),
		fakellm.Say("6*7 = 42"))
	fake := rc
	fake.env = append(slices.Clone(rc.env), "DEEPSEEK_BASE_URL="+srv.URL)
	r = harnessWith(t, fake, "ask", "what is 6*7? use the calculator", "--wait", "3m")
	expectCode(t, r, 0)
	if r.stdout != "6*7 = 42\n" {
		t.Errorf("ask printed %q\n%s", r.stdout, r)
	}
	for _, want := range []string{`→ mcp__demo__calc {"expression":"6*7"}` + "\n", "← 42\n"} {
		if !strings.Contains(r.stderr, want) {
			t.Errorf("stderr lacks %q\n%s", want, r)
		}
	}
	if got := srv.Wait(2, waitTimeout).Last(); got.Role != "tool" || got.Content != "42" {
		t.Errorf("the calculator's result sent back: %+v", got)
	}
}
