package mcpserver

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/harness-go/harness/host"
	"github.com/harness-go/harness/internal/testkit/hosttest"
)

func TestKindServesTheHostsTools(t *testing.T) {
	t.Parallel()
	hx := hosttest.New(t, 10*time.Second)
	if err := hx.Load(`
- id: gw
  name: mcp-server
  config: {listen: "127.0.0.1:0", token: a-long-secret-token, tools: full}
`); err != nil {
		t.Fatal(err)
	}
	hx.Settle(waitTimeout)
	e := entry(t, hx, "gw")
	st, ok := e.Details.(*Status)
	if e.State != host.Ready || !ok || !strings.HasPrefix(st.URL, "http://127.0.0.1:") || !st.Token || st.Tools != ModeFull {
		t.Fatalf("entry %s %s, status %+v", e.State, e.Error, e.Details)
	}
	if lines := st.StatusLines(); len(lines) != 1 || !strings.Contains(lines[0], "serving "+st.URL+" (tools full, Bearer token required)") {
		t.Fatalf("status lines %q", lines)
	}
	status, body := post(t, st.URL, "", initializeBody, map[string]string{"Authorization": "Bearer a-long-secret-token"})
	if status != 200 || !strings.Contains(body, `"serverInfo"`) {
		t.Fatalf("initialize: %d %s", status, body)
	}
	if strings.Contains(hx.Log.String(), "a-long-secret-token") {
		t.Fatal("the token reached the log")
	}

	// Removing the entry closes the listener.
	if err := hx.Load("[]"); err != nil {
		t.Fatal(err)
	}
	hx.Settle(waitTimeout)
	if _, err := http.Post(st.URL, "application/json", strings.NewReader(initializeBody)); err == nil {
		t.Fatal("the listener is still open after the entry went")
	}
}

func TestKindIgnoredUnderServe(t *testing.T) {
	t.Parallel()
	hx := hosttest.New(t, 10*time.Second)
	if err := HostOptionsKey.ProvideBy(hx.H, HostOptions{Ignore: "harness serve serves this host itself"}); err != nil {
		t.Fatal(err)
	}
	if err := hx.Load(`
- id: gw
  name: mcp-server
  config: {listen: "127.0.0.1:0"}
`); err != nil {
		t.Fatal(err)
	}
	hx.Settle(waitTimeout)
	e := entry(t, hx, "gw")
	st := e.Details.(*Status)
	if e.State != host.Ready || st.URL != "" || st.Note != "ignored: harness serve serves this host itself" {
		t.Fatalf("entry %s, status %+v", e.State, st)
	}
}

func TestKindConfiguration(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, config, says string
	}{
		{"no listen", `{}`, "listen: is required"},
		{"every interface without a token", `{listen: ":8750"}`, "without a token: other machines could call every tool: a non-loopback address needs a token; set token: or listen on 127.0.0.1"},
		{"a bad mode", `{listen: "127.0.0.1:0", tools: some}`, "tools"},
		{"an unknown key", `{listen: "127.0.0.1:0", port: 1}`, "port"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			hx := hosttest.New(t, 10*time.Second)
			err := hx.Load("- id: gw\n  name: mcp-server\n  config: " + tc.config + "\n")
			if err == nil || !strings.Contains(err.Error(), tc.says) {
				t.Fatalf("load: %v, want an error about %q", err, tc.says)
			}
		})
	}
}

// SettleWithin is what harness run gives the kind's gateways to wait on.
func TestSettleWithin(t *testing.T) {
	t.Parallel()
	hx := hosttest.New(t, 10*time.Second)
	ctx := context.Background()
	if err := SettleWithin(hx.H, 0)(ctx); err != nil {
		t.Fatalf("SettleWithin 0: %v", err)
	}
	if err := SettleWithin(hx.H, time.Second)(ctx); err != nil {
		t.Fatalf("an empty host: %v", err)
	}

	// An entry that never settles: 0 does not wait for it, a bound ends
	// the wait.
	if err := hx.Load("- id: stuck\n  name: " + unsettledKind + "\n"); err != nil {
		t.Fatal(err)
	}
	if e := entry(t, hx, "stuck"); e.Settled || e.State != host.Starting {
		t.Fatalf("the stuck entry is %s (settled %v)", e.State, e.Settled)
	}
	done := make(chan error, 1)
	go func() { done <- SettleWithin(hx.H, 0)(ctx) }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("SettleWithin 0 with an entry starting: %v", err)
		}
	case <-time.After(waitTimeout):
		t.Fatal("SettleWithin 0 waited for an entry that never settles")
	}
	if err := SettleWithin(hx.H, 50*time.Millisecond)(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("SettleWithin 50ms with an entry that never settles: %v, want DeadlineExceeded", err)
	}
}

// unsettledKind is a test kind whose instance never finishes starting.
const unsettledKind = "mcpserver-test-unsettled"

type unsettled struct{}

func (*unsettled) Apply(ctx *host.Context) error {
	ctx.Begin("a start that never ends")
	return nil
}

func init() {
	host.Register(host.Kind{Name: unsettledKind, Doc: "test plugin that never settles", New: func() host.Plugin { return &unsettled{} }})
}

func entry(t *testing.T, hx *hosttest.Host, id string) host.EntryStatus {
	t.Helper()
	for _, e := range hx.H.Snapshot() {
		if e.ID == id {
			return e
		}
	}
	t.Fatalf("no entry %q", id)
	return host.EntryStatus{}
}

// tools and token are live: an edit of them alone keeps the listener (same
// URL) and applies at once.
func TestKindLiveFields(t *testing.T) {
	t.Parallel()
	hx := hosttest.New(t, 10*time.Second)
	load := func(token, mode string) {
		t.Helper()
		if err := hx.Load(`
- id: gw
  name: mcp-server
  config: {listen: "127.0.0.1:0", token: ` + token + `, tools: ` + mode + `}
`); err != nil {
			t.Fatal(err)
		}
		hx.Settle(waitTimeout)
	}
	load("first-token-0123456789", "full")
	url := entry(t, hx, "gw").Details.(*Status).URL
	load("second-token-0123456789", "meta")
	st := entry(t, hx, "gw").Details.(*Status)
	if st.URL != url || st.Tools != ModeMeta {
		t.Fatalf("after the edit: %+v (was at %s)", st, url)
	}
	if status, _ := post(t, url, "", initializeBody, map[string]string{"Authorization": "Bearer first-token-0123456789"}); status != http.StatusUnauthorized {
		t.Fatalf("the old token: status %d, want 401", status)
	}
	if status, body := post(t, url, "", initializeBody, map[string]string{"Authorization": "Bearer second-token-0123456789"}); status != 200 || !strings.Contains(body, `"serverInfo"`) {
		t.Fatalf("the new token: %d %s", status, body)
	}
}
