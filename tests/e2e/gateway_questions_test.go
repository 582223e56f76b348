package e2e

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
)

const greetEntry = "- id: echo\n  name: echo\n  config: {greet: true}\n"

// harness serve relays what a tool asks to the client that called it: the
// TypeScript SDK's client (2025-11-25), over stdio and HTTP, answers the
// form the echo kind's greet asks, its schema and default as the tool
// wrote them; a client that declared no elicitation gets a decline.
func TestGatewayRelaysQuestionsToTSClient(t *testing.T) {
	t.Parallel()
	for _, transport := range []string{"stdio", "http"} {
		t.Run(transport, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			file := writeConfig(t, dir, greetEntry)
			connect := func(elicit map[string]any) *tsClient {
				ts := startTS(t)
				cmd := map[string]any{"op": "connect"}
				if elicit != nil {
					cmd["elicit"] = elicit
				}
				if transport == "stdio" {
					cmd["command"], cmd["args"], cmd["cwd"], cmd["env"] = harnessBin, []string{"serve", "-c", file}, dir, raceEnv()
				} else {
					cmd["url"] = serveHTTP(t, runConfig{dir: dir}, "-c", file).url
				}
				ts.mustDo(cmd)
				return ts
			}
			ts := connect(map[string]any{"action": "accept", "content": map[string]any{"name": "Ada", "manner": "cheerful"}})
			if got := ts.call("greet", nil); !sameJSON(got, `{"content":[{"type":"text","text":"Hello, Ada! Lovely to meet you!"}]}`) {
				t.Fatalf("greet: %s", got)
			}
			asked, _ := json.Marshal(ts.mustDo(map[string]any{"op": "elicited"})["elicited"])
			if !strings.Contains(string(asked), `"message":"How should I greet you?"`) || !strings.Contains(string(asked), `"default":"plain"`) {
				t.Fatalf("the client was asked %s", asked)
			}
			ts.mustDo(map[string]any{"op": "close"})

			plain := connect(nil)
			if got := plain.call("greet", nil); !sameJSON(got, `{"content":[{"type":"text","text":"Hello, whoever you are (you chose to decline)."}]}`) {
				t.Fatalf("greet for a client without elicitation: %s", got)
			}
			plain.mustDo(map[string]any{"op": "close"})
		})
	}
}

// mcp-go's client through harness serve, on both revisions: on 2026-07-28
// the question comes as an input_required result and the client's retry
// resumes the call; before, as a request on the call's stream.
func TestGatewayRelaysQuestionsToMcpGoClient(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name         string
		http, legacy bool
	}{{"stdio", false, false}, {"stdio legacy", false, true}, {"http", true, false}, {"http legacy", true, true}} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			file := writeConfig(t, dir, greetEntry)
			var tr transport.Interface
			if tc.http {
				h, err := transport.NewStreamableHTTP(serveHTTP(t, runConfig{dir: dir}, "-c", file).url)
				if err != nil {
					t.Fatal(err)
				}
				tr = h
			} else {
				tr = stdioServe(t, "-c", file)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 2*waitTimeout)
			t.Cleanup(cancel)
			var opts []client.ClientOption
			if tc.legacy {
				opts = append(opts, client.WithProtocolVersion(mcp.LATEST_LEGACY_PROTOCOL_VERSION))
			}
			var asked []string
			opts = append(opts, client.WithElicitationHandler(elicitFunc(func(_ context.Context, req mcp.ElicitationRequest) (*mcp.ElicitationResult, error) {
				asked = append(asked, req.Params.Message)
				return &mcp.ElicitationResult{ElicitationResponse: mcp.ElicitationResponse{Action: mcp.ElicitationResponseActionAccept, Content: map[string]any{"name": "Grace"}}}, nil
			})))
			cl := client.NewClient(tr, opts...)
			if err := cl.Start(ctx); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { cl.Close() })
			init := mcp.InitializeRequest{}
			init.Params.ClientInfo = mcp.Implementation{Name: "e2e", Version: "0"}
			if _, err := cl.Initialize(ctx, init); err != nil {
				t.Fatalf("initialize: %v", err)
			}
			req := mcp.CallToolRequest{}
			req.Params.Name = "greet"
			res, err := cl.CallTool(ctx, req)
			if err != nil || res.IsError || res.Content[0].(mcp.TextContent).Text != "Hello, Grace." {
				t.Fatalf("greet: %+v, %v", res, err)
			}
			if len(asked) != 1 || asked[0] != "How should I greet you?" {
				t.Fatalf("the client was asked %q", asked)
			}
		})
	}
}

type elicitFunc func(context.Context, mcp.ElicitationRequest) (*mcp.ElicitationResult, error)

func (f elicitFunc) Elicit(ctx context.Context, req mcp.ElicitationRequest) (*mcp.ElicitationResult, error) {
	return f(ctx, req)
}

// harness call of a tool that asks: nobody can answer, so the question is
// declined at once (the tool goes on), and stderr says who asked what.
func TestCallDeclinesAQuestion(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	writeConfig(t, dir, greetEntry)
	r := harness(t, dir, "call", "greet")
	expectCode(t, r, 0)
	if r.stdout != "Hello, whoever you are (you chose to decline).\n" {
		t.Fatalf("stdout %q", r.stdout)
	}
	if !strings.Contains(r.stderr, `harness: a tool (tool greet) asks to fill a form: "How should I greet you?" — declined: harness call has nobody to ask`) {
		t.Fatalf("stderr:\n%s", r.stderr)
	}
}
