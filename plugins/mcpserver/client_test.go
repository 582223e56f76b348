package mcpserver

import (
	"context"
	"errors"
	"io"
	"slices"
	"testing"

	"github.com/harness-go/harness/internal/testkit/mcptest"
	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
)

// mcp-go's own client, over stdio and HTTP, on both protocol eras: connect,
// list, call, and see a tool added while connected.
func TestMcpGoClient(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		http   bool
		legacy bool
	}{
		{"stdio", false, false},
		{"stdio legacy", false, true},
		{"http", true, false},
		{"http legacy", true, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r := newRig(t, Options{})
			// Served (register waits) before the client connects: its
			// list_changed must not pass for the one this test waits for.
			r.register(text("first", "first answer"))
			var tr transport.Interface
			if tc.http {
				srv := r.serveHTTP(HTTPOptions{}, "")
				var opts []transport.StreamableHTTPCOption
				if tc.legacy {
					opts = append(opts, transport.WithContinuousListening())
				}
				h, err := transport.NewStreamableHTTP(srv.URL(), opts...)
				if err != nil {
					t.Fatal(err)
				}
				tr = h
			} else {
				inR, inW := io.Pipe()
				outR, outW := io.Pipe()
				served := make(chan error, 1)
				go func() { served <- r.gw.ServeStdio(context.Background(), inR, outW); outW.Close() }()
				t.Cleanup(func() {
					inW.Close()
					outR.Close() // the client is gone: nobody reads what is left
					if err := <-served; err != nil && !errors.Is(err, io.ErrClosedPipe) {
						t.Errorf("ServeStdio: %v", err)
					}
				})
				tr = transport.NewIO(outR, inW, io.NopCloser(&emptyReader{}))
			}
			ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
			defer cancel()
			cl := mcptest.Connect(t, ctx, tr, tc.legacy)
			wantTools(t, ctx, cl.Client, "first")
			wantCall(t, ctx, cl.Client, "first", "first answer")

			r.register(text("second", "second answer"))
			select {
			case <-cl.Changed:
			case <-ctx.Done():
				t.Fatal("no notifications/tools/list_changed")
			}
			wantTools(t, ctx, cl.Client, "first", "second")
			wantCall(t, ctx, cl.Client, "second", "second answer")
		})
	}
}

type emptyReader struct{}

func (*emptyReader) Read([]byte) (int, error) { return 0, io.EOF }

func wantTools(t *testing.T, ctx context.Context, cl *client.Client, want ...string) {
	t.Helper()
	res, err := cl.ListTools(ctx, mcp.ListToolsRequest{})
	if err != nil {
		t.Fatalf("tools/list: %v", err)
	}
	var got []string
	for _, tool := range res.Tools {
		got = append(got, tool.Name)
	}
	if !slices.Equal(got, want) {
		t.Fatalf("tools %q, want %q", got, want)
	}
}

func wantCall(t *testing.T, ctx context.Context, cl *client.Client, name, want string) {
	t.Helper()
	req := mcp.CallToolRequest{}
	req.Params.Name = name
	req.Params.Arguments = map[string]any{}
	res, err := cl.CallTool(ctx, req)
	if err != nil {
		t.Fatalf("tools/call %s: %v", name, err)
	}
	if len(res.Content) != 1 || res.IsError {
		t.Fatalf("tools/call %s: %+v", name, res)
	}
	if tc, ok := res.Content[0].(mcp.TextContent); !ok || tc.Text != want {
		t.Fatalf("tools/call %s: %+v, want %q", name, res.Content[0], want)
	}
}
