package mcpclient

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/harness-go/harness/fiber"
	"github.com/harness-go/harness/host"
	"github.com/harness-go/harness/internal/testkit/fixture"
	"github.com/harness-go/harness/internal/testkit/proctest"
	"github.com/harness-go/harness/plugins/tools"
)

// These tests run the fixture binary over stdio through a real host and tools
// registry: the acceptance list of the mcp-client issue.

func TestStdioToolNames(t *testing.T) {
	t.Parallel()
	hx := newHarness(t)
	hx.mustLoad(yml(hx.stdio("a", "srv", nil)))
	hx.wantState("a", host.Ready)

	var want []string
	for _, raw := range fixture.DefaultToolNames() {
		want = append(want, PublicName("srv", raw))
	}
	slices.Sort(want)
	hx.wantNames("mcp__", want...)

	st := hx.status("a")
	for _, tc := range []struct{ raw, public, result string }{
		{"echo", "mcp__srv__echo", "echo: hi"},
		{"admin.reset", "mcp__srv__admin_reset_3b185f786768", "reset done"},
		{fixture.LongToolName, "mcp__srv__long_xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx_0e45505be3c3", "long ok"},
	} {
		if got := st.Tools[tc.public]; got != tc.raw {
			t.Errorf("status maps %q to %q, want %q", tc.public, got, tc.raw)
		}
		// The server knows only the raw name: that it answers proves the
		// raw name went on the wire.
		hx.wantCall(tc.public, `{"message":"hi"}`, tc.result, false)
	}
	if len(fixture.LongToolName) != 100 {
		t.Fatalf("the fixture's long name is %d characters", len(fixture.LongToolName))
	}
	if st.ToolCount != len(want) || len(st.Tools) != len(want) || st.Phase != "connected" || st.PID == 0 ||
		st.Server == nil || st.Server.Name != "mcpfixture" || st.Server.Version != "0.1.0" || st.ProtocolVersion != "2025-11-25" || st.Syncs != 1 || st.LastSync == nil {
		t.Fatalf("status %+v", st)
	}
}

func TestStdioRawNameOnTheWire(t *testing.T) {
	t.Parallel()
	hx := newHarness(t)
	logFile := filepath.Join(hx.Dir, "wire.log")
	hx.mustLoad(yml(hx.stdio("a", "gh", nil, "--only", "set_tools", "--log", logFile)))
	// set_tools gives a name it does not know a handler answering
	// "<name> ok": the name the server received.
	for i, raw := range []string{"repo.search", "issues/list", "ünïcode", strings.Repeat("n", 70)} {
		hx.wantCall("mcp__gh__set_tools", fmt.Sprintf(`{"add":[%q]}`, raw), fmt.Sprintf("tools: %d", i+2), false)
		// Let the re-sync finish before the next call: while it swaps
		// generations, the server's tools are briefly unregistered.
		hx.waitTools(raw, func(names []string) bool { return slices.Contains(names, PublicName("gh", raw)) })
	}
	for _, raw := range []string{"repo.search", "issues/list", "ünïcode", strings.Repeat("n", 70)} {
		hx.wantCall(PublicName("gh", raw), `{}`, raw+" ok", false)
	}
	// The fixture's --log records methods and ids, not params: it shows the
	// calls arrived as tools/call, never under another method.
	data, err := os.ReadFile(logFile)
	if err != nil {
		t.Fatal(err)
	}
	calls := 0
	for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		var m struct{ Method string }
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("log line %q: %v", line, err)
		}
		if m.Method == "tools/call" {
			calls++
		}
	}
	if calls != 8 {
		t.Fatalf("%d tools/call in the fixture's log, want 8:\n%s", calls, data)
	}
}

func TestStdioPagination(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		count int
		page  int
	}{
		{"pages of one", 0, 1},
		{"pages of seven", 50, 7},
		{"one page exactly", 2, 30},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			hx := newHarness(t)
			hx.mustLoad(yml(hx.stdio("a", "p", nil, "--tools-count", strconv.Itoa(tc.count), "--page-size", strconv.Itoa(tc.page))))
			hx.wantState("a", host.Ready)
			want := len(fixture.DefaultToolNames()) + tc.count
			if got := len(hx.Names("mcp__p__")); got != want {
				t.Fatalf("%d tools registered, want %d", got, want)
			}
			// mcp-go's server cannot tell that a full page is the last one:
			// it sends a cursor, and the client reads one more, empty, page.
			pages := want/tc.page + 1
			hx.wantCall("mcp__p__listings", `{}`, strconv.Itoa(pages), false)
			if tc.count > 0 {
				hx.wantCall(fmt.Sprintf("mcp__p__gen_%05d", tc.count-1), `{}`, fmt.Sprintf("gen_%05d ok", tc.count-1), false)
			}
		})
	}
}

// modelTool is the element of ModelJSON a tool becomes.
func modelTool(name, description, schema string) []byte {
	n, _ := json.Marshal(name)
	d, _ := json.Marshal(description)
	return []byte(`{"type":"function","function":{"name":` + string(n) + `,"description":` + string(d) + `,"parameters":` + schema + `}}`)
}

func TestStdioSchemaVerbatim(t *testing.T) {
	t.Parallel()
	hx := newHarness(t)
	hx.mustLoad(yml(hx.stdio("a", "srv", nil, "--only", "schema_verbatim,cwd", "--schema-bytes", "100000")))
	model := hx.Tools.ModelJSON()
	want := modelTool("mcp__srv__schema_verbatim", "Its inputSchema must reach clients byte for byte.", fixture.SchemaVerbatim)
	if !bytes.Contains(model, want) {
		t.Fatalf("ModelJSON does not hold the schema byte for byte:\n%s\nwant the element\n%s", model, want)
	}
	tool, ok := hx.Tools.Lookup("mcp__srv__schema_verbatim")
	if !ok || string(tool.Parameters) != fixture.SchemaVerbatim {
		t.Fatalf("Parameters = %s", tool.Parameters)
	}
	big, ok := hx.Tools.Lookup("mcp__srv__big_schema")
	if !ok || len(big.Parameters) != 100000 {
		t.Fatalf("big_schema has %d bytes of schema, want 100000", len(big.Parameters))
	}
	// A tool whose schema mcp-go built (no raw layer) keeps its bytes too.
	cwd, _ := hx.Tools.Lookup("mcp__srv__cwd")
	if !json.Valid(cwd.Parameters) || !bytes.Contains(cwd.Parameters, []byte(`"type":"object"`)) {
		t.Fatalf("cwd's schema: %s", cwd.Parameters)
	}
	hx.wantCall("mcp__srv__schema_verbatim", `{"zeta":"z"}`, "schema ok", false)
}

func TestStdioInvalidListing(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, server string
		args         []string
		want         string
	}{
		{"a tool listed twice", "srv", []string{"--duplicate", "echo"},
			`invalid tool list: the server listed tool "echo" more than once`},
		{"a dotted tool listed twice", "srv", []string{"--duplicate", "admin.reset"},
			`invalid tool list: the server listed tool "admin.reset" more than once`},
		{"two raw names, one public name", "gh", []string{"--raw-name", "a.b", "--raw-name", "a_b_506b5e9b51cb"},
			`invalid tool list: the server listed tools "a.b" and "a_b_506b5e9b51cb", which both become "mcp__gh__a_b_506b5e9b51cb"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			hx := newHarness(t)
			hx.mustLoad(yml(hx.stdio("a", tc.server, nil, tc.args...)))
			e := hx.wantState("a", host.Failed, tc.want)
			if want := "connect: " + tc.want; e.Error != want {
				t.Fatalf("error %q, want %q", e.Error, want)
			}
			if names := hx.Tools.Names(); len(names) != 0 {
				t.Fatalf("an invalid listing registered %q", names)
			}
		})
	}
}

func TestStdioCollisionPairIsDetectedNeverMerged(t *testing.T) {
	t.Parallel()
	// Each alone is fine: only together do they collide.
	hx := newHarness(t)
	hx.mustLoad(yml(
		hx.stdio("one", "gh", nil, "--only", "echo", "--raw-name", "a.b"),
		hx.stdio("two", "gx", nil, "--only", "echo", "--raw-name", "a_b_506b5e9b51cb"),
	))
	hx.wantNames("mcp__gh__", "mcp__gh__a_b_506b5e9b51cb", "mcp__gh__echo")
	hx.wantNames("mcp__gx__", "mcp__gx__a_b_506b5e9b51cb", "mcp__gx__echo")
}

func TestStdioListChanged(t *testing.T) {
	t.Parallel()
	hx := newHarness(t)
	hx.mustLoad(yml(hx.stdio("a", "srv", nil, "--only", "echo,add,set_tools")))
	hx.wantNames("mcp__", "mcp__srv__add", "mcp__srv__echo", "mcp__srv__set_tools")

	hx.wantCall("mcp__srv__set_tools", `{"add":["fresh","multi"],"remove":["add"]}`, "tools: 4", false)
	hx.waitTools("fresh to appear and add to go", func(names []string) bool {
		return slices.Contains(names, "mcp__srv__fresh") && !slices.Contains(names, "mcp__srv__add")
	})
	hx.wantNames("mcp__", "mcp__srv__echo", "mcp__srv__fresh", "mcp__srv__multi", "mcp__srv__set_tools")
	hx.wantCall("mcp__srv__fresh", `{}`, "fresh ok", false)
	hx.wantCall("mcp__srv__multi", `{}`, "one\ntwo\nthree", false)
	hx.wantCall("mcp__srv__add", `{"a":1,"b":2}`, `Error: unknown tool "mcp__srv__add"`, true)
	// The generation is recorded, then logged.
	hx.Logs.Wait(t, waitTimeout, "the second registration", 2, msg("a", "tools registered"))
	if st := hx.status("a"); st.SyncError != "" || st.ToolCount != 4 || st.Tools["mcp__srv__fresh"] != "fresh" {
		t.Fatalf("status after the re-sync: %+v", st)
	}
	hx.wantState("a", host.Ready)
}

// waitListings calls the fixture's listings tool until the server has
// answered at least n tools/list requests. Each call is a round trip to the
// server; nothing sleeps.
func (hx *harness) waitListings(tool string, n int) int {
	hx.t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		res := hx.Call(tool, `{}`)
		got, err := strconv.Atoi(res.Text)
		if err != nil {
			hx.t.Fatalf("%s: %+v", tool, res)
		}
		if got >= n {
			return got
		}
		if time.Now().After(deadline) {
			hx.t.Fatalf("the server answered %d listings, want %d", got, n)
		}
	}
}

func TestStdioFailedResyncKeepsThePreviousGeneration(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, server string
		args         []string
		add          string // set_tools arguments that make the listing invalid
		want         string
		fix          string // set_tools arguments that make it valid again
		after        []string
	}{
		{"a name listed twice", "srv", []string{"--only", "echo,set_tools,listings", "--duplicate", "fresh"},
			`{"add":["fresh"]}`, `invalid tool list: the server listed tool "fresh" more than once`,
			`{"remove":["fresh"],"add":["other"]}`, []string{"mcp__srv__echo", "mcp__srv__listings", "mcp__srv__other", "mcp__srv__set_tools"}},
		{"a collision", "gh", []string{"--only", "echo,set_tools,listings"},
			`{"add":["a.b","a_b_506b5e9b51cb"]}`, `invalid tool list: the server listed tools "a.b" and "a_b_506b5e9b51cb", which both become "mcp__gh__a_b_506b5e9b51cb"`,
			`{"remove":["a_b_506b5e9b51cb"]}`, []string{"mcp__gh__a_b_506b5e9b51cb", "mcp__gh__echo", "mcp__gh__listings", "mcp__gh__set_tools"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			hx := newHarness(t)
			hx.mustLoad(yml(hx.stdio("a", tc.server, nil, tc.args...)))
			prefix := "mcp__" + tc.server + "__"
			before := hx.Names(prefix)
			model, version := hx.Tools.ModelJSON(), hx.Tools.Version()

			hx.Call(prefix+"set_tools", tc.add)
			hx.Logs.Wait(t, waitTimeout, "the failed re-sync", 1, msg("a", "re-sync failed; the previous tools stay registered"))
			if got := hx.Names(prefix); !slices.Equal(got, before) {
				t.Fatalf("after a failed re-sync: %q, want the previous %q", got, before)
			}
			if !bytes.Equal(hx.Tools.ModelJSON(), model) || hx.Tools.Version() != version {
				t.Fatal("a failed re-sync changed the registry")
			}
			st := hx.status("a")
			if st.SyncError != tc.want || st.Syncs != 2 || st.ToolCount != len(before) {
				t.Fatalf("status: %+v; want syncError %q", st, tc.want)
			}
			hx.wantCall(prefix+"echo", `{"message":"still here"}`, "echo: still here", false)
			hx.wantState("a", host.Ready)
			if lines := strings.Join(st.StatusLines(), "\n"); !strings.Contains(lines, "last sync failed: "+tc.want) {
				t.Fatalf("status lines do not show the failure:\n%s", lines)
			}

			// The next valid listing replaces the generation.
			hx.Call(prefix+"set_tools", tc.fix)
			hx.waitTools("the fixed listing", func(names []string) bool { return slices.Equal(names, tc.after) })
			// One more: re-syncs run one at a time, so once it registered,
			// the status of the one before is complete.
			hx.Call(prefix+"set_tools", `{"add":["last"]}`)
			hx.waitTools("the last listing", func(names []string) bool { return slices.Contains(names, prefix+"last") })
			if st := hx.status("a"); st.SyncError != "" {
				t.Fatalf("the sync error stayed: %+v", st)
			}
		})
	}
}

func TestStdioStormCostsAtMostTwoListings(t *testing.T) {
	t.Parallel()
	hx := newHarness(t)
	logFile := filepath.Join(hx.Dir, "wire.log")
	// One tool a page: a listing is 25 round trips, so the storm is over
	// long before the listing it started is, whatever the scheduler does.
	hx.mustLoad(yml(hx.stdio("a", "srv", nil, "--only", "storm,set_tools,listings,echo", "--tools-count", "20", "--page-size", "1", "--log", logFile)))
	const perListing = 24 + 1 // every tool, then one empty page
	hx.wantCall("mcp__srv__storm", `{"count":50}`, "sent 50", false)
	// A list_changed sent after the storm (the tool count stays): once its
	// tool is registered, every notification of the storm has been handled.
	hx.wantCall("mcp__srv__set_tools", `{"add":["marker"],"remove":["echo"]}`, "tools: 24", false)
	hx.waitTools("the marker", func(names []string) bool { return slices.Contains(names, "mcp__srv__marker") })
	// Dispose: no listing can start after that; the log has them all (the
	// last one perhaps cut short).
	hx.mustLoad("[]\n")
	requests := 0
	data, err := os.ReadFile(logFile)
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(data), "\n") {
		if strings.Contains(line, `"method":"tools/list"`) {
			requests++
		}
	}
	listings := (requests + perListing - 1) / perListing
	// The first listing, at most two for the storm, at most one for the
	// marker (it may share one of the storm's).
	if listings < 2 || listings > 4 {
		t.Fatalf("%d tools/list requests (%d listings) for a storm of 50 and one more list_changed, want 2 to 4 listings", requests, listings)
	}
	t.Logf("%d listings", listings)
}

func TestStdioUnchangedResyncKeepsModelJSON(t *testing.T) {
	t.Parallel()
	hx := newHarness(t)
	hx.mustLoad(yml(hx.stdio("a", "srv", nil, "--only", "echo,schema_verbatim,storm,set_tools,listings", "--duplicate", "poison")))
	model, version := hx.Tools.ModelJSON(), hx.Tools.Version()
	modelCopy := bytes.Clone(model)

	// A list_changed that changes nothing: the server answers a second
	// listing, identical to the first.
	hx.wantCall("mcp__srv__storm", `{"count":1}`, "sent 1", false)
	hx.waitListings("mcp__srv__listings", 2)
	// Then a re-sync that fails (poison is listed twice). Re-syncs run one
	// at a time, so when its failure is logged the unchanged one is done.
	hx.Call("mcp__srv__set_tools", `{"add":["poison"]}`)
	hx.Logs.Wait(t, waitTimeout, "the failed re-sync", 1, msg("a", "re-sync failed; the previous tools stay registered"))

	if got := hx.Tools.ModelJSON(); !bytes.Equal(got, modelCopy) {
		t.Fatalf("ModelJSON changed:\n%s\n%s", modelCopy, got)
	}
	if v := hx.Tools.Version(); v != version {
		t.Fatalf("the registry version went from %d to %d", version, v)
	}
	if st := hx.status("a"); st.Syncs != 3 {
		t.Fatalf("%d syncs, want 3", st.Syncs)
	}
	if n := len(hx.Logs.Find(msg("a", "tools registered"))); n != 1 {
		t.Fatalf("tools were registered %d times, want once", n)
	}
}

// native registers tools outside any mcp-client instance, the way another
// plugin would.
func native(t *testing.T, reg *tools.Registry, names ...string) {
	t.Helper()
	f := fiber.New(context.Background(), "native")
	t.Cleanup(func() { _ = f.Dispose(context.Background()) })
	var batch []tools.Tool
	for _, n := range names {
		batch = append(batch, tools.Tool{Name: n, Description: "native", Execute: func(context.Context, json.RawMessage) (tools.Result, error) {
			return tools.Result{Text: "native " + n}, nil
		}})
	}
	if _, err := reg.Register(f, batch...); err != nil {
		t.Fatal(err)
	}
}

func TestStdioSquatting(t *testing.T) {
	t.Parallel()
	t.Run("at connect", func(t *testing.T) {
		t.Parallel()
		hx := newHarness(t)
		native(t, hx.Tools, "mcp__srv__echo")
		hx.mustLoad(yml(hx.stdio("a", "srv", nil, "--only", "echo,add,multi")))
		want := `tool registration failed, no tools registered: tool "mcp__srv__echo" is already registered`
		e := hx.wantState("a", host.Failed)
		if e.Error != "connect: "+want {
			t.Fatalf("error %q, want %q", e.Error, "connect: "+want)
		}
		if got := hx.Tools.Names(); !slices.Equal(got, []string{"mcp__srv__echo"}) {
			t.Fatalf("tools %q: want only the squatter", got)
		}
		hx.wantCall("mcp__srv__echo", `{}`, "native mcp__srv__echo", false)
		if recs := hx.Logs.Find(msg("a", want)); len(recs) != 1 || recs[0].Level != slog.LevelError {
			t.Fatalf("the failure was not logged loudly: %+v", recs)
		}
	})
	t.Run("at a re-sync", func(t *testing.T) {
		t.Parallel()
		hx := newHarness(t)
		hx.mustLoad(yml(hx.stdio("a", "srv", nil, "--only", "echo,set_tools")))
		hx.wantNames("mcp__", "mcp__srv__echo", "mcp__srv__set_tools")
		native(t, hx.Tools, "mcp__srv__fresh")
		hx.Call("mcp__srv__set_tools", `{"add":["fresh"]}`)
		want := `tool registration failed, no tools registered: tool "mcp__srv__fresh" is already registered`
		hx.Logs.Wait(t, waitTimeout, "the rollback", 1, msg("a", want))
		// The seeds: the whole generation rolls back, never a partial set.
		if got := hx.Tools.Names(); !slices.Equal(got, []string{"mcp__srv__fresh"}) {
			t.Fatalf("tools %q: want only the squatter", got)
		}
		// The run loop's warning comes after the status is updated.
		hx.Logs.Wait(t, waitTimeout, "the re-sync warning", 1, msg("a", "re-sync failed; the server has no tools registered"))
		if st := hx.status("a"); st.ToolCount != 0 || len(st.Tools) != 0 || st.SyncError != want {
			t.Fatalf("status %+v", st)
		}
		if got := hx.Tools.Names(); !slices.Equal(got, []string{"mcp__srv__fresh"}) {
			t.Fatalf("tools %q", got)
		}
	})
}

func TestStdioNativeToolsCoexist(t *testing.T) {
	t.Parallel()
	hx := newHarness(t)
	native(t, hx.Tools, "search")
	hx.mustLoad(yml(
		hx.stdio("a", "github", nil, "--only", "echo", "--raw-name", "search"),
		hx.stdio("b", "web", nil, "--only", "echo", "--raw-name", "search"),
	))
	if got, want := hx.Tools.Names(), []string{"mcp__github__echo", "mcp__github__search", "mcp__web__echo", "mcp__web__search", "search"}; !slices.Equal(got, want) {
		t.Fatalf("tools %q, want %q", got, want)
	}
	hx.wantCall("search", `{}`, "native search", false)
	hx.wantCall("mcp__github__search", `{}`, "raw ok", false)
	hx.wantCall("mcp__web__search", `{}`, "raw ok", false)
}

func TestStdioServerNameReservation(t *testing.T) {
	t.Parallel()
	hx := newHarness(t)
	a := hx.stdio("a", "srv", nil, "--only", "echo,admin.reset")
	b := hx.stdio("b", "srv", nil, "--only", "add")
	hx.mustLoad(yml(a, b))
	hx.wantState("a", host.Ready)
	e := hx.wantState("b", host.Failed)
	const want = `apply: serverName "srv" is already in use by entry "a"`
	if e.Error != want {
		t.Fatalf("error %q, want %q", e.Error, want)
	}
	hx.wantNames("mcp__", "mcp__srv__admin_reset_3b185f786768", "mcp__srv__echo")
	model := bytes.Clone(hx.Tools.ModelJSON())

	// Disposing a releases the name: b can have it.
	hx.mustLoad(yml(b))
	if err := hx.H.Restart(context.Background(), "b"); err != nil {
		t.Fatal(err)
	}
	hx.settle()
	hx.wantState("b", host.Ready)
	hx.wantNames("mcp__", "mcp__srv__add")

	// Re-applying the same entry reproduces identical names, byte for byte.
	hx.mustLoad(yml(a))
	hx.wantState("a", host.Ready)
	if got := hx.Tools.ModelJSON(); !bytes.Equal(got, model) {
		t.Fatalf("re-applying changed the model JSON:\n%s\n%s", model, got)
	}
	if err := hx.H.Restart(context.Background(), "a"); err != nil {
		t.Fatal(err)
	}
	hx.settle()
	if got := hx.Tools.ModelJSON(); !bytes.Equal(got, model) {
		t.Fatalf("restarting changed the model JSON:\n%s\n%s", model, got)
	}

	// Within one reload every disposal comes first: the name moves from a
	// to c.
	hx.mustLoad(yml(hx.stdio("c", "srv", nil, "--only", "multi")))
	hx.wantState("c", host.Ready)
	hx.wantNames("mcp__", "mcp__srv__multi")
}

func TestStdioServerNamesArePerHost(t *testing.T) {
	t.Parallel()
	// Two hosts in one process share no reservation.
	one, two := newHarness(t), newHarness(t)
	one.mustLoad(yml(one.stdio("a", "srv", nil, "--only", "echo")))
	two.mustLoad(yml(two.stdio("a", "srv", nil, "--only", "echo")))
	one.wantState("a", host.Ready)
	two.wantState("a", host.Ready)
	one.wantNames("mcp__", "mcp__srv__echo")
	two.wantNames("mcp__", "mcp__srv__echo")
}

func TestStdioTimeout(t *testing.T) {
	t.Parallel()
	hx := newHarness(t)
	hx.mustLoad(yml(hx.stdio("a", "srv", map[string]any{"toolCallTimeoutMs": 200}, "--only", "sleep,cancellations,echo")))
	start := time.Now()
	res := hx.Call("mcp__srv__sleep", `{"ms":30000}`)
	if want := `Error: "sleep" timed out after 200ms (toolCallTimeoutMs)`; res.Text != want || !res.IsError {
		t.Fatalf("result %+v, want %q", res, want)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("the timeout took %s", d)
	}
	// The server was told: notifications/cancelled reached the sleep call.
	// (cancellations itself waits, up to waitMs, for the record.)
	res = hx.Call("mcp__srv__cancellations", `{"waitMs":100}`)
	var got struct{ Cancelled []json.RawMessage }
	if err := json.Unmarshal([]byte(res.Text), &got); err != nil || len(got.Cancelled) != 1 {
		t.Fatalf("cancellations: %+v", res)
	}
	// The connection is still good.
	hx.wantCall("mcp__srv__echo", `{"message":"after"}`, "echo: after", false)
	hx.wantState("a", host.Ready)
}

func TestStdioCallerCancellation(t *testing.T) {
	t.Parallel()
	hx := newHarness(t)
	hx.mustLoad(yml(hx.stdio("a", "srv", nil, "--only", "sleep,cancellations,echo", "--log", filepath.Join(hx.Dir, "wire.log"))))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan tools.Result)
	go func() { done <- hx.Tools.Execute(ctx, "mcp__srv__sleep", json.RawMessage(`{"ms":30000}`)) }()
	cancel()
	res := <-done
	if want := `Error: the call to "sleep" was cancelled`; res.Text != want || !res.IsError {
		t.Fatalf("result %+v, want %q", res, want)
	}
	res = hx.Call("mcp__srv__cancellations", `{"waitMs":10000}`)
	var got struct{ Cancelled []json.RawMessage }
	if err := json.Unmarshal([]byte(res.Text), &got); err != nil || len(got.Cancelled) != 1 {
		t.Fatalf("cancellations: %+v", res)
	}
	hx.wantCall("mcp__srv__echo", `{"message":"after"}`, "echo: after", false)
}

// With reconnect disabled (the seeds' behaviour), a server that dies takes
// its tools with it and fails its entry.
func TestStdioCrashMidCall(t *testing.T) {
	t.Parallel()
	hx := newHarness(t)
	hx.mustLoad(yml(hx.stdio("a", "srv", map[string]any{"toolCallTimeoutMs": 60000, "reconnect": map[string]any{"enabled": false}}, "--only", "crash,echo")))
	start := time.Now()
	res := hx.Call("mcp__srv__crash", `{"code":7,"stderr":"boom: disk on fire\n"}`)
	took := time.Since(start)
	if !res.IsError || !strings.Contains(res.Text, "the server exited with status 7") || !strings.Contains(res.Text, "boom: disk on fire") {
		t.Fatalf("result %+v", res)
	}
	if took > 5*time.Second {
		t.Fatalf("the crash was answered after %s", took)
	}
	e := hx.waitState("a", host.Failed)
	const want = "connection lost: the server exited with status 7; last stderr: boom: disk on fire"
	if e.Error != want {
		t.Fatalf("error %q, want %q", e.Error, want)
	}
	if names := hx.Tools.Names(); len(names) != 0 {
		t.Fatalf("tools left after the crash: %q", names)
	}
	hx.wantCall("mcp__srv__echo", `{}`, `Error: unknown tool "mcp__srv__echo"`, true)
}

func TestStdioCloseIsBounded(t *testing.T) {
	t.Parallel()
	hx := newHarness(t)
	pidFile := hx.pidFile("stubborn")
	hx.mustLoad(yml(hx.stdio("a", "srv", nil, "--only", "spawn,pid", "--ignore-sigterm", "--grandchild", "--pidfile", pidFile)))
	spawned := hx.Call("mcp__srv__spawn", `{"ignoreSigterm":true}`)
	if spawned.IsError {
		t.Fatalf("spawn: %+v", spawned)
	}
	pids := proctest.ReadPIDs(t, pidFile)
	if len(pids) != 3 {
		t.Fatalf("pid file holds %v, want the server and two grandchildren", pids)
	}
	for _, pid := range pids {
		if !running(pid) {
			t.Fatalf("process %d is not running before dispose", pid)
		}
	}
	start := time.Now()
	hx.mustLoad("[]\n") // dispose
	took := time.Since(start)
	for _, pid := range pids {
		if running(pid) {
			t.Errorf("process %d survived the dispose", pid)
		}
		if exists(pid) {
			t.Logf("process %d is dead but not reaped (its parent is gone and init does not reap)", pid)
		}
	}
	// stdin closed (1s), SIGTERM (2s), SIGKILL, then the group's leftovers.
	if took > 8*time.Second {
		t.Fatalf("dispose took %s", took)
	}
	t.Logf("dispose took %s", took)
}

// TestStdioEnvironment changes the process environment, so it does not run
// in parallel (no parallel test runs while it does).
func TestStdioEnvironment(t *testing.T) {
	t.Setenv("MCPCLIENT_TEST_TOKEN", "ambient-token-value")
	t.Setenv("MCPCLIENT_TEST_API_KEY", "ambient-key-value")
	t.Setenv("mcpclient_test_password", "ambient-password-value")
	t.Setenv("MCPCLIENT_TEST_SECRET_X", "ambient-secret-value")
	t.Setenv("MCPCLIENT_TEST_PLAIN", "ambient-plain-value")
	t.Setenv("MCPCLIENT_TEST_OVERRIDE", "ambient-override")
	hx := newHarness(t)
	hx.Setenv("JS_TOKEN", "from-js-value")
	hx.mustLoad(`- id: a
  name: mcp-client
  config:
    serverName: srv
    transport: stdio
    command: ` + fixtureBinary(t) + `
    args: [--only, env, --pidfile, ` + hx.pidFile("a") + `]
    env:
      EXPLICIT_TOKEN: explicit-token-value
      MCPCLIENT_TEST_OVERRIDE: explicit-override
      FROM_JS_TOKEN: !!js process.env.JS_TOKEN
      EMPTY: ""
`)
	for _, tc := range []struct{ name, want string }{
		{"MCPCLIENT_TEST_TOKEN", "<unset>"},
		{"MCPCLIENT_TEST_API_KEY", "<unset>"},
		{"mcpclient_test_password", "<unset>"},
		{"MCPCLIENT_TEST_SECRET_X", "<unset>"},
		{"MCPCLIENT_TEST_PLAIN", "ambient-plain-value"},
		{"EXPLICIT_TOKEN", "explicit-token-value"},
		{"MCPCLIENT_TEST_OVERRIDE", "explicit-override"},
		{"FROM_JS_TOKEN", "from-js-value"},
		{"EMPTY", ""},
		{"PATH", os.Getenv("PATH")},
	} {
		hx.wantCall("mcp__srv__env", fmt.Sprintf(`{"name":%q}`, tc.name), tc.want, false)
	}
	// Nothing of ours shows the values.
	st := hx.status("a")
	for _, k := range []string{"EXPLICIT_TOKEN", "MCPCLIENT_TEST_OVERRIDE", "FROM_JS_TOKEN", "EMPTY"} {
		if st.Env[k] != "<redacted>" {
			t.Errorf("status shows env %s as %q", k, st.Env[k])
		}
	}
	data, _ := json.Marshal(st)
	text := string(data) + strings.Join(st.StatusLines(), "\n") + hx.Log.String()
	for _, secret := range []string{"explicit-token-value", "explicit-override", "from-js-value", "ambient-token-value"} {
		if strings.Contains(text, secret) {
			t.Errorf("%q appears in the status or the log", secret)
		}
	}
}

func TestStdioWorkingDirectory(t *testing.T) {
	t.Parallel()
	hx := newHarness(t)
	sub := filepath.Join(hx.Dir, "work", "sub")
	if err := os.MkdirAll(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	abs := t.TempDir()
	wd, _ := os.Getwd()
	hx.mustLoad(yml(
		hx.stdio("rel", "rel", map[string]any{"cwd": "work/sub"}, "--only", "cwd"),
		hx.stdio("dot", "dot", map[string]any{"cwd": "."}, "--only", "cwd"),
		hx.stdio("abs", "abs", map[string]any{"cwd": abs}, "--only", "cwd"),
		hx.stdio("none", "none", nil, "--only", "cwd"),
	))
	for _, tc := range []struct{ tool, want string }{
		{"mcp__rel__cwd", sub},
		{"mcp__dot__cwd", hx.Dir},
		{"mcp__abs__cwd", abs},
		{"mcp__none__cwd", wd}, // empty: the harness's working directory
	} {
		res := hx.Call(tc.tool, `{}`)
		got, _ := filepath.EvalSymlinks(res.Text)
		want, _ := filepath.EvalSymlinks(tc.want)
		if res.IsError || got != want {
			t.Errorf("%s = %+v, want %q", tc.tool, res, tc.want)
		}
	}
}

func TestStdioCommandLookup(t *testing.T) {
	t.Parallel()
	hx := newHarness(t)
	bin := fixtureBinary(t)
	// A command with a slash is a path relative to the child's directory.
	link := filepath.Join(hx.Dir, "bin", "server")
	if err := os.MkdirAll(filepath.Dir(link), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(bin, link); err != nil {
		t.Fatal(err)
	}
	notExec := filepath.Join(hx.Dir, "bin", "not-executable")
	if err := os.WriteFile(notExec, []byte("#!/bin/sh\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(hx.Dir, "bin", "garbage"), []byte("neither ELF nor a script"), 0o755); err != nil {
		t.Fatal(err)
	}
	hx.mustLoad(yml(
		hx.stdio("relative", "rel", map[string]any{"command": "./bin/server", "cwd": "."}, "--only", "pid"),
		hx.stdio("missing", "missing", map[string]any{"command": "no-such-mcp-server-anywhere"}),
		hx.stdio("directory", "dir", map[string]any{"command": hx.Dir}),
		hx.stdio("not-executable", "noexec", map[string]any{"command": "./bin/not-executable", "cwd": "."}),
		hx.stdio("garbage", "garbage", map[string]any{"command": "./bin/garbage", "cwd": "."}),
	))
	hx.wantState("garbage", host.Failed, "connect: start ./bin/garbage: ", "exec format error")
	hx.wantState("relative", host.Ready)
	hx.wantState("missing", host.Failed, `connect: command "no-such-mcp-server-anywhere" not found in PATH`)
	hx.wantState("directory", host.Failed, "is a directory")
	hx.wantState("not-executable", host.Failed, "permission denied")
	if st := hx.status("missing"); st.Phase != "failed" {
		t.Fatalf("phase %q", st.Phase)
	}
}

func TestStdioStartupFailures(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		config map[string]any
		args   []string
		want   []string
		within time.Duration
	}{
		{"exit during initialize", nil, []string{"--exit-on", "initialize"},
			[]string{"connect: initialize: connection lost: the server exited with status 3; last stderr: mcpfixture: received initialize, exiting with status 3 (--exit-on)"}, 5 * time.Second},
		{"exit during the first listing", nil, []string{"--exit-on", "tools/list"},
			[]string{"connect: tools/list: connection lost: the server exited with status 3; last stderr: mcpfixture: received tools/list, exiting with status 3 (--exit-on)"}, 5 * time.Second},
		{"hang on initialize", map[string]any{"startupTimeoutMs": 300}, []string{"--hang-on", "initialize"},
			[]string{"connect: startup timed out after 300ms (startupTimeoutMs): initialize: context deadline exceeded"}, 5 * time.Second},
		// The bound leaves the start and initialize of a race-built server
		// on a loaded machine time to finish first (300 ms did not, once).
		{"hang on the first listing", map[string]any{"startupTimeoutMs": 2000}, []string{"--hang-on", "tools/list"},
			[]string{"connect: startup timed out after 2s (startupTimeoutMs): tools/list: context deadline exceeded"}, 5 * time.Second},
		{"a cwd that does not exist", map[string]any{"cwd": "no-such-folder"}, nil,
			[]string{"connect: cwd ", "no-such-folder: stat ", "no such file or directory"}, 5 * time.Second},
		{"a cwd that is a file", map[string]any{"cwd": "cordis.yml"}, nil,
			[]string{"connect: cwd ", "cordis.yml: not a directory"}, 5 * time.Second},
		{"bad flags", nil, []string{"--no-such-flag"},
			[]string{"connect: initialize: connection lost: the server exited with status 2; last stderr: mcpfixture: flag provided but not defined: -no-such-flag"}, 5 * time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			hx := newHarness(t)
			start := time.Now()
			err := hx.load(yml(hx.stdio("a", "srv", tc.config, tc.args...)))
			if err != nil {
				t.Fatal(err)
			}
			if d := time.Since(start); d > tc.within {
				t.Fatalf("failing took %s", d)
			}
			hx.wantState("a", host.Failed, tc.want...)
			if names := hx.Tools.Names(); len(names) != 0 {
				t.Fatalf("tools %q", names)
			}
		})
	}
}

func TestStdioProtocols(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, protocol string
		args           []string
		version        string
	}{
		{"auto against a current server", ProtocolAuto, nil, "2025-11-25"},
		{"auto against a legacy server", ProtocolAuto, []string{"--legacy"}, "2025-11-25"},
		{"auto against a server that ignores discover", ProtocolAuto, []string{"--discover-silent"}, "2025-11-25"},
		{"legacy against a current server", ProtocolLegacy, nil, "2025-11-25"},
		{"legacy against a server that ignores discover", ProtocolLegacy, []string{"--discover-silent"}, "2025-11-25"},
		{"modern against a current server", ProtocolModern, nil, "2026-07-28"},
		{"modern against a legacy server", ProtocolModern, []string{"--legacy"}, "2025-11-25"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			hx := newHarness(t)
			start := time.Now()
			hx.mustLoad(yml(hx.stdio("a", "srv", map[string]any{"protocol": tc.protocol}, append([]string{"--only", "echo,set_tools,admin.reset,structured"}, tc.args...)...)))
			took := time.Since(start)
			hx.wantState("a", host.Ready)
			// mcp-go's server/discover probe costs 5 s against a server
			// that ignores it; the handshake must not pay it.
			if took > 2*time.Second {
				t.Fatalf("connecting took %s", took)
			}
			st := hx.status("a")
			if st.ProtocolVersion != tc.version || st.Protocol != tc.protocol {
				t.Fatalf("protocol %q (%s), want %q", st.ProtocolVersion, st.Protocol, tc.version)
			}
			hx.wantCall("mcp__srv__echo", `{"message":"hi"}`, "echo: hi", false)
			hx.wantCall("mcp__srv__admin_reset_3b185f786768", `{}`, "reset done", false)
			hx.wantCall("mcp__srv__structured", `{}`, `{"answer":42,"unit":"none"}`, false)
			hx.Call("mcp__srv__set_tools", `{"add":["later"]}`)
			hx.waitTools("the list_changed", func(names []string) bool { return slices.Contains(names, "mcp__srv__later") })
		})
	}
}

func TestStdioNonObjectArguments(t *testing.T) {
	t.Parallel()
	hx := newHarness(t)
	hx.mustLoad(yml(hx.stdio("a", "srv", nil, "--only", "echo")))
	// An argument that is not an object goes out as {}: invalid JSON could
	// not even be encoded into the request, so an answer proves it.
	for _, args := range []string{``, ` `, `null`, `[1,2]`, `"hello"`, `42`, `true`, `{"message":`, `{"message":"x"} trailing`} {
		hx.wantCall("mcp__srv__echo", args, "echo: ", false)
	}
	hx.wantCall("mcp__srv__echo", ` {"message":"kept"} `, "echo: kept", false)
	big := strings.Repeat("m", 200<<10) // a message larger than the write buffer kept
	hx.wantCall("mcp__srv__echo", `{"message":"`+big+`"}`, "echo: "+big, false)
	hx.wantCall("mcp__srv__echo", `{"message":"small again"}`, "echo: small again", false)
}

func TestStdioResults(t *testing.T) {
	t.Parallel()
	hx := newHarness(t)
	hx.mustLoad(yml(hx.stdio("a", "srv", nil)))
	for _, tc := range []struct {
		tool, args, want string
		isError          bool
		discarded        string
	}{
		{tool: "multi", want: "one\ntwo\nthree"},
		{tool: "image", want: "here is an image\n[image: image/png, content discarded]", discarded: "[image: image/png, content discarded]"},
		{tool: "audio", want: "[audio: audio/wav, content discarded]", discarded: "[audio: audio/wav, content discarded]"},
		{tool: "resource", want: "[resource: content discarded]", discarded: "[resource: content discarded]"},
		{tool: "resource_link", want: "[resource: content discarded]", discarded: "[resource: content discarded]"},
		{tool: "hologram", want: "[unsupported content type: hologram]\nvisible"},
		{tool: "structured", want: `{"answer":42,"unit":"none"}`},
		{tool: "empty", want: "(empty returned no text content)"},
		{tool: "fail", args: `{"message":"it broke"}`, want: "Error: it broke", isError: true},
		{tool: "add", args: `{"a":0.25,"b":0.25}`, want: "0.5"},
		{tool: "badutf8", want: "bad bytes: \uFFFD\uFFFD, truncated: \uFFFD\uFFFD, end"}, // encoding/json: one U+FFFD a byte
		{tool: "ansi", want: fixture.AnsiText},                                           // the server's words pass through
		{tool: "big", args: `{"bytes":1000000}`, want: fixture.BigText(1000000)},
	} {
		t.Run(tc.tool, func(t *testing.T) {
			args := tc.args
			if args == "" {
				args = `{}`
			}
			res := hx.Call("mcp__srv__"+tc.tool, args)
			if res.Text != tc.want || res.IsError != tc.isError {
				t.Fatalf("%s = %+v, want %q isError=%v", tc.tool, clipText(res), clip(tc.want, 200), tc.isError)
			}
			if tc.discarded != "" {
				recs := hx.Logs.Find(func(r logRecord) bool {
					return r.Msg == "non-text content discarded from a tool result" && r.Attrs["tool"] == tc.tool
				})
				if len(recs) != 1 || recs[0].Level != slog.LevelWarn || recs[0].Attrs["placeholder"] != tc.discarded {
					t.Fatalf("log records for %s: %+v", tc.tool, recs)
				}
				// The same, as the text log has it.
				want := fmt.Sprintf(`level=WARN msg="non-text content discarded from a tool result" entry=a plugin=%s server=srv tool=%s placeholder="%s"`, KindName, tc.tool, tc.discarded)
				if !strings.Contains(hx.Log.String(), want) {
					t.Fatalf("the log does not hold %s", want)
				}
			}
		})
	}
	// A caller that asks for the raw result alone (the gateway) gets the
	// server's result, no text, and no warning of discarded content: it
	// passes the image on.
	raw := hx.Tools.Execute(tools.WithRawResult(context.Background()), "mcp__srv__image", json.RawMessage(`{}`))
	if raw.Text != "" || raw.IsError || !bytes.Contains(raw.Raw, []byte(`"type":"image"`)) {
		t.Fatalf("image, raw result only: %+v", clipText(raw))
	}
	if recs := hx.Logs.Find(func(r logRecord) bool {
		return r.Msg == "non-text content discarded from a tool result" && r.Attrs["tool"] == "image"
	}); len(recs) != 1 {
		t.Fatalf("%d warnings of discarded content for image, want the 1 of the model's call", len(recs))
	}
	if raw := hx.Tools.Execute(tools.WithRawResult(context.Background()), "mcp__srv__fail", json.RawMessage(`{"message":"it broke"}`)); !raw.IsError || len(raw.Raw) == 0 {
		t.Fatalf("fail, raw result only: %+v", raw)
	}
	// The description reaches the model as the server wrote it; status and
	// logs escape it (see StatusLines).
	if tool, _ := hx.Tools.Lookup("mcp__srv__ansi"); tool.Description != fixture.AnsiDescription {
		t.Fatalf("description %q", tool.Description)
	}
}

func clipText(r tools.Result) tools.Result {
	r.Text = clip(r.Text, 200)
	return r
}

func TestStdioSecretsNeverShow(t *testing.T) {
	t.Parallel()
	const (
		literal = "s3cr3t-literal-4711"
		fromJS  = "ghp_fromJS_0815"
		bearer  = "bearer-cred-9000"
	)
	hx := newHarness(t)
	hx.Setenv("GH", fromJS)
	// The server prints the secrets on stderr at startup, and again when it
	// crashes. The flags spell them with escapes, so that the command line
	// (which is not secret) does not hold them.
	escaped := func(s string) string { return strings.ReplaceAll(s, "-", `\x2d`) }
	hx.mustLoad(`- id: a
  name: mcp-client
  config:
    serverName: srv
    transport: stdio
    command: ` + fixtureBinary(t) + `
    args: [--only, "echo,crash", --pidfile, ` + hx.pidFile("a") + `, --stderr, 'leaking ` + escaped(literal) + ` and ` + escaped(bearer) + ` and \e[31mred\n']
    env:
      API_TOKEN: ` + literal + `
      GITHUB_TOKEN: !!js process.env.GH
      AUTH: Bearer ` + bearer + `
    reconnect: {enabled: false}
`)
	hx.wantState("a", host.Ready)
	hx.Logs.Wait(t, waitTimeout, "the stderr line", 1, msg("a", "server stderr"))
	st := hx.status("a")
	if want := []string{"leaking <redacted> and <redacted> and \x1b[31mred"}; !slices.Equal(st.Stderr, want) {
		t.Fatalf("status stderr %q, want %q", st.Stderr, want)
	}
	lines := strings.Join(st.StatusLines(), "\n")
	if !strings.Contains(lines, `  leaking <redacted> and <redacted> and \x1b[31mred`) {
		t.Fatalf("status lines do not show the escaped stderr:\n%s", lines)
	}
	if !strings.Contains(lines, "env: API_TOKEN=<redacted> AUTH=<redacted> GITHUB_TOKEN=<redacted>") {
		t.Fatalf("status lines do not list the env keys:\n%s", lines)
	}

	res := hx.Call("mcp__srv__crash", `{"code":1,"stderr":"dying with `+literal+` `+fromJS+`\n"}`)
	if !res.IsError || strings.Contains(res.Text, literal) || strings.Contains(res.Text, fromJS) || !strings.Contains(res.Text, "dying with <redacted> <redacted>") {
		t.Fatalf("the crash result: %+v", res)
	}
	e := hx.waitState("a", host.Failed)
	if !strings.Contains(e.Error, "last stderr: leaking <redacted> and <redacted> and \\x1b[31mred | dying with <redacted> <redacted>") {
		t.Fatalf("failure %q", e.Error)
	}

	data, _ := json.Marshal(hx.H.Snapshot())
	for _, text := range []string{hx.Log.String(), string(data), lines} {
		for _, secret := range []string{literal, fromJS, bearer} {
			if strings.Contains(text, secret) {
				t.Errorf("%q shows in:\n%s", secret, text)
			}
		}
	}
	if !strings.Contains(hx.Log.String(), "<redacted>") {
		t.Error("the log never shows <redacted>")
	}
}

// TestDisposeLeavesNothing runs alone (not in parallel): once a host with
// every kind of entry has closed, and its test servers too, no goroutine is
// left, and no process. (TestMain checks goroutines again after all tests.)
func TestDisposeLeavesNothing(t *testing.T) {
	before := goleak.IgnoreCurrent()
	t.Run("run and close", func(t *testing.T) {
		p, _ := mcpgoPeer(t)
		q := fixturePeer(t, fixture.Options{})
		hx := newHarness(t)
		hx.mustLoad(yml(
			hx.stdio("stdio", "s", nil),
			hx.stdio("stdio-modern", "m", map[string]any{"protocol": ProtocolModern}),
			hx.stdio("stdio-crashed", "c", map[string]any{"reconnect": map[string]any{"enabled": false}}, "--only", "crash"),
			hx.stdio("stdio-again", "r", map[string]any{"reconnect": map[string]any{"initialDelayMs": 1}}, "--only", "crash,echo"),
			httpEntry("mcpgo", "g", p.URL, nil),
			httpEntry("mcpgo-modern", "gm", p.URL, map[string]any{"protocol": ProtocolModern}),
			httpEntry("fixture", "f", q.URL, nil),
		))
		for _, e := range hx.H.Snapshot() {
			if e.State != host.Ready {
				t.Fatalf("%s", hx.States())
			}
		}
		hx.Call("mcp__c__crash", `{}`)
		hx.waitState("stdio-crashed", host.Failed)
		hx.Call("mcp__r__crash", `{}`) // reconnects: the server is started again
		hx.wantCall("mcp__r__echo", `{"message":"again"}`, "echo: again", false)
		hx.wantCall("mcp__g__echo", `{"message":"x"}`, "echo: x", false)
		hx.wantCall("mcp__gm__echo", `{"message":"x"}`, "echo: x", false)
		hx.wantCall("mcp__f__echo", `{"message":"x"}`, "echo: x", false)
		pids := append(proctest.ReadPIDs(t, hx.pidFile("stdio")), proctest.ReadPIDs(t, hx.pidFile("stdio-modern"))...)
		if err := hx.H.Close(context.Background()); err != nil {
			t.Fatal(err)
		}
		for _, pid := range pids {
			if running(pid) {
				t.Errorf("process %d is left", pid)
			}
		}
		if names := hx.Tools.Names(); len(names) != 0 {
			t.Errorf("tools left: %q", names)
		}
	}) // the subtest's cleanups close the host (again) and the servers
	goleak.VerifyNone(t, before)
}

func TestStdioToolFilters(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name              string
		enabled, disabled []string
		want              []string
		hidden            int
	}{
		{"no filter", nil, nil, []string{"mcp__srv__add", "mcp__srv__echo", "mcp__srv__empty", "mcp__srv__env"}, 0},
		{"enabled with a wildcard", []string{"e*"}, nil, []string{"mcp__srv__echo", "mcp__srv__empty", "mcp__srv__env"}, 1},
		{"disabled after enabled", []string{"e*"}, []string{"env", "emp?y"}, []string{"mcp__srv__echo"}, 3},
		{"disabled only", nil, []string{"add"}, []string{"mcp__srv__echo", "mcp__srv__empty", "mcp__srv__env"}, 1},
		{"nothing left", []string{"nope"}, nil, nil, 4},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			hx := newHarness(t)
			cfg := map[string]any{}
			if tc.enabled != nil {
				cfg["enabledTools"] = tc.enabled
			}
			if tc.disabled != nil {
				cfg["disabledTools"] = tc.disabled
			}
			hx.mustLoad(yml(hx.stdio("a", "srv", cfg, "--only", "echo,add,empty,env")))
			hx.wantState("a", host.Ready)
			hx.wantNames("mcp__", tc.want...)
			if st := hx.status("a"); st.HiddenTools != tc.hidden || st.ToolCount != len(tc.want) {
				t.Fatalf("status: %d tools, %d hidden; want %d, %d", st.ToolCount, st.HiddenTools, len(tc.want), tc.hidden)
			}
		})
	}
}

func TestStdioResultBudget(t *testing.T) {
	t.Parallel()
	hx := newHarness(t)
	// 8 bytes: "echo: hi" fits; in "echo: héllo" the 8th byte is inside é.
	hx.mustLoad(yml(hx.stdio("a", "srv", map[string]any{"maxResultBytes": 8}, "--only", "echo,big")))
	hx.wantCall("mcp__srv__echo", `{"message":"hi"}`, "echo: hi", false)
	hx.wantCall("mcp__srv__echo", `{"message":"héllo wörld"}`, "echo: h\n[result truncated: 7 of 19 bytes shown (maxResultBytes)]", false)
}

// TestStdioAlwaysLoad: alwaysLoad: true marks every tool of the server for
// the agent's tool search; without it no tool is marked.
func TestStdioAlwaysLoad(t *testing.T) {
	t.Parallel()
	hx := newHarness(t)
	hx.mustLoad(yml(
		hx.stdio("a", "always", map[string]any{"alwaysLoad": true}, "--only", "echo,add"),
		hx.stdio("b", "plain", nil, "--only", "echo"),
	))
	hx.wantState("a", host.Ready)
	hx.wantState("b", host.Ready)
	for name, want := range map[string]bool{"mcp__always__echo": true, "mcp__always__add": true, "mcp__plain__echo": false} {
		tool, ok := hx.Tools.Lookup(name)
		if !ok || tool.AlwaysLoad != want {
			t.Errorf("%s: registered %v, AlwaysLoad %v; want AlwaysLoad %v", name, ok, tool.AlwaysLoad, want)
		}
	}
}
