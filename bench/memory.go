package bench

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/harness-go/harness/fiber"
	"github.com/harness-go/harness/plugins/tools"
)

// HarnessRSS starts the harness binary (`harness run`) on a cordis.yml of n
// fixture servers in dir, waits until its console has settled and answered
// `/tools --json` with n tools, and returns the binary's resident set size
// in bytes (VmRSS; the servers are processes of their own and not counted).
func HarnessRSS(ctx context.Context, bins *Binaries, dir string, n int) (int64, error) {
	cfg := filepath.Join(dir, "cordis.yml")
	if err := WriteFileAtomic(cfg, RenderConfig(FixtureServers(bins, n), "")); err != nil {
		return 0, err
	}
	cmd := exec.CommandContext(ctx, bins.Harness, "run", "-c", cfg, "--wait", "2m")
	cmd.Dir = dir
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return 0, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return 0, err
	}
	if err := cmd.Start(); err != nil {
		return 0, err
	}
	defer func() {
		io.WriteString(stdin, "/quit\n")
		stdin.Close()
		cmd.Wait()
	}()
	if _, err := io.WriteString(stdin, "/tools --json\n"); err != nil {
		return 0, err
	}
	line, err := bufio.NewReaderSize(stdout, 1<<20).ReadBytes('\n')
	if err != nil {
		return 0, fmt.Errorf("harness with %d servers: %v; stderr: %s", n, err, stderr.Bytes())
	}
	var list []json.RawMessage
	if err := json.Unmarshal(line, &list); err != nil || len(list) != n {
		return 0, fmt.Errorf("harness with %d servers listed %d tools (%v); stderr: %s", n, len(list), err, stderr.Bytes())
	}
	return ProcRSS(cmd.Process.Pid)
}

// ProcRSS returns VmRSS of a process, in bytes.
func ProcRSS(pid int) (int64, error) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	for line := range strings.SplitSeq(string(data), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			return kb << 10, err
		}
	}
	return 0, fmt.Errorf("no VmRSS in /proc/%d/status", pid)
}

// HeapInUse collects garbage and returns the live heap in bytes.
func HeapInUse() uint64 {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// BridgeHeap returns the live heap that an in-process harness holds for n
// connected fixture servers, and the goroutines it runs for them, after the
// harness with none has been subtracted.
func BridgeHeap(ctx context.Context, bins *Binaries, dir string, n int) (heap int64, goroutines int, err error) {
	b := NewBridge(dir, QuietLogger(os.Stderr))
	defer b.Close()
	if err := b.Apply(ctx, nil); err != nil {
		return 0, 0, err
	}
	h0, g0 := HeapInUse(), runtime.NumGoroutine()
	if err := b.Apply(ctx, FixtureServers(bins, n)); err != nil {
		return 0, 0, err
	}
	h1, g1 := HeapInUse(), runtime.NumGoroutine()
	return int64(h1) - int64(h0), g1 - g0, nil
}

// ToolsCost is what 10 000 registered tools cost the registry.
type ToolsCost struct {
	N              int
	HeapBytes      int64         // live heap of the registry and its tools
	Register       time.Duration // one batch of N
	List           time.Duration // List(), sorted, cached
	Lookup         time.Duration // one Lookup by name
	ModelJSON      time.Duration // ModelJSON() from the cache
	ModelJSONAfter time.Duration // ModelJSON() right after a change of the set
	ModelJSONBytes int
}

// manyTools returns n tools with names, descriptions and schemas of a
// realistic size.
func manyTools(n int) []tools.Tool {
	params := json.RawMessage(`{"type":"object","properties":{"query":{"type":"string","description":"What to look for."},"limit":{"type":"integer"}},"required":["query"]}`)
	exec := func(context.Context, json.RawMessage) (tools.Result, error) { return tools.Result{Text: "ok"}, nil }
	out := make([]tools.Tool, n)
	for i := range out {
		out[i] = tools.Tool{
			Name:        fmt.Sprintf("mcp__server%03d__tool_%05d", i%100, i),
			Description: "Look something up in the index of server " + strconv.Itoa(i%100) + ".",
			Parameters:  params,
			Execute:     exec,
		}
	}
	return out
}

// MeasureTools registers n tools in a new registry and times what the model
// loop does with them. rounds sizes the timing loops.
func MeasureTools(n, rounds int) (ToolsCost, error) {
	ctx := context.Background()
	ts := manyTools(n)
	f := fiber.New(ctx, "bench")
	defer f.Dispose(ctx)
	names := make([]string, n)
	for i, t := range ts {
		names[i] = t.Name
	}
	h0 := HeapInUse()
	r := tools.New()
	t0 := time.Now()
	if _, err := r.Register(f, ts...); err != nil {
		return ToolsCost{}, err
	}
	c := ToolsCost{N: n, Register: time.Since(t0)}
	r.ModelJSON()
	r.List()
	c.HeapBytes = int64(HeapInUse()) - int64(h0)
	c.ModelJSONBytes = len(r.ModelJSON())

	c.List = timeEach(rounds, func(int) { r.List() })
	c.Lookup = timeEach(rounds*100, func(i int) {
		if _, ok := r.Lookup(names[(i*7919)%n]); !ok {
			panic("lookup failed")
		}
	})
	c.ModelJSON = timeEach(rounds*100, func(int) { r.ModelJSON() })
	var release fiber.Disposer
	toggle := tools.Tool{Name: "toggled", Execute: ts[0].Execute}
	var err error
	c.ModelJSONAfter = timeEach(rounds, func(int) {
		if release == nil {
			release, err = r.Register(f, toggle)
		} else {
			release(ctx)
			release = nil
		}
		r.ModelJSON()
	})
	runtime.KeepAlive(r)
	return c, err
}

func timeEach(n int, fn func(i int)) time.Duration {
	t0 := time.Now()
	for i := range n {
		fn(i)
	}
	return time.Since(t0) / time.Duration(n)
}
