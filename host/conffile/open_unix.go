//go:build unix

package conffile

import (
	"os"
	"syscall"
)

// open opens path for reading without waiting: a named pipe without a
// writer opens at once (and is then refused as not regular).
func open(path string) (*os.File, error) {
	return os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
}
