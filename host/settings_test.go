package host_test

import (
	"context"
	"strings"
	"testing"

	"github.com/harness-go/harness/host"
)

// salute is a program's setting for the kind settings-reader.
type salute struct{ Word string }

var greetingKey = host.NewKey[salute]("test.salute")

// settingsReader reads the program's salute in Apply (not injected:
// nothing to wait for) and reports what it found as its status.
type settingsReader struct{ got string }

func init() {
	host.Register(host.Kind{Name: "settings-reader", New: func() host.Plugin { return &settingsReader{} }})
}

func (p *settingsReader) Apply(ctx *host.Context) error {
	g, ok, err := greetingKey.Provided(ctx)
	switch {
	case err != nil:
		return err
	case !ok:
		p.got = "default"
	default:
		p.got = g.Word
	}
	return nil
}

func (p *settingsReader) Status() any { return p.got }

// A program's settings go through Provide: read by a plugin with a typed
// accessor, set once (a second Provide is an error), refused once an entry
// went on without them, and an error when of the wrong type.
func TestProgramSettingsAreProvidedOnce(t *testing.T) {
	t.Parallel()
	status := func(h *host.Host) string {
		t.Helper()
		for _, e := range h.Snapshot() {
			if e.ID == "r" {
				if e.State != host.Ready {
					t.Fatalf("r is %s: %s", e.State, e.Error)
				}
				return e.Details.(string)
			}
		}
		t.Fatal("no entry r")
		return ""
	}
	const file = "- {id: r, name: settings-reader}\n"
	for _, tc := range []struct {
		name string
		run  func(t *testing.T, h *host.Host)
	}{{
		name: "provided before the load",
		run: func(t *testing.T, h *host.Host) {
			if err := greetingKey.ProvideBy(h, salute{"hi"}); err != nil {
				t.Fatal(err)
			}
			if err := greetingKey.ProvideBy(h, salute{"hello"}); err == nil || !strings.Contains(err.Error(), `service "test.salute" is already provided by the host`) {
				t.Fatalf("a second provide: %v", err)
			}
			load(t, h, file)
			if got := status(h); got != "hi" {
				t.Fatalf("the plugin read %q, want the first value", got)
			}
			if g, ok, err := greetingKey.ProvidedBy(h); err != nil || !ok || g.Word != "hi" {
				t.Fatalf("ProvidedBy = %v %v %v", g, ok, err)
			}
		},
	}, {
		name: "not provided: the default, and a later provide refused",
		run: func(t *testing.T, h *host.Host) {
			load(t, h, file)
			if got := status(h); got != "default" {
				t.Fatalf("the plugin read %q", got)
			}
			err := greetingKey.ProvideBy(h, salute{"late"})
			if err == nil || !strings.Contains(err.Error(), `provided after entry "r" read it`) {
				t.Fatalf("a provide after an entry read the setting: %v", err)
			}
			if _, ok, _ := greetingKey.ProvidedBy(h); ok {
				t.Fatal("the refused setting stayed")
			}
		},
	}, {
		name: "of another type under the name",
		run: func(t *testing.T, h *host.Host) {
			if err := h.Provide("test.salute", "hi"); err != nil {
				t.Fatal(err)
			}
			load(t, h, file)
			e := h.Snapshot()[0]
			if e.State != host.Failed || !strings.Contains(e.Error, `service "test.salute" is a string, not a host_test.salute`) {
				t.Fatalf("r = %s %q", e.State, e.Error)
			}
		},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			h := host.New(quiet())
			t.Cleanup(func() { h.Close(context.Background()) })
			tc.run(t, h)
		})
	}
}
