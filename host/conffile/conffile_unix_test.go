//go:build unix

package conffile_test

import (
	"errors"
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/harness-go/harness/host/conffile"
)

// A named pipe, a device that never ends, a socket, and links to them:
// each is refused at once, saying what it is. A FIFO without a writer made
// the open wait for ever, and /dev/zero filled the memory.
func TestReadRefusesWhatIsNotAFile(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo.yml")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	sock := filepath.Join(dir, "s.sock")
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	link := func(name, target string) string {
		p := filepath.Join(dir, name)
		if err := os.Symlink(target, p); err != nil {
			t.Fatal(err)
		}
		return p
	}
	for _, tc := range []struct {
		name, path, what string
	}{
		{"a named pipe", fifo, "a named pipe (FIFO)"},
		{"a link to a named pipe", link("to-fifo.yml", fifo), "a named pipe (FIFO)"},
		{"/dev/zero", "/dev/zero", "a character device"},
		{"a link to /dev/zero", link("to-zero.yml", "/dev/zero"), "a character device"},
		{"/dev/urandom", "/dev/urandom", "a character device"},
		{"a socket", sock, "a socket"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			done := make(chan error, 1)
			go func() {
				_, err := conffile.Read(tc.path)
				done <- err
			}()
			select {
			case err := <-done:
				if !errors.Is(err, conffile.ErrNotRegular) || !strings.Contains(err.Error(), "it is "+tc.what) {
					t.Fatalf("Read = %v, want ErrNotRegular naming %s", err, tc.what)
				}
			case <-time.After(10 * time.Second):
				t.Fatal("Read blocked") // the goroutine stays: nothing can end it
			}
		})
	}
}

func TestReadFollowsLinksToFiles(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "real.yml"), []byte("[]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, "cordis.yml")
	if err := os.Symlink("real.yml", p); err != nil {
		t.Fatal(err)
	}
	if got, err := conffile.Read(p); err != nil || string(got) != "[]\n" {
		t.Fatalf("Read = %q, %v", got, err)
	}
}
