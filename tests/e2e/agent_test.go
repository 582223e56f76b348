package e2e

// The agent through the binary: `harness ask` and the console's plain
// lines, against our fake OpenAI-compatible server (internal/testkit/fakellm, in
// this test process) with real MCP servers as the tools — our fixture and
// server-everything — and against @dwmkerr/mock-llm from npm. No test
// talks to a real model API (environ drops DEEPSEEK_API_KEY).

import (
	"bytes"
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/harness-go/harness/internal/testkit/fakellm"
	"github.com/harness-go/harness/internal/testkit/npmtest"
	"github.com/harness-go/harness/internal/testkit/proctest"
)

// agentEntry is a cordis.yml entry for an agent at url.
func agentEntry(id, url string, extra ...string) string {
	s := fmt.Sprintf("- id: %s\n  name: agent\n  config:\n    baseURL: %s\n", id, yq(url))
	for _, e := range extra {
		s += "    " + e + "\n"
	}
	return s
}

// The model calls two MCP tools in one step — one on our fixture, one on
// server-everything — gets their results and answers. The tools it was
// sent are exactly what `harness tools --json` prints.
func TestAskWithMCPServers(t *testing.T) {
	t.Parallel()
	ev := npmtest.Bin(t, "mcp-server-everything")
	srv := fakellm.Start(t,
		fakellm.Call(
			fakellm.ToolCallSpec{ID: "a", Name: "mcp__fx__add", Arguments: `{"a":6,"b":7}`},
			fakellm.ToolCallSpec{ID: "b", Name: "mcp__ev__echo", Arguments: `{"message":"héllo"}`}),
		fakellm.Say("13, and the echo said héllo."))
	dir := t.TempDir()
	// resources: false, or the agent would add its resource tools to what
	// the registry lists (TestAskReadsAResource covers those).
	writeConfig(t, dir, fixtureEntry("fx", "fx", "--only", "add,echo")+stdioEntry("ev", "mcp-client", "ev", ev, "stdio")+"    resources: false\n"+agentEntry("model", srv.URL))

	r := harness(t, dir, "ask", "add 6 and 7, and echo héllo")
	expectCode(t, r, 0)
	if r.stdout != "13, and the echo said héllo.\n" {
		t.Fatalf("stdout %q\n%s", r.stdout, r)
	}
	for _, want := range []string{`→ mcp__fx__add {"a":6,"b":7}`, `→ mcp__ev__echo {"message":"héllo"}`, "← mcp__fx__add: 13", "← mcp__ev__echo: Echo: héllo", "2 steps, 2 tool calls"} {
		if !strings.Contains(r.stderr, want) {
			t.Errorf("stderr lacks %q\n%s", want, r)
		}
	}
	second := srv.Wait(2, waitTimeout)
	results := map[string]string{}
	for _, m := range second.Messages {
		if m.Role == "tool" {
			results[m.ToolCallID] = m.Content
		}
	}
	if results["a"] != "13" || results["b"] != "Echo: héllo" {
		t.Fatalf("results sent back: %v", results)
	}
	tools := harness(t, dir, "tools", "--json")
	expectCode(t, tools, 0)
	first := srv.Wait(1, waitTimeout)
	if !bytes.Equal(first.Tools, []byte(strings.TrimSuffix(tools.stdout, "\n"))) || !bytes.Equal(first.Tools, second.Tools) {
		t.Fatalf("the tools sent differ from `tools --json`:\nsent %s\ntools %s", first.Tools, tools.stdout)
	}
}

// --json: one event per line, each parseable, type first.
func TestAskJSONThroughTheBinary(t *testing.T) {
	t.Parallel()
	srv := fakellm.Start(t,
		fakellm.Stream(fakellm.Reasoning("use add"), []string{fakellm.CallDelta(0, "c", "mcp__fx__add", `{"a":1,"b":2}`)}, fakellm.Finish("tool_calls")),
		fakellm.Say("3"))
	dir := t.TempDir()
	writeConfig(t, dir, fixtureEntry("fx", "fx", "--only", "add")+agentEntry("model", srv.URL))
	r := harness(t, dir, "ask", "1+2?", "--json")
	expectCode(t, r, 0)
	var types []string
	for _, l := range lines(r.stdout) {
		var e struct {
			Type string `json:"type"`
			Text string `json:"text"`
		}
		if err := json.Unmarshal([]byte(l), &e); err != nil || !strings.HasPrefix(l, `{"type":`) {
			t.Fatalf("line %q: %v\n%s", l, err, r)
		}
		if e.Type == "tool_result" && e.Text != "3" {
			t.Errorf("tool_result %s", l)
		}
		types = append(types, e.Type)
	}
	if want := []string{"reasoning", "tool_call", "tool_result", "text", "usage", "done"}; !slices.Equal(types, want) {
		t.Fatalf("events %v, want %v\n%s", types, want, r)
	}
	if strings.Contains(r.stderr, "→") || strings.Contains(r.stderr, "prompt tokens") {
		t.Fatalf("--json: stderr must carry logs only\n%s", r)
	}
}

// Ctrl-C while a tool runs: ask exits 130 and the MCP server is told
// (notifications/cancelled reaches the fixture, which logs every message).
// Ctrl-C while the answer streams: the model's server sees the stream go.
func TestAskInterrupted(t *testing.T) {
	t.Parallel()
	t.Run("during a tool call", func(t *testing.T) {
		t.Parallel()
		srv := fakellm.Start(t, fakellm.Call(fakellm.ToolCallSpec{ID: "c", Name: "mcp__fx__sleep", Arguments: `{"ms":60000}`}))
		dir := t.TempDir()
		msgLog, received := proctest.Fifo(t, dir, "fx.log", 1<<20)
		writeConfig(t, dir, fixtureEntry("fx", "fx", "--only", "sleep", "--log", msgLog)+agentEntry("model", srv.URL))
		s := startSession(t, runConfig{dir: dir}, "ask", "sleep")
		s.waitErr(0, "→ mcp__fx__sleep", hasPrefix("→ mcp__fx__sleep"))
		if _, ok := received.Find(0, waitTimeout, containsAll(`"method":"tools/call"`)); !ok {
			t.Fatalf("the call never reached the server; it received:\n%s", received.Text())
		}
		s.signal(syscall.SIGINT)
		if code := s.waitExit(); code != 130 {
			t.Fatalf("exit %d, want 130\n%s", code, s.dump())
		}
		if _, ok := received.Find(0, time.Second, containsAll(`"method":"notifications/cancelled"`)); !ok {
			t.Fatalf("the server was not told of the cancellation; it received:\n%s", received.Text())
		}
	})
	t.Run("during the answer", func(t *testing.T) {
		t.Parallel()
		// A whole line, so the test's line reader sees it.
		srv := fakellm.Start(t, fakellm.Reply{Chunks: fakellm.Text("Once upon a time\n"), Stall: true})
		dir := t.TempDir()
		writeConfig(t, dir, agentEntry("model", srv.URL))
		s := startSession(t, runConfig{dir: dir}, "ask", "a story")
		if _, ok := s.out.Find(0, waitTimeout, hasPrefix("Once upon a time")); !ok {
			t.Fatalf("no answer\n%s", s.dump())
		}
		s.signal(syscall.SIGINT)
		if code := s.waitExit(); code != 130 {
			t.Fatalf("exit %d, want 130\n%s", code, s.dump())
		}
		req := srv.Wait(1, waitTimeout)
		if req == nil {
			t.Fatal("the model's server saw no request")
		}
		select {
		case <-req.Done():
		case <-time.After(waitTimeout):
			t.Fatalf("the model's request did not end within %s of the harness's exit", waitTimeout)
		}
		if !req.Cancelled() {
			t.Fatal("the model's server did not see the cancellation")
		}
	})
}

// The console: plain lines talk to the agent. An edit of cordis.yml
// between two steps of one turn changes the tools of the next step: the
// model calls a tool that exists only after the edit. The conversation
// lasts from line to line.
func TestConsoleAgentLiveEdit(t *testing.T) {
	t.Parallel()
	gate := make(chan struct{})
	srv := fakellm.Start(t,
		fakellm.Reply{Gate: gate, Chunks: slices.Concat([]string{fakellm.CallDelta(0, "c1", "mcp__late__echo", `{"message":"new tool"}`)}, fakellm.Finish("tool_calls"))},
		fakellm.Say("It said: echo: new tool"),
		fakellm.Say("bye"))
	dir := t.TempDir()
	base := echoEntry + agentEntry("model", srv.URL)
	writeConfig(t, dir, base)
	s := startSession(t, runConfig{dir: dir})
	mark := s.mark()
	s.send("use the late tool\n")
	first := srv.Wait(1, waitTimeout)
	if first == nil || slices.Contains(first.ToolNames, "mcp__late__echo") {
		t.Fatalf("first request %+v\n%s", first, s.dump())
	}
	// The edit lands while the model "thinks" about step 1.
	writeConfig(t, dir, base+fixtureEntry("late", "late", "--only", "echo"))
	s.waitErr(mark, `"tools added mcp__late__echo"`, containsAll("tools added", "mcp__late__echo"))
	close(gate)
	if _, ok := s.out.Find(0, waitTimeout, equals("It said: echo: new tool")); !ok {
		t.Fatalf("no answer\n%s", s.dump())
	}
	s.waitErr(mark, "← echo: new tool", equals("← echo: new tool"))
	second := srv.Wait(2, waitTimeout)
	if !slices.Contains(second.ToolNames, "mcp__late__echo") {
		t.Fatalf("the second step lacks the new tool: %v", second.ToolNames)
	}
	if last := second.Last(); last.Role != "tool" || last.Content != "echo: new tool" {
		t.Fatalf("the new tool's result: %+v", last)
	}
	s.send("thanks\n")
	if _, ok := s.out.Find(0, waitTimeout, equals("bye")); !ok {
		t.Fatalf("no second answer\n%s", s.dump())
	}
	third := srv.Wait(3, waitTimeout)
	if len(third.Messages) != 5 || third.Messages[0].Content != "use the late tool" || third.Messages[4].Content != "thanks" {
		t.Fatalf("the conversation: %+v", third.Messages)
	}
	got := s.do("/agent")
	if i := slices.IndexFunc(got, hasPrefix("* model: deepseek-v4-flash at ")); i < 0 || i+1 >= len(got) || !strings.HasPrefix(got[i+1], "conversation: 2 turns, 6 messages") {
		t.Fatalf("/agent printed %q", got)
	}
	s.send("/quit\n")
	if code := s.waitExit(); code != 0 {
		t.Fatalf("exit %d\n%s", code, s.dump())
	}
}

// @dwmkerr/mock-llm, a third-party OpenAI-compatible mock, streams
// content only and sends errors as a 200 stream with data: {"error": …}
// (docs/rfc/0004-agent.md): plain text and an in-stream error.
func TestMockLLM(t *testing.T) {
	t.Parallel()
	bin := npmtest.Bin(t, "mock-llm")
	dir := t.TempDir()
	conf := filepath.Join(dir, "mock-llm.yaml")
	writeFile(t, conf, `streaming:
  chunkSize: 3
  chunkIntervalMs: 1
rules:
  - path: "/v1/chat/completions"
    method: POST
    match: "@"
    response:
      status: 200
      content: |
        {"id":"c1","object":"chat.completion","model":"{{jmes request body.model}}","choices":[{"message":{"role":"assistant","content":"You said: {{jmes request body.messages[-1].content}}"},"finish_reason":"stop"}]}
  - path: "/v1/chat/completions"
    method: POST
    match: "contains(body.messages[-1].content, 'error-401')"
    response:
      status: 401
      content: |
        {"error":{"message":"Incorrect API key provided.","type":"invalid_request_error","param":null,"code":"invalid_api_key"}}
`)
	base := startMockLLM(t, bin, conf)
	writeConfig(t, dir, echoEntry+agentEntry("mock", base+"/v1", "model: gpt-4"))

	r := harness(t, dir, "ask", "héllo wörld, say it back")
	expectCode(t, r, 0)
	if r.stdout != "You said: héllo wörld, say it back\n" {
		t.Fatalf("stdout %q\n%s", r.stdout, r)
	}
	r = harness(t, dir, "ask", "hi", "--json")
	expectCode(t, r, 0)
	var text strings.Builder
	for _, l := range lines(r.stdout) {
		var e struct{ Type, Delta string }
		if err := json.Unmarshal([]byte(l), &e); err != nil {
			t.Fatalf("line %q: %v", l, err)
		}
		text.WriteString(e.Delta)
	}
	if text.String() != "You said: hi" {
		t.Fatalf("--json text %q\n%s", text.String(), r)
	}
	r = harness(t, dir, "ask", "error-401 please")
	expectCode(t, r, 1)
	if !strings.Contains(r.stderr, `harness ask: entry "mock": the API key was refused: Incorrect API key provided. (invalid_api_key)`) {
		t.Fatalf("stderr:\n%s", r)
	}
}

// startMockLLM starts mock-llm on a free loopback port and returns its
// base URL once /health answers; a lost port race is retried.
func startMockLLM(t *testing.T, bin, conf string) string {
	t.Helper()
	var last string
	for attempt := 0; attempt < 3; attempt++ {
		port := freePort(t)
		s := startServer(t, []string{"HOST=127.0.0.1", "PORT=" + strconv.Itoa(port)}, bin, "--config", conf)
		base := fmt.Sprintf("http://127.0.0.1:%d", port)
		if waitHTTP(base+"/health", s.exited, waitTimeout) {
			return base
		}
		last = s.dump()
	}
	t.Fatalf("mock-llm did not start\n%s", last)
	return ""
}
