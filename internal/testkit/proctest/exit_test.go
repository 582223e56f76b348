package proctest_test

import (
	"os/exec"
	"testing"
	"time"

	"github.com/harness-go/harness/internal/testkit/proctest"
)

func TestAwait(t *testing.T) {
	t.Parallel()
	t.Run("exit code", func(t *testing.T) {
		t.Parallel()
		cmd := exec.Command("/bin/sh", "-c", "exit 3")
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		e := proctest.Await(t, cmd)
		select {
		case <-e.Done():
		case <-time.After(time.Minute):
			t.Fatal("sh did not exit")
		}
		if e.Code() != 3 || e.Err() == nil || e.At().IsZero() {
			t.Fatalf("code %d, err %v, at %v", e.Code(), e.Err(), e.At())
		}
	})
	var sleeper *proctest.Exit
	t.Run("killed at cleanup", func(t *testing.T) {
		cmd := exec.Command("sleep", "600")
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		sleeper = proctest.Await(t, cmd)
	})
	select {
	case <-sleeper.Done():
	default:
		t.Fatal("the subtest's cleanup did not end its process")
	}
	if sleeper.Code() != -1 {
		t.Fatalf("a killed process: code %d, want -1", sleeper.Code())
	}
}
