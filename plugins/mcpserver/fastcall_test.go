package mcpserver

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/harness-go/harness/plugins/tools"
)

// fastResults are results of every shape the fast path meets: each is
// answered through both paths and the bytes compared.
var fastResults = []struct {
	name string
	res  tools.Result
	fast bool // the fast encoder writes it (else slowAnswer does)
}{
	{"text", tools.Result{Text: "echo: hello"}, true},
	{"text error", tools.Result{Text: "Error: it broke", IsError: true}, true},
	{"text html", tools.Result{Text: `a <b> & "c"`}, true},
	{"text control and unicode", tools.Result{Text: "line\none\ttab\x01\x7f é \u2028 \u2029 \U0001F600"}, true},
	{"text invalid utf-8", tools.Result{Text: "bad \xff\xfe byte"}, true},
	{"text empty", tools.Result{}, true},
	{"raw text", tools.Result{Raw: json.RawMessage(`{"content":[{"type":"text","text":"echo: hello"}]}`)}, true},
	{"raw spaced", tools.Result{Raw: json.RawMessage(" {\n \"content\" : [ { \"type\" : \"text\" , \"text\" : \"a b\\n\" } ] ,\t\"isError\" : false } ")}, true},
	{"raw error", tools.Result{Text: "Error: x", IsError: true, Raw: json.RawMessage(`{"content":[{"type":"text","text":"no such file"}],"isError":true}`)}, true},
	{"raw html and separators", tools.Result{Raw: json.RawMessage("{\"content\":[{\"type\":\"text\",\"text\":\"<a href='x'>&amp;</a> \u2028\u2029 \\u003c \\\" \\\\\"}]}")}, true},
	{"raw structured", tools.Result{Raw: json.RawMessage(`{"structuredContent":{"answer":42,"list":[1, 2, {"a":null}]},"content":[{"type":"text","text":"42"}]}`)}, true},
	{"raw structured null", tools.Result{Raw: json.RawMessage(`{"content":[],"structuredContent":null}`)}, true},
	{"raw empty content", tools.Result{Raw: json.RawMessage(`{"content":[]}`)}, true},
	{"raw every block", tools.Result{Raw: json.RawMessage(`{"content":[{"type":"text","text":"a","annotations":{"audience":["user"]}},{"type":"image","data":"aGk=","mimeType":"image/png"},{"type":"resource","resource":{"uri":"x://y","text":"t"}},{"type":"resource_link","uri":"x://z","name":"z"},{"type":"audio","data":"AA==","mimeType":"audio/wav"}]}`)}, true},
	{"raw blocks typed first and last", tools.Result{Raw: json.RawMessage(`{"content":[{"type":"text","text":"a"},{"text":"b","type":"text"}]}`)}, true},
	{"raw block type last", tools.Result{Raw: json.RawMessage(`{"content":[{"text":"a","type":"text","_meta":{"k":"v"}}]}`)}, true},
	// What rawResult changes or mcp-go re-encodes: slowAnswer writes it.
	{"raw unknown block", tools.Result{Raw: json.RawMessage(`{"content":[{"type":"hologram","data":"x"},{"type":"text","text":"v"}]}`)}, false},
	{"raw meta", tools.Result{Raw: json.RawMessage(`{"content":[],"_meta":{"vendor/trace":"t1","progressToken":3}}`)}, false},
	{"raw unknown key", tools.Result{Raw: json.RawMessage(`{"content":[],"extra":1}`)}, false},
	{"raw key in another case", tools.Result{Raw: json.RawMessage(`{"Content":[{"type":"text","text":"a"}]}`)}, false},
	{"raw block type in another case", tools.Result{Raw: json.RawMessage(`{"content":[{"type":"hologram","TYPE":"text","text":"a"}]}`)}, false},
	{"raw block type twice", tools.Result{Raw: json.RawMessage(`{"content":[{"type":"text","type":"hologram","text":"a"}]}`)}, false},
	{"raw block type escaped", tools.Result{Raw: json.RawMessage(`{"content":[{"type":"te\u0078t","text":"a"}]}`)}, false},
	{"raw block without a type after one with", tools.Result{Raw: json.RawMessage(`{"content":[{"type":"text","text":"a"},{"text":"b"}]}`)}, false},
	{"raw block typed twice across blocks", tools.Result{Raw: json.RawMessage(`{"content":[{"text":"a","type":"text"},{"type":"text","text":"b"},{"type":"image","data":"AA==","mimeType":"image/png","TYPE":"x"}]}`)}, false},
	{"raw block not an object", tools.Result{Raw: json.RawMessage(`{"content":["a",1]}`)}, false},
	{"raw content twice", tools.Result{Raw: json.RawMessage(`{"content":[],"content":[{"type":"text","text":"a"}]}`)}, false},
	{"raw isError null", tools.Result{Raw: json.RawMessage(`{"content":[],"isError":null}`)}, false},
	{"raw isError a string", tools.Result{Text: "the model's view", Raw: json.RawMessage(`{"content":[],"isError":"yes"}`)}, false},
	{"raw content null", tools.Result{Raw: json.RawMessage(`{"content":null}`)}, false},
	{"raw no content", tools.Result{Raw: json.RawMessage(`{"isError":true}`)}, false},
	{"raw invalid", tools.Result{Text: "the model's view", Raw: json.RawMessage(`{"content":[{"type":"text","text":"a"}]`)}, false},
	{"raw not an object", tools.Result{Text: "the model's view", Raw: json.RawMessage(`[1]`)}, false},
}

// fastSession is an initialized stdio session of g, outside any
// transport: the context both paths serve a request in.
func fastSession(t *testing.T, g *Gateway) context.Context {
	t.Helper()
	sess := &stdioSession{id: "fast-test", notes: make(chan mcp.JSONRPCNotification, 64)}
	if err := g.mcp.RegisterSession(context.Background(), sess); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { g.mcp.UnregisterSession(context.Background(), sess.id) })
	ctx := g.mcp.WithContext(context.Background(), sess)
	init := `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"0"}}}`
	if resp := g.mcp.HandleMessage(ctx, json.RawMessage(init)); resp == nil {
		t.Fatal("no answer to initialize")
	}
	sess.Initialize()
	return ctx
}

// slowPath answers line as stdioConn.serve does without the fast path.
func slowPath(ctx context.Context, g *Gateway, line string) string {
	ctx, o := withOutcome(ctx)
	resp := o.rewrite(g.mcp.HandleMessage(ctx, json.RawMessage(line)))
	if resp == nil {
		return ""
	}
	return string(mustEncode(resp))
}

// TestFastCallAnswersAsMcpGo sends the same calls through the fast path
// and through mcp-go's HandleMessage: the answers are the same bytes, and
// the tool gets the same arguments.
func TestFastCallAnswersAsMcpGo(t *testing.T) {
	t.Parallel()
	r := newRig(t, Options{})
	var mu sync.Mutex
	var current tools.Result
	var gotArgs string
	r.register(tools.Tool{Name: "mcp__s__t", Execute: func(_ context.Context, args json.RawMessage) (tools.Result, error) {
		mu.Lock()
		defer mu.Unlock()
		gotArgs = string(args)
		return current, nil
	}})
	ctx := fastSession(t, r.gw)
	calls := []string{
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"mcp__s__t","arguments":{"message":"hello"}}}`,
		`{"jsonrpc":"2.0","id":"a-1","method":"tools/call","params":{"name":"mcp__s__t"}}`,
		`{"params":{"arguments":{ "n" : 12345678901234567890, "s":"<&>" },"name":"mcp__s__t"},"method":"tools/call","id":-42,"jsonrpc":"2.0"}`,
		` { "jsonrpc" : "2.0" , "id" : 999999999999999 , "method" : "tools/call" , "params" : { "name" : "mcp__s__t" , "arguments" : { } } } `,
		`{"jsonrpc":"2.0","id":0,"method":"tools/call","params":{"name":"mcp__s__t","arguments":{"nested":{"a":[1,{"b":"\u00e9\n"}]}}}}`,
	}
	for _, res := range fastResults {
		for _, line := range calls {
			mu.Lock()
			current = res.res
			mu.Unlock()
			want := slowPath(ctx, r.gw, line)
			mu.Lock()
			wantArgs := gotArgs
			mu.Unlock()

			fc, ok := parseFastCall([]byte(strings.TrimSpace(line)))
			if !ok || !r.gw.servesFast(fc.name) {
				t.Fatalf("the fast path does not take %s", line)
			}
			fctx, _ := withOutcome(ctx)
			got := string(r.gw.serveFast(fctx, fc))
			mu.Lock()
			args := gotArgs
			mu.Unlock()
			if got != want {
				t.Errorf("%s, %s:\nfast %s\nslow %s", res.name, line, got, want)
			}
			if args != wantArgs {
				t.Errorf("%s, %s: the tool got %s, through mcp-go %s", res.name, line, args, wantArgs)
			}
		}
		if len(res.res.Raw) > 0 {
			if _, ok := appendRawResult(nil, res.res.Raw); ok != res.fast {
				t.Errorf("%s: the fast encoder writes it: %v, want %v", res.name, ok, res.fast)
			}
		}
	}
}

// TestFastCallTakes says which requests the fast path takes: a tools/call
// with a name and arguments of a served tool, nothing else.
func TestFastCallTakes(t *testing.T) {
	t.Parallel()
	r := newRig(t, Options{})
	r.register(text("echo", "hi"))
	for _, tc := range []struct {
		name, line string
		take       bool
	}{
		{"plain", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"m":"x"}}}`, true},
		{"no arguments", `{"jsonrpc":"2.0","id":"x","method":"tools/call","params":{"name":"echo"}}`, true},
		{"a string id with a dot and a colon", `{"jsonrpc":"2.0","id":"req:1.5","method":"tools/call","params":{"name":"echo"}}`, true},
		{"_meta (progress, 2026-07-28, trace)", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","_meta":{"progressToken":1}}}`, false},
		{"task", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","task":{}}}`, false},
		{"requestState", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","requestState":"s"}}`, false},
		{"inputResponses", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","inputResponses":{}}}`, false},
		{"a param in another case", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"Name":"echo"}}`, false},
		{"name twice", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"nope","name":"echo"}}`, false},
		{"a name with an escape", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"ech\u006f"}}`, false},
		{"arguments a string", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":"x"}}`, false},
		{"arguments null", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":null}}`, false},
		{"no params", `{"jsonrpc":"2.0","id":1,"method":"tools/call"}`, false},
		{"no name", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{}}`, false},
		{"another method", `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"name":"echo"}}`, false},
		{"jsonrpc 1.0", `{"jsonrpc":"1.0","id":1,"method":"tools/call","params":{"name":"echo"}}`, false},
		{"no jsonrpc", `{"id":1,"method":"tools/call","params":{"name":"echo"}}`, false},
		{"a top-level key more", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo"},"x":1}`, false},
		{"a top-level key in another case", `{"jsonrpc":"2.0","ID":1,"id":2,"method":"tools/call","params":{"name":"echo"}}`, false},
		{"id twice", `{"jsonrpc":"2.0","id":1,"id":2,"method":"tools/call","params":{"name":"echo"}}`, false},
		{"a fractional id", `{"jsonrpc":"2.0","id":1.5,"method":"tools/call","params":{"name":"echo"}}`, false},
		{"an id a float64 rounds", `{"jsonrpc":"2.0","id":12345678901234567,"method":"tools/call","params":{"name":"echo"}}`, false},
		{"an id -0", `{"jsonrpc":"2.0","id":-0,"method":"tools/call","params":{"name":"echo"}}`, false},
		{"an id with html", `{"jsonrpc":"2.0","id":"<1>","method":"tools/call","params":{"name":"echo"}}`, false},
		{"an id with an escape", `{"jsonrpc":"2.0","id":"a\"b","method":"tools/call","params":{"name":"echo"}}`, false},
		{"an id not ASCII", `{"jsonrpc":"2.0","id":"é","method":"tools/call","params":{"name":"echo"}}`, false},
		{"a null id", `{"jsonrpc":"2.0","id":null,"method":"tools/call","params":{"name":"echo"}}`, false},
		{"invalid JSON in the arguments", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"a":tru}}}`, false},
		{"a tool not served", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"other"}}`, false},
	} {
		fc, ok := parseFastCall([]byte(tc.line))
		if got := ok && r.gw.servesFast(fc.name); got != tc.take {
			t.Errorf("%s: taken %v, want %v", tc.name, got, tc.take)
		}
	}
}

// TestFastCallOverStdio: over ServeStdio, a plain call of an initialized
// session takes the fast path, and a call before initialize, one with
// _meta, or in meta mode, takes mcp-go's; the first three answer the same.
func TestFastCallOverStdio(t *testing.T) {
	t.Parallel()
	r := newRig(t, Options{})
	r.register(text("echo", "hi <there>"))
	c := r.stdioClient()
	callLine := func(id int, extra string) string {
		return `{"jsonrpc":"2.0","id":` + itoa(id) + `,"method":"tools/call","params":{"name":"echo","arguments":{}` + extra + `}}`
	}
	c.sendRaw(callLine(100, ""))
	before := c.response(100)
	if r.gw.fastCalls.Load() != 0 {
		t.Fatal("a call before initialize took the fast path")
	}
	c.initialize()
	c.sendRaw(callLine(101, ""))
	fast := c.response(101)
	if r.gw.fastCalls.Load() != 1 {
		t.Fatalf("%d calls took the fast path, want 1", r.gw.fastCalls.Load())
	}
	c.sendRaw(callLine(102, `,"_meta":{"progressToken":"p"}`))
	slow := c.response(102)
	if r.gw.fastCalls.Load() != 1 {
		t.Fatal("a call with _meta took the fast path")
	}
	want := `{"content":[{"type":"text","text":"hi \u003cthere\u003e"}]}`
	for _, m := range []message{before, fast, slow} {
		if string(m.Result) != want {
			t.Errorf("got %s, want result %s", m.raw, want)
		}
	}
	if err := r.gw.SetMode(ModeMeta); err != nil {
		t.Fatal(err)
	}
	r.waitServed("the meta list", func() bool {
		r.gw.mu.Lock()
		defer r.gw.mu.Unlock()
		return r.gw.handed == nil
	})
	c.sendRaw(callLine(103, ""))
	if m := c.response(103); m.Error == nil || r.gw.fastCalls.Load() != 1 {
		t.Errorf("in meta mode a call of echo answered %s (fast calls %d); want mcp-go's unknown tool", m.raw, r.gw.fastCalls.Load())
	}
}

func itoa(n int) string { b, _ := json.Marshal(n); return string(b) }

// FuzzAppendAnswer: whatever a tool returns, the fast encoder writes what
// mcp-go's types would (slowAnswer).
func FuzzAppendAnswer(f *testing.F) {
	for _, r := range fastResults {
		f.Add(string(r.res.Raw), r.res.Text, r.res.IsError)
	}
	f.Fuzz(func(t *testing.T, raw, text string, isError bool) {
		res := tools.Result{Text: text, IsError: isError, Raw: json.RawMessage(raw)}
		id := json.RawMessage(`7`)
		if got, want := string(appendAnswer(nil, id, res)), string(slowAnswer(id, res)); got != want {
			t.Fatalf("raw %q text %q:\nfast %s\nslow %s", raw, text, got, want)
		}
	})
}

// startedTool is a tool with a Starter, as an MCP server's is over stdio:
// each call waits, on a goroutine of its own, until release is closed or
// its context ends, then answers text (or the context's error). calls
// counts the calls its Starter took.
func startedTool(name, text string, release <-chan struct{}, calls *atomic.Int32) tools.Tool {
	t := tools.Tool{Name: name, Description: "Answer when released.", Parameters: json.RawMessage(`{"type":"object"}`)}
	t.Execute = func(context.Context, json.RawMessage) (tools.Result, error) { return tools.Result{Text: text}, nil }
	t.Start = func(ctx context.Context, _ json.RawMessage, done func(tools.Result, error)) bool {
		calls.Add(1)
		go func() {
			select {
			case <-release:
				done(tools.Result{Text: text}, nil)
			case <-ctx.Done():
				done(tools.Result{}, ctx.Err())
			}
		}()
		return true
	}
	return t
}

// TestStartedCallsOverStdio: a fast call of a tool with a Starter is
// started and the connection reads on — other requests are answered while
// it waits, and a notifications/cancelled ends it without an answer; its
// answer is the fast path's; at the end of stdin it is still answered.
func TestStartedCallsOverStdio(t *testing.T) {
	t.Parallel()
	r := newRig(t, Options{})
	release := make(chan struct{})
	var calls atomic.Int32
	r.register(startedTool("wait", "hi <there>", release, &calls), text("now", "at once"))
	c := r.stdioClient()
	c.initialize()
	call := func(id int, name string) {
		c.sendRaw(`{"jsonrpc":"2.0","id":` + itoa(id) + `,"method":"tools/call","params":{"name":"` + name + `","arguments":{}}}`)
	}
	call(1, "wait")
	call(2, "wait")
	call(3, "now") // answered while both wait
	if m := c.response(3); string(m.Result) != `{"content":[{"type":"text","text":"at once"}]}` {
		t.Fatalf("now: %s", m.raw)
	}
	c.sendRaw(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":2,"reason":"no longer needed"}}`)
	call(4, "now")
	c.response(4) // the cancellation was read before it
	close(release)
	if m := c.response(1); string(m.Result) != `{"content":[{"type":"text","text":"hi \u003cthere\u003e"}]}` {
		t.Fatalf("wait: %s", m.raw)
	}
	if calls.Load() != 2 || r.gw.fastCalls.Load() != 4 {
		t.Fatalf("%d calls started, %d fast; want 2 and 4", calls.Load(), r.gw.fastCalls.Load())
	}
	// Released or not, the cancelled call is never answered; a call started
	// just before the end of stdin is.
	call(5, "wait")
	if err := c.close(); err != nil {
		t.Fatal(err)
	}
	var ids []string
	for m := range c.msgs {
		ids = append(ids, string(m.ID))
	}
	if strings.Join(ids, ",") != "5" {
		t.Fatalf("after the end of stdin the client got answers to %q, want 5 only", ids)
	}
}

// The methods a client sends at every turn are read without a copy: their
// names are the ones decoding gives, and reading the envelope of a call
// allocates nothing (not parallel: AllocsPerRun counts the whole process).
func TestKnownMethods(t *testing.T) {
	for _, m := range []string{"tools/call", "notifications/cancelled", "notifications/progress", "ping"} {
		raw := []byte(`"` + m + `"`)
		if got, ok := knownMethod(raw); !ok || got != m {
			t.Errorf("knownMethod(%s) = %q, %v", raw, got, ok)
		}
	}
	if _, ok := knownMethod([]byte(`"tools/list"`)); ok {
		t.Error("knownMethod took a method it does not know")
	}
	line := []byte(`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"echo","arguments":{}}}`)
	if n := testing.AllocsPerRun(100, func() {
		if _, method, valid, err := envelope(line); err != nil || !valid || method != "tools/call" {
			t.Fatalf("envelope: %q, %v", method, err)
		}
	}); n != 0 {
		t.Errorf("reading the envelope of a call allocates %v times", n)
	}
}

// Inside a string appendCompactHTML goes eight bytes at a time: a byte it
// must escape or look at, at every place in and around a word, in strings
// of every length up to three words, is written as encoding/json writes a
// Marshaler's output (compacted, then HTML-escaped).
func TestAppendCompactHTMLAtWordBoundaries(t *testing.T) {
	t.Parallel()
	stops := []string{`\"`, `\\`, `\n`, `\u00e9`, "<", ">", "&", "\u2028", "\u2029", "\xe2\x80\xa7", "\xe2", "é", `"`}
	for n := 0; n <= 24; n++ {
		for at := 0; at <= n; at++ {
			for _, stop := range stops {
				body := strings.Repeat("a", at) + stop + strings.Repeat("b", n-at)
				for _, src := range []string{`"` + body + `"`, `{ "k" : "` + body + `" , "n" : [ 1 , "` + body + `" ] }`} {
					var want bytes.Buffer
					if json.Compact(&want, []byte(src)) != nil {
						continue // not JSON: appendCompactHTML takes only JSON
					}
					var escaped bytes.Buffer
					json.HTMLEscape(&escaped, want.Bytes())
					if got := appendCompactHTML(nil, []byte(src)); string(got) != escaped.String() {
						t.Fatalf("appendCompactHTML(%q) = %q, want %q", src, got, escaped.String())
					}
				}
			}
		}
	}
}
