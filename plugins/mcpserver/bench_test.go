package mcpserver

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/harness-go/harness/fiber"
	"github.com/harness-go/harness/plugins/tools"
)

func discardLogger() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

func newFiberB(b *testing.B) *fiber.Fiber {
	f := fiber.New(context.Background(), "bench")
	b.Cleanup(func() { _ = f.Dispose(context.Background()) })
	return f
}

// benchGateway runs a gateway serving tool alone until ctx ends, and
// returns it once the tool is served.
func benchGateway(b *testing.B, ctx context.Context, tool tools.Tool) *Gateway {
	reg := tools.New()
	gw, err := New(reg, Options{Logger: discardLogger()})
	if err != nil {
		b.Fatal(err)
	}
	if _, err := reg.Register(newFiberB(b), tool); err != nil {
		b.Fatal(err)
	}
	go gw.Run(ctx)
	<-gw.Ready()
	for !gw.servedNames()[tool.Name] {
		gw.mu.Lock()
		ch := gw.changed
		gw.mu.Unlock()
		<-ch
	}
	return gw
}

// BenchmarkStdioCall is the gateway's own share of a call: a native tool
// that answers at once, called over ServeStdio through pipes, one call at a
// time. started-64KiB is a started call whose result is a text of 64 KiB
// that reads like a file (lines, tabs, quotes, a non-ASCII letter): what a
// server's read_file answers, and where the gateway's passes over the bytes
// show.
func BenchmarkStdioCall(b *testing.B) {
	small := json.RawMessage(`{"content":[{"type":"text","text":"echo: hello"}]}`)
	const line = `\tif err := f(ctx, \"café\"); err != nil { return fmt.Errorf(\"step: %w\", err) }\n`
	big := json.RawMessage(`{"content":[{"type":"text","text":"` + strings.Repeat(line, 64<<10/len(line)) + `"}]}`)
	for _, mode := range []string{"text", "raw", "started", "started-64KiB"} {
		raw := mode != "text"
		b.Run(mode, func(b *testing.B) {
			tool := tools.Tool{Name: "echo", Execute: func(context.Context, json.RawMessage) (tools.Result, error) {
				if raw {
					return tools.Result{Text: "echo: hello", Raw: small}, nil
				}
				return tools.Result{Text: "echo: hello"}, nil
			}}
			if strings.HasPrefix(mode, "started") {
				// As an MCP server's tool over stdio: the call is started,
				// and its result given at once.
				res := small
				if mode == "started-64KiB" {
					res = big
					b.SetBytes(int64(len(big)))
				}
				tool.Start = func(_ context.Context, _ json.RawMessage, done func(tools.Result, error)) bool {
					done(tools.Result{Text: "echo: hello", Raw: res}, nil)
					return true
				}
			}
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			gw := benchGateway(b, ctx, tool)
			inR, inW := io.Pipe()
			outR, outW := io.Pipe()
			done := make(chan struct{})
			go func() { _ = gw.ServeStdio(ctx, inR, outW); outW.Close(); close(done) }()
			out := bufio.NewReaderSize(outR, 1<<20)
			io.WriteString(inW, `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"b","version":"0"}}}`+"\n")
			out.ReadSlice('\n')
			var buf []byte
			b.ReportAllocs()
			b.ResetTimer()
			for i := range b.N {
				buf = append(buf[:0], `{"jsonrpc":"2.0","id":`...)
				buf = strconv.AppendInt(buf, int64(i+1), 10)
				buf = append(buf, `,"method":"tools/call","params":{"name":"echo","arguments":{"message":"hello"}}}`+"\n"...)
				inW.Write(buf)
				if _, err := out.ReadSlice('\n'); err != nil {
					b.Fatal(err)
				}
			}
			b.StopTimer()
			inW.Close()
			go io.Copy(io.Discard, outR)
			<-done
		})
	}
}

// BenchmarkHTTPCall is the gateway's own share of a call over Streamable
// HTTP: a native tool that answers at once, called through a loopback
// connection kept alive, one call at a time.
func BenchmarkHTTPCall(b *testing.B) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	gw := benchGateway(b, ctx, tools.Tool{Name: "echo", Execute: func(context.Context, json.RawMessage) (tools.Result, error) {
		return tools.Result{Text: "echo: hello", Raw: json.RawMessage(`{"content":[{"type":"text","text":"echo: hello"}]}`)}, nil
	}})
	srv, err := gw.ListenHTTP("127.0.0.1:0", HTTPOptions{})
	if err != nil {
		b.Fatal(err)
	}
	go srv.Serve()
	defer srv.Close(context.Background())
	client := &http.Client{}
	session := ""
	post := func(body string) (*http.Response, []byte) {
		req, _ := http.NewRequest(http.MethodPost, srv.URL(), strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("MCP-Protocol-Version", "2025-11-25")
		if session != "" {
			req.Header.Set("Mcp-Session-Id", session)
		}
		resp, err := client.Do(req)
		if err != nil {
			b.Fatal(err)
		}
		out, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil || resp.StatusCode >= 300 {
			b.Fatalf("HTTP %d %s: %v", resp.StatusCode, out, err)
		}
		return resp, out
	}
	resp, _ := post(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"b","version":"0"}}}`)
	session = resp.Header.Get("Mcp-Session-Id")
	post(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		_, out := post(`{"jsonrpc":"2.0","id":` + strconv.Itoa(i+1) + `,"method":"tools/call","params":{"name":"echo","arguments":{"message":"hello"}}}`)
		if !strings.Contains(string(out), "echo: hello") {
			b.Fatalf("answer %s", out)
		}
	}
}
