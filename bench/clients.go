package bench

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"strconv"
	"sync"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
)

// The call every client makes: echo {"message":"hello"}, answered "echo: hello".
const (
	EchoMessage = "hello"
	EchoAnswer  = "echo: " + EchoMessage
)

// Client makes echo calls to its own fixture server, over stdio.
type Client interface {
	// Name is the client's row label.
	Name() string
	// Seq makes n calls one after another.
	Seq(ctx context.Context, n int) (Sample, error)
	// Par makes n calls on each of callers concurrent callers.
	Par(ctx context.Context, callers, n int) (Sample, error)
	// Close ends the connection and the server.
	Close() error
}

// Client names, as the table prints them.
const (
	NamePipe   = "pipe"
	NameRaw    = "raw"
	NameMCPGo  = "mcp-go"
	NameBridge = "bridge"
	NameTS     = "ts-sdk"
)

// funcClient turns a call function that is safe for concurrent use into a
// Client.
type funcClient struct {
	name  string
	call  func(ctx context.Context) error
	close func() error
}

func (c *funcClient) Name() string { return c.name }
func (c *funcClient) Close() error { return c.close() }

func (c *funcClient) Seq(ctx context.Context, n int) (Sample, error) {
	lat := make([]time.Duration, n)
	cpu, start := processCPU(), time.Now()
	for i := range lat {
		t0 := time.Now()
		if err := c.call(ctx); err != nil {
			return Sample{}, fmt.Errorf("%s: call %d: %w", c.name, i, err)
		}
		lat[i] = time.Since(t0)
	}
	return Sample{Lat: lat, Wall: time.Since(start), CPU: processCPU() - cpu}, nil
}

func (c *funcClient) Par(ctx context.Context, callers, n int) (Sample, error) {
	lat := make([]time.Duration, callers*n)
	errs := make([]error, callers)
	var wg sync.WaitGroup
	cpu, start := processCPU(), time.Now()
	for w := range callers {
		wg.Go(func() {
			mine := lat[w*n : (w+1)*n]
			for i := range mine {
				t0 := time.Now()
				if err := c.call(ctx); err != nil {
					errs[w] = fmt.Errorf("%s: caller %d, call %d: %w", c.name, w, i, err)
					return
				}
				mine[i] = time.Since(t0)
			}
		})
	}
	wg.Wait()
	wall, cpu := time.Since(start), processCPU()-cpu
	if err := errors.Join(errs...); err != nil {
		return Sample{}, err
	}
	return Sample{Lat: lat, Wall: wall, CPU: cpu}, nil
}

// --- (a) raw lines, and the raw pipe ------------------------------------------

// lineClient writes requests as raw JSON-RPC lines and reads the answers
// with nothing but a scan for the id: the least a client can do. Against
// the fixture it measures the server's own share of a call; against
// pipeecho, the pipe round trip alone.
type lineClient struct {
	name  string
	cmd   *exec.Cmd
	stdin io.WriteCloser
	out   *bufio.Reader
	check func(line []byte) bool
	next  int64
	buf   []byte
	wmu   sync.Mutex
}

// appendCall appends the tools/call request with the given id, newline
// included. The pipe echoes exactly these bytes.
func appendCall(b []byte, id int64) []byte {
	b = append(b, `{"jsonrpc":"2.0","id":`...)
	b = strconv.AppendInt(b, id, 10)
	b = append(b, `,"method":"tools/call","params":{"name":"echo","arguments":{"message":"`+EchoMessage+`"}}}`+"\n"...)
	return b
}

var echoAnswerJSON = []byte(`"text":"` + EchoAnswer + `"`)

// StartRaw starts the fixture and shakes hands with hand-written lines.
func StartRaw(bins *Binaries) (Client, error) {
	c, err := startLines(NameRaw, bins.Fixture, FixtureArgs, func(line []byte) bool {
		return bytes.Contains(line, echoAnswerJSON) && !bytes.Contains(line, []byte(`"isError":true`))
	})
	if err != nil {
		return nil, err
	}
	if _, err := c.stdin.Write([]byte(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"` + mcp.LATEST_LEGACY_PROTOCOL_VERSION + `","capabilities":{},"clientInfo":{"name":"raw","version":"0"}}}` + "\n")); err != nil {
		c.Close()
		return nil, err
	}
	line, err := c.out.ReadSlice('\n')
	if err != nil || !bytes.Contains(line, []byte(`"protocolVersion"`)) {
		c.Close()
		return nil, fmt.Errorf("raw: initialize answered %q, %v", line, err)
	}
	if _, err := c.stdin.Write([]byte(`{"jsonrpc":"2.0","method":"notifications/initialized"}` + "\n")); err != nil {
		c.Close()
		return nil, err
	}
	return c, nil
}

// StartPipe starts pipeecho.
func StartPipe(bins *Binaries) (Client, error) {
	return startLines(NamePipe, bins.PipeEcho, nil, func([]byte) bool { return true })
}

func startLines(name, path string, args []string, check func([]byte) bool) (*lineClient, error) {
	cmd := exec.Command(path, args...)
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
	return &lineClient{name: name, cmd: cmd, stdin: stdin, out: bufio.NewReaderSize(stdout, 64<<10), check: check, next: 1}, nil
}

func (c *lineClient) Name() string { return c.name }

func (c *lineClient) Close() error {
	c.stdin.Close()
	return waitOrKill(c.cmd, 5*time.Second)
}

// waitOrKill waits for cmd to exit, killing it after d.
func waitOrKill(cmd *exec.Cmd, d time.Duration) error {
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case err := <-done:
		return err
	case <-t.C:
		cmd.Process.Kill()
		return <-done
	}
}

// Seq writes a request and reads its answer on the calling goroutine.
func (c *lineClient) Seq(ctx context.Context, n int) (Sample, error) {
	lat := make([]time.Duration, n)
	cpu, start := processCPU(), time.Now()
	for i := range lat {
		id := c.next
		c.next++
		c.buf = appendCall(c.buf[:0], id)
		t0 := time.Now()
		if _, err := c.stdin.Write(c.buf); err != nil {
			return Sample{}, fmt.Errorf("%s: %w", c.name, err)
		}
		line, err := c.out.ReadSlice('\n')
		lat[i] = time.Since(t0)
		if err != nil {
			return Sample{}, fmt.Errorf("%s: %w", c.name, err)
		}
		if got, ok := lineID(line); !ok || got != id || !c.check(line) {
			return Sample{}, fmt.Errorf("%s: request %d answered %q", c.name, id, line)
		}
	}
	return Sample{Lat: lat, Wall: time.Since(start), CPU: processCPU() - cpu}, nil
}

// Par runs callers goroutines that write their requests under a lock; one
// reader hands each answer to its caller by id (id mod callers).
func (c *lineClient) Par(ctx context.Context, callers, n int) (Sample, error) {
	base := c.next
	c.next += int64(callers * n)
	answers := make([]chan bool, callers)
	for i := range answers {
		answers[i] = make(chan bool, 1)
	}
	readErr := make(chan error, 1)
	go func() {
		for range callers * n {
			line, err := c.out.ReadSlice('\n')
			if err != nil {
				readErr <- err
				return
			}
			id, ok := lineID(line)
			if !ok || id < base || id >= base+int64(callers*n) {
				readErr <- fmt.Errorf("unexpected line %q", line)
				return
			}
			answers[(id-base)%int64(callers)] <- c.check(line)
		}
		readErr <- nil
	}()
	lat := make([]time.Duration, callers*n)
	errs := make([]error, callers)
	var wg sync.WaitGroup
	cpu, start := processCPU(), time.Now()
	for w := range callers {
		wg.Go(func() {
			var buf []byte
			for i := range n {
				buf = appendCall(buf[:0], base+int64(i*callers+w))
				t0 := time.Now()
				c.wmu.Lock()
				_, err := c.stdin.Write(buf)
				c.wmu.Unlock()
				if err != nil {
					errs[w] = err
					return
				}
				ok := <-answers[w]
				lat[w*n+i] = time.Since(t0)
				if !ok && errs[w] == nil {
					// Keep going: the reader must be able to hand over
					// every answer still to come.
					errs[w] = fmt.Errorf("caller %d: a wrong answer", w)
				}
			}
		})
	}
	wg.Wait()
	wall, cpu := time.Since(start), processCPU()-cpu
	if err := errors.Join(append(errs, <-readErr)...); err != nil {
		return Sample{}, fmt.Errorf("%s: %w", c.name, err)
	}
	return Sample{Lat: lat, Wall: wall, CPU: cpu}, nil
}

var idKey = []byte(`"id":`)

// lineID reads the first "id": number of a line.
func lineID(line []byte) (int64, bool) {
	i := bytes.Index(line, idKey)
	if i < 0 {
		return 0, false
	}
	var id int64
	j := i + len(idKey)
	start := j
	for ; j < len(line) && line[j] >= '0' && line[j] <= '9'; j++ {
		id = id*10 + int64(line[j]-'0')
	}
	return id, j > start
}

// --- (b) a bare mcp-go client --------------------------------------------------

// StartMCPGo connects mcp-go's own stdio client to the fixture, with the
// handshake the bridge uses (initialize, protocol 2025-11-25).
func StartMCPGo(ctx context.Context, bins *Binaries) (Client, error) {
	cl, err := ConnectMCPGo(ctx, bins.Fixture, FixtureArgs)
	if err != nil {
		return nil, err
	}
	req := mcp.CallToolRequest{}
	req.Params.Name = "echo"
	req.Params.Arguments = map[string]any{"message": EchoMessage}
	return &funcClient{
		name: NameMCPGo,
		call: func(ctx context.Context) error {
			res, err := cl.CallTool(ctx, req)
			if err != nil {
				return err
			}
			if res.IsError || len(res.Content) != 1 {
				return fmt.Errorf("unexpected result %+v", res)
			}
			if tc, ok := res.Content[0].(mcp.TextContent); !ok || tc.Text != EchoAnswer {
				return fmt.Errorf("unexpected content %+v", res.Content[0])
			}
			return nil
		},
		close: cl.Close,
	}, nil
}

// ConnectMCPGo starts a server with mcp-go's stdio transport, initializes
// (protocol 2025-11-25) and lists its tools: what a bare mcp-go program
// does before its first call.
func ConnectMCPGo(ctx context.Context, command string, args []string) (*client.Client, error) {
	tr := transport.NewStdio(command, nil, args...)
	if err := tr.Start(context.Background()); err != nil {
		return nil, err
	}
	cl := client.NewClient(tr, client.WithProtocolVersion(mcp.LATEST_LEGACY_PROTOCOL_VERSION))
	if err := cl.Start(context.Background()); err != nil {
		cl.Close()
		return nil, err
	}
	init := mcp.InitializeRequest{}
	init.Params.ClientInfo = mcp.Implementation{Name: "bench-mcp-go", Version: "0"}
	init.Params.ProtocolVersion = mcp.LATEST_LEGACY_PROTOCOL_VERSION
	if _, err := cl.Initialize(ctx, init); err != nil {
		cl.Close()
		return nil, fmt.Errorf("mcp-go: initialize: %w", err)
	}
	if _, err := cl.ListTools(ctx, mcp.ListToolsRequest{}); err != nil {
		cl.Close()
		return nil, fmt.Errorf("mcp-go: tools/list: %w", err)
	}
	return cl, nil
}
