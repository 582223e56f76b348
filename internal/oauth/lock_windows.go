//go:build windows

package oauth

import (
	"os"

	"golang.org/x/sys/windows"
)

// lockFile takes the exclusive lock of f's first byte, waiting for it
// (LockFileEx; the system lets go of it when the process dies).
func lockFile(f *os.File) error {
	var ol windows.Overlapped
	return windows.LockFileEx(windows.Handle(f.Fd()), windows.LOCKFILE_EXCLUSIVE_LOCK, 0, 1, 0, &ol)
}

func unlockFile(f *os.File) error {
	var ol windows.Overlapped
	return windows.UnlockFileEx(windows.Handle(f.Fd()), 0, 1, 0, &ol)
}
