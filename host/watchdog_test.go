package host_test

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/harness-go/harness/host"
)

const gateService = "watchdog-gate"

// hanger's Apply blocks until the test's gate closes: a plugin that breaks
// the "Apply must not block" rule.
type hanger struct{}

func (hanger) Apply(ctx *host.Context) error {
	gate, err := host.Use[chan struct{}](ctx, gateService)
	if err != nil {
		return err
	}
	<-gate
	return nil
}

func init() {
	host.Register(host.Kind{Name: "watchdog-hanger", Inject: []string{gateService}, New: func() host.Plugin { return hanger{} }})
}

// records is a slog handler that passes every record on, as
// "<level> <msg> entry=<id> method=<m>".
type records chan string

func (r records) Enabled(context.Context, slog.Level) bool { return true }
func (r records) WithGroup(string) slog.Handler            { return r }
func (r records) WithAttrs(as []slog.Attr) slog.Handler    { return attrs{r, as} }
func (r records) Handle(_ context.Context, rec slog.Record) error {
	return attrs{r, nil}.Handle(context.Background(), rec)
}

type attrs struct {
	r  records
	as []slog.Attr
}

func (a attrs) Enabled(context.Context, slog.Level) bool { return true }
func (a attrs) WithGroup(string) slog.Handler            { return a }
func (a attrs) WithAttrs(as []slog.Attr) slog.Handler {
	return attrs{a.r, append(append([]slog.Attr(nil), a.as...), as...)}
}
func (a attrs) Handle(_ context.Context, rec slog.Record) error {
	line := rec.Level.String() + " " + rec.Message
	add := func(at slog.Attr) bool {
		if at.Key == "entry" || at.Key == "method" {
			line += " " + at.Key + "=" + at.Value.String()
		}
		return true
	}
	for _, at := range a.as {
		add(at)
	}
	rec.Attrs(add)
	select {
	case a.r <- line:
	default: // nobody waits for the others
	}
	return nil
}

// An Apply that does not return within SlowHook is named in a warning (the
// entry and the method), and again when it returns; the host goes on once
// it does.
func TestWatchdogNamesAHungApply(t *testing.T) {
	t.Parallel()
	logs := make(records, 64)
	h := host.New(host.Options{Logger: slog.New(logs), SlowHook: 20 * time.Millisecond})
	gate := make(chan struct{})
	if err := h.Provide(gateService, gate); err != nil {
		t.Fatal(err)
	}
	f, err := host.ParseFile("cordis.yml", []byte("- {id: slow, name: watchdog-hanger}\n"))
	if err != nil {
		t.Fatal(err)
	}
	loaded := make(chan error, 1)
	go func() { _, err := h.Load(context.Background(), f); loaded <- err }()
	wait := func(want string) {
		t.Helper()
		timeout := time.After(30 * time.Second)
		for {
			select {
			case line := <-logs:
				if line == want {
					return
				}
			case <-timeout:
				t.Fatalf("no record %q", want)
			}
		}
	}
	wait("WARN Apply has not returned: it blocks the host, whose every change waits for it entry=slow method=Apply")
	close(gate)
	wait("WARN Apply returned, late entry=slow method=Apply")
	if err := <-loaded; err != nil {
		t.Fatal(err)
	}
	if err := h.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
}
