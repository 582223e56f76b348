package mcpclient

import (
	"context"
	"encoding/base64"
	"errors"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/harness-go/harness/host"
	"github.com/harness-go/harness/internal/testkit/fixture"
	"github.com/harness-go/harness/plugins/prompts"
	"github.com/harness-go/harness/plugins/resources"
)

// waitUntil waits until cond holds, woken by changed (a registry's Changed),
// bounded by waitTimeout.
func waitUntil(t *testing.T, what string, changed func() <-chan struct{}, cond func() bool) {
	t.Helper()
	deadline := time.After(waitTimeout)
	for {
		ch := changed()
		if cond() {
			return
		}
		select {
		case <-ch:
		case <-deadline:
			t.Fatalf("timed out waiting for %s", what)
		}
	}
}

func uris(list []resources.Resource) []string {
	out := make([]string, len(list))
	for i, r := range list {
		out[i] = r.Server + " " + r.URI
	}
	return out
}

func promptNames(list []prompts.Prompt) []string {
	out := make([]string, len(list))
	for i, p := range list {
		out[i] = p.Name
	}
	return out
}

// TestResourcesAndPrompts bridges the fixture's resources, template and
// prompt over both transports: listed with their fields, read (text,
// binary, a template's expansion), rendered, re-listed on list_changed,
// subscribed and told of updates, and gone with the entry.
func TestResourcesAndPrompts(t *testing.T) {
	t.Parallel()
	for _, transport := range []string{TransportStdio, TransportHTTP} {
		t.Run(transport, func(t *testing.T) {
			t.Parallel()
			var fx *peer
			if transport == TransportHTTP {
				fx = fixturePeer(t, fixture.Options{Resources: true}) // closed after the host
			}
			hx := newHarness(t)
			var entry cfg
			if transport == TransportStdio {
				entry = hx.stdio("a", "srv", nil, "--resources")
			} else {
				entry = httpEntry("a", "srv", fx.URL, nil)
			}
			hx.mustLoad(yml(entry))
			hx.wantState("a", host.Ready)
			ctx := context.Background()

			got := uris(hx.Resources.List(""))
			if want := []string{"srv fixture://logo.png", "srv fixture://readme"}; !slices.Equal(got, want) {
				t.Fatalf("resources %q, want %q", got, want)
			}
			readme, ok := hx.Resources.Lookup("srv", "fixture://readme")
			if !ok || readme.Name != "readme" || readme.MIMEType != "text/plain" || readme.Description != "A short text." {
				t.Fatalf("readme = %+v", readme)
			}
			tpl := hx.Resources.Templates("srv")
			if len(tpl) != 1 || tpl[0].URITemplate != "fixture://notes/{name}" || tpl[0].Name != "note" {
				t.Fatalf("templates = %+v", tpl)
			}

			res, err := hx.Resources.Read(ctx, "srv", "fixture://readme")
			if err != nil || len(res.Contents) != 1 || !res.Contents[0].IsText() || *res.Contents[0].Text != fixture.ReadmeText {
				t.Fatalf("read readme = %+v, %v", res, err)
			}
			res, err = hx.Resources.Read(ctx, "srv", "fixture://logo.png")
			if err != nil || len(res.Contents) != 1 || res.Contents[0].IsText() || res.Contents[0].MIMEType != "image/png" {
				t.Fatalf("read logo = %+v, %v", res, err)
			}
			if b, _ := base64.StdEncoding.DecodeString(res.Contents[0].Blob); string(b) != string(fixture.LogoBytes) {
				t.Fatalf("logo bytes = %q", b)
			}
			res, err = hx.Resources.Read(ctx, "srv", "fixture://notes/alpha")
			if err != nil || len(res.Contents) != 1 || *res.Contents[0].Text != "note alpha" {
				t.Fatalf("read a note = %+v, %v", res, err)
			}
			if _, err := hx.Resources.Read(ctx, "srv", "fixture://nothing"); err == nil {
				t.Fatal("reading an unknown uri succeeded")
			}
			if _, err := hx.Resources.Read(ctx, "other", "fixture://readme"); !errors.Is(err, resources.ErrUnknownServer) {
				t.Fatalf("reading from an unknown server: %v", err)
			}

			if got, want := promptNames(hx.Prompts.List()), []string{"mcp__srv__summarize"}; !slices.Equal(got, want) {
				t.Fatalf("prompts %q, want %q", got, want)
			}
			p, _ := hx.Prompts.Lookup("mcp__srv__summarize")
			if p.RawName != "summarize" || p.Server != "srv" || len(p.Arguments) != 2 || p.Arguments[0].Name != "topic" || !p.Arguments[0].Required {
				t.Fatalf("prompt = %+v", p)
			}
			out, err := hx.Prompts.Get(ctx, "mcp__srv__summarize", map[string]string{"topic": "Go", "style": "short"})
			if err != nil || len(out.Messages) != 1 || out.Messages[0].Role != "user" || out.Messages[0].Text() != "Summarize Go. Style: short." {
				t.Fatalf("get = %+v, %v", out, err)
			}
			if _, err := hx.Prompts.Get(ctx, "mcp__srv__summarize", nil); err == nil || !strings.Contains(err.Error(), `"topic" is required`) {
				t.Fatalf("get without topic: %v", err)
			}

			// Subscriptions reach the server, updates reach the subscriber.
			updates := make(chan string, 4)
			sub, err := hx.Resources.Subscribe(ctx, "srv", "fixture://readme", func(uri string) { updates <- uri })
			if err != nil {
				t.Fatal(err)
			}
			hx.wantCall("mcp__srv__subscriptions", `{}`, "fixture://readme", false)
			hx.wantCall("mcp__srv__resource_changed", `{"uri":"fixture://readme"}`, "told", false)
			select {
			case u := <-updates:
				if u != "fixture://readme" {
					t.Fatalf("update of %q", u)
				}
			case <-time.After(waitTimeout):
				t.Fatal("no update reached the subscriber")
			}
			if err := sub.Stop(ctx); err != nil {
				t.Fatal(err)
			}
			hx.wantCall("mcp__srv__subscriptions", `{}`, "", false)

			// list_changed of both: re-listed.
			hx.wantCall("mcp__srv__add_more", `{}`, "added", false)
			waitUntil(t, "fixture://more", hx.Resources.Changed, func() bool {
				_, ok := hx.Resources.Lookup("srv", "fixture://more")
				return ok
			})
			waitUntil(t, "the prompt more", hx.Prompts.Changed, func() bool {
				_, ok := hx.Prompts.Lookup("mcp__srv__more")
				return ok
			})
			st := hx.status("a")
			if st.Resources != 3 || st.Templates != 1 || st.Prompts != 2 {
				t.Fatalf("status counts resources %d, templates %d, prompts %d", st.Resources, st.Templates, st.Prompts)
			}

			// Gone with the entry.
			hx.mustLoad("[]")
			if n := hx.Resources.Len(); n != 0 {
				t.Fatalf("%d resources and templates left after the entry went", n)
			}
			if n := hx.Prompts.Len(); n != 0 {
				t.Fatalf("%d prompts left after the entry went", n)
			}
		})
	}
}

// TestResourcesKeys turns the bridging off, and on for a server that
// declares neither (its listings are refused: nothing registered, the entry
// ready).
func TestResourcesKeys(t *testing.T) {
	t.Parallel()
	hx := newHarness(t)
	hx.mustLoad(yml(
		hx.stdio("off", "off", map[string]any{"resources": false, "prompts": false}, "--resources"),
		hx.stdio("none", "none", map[string]any{"resources": true, "prompts": true}),
		hx.stdio("plain", "plain", nil),
	))
	for _, id := range []string{"off", "none", "plain"} {
		hx.wantState(id, host.Ready)
	}
	if n, p := hx.Resources.Len(), hx.Prompts.Len(); n != 0 || p != 0 {
		t.Fatalf("%d resources, %d prompts registered; want none (%q %q)", n, p, uris(hx.Resources.List("")), promptNames(hx.Prompts.List()))
	}
}

// TestResourcesMakeBeforeBreak edits the entry: the new instance takes the
// resources and prompts over in one step each (never absent in between),
// and subscribes its own server to what the subscribers still wait for.
func TestResourcesMakeBeforeBreak(t *testing.T) {
	t.Parallel()
	hx := newHarness(t)
	hx.mustLoad(yml(hx.stdio("a", "srv", nil, "--resources")))
	ctx := context.Background()
	updates := make(chan string, 4)
	sub, err := hx.Resources.Subscribe(ctx, "srv", "fixture://readme", func(uri string) { updates <- uri })
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Stop(ctx)

	absent := make(chan string, 8)
	stop := make(chan struct{})
	watched := make(chan struct{})
	go func() {
		defer close(watched)
		for {
			ch := hx.Resources.Changed()
			if _, ok := hx.Resources.Lookup("srv", "fixture://readme"); !ok {
				absent <- "resources"
			}
			if _, ok := hx.Prompts.Lookup("mcp__srv__summarize"); !ok {
				absent <- "prompts"
			}
			select {
			case <-ch:
			case <-stop:
				return
			}
		}
	}()
	hx.mustLoad(yml(hx.stdio("a", "srv", map[string]any{"env": map[string]string{"EDITED": "1"}}, "--resources")))
	hx.wantState("a", host.Ready)
	close(stop)
	<-watched
	select {
	case what := <-absent:
		t.Fatalf("the %s were absent during the edit", what)
	default:
	}
	// The new process hears of the subscription.
	deadline := time.Now().Add(waitTimeout)
	for hx.Call("mcp__srv__subscriptions", `{}`).Text != "fixture://readme" {
		if time.Now().After(deadline) {
			t.Fatal("the new server was not subscribed")
		}
		time.Sleep(20 * time.Millisecond) // polling a server's state: there is no event to wait on
	}
	hx.wantCall("mcp__srv__resource_changed", `{"uri":"fixture://readme"}`, "told", false)
	select {
	case <-updates:
	case <-time.After(waitTimeout):
		t.Fatal("no update reached the subscriber after the edit")
	}
}

// TestResourcesSubscribeStateless: on 2026-07-28 a subscription is the
// subscriptions/listen filter — the stream opens again with the uri in
// resourceSubscriptions, and without it once unsubscribed.
func TestResourcesSubscribeStateless(t *testing.T) {
	t.Parallel()
	hx := newHarness(t)
	logPath := hx.Dir + "/received.jsonl"
	hx.mustLoad(yml(hx.stdio("a", "srv", map[string]any{"protocol": ProtocolModern}, "--resources", "--log", logPath)))
	hx.wantState("a", host.Ready)
	if rev := hx.status("a").Revision; !strings.Contains(rev, "stateless") {
		t.Fatalf("revision %q, want the stateless protocol", rev)
	}
	listens := func() []string {
		data, _ := os.ReadFile(logPath)
		var out []string
		for _, line := range strings.Split(string(data), "\n") {
			if strings.Contains(line, `"subscriptions/listen"`) {
				out = append(out, line)
			}
		}
		return out
	}
	waitLog := func(what string, cond func(last string) bool) {
		t.Helper()
		deadline := time.Now().Add(waitTimeout)
		for {
			if l := listens(); len(l) > 0 && cond(l[len(l)-1]) {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("no subscriptions/listen %s; got %q", what, listens())
			}
			time.Sleep(20 * time.Millisecond) // the fixture's log file has no event to wait on
		}
	}
	ctx := context.Background()
	sub, err := hx.Resources.Subscribe(ctx, "srv", "fixture://readme", func(string) {})
	if err != nil {
		t.Fatal(err)
	}
	waitLog("with the uri", func(l string) bool { return strings.Contains(l, `"resourceSubscriptions":["fixture://readme"]`) })
	if err := sub.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	waitLog("without it", func(l string) bool { return !strings.Contains(l, `resourceSubscriptions`) })
}

// A listing cut short because the entry stops is not a failure: the
// resources and prompts listings of a re-sync in flight at shutdown say
// nothing at warn (a one-shot command ends that way all the time).
func TestListingCutShortByAStopIsQuiet(t *testing.T) {
	t.Parallel()
	fx := fixturePeer(t, fixture.Options{Resources: true, HangOn: "resources/list", HangAfter: 1})
	hx := newHarness(t)
	hx.mustLoad(yml(httpEntry("a", "srv", fx.URL, nil)))
	hx.wantState("a", host.Ready)
	hx.wantCall("mcp__srv__add_more", `{}`, "added", false)
	fx.waitSeen(t, "resources/list", 2) // the re-sync's listing, which hangs
	hx.AfterClose(func() {
		for _, line := range strings.Split(hx.Log.String(), "\n") {
			if strings.Contains(line, "level=WARN") && strings.Contains(line, "listing the") {
				t.Errorf("a listing cut short by the stop was logged at warn: %s", line)
			}
		}
	})
}
