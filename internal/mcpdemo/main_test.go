package mcpdemo

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"testing/iotest"
	"time"
)

// childEnv makes the test binary act as the mcp-demo command, so the tests
// below can run the real Main in a separate process.
const childEnv = "MCP_DEMO_TEST_RUN_MAIN"

func TestMain(m *testing.M) {
	if os.Getenv(childEnv) == "1" {
		os.Exit(Main())
	}
	os.Exit(m.Run())
}

const (
	initializeLine  = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"test","version":"0"}}}`
	initializedLine = `{"jsonrpc":"2.0","method":"notifications/initialized"}`
)

func callLine(id int, tool, args string) string {
	return fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":%q,"arguments":%s}}`, id, tool, args)
}

// rpcResponse is the subset of a JSON-RPC response the tests look at.
type rpcResponse struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Result  struct {
		ServerInfo struct{ Name, Version string } `json:"serverInfo"`
		Content    []struct{ Text string }        `json:"content"`
		IsError    bool                           `json:"isError"`
	} `json:"result"`
	Error *struct{ Message string } `json:"error"`
}

func decodeResponse(t *testing.T, line string) rpcResponse {
	t.Helper()
	var r rpcResponse
	if err := json.Unmarshal([]byte(line), &r); err != nil || r.JSONRPC != "2.0" {
		t.Fatalf("stdout line is not a JSON-RPC message: %q (%v)", line, err)
	}
	return r
}

func startupNotice() string {
	return fmt.Sprintf("mcp-demo: %s MCP server %s ready on stdio (tools: %s)\n",
		serverName, serverVersion, strings.Join(toolNames, ", "))
}

// The run tests are deliberately not parallel: mcp-go's stdio transport
// keeps its session in a package-level variable, so only one stdio server
// may listen per process at a time.

func TestRunServesUntilEOF(t *testing.T) {
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	var stderr bytes.Buffer
	done := make(chan error, 1)
	go func() {
		done <- Run(t.Context(), inR, outW, &stderr)
		outW.Close()
	}()
	out := bufio.NewScanner(outR)
	exchange := func(line string) rpcResponse {
		t.Helper()
		if _, err := io.WriteString(inW, line+"\n"); err != nil {
			t.Fatalf("write: %v", err)
		}
		if !out.Scan() {
			t.Fatalf("no response to %s: %v", line, out.Err())
		}
		return decodeResponse(t, out.Text())
	}

	if r := exchange(initializeLine); r.Result.ServerInfo.Name != serverName || r.Result.ServerInfo.Version != serverVersion {
		t.Errorf("serverInfo = %+v, want %s %s", r.Result.ServerInfo, serverName, serverVersion)
	}
	if _, err := io.WriteString(inW, initializedLine+"\n"); err != nil {
		t.Fatal(err)
	}
	r := exchange(callLine(2, "calc", `{"expression":"6*7"}`))
	if r.Result.IsError || len(r.Result.Content) != 1 || r.Result.Content[0].Text != "42" {
		t.Errorf("calc response = %+v, want 42", r.Result)
	}

	inW.Close()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("run after EOF = %v, want nil", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("run did not return after stdin EOF")
	}
	if out.Scan() {
		t.Errorf("unexpected extra output %q", out.Text())
	}
	if got := stderr.String(); got != startupNotice() {
		t.Errorf("stderr = %q, want only the startup notice %q", got, startupNotice())
	}
}

func TestRunStopsWhenCancelled(t *testing.T) {
	inR, inW := io.Pipe() // stays open: only cancellation can stop run
	defer inW.Close()
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- Run(ctx, inR, io.Discard, io.Discard) }()
	// Whether run is already reading or not yet, cancelling must end it.
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("run after cancel = %v, want nil", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("run did not return after cancellation")
	}
}

func TestRunReportsReadErrors(t *testing.T) {
	boom := errors.New("boom")
	err := Run(t.Context(), iotest.ErrReader(boom), io.Discard, io.Discard)
	if !errors.Is(err, boom) {
		t.Errorf("run with failing stdin = %v, want %v", err, boom)
	}
}

// childCommand runs this test binary as the mcp-demo command.
func childCommand(t *testing.T) *exec.Cmd {
	t.Helper()
	cmd := exec.CommandContext(t.Context(), os.Args[0])
	// Under -race, skip the race runtime's one-second pause at exit. A race
	// report would still reach stderr, which the tests require to hold only
	// the startup notice.
	gorace := strings.TrimSpace(os.Getenv("GORACE") + " atexit_sleep_ms=0")
	cmd.Env = append(os.Environ(), childEnv+"=1", "GORACE="+gorace)
	return cmd
}

func TestProcessExitsOnStdinEOF(t *testing.T) {
	t.Parallel()
	args := map[string]string{
		"now": `{"format":"unix"}`, "calc": `{"expression":"2^10"}`, "hash": `{"text":"x"}`,
		"uuid": `{"count":3}`, "base64": `{"text":"x","mode":"encode"}`, "wordcount": `{"text":"a b"}`,
	}
	var calls []string
	for i := range 30 {
		tool := toolNames[i%len(toolNames)]
		calls = append(calls, callLine(i+2, tool, args[tool]))
	}
	cases := []struct {
		name      string
		lines     []string
		responses int
		failures  int // responses that are JSON-RPC errors or isError results
	}{
		{"no input", nil, 0, 0},
		{"notification only", []string{initializedLine}, 0, 0},
		{"initialize", []string{initializeLine}, 1, 0},
		{"unparsable line", []string{"not json"}, 1, 1},
		{"requests written before EOF all get answers", append([]string{initializeLine, initializedLine}, calls...), 31, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			cmd := childCommand(t)
			input := strings.Join(tc.lines, "\n")
			if input != "" {
				input += "\n"
			}
			cmd.Stdin = strings.NewReader(input)
			var stdout, stderr bytes.Buffer
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			start := time.Now()
			if err := cmd.Run(); err != nil {
				t.Fatalf("mcp-demo exited with %v; stderr:\n%s", err, stderr.String())
			}
			if d := time.Since(start); d > 5*time.Second {
				t.Errorf("mcp-demo took %v to exit after EOF", d)
			}
			var lines []string
			if s := strings.TrimSuffix(stdout.String(), "\n"); s != "" {
				lines = strings.Split(s, "\n")
			}
			failures := 0
			for _, l := range lines {
				r := decodeResponse(t, l) // stdout carries protocol only
				if r.Error != nil || r.Result.IsError {
					failures++
				}
			}
			if len(lines) != tc.responses || failures != tc.failures {
				t.Errorf("got %d responses (%d failed), want %d (%d failed):\n%s",
					len(lines), failures, tc.responses, tc.failures, stdout.String())
			}
			if got := stderr.String(); got != startupNotice() {
				t.Errorf("stderr = %q, want only the startup notice %q", got, startupNotice())
			}
		})
	}
}

func TestProcessExitsOnSIGTERM(t *testing.T) {
	t.Parallel()
	if runtime.GOOS == "windows" {
		t.Skip("no SIGTERM on Windows")
	}
	cmd := childCommand(t)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	defer stdin.Close()
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	notice, err := bufio.NewReader(stderr).ReadString('\n')
	if err != nil || notice != startupNotice() {
		t.Fatalf("startup notice = %q, %v; want %q", notice, err, startupNotice())
	}
	if _, err := io.WriteString(stdin, initializeLine+"\n"); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil {
		t.Fatalf("no initialize response: %v", err)
	}
	decodeResponse(t, line)

	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	waited := make(chan error, 1)
	go func() { waited <- cmd.Wait() }()
	select {
	case err := <-waited:
		if err != nil {
			t.Errorf("mcp-demo exited with %v after SIGTERM, want status 0", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("mcp-demo did not exit after SIGTERM")
	}
}

func TestInflight(t *testing.T) {
	t.Parallel()
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	cases := []struct {
		name     string
		setup    func(f *inflight)
		ctx      context.Context
		timeout  time.Duration
		minWait  time.Duration
		maxWait  time.Duration
		answered bool // answer the outstanding requests after 20ms
	}{
		{name: "idle returns at once", setup: func(*inflight) {}, ctx: context.Background(), timeout: time.Minute, maxWait: time.Second},
		{name: "extra answers are ignored", setup: func(f *inflight) { f.done(); f.add(); f.done(); f.done() }, ctx: context.Background(), timeout: time.Minute, maxWait: time.Second},
		{name: "waits for answers", setup: func(f *inflight) { f.add(); f.add() }, ctx: context.Background(), timeout: time.Minute, minWait: 20 * time.Millisecond, maxWait: 5 * time.Second, answered: true},
		{name: "gives up after the timeout", setup: func(f *inflight) { f.add() }, ctx: context.Background(), timeout: 30 * time.Millisecond, minWait: 30 * time.Millisecond, maxWait: 5 * time.Second},
		{name: "gives up when cancelled", setup: func(f *inflight) { f.add() }, ctx: cancelled, timeout: time.Minute, maxWait: time.Second},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f := newInflight()
			tc.setup(f)
			start := time.Now() // before the answers are scheduled: they come 20ms after it at the earliest
			if tc.answered {
				time.AfterFunc(20*time.Millisecond, func() { f.done(); f.done() })
			}
			f.wait(tc.ctx, tc.timeout)
			if d := time.Since(start); d < tc.minWait || d > tc.maxWait {
				t.Errorf("wait took %v, want between %v and %v", d, tc.minWait, tc.maxWait)
			}
		})
	}
}

func TestDrainOnEOFHoldsBackEOFUntilAnswered(t *testing.T) {
	t.Parallel()
	input := strings.Join([]string{
		`{"jsonrpc":"2.0","id":1,"method":"ping"}`,
		initializedLine, // notification: nothing to wait for
		`{"jsonrpc":"2.0","id":"b","method":"tools/list"}`,
		`{"jsonrpc":"2.0","id":null,"method":"ping"}`, // invalid id: no answer expected
		`not json`,
		`{"jsonrpc":"2.0","id":3,"method":"ping"}`, // no final newline: never seen by the server
	}, "\n")
	var sink bytes.Buffer
	// One byte per Read splits every line across calls.
	in, out := drainOnEOF(t.Context(), iotest.OneByteReader(strings.NewReader(input)), &sink, time.Minute)

	read := make(chan string, 1)
	go func() {
		b, _ := io.ReadAll(in)
		read <- string(b)
	}()
	notYet := func(after string) {
		t.Helper()
		select {
		case <-read:
			t.Fatalf("EOF delivered %s", after)
		case <-time.After(50 * time.Millisecond):
		}
	}
	notYet("before any answer")
	for _, msg := range []string{
		`{"jsonrpc":"2.0","method":"notifications/message","params":{}}`, // server notification
		`{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"Parse error"}}`,
		`{"jsonrpc":"2.0","id":1,"result":{}}`,
	} {
		if _, err := fmt.Fprintf(out, "%s\n", msg); err != nil {
			t.Fatal(err)
		}
	}
	notYet("with one request unanswered")
	if _, err := fmt.Fprintf(out, "%s\n", `{"jsonrpc":"2.0","id":"b","result":{"tools":[]}}`); err != nil {
		t.Fatal(err)
	}
	select {
	case got := <-read:
		if got != input {
			t.Errorf("read %q, want %q", got, input)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("EOF not delivered after every request was answered")
	}
	if n := strings.Count(sink.String(), "\n"); n != 4 {
		t.Errorf("writer passed on %d messages, want 4", n)
	}
}
