package agent_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/harness-go/harness/internal/testkit/fakellm"
	"github.com/harness-go/harness/internal/testkit/testlog"
	"github.com/harness-go/harness/plugins/agent"
	"github.com/harness-go/harness/plugins/tools"
)

// The default backoff: 500 ms doubling to 10 s, each wait drawn between
// half and all of it.
func TestBackoffSchedule(t *testing.T) {
	t.Parallel()
	ms := time.Millisecond
	for _, tc := range []struct {
		attempt int
		ceil    time.Duration
	}{
		{0, 500 * ms}, {1, time.Second}, {2, 2 * time.Second}, {3, 4 * time.Second},
		{4, 8 * time.Second}, {5, 10 * time.Second}, {6, 10 * time.Second}, {60, 10 * time.Second},
		{1 << 20, 10 * time.Second},
	} {
		lo, hi := time.Duration(1<<62), time.Duration(0)
		for range 2000 {
			d := agent.Backoff(tc.attempt)
			if d < tc.ceil/2 || d > tc.ceil {
				t.Fatalf("Backoff(%d) = %v, want within [%v, %v]", tc.attempt, d, tc.ceil/2, tc.ceil)
			}
			lo, hi = min(lo, d), max(hi, d)
		}
		// Jitter: 2000 draws over a range of at least 250 ms spread over
		// most of it (a constant wait would make every client retry at once).
		if hi-lo < tc.ceil/4 {
			t.Errorf("Backoff(%d): 2000 draws span only %v..%v", tc.attempt, lo, hi)
		}
	}
}

// retryAgent is the fixture's agent with backoff as its Options.Backoff
// (nil: the default).
func retryAgent(x *fixture, backoff func(int) time.Duration) {
	log, _ := testlog.New(x.t)
	x.a = agent.New(x.cfg, x.reg, agent.Options{ID: "model", Secrets: x.secrets, Logger: log, Backoff: backoff})
}

// firstRetry runs a turn that is cancelled at its first retry event, so no
// test waits for a backoff; it returns that event.
func firstRetry(t *testing.T, x *fixture) agent.Event {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var retry []agent.Event
	x.onEvent = func(e agent.Event) {
		if e.Type == agent.EventRetry {
			retry = append(retry, e)
			cancel()
		}
	}
	var conv agent.Conversation
	o := x.turnCtx(ctx, &conv, "go")
	if !errors.Is(o.err, agent.ErrCancelled) {
		t.Fatalf("err = %v, want the turn cancelled at its first retry", o.err)
	}
	if len(retry) != 1 {
		t.Fatalf("%d retry events, want 1", len(retry))
	}
	return retry[0]
}

// The wait before a retry is the backoff's for that attempt, or the
// server's Retry-After when longer (up to a minute).
func TestRetryWait(t *testing.T) {
	t.Parallel()
	busy := func(after string) fakellm.Reply {
		r := fakellm.Status(429, "Rate limit reached")
		if after != "" {
			r.Header = map[string]string{"Retry-After": after}
		}
		return r
	}
	for _, tc := range []struct {
		name    string
		reply   fakellm.Reply
		backoff time.Duration
		want    time.Duration
	}{
		{"Retry-After longer than the backoff", busy("7"), 0, 7 * time.Second},
		{"Retry-After with spaces", busy(" 3 "), 0, 3 * time.Second},
		{"Retry-After capped at a minute", busy("3600"), 0, time.Minute},
		{"backoff longer than Retry-After", busy("1"), 4 * time.Second, 4 * time.Second},
		{"Retry-After as a date is not read", busy("Wed, 21 Oct 2015 07:28:00 GMT"), 2 * time.Second, 2 * time.Second},
		{"no Retry-After", busy(""), 2 * time.Second, 2 * time.Second},
		{"Retry-After on a 503", func() fakellm.Reply {
			r := fakellm.Status(503, "Server Overloaded")
			r.Header = map[string]string{"Retry-After": "5"}
			return r
		}(), 0, 5 * time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			x := newFixture(t, nil, tc.reply)
			var mu sync.Mutex
			var attempts []int
			retryAgent(x, func(n int) time.Duration {
				mu.Lock()
				defer mu.Unlock()
				attempts = append(attempts, n)
				return tc.backoff
			})
			e := firstRetry(t, x)
			if e.Wait != tc.want || e.Attempt != 1 {
				t.Fatalf("retry event: attempt %d, wait %v; want attempt 1, wait %v", e.Attempt, e.Wait, tc.want)
			}
			mu.Lock()
			defer mu.Unlock()
			if len(attempts) != 1 || attempts[0] != 0 {
				t.Fatalf("backoff asked for attempts %v, want [0]", attempts)
			}
		})
	}
	t.Run("the default backoff", func(t *testing.T) {
		t.Parallel()
		x := newFixture(t, nil, fakellm.Status(500, "boom"))
		retryAgent(x, nil)
		if e := firstRetry(t, x); e.Wait < 250*time.Millisecond || e.Wait > 500*time.Millisecond {
			t.Fatalf("first wait %v, want within [250ms, 500ms]", e.Wait)
		}
	})
	t.Run("attempts count up", func(t *testing.T) {
		t.Parallel()
		x := newFixture(t, func(c *agent.Config) { c.Retries = 3 },
			fakellm.Status(500, "a"), fakellm.Status(500, "b"), fakellm.Status(500, "c"), fakellm.Say("ok"))
		var mu sync.Mutex
		var attempts []int
		retryAgent(x, func(n int) time.Duration {
			mu.Lock()
			defer mu.Unlock()
			attempts = append(attempts, n)
			return time.Duration(n) * time.Microsecond
		})
		var conv agent.Conversation
		o := x.turn(&conv, "go")
		if o.err != nil || o.text() != "ok" {
			t.Fatalf("err %v, text %q", o.err, o.text())
		}
		var waits []time.Duration
		for _, e := range o.of(agent.EventRetry) {
			waits = append(waits, e.Wait)
		}
		mu.Lock()
		defer mu.Unlock()
		if len(attempts) != 3 || attempts[0] != 0 || attempts[1] != 1 || attempts[2] != 2 {
			t.Fatalf("backoff asked for attempts %v, want [0 1 2]", attempts)
		}
		if len(waits) != 3 || waits[0] != 0 || waits[1] != time.Microsecond || waits[2] != 2*time.Microsecond {
			t.Fatalf("retry waits %v", waits)
		}
	})
}

// requestTimeoutMs bounds the wait for the response's headers: a server
// that stalls before answering is unreachable, said at once (not retried).
func TestRequestTimeout(t *testing.T) {
	t.Parallel()
	never := make(chan struct{})
	x := newFixture(t, func(c *agent.Config) { c.RequestTimeoutMs = 100 }, fakellm.Reply{Gate: never})
	retryAgent(x, nil)
	var conv agent.Conversation
	o := x.turn(&conv, "hi")
	if !errors.Is(o.err, agent.ErrUnreachable) || !strings.Contains(o.err.Error(), "requestTimeoutMs") || !strings.Contains(o.err.Error(), "100ms") {
		t.Fatalf("err = %v, want ErrUnreachable naming requestTimeoutMs (100ms)", o.err)
	}
	if r := o.of(agent.EventRetry); len(r) != 0 {
		t.Fatalf("%d retries of a timeout", len(r))
	}
	req := x.srv.Wait(1, waitFor)
	<-req.Done()
	if !req.Cancelled() {
		t.Fatal("the server did not see the request go away")
	}
	if n := len(x.srv.Requests()); n != 1 {
		t.Fatalf("%d requests, want 1", n)
	}
}

// A call that finished as the cancel landed keeps its result; only calls
// cut short answer "Error: cancelled".
func TestCancelKeepsFinishedResults(t *testing.T) {
	t.Parallel()
	x := newFixture(t, nil, fakellm.Call(
		fakellm.ToolCallSpec{ID: "done", Name: "done", Arguments: "{}"},
		fakellm.ToolCallSpec{ID: "cut", Name: "cut", Arguments: "{}"}))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	cutStarted := make(chan struct{})
	x.register(
		// Finishes its work, then the user's Ctrl-C arrives before it returns.
		tools.Tool{Name: "done", Execute: func(context.Context, json.RawMessage) (tools.Result, error) {
			<-cutStarted
			cancel()
			return tools.Result{Text: "finished"}, nil
		}},
		tools.Tool{Name: "cut", Execute: func(ctx context.Context, _ json.RawMessage) (tools.Result, error) {
			close(cutStarted)
			<-ctx.Done()
			return tools.Result{}, ctx.Err()
		}})
	var conv agent.Conversation
	o := x.turnCtx(ctx, &conv, "go")
	if !errors.Is(o.err, agent.ErrCancelled) {
		t.Fatalf("err = %v", o.err)
	}
	m := conv.Messages()
	if len(m) != 4 {
		t.Fatalf("conversation %+v", m)
	}
	if m[2].ToolCallID != "done" || m[2].Content != "finished" {
		t.Errorf("the finished call: %+v, want its result kept", m[2])
	}
	if m[3].ToolCallID != "cut" || m[3].Content != "Error: cancelled" {
		t.Errorf("the call cut short: %+v", m[3])
	}
	for _, e := range o.of(agent.EventToolResult) {
		if want := map[string]string{"done": "finished", "cut": "Error: cancelled"}[e.ID]; e.Text != want {
			t.Errorf("tool_result %s: %q, want %q", e.ID, e.Text, want)
		}
	}
}
