package host_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/harness-go/harness/host"
)

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func labelFile(label string) string {
	return "- id: a\n  name: probe\n  config: {label: " + label + "}\n"
}

// drain reads the events delivered so far (inside a synctest bubble) and
// counts reloads.
func drain(sub *host.Subscription) (reloads, rejected int, last *host.Event) {
	for {
		synctest.Wait()
		select {
		case ev := <-sub.C:
			switch ev.Type {
			case host.Reloaded:
				reloads++
			case host.ReloadRejected:
				rejected++
			}
			last = &ev
		default:
			return
		}
	}
}

func TestWatcherDebouncesBurstsAndSkipsIdenticalContent(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fx := newFixture(t)
		path := filepath.Join(fx.dir, "cordis.yml")
		writeFile(t, path, labelFile("v0"))
		if _, err := fx.h.LoadFile(context.Background(), path, false); err != nil {
			t.Fatal(err)
		}
		sub := fx.h.Subscribe()
		defer sub.Close()
		w := host.NewWatcher(fx.h, path, host.WatcherOptions{})
		changes := make(chan struct{}, 1)
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() { w.Loop(ctx, changes); close(done) }()
		defer func() { cancel(); <-done }()
		notify := func() {
			select {
			case changes <- struct{}{}:
			default:
			}
		}

		// 20 writes within 50 ms: one reload, of the last content.
		for i := 1; i <= 20; i++ {
			writeFile(t, path, labelFile("v"+strings.Repeat("x", i)))
			notify()
			time.Sleep(2500 * time.Microsecond)
		}
		time.Sleep(time.Second)
		synctest.Wait()
		if reloads, _, _ := drain(sub); reloads != 1 {
			t.Fatalf("%d reloads for one burst, want 1", reloads)
		}
		if got := fx.rec.instance("a").Label; got != "v"+strings.Repeat("x", 20) {
			t.Fatalf("label = %q, want the final content", got)
		}

		// Identical content: no reload at all.
		writeFile(t, path, labelFile("v"+strings.Repeat("x", 20)))
		notify()
		time.Sleep(time.Second)
		synctest.Wait()
		if reloads, rejected, _ := drain(sub); reloads+rejected != 0 {
			t.Fatalf("identical content caused %d reloads", reloads+rejected)
		}

		// A forced reload re-reads anyway.
		w.Reload()
		synctest.Wait()
		if reloads, _, _ := drain(sub); reloads != 1 {
			t.Fatalf("forced reload: %d reloads", reloads)
		}

		// Two edits further apart than the debounce: two reloads.
		writeFile(t, path, labelFile("y1"))
		notify()
		time.Sleep(time.Second)
		writeFile(t, path, labelFile("y2"))
		notify()
		time.Sleep(time.Second)
		synctest.Wait()
		if reloads, _, _ := drain(sub); reloads != 2 {
			t.Fatalf("%d reloads for two separate edits", reloads)
		}
	})
}

// waitFor reads events until one satisfies ok.
func waitFor(t *testing.T, sub *host.Subscription, what string, ok func(host.Event) bool) host.Event {
	t.Helper()
	timeout := time.After(10 * time.Second)
	for {
		select {
		case ev := <-sub.C:
			if ok(ev) {
				return ev
			}
		case <-timeout:
			t.Fatalf("timed out waiting for %s", what)
		}
	}
}

func TestWatcherFollowsRealSaves(t *testing.T) {
	t.Parallel()
	fx := newFixture(t)
	path := filepath.Join(fx.dir, "cordis.yml")
	writeFile(t, path, labelFile("one"))
	if _, err := fx.h.LoadFile(context.Background(), path, false); err != nil {
		t.Fatal(err)
	}
	sub := fx.h.Subscribe()
	defer sub.Close()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	w := host.NewWatcher(fx.h, path, host.WatcherOptions{})
	go func() { done <- w.Run(ctx) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	}()
	applied := func(label string) func(host.Event) bool {
		return func(ev host.Event) bool {
			return ev.Type == host.Reloaded && fx.rec.instance("a").Label == label
		}
	}
	// The watcher may not be watching yet; a forced reload proves it runs.
	w.Reload()
	waitFor(t, sub, "the forced reload", func(ev host.Event) bool { return ev.Type == host.Reloaded })

	// An editor's save: write a temporary file, rename it over the config.
	tmp := filepath.Join(fx.dir, ".cordis.yml.swp")
	writeFile(t, tmp, labelFile("two"))
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
	waitFor(t, sub, "the rename-over save", applied("two"))

	// A bad edit is refused and changes nothing.
	writeFile(t, path, "- id: a\n  name: probe\n  config: {label: [\n")
	ev := waitFor(t, sub, "the refusal", func(ev host.Event) bool { return ev.Type == host.ReloadRejected })
	if !strings.Contains(ev.Err.Error(), "invalid YAML") {
		t.Fatalf("refusal: %v", ev.Err)
	}
	if fx.rec.instance("a").Label != "two" || fx.state("a").State != host.Ready {
		t.Fatal("a bad edit changed the running entry")
	}

	// Deleted, then recreated.
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	ev = waitFor(t, sub, "the refusal of a missing file", func(ev host.Event) bool { return ev.Type == host.ReloadRejected })
	if !os.IsNotExist(unwrapAll(ev.Err)) {
		t.Fatalf("missing file: %v", ev.Err)
	}
	if fx.state("a").State != host.Ready {
		t.Fatal("deleting the file stopped the entry")
	}
	writeFile(t, path, labelFile("three"))
	waitFor(t, sub, "the recreated file", applied("three"))
}

func unwrapAll(err error) error {
	for {
		u, ok := err.(interface{ Unwrap() error })
		if !ok {
			return err
		}
		err = u.Unwrap()
	}
}
