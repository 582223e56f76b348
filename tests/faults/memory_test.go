//go:build unix

package faults

// Row 4, the memory bound: a server that sends messages far larger than
// the message limit cannot make the harness hold them. Measured on the
// harness built without the race detector, as the peak resident size
// (VmHWM) of its process, after 128 MiB messages.

import (
	"fmt"
	"net/http/httptest"
	"os"
	"strconv"
	"strings"
	"testing"
)

// hugeMessage is the size of the messages sent; memoryBound is the peak
// resident size the harness may reach. One message in flight is bounded by
// mcpclient.MaxMessageBytes (32 MiB); reading one that crosses the limit
// holds it about twice, and the Go heap may grow to twice what is live
// before collecting: some 140 MB in all, measured.
const (
	hugeMessage = 128 << 20
	memoryBound = 256 << 20
)

// peakRSS returns the peak resident set size of pid, in bytes.
func peakRSS(t *testing.T, pid int) int {
	t.Helper()
	status, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(status), "\n") {
		if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kb, err := strconv.Atoi(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")))
			if err != nil {
				t.Fatalf("VmHWM %q: %v", v, err)
			}
			return kb << 10
		}
	}
	t.Fatalf("no VmHWM in /proc/%d/status", pid)
	return 0
}

func mib(n int) string { return fmt.Sprintf("%.0f MiB", float64(n)/(1<<20)) }

func TestMemoryBounded(t *testing.T) {
	t.Parallel()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	call := fmt.Sprintf(`{"bytes":%d}`, hugeMessage)

	t.Run("stdio", func(t *testing.T) {
		t.Parallel()
		dir := t.TempDir()
		writeConfig(t, dir, cordis(ent{ID: "fs", Name: "mcp-client", Config: map[string]any{
			"serverName": "fs", "transport": "stdio", "command": self,
			"env": map[string]string{fakeServerEnv: "stdio", fakeHugeLineEnv: strconv.Itoa(hugeMessage)},
		}}))
		s := start(t, plainHarnessBin, dir, nil)
		if got := s.do("/tools"); len(got) != 3 {
			t.Fatalf("/tools = %q\n%s", got, s.dump())
		}
		s.waitErr(0, "about the huge line discarded", has("server sent a message over the size limit; discarded"))
		got := s.do("/call mcp__fs__big " + call)
		if len(got) != 1 || got[0] != "Error: the server's response exceeded the 32 MiB message limit" {
			t.Errorf("a %s result printed %.300q", mib(hugeMessage), got)
		}
		if peak := peakRSS(t, s.pid()); peak > memoryBound {
			t.Errorf("after a %s line and a %s result over stdio, the harness peaked at %s resident (bound %s)", mib(hugeMessage), mib(hugeMessage), mib(peak), mib(memoryBound))
		} else {
			t.Logf("peak resident size %s", mib(peak))
		}
		if got := s.do("/call mcp__fs__echo {}"); len(got) != 1 || got[0] != "ok" {
			t.Errorf("after the huge messages, a call printed %q", got)
		}
		s.send("/quit\n")
		s.waitExit()
	})

	t.Run("streamable HTTP", func(t *testing.T) {
		t.Parallel()
		srv := httptest.NewServer(fakeHTTPServer())
		t.Cleanup(srv.Close)
		dir := t.TempDir()
		writeConfig(t, dir, cordis(httpEnt("fh", "fh", srv.URL+"/mcp")))
		s := start(t, plainHarnessBin, dir, nil)
		if got := s.do("/tools"); len(got) != 3 {
			t.Fatalf("/tools = %q\n%s", got, s.dump())
		}
		for _, tool := range []string{"big", "big500"} {
			got := s.do("/call mcp__fh__" + tool + " " + call)
			if len(got) != 1 || !strings.HasPrefix(got[0], "Error: ") || len(got[0]) > 4096 {
				t.Errorf("%s of %s: want a short error, got %d line(s): %.300q", tool, mib(hugeMessage), len(got), got)
			}
			if peak := peakRSS(t, s.pid()); peak > memoryBound {
				t.Errorf("after %s of %s over HTTP, the harness peaked at %s resident (bound %s)", tool, mib(hugeMessage), mib(peak), mib(memoryBound))
			} else {
				t.Logf("%s: peak resident size %s", tool, mib(peak))
			}
		}
		s.send("/quit\n")
		s.waitExit()
	})
}
