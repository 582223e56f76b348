package prompts_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"go.uber.org/goleak"

	"github.com/harness-go/harness/fiber"
	"github.com/harness-go/harness/plugins/prompts"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func prompt(server, name string, args ...prompts.Argument) prompts.Prompt {
	return prompts.Prompt{Server: server, RawName: name, Arguments: args,
		Get: func(_ context.Context, a map[string]string) (prompts.Result, error) {
			return prompts.Result{Messages: []prompts.Message{prompts.TextMessage("user", name+" "+a["x"])}}, nil
		}}
}

func TestRegistry(t *testing.T) {
	t.Parallel()
	r := prompts.New()
	f := fiber.New(context.Background(), "t")
	defer f.Dispose(context.Background())
	v0 := r.Version()
	set, err := r.Register(f, prompt("gh", "review"), prompt("gh", "a.b", prompts.Argument{Name: "x", Required: true}))
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(set.Names(), ","); got != "mcp__gh__review,mcp__gh__a_b_506b5e9b51cb" {
		t.Fatalf("names %q: the naming algorithm of tools", got)
	}
	if r.Version() != v0+1 {
		t.Fatal("one registration, not one event")
	}
	if _, err := r.Register(f, prompt("gh", "review")); !errors.Is(err, prompts.ErrConflict) {
		t.Fatalf("a name taken: %v", err)
	}
	if _, err := r.Get(context.Background(), "mcp__gh__nothing", nil); !errors.Is(err, prompts.ErrUnknown) {
		t.Fatalf("unknown: %v", err)
	}
	if _, err := r.Get(context.Background(), "mcp__gh__a_b_506b5e9b51cb", nil); err == nil || !strings.Contains(err.Error(), `"x" is required`) {
		t.Fatalf("a required argument missing: %v", err)
	}
	out, err := r.Get(context.Background(), "mcp__gh__a_b_506b5e9b51cb", map[string]string{"x": "1"})
	if err != nil || out.Messages[0].Text() != "a.b 1" {
		t.Fatalf("get = %+v, %v", out, err)
	}
	next, err := r.Replace(f, set, prompt("gh", "review"))
	if err != nil {
		t.Fatal(err)
	}
	if got := r.List(); len(got) != 1 || got[0].Name != "mcp__gh__review" || r.Count("gh") != 1 {
		t.Fatalf("after Replace: %+v", got)
	}
	_ = next.Release(context.Background())
	if r.Len() != 0 {
		t.Fatal("left after the release")
	}
}

func TestMessageText(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ content, want string }{
		{`{"type":"text","text":"hi"}`, "hi"},
		{`{"type":"image","data":"aGk=","mimeType":"image/png"}`, "[image: image/png, content discarded]"},
		{`{"type":"resource","resource":{"uri":"x://1","text":"body"}}`, "body"},
		{`{"type":"resource","resource":{"uri":"x://1","blob":"aGk=","mimeType":"image/gif"}}`, "[resource x://1: image/gif, content discarded]"},
		{`{"type":"resource_link","uri":"x://2","name":"two"}`, "[resource link: x://2]"},
		{`{"type":"hologram"}`, "[unsupported content type: hologram]"},
	} {
		if got := (prompts.Message{Role: "user", Content: []byte(tc.content)}).Text(); got != tc.want {
			t.Errorf("Text(%s) = %q, want %q", tc.content, got, tc.want)
		}
	}
}

// A native prompt (no server) is published under its own name, as a native
// tool is: the name must keep the function-name contract, and it meets the
// public names of servers' prompts in one namespace.
func TestNativePrompts(t *testing.T) {
	t.Parallel()
	r := prompts.New()
	f := fiber.New(context.Background(), "t")
	defer f.Dispose(context.Background())
	set, err := r.Register(f, prompt("", "test_simple_prompt"), prompt("", "a-b"))
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(set.Names(), ","); got != "test_simple_prompt,a-b" {
		t.Fatalf("names %q: a native prompt keeps its name", got)
	}
	p, ok := r.Lookup("test_simple_prompt")
	if !ok || p.RawName != "test_simple_prompt" || p.Server != "" {
		t.Fatalf("lookup = %+v, %t", p, ok)
	}
	if got := string(p.JSON()); got != `{"name":"test_simple_prompt"}` {
		t.Fatalf("JSON = %s: no server for a native prompt", got)
	}
	for _, bad := range []string{"a.b", "has space", strings.Repeat("x", 65), "é"} {
		if _, err := r.Register(f, prompt("", bad)); err == nil || !strings.Contains(err.Error(), "native prompt") {
			t.Errorf("the native name %q: %v", bad, err)
		}
	}
	if _, err := r.Register(f, prompt("", strings.Repeat("x", 64))); err != nil {
		t.Errorf("64 characters: %v", err)
	}
	// A native name that is a server prompt's public name is taken.
	if _, err := r.Register(f, prompt("gh", "review")); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Register(f, prompt("", "mcp__gh__review")); !errors.Is(err, prompts.ErrConflict) {
		t.Fatalf("a native prompt under a taken name: %v", err)
	}
	if _, err := r.Register(f, prompt("", "a-b")); !errors.Is(err, prompts.ErrConflict) {
		t.Fatalf("a native name twice: %v", err)
	}
	out, err := r.Get(context.Background(), "test_simple_prompt", map[string]string{"x": "1"})
	if err != nil || out.Messages[0].Text() != "test_simple_prompt 1" {
		t.Fatalf("get = %+v, %v", out, err)
	}
}

// CompleteArgument asks the prompt's Complete with MCP's params — the
// prompt by its public name, the argument and its value so far, the given
// arguments as the context — and reads the completion of its result.
func TestCompleteArgument(t *testing.T) {
	t.Parallel()
	r := prompts.New()
	f := fiber.New(context.Background(), "t")
	defer f.Dispose(context.Background())
	var asked string
	p := prompt("gh", "review", prompts.Argument{Name: "repo"}, prompts.Argument{Name: "pr"})
	p.Complete = func(_ context.Context, params json.RawMessage) (json.RawMessage, error) {
		asked = string(params)
		return json.RawMessage(`{"completion":{"values":["12","13"],"total":40,"hasMore":true}}`), nil
	}
	bad := prompt("gh", "bad")
	bad.Complete = func(context.Context, json.RawMessage) (json.RawMessage, error) {
		return json.RawMessage(`{"completion":{"values":"12"}}`), nil
	}
	if _, err := r.Register(f, p, bad, prompt("gh", "plain")); err != nil {
		t.Fatal(err)
	}
	got, err := r.CompleteArgument(context.Background(), "mcp__gh__review", "pr", "1", map[string]string{"repo": "harness"})
	if err != nil || !slices.Equal(got.Values, []string{"12", "13"}) || got.Total != 40 || !got.HasMore {
		t.Fatalf("CompleteArgument = %+v, %v", got, err)
	}
	const want = `{"argument":{"name":"pr","value":"1"},"context":{"arguments":{"repo":"harness"}},"ref":{"name":"mcp__gh__review","type":"ref/prompt"}}`
	if asked != want {
		t.Errorf("params %s, want %s", asked, want)
	}
	if _, err := r.CompleteArgument(context.Background(), "mcp__gh__review", "repo", "", nil); err != nil || strings.Contains(asked, "context") {
		t.Errorf("no arguments given: params %s (no context), err %v", asked, err)
	}
	if got, err := r.CompleteArgument(context.Background(), "mcp__gh__plain", "x", "", nil); err != nil || len(got.Values) != 0 {
		t.Errorf("a prompt without completion: %+v, %v", got, err)
	}
	if _, err := r.CompleteArgument(context.Background(), "mcp__gh__bad", "x", "", nil); err == nil || !strings.Contains(err.Error(), "not a completion") {
		t.Errorf("a result that is not a completion: %v", err)
	}
	if _, err := r.CompleteArgument(context.Background(), "mcp__gh__nothing", "x", "", nil); !errors.Is(err, prompts.ErrUnknown) {
		t.Errorf("unknown: %v", err)
	}
}

// CompleteWith answers a native prompt's completion from a function: the
// argument, its value and the given arguments reach it, and no more than
// MCP's 100 values go back, the rest counted.
func TestCompleteWith(t *testing.T) {
	t.Parallel()
	r := prompts.New()
	f := fiber.New(context.Background(), "t")
	defer f.Dispose(context.Background())
	var got string
	p := prompt("", "many", prompts.Argument{Name: "n"})
	p.Complete = prompts.CompleteWith(func(arg, value string, given map[string]string) []string {
		got = fmt.Sprintf("%s %q %v", arg, value, given)
		if value == "none" {
			return nil
		}
		out := make([]string, 150)
		for i := range out {
			out[i] = fmt.Sprint(i)
		}
		return out
	})
	if _, err := r.Register(f, p); err != nil {
		t.Fatal(err)
	}
	c, err := r.CompleteArgument(context.Background(), "many", "n", "1", map[string]string{"k": "v"})
	if err != nil || len(c.Values) != 100 || c.Values[99] != "99" || c.Total != 150 || !c.HasMore {
		t.Fatalf("CompleteArgument = %d values, total %d, hasMore %v, %v", len(c.Values), c.Total, c.HasMore, err)
	}
	if got != `n "1" map[k:v]` {
		t.Errorf("suggest got %s", got)
	}
	if c, err := r.CompleteArgument(context.Background(), "many", "n", "none", nil); err != nil || c.Values == nil || len(c.Values) != 0 || c.HasMore {
		t.Errorf("no values: %+v, %v", c, err)
	}
}
