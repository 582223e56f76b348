package mcpclient

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

// The shapes a JSON answer over Streamable HTTP can take besides one
// message (http.go, readJSON): a batch holding the response, a JSON-RPC
// error with a null id under an error status (the server could not read
// ours), a body that is not JSON-RPC, an error page, and an empty 202 for
// a notification. Each reaches the call it answers; none loses the
// connection.
func TestHTTPJSONAnswerShapes(t *testing.T) {
	t.Parallel()
	s := server.NewMCPServer("shapes", "1", server.WithToolCapabilities(true))
	for _, name := range []string{"batch", "nullid", "notjson", "page", "echo"} {
		s.AddTool(mcp.NewTool(name, mcp.WithDescription(name+".")),
			func(_ context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				return mcp.NewToolResultText("from mcp-go: " + req.Params.Name), nil
			})
	}
	inner := server.NewStreamableHTTPServer(s)
	p := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var m struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
			Params struct {
				Name string `json:"name"`
			} `json:"params"`
		}
		if r.Method == http.MethodPost {
			body, _ := io.ReadAll(r.Body)
			r.Body = io.NopCloser(bytes.NewReader(body))
			_ = json.Unmarshal(body, &m)
		}
		if m.Method != "tools/call" {
			inner.ServeHTTP(w, r)
			return
		}
		switch m.Params.Name {
		case "batch":
			w.Header().Set("Content-Type", "application/json")
			io.WriteString(w, ` [{"jsonrpc":"2.0","id":`+string(m.ID)+`,"result":{"content":[{"type":"text","text":"in a batch"}]}}]`)
		case "nullid":
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusBadRequest)
			io.WriteString(w, `{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"your request is unreadable"}}`)
		case "notjson":
			w.Header().Set("Content-Type", "application/json")
			io.WriteString(w, `hello there`)
		case "page":
			w.Header().Set("Content-Type", "text/html")
			w.WriteHeader(http.StatusBadGateway)
			io.WriteString(w, `<html><body>bad gateway</body></html>`)
		default:
			inner.ServeHTTP(w, r)
		}
	}))
	hx := newHarness(t)
	hx.mustLoad(yml(httpEntry("s", "shapes", p.URL, nil)))
	hx.wantCall("mcp__shapes__batch", `{}`, "in a batch", false)
	for _, c := range []struct{ tool, want string }{
		{"nullid", "your request is unreadable"},
		{"notjson", "not JSON-RPC: hello there"},
		{"page", "HTTP 502"},
	} {
		res := hx.Call("mcp__shapes__"+c.tool, `{}`)
		if !res.IsError || !strings.Contains(res.Text, c.want) {
			t.Errorf("%s: %+v, want an error with %q", c.tool, res, c.want)
		}
	}
	// The connection is still the one it was: a call after them works.
	hx.wantCall("mcp__shapes__echo", `{}`, "from mcp-go: echo", false)
}

// A server's log message lands in our log at the level its MCP (syslog)
// level maps to; a level MCP does not name is info.
func TestServerLogLevels(t *testing.T) {
	t.Parallel()
	for level, want := range map[string]slog.Level{
		"debug": slog.LevelDebug, "info": slog.LevelInfo, "notice": slog.LevelInfo, "warning": slog.LevelWarn,
		"error": slog.LevelError, "critical": slog.LevelError, "alert": slog.LevelError, "emergency": slog.LevelError,
		"EMERGENCY": slog.LevelError, "chatty": slog.LevelInfo, "": slog.LevelInfo,
	} {
		if got := logLevel(level); got != want {
			t.Errorf("logLevel(%q) = %v, want %v", level, got, want)
		}
	}
}
