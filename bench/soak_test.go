package bench_test

import (
	"bytes"
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"testing"

	"github.com/harness-go/harness/bench"
)

// TestLeakSoak reloads one mcp-client entry 1 000 times (each a make-before-
// break swap: the new server beside the old one, then the take-over), one in
// ten through a real cordis.yml write, and checks that goroutines, open
// files and child processes come back to their baseline, that every server
// process is gone, and that the live heap grows by at most
// bench.MaxSoakHeapGrowth between cycles 100 and 1000.
//
// The log goes to a file, not to the test's log: t.Log keeps every line in
// memory, and the soak measures that memory. The file's tail is shown when
// the soak fails.
func TestLeakSoak(t *testing.T) {
	path := filepath.Join(t.TempDir(), "soak.log")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	log := slog.New(slog.NewTextHandler(f, &slog.HandlerOptions{Level: slog.LevelDebug}))
	res, err := bench.Soak(context.Background(), binaries(t), t.TempDir(), 1000, 10, log, nil)
	if err != nil {
		t.Fatalf("%v\nthe log's last lines:\n%s", err, tail(path, 40))
	}
	if res.Servers != 1001 || res.FileCycles != 100 {
		t.Fatalf("%d servers, %d file cycles; want 1001 and 100", res.Servers, res.FileCycles)
	}
	t.Logf("baseline %s; after %s; before the harness %s; after it closed %s", res.Baseline, res.After, res.Before, res.Closed)
	t.Logf("live heap: %d bytes at cycle %d, %d at cycle %d (%+d)", res.HeapFrom, res.HeapFromCycle, res.HeapTo, res.Cycles, res.HeapGrowth())
}

// tail returns the last n lines of a file.
func tail(path string, n int) string {
	data, _ := os.ReadFile(path)
	lines := bytes.Split(bytes.TrimRight(data, "\n"), []byte("\n"))
	return string(bytes.Join(lines[max(0, len(lines)-n):], []byte("\n")))
}
