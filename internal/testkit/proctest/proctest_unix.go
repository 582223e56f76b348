//go:build unix

package proctest

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// Fifo makes a named pipe dir/name and reads it line by line: given to a
// fixture as --log, each message the fixture receives becomes a line the
// test can wait for, as an event. The pipe is opened for reading and
// writing, so the open does not wait for a writer and reads never see the
// end between the fixture's appends (it opens and closes the file for each).
func Fifo(t testing.TB, dir, name string, maxLine int) (path string, lines *Lines) {
	t.Helper()
	path = filepath.Join(dir, name)
	if err := syscall.Mkfifo(path, 0o600); err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return path, ReadLines(f, maxLine)
}
