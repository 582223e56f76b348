package bench

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/mark3labs/mcp-go/client"
)

// StartupResult records the start of n stdio servers, by the harness and by
// the floor, one sample per repetition.
type StartupResult struct {
	N int
	// Bridge is an in-process harness: cordis.yml loaded → every entry
	// settled (connected, listed, tools registered).
	Bridge []time.Duration
	// Floor is a bare mcp-go program: n goroutines that each start a
	// server, initialize and list its tools → all done.
	Floor []time.Duration
	// BridgeCPU and FloorCPU are the CPU time the process itself (not the
	// servers) spent meanwhile.
	BridgeCPU, FloorCPU []time.Duration
}

// RunStartup measures, reps times for each n, how long the harness takes to
// settle n fixture servers and how long a bare mcp-go program takes to
// connect to and list the same n servers concurrently. Which of the two
// goes first alternates.
func RunStartup(ctx context.Context, bins *Binaries, dir string, ns []int, reps int, log *slog.Logger, progress func(string)) ([]*StartupResult, error) {
	out := make([]*StartupResult, len(ns))
	for i, n := range ns {
		out[i] = &StartupResult{N: n}
	}
	for r := range reps {
		for i, n := range ns {
			if progress != nil {
				progress(fmt.Sprintf("startup: %d servers, repetition %d/%d", n, r+1, reps))
			}
			steps := []func() error{
				func() error {
					d, cpu, err := StartBridgeServers(ctx, bins, dir, n, log)
					out[i].Bridge = append(out[i].Bridge, d)
					out[i].BridgeCPU = append(out[i].BridgeCPU, cpu)
					return err
				},
				func() error {
					d, cpu, err := StartFloorServers(ctx, bins, n)
					out[i].Floor = append(out[i].Floor, d)
					out[i].FloorCPU = append(out[i].FloorCPU, cpu)
					return err
				},
			}
			if r%2 == 1 {
				steps[0], steps[1] = steps[1], steps[0]
			}
			for _, step := range steps {
				if err := step(); err != nil {
					return nil, err
				}
			}
		}
	}
	return out, nil
}

// StartBridgeServers loads a cordis.yml of n fixture servers into a new
// in-process harness and returns the time until all have settled, and the
// CPU time this process spent meanwhile. The harness is closed afterwards
// (not timed).
func StartBridgeServers(ctx context.Context, bins *Binaries, dir string, n int, log *slog.Logger) (wall, cpu time.Duration, err error) {
	b := NewBridge(dir, log)
	defer b.Close()
	if err := b.Write(FixtureServers(bins, n), ""); err != nil {
		return 0, 0, err
	}
	cpu0, t0 := processCPU(), time.Now()
	err = b.LoadAndSettle(ctx)
	d, cpu := time.Since(t0), processCPU()-cpu0
	if err == nil && len(b.Tools.Names()) != n {
		err = fmt.Errorf("%d tools registered, want %d", len(b.Tools.Names()), n)
	}
	if err != nil {
		return 0, 0, fmt.Errorf("bridge startup of %d servers: %w", n, err)
	}
	return d, cpu, nil
}

// StartFloorServers connects a bare mcp-go client to each of n fixture
// servers concurrently and returns the time until all have listed their
// tools, and the CPU time this process spent meanwhile. The clients are
// closed afterwards (not timed).
func StartFloorServers(ctx context.Context, bins *Binaries, n int) (wall, cpu time.Duration, err error) {
	clients := make([]*client.Client, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	cpu0, t0 := processCPU(), time.Now()
	for i := range n {
		wg.Go(func() { clients[i], errs[i] = ConnectMCPGo(ctx, bins.Fixture, FixtureArgs) })
	}
	wg.Wait()
	d, cpu := time.Since(t0), processCPU()-cpu0
	var closing sync.WaitGroup
	for _, c := range clients {
		if c != nil {
			closing.Go(func() { c.Close() })
		}
	}
	closing.Wait()
	if err := errors.Join(errs...); err != nil {
		return 0, 0, fmt.Errorf("mcp-go startup of %d servers: %w", n, err)
	}
	return d, cpu, nil
}
