package tools_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/harness-go/harness/fiber"
	"github.com/harness-go/harness/host"
	"github.com/harness-go/harness/internal/testkit/testlog"
	"github.com/harness-go/harness/plugins/tools"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// raceEnabled is set by race_test.go when the race detector is on.
var raceEnabled bool

// --- helpers ------------------------------------------------------------------

// newFiber returns a root fiber disposed when the test ends.
func newFiber(t testing.TB, name string) *fiber.Fiber {
	t.Helper()
	f := fiber.New(context.Background(), name)
	t.Cleanup(func() {
		if err := f.Dispose(context.Background()); err != nil {
			t.Errorf("dispose %s: %v", name, err)
		}
	})
	return f
}

func dispose(t testing.TB, f *fiber.Fiber) {
	t.Helper()
	if err := f.Dispose(context.Background()); err != nil {
		t.Fatalf("dispose %s: %v", f.Name(), err)
	}
}

// says returns an executor that answers text.
func says(text string) tools.Executor {
	return func(context.Context, json.RawMessage) (tools.Result, error) {
		return tools.Result{Text: text}, nil
	}
}

// tool returns a valid tool named name that answers its own name.
func tool(name string) tools.Tool {
	return tools.Tool{Name: name, Description: "the " + name + " tool", Execute: says(name)}
}

func mustRegister(t testing.TB, r *tools.Registry, f *fiber.Fiber, batch ...tools.Tool) fiber.Disposer {
	t.Helper()
	release, err := r.Register(f, batch...)
	if err != nil {
		t.Fatalf("Register: %v", err)
	}
	if release == nil {
		t.Fatal("Register returned a nil release function")
	}
	return release
}

func release(t testing.TB, rel fiber.Disposer) {
	t.Helper()
	if err := rel(context.Background()); err != nil {
		t.Fatalf("release: %v", err)
	}
}

func wantNames(t testing.TB, r *tools.Registry, want ...string) {
	t.Helper()
	if want == nil {
		want = []string{}
	}
	if got := r.Names(); !slices.Equal(got, want) {
		t.Fatalf("Names() = %q, want %q", got, want)
	}
}

func closed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

// modelTool is one element of the function-calling array.
type modelTool struct {
	Type     string `json:"type"`
	Function struct {
		Name        string          `json:"name"`
		Description string          `json:"description"`
		Parameters  json.RawMessage `json:"parameters"`
	} `json:"function"`
}

// parseModel decodes ModelJSON strictly as the function-calling array.
func parseModel(t testing.TB, b []byte) []modelTool {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	var out []modelTool
	if err := dec.Decode(&out); err != nil {
		t.Fatalf("ModelJSON does not parse as the function-calling array: %v\n%s", err, b)
	}
	if dec.More() {
		t.Fatalf("ModelJSON has trailing data: %s", b)
	}
	if out == nil {
		t.Fatalf("ModelJSON is %s, want an array", b)
	}
	return out
}

// --- registration ---------------------------------------------------------------

func TestRegisterConflict(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		same  bool // the second registration uses the first one's fiber
		batch []tools.Tool
		want  string
	}{
		{"other fiber", false, []tools.Tool{tool("search")}, `tool "search" is already registered`},
		{"same fiber", true, []tools.Tool{tool("search")}, `tool "search" is already registered`},
		{"last of a batch", false, []tools.Tool{tool("alpha"), tool("beta"), tool("search")}, `tool "search" is already registered`},
		{"first of a batch", false, []tools.Tool{tool("search"), tool("alpha")}, `tool "search" is already registered`},
		{"dash and underscore", false, []tools.Tool{tool("a-b_C9")}, `tool "a-b_C9" is already registered`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r := tools.New()
			first := newFiber(t, "first")
			mustRegister(t, r, first, tool("search"), tool("a-b_C9"))
			second := first
			if !tc.same {
				second = newFiber(t, "second")
			}
			v := r.Version()
			rel, err := r.Register(second, tc.batch...)
			if err == nil {
				t.Fatal("Register of a taken name succeeded")
			}
			if err.Error() != tc.want {
				t.Fatalf("error %q, want exactly %q", err, tc.want)
			}
			if !errors.Is(err, tools.ErrConflict) {
				t.Fatalf("error %v does not wrap ErrConflict", err)
			}
			if rel != nil {
				t.Fatal("a failed Register returned a release function")
			}
			if r.Version() != v {
				t.Fatalf("a refused registration changed the version: %d → %d", v, r.Version())
			}
			wantNames(t, r, "a-b_C9", "search")
			// The first owner still answers.
			if res := r.Execute(context.Background(), "search", nil); res.Text != "search" || res.IsError {
				t.Fatalf("search answers %+v", res)
			}
		})
	}
}

func TestRegisterBatchIsAllOrNothing(t *testing.T) {
	t.Parallel()
	noExec := tool("no_exec")
	noExec.Execute = nil
	badJSON := tool("bad_json")
	badJSON.Parameters = json.RawMessage(`{"type":"object",}`)
	blank := tool("blank_params")
	blank.Parameters = json.RawMessage(" \n\t")
	twoValues := tool("two_values")
	twoValues.Parameters = json.RawMessage(`{} {}`)
	for _, tc := range []struct {
		name  string
		batch []tools.Tool
		want  string
	}{
		{"conflict", []tools.Tool{tool("a"), tool("b"), tool("taken")}, `tool "taken" is already registered`},
		{"invalid name", []tools.Tool{tool("a"), tool("b"), tool("not valid")}, `tool "not valid": the name must match ^[A-Za-z0-9_-]{1,64}$`},
		{"empty name", []tools.Tool{tool("a"), tool("")}, `tool "": the name must match ^[A-Za-z0-9_-]{1,64}$`},
		{"listed twice", []tools.Tool{tool("a"), tool("b"), tool("a")}, `tool "a" is listed twice in one registration`},
		{"invalid JSON parameters", []tools.Tool{tool("a"), badJSON}, `tool "bad_json": parameters are not valid JSON`},
		{"blank parameters", []tools.Tool{tool("a"), blank}, `tool "blank_params": parameters are not valid JSON`},
		{"two JSON values", []tools.Tool{tool("a"), twoValues}, `tool "two_values": parameters are not valid JSON`},
		{"no executor", []tools.Tool{tool("a"), noExec}, `tool "no_exec": no executor`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r := tools.New()
			mustRegister(t, r, newFiber(t, "owner"), tool("taken"))
			before := r.ModelJSON()
			v, ch := r.Version(), r.Changed()

			f := newFiber(t, "plugin")
			rel, err := r.Register(f, tc.batch...)
			if err == nil || err.Error() != tc.want {
				t.Fatalf("error %v, want %q", err, tc.want)
			}
			if rel != nil {
				t.Fatal("a failed Register returned a release function")
			}
			wantNames(t, r, "taken")
			for _, tl := range tc.batch {
				if _, ok := r.Lookup(tl.Name); ok && tl.Name != "taken" {
					t.Fatalf("%q is registered after a refused batch", tl.Name)
				}
			}
			if got := r.ModelJSON(); !bytes.Equal(got, before) {
				t.Fatalf("ModelJSON changed after a refused batch:\n%s\n%s", before, got)
			}
			if r.Version() != v || closed(ch) {
				t.Fatal("a refused batch was announced as a change")
			}
			// The names are free for a correct batch on the same fiber.
			mustRegister(t, r, f, tool("a"), tool("b"))
			wantNames(t, r, "a", "b", "taken")
		})
	}
}

func TestNamePattern(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		ok   bool
	}{
		{"a", true},
		{"search", true},
		{"mcp__srv__search", true},
		{"Get-Weather_2", true},
		{"_", true},
		{"-", true},
		{strings.Repeat("x", 64), true},
		{strings.Repeat("x", 65), false},
		{"", false},
		{"a.b", false},
		{"a b", false},
		{"a/b", false},
		{"a:b", false},
		{"é", false},
		{"a\n", false},
		{"\na", false},
		{"tool\x00", false},
	} {
		t.Run(fmt.Sprintf("%q", tc.name), func(t *testing.T) {
			t.Parallel()
			if got := tools.NamePattern.MatchString(tc.name); got != tc.ok {
				t.Fatalf("NamePattern.MatchString(%q) = %v, want %v", tc.name, got, tc.ok)
			}
			r := tools.New()
			_, err := r.Register(newFiber(t, "f"), tools.Tool{Name: tc.name, Execute: says("x")})
			if (err == nil) != tc.ok {
				t.Fatalf("Register(%q) error = %v, want ok=%v", tc.name, err, tc.ok)
			}
			if !tc.ok {
				want := fmt.Sprintf("tool %q: the name must match ^[A-Za-z0-9_-]{1,64}$", tc.name)
				if err.Error() != want {
					t.Fatalf("error %q, want %q", err, want)
				}
				wantNames(t, r)
			}
		})
	}
}

func TestDisposalRemovesOnlyThatRegistration(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		// remove undoes the first registration; both registrations are
		// given, the second on its own fiber or the first's.
		sameFiber bool
		remove    func(t *testing.T, f *fiber.Fiber, rel fiber.Disposer)
	}{
		{"dispose the fiber", false, func(t *testing.T, f *fiber.Fiber, _ fiber.Disposer) { dispose(t, f) }},
		{"dispose a parent fiber", false, func(t *testing.T, f *fiber.Fiber, _ fiber.Disposer) { dispose(t, f.Parent()) }},
		{"release on a shared fiber", true, func(t *testing.T, _ *fiber.Fiber, rel fiber.Disposer) { release(t, rel) }},
		{"release on its own fiber", false, func(t *testing.T, _ *fiber.Fiber, rel fiber.Disposer) { release(t, rel) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r := tools.New()
			root := newFiber(t, "root")
			first, err := root.Child("first")
			if err != nil {
				t.Fatal(err)
			}
			second := first
			if !tc.sameFiber {
				second = newFiber(t, "second")
			}
			rel := mustRegister(t, r, first, tool("first_a"), tool("first_b"))
			mustRegister(t, r, second, tool("second_a"))
			wantNames(t, r, "first_a", "first_b", "second_a")

			tc.remove(t, first, rel)
			wantNames(t, r, "second_a")
			if res := r.Execute(context.Background(), "first_a", nil); !res.IsError {
				t.Fatalf("a removed tool still runs: %+v", res)
			}
			if res := r.Execute(context.Background(), "second_a", nil); res.IsError || res.Text != "second_a" {
				t.Fatalf("the other registration's tool answers %+v", res)
			}
			parsed := parseModel(t, r.ModelJSON())
			if len(parsed) != 1 || parsed[0].Function.Name != "second_a" {
				t.Fatalf("ModelJSON lists %+v", parsed)
			}
			// The removed names can be registered again.
			mustRegister(t, r, newFiber(t, "again"), tool("first_a"))
		})
	}
}

func TestReleaseRemovesEarlyAndOnce(t *testing.T) {
	t.Parallel()
	r := tools.New()
	f := newFiber(t, "plugin")
	mustRegister(t, r, f, tool("keep"))
	rel := mustRegister(t, r, f, tool("early"), tool("early_too"))
	wantNames(t, r, "early", "early_too", "keep")

	v := r.Version()
	release(t, rel)
	wantNames(t, r, "keep")
	if r.Version() != v+1 {
		t.Fatalf("version %d after release, want %d", r.Version(), v+1)
	}
	// A second release does nothing, and neither does the fiber's disposal
	// for this registration: the name, now taken by someone else, stays.
	other := newFiber(t, "other")
	mustRegister(t, r, other, tool("early"))
	release(t, rel)
	dispose(t, f)
	wantNames(t, r, "early")
	if res := r.Execute(context.Background(), "early", nil); res.Text != "early" || res.IsError {
		t.Fatalf("the new owner's tool answers %+v", res)
	}
}

func TestRegisterOnADisposedFiber(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name     string
		register func(t *testing.T, r *tools.Registry) error
	}{
		{"disposed", func(t *testing.T, r *tools.Registry) error {
			f := fiber.New(context.Background(), "gone")
			dispose(t, f)
			rel, err := r.Register(f, tool("late"), tool("later"))
			if rel != nil {
				t.Error("a failed Register returned a release function")
			}
			return err
		}},
		{"child of a disposed fiber", func(t *testing.T, r *tools.Registry) error {
			parent := fiber.New(context.Background(), "parent")
			child, err := parent.Child("child")
			if err != nil {
				t.Fatal(err)
			}
			dispose(t, parent)
			_, err = r.Register(child, tool("late"), tool("later"))
			return err
		}},
		{"disposing", func(t *testing.T, r *tools.Registry) error {
			// A disposer of the fiber registers while the fiber is being disposed.
			f := fiber.New(context.Background(), "disposing")
			var err error
			if _, derr := f.Defer("register late", func(context.Context) error {
				_, err = r.Register(f, tool("late"), tool("later"))
				return nil
			}); derr != nil {
				t.Fatal(derr)
			}
			dispose(t, f)
			return err
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r := tools.New()
			err := tc.register(t, r)
			if !errors.Is(err, fiber.ErrDisposed) {
				t.Fatalf("error %v, want one wrapping fiber.ErrDisposed", err)
			}
			if !strings.HasPrefix(err.Error(), "register tools: ") {
				t.Fatalf("error %q does not say what failed", err)
			}
			wantNames(t, r)
			if got := string(r.ModelJSON()); got != "[]" {
				t.Fatalf("ModelJSON = %s, want []", got)
			}
			if _, ok := r.Lookup("late"); ok {
				t.Fatal("late is still registered")
			}
			mustRegister(t, r, newFiber(t, "alive"), tool("late"), tool("later"))
		})
	}
}

func TestRegisterEmptyBatch(t *testing.T) {
	t.Parallel()
	r := tools.New()
	f := newFiber(t, "f")
	rel := mustRegister(t, r, f)
	wantNames(t, r)
	release(t, rel)
	if got := string(r.ModelJSON()); got != "[]" {
		t.Fatalf("ModelJSON = %s", got)
	}
}

// --- the model-visible list -------------------------------------------------------

func TestParametersAreKeptByteForByte(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		params string
	}{
		{"compact", `{"type":"object","properties":{"q":{"type":"string"}},"required":["q"]}`},
		{"whitespace", "{\n  \"type\" : \"object\",\n\t\"properties\": { }\n}"},
		{"surrounding whitespace", " \n{\"type\":\"object\"}\n "},
		{"key order", `{"required":["b","a"],"properties":{"b":{"type":"integer"},"a":{"type":"string"}},"type":"object"}`},
		{"top-level anyOf", `{"anyOf":[{"type":"object","properties":{"a":{"type":"string"}}},{"type":"object","properties":{"b":{"type":"number"}}}]}`},
		{"$schema", `{"$schema":"https://json-schema.org/draft/2020-12/schema","type":"object","additionalProperties":false}`},
		{"escapes and numbers", `{"type":"object","description":"caf\u00e9 \"quoted\" <b>&</b>","properties":{"n":{"type":"number","maximum":1.50e+2,"minimum":-0.0}}}`},
		{"duplicate keys", `{"type":"object","type":"object"}`},
		{"utf-8", `{"type":"object","description":"température °C — 温度"}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r := tools.New()
			mustRegister(t, r, newFiber(t, "f"), tools.Tool{
				Name: "t", Description: "d", Parameters: json.RawMessage(tc.params), Execute: says("x"),
			})
			want := `[{"type":"function","function":{"name":"t","description":"d","parameters":` + tc.params + `}}]`
			if got := string(r.ModelJSON()); got != want {
				t.Fatalf("ModelJSON\n got %s\nwant %s", got, want)
			}
			parsed := parseModel(t, r.ModelJSON())
			if got := string(parsed[0].Function.Parameters); strings.TrimSpace(got) != strings.TrimSpace(tc.params) {
				t.Fatalf("parameters parse back as %s", got)
			}
			tl, ok := r.Lookup("t")
			if !ok || string(tl.Parameters) != tc.params {
				t.Fatalf("Lookup parameters = %q", tl.Parameters)
			}
		})
	}
}

func TestDefinitionIsKeptAndStaysOutOfTheModelList(t *testing.T) {
	t.Parallel()
	r := tools.New()
	def := json.RawMessage(`{"name":"raw.name","title":"Raw","annotations":{"readOnlyHint":true}}`)
	mustRegister(t, r, newFiber(t, "f"), tools.Tool{Name: "t", Description: "d", Definition: def, Execute: says("x")})
	got, _ := r.Lookup("t")
	if string(got.Definition) != string(def) {
		t.Fatalf("Lookup definition = %s, want %s", got.Definition, def)
	}
	if want := `[{"type":"function","function":{"name":"t","description":"d","parameters":{"type":"object","properties":{}}}}]`; string(r.ModelJSON()) != want {
		t.Fatalf("ModelJSON = %s, want %s", r.ModelJSON(), want)
	}
	_, err := r.Register(newFiber(t, "g"), tools.Tool{Name: "u", Definition: json.RawMessage(`{"title":`), Execute: says("x")})
	if err == nil || !strings.Contains(err.Error(), `tool "u": the definition is not valid JSON`) {
		t.Fatalf("Register with a broken definition: %v", err)
	}
}

func TestMissingParametersBecomeAnEmptyObject(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		params json.RawMessage
	}{
		{"nil", nil},
		{"empty", json.RawMessage{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r := tools.New()
			mustRegister(t, r, newFiber(t, "f"), tools.Tool{Name: "t", Parameters: tc.params, Execute: says("x")})
			const want = `[{"type":"function","function":{"name":"t","description":"","parameters":{"type":"object","properties":{}}}}]`
			if got := string(r.ModelJSON()); got != want {
				t.Fatalf("ModelJSON = %s, want %s", got, want)
			}
			if tl, _ := r.Lookup("t"); string(tl.Parameters) != `{"type":"object","properties":{}}` {
				t.Fatalf("Lookup parameters = %s", tl.Parameters)
			}
			if l := r.List(); len(l) != 1 || string(l[0].Parameters) != `{"type":"object","properties":{}}` {
				t.Fatalf("List = %+v", l)
			}
		})
	}
}

func TestModelJSONShapeAndOrder(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		batches [][]string // one registration, on its own fiber, per batch
		want    []string
	}{
		{"empty", nil, []string{}},
		{"one", [][]string{{"only"}}, []string{"only"}},
		{"reverse order", [][]string{{"zeta", "eta", "beta", "alpha"}}, []string{"alpha", "beta", "eta", "zeta"}},
		{"across registrations", [][]string{{"m", "b"}, {"z", "a"}, {"c"}}, []string{"a", "b", "c", "m", "z"}},
		{"byte order", [][]string{{"b", "B", "_", "-", "a", "A", "0", "aa"}}, []string{"-", "0", "A", "B", "_", "a", "aa", "b"}},
		{"prefixes", [][]string{{"search_web", "search", "mcp__srv__search", "mcp__srv"}}, []string{"mcp__srv", "mcp__srv__search", "search", "search_web"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r := tools.New()
			for i, batch := range tc.batches {
				var ts []tools.Tool
				for _, n := range batch {
					ts = append(ts, tools.Tool{
						Name:        n,
						Description: "Tool " + n + ": \"quotes\", <tags> & a\nnewline.",
						Parameters:  json.RawMessage(`{"type":"object","title":"` + n + `"}`),
						Execute:     says(n),
					})
				}
				mustRegister(t, r, newFiber(t, fmt.Sprint("f", i)), ts...)
			}
			raw := r.ModelJSON()
			parsed := parseModel(t, raw)
			var names []string
			for _, m := range parsed {
				if m.Type != "function" {
					t.Fatalf("type %q, want function", m.Type)
				}
				n := m.Function.Name
				names = append(names, n)
				if want := "Tool " + n + ": \"quotes\", <tags> & a\nnewline."; m.Function.Description != want {
					t.Fatalf("description %q, want %q", m.Function.Description, want)
				}
				if want := `{"type":"object","title":"` + n + `"}`; string(m.Function.Parameters) != want {
					t.Fatalf("parameters %s, want %s", m.Function.Parameters, want)
				}
			}
			if names == nil {
				names = []string{}
			}
			if !slices.Equal(names, tc.want) {
				t.Fatalf("ModelJSON order %q, want %q", names, tc.want)
			}
			wantNames(t, r, tc.want...)
			var listed []string
			for _, tl := range r.List() {
				listed = append(listed, tl.Name)
			}
			if listed == nil {
				listed = []string{}
			}
			if !slices.Equal(listed, tc.want) {
				t.Fatalf("List order %q, want %q", listed, tc.want)
			}
			// Every element has exactly the documented keys, in the documented order.
			for _, m := range parsed {
				prefix := `{"type":"function","function":{"name":` + jsonString(m.Function.Name) + `,"description":`
				if !bytes.Contains(raw, []byte(prefix)) {
					t.Fatalf("ModelJSON has no element starting %s:\n%s", prefix, raw)
				}
			}
		})
	}
}

func jsonString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

func TestModelJSONIsByteStable(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		unrelat string // a tool registered then released
	}{
		{"sorts first", "aaa"},
		{"sorts between", "mid"},
		{"sorts last", "zzz"},
		{"prefix of an existing name", "sea"},
		{"extends an existing name", "search_more"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r := tools.New()
			f := newFiber(t, "f")
			mustRegister(t, r, f,
				tools.Tool{Name: "search", Description: "Search.", Parameters: json.RawMessage(`{"type":"object", "properties":{"q":{"type":"string"}}}`), Execute: says("s")},
				tools.Tool{Name: "read", Description: "Read.", Execute: says("r")},
				tools.Tool{Name: "write", Description: "Write.", Execute: says("w")},
			)
			first := bytes.Clone(r.ModelJSON())
			if again := r.ModelJSON(); !bytes.Equal(first, again) {
				t.Fatalf("two calls differ:\n%s\n%s", first, again)
			}
			other := newFiber(t, "other")
			rel := mustRegister(t, r, other, tool(tc.unrelat))
			during := r.ModelJSON()
			if bytes.Equal(first, during) {
				t.Fatal("ModelJSON did not change when a tool was added")
			}
			if parsed := parseModel(t, during); len(parsed) != 4 {
				t.Fatalf("%d tools listed, want 4", len(parsed))
			}
			release(t, rel)
			if after := r.ModelJSON(); !bytes.Equal(first, after) {
				t.Fatalf("ModelJSON after register+release differs:\n%s\n%s", first, after)
			}
			// The same through a fiber's disposal, and twice in a row.
			for range 2 {
				g, err := other.Child("child")
				if err != nil {
					t.Fatal(err)
				}
				mustRegister(t, r, g, tool(tc.unrelat))
				dispose(t, g)
				if after := r.ModelJSON(); !bytes.Equal(first, after) {
					t.Fatalf("ModelJSON after register+dispose differs:\n%s\n%s", first, after)
				}
			}
			// A fresh registry with the same tools gives the same bytes.
			fresh := tools.New()
			mustRegister(t, fresh, newFiber(t, "fresh"), r.List()...)
			if got := fresh.ModelJSON(); !bytes.Equal(first, got) {
				t.Fatalf("a registry with the same set gives other bytes:\n%s\n%s", first, got)
			}
		})
	}
}

// TestModelJSONIsNeverStale races the first ModelJSON of a registry with a
// Register: once both have returned, ModelJSON must list the tool. (A cache
// filled from a listing taken before the change must not survive it.)
//
// It is deliberately not parallel: the window is a few instructions wide, and
// it is hit often enough only when the test has the CPUs to itself (serial
// tests run before the parallel ones are released).
func TestModelJSONIsNeverStale(t *testing.T) {
	for _, tc := range []struct {
		name    string
		initial []string
	}{
		{"empty registry", nil},
		{"one tool", []string{"base"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rounds := 20000 // the race is hit about once in 1000 rounds
			switch {
			case testing.Short():
				rounds = 300
			case raceEnabled:
				rounds = 3000 // … and about once in 40 under -race
			}
			f := newFiber(t, "f")
			for i := range rounds {
				r := tools.New()
				for _, n := range tc.initial {
					mustRegister(t, r, f, tool(n))
				}
				var wg sync.WaitGroup
				start := make(chan struct{})
				wg.Go(func() { <-start; r.ModelJSON() })
				wg.Go(func() {
					<-start
					if _, err := r.Register(f, tool("added")); err != nil {
						t.Error(err)
					}
				})
				close(start)
				wg.Wait()
				want := append(slices.Clone(tc.initial), "added")
				slices.Sort(want)
				var got []string
				for _, m := range parseModel(t, r.ModelJSON()) {
					got = append(got, m.Function.Name)
				}
				if !slices.Equal(got, want) {
					t.Fatalf("round %d: ModelJSON lists %q while the registry holds %q", i, got, r.Names())
				}
			}
		})
	}
}

// --- execution -----------------------------------------------------------------------

func TestExecute(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		call string // the tool called; "tool" is registered with exec
		exec tools.Executor
		args json.RawMessage
		want tools.Result
	}{
		{
			name: "success",
			call: "tool",
			exec: func(_ context.Context, args json.RawMessage) (tools.Result, error) {
				return tools.Result{Text: "got " + string(args)}, nil
			},
			args: json.RawMessage(`{"q": "x" }`),
			want: tools.Result{Text: `got {"q": "x" }`},
		},
		{
			name: "success with empty text",
			call: "tool",
			exec: says(""),
			want: tools.Result{},
		},
		{
			name: "unknown tool",
			call: "nope",
			exec: says("unused"),
			want: tools.Result{Text: `Error: unknown tool "nope"`, IsError: true},
		},
		{
			name: "unknown tool with an odd name",
			call: "a \"b\"\n",
			exec: says("unused"),
			want: tools.Result{Text: `Error: unknown tool "a \"b\"\n"`, IsError: true},
		},
		{
			name: "executor error",
			call: "tool",
			exec: func(context.Context, json.RawMessage) (tools.Result, error) {
				return tools.Result{}, errors.New("disk full")
			},
			want: tools.Result{Text: "Error: disk full", IsError: true},
		},
		{
			name: "executor error wins over a result",
			call: "tool",
			exec: func(context.Context, json.RawMessage) (tools.Result, error) {
				return tools.Result{Text: "partial"}, fmt.Errorf("read: %w", errors.New("EOF"))
			},
			want: tools.Result{Text: "Error: read: EOF", IsError: true},
		},
		{
			name: "executor error quoting a terminal sequence is escaped",
			call: "tool",
			exec: func(context.Context, json.RawMessage) (tools.Result, error) {
				return tools.Result{}, errors.New("500: <html>\x1b[2J\x1b]0;pwned\x07</html>\nline two")
			},
			want: tools.Result{Text: "Error: 500: <html>\\x1b[2J\\x1b]0;pwned\\x07</html>\nline two", IsError: true},
		},
		{
			name: "an error result is the tool's own words",
			call: "tool",
			exec: func(context.Context, json.RawMessage) (tools.Result, error) {
				return tools.Result{Text: "red \x1b[31mtext", IsError: true}, nil
			},
			want: tools.Result{Text: "Error: red \x1b[31mtext", IsError: true},
		},
		{
			name: "error result",
			call: "tool",
			exec: func(context.Context, json.RawMessage) (tools.Result, error) {
				return tools.Result{Text: "no such file", IsError: true}, nil
			},
			want: tools.Result{Text: "Error: no such file", IsError: true},
		},
		{
			name: "a raw result passes through",
			call: "tool",
			exec: func(context.Context, json.RawMessage) (tools.Result, error) {
				return tools.Result{Text: "hi", Raw: json.RawMessage(`{"content":[{"type":"text","text":"hi"}]}`)}, nil
			},
			want: tools.Result{Text: "hi", Raw: json.RawMessage(`{"content":[{"type":"text","text":"hi"}]}`)},
		},
		{
			name: "a raw error result passes through beside the model's text",
			call: "tool",
			exec: func(context.Context, json.RawMessage) (tools.Result, error) {
				return tools.Result{Text: "nope", IsError: true, Raw: json.RawMessage(`{"content":[{"type":"text","text":"nope"}],"isError":true}`)}, nil
			},
			want: tools.Result{Text: "Error: nope", IsError: true, Raw: json.RawMessage(`{"content":[{"type":"text","text":"nope"}],"isError":true}`)},
		},
		{
			name: "an executor error drops a raw result",
			call: "tool",
			exec: func(context.Context, json.RawMessage) (tools.Result, error) {
				return tools.Result{Raw: json.RawMessage(`{"content":[]}`)}, errors.New("lost")
			},
			want: tools.Result{Text: "Error: lost", IsError: true},
		},
		{
			name: "panic",
			call: "tool",
			exec: func(context.Context, json.RawMessage) (tools.Result, error) {
				panic("boom")
			},
			want: tools.Result{Text: `Error: tool "tool" panicked: boom`, IsError: true},
		},
		{
			name: "panic with an error",
			call: "tool",
			exec: func(context.Context, json.RawMessage) (tools.Result, error) {
				var m map[string]int
				m["x"] = 1 // assignment to entry in nil map
				return tools.Result{}, nil
			},
			want: tools.Result{Text: `Error: tool "tool" panicked: assignment to entry in nil map`, IsError: true},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			log, logs := testlog.New(t)
			r := tools.New(tools.WithLogger(log))
			// The tool also has a Starter that runs the executor and says
			// so at once: Start answers what Execute does.
			start := func(ctx context.Context, args json.RawMessage, done func(tools.Result, error)) bool {
				done(tc.exec(ctx, args))
				return true
			}
			mustRegister(t, r, newFiber(t, "f"), tools.Tool{Name: "tool", Execute: tc.exec, Start: start})
			got := r.Execute(context.Background(), tc.call, tc.args)
			if !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("Execute = %+v, want %+v", got, tc.want)
			}
			var started []tools.Result
			ok := r.Start(context.Background(), tc.call, tc.args, func(res tools.Result) { started = append(started, res) })
			switch {
			case tc.call != "tool" && (ok || len(started) != 0):
				t.Fatalf("Start of an unknown tool: %v, %+v", ok, started)
			case tc.call == "tool" && (!ok || len(started) != 1 || !reflect.DeepEqual(started[0], tc.want)):
				t.Fatalf("Start = %v, %+v; want one %+v", ok, started, tc.want)
			}
			// A panic is logged, with the stack that leads to the tool's
			// code: the model's error result is all anyone else sees.
			if panicked := strings.Contains(tc.name, "panic"); panicked != strings.Contains(logs.String(), `msg="a tool panicked" tool=tool`) ||
				panicked && !strings.Contains(logs.String(), "tools_test.go") {
				t.Errorf("the log, for %s:\n%s", tc.name, logs.String())
			}
			// The registry survives: the tool still answers.
			if _, ok := r.Lookup("tool"); !ok {
				t.Fatal("the tool is gone after the call")
			}
		})
	}
}

// A tool without a Starter is not started: its caller runs Execute.
func TestStartWithoutStarter(t *testing.T) {
	t.Parallel()
	r := tools.New()
	mustRegister(t, r, newFiber(t, "f"), tools.Tool{Name: "tool", Execute: says("x")})
	if r.Start(context.Background(), "tool", nil, func(tools.Result) { t.Error("done called") }) {
		t.Fatal("a tool without a Starter was started")
	}
}

// The burst a Starter's result carries reaches done, whether the call
// succeeded or failed (tools.Burst).
func TestStartKeepsTheBurst(t *testing.T) {
	t.Parallel()
	r := tools.New()
	var b tools.Burst
	start := func(_ context.Context, args json.RawMessage, done func(tools.Result, error)) bool {
		if string(args) == `{"fail":true}` {
			done(tools.Result{Burst: &b}, errors.New("no"))
		} else {
			done(tools.Result{Text: "yes", Burst: &b}, nil)
		}
		return true
	}
	mustRegister(t, r, newFiber(t, "f"), tools.Tool{Name: "tool", Execute: says("x"), Start: start})
	for _, args := range []string{`{}`, `{"fail":true}`} {
		var got tools.Result
		r.Start(context.Background(), "tool", json.RawMessage(args), func(res tools.Result) { got = res })
		if got.Burst != &b || (args != `{}`) != got.IsError {
			t.Fatalf("%s: %+v, want the burst with the result", args, got)
		}
	}
}

func TestExecuteResultJSON(t *testing.T) {
	t.Parallel()
	// Raw is for the gateway, never part of what call --json prints.
	b, err := json.Marshal(tools.Result{Text: "Error: x", IsError: true, Raw: json.RawMessage(`{"isError":true}`)})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := string(b), `{"text":"Error: x","isError":true}`; got != want {
		t.Fatalf("Result marshals as %s, want %s", got, want)
	}
}

func TestExecuteContextReachesTheExecutor(t *testing.T) {
	t.Parallel()
	cause := errors.New("the user pressed Esc")
	for _, tc := range []struct {
		name   string
		ctx    func() (context.Context, func())
		result string
	}{
		{"cancel", func() (context.Context, func()) {
			ctx, cancel := context.WithCancel(context.Background())
			return ctx, cancel
		}, "Error: context canceled"},
		{"cancel with a cause", func() (context.Context, func()) {
			ctx, cancel := context.WithCancelCause(context.Background())
			return ctx, func() { cancel(cause) }
		}, "Error: the user pressed Esc"},
		{"deadline passed", func() (context.Context, func()) {
			return context.WithDeadline(context.Background(), time.Unix(0, 0))
		}, "Error: context deadline exceeded"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			type key struct{}
			r := tools.New()
			waiting := make(chan struct{})
			mustRegister(t, r, newFiber(t, "f"), tools.Tool{Name: "slow", Execute: func(ctx context.Context, _ json.RawMessage) (tools.Result, error) {
				if ctx.Value(key{}) != "marker" {
					return tools.Result{}, errors.New("the caller's context did not reach the executor")
				}
				close(waiting)
				<-ctx.Done()
				return tools.Result{}, context.Cause(ctx)
			}})
			ctx, cancel := tc.ctx()
			ctx = context.WithValue(ctx, key{}, "marker")
			done := make(chan tools.Result, 1)
			go func() { done <- r.Execute(ctx, "slow", nil) }()
			<-waiting
			cancel()
			res := <-done
			if res.Text != tc.result || !res.IsError {
				t.Fatalf("Execute = %+v, want error %q", res, tc.result)
			}
		})
	}
}

func TestExecuteWithATimeoutContext(t *testing.T) {
	t.Parallel()
	r := tools.New()
	mustRegister(t, r, newFiber(t, "f"), tools.Tool{Name: "deadline", Execute: func(ctx context.Context, _ json.RawMessage) (tools.Result, error) {
		d, ok := ctx.Deadline()
		if !ok {
			return tools.Result{}, errors.New("no deadline")
		}
		return tools.Result{Text: d.UTC().Format(time.RFC3339)}, nil
	}})
	deadline := time.Date(2999, 1, 2, 3, 4, 5, 0, time.UTC)
	ctx, cancel := context.WithDeadline(context.Background(), deadline)
	defer cancel()
	if res := r.Execute(ctx, "deadline", nil); res.Text != "2999-01-02T03:04:05Z" {
		t.Fatalf("Execute = %+v", res)
	}
}

// --- notifications ----------------------------------------------------------------------

func TestChangedAndVersion(t *testing.T) {
	t.Parallel()
	r := tools.New()
	if r.Version() != 0 {
		t.Fatalf("a new registry has version %d", r.Version())
	}
	f := newFiber(t, "f")
	step := func(name string, change bool, do func()) {
		t.Helper()
		ch, v := r.Changed(), r.Version()
		if closed(ch) {
			t.Fatalf("%s: Changed() is already closed", name)
		}
		do()
		switch {
		case change && (!closed(ch) || r.Version() != v+1):
			t.Fatalf("%s: closed=%v version %d→%d, want a change", name, closed(ch), v, r.Version())
		case !change && (closed(ch) || r.Version() != v):
			t.Fatalf("%s: closed=%v version %d→%d, want no change", name, closed(ch), v, r.Version())
		}
		if change && closed(r.Changed()) {
			t.Fatalf("%s: the next Changed() channel is already closed", name)
		}
	}
	var rel fiber.Disposer
	step("register", true, func() { rel = mustRegister(t, r, f, tool("a"), tool("b")) })
	step("read", false, func() {
		r.ModelJSON()
		r.Names()
		r.List()
		r.Lookup("a")
		r.Execute(context.Background(), "a", nil)
		r.Execute(context.Background(), "missing", nil)
	})
	step("conflict", false, func() {
		if _, err := r.Register(f, tool("c"), tool("a")); err == nil {
			t.Fatal("conflict accepted")
		}
	})
	step("invalid", false, func() {
		if _, err := r.Register(f, tool("c"), tools.Tool{Name: "d"}); err == nil {
			t.Fatal("tool without executor accepted")
		}
	})
	step("register another", true, func() { mustRegister(t, r, f, tool("c")) })
	step("release", true, func() { release(t, rel) })
	step("release again", false, func() { release(t, rel) })
	step("dispose", true, func() { dispose(t, f) })
	if r.Version() != 4 {
		t.Fatalf("version %d after 4 changes", r.Version())
	}
}

func TestChangedWakesAWaiter(t *testing.T) {
	t.Parallel()
	r := tools.New()
	ch := r.Changed()
	woke := make(chan []string)
	go func() {
		<-ch
		woke <- r.Names()
	}()
	mustRegister(t, r, newFiber(t, "f"), tool("new_tool"))
	if got := <-woke; !slices.Equal(got, []string{"new_tool"}) {
		t.Fatalf("the waiter saw %q", got)
	}
}

// --- concurrency and coexistence ------------------------------------------------------------

func TestConcurrentUse(t *testing.T) {
	t.Parallel()
	const workers, rounds = 8, 150
	r := tools.New()
	root := newFiber(t, "root")
	var changes atomic.Uint64 // successful registrations and removals
	var sharedOwners atomic.Int32
	stop := make(chan struct{})
	var readers sync.WaitGroup
	for range 3 {
		readers.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				changed := r.Changed()
				var model []modelTool
				if err := json.Unmarshal(r.ModelJSON(), &model); err != nil {
					t.Errorf("ModelJSON: %v", err)
					return
				}
				names := make([]string, len(model))
				for i, m := range model {
					names[i] = m.Function.Name
				}
				if !slices.IsSorted(names) {
					t.Errorf("ModelJSON not sorted: %q", names)
					return
				}
				if !slices.IsSorted(r.Names()) {
					t.Error("Names not sorted")
					return
				}
				r.Version()
				select {
				case <-changed:
				case <-stop:
					return
				}
			}
		})
	}
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for i := range rounds {
				f, err := root.Child(fmt.Sprint("w", w, "r", i))
				if err != nil {
					t.Error(err)
					return
				}
				name := fmt.Sprintf("w%d_%d", w, i)
				rel, err := r.Register(f, tool(name), tool(name+"_b"))
				if err != nil {
					t.Error(err)
					return
				}
				changes.Add(1)
				// Everyone competes for one name; at most one holds it.
				if srel, err := r.Register(f, tools.Tool{Name: "shared", Execute: func(context.Context, json.RawMessage) (tools.Result, error) {
					if n := sharedOwners.Load(); n != 1 {
						return tools.Result{}, fmt.Errorf("%d owners", n)
					}
					return tools.Result{Text: "shared"}, nil
				}}); err == nil {
					changes.Add(1)
					sharedOwners.Add(1)
					if res := r.Execute(context.Background(), "shared", nil); res.IsError {
						t.Errorf("shared: %s", res.Text)
					}
					sharedOwners.Add(-1)
					if err := srel(context.Background()); err != nil {
						t.Error(err)
					}
					changes.Add(1)
				} else if !errors.Is(err, tools.ErrConflict) {
					t.Error(err)
				}
				if res := r.Execute(context.Background(), name, json.RawMessage(`{}`)); res.Text != name || res.IsError {
					t.Errorf("%s answered %+v", name, res)
				}
				if _, ok := r.Lookup(name + "_b"); !ok {
					t.Errorf("%s_b is missing", name)
				}
				if i%2 == 0 {
					if err := rel(context.Background()); err != nil {
						t.Error(err)
					}
				} else if err := f.Dispose(context.Background()); err != nil {
					t.Error(err)
				}
				changes.Add(1)
				if _, ok := r.Lookup(name); ok {
					t.Errorf("%s survived its removal", name)
				}
			}
		})
	}
	wg.Wait()
	close(stop)
	readers.Wait()
	mustRegister(t, r, root, tool("final"))
	changes.Add(1)

	wantNames(t, r, "final")
	if got, want := r.Version(), changes.Load(); got != want {
		t.Fatalf("version %d after %d changes", got, want)
	}
	if got := string(r.ModelJSON()); got != `[{"type":"function","function":{"name":"final","description":"the final tool","parameters":{"type":"object","properties":{}}}}]` {
		t.Fatalf("ModelJSON = %s", got)
	}
}

func TestNativeAndMCPNamesCoexist(t *testing.T) {
	t.Parallel()
	r := tools.New()
	native := newFiber(t, "native")
	mcp := newFiber(t, "mcp-srv")
	mustRegister(t, r, native, tools.Tool{Name: "search", Description: "Native search.", Execute: says("native")})
	mustRegister(t, r, mcp, tools.Tool{Name: "mcp__srv__search", Description: "Search on srv.", Execute: says("mcp")})
	wantNames(t, r, "mcp__srv__search", "search")
	for name, want := range map[string]string{"search": "native", "mcp__srv__search": "mcp"} {
		if res := r.Execute(context.Background(), name, nil); res.Text != want || res.IsError {
			t.Fatalf("%s answered %+v, want %q", name, res, want)
		}
	}
	parsed := parseModel(t, r.ModelJSON())
	if len(parsed) != 2 || parsed[0].Function.Description != "Search on srv." || parsed[1].Function.Description != "Native search." {
		t.Fatalf("ModelJSON = %+v", parsed)
	}
	dispose(t, mcp)
	wantNames(t, r, "search")
	if res := r.Execute(context.Background(), "mcp__srv__search", nil); res.Text != `Error: unknown tool "mcp__srv__search"` {
		t.Fatalf("disposed MCP tool answered %+v", res)
	}
}

func TestLookupAndListReturnTheRegisteredTool(t *testing.T) {
	t.Parallel()
	r := tools.New()
	params := json.RawMessage(`{"type":"object","properties":{"x":{"type":"integer"}}}`)
	mustRegister(t, r, newFiber(t, "f"), tools.Tool{Name: "x", Description: "Ex.", Parameters: params, Execute: says("x!")})
	tl, ok := r.Lookup("x")
	if !ok || tl.Name != "x" || tl.Description != "Ex." || string(tl.Parameters) != string(params) {
		t.Fatalf("Lookup = %+v, %v", tl, ok)
	}
	if res, err := tl.Execute(context.Background(), nil); err != nil || res.Text != "x!" {
		t.Fatalf("the looked-up executor answered %+v, %v", res, err)
	}
	if _, ok := r.Lookup("y"); ok {
		t.Fatal("Lookup found an unregistered tool")
	}
	// List returns a copy: changing it does not change the registry.
	l := r.List()
	l[0].Name = "changed"
	wantNames(t, r, "x")
	n := r.Names()
	n[0] = "changed"
	wantNames(t, r, "x")
}

// --- through a host -----------------------------------------------------------------------------

// user is a test plugin that registers the tools named in its config.
type user struct {
	Tools []string `yaml:"tools"`
}

func (u *user) Apply(ctx *host.Context) error {
	reg, err := tools.From(ctx)
	if err != nil {
		return err
	}
	var batch []tools.Tool
	for _, n := range u.Tools {
		batch = append(batch, tools.Tool{Name: n, Execute: says(ctx.ID())})
	}
	_, err = reg.Register(ctx.Fiber(), batch...)
	return err
}

func init() {
	host.Register(host.Kind{
		Name:   "tools-test-user",
		Doc:    "test plugin registering tools",
		Inject: []string{tools.Service},
		New:    func() host.Plugin { return &user{} },
	})
}

func newHost(t *testing.T, service any) *host.Host {
	t.Helper()
	log, _ := testlog.New(t)
	h := host.New(host.Options{Logger: log, DisposeTimeout: 5 * time.Second})
	h.Provide(tools.Service, service)
	t.Cleanup(func() {
		if err := h.Close(context.Background()); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return h
}

func load(t *testing.T, h *host.Host, src string) []host.EntryStatus {
	t.Helper()
	f, err := host.ParseFile("cordis.yml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := h.Load(context.Background(), f); err != nil {
		t.Fatalf("Load: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := h.Settle(ctx); err != nil {
		t.Fatalf("Settle: %v", err)
	}
	return h.Snapshot()
}

func TestFromThroughAHost(t *testing.T) {
	t.Parallel()
	r := tools.New()
	h := newHost(t, r)
	snap := load(t, h, `
- id: one
  name: tools-test-user
  config: {tools: [b_tool, a_tool]}
- id: two
  name: tools-test-user
  config: {tools: [c_tool]}
- id: clash
  name: tools-test-user
  config: {tools: [d_tool, c_tool]}
`)
	if snap[0].State != host.Ready || snap[1].State != host.Ready {
		t.Fatalf("snapshot %+v", snap)
	}
	if c := snap[2]; c.State != host.Failed || c.Error != `apply: tool "c_tool" is already registered` {
		t.Fatalf("clash = %s %q", c.State, c.Error)
	}
	wantNames(t, r, "a_tool", "b_tool", "c_tool")
	if res := r.Execute(context.Background(), "c_tool", nil); res.Text != "two" {
		t.Fatalf("c_tool answered %+v", res)
	}
	// Removing an entry disposes its fiber and so its tools.
	load(t, h, `
- id: two
  name: tools-test-user
  config: {tools: [c_tool]}
`)
	wantNames(t, r, "c_tool")
}

// The registry records which entry registered each tool, from the fiber
// given to Register; a program's own tool (a fiber of no entry) has none.
func TestOwnerIsTheRegisteringEntry(t *testing.T) {
	t.Parallel()
	r := tools.New()
	h := newHost(t, r)
	load(t, h, `
- id: one
  name: tools-test-user
  config: {tools: [b_tool, a_tool]}
- id: two
  name: tools-test-user
  config: {tools: [c_tool]}
`)
	if _, err := r.Register(newFiber(t, "program"), tool("p_tool")); err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]string{"a_tool": "one", "b_tool": "one", "c_tool": "two", "p_tool": ""} {
		if got, ok := r.Owner(name); !ok || got != want {
			t.Errorf("Owner(%q) = %q, %v; want %q", name, got, ok, want)
		}
	}
	if _, ok := r.Owner("nope"); ok {
		t.Error("Owner of an unknown tool reported one")
	}
	if got := r.Owned("one"); !slices.Equal(got, []string{"a_tool", "b_tool"}) {
		t.Errorf("Owned(one) = %v", got)
	}
	if got := r.Owned("three"); len(got) != 0 {
		t.Errorf("Owned(three) = %v, want none", got)
	}
}

func TestFromWithAWrongService(t *testing.T) {
	t.Parallel()
	h := newHost(t, "not a registry")
	snap := load(t, h, `
- id: u
  name: tools-test-user
  config: {tools: [x]}
`)
	want := `apply: service "tools" is a string, not a *tools.Registry`
	if snap[0].State != host.Failed || snap[0].Error != want {
		t.Fatalf("u = %s %q, want failed %q", snap[0].State, snap[0].Error, want)
	}
}

func TestModelSubset(t *testing.T) {
	t.Parallel()
	r := tools.New()
	mustRegister(t, r, newFiber(t, "f"),
		tools.Tool{Name: "b_keep", Description: "B <b> & c.", Parameters: json.RawMessage(`{"type":"object",  "properties":{}}`), Execute: says("b")},
		tools.Tool{Name: "a_drop", Execute: says("a")},
		tools.Tool{Name: "c_keep", Execute: says("c")},
	)
	all := r.ModelJSON()
	// The raw bytes of each element of the unfiltered list, by name.
	var allEls []json.RawMessage
	if err := json.Unmarshal(all, &allEls); err != nil {
		t.Fatal(err)
	}
	byName := map[string]json.RawMessage{}
	for i, m := range parseModel(t, all) {
		byName[m.Function.Name] = allEls[i]
	}
	for _, tc := range []struct {
		name string
		keep func(string) bool
		want []string
	}{
		{"nil keeps all", nil, []string{"a_drop", "b_keep", "c_keep"}},
		{"filter", func(n string) bool { return strings.HasSuffix(n, "_keep") }, []string{"b_keep", "c_keep"}},
		{"none", func(string) bool { return false }, []string{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b, n := r.ModelSubset(tc.keep)
			if n != len(tc.want) {
				t.Fatalf("n = %d, want %d", n, len(tc.want))
			}
			var els []json.RawMessage
			if err := json.Unmarshal(b, &els); err != nil {
				t.Fatal(err)
			}
			names := []string{}
			for i, m := range parseModel(t, b) {
				names = append(names, m.Function.Name)
				// Each element is the very bytes of the unfiltered list.
				if want, ok := byName[m.Function.Name]; !ok || !bytes.Equal(els[i], want) {
					t.Fatalf("element %d is not the unfiltered list's bytes for %s:\n%s\n%s", i, m.Function.Name, els[i], want)
				}
			}
			if !slices.Equal(names, tc.want) {
				t.Fatalf("names %v, want %v", names, tc.want)
			}
			if tc.keep == nil && !bytes.Equal(b, all) {
				t.Fatalf("ModelSubset(nil) differs from ModelJSON:\n%s\n%s", b, all)
			}
		})
	}
	// The schema's spacing survives a filter.
	b, _ := r.ModelSubset(func(n string) bool { return n == "b_keep" })
	if want := `[{"type":"function","function":{"name":"b_keep","description":"B \u003cb\u003e \u0026 c.","parameters":{"type":"object",  "properties":{}}}}]`; string(b) != want {
		t.Fatalf("filtered = %s, want %s", b, want)
	}
}

// ModelOf is ModelSubset by names: the same bytes, in the same order,
// whatever the order of the names; unknown names and repeats left out.
func TestModelOf(t *testing.T) {
	t.Parallel()
	r := tools.New()
	mustRegister(t, r, newFiber(t, "f"),
		tools.Tool{Name: "b_keep", Description: "B <b> & c.", Parameters: json.RawMessage(`{"type":"object",  "properties":{}}`), Execute: says("b")},
		tools.Tool{Name: "a_drop", Execute: says("a")},
		tools.Tool{Name: "c_keep", Execute: says("c")},
	)
	want, wantN := r.ModelSubset(func(n string) bool { return strings.HasSuffix(n, "_keep") })
	got, n := r.ModelOf([]string{"c_keep", "nope", "b_keep", "c_keep"})
	if n != wantN || !bytes.Equal(got, want) {
		t.Fatalf("ModelOf = %s (%d)\nwant %s (%d)", got, n, want, wantN)
	}
	if got, n := r.ModelOf(nil); string(got) != "[]" || n != 0 {
		t.Fatalf("ModelOf(nil) = %s (%d)", got, n)
	}
}
