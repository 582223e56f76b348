//go:build unix

package faults

// Row 4: what a server writes that it should not — lines that are not
// JSON-RPC, a 10 MiB line, a line over the message limit, huge results,
// tool names full of control characters, 10 000 tools, a 1 MiB schema, a
// schema over the limit — is handled with a clear error or a mapped result,
// and the connection stays usable.
//
// Elsewhere: TestStdioResults (plugins/mcpclient) maps invalid UTF-8, ANSI
// text and a 1 MB result; TestStdioConnOversizedMessage and TestReadLine the
// line limit; TestStdioConnStderrTail the stderr tail;
// TestServerTextCannotDriveTerminal (tests/e2e) control characters through
// the binary; TestMemoryBounded (this package) the memory of the process.

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/harness-go/harness/host"
	"github.com/harness-go/harness/internal/testkit/fixture"
	"github.com/harness-go/harness/plugins/mcpclient"
)

// overLimit is a message size above mcpclient.MaxMessageBytes.
const overLimit = mcpclient.MaxMessageBytes + 8<<20

func TestStdoutNoise(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		args []string
		log  string // a record the harness must log about it
	}{
		{"three garbage lines before every response", []string{"--garbage", "3"}, "server wrote a line that is not JSON-RPC to stdout; ignored"},
		{"a 10 MiB line that is not JSON", []string{"--huge-line", strconv.Itoa(10 << 20)}, "server wrote a line that is not JSON-RPC to stdout; ignored"},
		{"a line over the message limit", []string{"--huge-line", strconv.Itoa(overLimit)}, "server sent a message over the size limit; discarded"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			w := newWorld(t)
			w.mustLoad(cordis(fixtureEnt("fx", "fx", append([]string{"--only", "echo", "--pidfile", w.pidFile("fx")}, tc.args...)...)))
			w.Settle(60 * time.Second)
			if e := w.Entry("fx"); e.State != host.Ready {
				t.Fatalf("entry %s: %s", e.State, e.Error)
			}
			for i := range 5 {
				msg := fmt.Sprintf("call %d", i)
				w.wantCall("mcp__fx__echo", fmt.Sprintf(`{"message":%q}`, msg), "echo: "+msg)
			}
			logs := w.Log.String()
			if !strings.Contains(logs, tc.log) {
				t.Errorf("no log record %q", tc.log)
			}
			// What the log keeps of such a line is bounded.
			for _, line := range strings.Split(logs, "\n") {
				if len(line) > 4096 {
					t.Errorf("a log line of %d bytes: %.200s…", len(line), line)
				}
			}
		})
	}
}

func TestHugeResults(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	w.mustLoad(cordis(fixtureEnt("fx", "fx", "--only", "echo,big", "--pidfile", w.pidFile("fx"))))
	w.Settle(30 * time.Second)

	// Large but under the limit: passed through, whole.
	if res := w.Call("mcp__fx__big", `{"bytes":1048576}`); res.IsError || res.Text != fixture.BigText(1<<20) {
		t.Fatalf("a 1 MiB result: isError %v, %d bytes", res.IsError, len(res.Text))
	}
	// Over the limit: a clear error, without waiting for the call timeout
	// (60 s here), and the connection stays in step.
	start := time.Now()
	res := w.Call("mcp__fx__big", fmt.Sprintf(`{"bytes":%d}`, overLimit))
	took := time.Since(start)
	if !res.IsError || !strings.Contains(res.Text, "exceeded the 32 MiB message limit") {
		t.Errorf("a result over the limit: %+v", clipResult(res))
	}
	if took > 30*time.Second {
		t.Errorf("the oversized result took %s to fail", took)
	}
	if e := w.Entry("fx"); e.State != host.Ready {
		t.Errorf("after an oversized result the entry is %s: %s", e.State, e.Error)
	}
	w.wantCall("mcp__fx__echo", `{"message":"in step"}`, "echo: in step")
	w.wantCall("mcp__fx__big", `{"bytes":10}`, "0123456789")
}

var contractName = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)

// Tool names with control characters, invalid UTF-8 or sheer length become
// valid public names; calls reach the raw tool; status prints them inert.
func TestHostileToolNames(t *testing.T) {
	t.Parallel()
	// The fixture decodes these escapes itself (--raw-name).
	callable := []string{
		`nul\0name`,
		`line\nbreak`,
		`tab\tname`,
		`esc\e[2Jclear`,
		`osc\e]0;title\a`,
		`bidi\u202Eoverride`,
		`del\x7fname`,
		strings.Repeat("n", 1000),
		`emoji😀name`,
	}
	// JSON cannot carry an invalid byte: the server's encoder turns it into
	// U+FFFD, so the name the client sees is not one the server knows.
	listedOnly := []string{`bad\xffutf8`}
	w := newWorld(t)
	args := []string{"--only", "echo", "--pidfile", w.pidFile("fx")}
	for _, n := range append(append([]string{}, callable...), listedOnly...) {
		args = append(args, "--raw-name", n)
	}
	w.mustLoad(cordis(fixtureEnt("fx", "fx", args...)))
	w.Settle(30 * time.Second)
	if e := w.Entry("fx"); e.State != host.Ready {
		t.Fatalf("entry %s: %s", e.State, e.Error)
	}
	names := w.Names("mcp__fx__")
	if len(names) != 1+len(callable)+len(listedOnly) {
		t.Fatalf("registered %d tools, want %d: %q", len(names), 1+len(callable)+len(listedOnly), names)
	}
	for _, n := range names {
		if !contractName.MatchString(n) {
			t.Errorf("public name %q breaks the function-name contract", n)
		}
	}
	for _, raw := range callable {
		public := mcpclient.PublicName("fx", fixture.Unescape(raw))
		if !contains(names, public) {
			t.Errorf("raw name %q: %q is not registered", raw, public)
			continue
		}
		w.wantCall(public, `{}`, "raw ok")
	}
	lines := strings.Join(w.status("fx").StatusLines(), "\n")
	for _, c := range []string{"\x00", "\x1b", "\x07", "\x7f", "\u202e", "\xff", "\t"} {
		if strings.Contains(lines, c) {
			t.Errorf("status lines hold a raw %q:\n%s", c, lines)
		}
	}
}

func TestManyToolsAndBigSchemas(t *testing.T) {
	t.Parallel()
	t.Run("10 000 tools", func(t *testing.T) {
		t.Parallel()
		w := newWorld(t)
		start := time.Now()
		w.mustLoad(cordis(fixtureEnt("fx", "fx", "--only", "echo", "--tools-count", "10000", "--pidfile", w.pidFile("fx"))))
		w.Settle(60 * time.Second)
		t.Logf("10 000 tools ready after %s", time.Since(start).Round(time.Millisecond))
		if e := w.Entry("fx"); e.State != host.Ready {
			t.Fatalf("entry %s: %s", e.State, e.Error)
		}
		if n := len(w.Names("mcp__fx__")); n != 10001 {
			t.Fatalf("%d tools registered, want 10001", n)
		}
		if st := w.status("fx"); st.ToolCount != 10001 {
			t.Errorf("status counts %d tools", st.ToolCount)
		}
		var model []json.RawMessage
		if err := json.Unmarshal(w.Tools.ModelJSON(), &model); err != nil || len(model) != 10001 {
			t.Errorf("ModelJSON: %d tools, %v", len(model), err)
		}
		w.wantCall("mcp__fx__gen_09999", `{}`, "gen_09999 ok")
		w.wantCall("mcp__fx__gen_00000", `{}`, "gen_00000 ok")
	})
	t.Run("a 1 MiB schema", func(t *testing.T) {
		t.Parallel()
		w := newWorld(t)
		w.mustLoad(cordis(fixtureEnt("fx", "fx", "--only", "echo", "--schema-bytes", strconv.Itoa(1<<20), "--pidfile", w.pidFile("fx"))))
		w.Settle(30 * time.Second)
		tool, ok := w.Tools.Lookup("mcp__fx__big_schema")
		if !ok || len(tool.Parameters) != 1<<20 || !json.Valid(tool.Parameters) {
			t.Fatalf("big_schema: registered %v, %d bytes of schema", ok, len(tool.Parameters))
		}
		if !bytes.Contains(w.Tools.ModelJSON(), tool.Parameters) {
			t.Errorf("the model's tool list does not hold the schema verbatim")
		}
		w.wantCall("mcp__fx__big_schema", `{}`, "big_schema ok")
	})
	t.Run("a schema over the message limit", func(t *testing.T) {
		t.Parallel()
		w := newWorld(t)
		w.mustLoad(cordis(
			fixtureEnt("ok", "ok", "--only", "echo", "--pidfile", w.pidFile("ok")),
			fixtureEnt("fx", "fx", "--only", "echo", "--schema-bytes", strconv.Itoa(overLimit), "--pidfile", w.pidFile("fx")),
		))
		w.Settle(60 * time.Second)
		e := w.Entry("fx")
		if e.State != host.Failed || !strings.Contains(e.Error, "tools/list") || !strings.Contains(e.Error, "exceeded the 32 MiB message limit") {
			t.Errorf("entry %s: %q; want failed: tools/list … exceeded the 32 MiB message limit", e.State, e.Error)
		}
		if names := w.Names("mcp__fx__"); len(names) != 0 {
			t.Errorf("tools registered: %q", names)
		}
		w.wantCall("mcp__ok__echo", `{"message":"fine"}`, "echo: fine")
	})
}

// A server's stderr is kept as a tail of 40 lines of at most 2 KiB each,
// and printed escaped: a flood, a 100 KB line, invalid UTF-8 and control
// characters cannot grow the harness or drive the terminal.
func TestStderrFlood(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		args []string
		last string // the last line the server writes
	}{
		{"2000 lines", []string{"--stderr-lines", "2000"}, "stderr line 2000/2000"},
		{"a 100 KB line", []string{"--stderr", strings.Repeat("y", 100_000) + `\n`}, ""},
		{"invalid UTF-8 and escapes", []string{"--stderr", `bad \xff\xfe bytes \e[31mred\e[0m \e]0;title\a\n`}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			w := newWorld(t)
			w.mustLoad(cordis(fixtureEnt("fx", "fx", append([]string{"--only", "echo", "--pidfile", w.pidFile("fx")}, tc.args...)...)))
			w.Settle(30 * time.Second)
			if tc.last != "" {
				w.waitLog(30*time.Second, "server stderr", "line="+tc.last)
			} else {
				w.waitLog(30*time.Second, "server stderr", "entry=fx")
			}
			st := w.status("fx")
			if len(st.Stderr) > 40 {
				t.Errorf("the stderr tail holds %d lines", len(st.Stderr))
			}
			for _, l := range st.Stderr {
				if len(l) > 2048+len("…") {
					t.Errorf("a stderr line of %d bytes is kept", len(l))
				}
			}
			if tc.last != "" && (len(st.Stderr) != 40 || st.Stderr[39] != tc.last) {
				t.Errorf("the tail is not the last 40 lines: %d lines, ending %q", len(st.Stderr), st.Stderr[len(st.Stderr)-1])
			}
			lines := strings.Join(st.StatusLines(), "\n")
			for _, c := range []string{"\x1b", "\x07", "\xff"} {
				if strings.Contains(lines, c) {
					t.Errorf("status lines hold a raw %q", c)
				}
			}
			if _, tail, _ := strings.Cut(lines, "stderr (last lines):"); len(tail) > 40*(2048+16) {
				t.Errorf("status shows %d bytes of stderr", len(tail))
			}
			w.wantCall("mcp__fx__echo", `{"message":"x"}`, "echo: x")
		})
	}
}
