package bench_test

import (
	"context"
	"testing"

	"github.com/harness-go/harness/bench"
	"github.com/harness-go/harness/internal/testlog"
)

// TestLeakSoak reloads one mcp-client entry 1 000 times (each a make-before-
// break swap: the new server beside the old one, then the take-over), one in
// ten through a real cordis.yml write, and checks that goroutines, open
// files and child processes come back to their baseline, and that every
// server process is gone.
func TestLeakSoak(t *testing.T) {
	log, _ := testlog.New(t)
	res, err := bench.Soak(context.Background(), binaries(t), t.TempDir(), 1000, 10, log, nil)
	if err != nil {
		t.Fatal(err)
	}
	if res.Servers != 1001 || res.FileCycles != 100 {
		t.Fatalf("%d servers, %d file cycles; want 1001 and 100", res.Servers, res.FileCycles)
	}
	t.Logf("baseline %s; after %s; before the harness %s; after it closed %s", res.Baseline, res.After, res.Before, res.Closed)
}
