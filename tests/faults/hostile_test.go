//go:build unix

package faults

// Rows 6 and 10: configuration files built to hurt — an alias bomb, deep
// nesting, binary junk, a 1 MiB line, a !!js expression nested 100 000
// deep — are refused (or accepted) quickly, in bounded memory, and no panic
// reaches the user. The parser's own fuzz target, FuzzParseFile (host),
// explores the rest.

import (
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

type hostileFile struct {
	name    string
	content string
	ok      bool // valid: validate says ok
}

func hostileFiles() []hostileFile {
	junk := make([]byte, 1<<20)
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range junk {
		junk[i] = byte(rng.UintN(256))
	}
	return []hostileFile{
		{"anchors and aliases used sensibly", "- &e {id: a, name: echo, config: {prefix: a_}}\n- {id: b, name: echo, config: &c {prefix: b_}}\n- {id: c, name: echo, config: {prefix: c_, timezone: UTC}}\n", true},
		{"flow sequences nested 100 000 deep", "- id: a\n  name: echo\n  config:\n    prefix: " + strings.Repeat("[", 100000) + strings.Repeat("]", 100000) + "\n", false},
		{"block mappings nested 1 000 deep", "- id: a\n  name: echo\n  config:\n" + nestedBlock(1000), false},
		{"1 MiB of random bytes", string(junk), false},
		{"a 1 MiB id", "- id: " + strings.Repeat("i", 1<<20) + "\n  name: echo\n", false},
		{"!!js nested 100 000 deep", "- id: a\n  name: echo\n  config:\n    prefix: !!js '" + strings.Repeat("(", 100000) + "process.env.X" + strings.Repeat(")", 100000) + "'\n", false},
		{"a byte-order mark and CRLF", "\ufeff- id: a\r\n  name: echo\r\n", true},
		{"invalid UTF-8 in a key", "- id: a\n  name: echo\n  config:\n    pre\xff\xfefix: x\n", false},
		{"NUL bytes", "- id: a\x00\n  name: echo\n", false},
		{"tabs for indentation", "- id: a\n\tname: echo\n", false},
		{"20 000 entries", manyEntries(20000), true},
		// Last: the peak memory of a running harness never goes down.
		// 9^6 = 531 441 values once expanded, from 500 bytes.
		{"an alias bomb", aliasBomb(6), false},
	}
}

// `harness validate` refuses (or accepts) each file quickly, in its own
// words, without a panic.
func TestHostileConfigFiles(t *testing.T) {
	t.Parallel()
	for _, tc := range hostileFiles() {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			if err := os.WriteFile(filepath.Join(dir, "cordis.yml"), []byte(tc.content), 0o644); err != nil {
				t.Fatal(err)
			}
			r := oneShotWith(t, plainHarnessBin, dir, []string{"X=x"}, "validate")
			switch {
			case tc.ok && (r.code != 0 || r.stdout != "ok\n"):
				t.Errorf("want ok\n%s", r)
			case !tc.ok && (r.code != 2 || r.stdout != "" || !strings.Contains(r.stderr, "cordis.yml")):
				t.Errorf("want refused (exit code 2, the problem on stderr)\n%s", r)
			}
			// Milliseconds of CPU for a bounded parser (20 000 entries take
			// under a second), minutes for an expansion. The bound is on
			// the process's CPU time: on a loaded machine its wall time
			// was seen to pass 5 s while its CPU time stayed under one.
			// The wall-clock bound only catches a validate that waits.
			const cpuBound, wallBound = 5 * time.Second, 60 * time.Second
			if r.cpu > cpuBound || r.took > wallBound {
				t.Errorf("validate took %s of CPU, %s in all (bounds %s, %s)", r.cpu.Round(time.Millisecond), r.took.Round(time.Millisecond), cpuBound, wallBound)
			}
			if len(r.stderr) > 64<<10 {
				t.Errorf("validate wrote %d bytes on stderr", len(r.stderr))
			}
		})
	}
}

// A running harness refuses each invalid file as a live edit quickly and in
// bounded memory (the peak resident size of its process, built without the
// race detector), and keeps running what it ran.
func TestHostileEditsToARunningHarness(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	good := "- {id: a, name: echo, config: {prefix: a_}}\n"
	writeConfig(t, dir, good)
	s := start(t, plainHarnessBin, dir, []string{"X=x"})
	if got := s.do("/tools"); len(got) != 2 {
		t.Fatalf("/tools = %q\n%s", got, s.dump())
	}
	const timeBound, memBound = 2 * time.Second, 100 << 20
	for _, tc := range hostileFiles() {
		if tc.ok {
			continue
		}
		from := s.err.Len()
		at := time.Now()
		writeConfig(t, dir, tc.content)
		s.waitErr(from, "refusing "+tc.name, prefix("harness: reload refused"))
		if took := time.Since(at); took > timeBound+500*time.Millisecond { // + the watcher's debounce
			t.Errorf("%s: refused after %s (bound %s)", tc.name, took.Round(time.Millisecond), timeBound)
		}
		if peak := peakRSS(t, s.pid()); peak > memBound {
			t.Errorf("%s: the harness peaked at %s resident (bound %s)", tc.name, mib(peak), mib(memBound))
			break // the peak stays: later files would be blamed too
		}
	}
	if got := s.do("/tools"); len(got) != 2 || !strings.HasPrefix(got[0], "a_clock") {
		t.Errorf("/tools after the refused edits: %q", got)
	}
	s.send("/quit\n")
	if code := s.waitExit(); code != 0 {
		t.Errorf("/quit: exit code %d", code)
	}
}

func nestedBlock(depth int) string {
	var b strings.Builder
	for i := range depth {
		b.WriteString(strings.Repeat(" ", 4+2*i))
		b.WriteString("k:\n")
	}
	return b.String()
}

func manyEntries(n int) string {
	var b strings.Builder
	for i := range n {
		id := strconv.Itoa(i)
		b.WriteString("- {id: e" + id + ", name: echo, config: {prefix: p" + id + "_}}\n")
	}
	return b.String()
}
