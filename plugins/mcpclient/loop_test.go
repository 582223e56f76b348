package mcpclient

import (
	"context"
	"slices"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/harness-go/harness/host"
	"github.com/harness-go/harness/internal/loop"
)

// A stdio server finds this harness's chain in its environment, whatever
// the configuration says under that name.
func TestStdioServersReceiveTheChain(t *testing.T) {
	t.Parallel()
	hx := newHarness(t)
	hx.mustLoad(yml(hx.stdio("a", "srv", map[string]any{"env": map[string]string{"harness_chain": "forged"}}, "--only", "env")))
	self, err := loop.FromHost(hx.H)
	if err != nil {
		t.Fatal(err)
	}
	want := self.Next()
	hx.wantCall("mcp__srv__env", `{"name":"HARNESS_CHAIN"}`, want, false)
	hx.wantCall("mcp__srv__env", `{"name":"harness_chain"}`, "<unset>", false)
}

// gatewayPeer is an mcp-go server over HTTP that says, in its initialize
// result, that it is a harness gateway.
func gatewayPeer(t *testing.T, info map[string]any) *peer {
	t.Helper()
	s := server.NewMCPServer("harness", "dev", server.WithToolCapabilities(true),
		server.WithExperimental(map[string]any{loop.Capability: info}))
	s.AddTool(mcp.NewTool("echo", mcp.WithDescription("Echo.")), func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return mcp.NewToolResultText("echo"), nil
	})
	return serve(t, server.NewStreamableHTTPServer(s))
}

func TestHTTPLoops(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		info  func(self *loop.Self) map[string]any
		wants string // "" when the entry must be ready
	}{
		{
			name: "another harness",
			info: func(*loop.Self) map[string]any {
				return map[string]any{"id": "0123456789abcdef", "reach": []string{"0123456789abcdef", "fedcba9876543210"}}
			},
			wants: "",
		},
		{
			name:  "this harness itself",
			info:  func(self *loop.Self) map[string]any { return map[string]any{"id": self.ID, "reach": []string{self.ID}} },
			wants: "harness loop: the server is this harness's own gateway",
		},
		{
			name: "a harness that reaches back",
			info: func(self *loop.Self) map[string]any {
				return map[string]any{"id": "0123456789abcdef", "reach": []string{"0123456789abcdef", self.ID}}
			},
			wants: "which reaches back to this harness",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			// The identity is the host's: attach one before the server
			// learns it.
			self := loop.New("", "")
			p := gatewayPeer(t, tc.info(self))
			hx := newHarness(t)
			if err := loop.SelfKey.ProvideBy(hx.H, self); err != nil {
				t.Fatal(err)
			}
			hx.mustLoad(yml(httpEntry("gw", "gw", p.URL, nil)))
			hx.settle()
			if tc.wants == "" {
				hx.wantState("gw", host.Ready)
				if got := self.Info().Reach; !slices.Equal(got, []string{self.ID, "0123456789abcdef", "fedcba9876543210"}) {
					t.Fatalf("reach = %q, want this harness and the two behind the server", got)
				}
				wantHeaders(t, p, map[string]string{loop.Header: self.Next()})
				hx.mustLoad("[]")
				hx.settle()
				if got := self.Info().Reach; !slices.Equal(got, []string{self.ID}) {
					t.Fatalf("reach after the entry went = %q", got)
				}
				return
			}
			hx.wantState("gw", host.Failed, tc.wants)
			if len(hx.Tools.Names()) > 0 {
				t.Fatalf("tools of a refused server: %q", hx.Tools.Names())
			}
		})
	}
}
