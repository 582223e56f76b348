package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/harness-go/harness/host"
	"github.com/harness-go/harness/plugins/tools"
)

// LoadResult is the reload under load of docs/benchmarks.md: callers call one
// entry's tool without pause while its args are edited.
type LoadResult struct {
	Callers, Edits int
	// Quiet are the calls' latencies before the edits, During during them.
	Quiet, During []time.Duration
	// QuietFailed and Failed count calls that did not answer as expected.
	QuietFailed, Failed int
	// Lacked counts the versions of the registry (each one event on the
	// host's stream) that lacked the entry's tool.
	Lacked int64
}

const loadID = "load"

// RunReloadUnderLoad starts one entry, measures callers calling its echo
// tool for as many calls as edits × 40 without edits, then edits its args
// edits times through cordis.yml writes (each edit waits for the new
// instance to take over) while the callers go on.
func RunReloadUnderLoad(ctx context.Context, bins *Binaries, dir string, edits, callers int, log *slog.Logger) (*LoadResult, error) {
	b := NewBridge(dir, log)
	defer b.Close()
	variant := func(i int) []Server {
		args := append(append([]string{}, FixtureArgs...), "--name", fmt.Sprintf("edit-%d", i))
		return []Server{{ID: loadID, ServerName: "rl", Command: bins.Fixture, Args: args}}
	}
	if err := b.Apply(ctx, variant(0)); err != nil {
		return nil, err
	}
	sub := b.Host.Subscribe()
	defer sub.Close()
	stopWatch, err := startWatcher(ctx, b, sub, log)
	if err != nil {
		return nil, err
	}
	defer stopWatch()

	lacked := countLacking(b, "mcp__rl__echo")

	res := &LoadResult{Callers: callers, Edits: edits}
	res.Quiet, res.QuietFailed = callFor(b, callers, edits*40, nil)
	stop := make(chan struct{})
	type outcome struct {
		lat    []time.Duration
		failed int
	}
	done := make(chan outcome, 1)
	go func() {
		lat, failed := callFor(b, callers, -1, stop)
		done <- outcome{lat, failed}
	}()
	var editErr error
	for i := 1; i <= edits && editErr == nil; i++ {
		_, editErr = reloadOnce(ctx, b, sub, loadID, RenderConfig(variant(i), fmt.Sprintf("edit %d", i)), "mcp__rl__echo", "mcp__rl__echo")
	}
	close(stop)
	o := <-done
	if editErr != nil {
		return nil, editErr
	}
	res.During, res.Failed, res.Lacked = o.lat, o.failed, lacked()
	return res, nil
}

// countLacking follows the versions of b's registry on the host's stream
// (every version is an event) and counts those that lack name. The
// returned function ends the count once it has seen the registry's
// version at the time of the call, and returns it.
func countLacking(b *Bridge, name string) (total func() int64) {
	sub := b.Host.Subscribe()
	_, has := b.Tools.Lookup(name)
	var seen atomic.Uint64
	seen.Store(b.Tools.Version()) // what came before is not counted
	var lacked atomic.Int64
	caught := make(chan struct{}, 1)
	go func() {
		for ev := range sub.C {
			if ev.Type != host.ServiceChanged || ev.Service != tools.Service {
				continue
			}
			switch {
			case slices.Contains(ev.Added, name):
				has = true
			case slices.Contains(ev.Removed, name):
				has = false
			}
			if !has {
				lacked.Add(1)
			}
			seen.Store(max(seen.Load(), ev.Version))
			select {
			case caught <- struct{}{}:
			default:
			}
		}
	}()
	return func() int64 {
		defer sub.Close()
		for want := b.Tools.Version(); seen.Load() < want; {
			<-caught
		}
		return lacked.Load()
	}
}

// callFor runs callers goroutines calling mcp__rl__echo: n calls in all, or
// (n < 0) until stop closes. It returns the latencies and the count of
// calls that did not answer "echo: x".
func callFor(b *Bridge, callers, n int, stop <-chan struct{}) ([]time.Duration, int) {
	var mu sync.Mutex
	var all []time.Duration
	failed := 0
	var left atomic.Int64
	left.Store(int64(n))
	var wg sync.WaitGroup
	args := json.RawMessage(`{"message":"x"}`)
	for range callers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var mine []time.Duration
			bad := 0
			for {
				if n >= 0 && left.Add(-1) < 0 || n < 0 && closed(stop) {
					break
				}
				t0 := time.Now()
				r := b.Tools.Execute(context.Background(), "mcp__rl__echo", args)
				mine = append(mine, time.Since(t0))
				if r.IsError || r.Text != "echo: x" {
					bad++
				}
			}
			mu.Lock()
			all = append(all, mine...)
			failed += bad
			mu.Unlock()
		}()
	}
	wg.Wait()
	return all, failed
}

func closed(c <-chan struct{}) bool {
	select {
	case <-c:
		return true
	default:
		return false
	}
}
