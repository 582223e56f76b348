//go:build !unix

package proctest

import "testing"

// Fifo needs named pipes, which only unix systems have.
func Fifo(t testing.TB, dir, name string, maxLine int) (path string, lines *Lines) {
	t.Helper()
	t.Fatal("proctest.Fifo: named pipes need a unix system")
	return "", nil
}
