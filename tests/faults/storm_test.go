//go:build unix

package faults

// Row 7: a storm of notifications/tools/list_changed while tools are being
// called. No call fails — neither to the storming server (its unchanged
// tools never leave the registry, a changed listing is swapped in one
// step) nor to another server; the listings the storm costs are bounded
// (requests merge); the last change is registered.
//
// Elsewhere: TestStdioStormCostsAtMostTwoListings (plugins/mcpclient) counts
// the listings of one storm exactly; TestStdioUnchangedResyncKeepsModelJSON
// the byte-stable model list.

import (
	"fmt"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/harness-go/harness/internal/testkit/fixture"
)

func TestListChangedStormDuringCalls(t *testing.T) {
	t.Parallel()
	stormTools := []string{"echo", "storm", "set_tools", "listings"}
	for _, transport := range []string{"stdio", "streamable-http"} {
		t.Run(transport, func(t *testing.T) {
			t.Parallel()
			var url string
			if transport != "stdio" {
				url = httpFixture(t, fixture.Options{Only: stormTools, ToolsCount: 200, PageSize: 20})
			}
			w := newWorld(t)
			// 200 more tools, 20 a page: a listing takes eleven round trips,
			// so listings and swaps overlap the calls.
			st := fixtureEnt("st", "st", "--only", "echo,storm,set_tools,listings", "--tools-count", "200", "--page-size", "20", "--pidfile", w.pidFile("st"))
			if url != "" {
				st = httpEnt("st", "st", url).with("toolCallTimeoutMs", 60000)
			}
			w.mustLoad(cordis(st, fixtureEnt("other", "other", "--only", "echo", "--pidfile", w.pidFile("other"))))
			w.Settle(30 * time.Second)

			var calls, failures atomic.Int64
			var first sync.Once
			var failure string
			stop := make(chan struct{})
			var callers sync.WaitGroup
			for g := range 4 {
				callers.Add(1)
				go func() {
					defer callers.Done()
					tool := []string{"mcp__st__echo", "mcp__other__echo"}[g%2]
					for i := 0; ; i++ {
						select {
						case <-stop:
							return
						default:
						}
						msg := fmt.Sprintf("g%d-%d", g, i)
						res := w.Call(tool, `{"message":"`+msg+`"}`)
						calls.Add(1)
						if res.IsError || res.Text != "echo: "+msg {
							failures.Add(1)
							first.Do(func() { failure = fmt.Sprintf("%s: %+v", tool, clipResult(res)) })
						}
					}
				}()
			}

			const rounds, count = 10, 300
			start := time.Now()
			for k := range rounds {
				w.wantCall("mcp__st__storm", fmt.Sprintf(`{"count":%d}`, count), fmt.Sprintf("sent %d", count))
				change := fmt.Sprintf(`{"add":["extra_%d"],"remove":["extra_%d"]}`, k, k-1)
				if res := w.Call("mcp__st__set_tools", change); res.IsError {
					t.Fatalf("set_tools: %+v", res)
				}
			}
			last := fmt.Sprintf("mcp__st__extra_%d", rounds-1)
			w.WaitTools("the last change", 30*time.Second, func(names []string) bool {
				return slices.Contains(names, last) && !slices.Contains(names, fmt.Sprintf("mcp__st__extra_%d", rounds-2))
			})
			took := time.Since(start)
			close(stop)
			callers.Wait()

			if n := failures.Load(); n > 0 {
				t.Errorf("%d of %d calls failed during the storms; the first: %s", n, calls.Load(), failure)
			}
			w.wantCall(last, `{}`, fmt.Sprintf("extra_%d ok", rounds-1))
			res := w.Call("mcp__st__listings", `{}`)
			pages, err := strconv.Atoi(res.Text)
			// The first listing; per storm at most two (one running, one
			// pending); per set_tools at most one more. A listing is at most
			// twelve pages.
			if bound := (1 + rounds*(2+1)) * 12; err != nil || pages > bound {
				t.Errorf("%s tools/list pages for %d storms of %d and %d changes, bound %d", res.Text, rounds, count, rounds, bound)
			}
			t.Logf("%d calls, %s tools/list pages, %d notifications in %s", calls.Load(), res.Text, rounds*count, took.Round(time.Millisecond))
		})
	}
}
