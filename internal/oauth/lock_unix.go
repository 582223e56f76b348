//go:build unix

package oauth

import (
	"os"

	"golang.org/x/sys/unix"
)

// lockFile takes the exclusive lock of f, waiting for it (flock(2): it is
// held by the open file, so two opens in one process exclude each other
// too, and the system lets go of it when the process dies).
func lockFile(f *os.File) error {
	for {
		err := unix.Flock(int(f.Fd()), unix.LOCK_EX)
		if err != unix.EINTR {
			return err
		}
	}
}

func unlockFile(f *os.File) error { return unix.Flock(int(f.Fd()), unix.LOCK_UN) }
