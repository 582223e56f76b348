package cli

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/harness-go/harness/host"
	"github.com/harness-go/harness/internal/testkit/hosttest"
)

// shaky is a test plugin that is ready, then goes reconnecting when its
// config says so (its server went away), or fails to start. It reloads make
// before break, so an edit to fail leaves the old instance serving, with a
// note.
type shaky struct {
	Lost bool `yaml:"lost"`
	Fail bool `yaml:"fail"`
}

func (p *shaky) Apply(ctx *host.Context) error {
	if p.Fail {
		return errors.New("the server could not start")
	}
	if p.Lost {
		return ctx.Go("lose", func(context.Context) { ctx.Reconnecting(errors.New("the server went away")) })
	}
	return nil
}

func (*shaky) TakeOver(host.Plugin) error { return nil }

func init() {
	host.Register(host.Kind{Name: "cli-test-shaky", MakeBeforeBreak: true, New: func() host.Plugin { return &shaky{} }})
}

// The exit decision of tools and status (the README's exit codes): an entry that is
// reconnecting, or failed, or whose reload failed while the previous
// instance serves, makes it 1; call ignores one that reconnects or a failed
// reload (it cares about its own tool); an entry that serves is no problem.
func TestReportProblems(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name             string
		config           string
		state            host.State
		reload           string // a config loaded next, whose instance fails to start
		ignoreReconnects bool
		bad              bool
		says             string
	}{
		{"ready", "{}", host.Ready, "", false, false, ""},
		{"reconnecting", "{lost: true}", host.Reconnecting, "", false, true, `entry "a" is reconnecting: `},
		{"reconnecting, for call", "{lost: true}", host.Reconnecting, "", true, false, ""},
		{"failed", "{fail: true}", host.Failed, "", true, true, `entry "a" failed: `},
		{"reload failed", "{}", host.Ready, "{fail: true}", false, true,
			`entry "a": reload failed: apply: the server could not start; the previous instance is still serving`},
		{"reload failed, for call", "{}", host.Ready, "{fail: true}", true, false, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			h := hosttest.New(t, 5*time.Second)
			if err := h.Load("- id: a\n  name: cli-test-shaky\n  config: " + tc.config + "\n"); err != nil {
				t.Fatal(err)
			}
			h.WaitState("a", tc.state, 10*time.Second)
			if tc.reload != "" {
				if err := h.Load("- id: a\n  name: cli-test-shaky\n  config: " + tc.reload + "\n"); err != nil {
					t.Fatal(err)
				}
				h.WaitEntry("a", 10*time.Second, "the failed reload's note", func(e host.EntryStatus) bool { return e.Note != "" })
			}
			var stderr strings.Builder
			hs := &harness{o: &options{logFormat: "text"}, env: Env{Stderr: &stderr}, host: h.H, tools: h.Tools}
			if bad := hs.report(false, tc.ignoreReconnects); bad != tc.bad {
				t.Fatalf("report = %v, want %v; stderr:\n%s", bad, tc.bad, stderr.String())
			}
			if tc.says == "" && stderr.Len() > 0 || !strings.Contains(stderr.String(), tc.says) {
				t.Fatalf("stderr %q, want %q", stderr.String(), tc.says)
			}
		})
	}
}
