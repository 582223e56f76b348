package resources_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"go.uber.org/goleak"

	"github.com/harness-go/harness/fiber"
	"github.com/harness-go/harness/plugins/resources"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// subs records what a source was asked to subscribe to.
type subs struct{ log []string }

func (s *subs) source(server string, uris ...string) resources.Source {
	src := resources.Source{
		Server: server,
		Read: func(_ context.Context, uri string) (resources.ReadResult, error) {
			text := server + ":" + uri
			return resources.ReadResult{Contents: []resources.Content{{URI: uri, Text: &text}}}, nil
		},
		Subscribe:   func(_ context.Context, uri string) error { s.log = append(s.log, "+"+server+" "+uri); return nil },
		Unsubscribe: func(_ context.Context, uri string) error { s.log = append(s.log, "-"+server+" "+uri); return nil },
	}
	for _, u := range uris {
		src.Resources = append(src.Resources, resources.Resource{URI: u, Name: u})
	}
	return src
}

func newFiber(t *testing.T) *fiber.Fiber {
	f := fiber.New(context.Background(), t.Name())
	t.Cleanup(func() { _ = f.Dispose(context.Background()) })
	return f
}

func TestRegistry(t *testing.T) {
	t.Parallel()
	r := resources.New()
	f := newFiber(t)
	var s subs
	v0 := r.Version()
	a, err := r.Register(f, s.source("a", "x://2", "x://1"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.Register(f, s.source("b", "x://1")); err != nil {
		t.Fatal(err)
	}
	if r.Version() != v0+2 {
		t.Fatalf("version %d after two registrations from %d: every change is one event", r.Version(), v0)
	}
	var got []string
	for _, res := range r.List("") {
		got = append(got, res.Server+" "+res.URI)
	}
	if strings.Join(got, ",") != "a x://1,a x://2,b x://1" {
		t.Fatalf("List = %q (sorted by server, then uri)", got)
	}
	if _, err := r.Register(f, s.source("a", "x://3")); !errors.Is(err, resources.ErrConflict) {
		t.Fatalf("a second source of server a: %v", err)
	}
	if _, err := r.Register(f, s.source("c", "x://1", "x://1")); err == nil || !strings.Contains(err.Error(), "listed twice") {
		t.Fatalf("a uri twice: %v", err)
	}
	if _, err := r.Read(context.Background(), "nobody", "x://1"); !errors.Is(err, resources.ErrUnknownServer) {
		t.Fatalf("read of an unknown server: %v", err)
	}
	res, err := r.Read(context.Background(), "b", "x://1")
	if err != nil || *res.Contents[0].Text != "b:x://1" {
		t.Fatalf("read = %+v, %v", res, err)
	}

	// Subscriptions: counted per (server, uri), kept through a Replace.
	var heard []string
	one, err := r.Subscribe(context.Background(), "a", "x://1", func(u string) { heard = append(heard, "one "+u) })
	if err != nil {
		t.Fatal(err)
	}
	two, _ := r.Subscribe(context.Background(), "a", "x://1", func(u string) { heard = append(heard, "two "+u) })
	changed := r.Changed()
	a2, err := r.Replace(f, a, s.source("a", "x://1"))
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-changed:
	default:
		t.Fatal("Replace did not announce a change")
	}
	if got := r.Subscribed("a"); len(got) != 1 || got[0] != "x://1" {
		t.Fatalf("Subscribed = %q after the Replace", got)
	}
	a2.Updated("x://1")
	a2.Updated("x://2")
	if len(heard) != 2 {
		t.Fatalf("heard %q", heard)
	}
	_ = one.Stop(context.Background())
	_ = two.Stop(context.Background())
	_ = two.Stop(context.Background())
	if strings.Join(s.log, ",") != "+a x://1,-a x://1" {
		t.Fatalf("the source was asked %q: once to subscribe, once to stop", s.log)
	}
	if err := a2.Release(context.Background()); err != nil {
		t.Fatal(err)
	}
	if r.Has("a") || len(r.List("a")) != 0 {
		t.Fatal("a is still registered after its release")
	}
	_ = f.Dispose(context.Background())
	if r.Len() != 0 {
		t.Fatalf("%d left after the fiber went", r.Len())
	}
}

func TestJSON(t *testing.T) {
	t.Parallel()
	res := resources.Resource{Server: "s", URI: "x://1", Definition: []byte(`{"uri":"x://1","name":"one","_meta":{"k":1}}`)}
	if got := string(res.JSON()); got != `{"server":"s","uri":"x://1","name":"one","_meta":{"k":1}}` {
		t.Fatalf("JSON = %s", got)
	}
	size := int64(3)
	res = resources.Resource{Server: "s", URI: "x://1", Name: "one", Size: &size}
	if got := string(res.JSON()); got != `{"server":"s","uri":"x://1","name":"one","size":3}` {
		t.Fatalf("JSON = %s", got)
	}
}
