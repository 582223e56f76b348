//go:build unix

package host_test

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/harness-go/harness/host"
	"github.com/harness-go/harness/internal/testkit/proctest"
)

// helperEnv names the file TestWatcherHelperProcess watches; without it
// that test has nothing to do.
const helperEnv = "HARNESS_WATCH_HELPER_FILE"

// nobody is the uid and gid the helper runs as when the tests run as root,
// who may read any file whatever its mode.
const nobody = 65534

// A file whose read permission was taken away and given back is read again:
// the Chmod event that gives it back counts. The watcher runs in a helper
// process under an unprivileged uid, so the modes bind it even when the
// tests run as root (CI).
func TestWatcherRereadsWhenReadPermissionReturns(t *testing.T) {
	t.Parallel()
	// t.TempDir's parent is private to us; the helper needs a way in.
	dir, err := os.MkdirTemp("", "harness-watch-perm-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "cordis.yml")
	writeFile(t, path, labelFile("v0"))

	bin := os.Args[0]
	cmd := exec.Command(bin, "-test.run=^TestWatcherHelperProcess$", "-test.count=1", "-test.v")
	if os.Geteuid() == 0 {
		// The test binary sits in the go command's private build folder.
		bin = filepath.Join(dir, "host.test")
		copyFile(t, os.Args[0], bin)
		cmd = exec.Command(bin, "-test.run=^TestWatcherHelperProcess$", "-test.count=1", "-test.v")
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: nobody, Gid: nobody}}
	}
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), helperEnv+"="+path)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, _ := proctest.Start(t, cmd, 0)
	t.Cleanup(func() {
		stdin.Close() // the helper stops at the end of its stdin
		if err := cmd.Wait(); err != nil {
			t.Errorf("the helper: %v\n%s", err, out.Text())
		}
	})
	from := 0
	wait := func(what string, match func(string) bool) string {
		t.Helper()
		i, ok := out.Find(from, 20*time.Second, match)
		if !ok {
			t.Fatalf("the helper never printed %s:\n%s", what, out.Text())
		}
		from = i + 1
		return out.From(i)[0]
	}
	wait("ready", func(l string) bool { return l == "ready" })

	// A new file nobody may read is renamed over cordis.yml: refused.
	tmp := filepath.Join(dir, ".cordis.yml.tmp")
	if err := os.WriteFile(tmp, []byte(labelFile("v1")), 0o000); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(tmp, 0o000); err != nil { // whatever the umask
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
	if l := wait("the refusal", func(l string) bool { return strings.HasPrefix(l, "rejected ") || strings.HasPrefix(l, "reloaded ") }); !strings.Contains(l, "permission denied") {
		t.Fatalf("an unreadable file: %q", l)
	}
	// Read permission given back: nothing else changes, the file applies.
	if err := os.Chmod(path, 0o644); err != nil {
		t.Fatal(err)
	}
	if l := wait("the reload", prefixed("reloaded ", "rejected ")); l != "reloaded v1" {
		t.Fatalf("read permission given back: %q", l)
	}

	// Again with the mode of the file in place, written while unreadable.
	if err := os.Chmod(path, 0o000); err != nil {
		t.Fatal(err)
	}
	writeFile(t, path, labelFile("v2"))
	if err := os.Chmod(path, 0o644); err != nil {
		t.Fatal(err)
	}
	wait("the second reload", func(l string) bool { return l == "reloaded v2" })
}

func prefixed(ps ...string) func(string) bool {
	return func(l string) bool {
		for _, p := range ps {
			if strings.HasPrefix(l, p) {
				return true
			}
		}
		return false
	}
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	src, err := os.Open(from)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	dst, err := os.OpenFile(to, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o755)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(dst, src); err != nil {
		t.Fatal(err)
	}
	if err := dst.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestWatcherHelperProcess is the helper of
// TestWatcherRereadsWhenReadPermissionReturns, run in a process of its own:
// it watches the file named by helperEnv and prints "ready", then a line per
// reload ("reloaded <label>") or refusal ("rejected <error>"), until its
// stdin ends. Run by the test runner itself, it returns at once.
func TestWatcherHelperProcess(t *testing.T) {
	path := os.Getenv(helperEnv)
	if path == "" {
		return
	}
	fx := newFixture(t)
	if _, err := fx.h.LoadFile(context.Background(), path, false); err != nil {
		t.Fatal(err)
	}
	sub := fx.h.Subscribe()
	defer sub.Close()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	w := host.NewWatcher(fx.h, path, host.WatcherOptions{})
	go func() { done <- w.Run(ctx) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	}()
	eof := make(chan struct{})
	go func() { _, _ = io.Copy(io.Discard, os.Stdin); close(eof) }()
	w.Reload()
	ready := false
	for {
		select {
		case ev := <-sub.C:
			switch {
			case ev.Type == host.Reloaded && !ready:
				ready = true
				fmt.Println("ready")
			case ev.Type == host.Reloaded:
				fmt.Println("reloaded", fx.rec.instance("a").Label)
			case ev.Type == host.ReloadRejected:
				fmt.Println("rejected", strings.ReplaceAll(ev.Err.Error(), "\n", " "))
			}
		case <-eof:
			return
		}
	}
}

// cordis.yml replaced by a named pipe, a link to /dev/zero, and a file over
// 4 MiB: each is refused with what it is (the pipe blocked the watcher in
// open(2) for ever, so that no edit applied again and shutdown waited for
// it; /dev/zero filled the memory). The running entry stays, the next real
// file applies, and the watcher stops at once when asked.
func TestWatcherRefusesWhatIsNotAConfigurationFile(t *testing.T) {
	t.Parallel()
	fx := newFixture(t)
	path := filepath.Join(fx.dir, "cordis.yml")
	loadFrom(t, fx, path, labelFile("v0"))
	sub := fx.h.Subscribe()
	defer sub.Close()
	w := host.NewWatcher(fx.h, path, host.WatcherOptions{})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- w.Run(ctx) }()
	w.Reload()
	waitFor(t, sub, "the forced reload", func(ev host.Event) bool { return ev.Type == host.Reloaded })

	replace := func(make func(tmp string) error) {
		t.Helper()
		tmp := filepath.Join(fx.dir, ".cordis.yml.tmp")
		if err := make(tmp); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(tmp, path); err != nil {
			t.Fatal(err)
		}
	}
	for i, tc := range []struct {
		what string
		make func(tmp string) error
		want string
	}{
		{"a named pipe", func(tmp string) error { return syscall.Mkfifo(tmp, 0o644) }, "it is a named pipe (FIFO)"},
		{"a link to /dev/zero", func(tmp string) error { return os.Symlink("/dev/zero", tmp) }, "it is a character device"},
		{"a file over 4 MiB", func(tmp string) error {
			return os.WriteFile(tmp, []byte(labelFile("big")+"#"+strings.Repeat("x", 4<<20)+"\n"), 0o644)
		}, "a configuration file may hold at most 4 MiB"},
	} {
		replace(tc.make)
		ev := waitFor(t, sub, "the refusal of "+tc.what, func(ev host.Event) bool {
			return ev.Type == host.ReloadRejected || ev.Type == host.Reloaded
		})
		if ev.Type != host.ReloadRejected || !strings.Contains(ev.Err.Error(), tc.want) {
			t.Fatalf("%s: event %v, %v; want a refusal saying %q", tc.what, ev.Type, ev.Err, tc.want)
		}
		if got, want := fx.rec.instance("a").Label, fmt.Sprintf("v%d", i); got != want {
			t.Fatalf("after %s, the entry runs %q, want %q still", tc.what, got, want)
		}
		// A regular file again: it applies.
		label := fmt.Sprintf("v%d", i+1)
		replace(func(tmp string) error { return os.WriteFile(tmp, []byte(labelFile(label)), 0o644) })
		waitFor(t, sub, "the reload of "+label, fx.applied(label))
	}

	// A pipe once more, and a forced reload while it is there: the watcher
	// neither hangs nor stays behind when it is stopped.
	replace(func(tmp string) error { return syscall.Mkfifo(tmp, 0o644) })
	waitFor(t, sub, "the refusal", func(ev host.Event) bool { return ev.Type == host.ReloadRejected })
	w.Reload()
	waitFor(t, sub, "the forced refusal", func(ev host.Event) bool { return ev.Type == host.ReloadRejected })
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the watcher did not stop within 5 s of its context's end")
	}
}
