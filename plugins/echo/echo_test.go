package echo_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"slices"
	"strings"
	"testing"
	"time"
	_ "time/tzdata" // the zones the tests name, even where the system has none

	"go.uber.org/goleak"

	"github.com/harness-go/harness/host"
	"github.com/harness-go/harness/internal/testkit/testlog"
	"github.com/harness-go/harness/plugins/echo"
	"github.com/harness-go/harness/plugins/prompts"
	"github.com/harness-go/harness/plugins/resources"
	"github.com/harness-go/harness/plugins/tools"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// fixture is a real host with the tools service.
type fixture struct {
	t     *testing.T
	h     *host.Host
	tools *tools.Registry
	// resources and prompts are the other two services.
	resources *resources.Registry
	prompts   *prompts.Registry
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	log, _ := testlog.New(t)
	fx := &fixture{t: t, tools: tools.New(), resources: resources.New(), prompts: prompts.New()}
	fx.h = host.New(host.Options{Logger: log, DisposeTimeout: 5 * time.Second})
	fx.h.Provide(tools.Service, fx.tools)
	fx.h.Provide(resources.Service, fx.resources)
	fx.h.Provide(prompts.Service, fx.prompts)
	t.Cleanup(func() {
		if err := fx.h.Close(context.Background()); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return fx
}

// load loads a cordis.yml and waits until every entry is settled.
func (fx *fixture) load(src string) error {
	fx.t.Helper()
	f, err := host.ParseFile("cordis.yml", []byte(src))
	if err != nil {
		fx.t.Fatalf("ParseFile: %v", err)
	}
	if _, err := fx.h.Load(context.Background(), f); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := fx.h.Settle(ctx); err != nil {
		fx.t.Fatalf("Settle: %v", err)
	}
	return nil
}

func (fx *fixture) mustLoad(src string) []host.EntryStatus {
	fx.t.Helper()
	if err := fx.load(src); err != nil {
		fx.t.Fatalf("Load: %v", err)
	}
	return fx.h.Snapshot()
}

func (fx *fixture) entry(id string) host.EntryStatus {
	fx.t.Helper()
	for _, e := range fx.h.Snapshot() {
		if e.ID == id {
			return e
		}
	}
	fx.t.Fatalf("no entry %q", id)
	return host.EntryStatus{}
}

func (fx *fixture) wantNames(want ...string) {
	fx.t.Helper()
	if want == nil {
		want = []string{}
	}
	if got := fx.tools.Names(); !slices.Equal(got, want) {
		fx.t.Fatalf("tools %q, want %q", got, want)
	}
}

func (fx *fixture) call(name, args string) tools.Result {
	fx.t.Helper()
	return fx.tools.Execute(context.Background(), name, json.RawMessage(args))
}

const oneEcho = `
- id: echo
  name: echo
`

func TestToolsAppearWithTheirSchemas(t *testing.T) {
	t.Parallel()
	fx := newFixture(t)
	snap := fx.mustLoad(oneEcho)
	if snap[0].State != host.Ready {
		t.Fatalf("echo is %s %s", snap[0].State, snap[0].Error)
	}
	fx.wantNames("clock", "echo")

	var model []struct {
		Type     string `json:"type"`
		Function struct {
			Name        string `json:"name"`
			Description string `json:"description"`
			Parameters  struct {
				Type       string                     `json:"type"`
				Properties map[string]json.RawMessage `json:"properties"`
				Required   []string                   `json:"required"`
			} `json:"parameters"`
		} `json:"function"`
	}
	if err := json.Unmarshal(fx.tools.ModelJSON(), &model); err != nil {
		t.Fatalf("ModelJSON: %v", err)
	}
	if len(model) != 2 {
		t.Fatalf("%d tools in ModelJSON", len(model))
	}
	clock, echo := model[0].Function, model[1].Function
	if clock.Name != "clock" || clock.Parameters.Type != "object" || clock.Parameters.Properties["timezone"] == nil || len(clock.Parameters.Required) != 0 {
		t.Fatalf("clock = %+v", clock)
	}
	if !strings.Contains(string(clock.Parameters.Properties["timezone"]), "default UTC.") {
		t.Fatalf("clock's timezone parameter does not name the default: %s", clock.Parameters.Properties["timezone"])
	}
	if echo.Name != "echo" || echo.Parameters.Properties["message"] == nil || !slices.Equal(echo.Parameters.Required, []string{"message"}) {
		t.Fatalf("echo = %+v", echo)
	}
	for _, m := range model {
		if m.Type != "function" || m.Function.Description == "" {
			t.Fatalf("element %+v", m)
		}
	}
}

func TestCalls(t *testing.T) {
	t.Parallel()
	fx := newFixture(t)
	fx.mustLoad(`
- id: echo
  name: echo
  config:
    timezone: Asia/Tokyo
`)
	tokyo, err := time.LoadLocation("Asia/Tokyo")
	if err != nil {
		t.Fatal(err)
	}
	paris, err := time.LoadLocation("Europe/Paris")
	if err != nil {
		t.Fatal(err)
	}
	const badArgs = `Error: expected {"message": "<text>"}`
	for _, tc := range []struct {
		name, tool, args string
		want             string         // exact text, when zone is nil
		isError          bool           //
		zone             *time.Location // the clock's answer must be RFC 3339 in this zone
	}{
		{name: "echo", tool: "echo", args: `{"message":"hello, world"}`, want: "hello, world"},
		{name: "echo keeps the text unchanged", tool: "echo", args: `{"message":"  <b>\"x\"</b>\n\tété  "}`, want: "  <b>\"x\"</b>\n\tété  "},
		{name: "echo of an empty message", tool: "echo", args: `{"message":""}`, want: ""},
		{name: "echo ignores other keys", tool: "echo", args: `{"message":"m","extra":1}`, want: "m"},
		{name: "echo without message", tool: "echo", args: `{}`, want: badArgs, isError: true},
		{name: "echo with a null message", tool: "echo", args: `{"message":null}`, want: badArgs, isError: true},
		{name: "echo with a number", tool: "echo", args: `{"message":42}`, want: badArgs, isError: true},
		{name: "echo without arguments", tool: "echo", args: ``, want: badArgs, isError: true},
		{name: "echo with invalid JSON", tool: "echo", args: `{"message":`, want: badArgs, isError: true},
		{name: "clock in its default zone", tool: "clock", args: `{}`, zone: tokyo},
		{name: "clock without arguments", tool: "clock", args: ``, zone: tokyo},
		{name: "clock with a zone", tool: "clock", args: `{"timezone":"Europe/Paris"}`, zone: paris},
		{name: "clock in UTC", tool: "clock", args: `{"timezone":"UTC"}`, zone: time.UTC},
		{name: "clock with a bad zone", tool: "clock", args: `{"timezone":"Mars/Olympus_Mons"}`, want: `Error: unknown time zone "Mars/Olympus_Mons"`, isError: true},
		{name: "clock with a path as zone", tool: "clock", args: `{"timezone":"../../etc/passwd"}`, want: `Error: unknown time zone "../../etc/passwd"`, isError: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			before := time.Now().Truncate(time.Second)
			res := fx.call(tc.tool, tc.args)
			after := time.Now()
			if res.IsError != tc.isError {
				t.Fatalf("%s(%s) = %+v, want isError=%v", tc.tool, tc.args, res, tc.isError)
			}
			if tc.zone == nil {
				if res.Text != tc.want {
					t.Fatalf("%s(%s) = %q, want %q", tc.tool, tc.args, res.Text, tc.want)
				}
				return
			}
			got, err := time.Parse(time.RFC3339, res.Text)
			if err != nil {
				t.Fatalf("clock answered %q: not RFC 3339: %v", res.Text, err)
			}
			if got.Before(before) || got.After(after) {
				t.Fatalf("clock answered %s, outside [%s, %s]", got, before, after)
			}
			if want := got.In(tc.zone).Format(time.RFC3339); res.Text != want {
				t.Fatalf("clock answered %q, want %q (in %s)", res.Text, want, tc.zone)
			}
		})
	}
}

// The package doc's cordis.yml is the model people copy: it must load as
// it is, with its keys under config: (gofmt once flattened them).
func TestPackageDocExampleLoads(t *testing.T) {
	t.Parallel()
	src, err := os.ReadFile("echo.go")
	if err != nil {
		t.Fatal(err)
	}
	var yml strings.Builder
	in := false
	for _, line := range strings.Split(string(src), "\n") {
		switch {
		case line == "//\t# cordis.yml":
			in = true
		case in && strings.HasPrefix(line, "//\t"):
			yml.WriteString(strings.TrimPrefix(line, "//\t") + "\n")
		case in:
			in = false
		}
	}
	if yml.Len() == 0 {
		t.Fatal("no cordis.yml example in the package doc")
	}
	fx := newFixture(t)
	fx.mustLoad(yml.String())
	fx.wantNames("demo_clock", "demo_echo", "demo_greet")
}

func TestPrefix(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, prefix string
		want         []string
	}{
		{"none", ``, []string{"clock", "echo"}},
		{"underscore", `demo_`, []string{"demo_clock", "demo_echo"}},
		{"dash", `x-`, []string{"x-clock", "x-echo"}},
		{"no separator", `my`, []string{"myclock", "myecho"}},
		{"longest allowed", strings.Repeat("p", 58), []string{strings.Repeat("p", 58) + "clock", strings.Repeat("p", 58) + "echo"}}, // and the prompt ppp…repeat, 64
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			fx := newFixture(t)
			fx.mustLoad(`
- id: e
  name: echo
  config:
    prefix: "` + tc.prefix + `"
`)
			fx.wantNames(tc.want...)
			for _, n := range tc.want {
				if res := fx.call(n, `{"message":"hi"}`); res.IsError {
					t.Fatalf("%s: %+v", n, res)
				}
			}
			if res := fx.call(tc.prefix+"echo", `{"message":"hi"}`); res.Text != "hi" {
				t.Fatalf("%secho answered %+v", tc.prefix, res)
			}
		})
	}
}

func TestInvalidConfigIsRefusedAtTheKey(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, config, want string
	}{
		{
			"prefix with a space",
			`    prefix: "bad prefix"`,
			`cordis.yml:7:13: entry "e": config.prefix: "bad prefix" would make invalid tool names (letters, digits, _ and - only)`,
		},
		{
			"prefix with a dot",
			`    prefix: my.`,
			`cordis.yml:7:13: entry "e": config.prefix: "my." would make invalid tool names (letters, digits, _ and - only)`,
		},
		{
			"prefix too long",
			`    prefix: ` + strings.Repeat("p", 60),
			`cordis.yml:7:13: entry "e": config.prefix: "` + strings.Repeat("p", 60) + `" would make invalid tool names (letters, digits, _ and - only)`,
		},
		{
			"unknown time zone",
			`    timezone: Mars/Olympus_Mons`,
			`cordis.yml:7:15: entry "e": config.timezone: unknown time zone "Mars/Olympus_Mons"`,
		},
		{
			"time zone as a path",
			`    timezone: "../UTC"`,
			`cordis.yml:7:15: entry "e": config.timezone: unknown time zone "../UTC"`,
		},
		{
			"unknown key",
			`    prefx: a_`,
			`cordis.yml:7:5: entry "e": config.prefx: unknown key "prefx" (known keys: greet, prefix, timezone)`,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			fx := newFixture(t)
			fx.mustLoad(oneEcho)
			v := fx.tools.Version()
			err := fx.load(`
- id: echo
  name: echo
- id: e
  name: echo
  config:
` + tc.config + "\n")
			var le *host.LoadError
			if !errors.As(err, &le) {
				t.Fatalf("Load error = %v, want a *host.LoadError", err)
			}
			if err.Error() != tc.want {
				t.Fatalf("Load error\n got %s\nwant %s", err, tc.want)
			}
			// Refused as a whole: the running instance and its tools are untouched.
			fx.wantNames("clock", "echo")
			if fx.tools.Version() != v {
				t.Fatal("a refused file changed the tools")
			}
			if snap := fx.h.Snapshot(); len(snap) != 1 || snap[0].State != host.Ready {
				t.Fatalf("snapshot %+v", snap)
			}
		})
	}
}

func TestInstancesCoexistAndDisposeAlone(t *testing.T) {
	t.Parallel()
	fx := newFixture(t)
	fx.mustLoad(`
- id: plain
  name: echo
- id: a
  name: echo
  config: {prefix: a_, timezone: Asia/Tokyo}
- id: b
  name: echo
  config: {prefix: b_, timezone: America/New_York}
`)
	fx.wantNames("a_clock", "a_echo", "b_clock", "b_echo", "clock", "echo")
	for _, tc := range []struct{ tool, zone string }{
		{"a_clock", "Asia/Tokyo"},
		{"b_clock", "America/New_York"},
		{"clock", "UTC"},
	} {
		loc, err := time.LoadLocation(tc.zone)
		if err != nil {
			t.Fatal(err)
		}
		res := fx.call(tc.tool, `{}`)
		got, err := time.Parse(time.RFC3339, res.Text)
		if err != nil || res.Text != got.In(loc).Format(time.RFC3339) {
			t.Fatalf("%s answered %+v, want a time in %s", tc.tool, res, tc.zone)
		}
	}

	// Loading a file without b disposes b, and only b.
	fx.mustLoad(`
- id: plain
  name: echo
- id: a
  name: echo
  config: {prefix: a_, timezone: Asia/Tokyo}
`)
	fx.wantNames("a_clock", "a_echo", "clock", "echo")
	if res := fx.call("b_echo", `{"message":"x"}`); res.Text != `Error: unknown tool "b_echo"` {
		t.Fatalf("b_echo after disposal answered %+v", res)
	}
	if res := fx.call("a_echo", `{"message":"still here"}`); res.Text != "still here" {
		t.Fatalf("a_echo answered %+v", res)
	}

	// A changed prefix replaces the tools.
	fx.mustLoad(`
- id: plain
  name: echo
- id: a
  name: echo
  config: {prefix: c_}
`)
	fx.wantNames("c_clock", "c_echo", "clock", "echo")

	fx.mustLoad(`[]`)
	fx.wantNames()
	if got := string(fx.tools.ModelJSON()); got != "[]" {
		t.Fatalf("ModelJSON = %s", got)
	}
}

func TestSamePrefixTwiceFailsTheSecond(t *testing.T) {
	t.Parallel()
	fx := newFixture(t)
	fx.mustLoad(`
- id: first
  name: echo
  config: {prefix: p_}
- id: second
  name: echo
  config: {prefix: p_}
`)
	if s := fx.entry("first"); s.State != host.Ready {
		t.Fatalf("first = %s %s", s.State, s.Error)
	}
	s := fx.entry("second")
	if want := `apply: tool "p_echo" is already registered`; s.State != host.Failed || s.Error != want {
		t.Fatalf("second = %s %q, want failed %q", s.State, s.Error, want)
	}
	fx.wantNames("p_clock", "p_echo")
	// A failed instance still reports its last status, with no tools.
	if d, ok := s.Details.(map[string]any); !ok || len(d["tools"].([]string)) != 0 {
		t.Fatalf("a failed instance reports %v", s.Details)
	}

	// Once the first is gone, the second can start.
	fx.mustLoad(`
- id: second
  name: echo
  config: {prefix: p_, timezone: UTC}
`)
	if s := fx.entry("second"); s.State != host.Ready {
		t.Fatalf("second = %s %s", s.State, s.Error)
	}
	fx.wantNames("p_clock", "p_echo")
}

func TestStatus(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, config, want string
	}{
		{"defaults", ``, `{"timezone":"UTC","tools":["echo","clock"]}`},
		{"prefix and zone", `{prefix: demo_, timezone: Europe/Paris}`, `{"timezone":"Europe/Paris","tools":["demo_echo","demo_clock"]}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			fx := newFixture(t)
			src := "- id: e\n  name: echo\n"
			if tc.config != "" {
				src += "  config: " + tc.config + "\n"
			}
			fx.mustLoad(src)
			s := fx.entry("e")
			b, err := json.Marshal(s.Details)
			if err != nil {
				t.Fatal(err)
			}
			if string(b) != tc.want {
				t.Fatalf("status %s, want %s", b, tc.want)
			}
		})
	}
}

func TestWithoutTheToolsService(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		service any // nil: not provided
		state   host.State
		err     string
	}{
		{"missing", nil, host.Pending, ""},
		{"wrong type", map[string]string{}, host.Failed, `apply: service "tools" is a map[string]string, not a *tools.Registry`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			log, _ := testlog.New(t)
			h := host.New(host.Options{Logger: log})
			t.Cleanup(func() { _ = h.Close(context.Background()) })
			if tc.service != nil {
				h.Provide(tools.Service, tc.service)
			}
			h.Provide(resources.Service, resources.New())
			h.Provide(prompts.Service, prompts.New())
			f, err := host.ParseFile("cordis.yml", []byte("- id: e\n  name: echo\n"))
			if err != nil {
				t.Fatal(err)
			}
			if _, err := h.Load(context.Background(), f); err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			if err := h.Settle(ctx); err != nil {
				t.Fatal(err)
			}
			s := h.Snapshot()[0]
			if s.State != tc.state || s.Error != tc.err {
				t.Fatalf("e = %s %q, want %s %q", s.State, s.Error, tc.state, tc.err)
			}
			if tc.state == host.Pending && !slices.Equal(s.Missing, []string{tools.Service}) {
				t.Fatalf("missing %v", s.Missing)
			}
		})
	}
}

// TestStatusDuringApply reads the status while instances start: Snapshot
// calls Status from the caller's goroutine, whatever the host is doing.
func TestStatusDuringApply(t *testing.T) {
	t.Parallel()
	fx := newFixture(t)
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			select {
			case <-stop:
				return
			default:
			}
			for _, s := range fx.h.Snapshot() {
				if s.Details != nil {
					if _, err := json.Marshal(s.Details); err != nil {
						t.Error(err)
					}
				}
			}
		}
	}()
	for i := range 20 {
		src := `
- id: a
  name: echo
  config: {prefix: a` + string(rune('a'+i)) + `_}
- id: b
  name: echo
  config: {prefix: b` + string(rune('a'+i)) + `_}
`
		fx.mustLoad(src)
	}
	close(stop)
	<-done
	fx.wantNames("at_clock", "at_echo", "bt_clock", "bt_echo")
}

// formFront answers every form with its answer and keeps what it was asked.
type formFront struct {
	answer string
	asked  []tools.Question
}

func (f *formFront) Ask(_ context.Context, q tools.Question) (json.RawMessage, error) {
	f.asked = append(f.asked, q)
	return json.RawMessage(f.answer), nil
}
func (f *formFront) Notify(context.Context, tools.Notification) {}
func (f *formFront) Offers() tools.Offers                       { return tools.Offers{Elicitation: true} }

// greet asks its call's front for a name; without a front (nobody to ask)
// it is declined and greets anyway.
func TestGreetAsksItsFront(t *testing.T) {
	t.Parallel()
	fx := newFixture(t)
	fx.mustLoad(`
- id: e
  name: echo
  config:
    greet: true
`)
	fx.wantNames("clock", "echo", "greet")
	for _, tc := range []struct{ answer, want string }{
		{`{"action":"accept","content":{"name":"Ada","manner":"plain"}}`, "Hello, Ada."},
		{`{"action":"accept","content":{"name":"Ada","manner":"cheerful"}}`, "Hello, Ada! Lovely to meet you!"},
		{`{"action":"cancel"}`, "Hello, whoever you are (you chose to cancel)."},
	} {
		f := &formFront{answer: tc.answer}
		res := fx.tools.Execute(tools.WithFront(context.Background(), f), "greet", json.RawMessage(`{}`))
		if res.IsError || res.Text != tc.want {
			t.Errorf("answered %s: %+v, want %q", tc.answer, res, tc.want)
		}
		if len(f.asked) != 1 || f.asked[0].Method != tools.MethodElicit || f.asked[0].Tool != "greet" || !json.Valid(f.asked[0].Params) {
			t.Errorf("asked %+v", f.asked)
		}
	}
	if res := fx.call("greet", `{}`); res.Text != "Hello, whoever you are (you chose to decline)." {
		t.Errorf("without a front: %+v", res)
	}
}

// TestResourceAndPrompt: the example resource and prompt are registered with
// the tools, read and rendered, and gone with the entry.
func TestResourceAndPrompt(t *testing.T) {
	t.Parallel()
	fx := newFixture(t)
	if err := fx.load("- id: e\n  name: echo\n  config:\n    prefix: demo_\n"); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	list := fx.resources.List("")
	if len(list) != 1 || list[0].Server != "demo_echo" || list[0].URI != echo.AboutURI || list[0].MIMEType != "text/plain" {
		t.Fatalf("resources = %+v", list)
	}
	res, err := fx.resources.Read(ctx, "demo_echo", echo.AboutURI)
	if err != nil || len(res.Contents) != 1 || !strings.Contains(*res.Contents[0].Text, "demo_echo and demo_clock") {
		t.Fatalf("read = %+v, %v", res, err)
	}
	if _, err := fx.resources.Read(ctx, "demo_echo", "echo://nothing"); err == nil {
		t.Fatal("an unknown uri was read")
	}
	out, err := fx.prompts.Get(ctx, "demo_repeat", map[string]string{"message": "hi"})
	if err != nil || len(out.Messages) != 1 || out.Messages[0].Text() != `Call the tool demo_echo with the message "hi", and tell me what it answered.` {
		t.Fatalf("get = %+v, %v", out, err)
	}
	// The prompt suggests messages that start with what is typed.
	c, err := fx.prompts.CompleteArgument(ctx, "demo_repeat", "message", "hel", nil)
	if err != nil || !slices.Equal(c.Values, []string{"hello", "hello world"}) {
		t.Fatalf("complete = %+v, %v", c, err)
	}
	if c, err := fx.prompts.CompleteArgument(ctx, "demo_repeat", "other", "", nil); err != nil || len(c.Values) != 0 {
		t.Fatalf("complete of another argument = %+v, %v", c, err)
	}
	if err := fx.load("[]"); err != nil {
		t.Fatal(err)
	}
	if fx.resources.Len() != 0 || fx.prompts.Len() != 0 {
		t.Fatalf("left after the entry went: %d resources, %d prompts", fx.resources.Len(), fx.prompts.Len())
	}
}
