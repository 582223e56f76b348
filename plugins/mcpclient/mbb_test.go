package mcpclient

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/harness-go/harness/host"
	"github.com/harness-go/harness/internal/testkit/hosttest"
	"github.com/harness-go/harness/internal/testkit/proctest"
	"github.com/harness-go/harness/plugins/tools"
)

// callers calls tool without pause from n goroutines until stop is closed,
// and counts the calls that did not answer want.
type callers struct {
	calls, failed atomic.Int64
	mu            sync.Mutex
	first         string // the first failure
	wg            sync.WaitGroup
	stop          chan struct{}
}

func startCallers(hx *harness, n int, tool, args, want string) *callers {
	c := &callers{stop: make(chan struct{})}
	for range n {
		c.wg.Add(1)
		go func() {
			defer c.wg.Done()
			for {
				select {
				case <-c.stop:
					return
				default:
				}
				res := hx.Tools.Execute(context.Background(), tool, json.RawMessage(args))
				c.calls.Add(1)
				if res.IsError || res.Text != want {
					c.failed.Add(1)
					c.mu.Lock()
					if c.first == "" {
						c.first = res.Text
					}
					c.mu.Unlock()
				}
			}
		}()
	}
	return c
}

func (c *callers) halt() {
	close(c.stop)
	c.wg.Wait()
}

// Editing a server's arguments while 16 callers call it: every call
// answers, the registry never lacks the tool, each edit starts a new process
// beside the old one, and the old ones are gone at the end.
func TestMakeBeforeBreakUnderLoad(t *testing.T) {
	t.Parallel()
	hx := newHarness(t)
	entry := func(i int) string {
		return yml(hx.stdio("a", "srv", nil, "--only", "echo,pid", "--name", fmt.Sprintf("edit-%d", i)))
	}
	hx.mustLoad(entry(0))
	lacked := hosttest.LackingTool(t, hx.H, hx.Tools, "mcp__srv__echo") // the first registration is not a gap
	c := startCallers(hx, 16, "mcp__srv__echo", `{"message":"hi"}`, "echo: hi")
	seen := map[int]bool{hx.pid("a"): true}
	for i := 1; i <= 20; i++ {
		hx.mustLoad(entry(i)) // settles: the successor took over
		if st := hx.status("a"); st.Server == nil || st.Server.Name != fmt.Sprintf("edit-%d", i) {
			t.Fatalf("edit %d: the serving instance is %+v", i, st.Server)
		}
		seen[hx.pid("a")] = true
	}
	c.halt()
	if n := c.failed.Load(); n > 0 {
		t.Fatalf("%d of %d calls failed during the edits; the first: %q", n, c.calls.Load(), c.first)
	}
	if n := lacked(); n > 0 {
		t.Fatalf("the registry lacked the tool %d times", n)
	}
	if len(seen) != 21 {
		t.Fatalf("%d server processes for 21 configurations", len(seen))
	}
	t.Logf("%d calls during 20 edits", c.calls.Load())
}

// A new instance that cannot start never takes the old one down: it keeps
// serving, and the entry says the reload failed until the next change.
func TestMakeBeforeBreakNewInstanceHangs(t *testing.T) {
	t.Parallel()
	hx := newHarness(t)
	hx.mustLoad(yml(hx.stdio("a", "srv", nil, "--only", "echo,pid")))
	old := hx.status("a").PID
	c := startCallers(hx, 4, "mcp__srv__echo", `{"message":"hi"}`, "echo: hi")
	hx.mustLoad(yml(hx.stdio("a", "srv", map[string]any{"startupTimeoutMs": 1000}, "--only", "echo,pid", "--hang-on", "initialize")))
	e := hx.WaitEntry("a", waitTimeout, "the failed reload", func(e host.EntryStatus) bool { return e.Note != "" })
	c.halt()
	if e.State != host.Ready || !strings.HasPrefix(e.Note, "reload failed: ") || !strings.Contains(e.Note, "startup timed out after 1s") ||
		!strings.HasSuffix(e.Note, "; the previous instance is still serving") {
		t.Fatalf("entry %+v", e)
	}
	if n := c.failed.Load(); n > 0 {
		t.Fatalf("%d calls failed; the first: %q", n, c.first)
	}
	if st := hx.status("a"); st.PID != old || st.Phase != "connected" {
		t.Fatalf("the old instance does not serve: %+v", st)
	}
	hx.wantCall("mcp__srv__echo", `{"message":"still"}`, "echo: still", false)
	// The next good edit clears the note.
	hx.mustLoad(yml(hx.stdio("a", "srv", nil, "--only", "echo,pid", "--name", "fixed")))
	if e := hx.Entry("a"); e.Note != "" || e.State != host.Ready {
		t.Fatalf("after a good edit: %+v", e)
	}
}

// A call that waited through an outage is served by the instance an edit
// started; a second edit soon after must let it finish there (it counts on
// the instance that serves it, not the one it entered): docs/rfc/0003-mcp-client.md,
// "Connections that survive", step 4.
func TestMakeBeforeBreakTwiceWithAForwardedCall(t *testing.T) {
	t.Parallel()
	hx := newHarness(t)
	marker := filepath.Join(hx.Dir, "down")
	logB, received := proctest.Fifo(t, hx.Dir, "b.log", 1<<20)
	cfg := map[string]any{"toolCallTimeoutMs": 30000, "reconnect": map[string]any{"initialDelayMs": 20, "maxDelayMs": 20, "maxAttempts": 100000}}
	entry := func(name string, more ...string) string {
		return yml(hx.stdio("a", "srv", cfg, append([]string{"--only", "echo,sleep,pid", "--name", name}, more...)...))
	}
	hx.mustLoad(entry("a", "--exit-if-exists", marker)) // A stays down once the marker is there
	if err := os.WriteFile(marker, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	kill(hx.pid("a"))
	hx.waitState("a", host.Reconnecting)

	// The call enters the outage instance's executor and waits there.
	done := make(chan tools.Result, 1)
	go func() {
		done <- hx.Tools.Execute(context.Background(), "mcp__srv__sleep", json.RawMessage(`{"ms":1500}`))
	}()

	// Edit 1: B takes over; the waiting call goes to B's server.
	hx.mustLoad(entry("b", "--log", logB))
	if _, ok := received.Find(0, waitTimeout, func(l string) bool { return strings.Contains(l, `"method":"tools/call"`) }); !ok {
		t.Fatalf("the waiting call never reached the new instance's server; its log:\n%s", received.Text())
	}
	// Edit 2 while the call runs on B: C takes over, B drains.
	hx.mustLoad(entry("c"))
	if res := <-done; res.IsError || res.Text != "slept" {
		t.Fatalf("the forwarded call: %+v", res)
	}
}

// The live keys apply in place: same process, new values in status.
func TestLiveSettings(t *testing.T) {
	t.Parallel()
	hx := newHarness(t)
	base := map[string]any{"toolCallTimeoutMs": 10000}
	hx.mustLoad(yml(hx.stdio("a", "srv", base, "--only", "echo,add,pid")))
	pid := hx.status("a").PID
	for _, step := range []struct {
		name  string
		keys  map[string]any
		check func(st *Status) bool
		tools string
		line  string // in the text status
	}{
		{"toolCallTimeoutMs", map[string]any{"toolCallTimeoutMs": 1234}, func(st *Status) bool { return st.ToolCallTimeoutMs == 1234 }, "mcp__srv__add mcp__srv__echo mcp__srv__pid", "toolCallTimeoutMs 1234"},
		{"maxResultBytes", map[string]any{"maxResultBytes": 3}, func(st *Status) bool { return st.MaxResultBytes == 3 }, "mcp__srv__add mcp__srv__echo mcp__srv__pid", "maxResultBytes 3"},
		{"enabledTools", map[string]any{"enabledTools": []string{"e*", "pid"}}, func(st *Status) bool { return st.HiddenTools == 1 }, "mcp__srv__echo mcp__srv__pid", "enabledTools e* pid"},
		{"disabledTools", map[string]any{"enabledTools": []string{"e*", "pid"}, "disabledTools": []string{"echo"}}, func(st *Status) bool { return st.HiddenTools == 2 }, "mcp__srv__pid", "disabledTools echo"},
		{"reconnect", map[string]any{"reconnect": map[string]any{"maxAttempts": 3}}, func(st *Status) bool { return st.Reconnect.MaxAttempts == 3 }, "mcp__srv__add mcp__srv__echo mcp__srv__pid", "reconnect 3 attempts"},
	} {
		cfg := map[string]any{}
		for k, v := range base {
			cfg[k] = v
		}
		for k, v := range step.keys {
			cfg[k] = v
		}
		hx.mustLoad(yml(hx.stdio("a", "srv", cfg, "--only", "echo,add,pid")))
		hx.waitTools(step.name, func(names []string) bool { return strings.Join(names, " ") == step.tools })
		st := hx.status("a")
		if st.PID != pid || !step.check(st) {
			t.Fatalf("%s: pid %d (was %d), status %+v", step.name, st.PID, pid, st)
		}
		// The text status shows the value in use.
		if lines := strings.Join(st.StatusLines(), "\n"); !strings.Contains(lines, "settings: ") || !strings.Contains(lines, step.line) {
			t.Fatalf("%s: %q not in the status lines:\n%s", step.name, step.line, lines)
		}
	}
	// maxResultBytes applies to the next call.
	hx.mustLoad(yml(hx.stdio("a", "srv", map[string]any{"toolCallTimeoutMs": 10000, "maxResultBytes": 3}, "--only", "echo,add,pid")))
	hx.wantCall("mcp__srv__echo", `{"message":"abcdef"}`, "ech\n[result truncated: 3 of 12 bytes shown (maxResultBytes)]", false)
	if got := hx.status("a").PID; got != pid {
		t.Fatalf("pid %d, was %d", got, pid)
	}
}
