package bench_test

import (
	"context"
	"testing"

	"github.com/harness-go/harness/bench"
	"github.com/harness-go/harness/internal/testlog"
)

// TestLeakSoak reloads one mcp-client entry 100 times, one in five through a
// real cordis.yml write, and checks that goroutines, open files and child
// processes come back to their baseline, and that every server process is
// gone. (benchtable runs 1 000 cycles.)
func TestLeakSoak(t *testing.T) {
	log, _ := testlog.New(t)
	res, err := bench.Soak(context.Background(), binaries(t), t.TempDir(), 100, 5, log, nil)
	if err != nil {
		t.Fatal(err)
	}
	if res.Servers != 101 || res.FileCycles != 20 {
		t.Fatalf("%d servers, %d file cycles; want 101 and 20", res.Servers, res.FileCycles)
	}
	t.Logf("baseline %s; after %s; before the harness %s; after it closed %s", res.Baseline, res.After, res.Before, res.Closed)
}
