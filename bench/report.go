package bench

import (
	"fmt"
	"io"
	"math"
	"slices"
	"strings"
	"text/tabwriter"
	"time"
)

// Target is one target of the issue, checked against a run.
type Target struct {
	Name     string
	Measured string
	Limit    string
	Met      bool
}

// call returns a client's record.
func (r *Report) call(name string) *CallResult {
	for _, c := range r.Calls {
		if c.Name == name {
			return c
		}
	}
	return nil
}

// share is a client's median latency minus the raw client's (S): the
// median over rounds of the difference of the two round medians.
func (r *Report) share(name string) (time.Duration, bool) {
	c, raw := r.call(name), r.call(NameRaw)
	if c == nil || raw == nil || len(c.RoundMedians) != len(raw.RoundMedians) {
		return 0, false
	}
	diffs := make([]time.Duration, len(c.RoundMedians))
	for i := range diffs {
		diffs[i] = c.RoundMedians[i] - raw.RoundMedians[i]
	}
	return Median(diffs), true
}

// Targets checks every target the issue sets.
func (r *Report) Targets() []Target {
	var out []Target
	ratio := func(name string, a, b float64, limit float64, atMost bool) {
		t := Target{Name: name, Measured: "n/a"}
		cmp := "≥"
		if atMost {
			cmp = "≤"
		}
		t.Limit = fmt.Sprintf("%s %.2f", cmp, limit)
		if b > 0 && a >= 0 {
			v := a / b
			t.Measured = fmt.Sprintf("%.2f", v)
			if v < 0.1 {
				t.Measured = fmt.Sprintf("%.3f", v) // 0.018, not 0.02
			}
			t.Met = (atMost && v <= limit) || (!atMost && v >= limit)
		}
		out = append(out, t)
	}
	bs, okB := r.share(NameBridge)
	ms, okM := r.share(NameMCPGo)
	ts, okT := r.share(NameTS)
	if okB && okM {
		ratio("call: bridge client share / bare mcp-go client share", us(bs), us(ms), 0.6, true)
	}
	if okB && okT {
		ratio("call: bridge client share / TS SDK client share", us(bs), us(ts), 0.5, true)
	}
	if b, m := r.call(NameBridge), r.call(NameMCPGo); b != nil && m != nil {
		ratio(fmt.Sprintf("call: bridge / bare mcp-go throughput, %d callers", r.Options.Calls.Callers),
			b.Par.Summarize().Throughput, m.Par.Summarize().Throughput, 1.1, false)
		if raw := r.call(NameRaw); raw != nil {
			// Not a target: where the floor is. The server is the bottleneck
			// with 16 callers on 2 cores; the raw client does nothing else.
			out = append(out, Target{Name: fmt.Sprintf("  (for reference: raw JSON-RPC lines / bare mcp-go throughput, %d callers)", r.Options.Calls.Callers),
				Measured: fmt.Sprintf("%.2f", raw.Par.Summarize().Throughput/m.Par.Summarize().Throughput), Limit: "—", Met: true})
		}
	}
	if r.Reload != nil && len(r.Reload.Host) > 0 {
		h := Median(r.Reload.Host)
		out = append(out, Target{Name: "reload: host share, median", Measured: ms1(h), Limit: "≤ 25 ms", Met: h <= 25*time.Millisecond})
	}
	if l := r.Load; l != nil {
		out = append(out,
			Target{Name: fmt.Sprintf("reload under load: failed calls, %d callers, %d edits", l.Callers, l.Edits), Measured: fmt.Sprint(l.Failed), Limit: "0", Met: l.Failed == 0},
			Target{Name: "reload under load: moments the registry lacked the entry's tool", Measured: fmt.Sprint(l.Lacked), Limit: "0", Met: l.Lacked == 0})
	}
	for _, s := range r.Startup {
		ratio(fmt.Sprintf("startup, %d servers: harness / bare mcp-go", s.N), sec(Median(s.Bridge)), sec(Median(s.Floor)), 1.2, true)
	}
	base := medianInt(r.RSS[0])
	for _, n := range sortedKeys(r.RSS) {
		if n == 0 || len(r.RSS[0]) == 0 {
			continue
		}
		per := float64(medianInt(r.RSS[n])-base) / float64(n) / (1 << 20)
		out = append(out, Target{Name: fmt.Sprintf("memory: harness RSS per connected server, %d servers", n),
			Measured: fmt.Sprintf("%.2f MiB", per), Limit: "≤ 1 MiB", Met: per <= 1})
	}
	if a := r.Agent; a != nil && len(a.Step) > 0 {
		step := Median(a.Step)
		out = append(out, Target{Name: fmt.Sprintf("agent: the harness's own time per step, %d tools, median", a.Tools), Measured: usf(step), Limit: "≤ 1 ms", Met: step <= time.Millisecond})
	}
	if a := r.Agent; a != nil && len(a.TTFBHarness) > 0 {
		added := a.Added()
		out = append(out, Target{Name: "agent: time to first text byte added to the fake server's own, medians", Measured: usf(added), Limit: "≤ 2 ms", Met: added <= 2*time.Millisecond})
	}
	if a := r.Agent; a != nil && a.Search != nil {
		s := a.Search
		ratio(fmt.Sprintf("agent, tool search: prompt tokens per step, search / every schema, %d tools", s.Tools), s.Ratio(), 1, 0.15, true)
		found := Target{Name: fmt.Sprintf("agent, tool search: a scripted model finds and calls a tool among %d through search_tools", s.Tools), Measured: "yes", Limit: "yes", Met: s.Found}
		if !s.Found {
			found.Measured = "no"
		}
		out = append(out, found)
		step := Median(s.Step)
		out = append(out, Target{Name: fmt.Sprintf("agent, tool search: the harness's own time per step, %d tools, median", s.StepTools), Measured: usf(step), Limit: "≤ 1 ms", Met: len(s.Step) > 0 && step <= time.Millisecond})
	}
	for _, p := range gatewayPairs {
		d, g := gatewayCall(r, p[0]), gatewayCall(r, p[1])
		if d != nil && g != nil && p[1] != NameRelayStdio {
			ratio(fmt.Sprintf("%s p50 / %s p50 (TypeScript SDK client)", p[1], p[0]), us(g.Seq.Summarize().Median), us(d.Seq.Summarize().Median), 1.3, true)
		}
	}
	// Issue 24: over stdio the relay, which only copies bytes, is the
	// floor of any process in the middle, and the judge.
	if rl, g := gatewayCall(r, NameRelayStdio), gatewayCall(r, NameGatewayStdio); rl != nil && g != nil {
		ratio("gateway/stdio p50 / relay/stdio p50 (TypeScript SDK client)", us(g.Seq.Summarize().Median), us(rl.Seq.Summarize().Median), 1.15, true)
		ratio(fmt.Sprintf("gateway/stdio / relay/stdio throughput, %d callers", r.Options.Gateway.Callers), g.Par.Summarize().Throughput, rl.Par.Summarize().Throughput, 0.9, false)
	}
	if c := r.Cold; c != nil {
		ratio("cold: go build ./cmd/harness / go build of mcp-go's client and server (std-only caches)", sec(c.Harness), sec(c.MCPGo), 5, true)
		out = append(out, Target{Name: "cold: fresh clone, empty caches, `go run ./cmd/harness` → the demo's tools listed",
			Measured: fmt.Sprintf("%.1f s", sec(c.FirstRun)), Limit: "≤ 45 s", Met: c.FirstRun <= 45*time.Second})
	}
	if r.Soak != nil {
		t := Target{Name: fmt.Sprintf("leak soak, %d cycles: goroutines, fds, children back to baseline", r.Soak.Cycles), Limit: "yes", Measured: "yes", Met: r.SoakErr == nil}
		if r.SoakErr != nil {
			t.Measured = "no"
		}
		g := r.Soak.HeapGrowth()
		out = append(out, t, Target{
			Name:     fmt.Sprintf("leak soak: live heap growth between cycles %d and %d", r.Soak.HeapFromCycle, r.Soak.Cycles),
			Measured: kib(g), Limit: "≤ " + kib(MaxSoakHeapGrowth), Met: g <= MaxSoakHeapGrowth,
		})
	}
	return out
}

// WriteTable prints the report.
func (r *Report) WriteTable(w io.Writer) {
	o := r.Options
	m := r.Machine
	fmt.Fprintf(w, "harness benchmark suite, %s, %s\n", r.Started.Format("2006-01-02 15:04 MST"), r.Duration.Round(time.Second))
	fmt.Fprintf(w, "machine: %s, %d cores, %.1f GiB; %s; %s", m.CPU, m.Cores, m.MemGiB, m.Kernel, m.Go)
	if m.Node != "" {
		fmt.Fprintf(w, "; %s", m.Node)
	}
	fmt.Fprintf(w, "\nload average: %s at the start, %s at the end\n", m.LoadAtStart, LoadAvg())

	if len(r.Calls) > 0 {
		c := o.Calls
		fmt.Fprintf(w, "\n1-2. One call of echo over stdio, every client against its own `mcpfixture --only echo`\n")
		fmt.Fprintf(w, "     %d rounds, interleaved; per client and round %d sequential calls and %d callers × %d calls\n\n", c.Rounds, c.Seq, c.Callers, c.ParN)
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
		fmt.Fprintf(tw, "client\tseq p50\tseq p99\tseq calls/s\tshare (p50 − S)\tclient CPU/call\t\t%d× p50\t%d× p99\t%d× calls/s\tclient CPU/call\t\n", c.Callers, c.Callers, c.Callers)
		for _, cr := range r.Calls {
			s, p := cr.Seq.Summarize(), cr.Par.Summarize()
			share := "—"
			if cr.Name != NamePipe {
				d, _ := r.share(cr.Name)
				share = fmt.Sprintf("%.1f µs", us(d))
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%.0f\t%s\t%s\t\t%s\t%s\t%.0f\t%s\t\n", label(cr.Name), usf(s.Median), usf(s.P99), s.Throughput, share, usf(s.CPU),
				usf(p.Median), usf(p.P99), p.Throughput, usf(p.CPU))
		}
		tw.Flush()
	}

	if rl := r.Reload; rl != nil && len(rl.Total) > 0 {
		fmt.Fprintf(w, "\n3. Reload: a cordis.yml write → the new tool set visible (%d edits of one entry; in-process host and its watcher)\n\n", len(rl.Total))
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
		fmt.Fprintf(tw, "\tp50\tp90\t\n")
		row := func(name string, ds []time.Duration) {
			fmt.Fprintf(tw, "%s\t%s\t%s\t\n", name, ms1(Median(ds)), ms1(Percentile(ds, 90)))
		}
		row("total: write → new tools visible", rl.Total)
		row("server's own connect + discovery (raw lines)", rl.Server)
		row("host's share (total − server), per edit", rl.Host)
		row("  write → new instance applied beside the old (watch, quiet period, parse, apply)", rl.ToReloading)
		row("  applied → tools visible (spawn, connect, list, take over)", rl.ToVisible)
		row("server's own exit once its stdin closes (off the path: after the take-over)", rl.ServerExit)
		tw.Flush()
	}
	if l := r.Load; l != nil {
		fmt.Fprintf(w, "\n3b. Reload under load: %d callers call the entry's tool without pause while its args are edited %d times (make before break)\n\n", l.Callers, l.Edits)
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
		fmt.Fprintf(tw, "\tcalls\tfailed\tp50\tp99\t\n")
		fmt.Fprintf(tw, "without edits\t%d\t%d\t%s\t%s\t\n", len(l.Quiet), l.QuietFailed, usf(Median(l.Quiet)), usf(Percentile(l.Quiet, 99)))
		fmt.Fprintf(tw, "during the edits\t%d\t%d\t%s\t%s\t\n", len(l.During), l.Failed, usf(Median(l.During)), usf(Percentile(l.During, 99)))
		tw.Flush()
		fmt.Fprintf(w, "moments the registry lacked the tool (every version, on the host's stream): %d\n", l.Lacked)
		fmt.Fprintf(w, "p99 during the edits / without: %.2f\n", sec(Percentile(l.During, 99))/sec(Percentile(l.Quiet, 99)))
	}

	if len(r.Startup) > 0 {
		fmt.Fprintf(w, "\n4. Startup: N stdio servers → all settled (medians of %d; in-process host vs a bare mcp-go program, same process)\n\n", o.StartupReps)
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
		fmt.Fprintf(tw, "servers\tharness\tbare mcp-go\tratio\t\tharness CPU\tmcp-go CPU\t\n")
		for _, s := range r.Startup {
			b, f := Median(s.Bridge), Median(s.Floor)
			fmt.Fprintf(tw, "%d\t%s\t%s\t%.2f\t\t%s\t%s\t\n", s.N, ms1(b), ms1(f), sec(b)/sec(f), ms1(Median(s.BridgeCPU)), ms1(Median(s.FloorCPU)))
		}
		tw.Flush()
	}

	if len(r.RSS) > 0 {
		fmt.Fprintf(w, "\n5. Memory: the harness binary (`harness run`), VmRSS once settled (median of %d)\n\n", o.MemoryReps)
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
		fmt.Fprintf(tw, "servers\tRSS\tper server over 0\tin-process heap per server\tgoroutines per server\t\n")
		base := medianInt(r.RSS[0])
		for _, n := range sortedKeys(r.RSS) {
			rss := medianInt(r.RSS[n])
			per, heap, gor := "—", "—", "—"
			if n > 0 {
				per = fmt.Sprintf("%.0f KiB", float64(rss-base)/float64(n)/1024)
				heap = fmt.Sprintf("%.0f KiB", float64(r.Heap[n])/float64(n)/1024)
				gor = fmt.Sprintf("%.1f", float64(r.Gor[n])/float64(n))
			}
			fmt.Fprintf(tw, "%d\t%.1f MiB\t%s\t%s\t%s\t\n", n, float64(rss)/(1<<20), per, heap, gor)
		}
		tw.Flush()
	}
	if t := r.Tools; t.N > 0 {
		fmt.Fprintf(w, "\n   The tools registry with %d tools: %.1f MiB live heap (%d bytes a tool); register (one batch) %s;\n", t.N, float64(t.HeapBytes)/(1<<20), t.HeapBytes/int64(t.N), ms1(t.Register))
		fmt.Fprintf(w, "   List %s; Lookup %d ns; model-visible JSON (%.1f MiB) %d ns from the cache, %s after a change\n",
			usf(t.List), t.Lookup.Nanoseconds(), float64(t.ModelJSONBytes)/(1<<20), t.ModelJSON.Nanoseconds(), ms1(t.ModelJSONAfter))
	}

	if s := r.Soak; s != nil {
		fmt.Fprintf(w, "\n6. Leak soak: %d reload cycles of one entry (%d through cordis.yml writes), %d server processes, %s\n",
			s.Cycles, s.FileCycles, s.Servers, s.Duration.Round(100*time.Millisecond))
		fmt.Fprintf(w, "   harness up, entry ready: %s before, %s after\n", s.Baseline, s.After)
		fmt.Fprintf(w, "   harness closed: %s before it started, %s after\n", s.Before, s.Closed)
		fmt.Fprintf(w, "   live heap after a collection: %s at cycle %d, %s at cycle %d (%+.1f KiB)\n",
			kib(int64(s.HeapFrom)), s.HeapFromCycle, kib(int64(s.HeapTo)), s.Cycles, float64(s.HeapGrowth())/(1<<10))
		if r.SoakErr != nil {
			fmt.Fprintf(w, "   LEAK: %v\n", r.SoakErr)
		}
	}

	if a := r.Agent; a != nil && len(a.Step) > 0 {
		fmt.Fprintf(w, "\n7. The agent, %d tools in every request\n\n", a.Tools)
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
		fmt.Fprintf(tw, "\tp50\tp99\t\n")
		fmt.Fprintf(tw, "harness's own time per step (model and tools answer at once; %d turns of 2 steps)\t%s\t%s\t\n", len(a.Step), usf(Median(a.Step)), usf(Percentile(a.Step, 99)))
		if len(a.TTFBHarness) > 0 {
			fmt.Fprintf(tw, "time to first text byte: fake server, bare HTTP client (%d)\t%s\t%s\t\n", len(a.TTFBServer), usf(Median(a.TTFBServer)), usf(Percentile(a.TTFBServer, 99)))
			fmt.Fprintf(tw, "time to first text byte: through the agent (%d)\t%s\t%s\t\n", len(a.TTFBHarness), usf(Median(a.TTFBHarness)), usf(Percentile(a.TTFBHarness, 99)))
		}
		tw.Flush()
		fmt.Fprintf(w, "   %.0f allocations, %.1f KiB allocated per step\n", a.StepAllocs, a.StepBytes/1024)
	}
	if a := r.Agent; a != nil && a.Search != nil {
		s := a.Search
		fmt.Fprintf(w, "\n7b. Tool search: one task (find the weather tool among %d, call it, answer), prompt per step estimated as request bytes / 4\n\n", s.Tools)
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
		fmt.Fprintf(tw, "\tsteps\tprompt tokens per step\tmean\t\n")
		fmt.Fprintf(tw, "tool search (search_tools, then what it found)\t%d\t%s\t%.0f\t\n", len(s.SearchTokens), joinInts(s.SearchTokens), mean(s.SearchTokens))
		fmt.Fprintf(tw, "every schema at every step (toolSearch: off)\t%d\t%s\t%.0f\t\n", len(s.FullTokens), joinInts(s.FullTokens), mean(s.FullTokens))
		tw.Flush()
		found := "yes"
		if !s.Found {
			found = "NO"
		}
		fmt.Fprintf(w, "   search / every schema: %.3f; the model found the tool through search_tools and called it: %s\n", s.Ratio(), found)
		if len(s.Step) > 0 {
			fmt.Fprintf(w, "   harness's own time per step in search mode, %d tools (%d turns of 3 steps: search, call, answer): p50 %s, p99 %s\n",
				s.StepTools, len(s.Step), usf(Median(s.Step)), usf(Percentile(s.Step, 99)))
		}
	}

	if len(r.Gateway) > 0 {
		c := o.Gateway
		fmt.Fprintf(w, "\n8. Gateway: the TypeScript SDK client → harness serve → `mcpfixture --only echo` (stdio), next to the same client straight to the fixture\n")
		fmt.Fprintf(w, "   %d rounds, interleaved; per client and round %d sequential calls and %d callers × %d calls\n\n", c.Rounds, c.Seq, c.Callers, c.ParN)
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
		fmt.Fprintf(tw, "client\tseq p50\tseq p99\tadded at p50\tp50 / direct\t\t%d× p50\t%d× calls/s\tcalls/s / direct\t\n", c.Callers, c.Callers)
		shown := map[string]bool{}
		for _, p := range gatewayRows {
			d, g := gatewayCall(r, p[0]), gatewayCall(r, p[1])
			for _, cr := range []*CallResult{d, g} {
				if cr == nil || shown[cr.Name] {
					continue
				}
				shown[cr.Name] = true
				s, par := cr.Seq.Summarize(), cr.Par.Summarize()
				added, ratio, tput := "—", "—", "—"
				if cr == g && d != nil {
					a, _ := r.added(p[0], p[1])
					ds, dp := d.Seq.Summarize(), d.Par.Summarize()
					added = usf(a)
					ratio = fmt.Sprintf("%.2f", us(s.Median)/us(ds.Median))
					tput = fmt.Sprintf("%.2f", par.Throughput/dp.Throughput)
				}
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t\t%s\t%.0f\t%s\t\n", cr.Name, usf(s.Median), usf(s.P99), added, ratio, usf(par.Median), par.Throughput, tput)
			}
		}
		tw.Flush()
		r.writeJudge(w)
	}

	if c := r.Cold; c != nil {
		fmt.Fprintf(w, "\n9. Cold start: compiling from nothing (2 cores, both builds from a cache holding only the standard library, built in %.1f s)\n\n", sec(c.StdOnly))
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
		fmt.Fprintf(tw, "go build ./cmd/harness\t%.1f s\t\n", sec(c.Harness))
		fmt.Fprintf(tw, "go build of mcp-go's client and server packages\t%.1f s\t\n", sec(c.MCPGo))
		fmt.Fprintf(tw, "ratio\t%.2f\t\n", c.Ratio())
		fmt.Fprintf(tw, "fresh clone, empty build and module caches: go run ./cmd/harness, /tools → the demo's tools listed\t%.1f s\t\n", sec(c.FirstRun))
		fmt.Fprintf(tw, "  its CPU time (compiles included) / %d cores: the wall time on idle cores at best\t%.1f s\t\n", r.Machine.Cores, sec(c.FirstRunCPU)/float64(max(1, r.Machine.Cores)))
		tw.Flush()
		fmt.Fprintf(w, "   modules: %s\n", c.Modules)
	}

	fmt.Fprintf(w, "\nTargets\n\n")
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "target\tmeasured\ttarget\tmet\n")
	for _, t := range r.Targets() {
		met := "yes"
		if !t.Met {
			met = "NO"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", t.Name, t.Measured, t.Limit, met)
	}
	tw.Flush()
}

func label(name string) string {
	switch name {
	case NamePipe:
		return "raw pipe round trip (limit)"
	case NameRaw:
		return "raw JSON-RPC lines (S)"
	case NameMCPGo:
		return "bare mcp-go client"
	case NameBridge:
		return "bridge: tools.Execute → mcp-client"
	case NameTS:
		return "TypeScript SDK client"
	}
	return name
}

func us(d time.Duration) float64  { return float64(d) / float64(time.Microsecond) }
func sec(d time.Duration) float64 { return d.Seconds() }
func usf(d time.Duration) string  { return fmt.Sprintf("%.1f µs", us(d)) }
func ms1(d time.Duration) string {
	return fmt.Sprintf("%.1f ms", float64(d)/float64(time.Millisecond))
}

func medianInt(v []int64) int64 {
	if len(v) == 0 {
		return 0
	}
	s := slices.Clone(v)
	slices.Sort(s)
	return s[(len(s)-1)/2]
}

func sortedKeys[V any](m map[int]V) []int {
	keys := make([]int, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

func joinInts(v []int) string {
	parts := make([]string, len(v))
	for i, x := range v {
		parts[i] = fmt.Sprint(x)
	}
	return strings.Join(parts, ", ")
}

// writeJudge prints, for the stdio targets' judge (the relay), the two
// rows measured to read it by: the relay against itself, which is what one
// run can tell apart, and jsonrelay, a process that parses and maps ids,
// which is how near a gateway reading every message can come.
func (r *Report) writeJudge(w io.Writer) {
	rl := gatewayCall(r, NameRelayStdio)
	if rl == nil {
		return
	}
	rs, rp := rl.Seq.Summarize(), rl.Par.Summarize()
	first := true
	for _, row := range []struct{ name, what string }{
		{NameRelayAgain, "the relay again (the same program: what this run can tell apart)"},
		{NameJSONRelay, "jsonrelay (scans each message and maps its id: the floor of a gateway that parses)"},
	} {
		c := gatewayCall(r, row.name)
		if c == nil {
			continue
		}
		if first {
			fmt.Fprintf(w, "\n   the judge of the stdio targets, relay/stdio, read by two more rows:\n")
			first = false
		}
		s, p := c.Seq.Summarize(), c.Par.Summarize()
		fmt.Fprintf(w, "   %s / relay/stdio: p50 %.2f, %d-caller calls/s %.2f\n", row.what, us(s.Median)/us(rs.Median), r.Options.Gateway.Callers, p.Throughput/rp.Throughput)
	}
	r.writeRounds(w, rl)
}

// writeRounds prints, for the rows measured against the relay, their
// ratios round by round: the median over rounds and its standard error,
// which says how far apart two runs of the same programs may land (the
// relay against itself shows it), and so how far one run's figure can be
// read.
func (r *Report) writeRounds(w io.Writer, rl *CallResult) {
	first := true
	for _, name := range []string{NameGatewayStdio, NameRelayAgain, NameJSONRelay} {
		c := gatewayCall(r, name)
		if c == nil {
			continue
		}
		p50, p50Err, okS := roundRatio(micros(c.RoundMedians), micros(rl.RoundMedians))
		thr, thrErr, okP := roundRatio(c.RoundThroughputs, rl.RoundThroughputs)
		if !okS || !okP {
			continue
		}
		if first {
			fmt.Fprintf(w, "\n   round by round (%d rounds): the median of each round's ratio to relay/stdio ± its standard error\n", len(rl.RoundMedians))
			first = false
		}
		fmt.Fprintf(w, "   %s: p50 %.2f ± %.2f, %d-caller calls/s %.2f ± %.2f\n", name, p50, p50Err, r.Options.Gateway.Callers, thr, thrErr)
	}
}

// roundRatio is the median over rounds of a[i]/b[i], and the standard
// error of the ratios' mean (their standard deviation over √n): the
// spread one run's figure carries. ok is false unless a and b hold the
// same two or more rounds, each of b's above zero.
func roundRatio(a, b []float64) (median, stdErr float64, ok bool) {
	if len(a) != len(b) || len(a) < 2 {
		return 0, 0, false
	}
	ratios := make([]float64, len(a))
	var mean float64
	for i := range a {
		if b[i] <= 0 {
			return 0, 0, false
		}
		ratios[i] = a[i] / b[i]
		mean += ratios[i]
	}
	n := float64(len(ratios))
	mean /= n
	var ss float64
	for _, x := range ratios {
		ss += (x - mean) * (x - mean)
	}
	slices.Sort(ratios)
	median = ratios[len(ratios)/2]
	if len(ratios)%2 == 0 {
		median = (ratios[len(ratios)/2-1] + median) / 2
	}
	return median, math.Sqrt(ss/(n-1)) / math.Sqrt(n), true
}

// micros are ds in microseconds.
func micros(ds []time.Duration) []float64 {
	out := make([]float64, len(ds))
	for i, d := range ds {
		out[i] = us(d)
	}
	return out
}
