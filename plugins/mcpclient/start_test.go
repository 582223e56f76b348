package mcpclient

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/harness-go/harness/host"
	"github.com/harness-go/harness/internal/testkit/fixture"
	"github.com/harness-go/harness/plugins/tools"
)

// start runs a call through the registry's Starter path and waits for
// done; it fails the test when the call could not be started.
func (hx *harness) start(ctx context.Context, name, args string) tools.Result {
	hx.t.Helper()
	got := make(chan tools.Result, 2)
	// Raw is valid until done returns (tools.Starter): kept, it is copied.
	keep := func(r tools.Result) { r.Raw = bytes.Clone(r.Raw); got <- r }
	if !hx.Tools.Start(ctx, name, json.RawMessage(args), keep) {
		hx.t.Fatalf("%s was not started", name)
	}
	select {
	case r := <-got:
		select {
		case again := <-got:
			hx.t.Fatalf("done called twice: %+v, then %+v", r, again)
		case <-time.After(10 * time.Millisecond):
		}
		return r
	case <-time.After(waitTimeout):
		hx.t.Fatalf("%s: no result", name)
		return tools.Result{}
	}
}

// A call started without waiting (tools.Starter, the gateway's path over
// stdio) answers what Execute answers: the text, an error result, a raw
// result alone when asked; at its timeout and at its caller's cancellation
// the server is told, as for a call that waits.
func TestStdioStartedCalls(t *testing.T) {
	t.Parallel()
	hx := newHarness(t)
	hx.mustLoad(yml(hx.stdio("a", "srv", map[string]any{"toolCallTimeoutMs": 300}, "--only", "echo,fail,image,sleep,cancellations")))
	hx.wantState("a", host.Ready)
	bg := context.Background()
	for _, tc := range []struct{ name, args string }{
		{"mcp__srv__echo", `{"message":"started"}`},
		{"mcp__srv__fail", `{"message":"it broke"}`},
		{"mcp__srv__image", `{}`},
		{"mcp__srv__nope", `{}`},
	} {
		if tc.name == "mcp__srv__nope" {
			if hx.Tools.Start(bg, tc.name, json.RawMessage(tc.args), func(tools.Result) { t.Error("done of an unknown tool") }) {
				t.Fatal("an unknown tool was started")
			}
			continue
		}
		want := hx.Call(tc.name, tc.args)
		got := hx.start(bg, tc.name, tc.args)
		if got.Text != want.Text || got.IsError != want.IsError || string(got.Raw) != string(want.Raw) {
			t.Errorf("%s started: %+v, want what Execute answers: %+v", tc.name, got, want)
		}
		// Over stdio, the result carries its connection's burst, for the
		// caller to write with the others read at once (tools.Burst).
		if got.Burst == nil {
			t.Errorf("%s started: no burst with the result", tc.name)
		}
	}
	if got := hx.start(tools.WithRawResult(bg), "mcp__srv__image", `{}`); got.Text != "" || !strings.Contains(string(got.Raw), `"type":"image"`) {
		t.Errorf("image started, raw result only: %+v", got)
	}

	res := hx.start(bg, "mcp__srv__sleep", `{"ms":30000}`)
	if want := `Error: "sleep" timed out after 300ms (toolCallTimeoutMs)`; res.Text != want || !res.IsError {
		t.Fatalf("timeout: %+v, want %q", res, want)
	}
	wantCancellations(t, hx, 1)

	ctx, cancel := context.WithCancel(bg)
	got := make(chan tools.Result, 1)
	if !hx.Tools.Start(ctx, "mcp__srv__sleep", json.RawMessage(`{"ms":30000}`), func(r tools.Result) { got <- r }) {
		t.Fatal("sleep was not started")
	}
	cancel()
	if res := <-got; res.Text != `Error: the call to "sleep" was cancelled` || !res.IsError {
		t.Fatalf("cancelled: %+v", res)
	}
	wantCancellations(t, hx, 2)

	// A context with an AfterFunc method of its own (the gateway's stdio
	// requests) is asked for the call's hook directly, and its end
	// cancels the call as any context's does.
	own := &ownAfterFunc{}
	own.Context, cancel = context.WithCancel(bg)
	if !hx.Tools.Start(own, "mcp__srv__sleep", json.RawMessage(`{"ms":30000}`), func(r tools.Result) { got <- r }) {
		t.Fatal("sleep was not started")
	}
	if n := own.asked.Load(); n != 1 {
		t.Fatalf("the context's own AfterFunc was asked %d times, want 1", n)
	}
	cancel()
	if res := <-got; res.Text != `Error: the call to "sleep" was cancelled` || !res.IsError {
		t.Fatalf("cancelled through the context's AfterFunc: %+v", res)
	}
	wantCancellations(t, hx, 3)
	hx.wantCall("mcp__srv__echo", `{"message":"after"}`, "echo: after", false)
}

// ownAfterFunc is a context with an AfterFunc method, which counts the
// times it is asked.
type ownAfterFunc struct {
	context.Context
	asked atomic.Int32
}

func (c *ownAfterFunc) AfterFunc(f func()) func() bool {
	c.asked.Add(1)
	return context.AfterFunc(c.Context, f)
}

// wantCancellations waits until the fixture has recorded n cancelled sleep
// calls in all.
func wantCancellations(t *testing.T, hx *harness, n int) {
	t.Helper()
	deadline := time.Now().Add(waitTimeout)
	for {
		res := hx.Call("mcp__srv__cancellations", `{"waitMs":1000}`)
		var got struct{ Cancelled []json.RawMessage }
		if err := json.Unmarshal([]byte(res.Text), &got); err != nil {
			t.Fatalf("cancellations: %+v", res)
		}
		if len(got.Cancelled) == n {
			return
		}
		if len(got.Cancelled) > n || time.Now().After(deadline) {
			t.Fatalf("%d cancellations recorded, want %d", len(got.Cancelled), n)
		}
	}
}

// Started calls and calls that wait share one connection: whoever reads
// hands each response to its call, whichever kind it is.
func TestStdioStartedAndWaitingCalls(t *testing.T) {
	t.Parallel()
	hx := newHarness(t)
	hx.mustLoad(yml(hx.stdio("a", "srv", nil, "--only", "echo")))
	hx.wantState("a", host.Ready)
	const n = 60
	var wg sync.WaitGroup
	errs := make(chan error, 2*n)
	for i := range n {
		wg.Add(2)
		go func() {
			defer wg.Done()
			msg := fmt.Sprintf("started %d", i)
			done := make(chan tools.Result, 1)
			if !hx.Tools.Start(context.Background(), "mcp__srv__echo", json.RawMessage(`{"message":"`+msg+`"}`), func(r tools.Result) { done <- r }) {
				errs <- fmt.Errorf("%s was not started", msg)
				return
			}
			if r := <-done; r.Text != "echo: "+msg {
				errs <- fmt.Errorf("%s: %+v", msg, r)
			}
		}()
		go func() {
			defer wg.Done()
			msg := fmt.Sprintf("waited %d", i)
			if r := hx.Call("mcp__srv__echo", `{"message":"`+msg+`"}`); r.Text != "echo: "+msg {
				errs <- fmt.Errorf("%s: %+v", msg, r)
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

// A server that dies fails the calls started on it with why, at once.
func TestStdioStartedCallCrash(t *testing.T) {
	t.Parallel()
	hx := newHarness(t)
	hx.mustLoad(yml(hx.stdio("a", "srv", map[string]any{"toolCallTimeoutMs": 60000, "reconnect": map[string]any{"enabled": false}}, "--only", "crash,echo")))
	hx.wantState("a", host.Ready)
	start := time.Now()
	res := hx.start(context.Background(), "mcp__srv__crash", `{"code":7,"stderr":"boom: disk on fire\n"}`)
	if !res.IsError || !strings.Contains(res.Text, "the server exited with status 7") || !strings.Contains(res.Text, "boom: disk on fire") {
		t.Fatalf("result %+v", res)
	}
	if took := time.Since(start); took > 5*time.Second {
		t.Fatalf("the failure took %s", took)
	}
}

// Where a call needs a caller that waits — the 2026-07-28 revision (its
// rounds and retries) and Streamable HTTP — nothing is started: the caller
// runs Execute.
func TestStartedCallsOnlyWhereNobodyWaits(t *testing.T) {
	t.Parallel()
	for _, w := range wires {
		t.Run(w.name, func(t *testing.T) {
			t.Parallel()
			hx := newHarness(t)
			hx.mustLoad(yml(hx.entry(w, "g", "srv", fixture.Options{}, []string{"--only", "echo"}, nil)))
			hx.wantState("g", host.Ready)
			startable := w.protocol == ProtocolLegacy && !w.http
			got := make(chan tools.Result, 1)
			if ok := hx.Tools.Start(context.Background(), "mcp__srv__echo", json.RawMessage(`{"message":"x"}`), func(r tools.Result) { got <- r }); ok != startable {
				t.Fatalf("started = %v, want %v", ok, startable)
			}
			if startable {
				if r := <-got; r.Text != "echo: x" {
					t.Fatalf("result %+v", r)
				}
			}
		})
	}
}

// A started call is the gateway's every call: its allocations in this
// process, the registry's and the test's own closure included, stay few
// (10 when this was written: the request's line and the response's parts
// live in the values that carry them; the bound leaves room for a
// runtime's difference). Not parallel: AllocsPerRun counts the whole process.
func TestStartedCallAllocations(t *testing.T) {
	hx := newHarness(t)
	hx.mustLoad(yml(hx.stdio("a", "srv", nil, "--only", "echo")))
	hx.wantState("a", host.Ready)
	got := make(chan tools.Result, 1)
	ctx := tools.WithRawResult(context.Background())
	args := json.RawMessage(`{"message":"hi"}`)
	n := testing.AllocsPerRun(500, func() {
		if !hx.Tools.Start(ctx, "mcp__srv__echo", args, func(r tools.Result) { got <- r }) {
			t.Fatal("not started")
		}
		if r := <-got; r.IsError {
			t.Fatalf("the call failed: %+v", r)
		}
	})
	if n > 12 {
		t.Errorf("a started call allocates %v times, want at most 12", n)
	}
}
