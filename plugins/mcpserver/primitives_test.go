package mcpserver

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/harness-go/harness/internal/testkit/mcptest"
	"github.com/harness-go/harness/plugins/prompts"
	"github.com/harness-go/harness/plugins/resources"
	"github.com/harness-go/harness/plugins/tools"
)

// primRig is a rig whose gateway serves a resources and a prompts registry.
type primRig struct {
	*rig
	res *resources.Registry
	pr  *prompts.Registry

	mu    sync.Mutex
	reads []string // "server uri" of every read a fake source answered
}

func newPrimRig(t *testing.T, opts Options) *primRig {
	t.Helper()
	p := &primRig{res: resources.New(), pr: prompts.New()}
	opts.Resources, opts.Prompts = p.res, p.pr
	p.rig = newRig(t, opts)
	return p
}

// source is a fake server's resources: each uri's read answers a text
// naming the server and the uri asked, in a result with fields mcp-go's
// types do not know (to see that the result passes raw).
func (p *primRig) source(server string, uris []string, templates ...string) resources.Source {
	src := resources.Source{Server: server}
	for _, u := range uris {
		def := fmt.Sprintf(`{"uri":%q,"name":"%s-%s","mimeType":"text/plain","_meta":{"x":1}}`, u, server, u)
		src.Resources = append(src.Resources, resources.Resource{URI: u, Name: server + "-" + u, MIMEType: "text/plain", Definition: json.RawMessage(def)})
	}
	for _, tpl := range templates {
		src.Templates = append(src.Templates, resources.Template{URITemplate: tpl, Name: server + "-tpl",
			Definition: json.RawMessage(fmt.Sprintf(`{"uriTemplate":%q,"name":"%s-tpl"}`, tpl, server))})
	}
	src.Read = func(_ context.Context, uri string) (resources.ReadResult, error) {
		p.mu.Lock()
		p.reads = append(p.reads, server+" "+uri)
		p.mu.Unlock()
		if !strings.HasPrefix(uri, "test://") {
			return resources.ReadResult{}, fmt.Errorf("resources/read: %w", mcp.ErrResourceNotFound)
		}
		raw := fmt.Sprintf(`{"contents":[{"uri":%q,"mimeType":"text/plain","text":"%s read %s","extra":{"kept":true}}]}`, uri, server, uri)
		return resources.ReadResult{Raw: json.RawMessage(raw)}, nil
	}
	return src
}

// registerSource registers src and waits until the gateway serves its
// resources.
func (p *primRig) registerSource(src resources.Source) *resources.Set {
	p.t.Helper()
	set, err := p.res.Register(p.f, src)
	if err != nil {
		p.t.Fatal(err)
	}
	p.waitServed("the resources to be served", func() bool {
		return p.servedVersion(src)
	})
	return set
}

// servedVersion reports whether every resource of src is served.
func (p *primRig) servedVersion(src resources.Source) bool {
	served := p.gw.mcp.ListResources()
	for _, r := range src.Resources {
		found := false
		for _, s := range served {
			if s.Resource.Name == r.Name {
				found = true
			}
		}
		if !found {
			return false
		}
	}
	return true
}

func (p *primRig) readsSeen() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.reads)
}

// greet is a prompt of server with one required argument; its render
// carries a content block field mcp-go does not know.
func greet(server string) prompts.Prompt {
	return prompts.Prompt{
		Server: server, RawName: "greet", Description: "Greets.",
		Arguments:  []prompts.Argument{{Name: "who", Required: true}},
		Definition: json.RawMessage(`{"name":"greet","description":"Greets.","arguments":[{"name":"who","required":true}],"_meta":{"y":2}}`),
		Get: func(_ context.Context, args map[string]string) (prompts.Result, error) {
			raw := fmt.Sprintf(`{"description":"a greeting","messages":[{"role":"user","content":{"type":"text","text":"hello %s","annotations":{"priority":1}}}]}`, args["who"])
			return prompts.Result{Raw: json.RawMessage(raw)}, nil
		},
	}
}

// errorData is the data of a JSON-RPC error answer.
func errorData(t *testing.T, m message) (code int, data map[string]any) {
	t.Helper()
	var e struct {
		Error *struct {
			Code int            `json:"code"`
			Data map[string]any `json:"data"`
		} `json:"error"`
	}
	if json.Unmarshal([]byte(m.raw), &e) != nil || e.Error == nil {
		t.Fatalf("want an error, got %s", m.raw)
	}
	return e.Error.Code, e.Error.Data
}

func compact(t *testing.T, s string) string {
	t.Helper()
	var b bytes.Buffer
	if err := json.Compact(&b, []byte(s)); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// The capabilities name resources and prompts only when the registries
// are served.
func TestPrimitiveCapabilities(t *testing.T) {
	t.Parallel()
	capsOf := func(m message) map[string]json.RawMessage {
		var res struct {
			Capabilities map[string]json.RawMessage `json:"capabilities"`
		}
		if json.Unmarshal(m.Result, &res) != nil {
			t.Fatalf("initialize: %s", m.raw)
		}
		return res.Capabilities
	}
	plain := capsOf(newRig(t, Options{}).stdioClient().initialize())
	if plain["resources"] != nil || plain["prompts"] != nil {
		t.Errorf("without the registries: capabilities %v", plain)
	}
	caps := capsOf(newPrimRig(t, Options{}).stdioClient().initialize())
	if got := compact(t, string(caps["resources"])); got != `{"subscribe":true,"listChanged":true}` {
		t.Errorf("resources capability %s", got)
	}
	if got := compact(t, string(caps["prompts"])); got != `{"listChanged":true}` {
		t.Errorf("prompts capability %s", got)
	}
	if caps["completions"] == nil {
		t.Errorf("no completions capability: %v", caps)
	}
}

// resources/list and templates/list serve the union: the first server
// keeps a URI, a later one is served under harness://; reads are routed
// back (unescaped) and return the server's contents raw; an unknown URI
// is -32602 with data.uri.
func TestResourcesThroughTheGateway(t *testing.T) {
	t.Parallel()
	for _, mode := range []string{ModeFull, ModeMeta} {
		t.Run(mode, func(t *testing.T) {
			t.Parallel()
			p := newPrimRig(t, Options{Mode: mode})
			p.registerSource(p.source("a", []string{"test://same"}, "test://t/{id}"))
			p.registerSource(p.source("b", []string{"test://same", "test://only-b"}, "test://t/{id}"))
			c := p.stdioClient()
			c.initialize()

			m := c.call("resources/list", nil)
			var list struct {
				Resources []json.RawMessage `json:"resources"`
			}
			if m.Error != nil || json.Unmarshal(m.Result, &list) != nil {
				t.Fatalf("resources/list: %s", m.raw)
			}
			var uris []string
			byURI := map[string]string{}
			for _, r := range list.Resources {
				var head struct {
					URI string `json:"uri"`
				}
				_ = json.Unmarshal(r, &head)
				uris = append(uris, head.URI)
				byURI[head.URI] = string(r)
			}
			slices.Sort(uris)
			prefixed := "harness://b/test:%2F%2Fsame"
			if want := []string{prefixed, "test://only-b", "test://same"}; !slices.Equal(uris, want) {
				t.Fatalf("served uris %q, want %q", uris, want)
			}
			if got := byURI["test://same"]; !strings.Contains(got, `"name":"a-test://same"`) || !strings.Contains(got, `"_meta":{"x":1}`) {
				t.Errorf("test://same is served as %s, want a's object", got)
			}

			m = c.call("resources/templates/list", nil)
			var tl struct {
				ResourceTemplates []struct {
					URITemplate string `json:"uriTemplate"`
					Name        string `json:"name"`
				} `json:"resourceTemplates"`
			}
			if m.Error != nil || json.Unmarshal(m.Result, &tl) != nil {
				t.Fatalf("resources/templates/list: %s", m.raw)
			}
			var tpls []string
			for _, tpl := range tl.ResourceTemplates {
				tpls = append(tpls, tpl.Name+" "+tpl.URITemplate)
			}
			slices.Sort(tpls)
			if want := []string{"a-tpl test://t/{id}", "b-tpl harness://b/test:%2F%2Ft%2F{id}"}; !slices.Equal(tpls, want) {
				t.Fatalf("templates %q, want %q", tpls, want)
			}

			for _, tc := range []struct{ uri, server, asked string }{
				{"test://same", "a", "test://same"},
				{prefixed, "b", "test://same"},
				{"test://only-b", "b", "test://only-b"},
				{"test://t/7", "a", "test://t/7"},
				{"harness://b/test:%2F%2Ft%2F8", "b", "test://t/8"},
			} {
				m := c.call("resources/read", map[string]any{"uri": tc.uri})
				want := fmt.Sprintf(`{"contents":[{"uri":%q,"mimeType":"text/plain","text":"%s read %s","extra":{"kept":true}}]}`, tc.asked, tc.server, tc.asked)
				if m.Error != nil || compact(t, string(m.Result)) != want {
					t.Errorf("resources/read %s: %s, want the result %s", tc.uri, m.raw, want)
				}
			}
			if got, want := p.readsSeen(), []string{"a test://same", "b test://same", "b test://only-b", "a test://t/7", "b test://t/8"}; !slices.Equal(got, want) {
				t.Errorf("reads reached %q, want %q", got, want)
			}

			for _, uri := range []string{"test://nonexistent", "other://x/y"} {
				m := c.call("resources/read", map[string]any{"uri": uri})
				code, data := errorData(t, m)
				if code != mcp.INVALID_PARAMS || data["uri"] != uri {
					t.Errorf("resources/read %s: %s, want -32602 with data.uri", uri, m.raw)
				}
			}
		})
	}
}

// A server that says a listed URI does not exist: -32602 with data.uri,
// the served URI.
func TestResourceNotFoundByTheServer(t *testing.T) {
	t.Parallel()
	p := newPrimRig(t, Options{})
	p.registerSource(p.source("a", []string{"gone://x"}))
	c := p.stdioClient()
	c.initialize()
	m := c.call("resources/read", map[string]any{"uri": "gone://x"})
	if code, data := errorData(t, m); code != mcp.INVALID_PARAMS || data["uri"] != "gone://x" {
		t.Errorf("resources/read: %s, want -32602 with data.uri", m.raw)
	}
}

// prompts/list serves public names and the servers' objects; prompts/get
// returns the server's messages raw; a missing required argument is
// -32602.
func TestPromptsThroughTheGateway(t *testing.T) {
	t.Parallel()
	p := newPrimRig(t, Options{})
	if _, err := p.pr.Register(p.f, greet("a")); err != nil {
		t.Fatal(err)
	}
	p.waitServed("the prompt to be served", func() bool { return len(p.gw.mcp.ListPrompts()) == 1 })
	c := p.stdioClient()
	c.initialize()
	m := c.call("prompts/list", nil)
	want := `{"prompts":[{"_meta":{"y":2},"name":"mcp__a__greet","description":"Greets.","arguments":[{"name":"who","required":true}]}]}`
	if m.Error != nil || compact(t, string(m.Result)) != want {
		t.Errorf("prompts/list: %s, want %s", m.raw, want)
	}
	m = c.call("prompts/get", map[string]any{"name": "mcp__a__greet", "arguments": map[string]string{"who": "you"}})
	want = `{"description":"a greeting","messages":[{"role":"user","content":{"type":"text","text":"hello you","annotations":{"priority":1}}}]}`
	if m.Error != nil || compact(t, string(m.Result)) != want {
		t.Errorf("prompts/get: %s, want %s", m.raw, want)
	}
	m = c.call("prompts/get", map[string]any{"name": "mcp__a__greet"})
	if code, _ := errorData(t, m); code != mcp.INVALID_PARAMS || !strings.Contains(m.Error.Message, `"who"`) {
		t.Errorf("prompts/get without who: %s, want -32602 naming it", m.raw)
	}
}

// list_changed of resources and of prompts when the registries change;
// none for a change that leaves the served lists as they were.
func TestPrimitivesListChanged(t *testing.T) {
	t.Parallel()
	p := newPrimRig(t, Options{})
	c := p.stdioClient()
	c.initialize()
	c.call("resources/list", nil)
	c.call("prompts/list", nil)
	set := p.registerSource(p.source("a", []string{"test://one"}))
	if n := c.takeNote(); n.Method != string(mcp.MethodNotificationResourcesListChanged) {
		t.Fatalf("want resources list_changed, got %s", n.raw)
	}
	// The same listing again (a reconnect): nothing to announce.
	before := p.gw.primitivesPublished()
	if _, err := p.res.Replace(p.f, set, p.source("a", []string{"test://one"})); err != nil {
		t.Fatal(err)
	}
	if _, err := p.pr.Register(p.f, greet("a")); err != nil {
		t.Fatal(err)
	}
	if n := c.takeNote(); n.Method != string(mcp.MethodNotificationPromptsListChanged) {
		t.Fatalf("want prompts list_changed, got %s", n.raw)
	}
	if got := p.gw.primitivesPublished() - before; got != 1 {
		t.Errorf("%d lists replaced for a new prompt and an unchanged resource listing, want 1", got)
	}
	if m := c.call("prompts/list", nil); !strings.Contains(m.raw, "mcp__a__greet") {
		t.Errorf("prompts/list after the change: %s", m.raw)
	}
}

// primitivesPublished is the count of resource, template and prompt lists
// handed to mcp-go.
func (g *Gateway) primitivesPublished() int64 {
	r, _ := g.publishedOf(string(mcp.MethodNotificationResourcesListChanged))
	p, _ := g.publishedOf(string(mcp.MethodNotificationPromptsListChanged))
	return r + p
}

// A stdio client hears of a change of resources, or of prompts, only once
// it has listed them (as of tools: TestNoListChangedBeforeTheFirstList):
// a client that lists only tools gets no resources list_changed, and one
// that lists resources gets the next change of them but not of prompts.
func TestPrimitivesListChangedOnlyOfListedLists(t *testing.T) {
	t.Parallel()
	p := newPrimRig(t, Options{})
	c := p.stdioClient()
	c.initialize()
	c.list()
	p.registerSource(p.source("a", []string{"test://one"}))
	if _, err := p.pr.Register(p.f, greet("a")); err != nil {
		t.Fatal(err)
	}
	last := func() []string {
		// The session's notifications are written in order: once the
		// last is read, every one before it was written or dropped.
		p.gw.mcp.SendNotificationToAllClients("test/last", nil)
		var got []string
		for {
			n := c.takeNote()
			if n.Method == "test/last" {
				return got
			}
			got = append(got, n.Method)
		}
	}
	p.waitServed("the prompt to be served", func() bool { return p.gw.primitivesPublished() >= 2 })
	if got := last(); len(got) != 0 {
		t.Fatalf("notes of lists the client never listed: %v", got)
	}
	if m := c.call("resources/list", nil); !strings.Contains(m.raw, "test://one") {
		t.Fatalf("resources/list: %s", m.raw)
	}
	p.registerSource(p.source("b", []string{"test://two"}))
	if _, err := p.pr.Register(p.f, greet("b")); err != nil {
		t.Fatal(err)
	}
	p.waitServed("the second prompt to be served", func() bool { return p.gw.primitivesPublished() >= 4 })
	if got := last(); len(got) != 1 || got[0] != string(mcp.MethodNotificationResourcesListChanged) {
		t.Fatalf("notes after listing resources only: %v, want one resources list_changed", got)
	}
}

// mcp-go's client over HTTP (both eras) lists and reads resources and
// gets a prompt.
func TestPrimitivesMcpGoClient(t *testing.T) {
	t.Parallel()
	for _, legacy := range []bool{false, true} {
		t.Run(fmt.Sprint("legacy=", legacy), func(t *testing.T) {
			t.Parallel()
			p := newPrimRig(t, Options{})
			p.registerSource(p.source("a", []string{"test://one"}))
			if _, err := p.pr.Register(p.f, greet("a")); err != nil {
				t.Fatal(err)
			}
			p.waitServed("the prompt to be served", func() bool { return len(p.gw.mcp.ListPrompts()) == 1 })
			srv := p.serveHTTP(HTTPOptions{}, "")
			tr, err := transport.NewStreamableHTTP(srv.URL())
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
			defer cancel()
			cl := mcptest.Connect(t, ctx, tr, legacy)
			lr, err := cl.ListResources(ctx, mcp.ListResourcesRequest{})
			if err != nil || len(lr.Resources) != 1 || lr.Resources[0].URI != "test://one" {
				t.Fatalf("resources/list: %+v, %v", lr, err)
			}
			req := mcp.ReadResourceRequest{}
			req.Params.URI = "test://one"
			rr, err := cl.ReadResource(ctx, req)
			if err != nil || len(rr.Contents) != 1 {
				t.Fatalf("resources/read: %+v, %v", rr, err)
			}
			if tc, ok := rr.Contents[0].(mcp.TextResourceContents); !ok || tc.Text != "a read test://one" {
				t.Errorf("resources/read: %#v", rr.Contents[0])
			}
			// Unknown: -32602, a JSON-RPC error on both eras.
			req.Params.URI = "test://nope"
			if _, err := cl.ReadResource(ctx, req); !errors.Is(err, mcp.ErrInvalidParams) {
				t.Errorf("resources/read of an unknown uri: %v, want -32602", err)
			}
			gr := mcp.GetPromptRequest{}
			gr.Params.Name = "mcp__a__greet"
			gr.Params.Arguments = map[string]string{"who": "me"}
			pr, err := cl.GetPrompt(ctx, gr)
			if err != nil || len(pr.Messages) != 1 {
				t.Fatalf("prompts/get: %+v, %v", pr, err)
			}
			if tc, ok := pr.Messages[0].Content.(mcp.TextContent); !ok || tc.Text != "hello me" {
				t.Errorf("prompts/get: %#v", pr.Messages[0].Content)
			}
		})
	}
}

func TestPrefixedURIs(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ server, uri, want string }{
		{"b", "test://same", "harness://b/test:%2F%2Fsame"},
		{"a/child", "file:///x y", "harness://a%2Fchild/file:%2F%2F%2Fx%20y"},
	} {
		got := prefixedURI(tc.server, tc.uri)
		if got != tc.want {
			t.Errorf("prefixedURI(%q, %q) = %q, want %q", tc.server, tc.uri, got, tc.want)
		}
		if back, ok := unprefixURI(tc.server, got); !ok || back != tc.uri {
			t.Errorf("unprefixURI(%q) = %q, %v", got, back, ok)
		}
	}
	if got, want := prefixedTemplate("b", "test://t/{id}/x{?q}"), "harness://b/test:%2F%2Ft%2F{id}%2Fx{?q}"; got != want {
		t.Errorf("prefixedTemplate = %q, want %q", got, want)
	}
}

// resources/subscribe through the gateway: counted in the registry (the
// server asked once for two sessions), updates to the sessions that
// subscribed under the URI they subscribed to, released by unsubscribe
// and by the end of the session; an unknown URI is -32602.
func TestSubscriptionsThroughTheGateway(t *testing.T) {
	t.Parallel()
	p := newPrimRig(t, Options{})
	var mu sync.Mutex
	var calls []string
	withSubs := func(src resources.Source) resources.Source {
		src.Subscribe = func(_ context.Context, uri string) error {
			mu.Lock()
			defer mu.Unlock()
			calls = append(calls, src.Server+" subscribe "+uri)
			return nil
		}
		src.Unsubscribe = func(_ context.Context, uri string) error {
			mu.Lock()
			defer mu.Unlock()
			calls = append(calls, src.Server+" unsubscribe "+uri)
			return nil
		}
		return src
	}
	seen := func() []string {
		mu.Lock()
		defer mu.Unlock()
		return slices.Clone(calls)
	}
	a := p.registerSource(withSubs(p.source("a", []string{"test://same"})))
	b := p.registerSource(withSubs(p.source("b", []string{"test://same"})))
	c1, c2 := p.stdioClient(), p.stdioClient()
	c1.initialize()
	c2.initialize()
	prefixed := "harness://b/test:%2F%2Fsame"
	for _, c := range []*rawClient{c1, c2} {
		if m := c.call("resources/subscribe", map[string]any{"uri": "test://same"}); m.Error != nil {
			t.Fatalf("resources/subscribe: %s", m.raw)
		}
	}
	if m := c1.call("resources/subscribe", map[string]any{"uri": prefixed}); m.Error != nil {
		t.Fatalf("resources/subscribe %s: %s", prefixed, m.raw)
	}
	if got, want := seen(), []string{"a subscribe test://same", "b subscribe test://same"}; !slices.Equal(got, want) {
		t.Fatalf("the servers were asked %q, want %q", got, want)
	}
	a.Updated("test://same")
	for _, c := range []*rawClient{c1, c2} {
		n := c.takeNote()
		if n.Method != string(mcp.MethodNotificationResourceUpdated) || !strings.Contains(n.raw, `"uri":"test://same"`) {
			t.Fatalf("want resources/updated of test://same, got %s", n.raw)
		}
	}
	b.Updated("test://same")
	if n := c1.takeNote(); n.Method != string(mcp.MethodNotificationResourceUpdated) || !strings.Contains(n.raw, prefixed) {
		t.Fatalf("want resources/updated of %s, got %s", prefixed, n.raw)
	}

	if m := c1.call("resources/unsubscribe", map[string]any{"uri": prefixed}); m.Error != nil {
		t.Fatalf("resources/unsubscribe: %s", m.raw)
	}
	if m := c1.call("resources/unsubscribe", map[string]any{"uri": "test://same"}); m.Error != nil {
		t.Fatalf("resources/unsubscribe: %s", m.raw)
	}
	if got := seen(); !slices.Contains(got, "b unsubscribe test://same") || slices.Contains(got, "a unsubscribe test://same") {
		t.Fatalf("after c1 unsubscribed: %q (a must stay subscribed for c2)", got)
	}
	if err := c2.close(); err != nil {
		t.Fatal(err)
	}
	if got := seen(); !slices.Contains(got, "a unsubscribe test://same") {
		t.Fatalf("the end of c2's session did not release its subscription: %q", got)
	}
	if n := p.gw.subscriptionCount(); n != 0 {
		t.Errorf("%d subscriptions left", n)
	}

	m := c1.call("resources/subscribe", map[string]any{"uri": "test://nope"})
	if code, data := errorData(t, m); code != mcp.INVALID_PARAMS || data["uri"] != "test://nope" {
		t.Errorf("resources/subscribe of an unknown uri: %s", m.raw)
	}
}

// completion/complete goes to the prompt's source by its public name, and
// to the template's server with its own uriTemplate.
func TestCompletionThroughTheGateway(t *testing.T) {
	t.Parallel()
	p := newPrimRig(t, Options{})
	var mu sync.Mutex
	var got []string
	echo := func(what string) func(context.Context, json.RawMessage) (json.RawMessage, error) {
		return func(_ context.Context, params json.RawMessage) (json.RawMessage, error) {
			mu.Lock()
			got = append(got, what+" "+compact(t, string(params)))
			mu.Unlock()
			return json.RawMessage(`{"completion":{"values":["one","two"],"total":2}}`), nil
		}
	}
	src := p.source("b", nil, "test://t/{id}")
	src.Complete = echo("b")
	p.registerSource(p.source("a", nil, "test://t/{id}"))
	p.registerSource(src)
	p.waitServed("the templates to be served", func() bool {
		p.gw.pmu.Lock()
		defer p.gw.pmu.Unlock()
		return len(p.gw.tpls) == 2
	})
	pr := greet("a")
	pr.Complete = echo("prompt")
	if _, err := p.pr.Register(p.f, pr); err != nil {
		t.Fatal(err)
	}
	p.waitServed("the prompt to be served", func() bool { return len(p.gw.mcp.ListPrompts()) == 1 })
	c := p.stdioClient()
	c.initialize()
	m := c.call("completion/complete", map[string]any{"ref": map[string]any{"type": "ref/prompt", "name": "mcp__a__greet"}, "argument": map[string]any{"name": "who", "value": "o"}})
	if m.Error != nil || compact(t, string(m.Result)) != `{"completion":{"values":["one","two"],"total":2}}` {
		t.Errorf("completion/complete of a prompt: %s", m.raw)
	}
	m = c.call("completion/complete", map[string]any{"ref": map[string]any{"type": "ref/resource", "uri": "harness://b/test:%2F%2Ft%2F{id}"}, "argument": map[string]any{"name": "id", "value": "1"}, "context": map[string]any{"arguments": map[string]string{"x": "y"}}})
	if m.Error != nil || !strings.Contains(m.raw, `"values":["one","two"]`) {
		t.Errorf("completion/complete of a template: %s", m.raw)
	}
	m = c.call("completion/complete", map[string]any{"ref": map[string]any{"type": "ref/resource", "uri": "test://none/{x}"}, "argument": map[string]any{"name": "x", "value": ""}})
	if code, _ := errorData(t, m); code != mcp.INVALID_PARAMS {
		t.Errorf("completion/complete of an unknown template: %s", m.raw)
	}
	mu.Lock()
	defer mu.Unlock()
	want := []string{
		`prompt {"argument":{"name":"who","value":"o"},"ref":{"name":"mcp__a__greet","type":"ref/prompt"}}`,
		`b {"argument":{"name":"id","value":"1"},"context":{"arguments":{"x":"y"}},"ref":{"type":"ref/resource","uri":"test://t/{id}"}}`,
	}
	if !slices.Equal(got, want) {
		t.Errorf("relayed %q, want %q", got, want)
	}
}

// Over HTTP, an unknown resource is -32602 with data.uri in a 200 answer on
// 2025-11-25 (HTTP 400 for -32602 is the rule of 2026-07-28 only).
func TestResourceNotFoundOverHTTPLegacy(t *testing.T) {
	t.Parallel()
	p := newPrimRig(t, Options{})
	h := p.gw.HTTPHandler(HTTPOptions{})
	t.Cleanup(func() { _ = h.Shutdown(context.Background()) })
	hr := &handlerRig{t: t, gw: p.gw, h: h}
	id := hr.initialize()
	w := hr.do(http.MethodPost, id, `{"jsonrpc":"2.0","id":2,"method":"resources/read","params":{"uri":"test://nope"}}`)
	if w.Code != http.StatusOK || !strings.Contains(w.Body.String(), `"code":-32602`) || !strings.Contains(w.Body.String(), `"data":{"uri":"test://nope"}`) {
		t.Errorf("resources/read of an unknown uri: HTTP %d %s", w.Code, w.Body)
	}
}

// A prompt that asks (here a native one, through tools.Ask; a server's
// prompt asks the same way through mcp-client) is relayed as a tools/call
// is: a request to a client of the session era, an input_required result
// for a 2026-07-28 client, which answers and gets again (mcp-go's client
// does both), over stdio and HTTP. A tool's requestState does not resume a
// prompt.
func TestPromptAsks(t *testing.T) {
	t.Parallel()
	asking := prompts.Prompt{
		RawName: "ask_name", Description: "Ask a name, then greet it.",
		Get: func(ctx context.Context, _ map[string]string) (prompts.Result, error) {
			a, err := tools.Ask(ctx, tools.Question{ID: "who", Method: tools.MethodElicit,
				Params: json.RawMessage(`{"message":"Your name?","requestedSchema":{"type":"object","properties":{"name":{"type":"string"}},"required":["name"]}}`)})
			if err != nil {
				return prompts.Result{}, err
			}
			return prompts.Result{Messages: []prompts.Message{prompts.TextMessage("user", "greet "+string(a))}}, nil
		},
	}
	for _, tc := range []struct {
		name         string
		http, legacy bool
	}{
		{"stdio legacy", false, true},
		{"stdio", false, false},
		{"http legacy", true, true},
		{"http", true, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			p := newPrimRig(t, Options{})
			if _, err := p.pr.Register(p.f, asking); err != nil {
				t.Fatal(err)
			}
			p.waitServed("the prompt to be served", func() bool { return len(p.gw.mcp.ListPrompts()) == 1 })
			ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
			defer cancel()
			a := &answeringClient{}
			cl := connect(t, ctx, transportFor(t, p.rig, tc.http), tc.legacy, client.WithElicitationHandler(a))
			gr := mcp.GetPromptRequest{}
			gr.Params.Name = "ask_name"
			res, err := cl.GetPrompt(ctx, gr)
			if err != nil || len(res.Messages) != 1 {
				t.Fatalf("prompts/get: %+v, %v", res, err)
			}
			if text, ok := res.Messages[0].Content.(mcp.TextContent); !ok || !strings.Contains(text.Text, `"name":"Ada"`) {
				t.Errorf("prompts/get: %#v, want the client's answer in it", res.Messages[0].Content)
			}
			a.mu.Lock()
			asked := strings.Join(a.asked, ", ")
			a.mu.Unlock()
			if asked != "elicitation: Your name?" {
				t.Errorf("the client was asked %q", asked)
			}
		})
	}
	t.Run("a tool's state", func(t *testing.T) {
		t.Parallel()
		p := newPrimRig(t, Options{})
		if _, err := p.pr.Register(p.f, asking); err != nil {
			t.Fatal(err)
		}
		p.register(tools.Tool{
			Name: "ask_name", Description: "Ask a yes.", Parameters: json.RawMessage(`{"type":"object"}`),
			Execute: func(ctx context.Context, _ json.RawMessage) (tools.Result, error) {
				a, err := tools.Ask(ctx, tools.Question{ID: "who", Method: tools.MethodElicit, Params: json.RawMessage(`{"message":"Sure?","requestedSchema":{"type":"object","properties":{"ok":{"type":"boolean"}}}}`)})
				return tools.Result{Text: string(a)}, err
			},
		})
		p.waitServed("the prompt to be served", func() bool { return len(p.gw.mcp.ListPrompts()) == 1 })
		url := p.serveHTTP(HTTPOptions{}, "").URL()
		_, first := modernCall(t, url, "ask_name", "", `{"elicitation":{}}`)
		result, _ := first["result"].(map[string]any)
		state, _ := result["requestState"].(string)
		if state == "" {
			t.Fatalf("the tool's first answer %v: want input_required with a requestState", first)
		}
		meta := `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"t","version":"0"},"io.modelcontextprotocol/clientCapabilities":{"elicitation":{}}}`
		body := `{"jsonrpc":"2.0","id":8,"method":"prompts/get","params":{"name":"ask_name",` + meta + `,"inputResponses":{"who":{"action":"accept","content":{"name":"Ada"}}},"requestState":` + mustJSON(state) + `}}`
		status, out := mcptest.Post(t, url, "", strings.NewReader(body), map[string]string{
			"MCP-Protocol-Version": "2026-07-28", "Mcp-Method": "prompts/get", "Mcp-Name": "ask_name",
		})
		if status != http.StatusBadRequest || !strings.Contains(out, `-32602`) || !strings.Contains(out, `tool \"ask_name\"`) {
			t.Errorf("a prompts/get with a tool's state: HTTP %d %s; want 400, -32602 naming the tool", status, out)
		}
	})
}

// A 2026-07-28 client's subscriptions/listen with resourceSubscriptions
// subscribes through the registry (the revision has no resources/subscribe):
// the acknowledgement names the URIs established (not one nobody serves),
// the server's update comes on the stream under the URI listened for,
// tagged with the stream's subscriptionId, and the end of the stream
// releases the subscription; over stdio and HTTP, with mcp-go's client.
func TestListenForResourceUpdates(t *testing.T) {
	t.Parallel()
	for _, overHTTP := range []bool{false, true} {
		t.Run(fmt.Sprint("http=", overHTTP), func(t *testing.T) {
			t.Parallel()
			p := newPrimRig(t, Options{})
			subscribed, unsubscribed := make(chan string, 4), make(chan string, 4)
			src := p.source("a", []string{"test://one", "test://two"})
			src.Subscribe = func(_ context.Context, uri string) error { subscribed <- uri; return nil }
			src.Unsubscribe = func(_ context.Context, uri string) error { unsubscribed <- uri; return nil }
			set := p.registerSource(src)
			ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
			defer cancel()
			cl := connect(t, ctx, transportFor(t, p.rig, overHTTP), false)
			acks, updates := make(chan mcp.JSONRPCNotification, 4), make(chan mcp.JSONRPCNotification, 4)
			cl.OnNotification(func(n mcp.JSONRPCNotification) {
				switch n.Method {
				case string(mcp.MethodNotificationSubscriptionsAcknowledged):
					acks <- n
				case string(mcp.MethodNotificationResourceUpdated):
					updates <- n
				}
			})
			stop, err := cl.ListenAsync(ctx, mcp.SubscriptionFilter{ResourceSubscriptions: []string{"test://one", "test://nope"}}, func(err error) { t.Errorf("listen: %v", err) })
			if err != nil {
				t.Fatal(err)
			}
			var ack mcp.JSONRPCNotification
			select {
			case ack = <-acks:
			case <-ctx.Done():
				t.Fatal("no subscriptions/acknowledged")
			}
			if got, _ := json.Marshal(ack.Params.AdditionalFields["notifications"]); string(got) != `{"resourceSubscriptions":["test://one"]}` {
				t.Errorf("acknowledged %s, want test://one only", got)
			}
			if uri := <-subscribed; uri != "test://one" {
				t.Errorf("the server was asked to subscribe %q", uri)
			}
			set.Updated("test://two") // not listened for
			set.Updated("test://one")
			select {
			case n := <-updates:
				if n.Params.AdditionalFields["uri"] != "test://one" || n.Params.Meta[mcp.MetaKeySubscriptionID] == nil {
					t.Errorf("resources/updated %+v: want test://one with a subscriptionId", n.Params)
				}
			case <-ctx.Done():
				t.Fatal("no resources/updated on the listen stream")
			}
			stop()
			select {
			case uri := <-unsubscribed:
				if uri != "test://one" {
					t.Errorf("unsubscribed %q", uri)
				}
			case <-ctx.Done():
				t.Fatal("the end of the stream did not release the subscription")
			}
			if n := p.gw.subscriptionCount(); n != 0 {
				t.Errorf("%d subscriptions left", n)
			}
			select {
			case n := <-updates:
				t.Errorf("an update not listened for: %+v", n.Params)
			default:
			}
		})
	}
}
