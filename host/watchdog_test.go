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

// mbbHanger makes before it breaks and has a live key; its TakeOver blocks
// when its label is "hang", its Reconfigure when the new speed is 99.
type mbbHanger struct {
	Label string `yaml:"label"`
	Speed int    `yaml:"speed"`
	gate  chan struct{}
}

func (m *mbbHanger) Apply(ctx *host.Context) (err error) {
	m.gate, err = host.Use[chan struct{}](ctx, gateService)
	return err
}

func (m *mbbHanger) TakeOver(host.Plugin) error {
	if m.Label == "hang" {
		<-m.gate
	}
	return nil
}

func (m *mbbHanger) Reconfigure(next host.Plugin) error {
	if next.(*mbbHanger).Speed == 99 {
		<-m.gate
	}
	return nil
}

func init() {
	host.Register(host.Kind{Name: "watchdog-hanger", Inject: []string{gateService}, New: func() host.Plugin { return hanger{} }})
	host.Register(host.Kind{Name: "watchdog-mbb-hanger", Inject: []string{gateService}, MakeBeforeBreak: true, Live: []string{"speed"},
		New: func() host.Plugin { return &mbbHanger{} }})
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

// TakeOver and Reconfigure are watched as Apply is.
func TestWatchdogNamesAHungTakeOverAndReconfigure(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ method, edit string }{
		{"TakeOver", "- {id: m, name: watchdog-mbb-hanger, config: {label: hang}}\n"},
		{"Reconfigure", "- {id: m, name: watchdog-mbb-hanger, config: {label: one, speed: 99}}\n"},
	} {
		t.Run(tc.method, func(t *testing.T) {
			t.Parallel()
			logs := make(records, 64)
			h := host.New(host.Options{Logger: slog.New(logs), SlowHook: 20 * time.Millisecond})
			gate := make(chan struct{})
			if err := h.Provide(gateService, gate); err != nil {
				t.Fatal(err)
			}
			load := func(src string) error {
				f, err := host.ParseFile("cordis.yml", []byte(src))
				if err != nil {
					return err
				}
				if _, err := h.Load(context.Background(), f); err != nil {
					return err
				}
				return h.Settle(context.Background())
			}
			if err := load("- {id: m, name: watchdog-mbb-hanger, config: {label: one}}\n"); err != nil {
				t.Fatal(err)
			}
			loaded := make(chan error, 1)
			go func() { loaded <- load(tc.edit) }()
			waitRecord(t, logs, "WARN "+tc.method+" has not returned: it blocks the host, whose every change waits for it entry=m method="+tc.method)
			close(gate)
			waitRecord(t, logs, "WARN "+tc.method+" returned, late entry=m method="+tc.method)
			if err := <-loaded; err != nil {
				t.Fatal(err)
			}
			if err := h.Close(context.Background()); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// waitRecord waits for the record want among logs.
func waitRecord(t *testing.T, logs records, want string) {
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
