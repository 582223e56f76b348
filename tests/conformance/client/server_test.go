package main

import (
	"bytes"
	"context"
	"fmt"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

// TestAgainstAnMCPGoServer runs the client against an in-process Streamable
// HTTP server: it must list both tools and call each with made-up
// arguments.
func TestAgainstAnMCPGoServer(t *testing.T) {
	s := server.NewMCPServer("fixture", "1.0.0", server.WithToolCapabilities(true))
	s.AddTool(mcp.NewTool("add",
		mcp.WithNumber("a", mcp.Required()),
		mcp.WithNumber("b", mcp.Required()),
		mcp.WithString("note"),
	), func(_ context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		a := req.GetFloat("a", 0)
		b := req.GetFloat("b", 0)
		return mcp.NewToolResultText(fmt.Sprintf("%g+%g=%g", a, b, a+b)), nil
	})
	s.AddTool(mcp.NewTool("fail", mcp.WithString("why", mcp.Required())),
		func(_ context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return mcp.NewToolResultError("refused: " + req.GetString("why", "")), nil
		})
	ts := httptest.NewServer(server.NewStreamableHTTPServer(s))
	defer ts.Close()

	var out, errb bytes.Buffer
	code := run([]string{"-deadline", "10s", ts.URL + "/mcp"}, &out, &errb)
	if code != 0 {
		t.Fatalf("exit %d; stdout:\n%s\nstderr:\n%s", code, out.String(), errb.String())
	}
	for _, want := range []string{
		`"name":"mcp__conformance__add"`,
		`call mcp__conformance__add {"a":2,"b":3} -> {"text":"2+3=5","isError":false}`,
		`call mcp__conformance__fail {"why":"test"} -> {"text":"Error: refused: test","isError":true}`,
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("stdout lacks %s:\n%s", want, out.String())
		}
	}
}
