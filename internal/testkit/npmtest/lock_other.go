//go:build !unix

package npmtest

import "context"

// lockFile does not lock where flock is unavailable; harness tests run on
// Linux, where lock_unix.go applies.
func lockFile(ctx context.Context, path string) (unlock func(), err error) {
	return func() {}, nil
}
