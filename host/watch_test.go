package host_test

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
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
		loadFrom(t, fx, path, labelFile("v0"))
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

// loopRig drives a watcher's loop inside a synctest bubble: the test
// changes the file and calls notify where fsnotify would report an event.
type loopRig struct {
	fx      *fixture
	path    string
	sub     *host.Subscription
	w       *host.Watcher
	changes chan struct{}
}

// newLoopRig loads content and runs the loop until the test ends. Call it
// inside the bubble.
func newLoopRig(t *testing.T, content string) *loopRig {
	t.Helper()
	r := &loopRig{fx: newFixture(t), changes: make(chan struct{}, 1)}
	r.path = filepath.Join(r.fx.dir, "cordis.yml")
	writeFile(t, r.path, content)
	if _, err := r.fx.h.LoadFile(context.Background(), r.path, false); err != nil {
		t.Fatal(err)
	}
	r.sub = r.fx.h.Subscribe()
	t.Cleanup(r.sub.Close)
	r.w = host.NewWatcher(r.fx.h, r.path, host.WatcherOptions{})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { r.w.Loop(ctx, r.changes); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
	return r
}

func (r *loopRig) notify() {
	select {
	case r.changes <- struct{}{}:
	default:
	}
}

// The quiet period and the grace, on a fake clock: the steps of each save
// are real file operations, each followed by the notification fsnotify
// would give, with the pauses an editor makes between them.
func TestWatcherQuietPeriod(t *testing.T) {
	t.Parallel()
	final := twoEntries("v1")
	truncate := func(t *testing.T, path string) {
		f, err := os.OpenFile(path, os.O_WRONLY|os.O_TRUNC, 0)
		if err != nil {
			t.Fatal(err)
		}
		f.Close()
	}
	appendTo := func(t *testing.T, path, s string) {
		f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		if _, err := f.WriteString(s); err != nil {
			t.Fatal(err)
		}
	}
	half := strings.Index(final, "- id: b")
	cases := []struct {
		name string
		// save changes the file; notify stands for one fsnotify event.
		save              func(t *testing.T, path string, notify func())
		reloads, rejected int
	}{
		{"truncate, 5 ms, write", func(t *testing.T, path string, notify func()) {
			truncate(t, path)
			notify()
			time.Sleep(5 * time.Millisecond)
			appendTo(t, path, final)
			notify()
		}, 1, 0},
		{"half the entries, 5 ms, the rest", func(t *testing.T, path string, notify func()) {
			truncate(t, path)
			notify()
			appendTo(t, path, final[:half])
			notify()
			time.Sleep(5 * time.Millisecond)
			appendTo(t, path, final[half:])
			notify()
		}, 1, 0},
		{"eight pieces, 1 ms apart", func(t *testing.T, path string, notify func()) {
			truncate(t, path)
			notify()
			for i := range 8 {
				time.Sleep(time.Millisecond)
				appendTo(t, path, final[i*len(final)/8:(i+1)*len(final)/8])
				notify()
			}
		}, 1, 0},
		{"vim: the file renamed away, written anew, the backup removed", func(t *testing.T, path string, notify func()) {
			if err := os.Rename(path, path+"~"); err != nil {
				t.Fatal(err)
			}
			notify()
			time.Sleep(time.Millisecond)
			writeFile(t, path, "")
			notify()
			time.Sleep(time.Millisecond)
			appendTo(t, path, final)
			notify()
			if err := os.Remove(path + "~"); err != nil {
				t.Fatal(err)
			}
		}, 1, 0},
		{"emptied, written 150 ms later: within the grace", func(t *testing.T, path string, notify func()) {
			truncate(t, path)
			notify()
			time.Sleep(150 * time.Millisecond)
			appendTo(t, path, final)
			notify()
		}, 1, 0},
		{"emptied, written 300 ms later: refused, then applied", func(t *testing.T, path string, notify func()) {
			truncate(t, path)
			notify()
			time.Sleep(300 * time.Millisecond)
			appendTo(t, path, final)
			notify()
		}, 1, 1},
		{"half the entries, 20 ms, the rest: a pause longer than the quiet period", func(t *testing.T, path string, notify func()) {
			truncate(t, path)
			appendTo(t, path, final[:half])
			notify()
			time.Sleep(20 * time.Millisecond)
			appendTo(t, path, final[half:])
			notify()
		}, 2, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			synctest.Test(t, func(t *testing.T) {
				r := newLoopRig(t, twoEntries("v0"))
				tc.save(t, r.path, r.notify)
				time.Sleep(time.Second)
				reloads, rejected, _ := drain(r.sub)
				if reloads != tc.reloads || rejected != tc.rejected {
					t.Errorf("%d reloads and %d refusals, want %d and %d", reloads, rejected, tc.reloads, tc.rejected)
				}
				if a, b := r.fx.rec.instance("a"), r.fx.rec.instance("b"); a == nil || b == nil || a.Label != "v1" || b.Label != "v1" {
					t.Errorf("the final content does not run: a=%+v b=%+v", a, b)
				}
			})
		})
	}
}

// A missing file is refused once the quiet period and the grace have passed
// without a change, not before; a forced reload refuses it at once.
func TestWatcherGrace(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		r := newLoopRig(t, labelFile("v0"))
		if err := os.Remove(r.path); err != nil {
			t.Fatal(err)
		}
		r.notify()
		time.Sleep(host.DefaultDebounce + host.DefaultGrace - time.Millisecond)
		if reloads, rejected, _ := drain(r.sub); reloads+rejected != 0 {
			t.Fatalf("%d reloads, %d refusals before the grace ended", reloads, rejected)
		}
		time.Sleep(time.Millisecond)
		if _, rejected, ev := drain(r.sub); rejected != 1 || !errors.Is(ev.Err, fs.ErrNotExist) {
			t.Fatalf("%d refusals once the grace ended (last event %v)", rejected, ev)
		}
	})
	synctest.Test(t, func(t *testing.T) {
		r := newLoopRig(t, labelFile("v0"))
		if err := os.Remove(r.path); err != nil {
			t.Fatal(err)
		}
		r.w.Reload()
		if _, rejected, _ := drain(r.sub); rejected != 1 {
			t.Fatalf("a forced reload of a missing file: %d refusals", rejected)
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
	loadFrom(t, fx, path, labelFile("one"))
	sub := fx.h.Subscribe()
	defer sub.Close()
	w := host.NewWatcher(fx.h, path, host.WatcherOptions{})
	run(t, w)
	applied := fx.applied
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

// watch runs a watcher of path for fx's host until the test ends, and
// returns a subscription that has seen the watcher's first forced reload:
// from then on the watches are armed.
func watch(t *testing.T, fx *fixture, path string, opts host.WatcherOptions) (*host.Subscription, *host.Watcher) {
	t.Helper()
	sub := fx.h.Subscribe()
	t.Cleanup(sub.Close)
	w := host.NewWatcher(fx.h, path, opts)
	run(t, w)
	w.Reload()
	waitFor(t, sub, "the forced reload", func(ev host.Event) bool { return ev.Type == host.Reloaded })
	return sub, w
}

// loadFrom writes content to path and loads it into fx's host.
func loadFrom(t *testing.T, fx *fixture, path, content string) {
	t.Helper()
	writeFile(t, path, content)
	if _, err := fx.h.LoadFile(context.Background(), path, false); err != nil {
		t.Fatal(err)
	}
}

// run runs w until the test ends.
func run(t *testing.T, w *host.Watcher) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- w.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	})
}

// applied matches the reload that runs label.
func (fx *fixture) applied(label string) func(host.Event) bool {
	return func(ev host.Event) bool {
		return ev.Type == host.Reloaded && fx.rec.instance("a").Label == label
	}
}

// save replaces path the way most editors do: a new file renamed over it.
func save(t *testing.T, path, content string) {
	t.Helper()
	tmp := filepath.Join(filepath.Dir(path), "."+filepath.Base(path)+".tmp")
	writeFile(t, tmp, content)
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
}

// relink points the link at target in one step, as `ln -sfn` and the
// kubelet do: a new link renamed over the old one.
func relink(t *testing.T, target, link string) {
	t.Helper()
	tmp := link + "_tmp"
	if err := os.Symlink(target, tmp); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, link); err != nil {
		t.Fatal(err)
	}
}

func mkdir(t *testing.T, dir string) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
}

// A step changes the files and names the label that must then run.
type step struct {
	what  string
	do    func(t *testing.T)
	label string
}

// runSteps loads the file at path (which runs "v0"), watches it, and
// carries out the steps, each waiting for its label to run.
func runSteps(t *testing.T, fx *fixture, path string, steps []step) {
	t.Helper()
	if _, err := fx.h.LoadFile(context.Background(), path, false); err != nil {
		t.Fatal(err)
	}
	if got := fx.rec.instance("a").Label; got != "v0" {
		t.Fatalf("the first load runs %q", got)
	}
	sub, _ := watch(t, fx, path, host.WatcherOptions{})
	for _, s := range steps {
		s.do(t)
		waitFor(t, sub, s.what+" to apply "+s.label, fx.applied(s.label))
	}
}

// A layout is a cordis.yml made under base (running "v0"), with the steps
// that change it.
type layout struct {
	name  string
	setup func(t *testing.T, base string) (path string, steps []step)
}

// runLayouts runs each layout's steps against a watcher, in parallel.
func runLayouts(t *testing.T, layouts []layout) {
	for _, tc := range layouts {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			fx := newFixture(t)
			path, steps := tc.setup(t, fx.dir)
			runSteps(t, fx, path, steps)
		})
	}
}

// The three layouts of a symlinked cordis.yml the v1 watcher missed, and a
// symlinked folder: every edit applies, whichever name on the way changes.
func TestWatcherFollowsSymlinks(t *testing.T) {
	t.Parallel()
	runLayouts(t, []layout{
		{"a Kubernetes ConfigMap swapping ..data", func(t *testing.T, base string) (string, []step) {
			// cordis.yml -> ..data/cordis.yml, ..data -> ..<timestamp>; the
			// kubelet writes a new timestamped folder, renames a ..data_tmp
			// link over ..data, then removes the old folder.
			n, current := 0, ""
			publish := func(t *testing.T, label string) {
				n++
				ts := fmt.Sprintf("..2026_11_01_00_00_%02d.%d", n, 1000+n)
				mkdir(t, filepath.Join(base, ts))
				writeFile(t, filepath.Join(base, ts, "cordis.yml"), labelFile(label))
				relink(t, ts, filepath.Join(base, "..data"))
				if current != "" {
					if err := os.RemoveAll(filepath.Join(base, current)); err != nil {
						t.Fatal(err)
					}
				}
				current = ts
			}
			publish(t, "v0")
			if err := os.Symlink("..data/cordis.yml", filepath.Join(base, "cordis.yml")); err != nil {
				t.Fatal(err)
			}
			return filepath.Join(base, "cordis.yml"), []step{
				{"the first swap", func(t *testing.T) { publish(t, "v1") }, "v1"},
				{"the second swap", func(t *testing.T) { publish(t, "v2") }, "v2"},
				{"an edit of the file the chain ends in", func(t *testing.T) {
					save(t, filepath.Join(base, current, "cordis.yml"), labelFile("v3"))
				}, "v3"},
				{"a third swap", func(t *testing.T) { publish(t, "v4") }, "v4"},
			}
		}},
		{"a link to a file in another folder", func(t *testing.T, base string) (string, []step) {
			mkdir(t, filepath.Join(base, "etc"))
			mkdir(t, filepath.Join(base, "data"))
			real := filepath.Join(base, "data", "harness.yml")
			writeFile(t, real, labelFile("v0"))
			link := filepath.Join(base, "etc", "cordis.yml")
			if err := os.Symlink(real, link); err != nil {
				t.Fatal(err)
			}
			other := filepath.Join(base, "data", "other.yml")
			return link, []step{
				{"a save of the target", func(t *testing.T) { save(t, real, labelFile("v1")) }, "v1"},
				{"a write in place of the target", func(t *testing.T) { writeFile(t, real, labelFile("v2")) }, "v2"},
				{"the link pointed elsewhere", func(t *testing.T) {
					writeFile(t, other, labelFile("v3"))
					relink(t, other, link)
				}, "v3"},
				{"a save of the new target", func(t *testing.T) { save(t, other, labelFile("v4")) }, "v4"},
			}
		}},
		{"a link in the same folder", func(t *testing.T, base string) (string, []step) {
			link := filepath.Join(base, "cordis.yml")
			writeFile(t, filepath.Join(base, "cordis.prod.yml"), labelFile("v0"))
			if err := os.Symlink("cordis.prod.yml", link); err != nil {
				t.Fatal(err)
			}
			return link, []step{
				{"a save of the target", func(t *testing.T) { save(t, filepath.Join(base, "cordis.prod.yml"), labelFile("v1")) }, "v1"},
				{"the link pointed elsewhere", func(t *testing.T) {
					writeFile(t, filepath.Join(base, "cordis.dev.yml"), labelFile("v2"))
					relink(t, "cordis.dev.yml", link)
				}, "v2"},
				{"a save of the new target", func(t *testing.T) { save(t, filepath.Join(base, "cordis.dev.yml"), labelFile("v3")) }, "v3"},
			}
		}},
		{"a symlinked folder", func(t *testing.T, base string) (string, []step) {
			for _, v := range []string{"v0", "v2"} {
				mkdir(t, filepath.Join(base, "releases", v))
				writeFile(t, filepath.Join(base, "releases", v, "cordis.yml"), labelFile(v))
			}
			if err := os.Symlink(filepath.Join("releases", "v0"), filepath.Join(base, "current")); err != nil {
				t.Fatal(err)
			}
			return filepath.Join(base, "current", "cordis.yml"), []step{
				{"a save in the linked folder", func(t *testing.T) { save(t, filepath.Join(base, "releases", "v0", "cordis.yml"), labelFile("v1")) }, "v1"},
				{"the folder link pointed elsewhere", func(t *testing.T) { relink(t, filepath.Join("releases", "v2"), filepath.Join(base, "current")) }, "v2"},
				{"a save in the new folder", func(t *testing.T) { save(t, filepath.Join(base, "releases", "v2", "cordis.yml"), labelFile("v3")) }, "v3"},
			}
		}},
	})
}

// Replacing cordis.yml's folder, or another folder of its chain, loses no
// watch: the new folder's content applies, and so do later edits in it.
func TestWatcherSurvivesReplacedFolder(t *testing.T) {
	t.Parallel()
	runLayouts(t, []layout{
		{"removed and made again", func(t *testing.T, base string) (string, []step) {
			dir := filepath.Join(base, "conf")
			mkdir(t, dir)
			path := filepath.Join(dir, "cordis.yml")
			writeFile(t, path, labelFile("v0"))
			return path, []step{
				{"rm -rf, mkdir, write", func(t *testing.T) {
					if err := os.RemoveAll(dir); err != nil {
						t.Fatal(err)
					}
					mkdir(t, dir)
					writeFile(t, path, labelFile("v1"))
				}, "v1"},
				{"an edit in the new folder", func(t *testing.T) { save(t, path, labelFile("v2")) }, "v2"},
				{"rm -rf, then mkdir and write again", func(t *testing.T) {
					if err := os.RemoveAll(dir); err != nil {
						t.Fatal(err)
					}
					mkdir(t, dir)
					save(t, path, labelFile("v3"))
				}, "v3"},
			}
		}},
		{"a prepared folder renamed in its place", func(t *testing.T, base string) (string, []step) {
			dir := filepath.Join(base, "conf")
			mkdir(t, dir)
			path := filepath.Join(dir, "cordis.yml")
			writeFile(t, path, labelFile("v0"))
			return path, []step{
				{"the old folder renamed away, a prepared one renamed in", func(t *testing.T) {
					mkdir(t, dir+".new")
					writeFile(t, filepath.Join(dir+".new", "cordis.yml"), labelFile("v1"))
					if err := os.Rename(dir, dir+".old"); err != nil {
						t.Fatal(err)
					}
					if err := os.Rename(dir+".new", dir); err != nil {
						t.Fatal(err)
					}
				}, "v1"},
				{"an edit in the new folder", func(t *testing.T) { writeFile(t, path, labelFile("v2")) }, "v2"},
				{"the folder emptied and a prepared one renamed over it", func(t *testing.T) {
					mkdir(t, dir+".next")
					writeFile(t, filepath.Join(dir+".next", "cordis.yml"), labelFile("v3"))
					if err := os.Remove(path); err != nil {
						t.Fatal(err)
					}
					// os.Rename refuses a folder as the target; rename(2)
					// replaces an empty one.
					if err := syscall.Rename(dir+".next", dir); err != nil {
						t.Fatal(err)
					}
				}, "v3"},
				{"an edit in the newest folder", func(t *testing.T) { save(t, path, labelFile("v4")) }, "v4"},
			}
		}},
		{"two levels removed and made again", func(t *testing.T, base string) (string, []step) {
			dir := filepath.Join(base, "a", "b")
			mkdir(t, dir)
			path := filepath.Join(dir, "cordis.yml")
			writeFile(t, path, labelFile("v0"))
			return path, []step{
				{"rm -rf a, mkdir -p a/b, write", func(t *testing.T) {
					if err := os.RemoveAll(filepath.Join(base, "a")); err != nil {
						t.Fatal(err)
					}
					mkdir(t, dir)
					writeFile(t, path, labelFile("v1"))
				}, "v1"},
				{"an edit in the new folder", func(t *testing.T) { save(t, path, labelFile("v2")) }, "v2"},
			}
		}},
		{"the folder of a link's target replaced", func(t *testing.T, base string) (string, []step) {
			data := filepath.Join(base, "data")
			mkdir(t, data)
			writeFile(t, filepath.Join(data, "real.yml"), labelFile("v0"))
			link := filepath.Join(base, "cordis.yml")
			if err := os.Symlink(filepath.Join("data", "real.yml"), link); err != nil {
				t.Fatal(err)
			}
			return link, []step{
				{"rm -rf, mkdir, write the target's folder", func(t *testing.T) {
					if err := os.RemoveAll(data); err != nil {
						t.Fatal(err)
					}
					mkdir(t, data)
					writeFile(t, filepath.Join(data, "real.yml"), labelFile("v1"))
				}, "v1"},
				{"an edit of the new target", func(t *testing.T) { save(t, filepath.Join(data, "real.yml"), labelFile("v2")) }, "v2"},
			}
		}},
	})
}

// A folder above the chain is not watched: when it is renamed away and
// made again, a forced reload reads the new file and arms the watches on the
// new folders, so later edits apply again.
func TestWatcherReloadRearms(t *testing.T) {
	t.Parallel()
	fx := newFixture(t)
	top := filepath.Join(fx.dir, "top")
	dir := filepath.Join(top, "conf")
	path := filepath.Join(dir, "cordis.yml")
	mkdir(t, dir)
	loadFrom(t, fx, path, labelFile("v0"))
	sub, w := watch(t, fx, path, host.WatcherOptions{})
	if err := os.Rename(top, top+".old"); err != nil {
		t.Fatal(err)
	}
	mkdir(t, dir)
	writeFile(t, path, labelFile("v1"))
	w.Reload()
	waitFor(t, sub, "the forced reload to apply v1", fx.applied("v1"))
	save(t, path, labelFile("v2"))
	waitFor(t, sub, "an edit in the new folder to apply v2", fx.applied("v2"))
}

// An edit made after the file was loaded and before the watcher runs is
// applied: the binary starts Run beside its console, and a user (or a test)
// can save before the watches are armed.
func TestWatcherAppliesAnEditMadeBeforeItRan(t *testing.T) {
	t.Parallel()
	fx := newFixture(t)
	path := filepath.Join(fx.dir, "cordis.yml")
	loadFrom(t, fx, path, labelFile("v0"))
	sub := fx.h.Subscribe()
	defer sub.Close()
	w := host.NewWatcher(fx.h, path, host.WatcherOptions{})
	writeFile(t, path, labelFile("v1"))
	run(t, w)
	waitFor(t, sub, "the edit made before Run to apply v1", fx.applied("v1"))
}

// A save that truncates the file and writes it 5 ms later applies once, the
// final content, and is never refused on the way (the empty file it shows
// for a moment is left for the grace period).
func TestWatcherTruncateThenWrite(t *testing.T) {
	t.Parallel()
	fx := newFixture(t)
	path := filepath.Join(fx.dir, "cordis.yml")
	loadFrom(t, fx, path, twoEntries("v0"))
	sub, _ := watch(t, fx, path, host.WatcherOptions{})
	for i := 1; i <= 3; i++ {
		label := fmt.Sprintf("v%d", i)
		f, err := os.OpenFile(path, os.O_WRONLY|os.O_TRUNC, 0)
		if err != nil {
			t.Fatal(err)
		}
		if err := f.Close(); err != nil {
			t.Fatal(err)
		}
		time.Sleep(5 * time.Millisecond) // the editor's pause (not a synchronisation)
		f, err = os.OpenFile(path, os.O_WRONLY, 0)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := f.WriteString(twoEntries(label)); err != nil {
			t.Fatal(err)
		}
		if err := f.Close(); err != nil {
			t.Fatal(err)
		}
		ev := waitFor(t, sub, "the save "+label, func(ev host.Event) bool {
			return ev.Type == host.Reloaded || ev.Type == host.ReloadRejected
		})
		if ev.Type == host.ReloadRejected {
			t.Fatalf("save %s: refused on the way: %v", label, ev.Err)
		}
		if a, b := fx.rec.instance("a").Label, fx.rec.instance("b").Label; a != label || b != label {
			t.Fatalf("save %s applied a=%q b=%q", label, a, b)
		}
	}
}

// twoEntries is a file whose first entry alone is a valid file too: half
// of it, applied, would remove b.
func twoEntries(label string) string {
	return labelFile(label) + "- id: b\n  name: probe\n  config: {label: " + label + "}\n"
}
