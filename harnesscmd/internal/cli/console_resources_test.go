package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"testing"

	"github.com/harness-go/harness/fiber"
	"github.com/harness-go/harness/internal/testkit/fakellm"
	"github.com/harness-go/harness/plugins/prompts"
	"github.com/harness-go/harness/plugins/resources"
)

// resourceConsole is testConsole with a resources and a prompts registry
// holding one server's resources and one prompt.
func resourceConsole(t *testing.T) *console {
	t.Helper()
	c, _, _, _ := testConsole(true)
	f := fiber.New(context.Background(), "test")
	t.Cleanup(func() { _ = f.Dispose(context.Background()) })
	c.hs.resources, c.hs.prompts = resources.New(), prompts.New()
	text := "the notes"
	if _, err := c.hs.resources.Register(f, resources.Source{
		Server:    "docs",
		Resources: []resources.Resource{{URI: "file:///notes.md", Name: "notes"}, {URI: "file:///logo.png", Name: "logo"}},
		Templates: []resources.Template{{URITemplate: "gh://repos/{owner}/{repo}", Name: "repo"}, {URITemplate: "q://{+path}", Name: "query"}},
		Complete:  completeRepos,
		Read: func(_ context.Context, uri string) (resources.ReadResult, error) {
			if uri == "file:///logo.png" {
				return resources.ReadResult{Contents: []resources.Content{{URI: uri, MIMEType: "image/png", Blob: "aGk="}}}, nil
			}
			return resources.ReadResult{Contents: []resources.Content{{URI: uri, Text: &text}}}, nil
		},
	}); err != nil {
		t.Fatal(err)
	}
	c.hs.log = slog.New(slog.DiscardHandler)
	if _, err := c.hs.prompts.Register(f, prompts.Prompt{Server: "docs", RawName: "review",
		Arguments: []prompts.Argument{{Name: "file", Required: true}, {Name: "focus"}},
		Get:       func(context.Context, map[string]string) (prompts.Result, error) { return prompts.Result{}, nil },
		Complete:  completeReview}); err != nil {
		t.Fatal(err)
	}
	c.add(&command{name: "/prompt", args: "NAME [key=value ...]", help: "send a prompt", complete: func() []string { return promptNamesOf(c.hs.prompts.List()) }})
	return c
}

// completeReview is the review prompt's server answering
// completion/complete: files for file (a name with a space among them, and
// one that does not go on from the value typed), and for focus the areas
// of the file given in the request's context; an error for anything else.
func completeReview(_ context.Context, params json.RawMessage) (json.RawMessage, error) {
	var p struct {
		Ref      struct{ Type, Name string }
		Argument struct{ Name, Value string }
		Context  struct{ Arguments map[string]string }
	}
	if err := json.Unmarshal(params, &p); err != nil {
		return nil, err
	}
	if p.Ref.Type != "ref/prompt" || p.Ref.Name != "mcp__docs__review" {
		return nil, fmt.Errorf("ref %+v", p.Ref)
	}
	var values []string
	switch p.Argument.Name {
	case "file":
		for _, v := range []string{"main.go", "main_test.go", "my notes.md", "README.md"} {
			if strings.HasPrefix(v, p.Argument.Value) || v == "README.md" {
				values = append(values, v)
			}
		}
	case "focus":
		if f := p.Context.Arguments["file"]; f != "" {
			values = []string{"errors-in-" + f, "tests-of-" + f}
		}
	default:
		return nil, errors.New("no such argument")
	}
	b, _ := json.Marshal(map[string]any{"completion": map[string]any{"values": values}})
	return b, nil
}

// completeRepos is the docs server answering completion/complete of its
// repo template: owners, and an owner's repos (one with a space, one that
// needs escaping).
func completeRepos(_ context.Context, params json.RawMessage) (json.RawMessage, error) {
	var p struct {
		Ref      struct{ Type, URI string }
		Argument struct{ Name, Value string }
		Context  struct{ Arguments map[string]string }
	}
	if err := json.Unmarshal(params, &p); err != nil {
		return nil, err
	}
	if p.Ref.Type != "ref/resource" || p.Ref.URI != "gh://repos/{owner}/{repo}" {
		return nil, fmt.Errorf("ref %+v", p.Ref)
	}
	var values []string
	switch p.Argument.Name {
	case "owner":
		values = []string{"harness-go", "hashicorp", "golang"}
	case "repo":
		if p.Context.Arguments["owner"] == "harness-go" {
			values = []string{"harness", "hub", "my repo", "c++"}
		}
	}
	var out []string
	for _, v := range values {
		if strings.HasPrefix(v, p.Argument.Value) {
			out = append(out, v)
		}
	}
	b, _ := json.Marshal(map[string]any{"completion": map[string]any{"values": out}})
	return b, nil
}

func TestConsoleResourceCompletion(t *testing.T) {
	t.Parallel()
	c := resourceConsole(t)
	for _, tc := range []struct {
		name, before string
		want         []string
		word         string
	}{
		{"servers after @", "look at @d", []string{"@docs:"}, "@d"},
		{"@ as the first word", "@", []string{"@docs:"}, "@"},
		{"uris of the server", "look at @docs:file:///n", []string{"@docs:file:///notes.md"}, "@docs:file:///n"},
		{"every uri", "@docs:", []string{"@docs:file:///logo.png", "@docs:file:///notes.md"}, "@docs:"},
		// Inside a URI a template makes: the variable typed, with those
		// before it as the context, its values escaped as the template
		// would expand them.
		{"a template's first variable", "@docs:gh://repos/ha", []string{"@docs:gh://repos/harness-go", "@docs:gh://repos/hashicorp"}, "@docs:gh://repos/ha"},
		{"the next variable, in the context of the first", "@docs:gh://repos/harness-go/", []string{"@docs:gh://repos/harness-go/c%2B%2B", "@docs:gh://repos/harness-go/harness", "@docs:gh://repos/harness-go/hub", "@docs:gh://repos/harness-go/my%20repo"}, "@docs:gh://repos/harness-go/"},
		{"a value typed escaped", "@docs:gh://repos/harness-go/my%20", []string{"@docs:gh://repos/harness-go/my%20repo"}, "@docs:gh://repos/harness-go/my%20"},
		{"not inside a literal part", "@docs:gh://rep", nil, "@docs:gh://rep"},
		{"an unknown server", "@nope:", nil, "@nope:"},
		{"a word without @", "look at d", nil, ""},
		{"prompt names", "/prompt mcp__docs__r", []string{"mcp__docs__review"}, "mcp__docs__r"},
		{"argument names", "/prompt mcp__docs__review ", []string{"file=", "focus="}, ""},
		{"arguments not given yet", "/prompt mcp__docs__review file=a.go f", []string{"focus="}, "f"},
		// Values: the server's, those that go on from what is typed and fit
		// in one word; the arguments given go as the request's context.
		{"values of an argument", "/prompt mcp__docs__review file=ma", []string{"file=main.go", "file=main_test.go"}, "file=ma"},
		{"every value", "/prompt mcp__docs__review file=", []string{"file=main.go", "file=main_test.go", "file=README.md"}, "file="},
		{"values in the context of the others", "/prompt mcp__docs__review file=a.go focus=", []string{"focus=errors-in-a.go", "focus=tests-of-a.go"}, "focus="},
		{"no value the server does not suggest", "/prompt mcp__docs__review file=zz", nil, "file=zz"},
		{"no values of an argument the prompt has not", "/prompt mcp__docs__review other=", nil, "other="},
		{"no arguments of an unknown prompt", "/prompt nope ", nil, ""},
	} {
		got, word := c.complete(tc.before)
		if !slices.Equal(got, tc.want) || word != tc.word {
			t.Errorf("%s: complete(%q) = %q, %q; want %q, %q", tc.name, tc.before, got, word, tc.want, tc.word)
		}
	}
}

func TestConsoleAttachMentions(t *testing.T) {
	t.Parallel()
	c := resourceConsole(t)
	got, err := c.attachMentions(context.Background(), "summarize @docs:file:///notes.md, and mail me@example.com:25 or @other:x")
	if err != nil {
		t.Fatal(err)
	}
	want := "summarize @docs:file:///notes.md, and mail me@example.com:25 or @other:x\n\n[resource @docs:file:///notes.md]\nthe notes"
	if got != want {
		t.Fatalf("got %q\nwant %q", got, want)
	}
	got, _ = c.attachMentions(context.Background(), "@docs:file:///logo.png")
	if !strings.HasSuffix(got, "[binary content: image/png, 2 bytes, not attached]") {
		t.Fatalf("binary: %q", got)
	}
	if got, _ := c.attachMentions(context.Background(), "plain words"); got != "plain words" {
		t.Fatalf("a line without a mention changed: %q", got)
	}
}

// TestConsolePromptIsTheNextTurn: /prompt sends the rendered prompt to the
// agent; @server:uri in a plain line attaches the resource's text.
func TestConsolePromptIsTheNextTurn(t *testing.T) {
	t.Parallel()
	srv := fakellm.Start(t, fakellm.Say("first"), fakellm.Say("second"))
	config := agentEntry("a", srv.URL) + echoConfig
	s := start(t, config, false)
	s.send("/prompt repeat message=hello")
	s.out.waitFor(t, "first")
	s.send("what does @echo:echo://about say?")
	s.out.waitFor(t, "second")
	s.send("/prompt repeat")
	s.errOut.waitFor(t, `needs the argument "message"`)
	s.send("/quit")
	if code := s.exit(); code != 0 {
		t.Fatalf("exit %d", code)
	}
	reqs := srv.Requests()
	if len(reqs) != 2 {
		t.Fatalf("%d requests", len(reqs))
	}
	if got := reqs[0].Last().Content; got != `Call the tool echo with the message "hello", and tell me what it answered.` {
		t.Fatalf("the prompt's turn: %q", got)
	}
	if got := reqs[1].Last().Content; !strings.HasPrefix(got, "what does @echo:echo://about say?\n\n[resource @echo:echo://about]\nThe echo plugin registers") {
		t.Fatalf("the mention's turn: %q", got)
	}
}

func TestTemplateVariableAt(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		template, typed string
		want            string // "arg value given", or "" when not in a variable
	}{
		{"file:///{path}", "file:///", `path "" map[]`},
		{"file:///{path}", "file:///sr", `path "sr" map[]`},
		{"gh://repos/{owner}/{repo}", "gh://repos/a/b", `repo "b" map[owner:a]`},
		{"gh://repos/{owner}/{repo}", "gh://repos/a%20b", `owner "a%20b" map[]`},
		{"gh://repos/{owner}/{repo}", "gh://repos/a%20b/", `repo "" map[owner:a b]`},
		{"gh://repos/{owner}/{repo}/issues", "gh://repos/a/b/is", ""}, // in the last literal
		{"gh://repos/{owner}", "gh://rep", ""},
		{"gh://repos/{owner}", "other://", ""},
		{"q://{+path}", "q://x", ""}, // an operator
		{"q://{a,b}", "q://x", ""},   // a list
		{"plain://uri", "plain://", ""},
	} {
		arg, value, given, ok := templateVariableAt(tc.template, tc.typed)
		got := ""
		if ok {
			got = fmt.Sprintf("%s %q %v", arg, value, given)
		}
		if got != tc.want {
			t.Errorf("templateVariableAt(%q, %q) = %s, want %s", tc.template, tc.typed, got, tc.want)
		}
	}
	if got := escapeSimple("a b/c~_-.é"); got != "a%20b%2Fc~_-.%C3%A9" {
		t.Errorf("escapeSimple = %s", got)
	}
}
