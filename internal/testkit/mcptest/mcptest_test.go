package mcptest_test

import (
	"context"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/harness-go/harness/internal/testkit/mcptest"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

// On both protocol eras the client is connected and sees a tool added.
func TestConnect(t *testing.T) {
	t.Parallel()
	for _, legacy := range []bool{false, true} {
		t.Run(map[bool]string{false: "2026-07-28", true: "legacy"}[legacy], func(t *testing.T) {
			t.Parallel()
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			s := server.NewMCPServer("s", "0", server.WithToolCapabilities(true))
			srv := httptest.NewServer(server.NewStreamableHTTPServer(s))
			t.Cleanup(srv.Close)
			var opts []transport.StreamableHTTPCOption
			if legacy {
				opts = append(opts, transport.WithContinuousListening())
			}
			tr, err := transport.NewStreamableHTTP(srv.URL+"/mcp", opts...)
			if err != nil {
				t.Fatal(err)
			}
			c := mcptest.Connect(t, ctx, tr, legacy)
			s.AddTool(mcp.NewTool("late"), func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				return mcp.NewToolResultText("here"), nil
			})
			select {
			case <-c.Changed:
			case <-ctx.Done():
				t.Fatal("no tools/list_changed after a tool was added")
			}
			res, err := c.ListTools(ctx, mcp.ListToolsRequest{})
			if err != nil || len(res.Tools) != 1 || res.Tools[0].Name != "late" {
				t.Fatalf("tools/list: %v %+v", err, res)
			}
		})
	}
}
