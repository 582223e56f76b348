package agent_test

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/harness-go/harness/host"
	"github.com/harness-go/harness/internal/testkit/fakellm"
	"github.com/harness-go/harness/internal/testkit/hosttest"
	"github.com/harness-go/harness/plugins/agent"
	_ "github.com/harness-go/harness/plugins/echo"
)

// newHost is a host with the tools service and the agents directory.
func newHost(t *testing.T) (*hosttest.Host, *agent.Directory) {
	t.Helper()
	h := hosttest.New(t, 10*time.Second)
	dir := agent.NewDirectory()
	h.H.Provide(agent.DirectoryService, dir)
	return h, dir
}

// waitAgent waits until the directory holds id and returns it.
func waitAgent(t *testing.T, dir *agent.Directory, id string, gone *agent.Agent) *agent.Agent {
	t.Helper()
	deadline := time.NewTimer(waitFor)
	defer deadline.Stop()
	for {
		ch := dir.Changed()
		if a, ok := dir.Get(id); ok && a != gone {
			return a
		}
		select {
		case <-ch:
		case <-deadline.C:
			t.Fatalf("no agent %q in the directory", id)
		}
	}
}

func agentEntry(id, url, extra string) string {
	return fmt.Sprintf("- id: %s\n  name: agent\n  config:\n    baseURL: %s\n%s", id, url, extra)
}

// An agent entry is ready at once and registers its agent under its id; a
// keyless entry for DeepSeek's API is ready too, with a note; disposing the
// entry removes the agent.
func TestEntryLifecycle(t *testing.T) {
	t.Parallel()
	h, dir := newHost(t)
	h.Setenv("TEST_KEY", "sk-from-the-environment-123")
	src := agentEntry("local", "http://127.0.0.1:1", "    model: qwen\n    apiKey: !!js process.env.TEST_KEY\n") +
		"- id: ds\n  name: agent\n  config:\n    apiKey: !!js process.env.UNSET_KEY\n"
	if err := h.Load(src); err != nil {
		t.Fatal(err)
	}
	h.Settle(waitFor)
	for _, id := range []string{"local", "ds"} {
		if e := h.Entry(id); e.State != host.Ready {
			t.Fatalf("entry %s is %s (%s)", id, e.State, e.Error)
		}
	}
	if ids := dir.IDs(); !slices.Equal(ids, []string{"ds", "local"}) {
		t.Fatalf("directory %v", ids)
	}
	ds, _ := dir.Get("ds")
	if info := ds.Info(); info.HasKey || !info.NeedsKey || info.Model != agent.DefaultModel || info.Endpoint != agent.DefaultBaseURL {
		t.Fatalf("ds info %+v", info)
	}
	st := h.Entry("ds").Details.(*agent.Status)
	if st.APIKey != "none" || !strings.Contains(st.Note, "no API key") {
		t.Fatalf("ds status %+v", st)
	}
	local := h.Entry("local").Details.(*agent.Status)
	if local.APIKey != "set" || local.Model != "qwen" {
		t.Fatalf("local status %+v", local)
	}
	// The key joined the host's secret set; the status never holds it.
	if !h.H.Secrets().Contains("key sk-from-the-environment-123") {
		t.Fatal("the apiKey is not in the secret set")
	}
	b, _ := json.Marshal(h.Entry("local").Details)
	if strings.Contains(string(b), "sk-from") {
		t.Fatalf("status JSON holds the key: %s", b)
	}
	if err := h.Load(agentEntry("local", "http://127.0.0.1:1", "    model: qwen\n")); err != nil {
		t.Fatal(err)
	}
	h.Settle(waitFor)
	if ids := dir.IDs(); !slices.Equal(ids, []string{"local"}) {
		t.Fatalf("directory after removing ds: %v", ids)
	}
}

func TestConfigChecks(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, config, want string
	}{
		{"unknown key", "    modle: x\n", "modle"},
		{"bad url", "    baseURL: ftp://x\n", "not an http:// or https:// URL"},
		{"credentials in the url", "    baseURL: https://u:p@x\n", "must not carry credentials"},
		{"thinking", "    thinking: medium\n", `"medium" is not one of off, on, low, high, max`},
		{"steps", "    maxSteps: 0\n", "maxSteps: must be at least 1"},
		{"parallel", "    maxParallelToolCalls: 0\n", "maxParallelToolCalls: must be at least 1"},
		{"temperature", "    temperature: 3\n", "outside 0 to 2"},
		{"retries", "    retries: -1\n", "retries: must be at least 0"},
		{"pattern", "    enabledTools: ['[']\n", "not a valid pattern"},
		{"empty model", "    model: ''\n", "model: must not be empty"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			h, _ := newHost(t)
			err := h.Load("- id: a\n  name: agent\n  config:\n" + tc.config)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want %q", err, tc.want)
			}
		})
	}
	t.Run("defaults", func(t *testing.T) {
		t.Parallel()
		c := agent.DefaultConfig()
		if err := c.Validate(); err != nil {
			t.Fatal(err)
		}
		if c.BaseURL != "https://api.deepseek.com" || c.Model != "deepseek-v4-flash" || c.MaxSteps != 50 || c.MaxParallelToolCalls != 10 ||
			c.ToolResultBytes != 100000 || c.MaxTools != 128 || c.RequestTimeoutMs != 60000 || c.StreamIdleTimeoutMs != 300000 || c.Retries != 5 ||
			c.Thinking != "" || c.MaxTokens != 0 || c.Temperature != nil {
			t.Fatalf("defaults %+v", c)
		}
	})
}

// An edit of cordis.yml between two steps of one turn changes the tools of
// the next step: the model calls a tool that exists only after the edit.
func TestEditBetweenSteps(t *testing.T) {
	t.Parallel()
	h, dir := newHost(t)
	gate := make(chan struct{})
	srv := fakellm.Start(t,
		fakellm.Reply{Gate: gate, Chunks: slices.Concat([]string{fakellm.CallDelta(0, "c1", "echo", `{"message":"before"}`)}, fakellm.Finish("tool_calls"))},
		fakellm.Call(fakellm.ToolCallSpec{ID: "c2", Name: "x_echo", Arguments: `{"message":"after"}`}),
		fakellm.Say("both worked"))
	base := "- id: echo\n  name: echo\n" + agentEntry("model", srv.URL, "")
	if err := h.Load(base); err != nil {
		t.Fatal(err)
	}
	h.Settle(waitFor)
	a := waitAgent(t, dir, "model", nil)

	var conv agent.Conversation
	var results []agent.Event
	done := make(chan error, 1)
	go func() {
		_, err := a.Run(context.Background(), &conv, "echo twice", func(e agent.Event) {
			if e.Type == agent.EventToolResult {
				results = append(results, e)
			}
		})
		done <- err
	}()
	first := srv.Wait(1, waitFor)
	if slices.Contains(first.ToolNames, "x_echo") {
		t.Fatal("x_echo before the edit")
	}
	// The edit lands while the first step is in flight.
	if err := h.Load(base + "- id: echo2\n  name: echo\n  config: {prefix: x_}\n"); err != nil {
		t.Fatal(err)
	}
	h.WaitTools("x_echo", waitFor, func(n []string) bool { return slices.Contains(n, "x_echo") })
	close(gate)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if second := srv.Wait(2, waitFor); !slices.Contains(second.ToolNames, "x_echo") || !slices.Contains(second.ToolNames, "echo") {
		t.Fatalf("the second step's tools: %v", second.ToolNames)
	}
	if len(results) != 2 || results[0].Text != "before" || results[1].Text != "after" || results[1].IsError {
		t.Fatalf("results %+v", results)
	}
	// The agent entry itself was untouched: the same instance.
	if b, _ := dir.Get("model"); b != a {
		t.Fatal("the agent was re-created by an edit of another entry")
	}
}

// An edit of the agent's own entry replaces the agent; the conversation,
// kept by the caller, goes on with the new one.
func TestConversationSurvivesAnEditOfTheEntry(t *testing.T) {
	t.Parallel()
	h, dir := newHost(t)
	srv := fakellm.Start(t, fakellm.Say("one"), fakellm.Say("two"))
	if err := h.Load(agentEntry("model", srv.URL, "    model: first\n")); err != nil {
		t.Fatal(err)
	}
	h.Settle(waitFor)
	a := waitAgent(t, dir, "model", nil)
	var conv agent.Conversation
	if _, err := a.Run(context.Background(), &conv, "hi", func(agent.Event) {}); err != nil {
		t.Fatal(err)
	}
	if err := h.Load(agentEntry("model", srv.URL, "    model: second\n")); err != nil {
		t.Fatal(err)
	}
	b := waitAgent(t, dir, "model", a)
	if _, err := b.Run(context.Background(), &conv, "again", func(agent.Event) {}); err != nil {
		t.Fatal(err)
	}
	r := srv.Wait(2, waitFor)
	if r.Model != "second" || len(r.Messages) != 3 || r.Messages[1].Content != "one" {
		t.Fatalf("second request: model %q messages %+v", r.Model, r.Messages)
	}
}
