package bench

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
	"path/filepath"
	"sync"
	"time"
)

// SDKDir is the folder of @modelcontextprotocol/sdk inside an npmtest install.
func SDKDir(npmDir string) string {
	return filepath.Join(npmDir, "node_modules", "@modelcontextprotocol", "sdk")
}

// tsProcess is one node running bench/tsclient/client.mjs: the TypeScript
// SDK's client, timing its own calls, with one client per target. Its
// clients take turns: a command is answered before the next is sent.
type tsProcess struct {
	mu     sync.Mutex
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	out    *bufio.Reader
	stderr *bytes.Buffer
	open   int // clients not closed yet: the last to close ends the process
	// afterQuit, when set, runs once the process has ended.
	afterQuit func()
}

// tsClient is one client of a tsProcess.
type tsClient struct {
	name string
	p    *tsProcess
	c    int // its index in the process
}

// tsTarget is what one client of a tsProcess calls: tool, of a command and
// its arguments (stdio) or of one URL (Streamable HTTP).
type tsTarget struct {
	Name   string   `json:"-"`
	Tool   string   `json:"tool"`
	Target []string `json:"target"`
}

// StartTS starts node with the SDK client of the npm install in npmDir,
// connected to its own fixture server.
func StartTS(ctx context.Context, bins *Binaries, node, npmDir string) (Client, error) {
	cs, err := startTS(ctx, bins, node, npmDir, tsTarget{Name: NameTS, Tool: "echo", Target: append([]string{bins.Fixture}, FixtureArgs...)})
	if err != nil {
		return nil, err
	}
	return cs[0], nil
}

// startTS starts one node process with a client for each target, in order.
// Clients of one process share its runtime, so what differs between their
// rows is their targets alone, not how one node process compiled the SDK
// against another.
func startTS(ctx context.Context, bins *Binaries, node, npmDir string, targets ...tsTarget) ([]Client, error) {
	script := filepath.Join(bins.Root, "bench", "tsclient", "client.mjs")
	spec, err := json.Marshal(targets)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(node, script)
	cmd.Env = append(os.Environ(), "BENCH_SDK_DIR="+SDKDir(npmDir), "BENCH_TARGETS="+string(spec))
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	p := &tsProcess{cmd: cmd, stdin: stdin, out: bufio.NewReaderSize(stdout, 1<<20), stderr: &stderr, open: len(targets)}
	ready := make(chan error, 1)
	go func() {
		line, err := p.out.ReadString('\n')
		if err == nil && line != "ready\n" {
			err = fmt.Errorf("first line %q", line)
		}
		ready <- err
	}()
	select {
	case err = <-ready:
	case <-ctx.Done():
		err = ctx.Err()
	}
	if err != nil {
		cmd.Process.Kill()
		p.quit()
		return nil, fmt.Errorf("%s: the ts-sdk client did not start: %v; stderr: %s", targets[0].Name, err, stderr.Bytes())
	}
	out := make([]Client, len(targets))
	for i, t := range targets {
		out[i] = &tsClient{name: t.Name, p: p, c: i}
	}
	return out, nil
}

func (c *tsClient) Name() string { return c.name }

func (c *tsClient) Seq(ctx context.Context, n int) (Sample, error) {
	return c.do(map[string]any{"op": "seq", "n": n, "c": c.c})
}

func (c *tsClient) Par(ctx context.Context, callers, n int) (Sample, error) {
	return c.do(map[string]any{"op": "par", "callers": callers, "n": n, "c": c.c})
}

func (c *tsClient) do(cmd map[string]any) (Sample, error) {
	line, _ := json.Marshal(cmd)
	p := c.p
	p.mu.Lock()
	defer p.mu.Unlock()
	if _, err := p.stdin.Write(append(line, '\n')); err != nil {
		return Sample{}, fmt.Errorf("%s: %w; stderr: %s", c.name, err, p.stderr.Bytes())
	}
	answer, err := p.out.ReadBytes('\n')
	if err != nil {
		return Sample{}, fmt.Errorf("%s: %w; stderr: %s", c.name, err, p.stderr.Bytes())
	}
	var r struct {
		Lat   []int64 `json:"lat"`
		Wall  int64   `json:"wall"`
		CPU   int64   `json:"cpu"`
		Error string  `json:"error"`
	}
	if err := json.Unmarshal(answer, &r); err != nil {
		return Sample{}, fmt.Errorf("%s: %w: %q", c.name, err, answer)
	}
	if r.Error != "" {
		return Sample{}, errors.New(c.name + ": " + r.Error)
	}
	s := Sample{Lat: make([]time.Duration, len(r.Lat)), Wall: time.Duration(r.Wall), CPU: time.Duration(r.CPU)}
	for i, ns := range r.Lat {
		s.Lat[i] = time.Duration(ns)
	}
	return s, nil
}

// Close closes the client; the last of its process to close ends the
// process (its clients close their connections).
func (c *tsClient) Close() error {
	p := c.p
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.open--; p.open > 0 {
		return nil
	}
	return p.quit()
}

// quit ends the process: it closes its clients and exits. mu is held, or
// the process was never handed out.
func (p *tsProcess) quit() error {
	p.stdin.Write([]byte(`{"op":"quit"}` + "\n"))
	p.stdin.Close()
	err := waitOrKill(p.cmd, 10*time.Second)
	if p.afterQuit != nil {
		p.afterQuit()
	}
	return err
}
