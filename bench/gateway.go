package bench

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// The clients of the gateway part: the TypeScript SDK client straight to the
// fixture, and through `harness serve` to the same fixture, over each
// transport the client can use.
const (
	NameDirectStdio  = "direct/stdio"
	NameRelayStdio   = "relay/stdio"
	NameGatewayStdio = "gateway/stdio"
	// The judge's own measure: the relay a second time (what one run can
	// tell apart), and a process that parses (how near a gateway that
	// reads every message can come to the relay at all).
	NameRelayAgain  = "relay-again/stdio"
	NameJSONRelay   = "jsonrelay/stdio"
	NameDirectHTTP  = "direct/http"
	NameGatewayHTTP = "gateway/http"
)

// gatewayTool is the fixture's echo as the gateway serves it: the harness's
// cordis.yml names the fixture entry "bench".
const gatewayTool = "mcp__bench__echo"

// StartGatewayClients starts, in table order, the TypeScript SDK client
// against: the fixture over stdio; the fixture behind relay, a process that
// only copies bytes (the floor of any process in the middle); `harness
// serve` (stdio) whose cordis.yml runs the fixture; a second relay, the
// same program again; jsonrelay, which scans each message and maps its id
// (the floor of a process that parses); the fixture over Streamable HTTP;
// `harness serve --http` with the same cordis.yml. Behind the gateway the
// fixture always runs over stdio: what differs between a direct and a
// gateway row is the gateway alone. On error, what was started is closed.
func StartGatewayClients(ctx context.Context, bins *Binaries, dir, node, npmDir string) ([]Client, error) {
	cfg := filepath.Join(dir, "cordis.yml")
	if err := os.WriteFile(cfg, RenderConfig([]Server{{ID: "bench", ServerName: "bench", Command: bins.Fixture, Args: FixtureArgs}}, ""), 0o644); err != nil {
		return nil, err
	}
	var out []Client
	fail := func(err error) ([]Client, error) {
		for _, c := range out {
			c.Close()
		}
		return nil, err
	}
	// add keeps a started client; stop, when given, stops its HTTP server
	// when the client closes (or at once, when the client did not start).
	add := func(c Client, err error, stop func()) error {
		switch {
		case err != nil && stop != nil:
			stop()
		case err == nil && stop != nil:
			out = append(out, &closeAlso{Client: c, also: stop})
		case err == nil:
			out = append(out, c)
		}
		return err
	}
	fixture := append([]string{bins.Fixture}, FixtureArgs...)
	for _, t := range []struct {
		name, tool string
		command    []string
	}{
		{NameDirectStdio, "echo", fixture},
		{NameRelayStdio, "echo", append([]string{bins.Relay}, fixture...)},
		{NameGatewayStdio, gatewayTool, []string{bins.Harness, "serve", "-c", cfg}},
		{NameRelayAgain, "echo", append([]string{bins.Relay}, fixture...)},
		{NameJSONRelay, "echo", append([]string{bins.JSONRelay}, fixture...)},
	} {
		c, err := startTS(ctx, bins, node, npmDir, t.name, t.tool, t.command...)
		if err := add(c, err, nil); err != nil {
			return fail(err)
		}
	}
	url, stop, err := startListening(ctx, bins.Fixture, append([]string{"--http", "127.0.0.1:0"}, FixtureArgs...)...)
	if err != nil {
		return fail(fmt.Errorf("the fixture over HTTP: %w", err))
	}
	c, err := startTS(ctx, bins, node, npmDir, NameDirectHTTP, "echo", url)
	if err := add(c, err, stop); err != nil {
		return fail(err)
	}
	url, stop, err = startListening(ctx, bins.Harness, "serve", "--http", "127.0.0.1:0", "-c", cfg)
	if err != nil {
		return fail(fmt.Errorf("harness serve --http: %w", err))
	}
	c, err = startTS(ctx, bins, node, npmDir, NameGatewayHTTP, gatewayTool, url)
	if err := add(c, err, stop); err != nil {
		return fail(err)
	}
	return out, nil
}

// closeAlso is a client that stops its server when it closes.
type closeAlso struct {
	Client
	also func()
}

func (c *closeAlso) Close() error {
	err := c.Client.Close()
	c.also()
	return err
}

// startListening starts a program that prints "listening URL" on stdout
// once it accepts connections, and returns the URL and a function that
// stops it (SIGTERM, then SIGKILL).
func startListening(ctx context.Context, path string, args ...string) (string, func(), error) {
	cmd := exec.Command(path, args...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return "", nil, err
	}
	if err := cmd.Start(); err != nil {
		return "", nil, err
	}
	stop := func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		_ = waitOrKill(cmd, 10*time.Second)
	}
	line := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		if sc.Scan() {
			line <- sc.Text()
		}
		close(line)
		for sc.Scan() { // keep the pipe drained
		}
	}()
	select {
	case l, ok := <-line:
		if url, found := strings.CutPrefix(l, "listening "); ok && found {
			return url, stop, nil
		}
		stop()
		return "", nil, fmt.Errorf("%s printed %q, not \"listening URL\"; stderr: %s", filepath.Base(path), l, stderr.String())
	case <-ctx.Done():
		stop()
		return "", nil, ctx.Err()
	case <-time.After(time.Minute):
		stop()
		return "", nil, errors.New(filepath.Base(path) + " did not listen within a minute")
	}
}

// gatewayPairs are the (direct, gateway) rows compared by the targets.
var gatewayPairs = [][2]string{{NameDirectStdio, NameRelayStdio}, {NameDirectStdio, NameGatewayStdio}, {NameDirectHTTP, NameGatewayHTTP}}

// gatewayRows are the rows of the gateway table, each with the direct row
// it is compared with: the targets' pairs, and the two measures of the
// judge after the stdio ones.
var gatewayRows = [][2]string{
	{NameDirectStdio, NameRelayStdio}, {NameDirectStdio, NameGatewayStdio},
	{NameDirectStdio, NameRelayAgain}, {NameDirectStdio, NameJSONRelay},
	{NameDirectHTTP, NameGatewayHTTP},
}

// added is the gateway row's latency over the direct one's: the median over
// rounds of the difference of the two round medians.
func (r *Report) added(direct, gateway string) (time.Duration, bool) {
	d, g := gatewayCall(r, direct), gatewayCall(r, gateway)
	if d == nil || g == nil || len(d.RoundMedians) != len(g.RoundMedians) {
		return 0, false
	}
	diffs := make([]time.Duration, len(d.RoundMedians))
	for i := range diffs {
		diffs[i] = g.RoundMedians[i] - d.RoundMedians[i]
	}
	return Median(diffs), true
}

func gatewayCall(r *Report, name string) *CallResult {
	for _, c := range r.Gateway {
		if c.Name == name {
			return c
		}
	}
	return nil
}
