// Command callload drives stdio MCP servers with concurrent tools/call
// requests and reports, for each, the calls per second and the CPU the
// server process itself spent per call (its utime and stime from /proc,
// children excluded): how the gateway's own cost is compared between
// builds, next to a relay (docs/benchmarks.md). It also reports the CPU per
// call of the whole tree (the process and the servers it runs) and of the
// client: with two cores, the throughput follows their sum, and a middle
// may change what the server behind it spends. The commands run in turn,
// round after round, so that a noisy machine weighs on each alike:
//
//	go run ./bench/cmd/callload -alternate 8 \
//	  -cmd 'relay mcpfixture --only echo' -tool echo \
//	  -cmd 'harness serve -c cordis.yml' -tool mcp__bench__echo
//
// Each -cmd takes the -tool that follows it (or the last one given). The
// client is one process with one reader and a goroutine per caller, each
// with one call in flight; requests are written one per write, as a client
// library writes them. Linux only (/proc).

//go:build linux

package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// target is one command under load, and the tool it calls.
type target struct {
	args      []string
	tool      string
	arguments string // a JSON object
}

// round is what one round of calls measured.
type round struct {
	callsPerSec float64
	cpuPerCall  time.Duration // the process's own
	treePerCall time.Duration // the process's and its descendants'
	selfPerCall time.Duration // the client's (this process)
}

func main() {
	var targets []target
	tool := "echo"
	flag.Func("cmd", "a stdio MCP server to drive: its command line, split at spaces (repeat for more)", func(s string) error {
		f := strings.Fields(s)
		if len(f) == 0 {
			return errors.New("an empty command")
		}
		targets = append(targets, target{args: f, tool: tool})
		return nil
	})
	flag.Func("tool", "the tool the -cmd before it calls, with -arguments (default echo)", func(s string) error {
		tool = s
		if len(targets) > 0 {
			targets[len(targets)-1].tool = s
		}
		return nil
	})
	callers := flag.Int("callers", 16, "callers, each with one call in flight")
	calls := flag.Int("calls", 40000, "calls per round")
	rounds := flag.Int("rounds", 2, "rounds per run of a command")
	alternate := flag.Int("alternate", 4, "runs of every command, in turn")
	arguments := flag.String("arguments", `{"text":"hello"}`, "the arguments of every call, a JSON object (for the fixture's big, say {\"bytes\":65536})")
	flag.Parse()
	if len(targets) == 0 || *callers < 1 || *calls < *callers || !jsonObject(*arguments) {
		flag.Usage()
		os.Exit(2)
	}
	for i := range targets {
		targets[i].arguments = *arguments
	}
	results := make([][]round, len(targets))
	for range *alternate {
		for i, t := range targets {
			got, err := run(t, *callers, *calls, *rounds)
			if err != nil {
				fmt.Fprintf(os.Stderr, "callload: %s: %v\n", strings.Join(t.args, " "), err)
				os.Exit(1)
			}
			for _, r := range got {
				fmt.Fprintf(os.Stderr, "%-40s %8.0f calls/s %6.1f µs/call (tree %.1f, client %.1f)\n", strings.Join(t.args, " "), r.callsPerSec,
					float64(r.cpuPerCall)/1e3, float64(r.treePerCall)/1e3, float64(r.selfPerCall)/1e3)
			}
			results[i] = append(results[i], got...)
		}
	}
	fmt.Printf("%d callers, %d calls a round, %d rounds per command\n", *callers, *calls, len(results[0]))
	fmt.Printf("%-40s %10s %12s %10s %10s %10s %10s\n", "command", "calls/s", "CPU µs/call", "calls/s ×", "CPU ×", "tree µs", "client µs")
	base := mean(results[0])
	for i, t := range targets {
		m := mean(results[i])
		fmt.Printf("%-40s %10.0f %12.1f %10.2f %10.2f %10.1f %10.1f\n", strings.Join(t.args, " "), m.callsPerSec, float64(m.cpuPerCall)/1e3,
			m.callsPerSec/base.callsPerSec, float64(m.cpuPerCall)/float64(base.cpuPerCall), float64(m.treePerCall)/1e3, float64(m.selfPerCall)/1e3)
	}
}

func mean(rs []round) round {
	var m round
	for _, r := range rs {
		m.callsPerSec += r.callsPerSec / float64(len(rs))
		m.cpuPerCall += r.cpuPerCall / time.Duration(len(rs))
		m.treePerCall += r.treePerCall / time.Duration(len(rs))
		m.selfPerCall += r.selfPerCall / time.Duration(len(rs))
	}
	return m
}

// run starts t on a socket pair (as Node.js gives a child its stdio),
// initializes it, waits for its tool, and measures rounds of calls.
func run(t target, callers, calls, rounds int) ([]round, error) {
	in, err := socketPair()
	if err != nil {
		return nil, err
	}
	out, err := socketPair()
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(t.args[0], t.args[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = in[0], out[0], os.Stderr
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	in[0].Close()
	out[0].Close()
	defer func() {
		in[1].Close()
		_ = cmd.Wait()
		out[1].Close()
	}()
	c := &client{w: in[1], r: bufio.NewReaderSize(out[1], 4<<20)}
	if err := c.open(t.tool); err != nil {
		return nil, err
	}
	var got []round
	for range rounds {
		r, err := c.round(cmd.Process.Pid, t.tool, t.arguments, callers, calls)
		if err != nil {
			return nil, err
		}
		got = append(got, r)
	}
	return got, nil
}

func socketPair() ([2]*os.File, error) {
	fds, err := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		return [2]*os.File{}, err
	}
	return [2]*os.File{os.NewFile(uintptr(fds[0]), "child"), os.NewFile(uintptr(fds[1]), "parent")}, nil
}

// client is the client side of one connection.
type client struct {
	mu sync.Mutex
	w  *os.File
	r  *bufio.Reader
}

func (c *client) send(line string) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	_, err := c.w.WriteString(line + "\n")
	return err
}

// open initializes the session and waits until tools/list holds tool.
func (c *client) open(tool string) error {
	if err := c.send(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"callload","version":"0"}}}`); err != nil {
		return err
	}
	if _, err := c.answer(); err != nil {
		return fmt.Errorf("initialize: %w", err)
	}
	if err := c.send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`); err != nil {
		return err
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		if err := c.send(`{"jsonrpc":"2.0","id":0,"method":"tools/list"}`); err != nil {
			return err
		}
		line, err := c.answer()
		if err != nil {
			return fmt.Errorf("tools/list: %w", err)
		}
		if bytes.Contains(line, []byte(`"name":"`+tool+`"`)) {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("no tool %q listed in 30s", tool)
		}
		time.Sleep(100 * time.Millisecond) // the server's entries are starting
	}
}

// answer reads up to the next answer, skipping notifications. It is valid
// until the next read.
func (c *client) answer() ([]byte, error) {
	for {
		line, err := c.r.ReadSlice('\n')
		if err != nil || bytes.Contains(line, []byte(`"id":`)) {
			return line, err
		}
	}
}

// round makes calls with callers in flight and measures them. Caller i's
// requests have ids i, i+callers, …: the reader hands each answer to its
// caller by the id's remainder.
func (c *client) round(pid int, tool, arguments string, callers, calls int) (round, error) {
	answered := make([]chan struct{}, callers)
	for i := range answered {
		answered[i] = make(chan struct{}, 1)
	}
	per := calls / callers
	readErr := make(chan error, 1)
	go func() {
		for n := 0; n < per*callers; n++ {
			line, err := c.answer()
			if err != nil {
				readErr <- err
				return
			}
			id, ok := idOf(line)
			if !ok || id < callers {
				readErr <- fmt.Errorf("an answer without a call's id: %.200s", line)
				return
			}
			answered[id%callers] <- struct{}{}
		}
		readErr <- nil
	}()
	cpu0, err := cpuTime(pid)
	if err != nil {
		return round{}, err
	}
	tree0, self0 := treeTime(pid), selfTime()
	start := time.Now()
	var wg sync.WaitGroup
	for i := range callers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for k := 1; k <= per; k++ {
				id := strconv.Itoa(k*callers + i)
				if c.send(`{"jsonrpc":"2.0","id":`+id+`,"method":"tools/call","params":{"name":"`+tool+`","arguments":`+arguments+`}}`) != nil {
					return
				}
				<-answered[i]
			}
		}()
	}
	if err := <-readErr; err != nil {
		return round{}, err
	}
	wg.Wait()
	elapsed := time.Since(start)
	cpu1, err := cpuTime(pid)
	if err != nil {
		return round{}, err
	}
	tree1, self1 := treeTime(pid), selfTime()
	n := time.Duration(per * callers)
	return round{callsPerSec: float64(n) / elapsed.Seconds(), cpuPerCall: (cpu1 - cpu0) / n,
		treePerCall: (tree1 - tree0) / n, selfPerCall: (self1 - self0) / n}, nil
}

// treeTime is the CPU time process pid and its live descendants have
// spent (/proc/<pid>/task/<tid>/children); a process that went away
// counts nothing.
func treeTime(pid int) time.Duration {
	t, _ := cpuTime(pid)
	tasks, _ := os.ReadDir("/proc/" + strconv.Itoa(pid) + "/task")
	for _, task := range tasks {
		b, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/task/" + task.Name() + "/children")
		for _, f := range strings.Fields(string(b)) {
			if child, err := strconv.Atoi(f); err == nil {
				t += treeTime(child)
			}
		}
	}
	return t
}

// selfTime is the CPU time this process has spent.
func selfTime() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// idOf reads the integer id of an answer.
func idOf(line []byte) (int, bool) {
	i := bytes.Index(line, []byte(`"id":`))
	if i < 0 {
		return 0, false
	}
	j := i + len(`"id":`)
	k := j
	for k < len(line) && line[k] >= '0' && line[k] <= '9' {
		k++
	}
	n, err := strconv.Atoi(string(line[j:k]))
	return n, err == nil
}

// cpuTime is the CPU time process pid has spent, in user and system mode.
func cpuTime(pid int) (time.Duration, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, err
	}
	s := string(b)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+2:])
	if len(f) < 13 {
		return 0, fmt.Errorf("/proc/%d/stat: %q", pid, s)
	}
	utime, err1 := strconv.ParseInt(f[11], 10, 64)
	stime, err2 := strconv.ParseInt(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return 0, fmt.Errorf("/proc/%d/stat: %q", pid, s)
	}
	const ticksPerSecond = 100 // USER_HZ
	return time.Duration(utime+stime) * time.Second / ticksPerSecond, nil
}

// jsonObject reports whether s is a JSON object.
func jsonObject(s string) bool {
	var m map[string]json.RawMessage
	return json.Unmarshal([]byte(s), &m) == nil && m != nil
}
