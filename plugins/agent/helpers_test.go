package agent_test

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/harness-go/harness/fiber"
	"github.com/harness-go/harness/host/secret"
	"github.com/harness-go/harness/internal/testkit/fakellm"
	"github.com/harness-go/harness/internal/testkit/testlog"
	"github.com/harness-go/harness/plugins/agent"
	"github.com/harness-go/harness/plugins/resources"
	"github.com/harness-go/harness/plugins/tools"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// waitFor bounds every wait of these tests.
const waitFor = 20 * time.Second

// fixture is an agent talking to a fake server, with a registry of its own.
type fixture struct {
	t       *testing.T
	srv     *fakellm.Server
	reg     *tools.Registry
	res     *resources.Registry // nil: no resource tools
	f       *fiber.Fiber
	secrets *secret.Set
	cfg     agent.Config
	life    context.Context
	a       *agent.Agent
	// onEvent, when set, sees each event as it is emitted.
	onEvent func(agent.Event)
	// within, when set, bounds a turn instead of waitFor (a turn that
	// moves tens of MiB, slow under -race on a busy machine).
	within time.Duration
}

// newFixture returns an agent with the default configuration, pointed at a
// fresh fake server, no backoff between retries; edit changes the
// configuration first.
func newFixture(t *testing.T, edit func(*agent.Config), script ...fakellm.Reply) *fixture {
	t.Helper()
	x := &fixture{t: t, srv: fakellm.Start(t, script...), reg: tools.New(), secrets: secret.New(), life: context.Background()}
	x.f = fiber.New(context.Background(), "test")
	t.Cleanup(func() { _ = x.f.Dispose(context.Background()) })
	x.cfg = agent.DefaultConfig()
	x.cfg.BaseURL = x.srv.URL
	if edit != nil {
		edit(&x.cfg)
	}
	if err := x.cfg.Validate(); err != nil {
		t.Fatalf("configuration: %v", err)
	}
	return x
}

// agent builds the agent (once the test registered its tools, or not).
func (x *fixture) agent() *agent.Agent {
	if x.a == nil {
		log, _ := testlog.New(x.t)
		x.a = agent.New(x.cfg, x.reg, agent.Options{ID: "model", Secrets: x.secrets, Logger: log, Life: x.life, Backoff: func(int) time.Duration { return 0 }, Resources: x.res})
	}
	return x.a
}

// register adds tools to the fixture's registry.
func (x *fixture) register(ts ...tools.Tool) {
	x.t.Helper()
	if _, err := x.reg.Register(x.f, ts...); err != nil {
		x.t.Fatal(err)
	}
}

// outcome is what one turn did.
type outcome struct {
	events []agent.Event
	usage  agent.Usage
	err    error
}

// text is the concatenated text events.
func (o outcome) text() string { return o.joined(agent.EventText) }

func (o outcome) joined(typ string) string {
	var b strings.Builder
	for _, e := range o.events {
		if e.Type == typ {
			b.WriteString(e.Delta)
		}
	}
	return b.String()
}

func (o outcome) of(typ string) []agent.Event {
	var out []agent.Event
	for _, e := range o.events {
		if e.Type == typ {
			out = append(out, e)
		}
	}
	return out
}

// turn runs one turn of conv, bounded by waitFor.
func (x *fixture) turn(conv *agent.Conversation, prompt string) outcome {
	x.t.Helper()
	return x.turnCtx(context.Background(), conv, prompt)
}

func (x *fixture) turnCtx(ctx context.Context, conv *agent.Conversation, prompt string) outcome {
	x.t.Helper()
	bound := waitFor
	if x.within > 0 {
		bound = x.within
	}
	ctx, cancel := context.WithTimeout(ctx, bound)
	defer cancel()
	var o outcome
	var mu sync.Mutex
	inEmit := false
	o.usage, o.err = x.agent().Run(ctx, conv, prompt, func(e agent.Event) {
		mu.Lock()
		if inEmit {
			x.t.Error("emit called concurrently")
		}
		inEmit = true
		o.events = append(o.events, e)
		if x.onEvent != nil {
			x.onEvent(e)
		}
		inEmit = false
		mu.Unlock()
	})
	if last := o.events[len(o.events)-1]; o.err == nil && last.Type != agent.EventDone || o.err != nil && last.Type != agent.EventError {
		x.t.Errorf("the turn ended with a %s event (err %v)", last.Type, o.err)
	}
	return o
}

// says is an executor answering text.
func says(text string) tools.Executor {
	return func(context.Context, json.RawMessage) (tools.Result, error) { return tools.Result{Text: text}, nil }
}

// recorder is an executor that records its arguments and answers them.
type recorder struct {
	mu   sync.Mutex
	args []string
}

func (r *recorder) exec(_ context.Context, args json.RawMessage) (tools.Result, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.args = append(r.args, string(args))
	return tools.Result{Text: "got " + string(args)}, nil
}

func (r *recorder) got() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.args...)
}
