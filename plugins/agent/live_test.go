//go:build live

// The live smoke test (docs/rfc/0004-agent.md): the agent against the real DeepSeek API.
// It is built only with the live tag, so CI never builds or skips it; run it
// by hand, with a key:
//
//	DEEPSEEK_API_KEY=sk-… go test -tags live -run TestLive -v ./plugins/agent
//
// DEEPSEEK_BASE_URL and DEEPSEEK_MODEL point it elsewhere.
package agent_test

import (
	"context"
	"encoding/json"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/harness-go/harness/fiber"
	"github.com/harness-go/harness/host/secret"
	"github.com/harness-go/harness/internal/testkit/testlog"
	"github.com/harness-go/harness/plugins/agent"
	"github.com/harness-go/harness/plugins/tools"
)

func TestLive(t *testing.T) {
	key := os.Getenv("DEEPSEEK_API_KEY")
	if key == "" {
		t.Fatal("the live test needs DEEPSEEK_API_KEY")
	}
	for _, thinking := range []string{agent.ThinkingOff, agent.ThinkingOn} {
		t.Run("thinking "+thinking, func(t *testing.T) {
			cfg := agent.DefaultConfig()
			cfg.APIKey, cfg.Thinking = key, thinking
			if v := os.Getenv("DEEPSEEK_BASE_URL"); v != "" {
				cfg.BaseURL = v
			}
			if v := os.Getenv("DEEPSEEK_MODEL"); v != "" {
				cfg.Model = v
			}
			if err := cfg.Validate(); err != nil {
				t.Fatal(err)
			}
			reg := tools.New()
			f := fiber.New(context.Background(), "live")
			t.Cleanup(func() { _ = f.Dispose(context.Background()) })
			add := tools.Tool{
				Name:        "add",
				Description: "Add two integers and return their sum.",
				Parameters:  json.RawMessage(`{"type":"object","properties":{"a":{"type":"integer"},"b":{"type":"integer"}},"required":["a","b"]}`),
				Execute: func(_ context.Context, args json.RawMessage) (tools.Result, error) {
					var in struct{ A, B int }
					if err := json.Unmarshal(args, &in); err != nil {
						return tools.Result{}, err
					}
					return tools.Result{Text: strconv.Itoa(in.A + in.B)}, nil
				},
			}
			if _, err := reg.Register(f, add); err != nil {
				t.Fatal(err)
			}
			set := secret.New()
			log, _ := testlog.New(t)
			a := agent.New(cfg, reg, agent.Options{ID: "live", Secrets: set, Logger: log, Life: context.Background()})
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
			defer cancel()

			// Two turns with tool calls: the second sends the first's
			// reasoning back, which DeepSeek checks in thinking mode.
			var conv agent.Conversation
			for _, turn := range []struct{ prompt, want string }{
				{"Use the add tool to add 17 and 25. Answer with the number only.", "42"},
				{"Now use the add tool to add 1 to that result. Answer with the number only.", "43"},
			} {
				var text strings.Builder
				calls := 0
				usage, err := a.Run(ctx, &conv, turn.prompt, func(e agent.Event) {
					switch e.Type {
					case agent.EventText:
						text.WriteString(e.Delta)
					case agent.EventToolCall:
						calls++
					}
				})
				if err != nil {
					t.Fatalf("%q: %v", turn.prompt, err)
				}
				if calls == 0 || !strings.Contains(text.String(), turn.want) || usage.PromptTokens == 0 {
					t.Fatalf("%q: %d tool calls, answer %q, usage %+v", turn.prompt, calls, text.String(), usage)
				}
				t.Logf("%q → %q (%d calls, %+v)", turn.prompt, text.String(), calls, usage)
			}
		})
	}
}
