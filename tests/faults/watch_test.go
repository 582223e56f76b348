//go:build unix

package faults

// Rows 6a and 6b: a cordis.yml behind links (a Kubernetes ConfigMap), and a
// cordis.yml whose folder is replaced, edited under a running harness: every
// new content applies. The watcher's own tests cover each layout and each
// kind of replacement (TestWatcherFollowsSymlinks,
// TestWatcherSurvivesReplacedFolder in host); these run them through the
// binary, as a user meets them.

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// echoFile is a cordis.yml with one echo entry whose tools carry prefix.
func echoFile(prefix string) string {
	return cordis(ent{ID: "e", Name: "echo", Config: map[string]any{"prefix": prefix}})
}

// wantTools checks that the console lists the two echo tools of prefix.
func wantTools(t *testing.T, s *session, prefix string) {
	t.Helper()
	got := s.do("/tools")
	if len(got) != 2 || !strings.HasPrefix(got[0], prefix+"clock ") || !strings.HasPrefix(got[1], prefix+"echo ") {
		t.Fatalf("/tools = %q, want the tools of %s\n%s", got, prefix, s.dump())
	}
}

// reloadedTo makes an edit and waits until the harness has applied it.
func reloadedTo(t *testing.T, s *session, what, toolPrefix string, edit func()) {
	t.Helper()
	from := s.err.Len()
	edit()
	s.waitErr(from, "reloading after "+what, prefix("harness: reloaded: "))
	wantTools(t, s, toolPrefix)
}

// A ConfigMap volume: cordis.yml -> ..data/cordis.yml, ..data -> a
// timestamped folder. The kubelet publishes an update by writing a new
// timestamped folder, renaming a ..data_tmp link over ..data and removing the
// old folder; the harness is started with -c on the mounted path.
func TestConfigMapSwapThroughTheBinary(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	mount := filepath.Join(dir, "config")
	n, current := 0, ""
	publish := func(content string) {
		n++
		ts := fmt.Sprintf("..2026_11_01_12_00_%02d.%d", n, 4000+n)
		if err := os.MkdirAll(filepath.Join(mount, ts), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(mount, ts, "cordis.yml"), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(ts, filepath.Join(mount, "..data_tmp")); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(filepath.Join(mount, "..data_tmp"), filepath.Join(mount, "..data")); err != nil {
			t.Fatal(err)
		}
		if current != "" {
			if err := os.RemoveAll(filepath.Join(mount, current)); err != nil {
				t.Fatal(err)
			}
		}
		current = ts
	}
	publish(echoFile("v0_"))
	if err := os.Symlink(filepath.Join("..data", "cordis.yml"), filepath.Join(mount, "cordis.yml")); err != nil {
		t.Fatal(err)
	}
	s := start(t, harnessBin, dir, nil, "-c", filepath.Join(mount, "cordis.yml"))
	wantTools(t, s, "v0_")
	for i := 1; i <= 3; i++ {
		p := fmt.Sprintf("v%d_", i)
		reloadedTo(t, s, fmt.Sprintf("swap %d", i), p, func() { publish(echoFile(p)) })
	}
	s.send("/quit\n")
	if code := s.waitExit(); code != 0 {
		t.Errorf("/quit: exit code %d", code)
	}
}

// cordis.yml's folder removed and made again, and replaced by a prepared
// folder renamed in its place: the harness follows each new folder.
func TestReplacedConfigFolderThroughTheBinary(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	conf := filepath.Join(dir, "conf")
	path := filepath.Join(conf, "cordis.yml")
	mkdir := func(d string) {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	mkdir(conf)
	writeConfig(t, conf, echoFile("v0_"))
	s := start(t, harnessBin, dir, nil, "-c", path)
	wantTools(t, s, "v0_")

	reloadedTo(t, s, "rm -rf, mkdir, write", "v1_", func() {
		if err := os.RemoveAll(conf); err != nil {
			t.Fatal(err)
		}
		mkdir(conf)
		writeConfig(t, conf, echoFile("v1_"))
	})
	reloadedTo(t, s, "an edit in the new folder", "v2_", func() { writeConfig(t, conf, echoFile("v2_")) })
	reloadedTo(t, s, "a prepared folder renamed over the emptied one", "v3_", func() {
		next := conf + ".next"
		mkdir(next)
		writeConfig(t, next, echoFile("v3_"))
		if err := os.Remove(path); err != nil {
			t.Fatal(err)
		}
		// os.Rename refuses a folder as the target; rename(2) replaces an
		// empty one.
		if err := syscall.Rename(next, conf); err != nil {
			t.Fatal(err)
		}
	})
	reloadedTo(t, s, "an edit in the newest folder", "v4_", func() { writeConfig(t, conf, echoFile("v4_")) })
	s.send("/quit\n")
	if code := s.waitExit(); code != 0 {
		t.Errorf("/quit: exit code %d", code)
	}
}
