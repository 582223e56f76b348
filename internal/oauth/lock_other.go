//go:build !unix && !windows

package oauth

import "os"

// lockFile takes no lock where the system offers none: the lock within
// the process still holds.
func lockFile(*os.File) error   { return nil }
func unlockFile(*os.File) error { return nil }
