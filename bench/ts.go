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
	"time"
)

// SDKDir is the folder of @modelcontextprotocol/sdk inside an npmtest install.
func SDKDir(npmDir string) string {
	return filepath.Join(npmDir, "node_modules", "@modelcontextprotocol", "sdk")
}

// tsClient drives bench/tsclient/client.mjs: the TypeScript SDK's client,
// timing its own calls.
type tsClient struct {
	name   string
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	out    *bufio.Reader
	stderr *bytes.Buffer
}

// StartTS starts node with the SDK client of the npm install in npmDir,
// connected to its own fixture server.
func StartTS(ctx context.Context, bins *Binaries, node, npmDir string) (Client, error) {
	return startTS(ctx, bins, node, npmDir, NameTS, "echo", append([]string{bins.Fixture}, FixtureArgs...)...)
}

// startTS starts the SDK client, named name, calling tool of target: a
// command and its arguments (stdio) or one URL (Streamable HTTP).
func startTS(ctx context.Context, bins *Binaries, node, npmDir, name, tool string, target ...string) (Client, error) {
	script := filepath.Join(bins.Root, "bench", "tsclient", "client.mjs")
	cmd := exec.Command(node, append([]string{script}, target...)...)
	cmd.Env = append(os.Environ(), "BENCH_SDK_DIR="+SDKDir(npmDir), "BENCH_TOOL="+tool)
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
	c := &tsClient{name: name, cmd: cmd, stdin: stdin, out: bufio.NewReaderSize(stdout, 1<<20), stderr: &stderr}
	ready := make(chan error, 1)
	go func() {
		line, err := c.out.ReadString('\n')
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
		c.Close()
		return nil, fmt.Errorf("%s: the ts-sdk client did not start: %v; stderr: %s", name, err, stderr.Bytes())
	}
	return c, nil
}

func (c *tsClient) Name() string { return c.name }

func (c *tsClient) Seq(ctx context.Context, n int) (Sample, error) {
	return c.do(map[string]any{"op": "seq", "n": n})
}

func (c *tsClient) Par(ctx context.Context, callers, n int) (Sample, error) {
	return c.do(map[string]any{"op": "par", "callers": callers, "n": n})
}

func (c *tsClient) do(cmd map[string]any) (Sample, error) {
	line, _ := json.Marshal(cmd)
	if _, err := c.stdin.Write(append(line, '\n')); err != nil {
		return Sample{}, fmt.Errorf("%s: %w; stderr: %s", c.name, err, c.stderr.Bytes())
	}
	answer, err := c.out.ReadBytes('\n')
	if err != nil {
		return Sample{}, fmt.Errorf("%s: %w; stderr: %s", c.name, err, c.stderr.Bytes())
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

func (c *tsClient) Close() error {
	c.stdin.Write([]byte(`{"op":"quit"}` + "\n"))
	c.stdin.Close()
	return waitOrKill(c.cmd, 10*time.Second)
}
