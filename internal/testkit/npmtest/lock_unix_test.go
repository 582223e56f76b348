//go:build unix

package npmtest

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// A flock is held per open file, so a second lockFile in the same process
// waits like another process would, and gives up when its context ends.
func TestLockFileWaitsAndTimesOut(t *testing.T) {
	path := filepath.Join(t.TempDir(), "x.lock")
	unlock, err := lockFile(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	if _, err := lockFile(ctx, path); err == nil || !strings.Contains(err.Error(), "held by another process") {
		t.Fatalf("second lock while held: err = %v", err)
	}

	got := make(chan error, 1)
	go func() {
		u, err := lockFile(context.Background(), path)
		if err == nil {
			u()
		}
		got <- err
	}()
	time.Sleep(200 * time.Millisecond)
	unlock()
	select {
	case err := <-got:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("lock not acquired after release")
	}
}
