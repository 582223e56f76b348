package mcpserver

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/harness-go/harness/fiber"
	"github.com/harness-go/harness/internal/testkit/testlog"
	"github.com/harness-go/harness/plugins/tools"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// waitTimeout bounds one wait for a message: far above what any test needs.
const waitTimeout = 20 * time.Second

// rig is a registry, a fiber for its tools and a running gateway.
type rig struct {
	t   *testing.T
	reg *tools.Registry
	f   *fiber.Fiber
	gw  *Gateway
}

// newRig starts a gateway over a fresh registry; it stops at cleanup.
func newRig(t *testing.T, opts Options) *rig {
	t.Helper()
	r := &rig{t: t, reg: tools.New(), f: fiber.New(context.Background(), "tools")}
	if opts.Logger == nil {
		opts.Logger, _ = testlog.New(t)
	}
	gw, err := New(r.reg, opts)
	if err != nil {
		t.Fatal(err)
	}
	r.gw = gw
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = gw.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		<-done
		_ = r.f.Dispose(context.Background())
	})
	// New publishes the first list, before a client can connect, so a
	// client never takes its list_changed for a later one.
	if gw.publishes.Load() == 0 {
		t.Fatal("New published no list")
	}
	return r
}

// register adds tools and, in mode full, waits until they are served (the
// gateway gathers changes for DefaultCoalesce first). It returns the
// release of the batch.
func (r *rig) register(batch ...tools.Tool) fiber.Disposer {
	r.t.Helper()
	rel := r.registerNoWait(batch...)
	if r.gw.Mode() == ModeFull {
		r.waitServed("the new tools to be served", func() bool {
			served := r.gw.servedNames()
			for _, t := range batch {
				if !served[t.Name] {
					return false
				}
			}
			return true
		})
	}
	return rel
}

// waitServed waits until cond holds of the served list: it looks again at
// each publish (g.changed).
func (r *rig) waitServed(what string, cond func() bool) {
	r.t.Helper()
	deadline := time.NewTimer(waitTimeout)
	defer deadline.Stop()
	for {
		r.gw.mu.Lock()
		next := r.gw.changed
		r.gw.mu.Unlock()
		if cond() {
			return
		}
		select {
		case <-next:
		case <-deadline.C:
			r.t.Fatalf("waited %s for %s", waitTimeout, what)
		}
	}
}

// registerNoWait adds tools and returns the release of the batch.
func (r *rig) registerNoWait(batch ...tools.Tool) fiber.Disposer {
	r.t.Helper()
	rel, err := r.reg.Register(r.f, batch...)
	if err != nil {
		r.t.Fatal(err)
	}
	return rel
}

// text returns a native tool answering text.
func text(name, answer string) tools.Tool {
	return tools.Tool{
		Name: name, Description: "The " + name + " tool.\nSecond line.",
		Parameters: json.RawMessage(`{"type":"object","properties":{"x":{"type":"string"}}}`),
		Execute: func(context.Context, json.RawMessage) (tools.Result, error) {
			return tools.Result{Text: answer}, nil
		},
	}
}

// message is one JSON-RPC message a client read.
type message struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Params json.RawMessage `json:"params"`
	Result json.RawMessage `json:"result"`
	Error  *struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
	raw string
}

// rawClient speaks newline-delimited JSON-RPC to ServeStdio through pipes,
// and sees every byte the gateway writes.
type rawClient struct {
	t    *testing.T
	in   *io.PipeWriter
	msgs chan message
	ids  int

	mu    sync.Mutex
	notes []message // notifications read while waiting for a response
	done  chan error
}

// stdioClient serves one stdio session of r's gateway to a raw client; the
// session ends at cleanup (or earlier with close).
func (r *rig) stdioClient() *rawClient {
	r.t.Helper()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	c := &rawClient{t: r.t, in: inW, msgs: make(chan message, 256), done: make(chan error, 1)}
	go func() {
		err := r.gw.ServeStdio(context.Background(), inR, outW)
		outW.Close()
		c.done <- err
	}()
	go func() {
		sc := bufio.NewScanner(outR)
		sc.Buffer(make([]byte, 1<<20), 64<<20)
		for sc.Scan() {
			var m message
			if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
				m = message{Method: "<unparsable>"}
			}
			m.raw = sc.Text()
			c.msgs <- m
		}
		close(c.msgs)
	}()
	r.t.Cleanup(func() { c.close() })
	return c
}

// close ends the session (EOF on stdin) and waits for ServeStdio.
func (c *rawClient) close() error {
	c.in.Close()
	select {
	case err, ok := <-c.done:
		if ok {
			close(c.done)
		}
		return err
	case <-time.After(waitTimeout):
		c.t.Error("ServeStdio did not return after stdin closed")
		return nil
	}
}

func (c *rawClient) send(v any) {
	c.t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		c.t.Fatal(err)
	}
	c.sendRaw(string(b))
}

func (c *rawClient) sendRaw(line string) {
	c.t.Helper()
	if _, err := io.WriteString(c.in, line+"\n"); err != nil {
		c.t.Fatalf("writing to the gateway: %v", err)
	}
}

// request sends a request and returns its id.
func (c *rawClient) request(method string, params any) int {
	c.t.Helper()
	c.ids++
	m := map[string]any{"jsonrpc": "2.0", "id": c.ids, "method": method}
	if params != nil {
		m["params"] = params
	}
	c.send(m)
	return c.ids
}

// next returns the next message, failing after waitTimeout.
func (c *rawClient) next() message {
	c.t.Helper()
	select {
	case m, ok := <-c.msgs:
		if !ok {
			c.t.Fatal("the gateway closed stdout")
		}
		return m
	case <-time.After(waitTimeout):
		c.t.Fatal("no message from the gateway")
		return message{}
	}
}

// nextResponse returns the next response, keeping the notifications read
// before it.
func (c *rawClient) nextResponse() message {
	c.t.Helper()
	for {
		m := c.next()
		if m.Method == "" {
			return m
		}
		c.mu.Lock()
		c.notes = append(c.notes, m)
		c.mu.Unlock()
	}
}

// response waits for the response to id; notifications read meanwhile are
// kept.
func (c *rawClient) response(id int) message {
	c.t.Helper()
	for {
		m := c.next()
		if m.Method != "" {
			c.mu.Lock()
			c.notes = append(c.notes, m)
			c.mu.Unlock()
			continue
		}
		if string(m.ID) == fmt.Sprint(id) {
			return m
		}
		c.t.Fatalf("response to another request: %s", m.raw)
	}
}

// call sends a request and waits for its response.
func (c *rawClient) call(method string, params any) message {
	c.t.Helper()
	return c.response(c.request(method, params))
}

// initialize performs the handshake.
func (c *rawClient) initialize() message {
	c.t.Helper()
	m := c.call("initialize", map[string]any{
		"protocolVersion": "2025-11-25",
		"capabilities":    map[string]any{},
		"clientInfo":      map[string]any{"name": "raw", "version": "0"},
	})
	if m.Error != nil {
		c.t.Fatalf("initialize: %s", m.raw)
	}
	c.send(map[string]any{"jsonrpc": "2.0", "method": "notifications/initialized"})
	return m
}

// takeNote returns a notification already read or the next message, which
// must be one.
func (c *rawClient) takeNote() message {
	c.t.Helper()
	c.mu.Lock()
	if len(c.notes) > 0 {
		m := c.notes[0]
		c.notes = c.notes[1:]
		c.mu.Unlock()
		return m
	}
	c.mu.Unlock()
	m := c.next()
	if m.Method == "" {
		c.t.Fatalf("want a notification, got %s", m.raw)
	}
	return m
}

// listedTool is a tool of a tools/list result, its fields raw.
type listedTool struct {
	Name         string          `json:"name"`
	Title        string          `json:"title"`
	Description  string          `json:"description"`
	InputSchema  json.RawMessage `json:"inputSchema"`
	OutputSchema json.RawMessage `json:"outputSchema"`
	Annotations  json.RawMessage `json:"annotations"`
}

func (c *rawClient) list() []listedTool {
	c.t.Helper()
	m := c.call("tools/list", nil)
	var res struct {
		Tools []listedTool `json:"tools"`
	}
	if m.Error != nil || json.Unmarshal(m.Result, &res) != nil {
		c.t.Fatalf("tools/list: %s", m.raw)
	}
	return res.Tools
}

func names(list []listedTool) string {
	out := make([]string, len(list))
	for i, t := range list {
		out[i] = t.Name
	}
	return strings.Join(out, " ")
}
