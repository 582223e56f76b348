package bench

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"time"

	"go.uber.org/goleak"

	"github.com/harness-go/harness/host"
	"github.com/harness-go/harness/plugins/mcpclient"
)

// Resources are what a leak would show.
type Resources struct {
	Goroutines int
	FDs        int   // open file descriptors (/proc/self/fd)
	Children   []int // pids of child processes, zombies included
}

func (r Resources) String() string {
	return fmt.Sprintf("%d goroutines, %d open fds, %d child processes", r.Goroutines, r.FDs, len(r.Children))
}

// Measure reads the process's resources now.
func Measure() Resources {
	return Resources{Goroutines: runtime.NumGoroutine(), FDs: openFDs(), Children: children()}
}

func openFDs() int {
	entries, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		return -1
	}
	return len(entries) - 1 // the directory being read
}

// children lists the processes whose parent is this one.
func children() []int {
	self := os.Getpid()
	dirs, _ := os.ReadDir("/proc")
	var out []int
	for _, d := range dirs {
		pid, err := strconv.Atoi(d.Name())
		if err != nil {
			continue
		}
		data, err := os.ReadFile(filepath.Join("/proc", d.Name(), "stat"))
		if err != nil {
			continue
		}
		// pid (comm) state ppid …; comm may hold spaces and parentheses.
		s := string(data)
		i := strings.LastIndexByte(s, ')')
		if i < 0 {
			continue
		}
		f := strings.Fields(s[i+1:])
		if len(f) > 1 {
			if ppid, _ := strconv.Atoi(f[1]); ppid == self {
				out = append(out, pid)
			}
		}
	}
	return out
}

// eventually polls cond with a growing interval (as goleak does) until it
// holds or the bound passes; the last failure is returned.
func eventually(bound time.Duration, cond func() error) error {
	deadline := time.Now().Add(bound)
	wait := time.Millisecond
	for {
		err := cond()
		if err == nil || time.Now().After(deadline) {
			return err
		}
		time.Sleep(wait)
		wait = min(2*wait, 100*time.Millisecond)
	}
}

// SoakResult reports a leak soak.
type SoakResult struct {
	Cycles     int
	FileCycles int // of Cycles, through a cordis.yml write seen by the watcher
	Servers    int // server processes started and stopped
	Duration   time.Duration
	// Baseline is the process with the harness up and its one entry ready;
	// After the same once the cycles are done.
	Baseline, After Resources
	// Before is the process before the harness started; Closed after it
	// closed.
	Before, Closed Resources
	// HeapFrom and HeapTo are the live heap (bytes in use right after a
	// collection) at cycles HeapFromCycle and Cycles, each taken once the
	// replaced instances were gone. A reload that leaves anything behind
	// (an instance that keeps the one it replaced) makes it grow.
	HeapFromCycle    int
	HeapFrom, HeapTo uint64
}

// HeapGrowth is the live heap's growth between HeapFromCycle and Cycles.
func (r *SoakResult) HeapGrowth() int64 { return int64(r.HeapTo) - int64(r.HeapFrom) }

// MaxSoakHeapGrowth is the growth of the live heap between the soak's
// cycles 100 and 1000 that counts as a leak (docs/RELIABILITY.md, row 12c):
// one replaced instance kept costs more than that in 10 cycles.
const MaxSoakHeapGrowth = 64 << 10

// heapFromCycle is the cycle of the soak's first heap measurement: by then
// every cache of the process has warmed up.
const heapFromCycle = 100

// liveHeap collects garbage and returns the bytes of heap still in use.
func liveHeap() uint64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// Soak reloads one mcp-client entry cycles times — through host.Load
// (reconcile), and every fileEvery-th time through a real cordis.yml
// write that the watcher picks up — then checks that goroutines and open
// files are back to their baseline (at most: it may have caught the first
// connection's last moments), that the current server is the only child,
// and that all are back to what they were before the harness once it
// closes. Every server process
// started must be gone, and the live heap may not grow by more than
// [MaxSoakHeapGrowth] between cycle 100 (or the last, if fewer) and the
// last. log must not keep what it is given: a logger that holds every
// record grows the heap it measures.
func Soak(ctx context.Context, bins *Binaries, dir string, cycles, fileEvery int, log *slog.Logger, progress func(string)) (*SoakResult, error) {
	res := &SoakResult{Cycles: cycles, Before: Measure()}
	ignore := goleak.IgnoreCurrent()
	const id = "soak"
	variant := func(i int) []Server {
		return []Server{{ID: id, ServerName: fmt.Sprintf("soak%d", i%2), Command: bins.Fixture, Args: FixtureArgs}}
	}
	start := time.Now()
	err := func() error {
		b := NewBridge(dir, log)
		defer b.Close()
		if err := b.Apply(ctx, variant(0)); err != nil {
			return err
		}
		sub := b.Host.Subscribe()
		defer sub.Close()
		stop, err := startWatcher(ctx, b, sub, log)
		if err != nil {
			return err
		}
		defer stop()
		go func() {
			for range sub.C { // keep the queue short; the events are not needed
			}
		}()
		// Allocated once: a slice that grows with the cycles would be
		// counted as the leak the heap measurement looks for.
		pids := make([]int, 1, cycles+1)
		pids[0] = serverPID(b.Host)
		res.Baseline = Measure()
		res.HeapFromCycle = min(heapFromCycle, cycles)
		// quiet waits until the replaced instances are gone (their
		// goroutines and descriptors with them), so that both heap
		// measurements see the same set of live objects.
		// The baseline may hold a goroutine or a descriptor of the first
		// connection that was on its way out (it is taken as soon as the
		// entry is ready): what a replaced instance leaves grows with the
		// cycles, so at most the baseline is the test, not equality.
		quiet := func(i int) (uint64, error) {
			err := eventually(10*time.Second, func() error {
				now := Measure()
				return errors.Join(
					atMost("goroutines", now.Goroutines, res.Baseline.Goroutines),
					atMost("open fds", now.FDs, res.Baseline.FDs),
				)
			})
			if err != nil {
				return 0, fmt.Errorf("cycle %d: the replaced instance did not go: %w", i, err)
			}
			return liveHeap(), nil
		}

		for i := 1; i <= cycles; i++ {
			if progress != nil && i%100 == 0 {
				progress(fmt.Sprintf("soak: cycle %d/%d", i, cycles))
			}
			data := RenderConfig(variant(i), fmt.Sprintf("cycle %d", i))
			if fileEvery > 0 && i%fileEvery == 0 {
				res.FileCycles++
				if err := WriteFileAtomic(b.Config, data); err != nil {
					return err
				}
				f, err := host.ParseFile(b.Config, data)
				if err != nil {
					return err
				}
				if err := b.Host.Wait(ctx, func(s []host.EntryStatus) bool {
					cur := b.Host.File()
					return cur != nil && cur.Hash == f.Hash && host.AllSettled(s)
				}); err != nil {
					return fmt.Errorf("cycle %d: the watcher did not apply the file: %w", i, err)
				}
			} else {
				f, err := host.ParseFile(b.Config, data)
				if err != nil {
					return err
				}
				if _, err := b.Host.Load(ctx, f); err != nil {
					return err
				}
				if err := b.Host.Settle(ctx); err != nil {
					return err
				}
			}
			if err := AllReady(b.Host); err != nil {
				return fmt.Errorf("cycle %d: %w", i, err)
			}
			pids = append(pids, serverPID(b.Host))
			if i == res.HeapFromCycle {
				if res.HeapFrom, err = quiet(i); err != nil {
					return err
				}
			}
			if i == cycles {
				if res.HeapTo, err = quiet(i); err != nil {
					return err
				}
			}
		}
		res.Servers = len(pids)
		if g := res.HeapGrowth(); g > MaxSoakHeapGrowth {
			return fmt.Errorf("leak: the live heap grew by %s between cycles %d and %d (%s to %s; bound %s): a reload keeps something of what it replaced",
				kib(g), res.HeapFromCycle, cycles, kib(int64(res.HeapFrom)), kib(int64(res.HeapTo)), kib(MaxSoakHeapGrowth))
		}

		current := pids[len(pids)-1]
		err = eventually(10*time.Second, func() error {
			res.After = Measure()
			return errors.Join(
				atMost("goroutines", res.After.Goroutines, res.Baseline.Goroutines),
				atMost("open fds", res.After.FDs, res.Baseline.FDs),
				childrenAre(res.After.Children, current),
				gone(pids[:len(pids)-1]),
			)
		})
		if err != nil {
			return fmt.Errorf("after %d cycles, with the entry ready: %w (baseline: %s; now: %s)", cycles, err, res.Baseline, res.After)
		}
		return nil
	}()
	res.Duration = time.Since(start)
	if err != nil {
		return res, err
	}
	err = goleak.Find(ignore) // retries by itself
	if err == nil {
		err = eventually(10*time.Second, func() error {
			res.Closed = Measure()
			return errors.Join(
				same("open fds", res.Closed.FDs, res.Before.FDs),
				same("child processes", len(res.Closed.Children), len(res.Before.Children)),
			)
		})
	}
	res.Closed = Measure()
	if err != nil {
		return res, fmt.Errorf("after the harness closed: %w (before: %s; now: %s)", err, res.Before, res.Closed)
	}
	return res, nil
}

// atMost is same for a count that may have been one or two over its
// floor when the baseline was taken.
func atMost(what string, got, limit int) error {
	if got > limit {
		return fmt.Errorf("%s: %d, baseline %d", what, got, limit)
	}
	return nil
}

func same(what string, got, want int) error {
	if got != want {
		return fmt.Errorf("%s: %d, baseline %d", what, got, want)
	}
	return nil
}

func childrenAre(got []int, want int) error {
	if len(got) != 1 || got[0] != want {
		return fmt.Errorf("child processes %v, want only the current server %d", got, want)
	}
	return nil
}

func gone(pids []int) error {
	var left []int
	for _, p := range pids {
		if alive(p) {
			left = append(left, p)
		}
	}
	if len(left) > 0 {
		return fmt.Errorf("%d old server processes still exist: %v", len(left), left[:min(len(left), 10)])
	}
	return nil
}

// serverPID returns the pid of the first mcp-client entry's server.
func serverPID(h *host.Host) int {
	for _, e := range h.Snapshot() {
		if st, ok := e.Details.(*mcpclient.Status); ok {
			return st.PID
		}
	}
	return 0
}

func kib(n int64) string { return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10)) }
