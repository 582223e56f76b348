package bench

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"time"
)

// SuiteOptions size a run of the whole suite.
type SuiteOptions struct {
	Calls       CallOptions
	Reloads     int   // cordis.yml edits measured
	StartupNs   []int // numbers of servers started at once
	StartupReps int
	MemoryNs    []int // numbers of servers the harness binary runs for RSS
	MemoryReps  int
	Tools       int // tools registered for the registry's costs
	Agent       AgentOptions
	SoakCycles  int
	SoakFile    int // every SoakFile-th soak cycle goes through a file write
	// Gateway sizes the gateway part: the TypeScript SDK client through
	// harness serve and straight to the fixture (needs node).
	Gateway CallOptions
	// Cold runs the cold-start part ([RunCold]): minutes of compiling on
	// both cores, so the quick suite (and with it the go test benchmarks,
	// which CI runs) leaves it out.
	Cold bool

	// Node and NPMDir locate node and the pinned npm install holding the
	// TypeScript SDK (internal/testkit/npmtest). Both empty: no TypeScript client.
	Node, NPMDir string

	// Parts, when not empty, selects the parts to run (see [Parts]).
	Parts []string
}

// Parts are the parts of the suite, in the order they run.
var Parts = []string{"calls", "reload", "startup", "memory", "registry", "soak", "agent", "gateway", "cold"}

func (o SuiteOptions) runs(part string) bool {
	return len(o.Parts) == 0 || slices.Contains(o.Parts, part)
}

// FullSuite is the recorded run: about two minutes on a 2-core machine.
func FullSuite() SuiteOptions {
	return SuiteOptions{
		Calls:       CallOptions{Rounds: 30, Warmup: 1000, Seq: 1000, Callers: 16, ParN: 100},
		Reloads:     50,
		StartupNs:   []int{1, 10, 50},
		StartupReps: 9,
		MemoryNs:    []int{0, 10, 50},
		MemoryReps:  3,
		Tools:       10_000,
		Agent: AgentOptions{Tools: 100, Warmup: 500, Turns: 5000, TTFB: 1000,
			Search: SearchOptions{Tools: 500, StepTools: 1000, Warmup: 100, Turns: 2000}},
		SoakCycles: 1000,
		SoakFile:   10,
		Gateway:    CallOptions{Rounds: 10, Warmup: 1000, Seq: 1000, Callers: 16, ParN: 100},
		Cold:       true,
	}
}

// QuickSuite runs every part once at the smallest size, but the cold start
// (which cannot be made small): a check that the suite works, not a
// measurement.
func QuickSuite() SuiteOptions {
	return SuiteOptions{
		Calls:       CallOptions{Rounds: 1, Warmup: 5, Seq: 20, Callers: 16, ParN: 2},
		Reloads:     2,
		StartupNs:   []int{1, 2},
		StartupReps: 1,
		MemoryNs:    []int{0, 1},
		MemoryReps:  1,
		Tools:       1000,
		Agent: AgentOptions{Tools: 100, Warmup: 10, Turns: 20, TTFB: 10,
			Search: SearchOptions{Tools: 500, StepTools: 1000, Warmup: 1, Turns: 3}},
		SoakCycles: 4,
		SoakFile:   2,
		Gateway:    CallOptions{Rounds: 1, Warmup: 5, Seq: 20, Callers: 16, ParN: 2},
	}
}

// Report holds the results of a suite run.
type Report struct {
	Options  SuiteOptions
	Machine  Machine
	Started  time.Time
	Duration time.Duration

	Calls   []*CallResult
	Reload  *ReloadResult
	Load    *LoadResult
	Startup []*StartupResult
	RSS     map[int][]int64 // harness binary VmRSS by number of servers
	Heap    map[int]int64   // in-process live heap for n servers
	Gor     map[int]int     // in-process goroutines for n servers
	Tools   ToolsCost
	Agent   *AgentResult
	Soak    *SoakResult
	SoakErr error
	Gateway []*CallResult // the TypeScript SDK client, direct and through the gateway
	Cold    *ColdResult
}

// RunSuite runs every measurement of the suite in one process, in the
// order of the issues: calls, reload, startup, memory, registry, soak,
// agent, gateway, cold.
// Progress lines go to progress (may be nil).
func RunSuite(ctx context.Context, bins *Binaries, o SuiteOptions, progress func(string)) (*Report, error) {
	say := func(s string) {
		if progress != nil {
			progress(s)
		}
	}
	rep := &Report{Options: o, Machine: DescribeMachine(o.Node), Started: time.Now()}
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	tmp, err := os.MkdirTemp("", "harness-bench-run-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp)
	dir := func(name string) string {
		d, _ := os.MkdirTemp(tmp, name+"-")
		return d
	}

	if o.runs("calls") {
		say("calls: starting the clients")
		clients, err := StartClients(ctx, bins, dir("calls"), log, o.Node, o.NPMDir)
		if err != nil {
			return nil, err
		}
		rep.Calls, err = RunCalls(ctx, clients, o.Calls, say)
		for _, c := range clients {
			c.Close()
		}
		if err != nil {
			return nil, err
		}
	}

	if o.runs("reload") {
		say(fmt.Sprintf("reload: %d edits of cordis.yml", o.Reloads))
		if rep.Reload, err = RunReload(ctx, bins, dir("reload"), o.Reloads, log); err != nil {
			return nil, err
		}
		say(fmt.Sprintf("reload under load: %d callers, %d edits of the entry's args", o.Calls.Callers, o.Reloads))
		if rep.Load, err = RunReloadUnderLoad(ctx, bins, dir("reload-load"), o.Reloads, o.Calls.Callers, log); err != nil {
			return nil, err
		}
	}

	if o.runs("startup") {
		if rep.Startup, err = RunStartup(ctx, bins, dir("startup"), o.StartupNs, o.StartupReps, log, say); err != nil {
			return nil, err
		}
	}

	if o.runs("memory") {
		rep.RSS, rep.Heap, rep.Gor = map[int][]int64{}, map[int]int64{}, map[int]int{}
		for r := range o.MemoryReps {
			for _, n := range o.MemoryNs {
				say(fmt.Sprintf("memory: harness binary with %d servers, repetition %d/%d", n, r+1, o.MemoryReps))
				rss, err := HarnessRSS(ctx, bins, dir("rss"), n)
				if err != nil {
					return nil, err
				}
				rep.RSS[n] = append(rep.RSS[n], rss)
			}
		}
		for _, n := range o.MemoryNs {
			if n == 0 {
				continue
			}
			say(fmt.Sprintf("memory: in-process heap with %d servers", n))
			if rep.Heap[n], rep.Gor[n], err = BridgeHeap(ctx, bins, dir("heap"), n); err != nil {
				return nil, err
			}
		}
	}

	if o.runs("registry") {
		say(fmt.Sprintf("registry: %d tools", o.Tools))
		if rep.Tools, err = MeasureTools(o.Tools, 20); err != nil {
			return nil, err
		}
	}

	if o.runs("soak") {
		say(fmt.Sprintf("soak: %d reload cycles", o.SoakCycles))
		rep.Soak, rep.SoakErr = Soak(ctx, bins, dir("soak"), o.SoakCycles, o.SoakFile, log, say)
	}

	if o.runs("agent") {
		if rep.Agent, err = RunAgent(ctx, o.Agent, say); err != nil {
			return nil, err
		}
	}
	if o.runs("gateway") && o.Node != "" {
		say("gateway: starting the TypeScript SDK clients, direct and through harness serve")
		clients, err := StartGatewayClients(ctx, bins, dir("gateway"), o.Node, o.NPMDir)
		if err != nil {
			return nil, err
		}
		rep.Gateway, err = RunCalls(ctx, clients, o.Gateway, func(s string) { say("gateway: " + s) })
		for _, c := range clients {
			c.Close()
		}
		if err != nil {
			return nil, err
		}
	}
	if o.runs("cold") && o.Cold {
		if rep.Cold, err = RunCold(ctx, bins.Root, dir("cold"), say); err != nil {
			return nil, err
		}
	}
	rep.Duration = time.Since(rep.Started)
	return rep, nil
}

// StartClients starts the per-call clients in table order: the raw pipe,
// raw lines (S), bare mcp-go, the bridge and, when node is given, the
// TypeScript SDK. On error, those started are closed.
func StartClients(ctx context.Context, bins *Binaries, dir string, log *slog.Logger, node, npmDir string) ([]Client, error) {
	var out []Client
	add := func(c Client, err error) error {
		if err == nil {
			out = append(out, c)
		}
		return err
	}
	err := errors.Join(
		add(StartPipe(bins)),
		add(StartRaw(bins)),
		add(StartMCPGo(ctx, bins)),
		add(StartBridge(ctx, bins, dir, log)),
	)
	if err == nil && node != "" {
		err = add(StartTS(ctx, bins, node, npmDir))
	}
	if err != nil {
		for _, c := range out {
			c.Close()
		}
		return nil, err
	}
	return out, nil
}
