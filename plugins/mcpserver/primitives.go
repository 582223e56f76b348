package mcpserver

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"strings"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/harness-go/harness/internal/safe"
	"github.com/harness-go/harness/plugins/prompts"
	"github.com/harness-go/harness/plugins/resources"
	"github.com/harness-go/harness/plugins/tools"
)

// The gateway serves the resources and prompts registries beside the
// tools (docs/rfc/0008-resources-prompts.md, "Through the gateway"), the
// way it serves tools: the served lists are snapshots rebuilt with the
// tools' (coalesced) and handed to mcp-go only when their hash differs,
// each replacement one list_changed.
//
//  1. Resources. Every server's resources and templates, the objects as
//     the server listed them. A URI one server serves passes unchanged; a
//     later server (in server-name order) with the same URI is served as
//     harness://<serverName>/<percent-escaped URI>, read back by
//     unescaping. A template keeps its uriTemplate by the same rule, the
//     literal parts escaped and the {…} variables kept.
//  2. Reads go to the server that listed the resource (or the template the
//     URI expands), and the contents pass as the server sent them. A URI no
//     listing names, or one the server says does not exist, is -32602 with
//     data.uri (the 2026-07-28 rule, which the gateway answers on every
//     revision).
//  3. Prompts under their public names (mcp__<server>__<prompt>), rendered
//     by their server; the messages pass as the server sent them.
//  4. --tools meta changes tools only: resources and prompts are served as
//     they are.

// harnessScheme is the scheme of the URIs the gateway gives a resource
// whose URI an earlier server serves already.
const harnessScheme = "harness://"

// prefixedURI is the URI under which server's uri is served when an
// earlier server serves uri.
func prefixedURI(server, uri string) string {
	return harnessScheme + url.PathEscape(server) + "/" + url.PathEscape(uri)
}

// prefixedTemplate is prefixedURI for a uriTemplate: the literal parts are
// escaped, the {…} expressions kept as they are.
func prefixedTemplate(server, tpl string) string {
	var b strings.Builder
	b.WriteString(harnessScheme + url.PathEscape(server) + "/")
	for tpl != "" {
		i := strings.IndexByte(tpl, '{')
		if i < 0 {
			b.WriteString(url.PathEscape(tpl))
			break
		}
		j := strings.IndexByte(tpl[i:], '}')
		if j < 0 {
			b.WriteString(url.PathEscape(tpl))
			break
		}
		b.WriteString(url.PathEscape(tpl[:i]))
		b.WriteString(tpl[i : i+j+1])
		tpl = tpl[i+j+1:]
	}
	return b.String()
}

// unprefixURI returns the server's own URI for uri, served under server's
// harness:// prefix; ok is false when uri does not have that prefix.
func unprefixURI(server, uri string) (string, bool) {
	rest, ok := strings.CutPrefix(uri, harnessScheme+url.PathEscape(server)+"/")
	if !ok {
		return "", false
	}
	orig, err := url.PathUnescape(rest)
	if err != nil {
		return "", false
	}
	return orig, true
}

// hashResources identifies what a client sees of the resources registry:
// every server's resources and templates, as listed.
func hashResources(all []resources.Resource, tpls []resources.Template) (res, tmpl [32]byte) {
	h := sha256.New()
	for _, r := range all {
		for _, part := range []string{r.Server, r.URI, string(r.JSON())} {
			fmt.Fprintf(h, "%d:%s", len(part), part)
		}
	}
	res = [32]byte(h.Sum(nil))
	h.Reset()
	for _, t := range tpls {
		for _, part := range []string{t.Server, t.URITemplate, string(t.JSON())} {
			fmt.Fprintf(h, "%d:%s", len(part), part)
		}
	}
	tmpl = [32]byte(h.Sum(nil))
	return res, tmpl
}

// hashPrompts identifies what a client sees of the prompts registry.
func hashPrompts(all []prompts.Prompt) [32]byte {
	h := sha256.New()
	for _, p := range all {
		for _, part := range []string{p.Name, string(p.JSON())} {
			fmt.Fprintf(h, "%d:%s", len(part), part)
		}
	}
	return [32]byte(h.Sum(nil))
}

// publishPrimitives hands mcp-go the served resources, templates and
// prompts whose hash changed; mcp-go sends the list_changed of each.
func (g *Gateway) publishPrimitives() {
	replaced := false
	defer func() {
		if replaced {
			// Waiters on the served lists look again (as at a tools publish).
			g.mu.Lock()
			close(g.changed)
			g.changed = make(chan struct{})
			g.mu.Unlock()
		}
	}()
	if reg := g.opts.Resources; reg != nil {
		all, tpls := reg.List(""), reg.Templates("")
		rsum, tsum := hashResources(all, tpls)
		g.pmu.Lock()
		if !g.resHashed || rsum != g.resHash {
			g.resHash, g.resHashed, replaced = rsum, true, true
			list := g.servedResources(all)
			g.resPublishes++
			g.mcp.SetResources(list...)
			g.log.Debug("served resource list replaced", "resources", len(list))
		}
		if !g.tplHashed || tsum != g.tplHash {
			g.tplHash, g.tplHashed, replaced = tsum, true, true
			list := g.servedTemplates(tpls)
			g.resPublishes++
			g.mcp.SetResourceTemplates(list...)
			g.log.Debug("served resource template list replaced", "templates", len(list))
		}
		g.pmu.Unlock()
	}
	if reg := g.opts.Prompts; reg != nil {
		all := reg.List()
		sum := hashPrompts(all)
		g.pmu.Lock()
		if !g.promptHashed || sum != g.promptHash {
			g.promptHash, g.promptHashed, replaced = sum, true, true
			list := g.servedPrompts(all)
			g.promptPublishes++
			g.mcp.SetPrompts(list...)
			g.log.Debug("served prompt list replaced", "prompts", len(list))
		}
		g.pmu.Unlock()
	}
}

// uriOwner is the server of a served URI, and its own URI there.
type uriOwner struct{ server, uri string }

// servedTemplate is a served template: its server, the server's own
// uriTemplate and the one served.
type servedTemplate struct {
	server, orig, served string
	prefixed             bool
	tpl                  *mcp.URITemplate
}

// servedResources builds the served resources: the first server (in
// server-name order) with a URI keeps it, later ones are prefixed. g.pmu
// is held: it records the routes (g.uris).
func (g *Gateway) servedResources(all []resources.Resource) []server.ServerResource {
	uris := make(map[string]uriOwner, len(all))
	defer func() { g.uris = uris }()
	owner := make(map[string]string, len(all)) // served URI → server
	list := make([]server.ServerResource, 0, len(all))
	for _, r := range all {
		served := r.URI
		if _, taken := owner[served]; taken {
			served = prefixedURI(r.Server, r.URI)
		}
		if _, taken := owner[served]; taken {
			continue // a server's own URI that looks like a prefixed one: the first keeps it
		}
		owner[served] = r.Server
		uris[served] = uriOwner{r.Server, r.URI}
		mr := mcp.Resource{URI: r.URI, Name: r.Name, Title: r.Title, Description: r.Description, MIMEType: r.MIMEType, Size: r.Size}
		if len(r.Definition) > 0 {
			var d mcp.Resource
			if json.Unmarshal(r.Definition, &d) == nil {
				mr = d
			}
		} else if len(r.Annotations) > 0 {
			_ = json.Unmarshal(r.Annotations, &mr.Annotations)
		}
		mr.URI = served
		list = append(list, server.ServerResource{Resource: mr, Handler: g.readHandler(r.Server, r.URI)})
	}
	return list
}

// servedTemplates builds the served templates by the rule of resources.
// g.pmu is held: it records them (g.tpls).
func (g *Gateway) servedTemplates(all []resources.Template) []server.ServerResourceTemplate {
	taken := make(map[string]bool, len(all))
	var routes []servedTemplate
	defer func() { g.tpls = routes }()
	list := make([]server.ServerResourceTemplate, 0, len(all))
	for _, t := range all {
		served, prefixed := t.URITemplate, false
		if taken[served] {
			served, prefixed = prefixedTemplate(t.Server, t.URITemplate), true
		}
		if taken[served] {
			continue
		}
		tpl, err := uriTemplate(served)
		if err != nil {
			g.log.Warn("a resource template is not served: its uriTemplate does not parse", "server", safe.Line(t.Server), "uriTemplate", safe.Line(t.URITemplate))
			continue
		}
		taken[served] = true
		routes = append(routes, servedTemplate{server: t.Server, orig: t.URITemplate, served: served, prefixed: prefixed, tpl: tpl})
		mt := mcp.ResourceTemplate{Name: t.Name, Title: t.Title, Description: t.Description, MIMEType: t.MIMEType}
		if len(t.Definition) > 0 {
			var d mcp.ResourceTemplate
			if json.Unmarshal(t.Definition, &d) == nil {
				mt = d
			}
		}
		mt.URITemplate = tpl
		srv := t.Server
		handler := func(ctx context.Context, req mcp.ReadResourceRequest) ([]mcp.ResourceContents, error) {
			uri := req.Params.URI
			if prefixed {
				orig, ok := unprefixURI(srv, uri)
				if !ok {
					return nil, g.notFound(ctx, uri)
				}
				return g.read(ctx, srv, orig, uri)
			}
			return g.read(ctx, srv, uri, uri)
		}
		list = append(list, server.ServerResourceTemplate{Template: mt, Handler: handler})
	}
	return list
}

// uriTemplate parses an RFC 6570 template as mcp-go does.
func uriTemplate(s string) (*mcp.URITemplate, error) {
	b, err := json.Marshal(s)
	if err != nil {
		return nil, err
	}
	t := &mcp.URITemplate{}
	if err := t.UnmarshalJSON(b); err != nil {
		return nil, err
	}
	return t, nil
}

// readHandler reads server's uri.
func (g *Gateway) readHandler(srv, uri string) server.ResourceHandlerFunc {
	return func(ctx context.Context, req mcp.ReadResourceRequest) ([]mcp.ResourceContents, error) {
		return g.read(ctx, srv, uri, req.Params.URI)
	}
}

// read reads srv's uri for a client that asked for served; the contents
// pass as the server sent them.
func (g *Gateway) read(ctx context.Context, srv, uri, served string) ([]mcp.ResourceContents, error) {
	res, err := g.opts.Resources.Read(ctx, srv, uri)
	if err != nil {
		if errors.Is(err, resources.ErrUnknownServer) || errors.Is(err, mcp.ErrResourceNotFound) || errors.Is(err, mcp.ErrInvalidParams) {
			return nil, g.notFound(ctx, served)
		}
		return nil, fmt.Errorf("resources/read %s of %s: %w", safe.Line(uri), safe.Line(srv), err)
	}
	if len(res.Raw) > 0 {
		var r struct {
			Contents []json.RawMessage `json:"contents"`
		}
		if json.Unmarshal(res.Raw, &r) == nil {
			out := make([]mcp.ResourceContents, len(r.Contents))
			for i, c := range r.Contents {
				out[i] = rawContents{raw: c}
			}
			return out, nil
		}
	}
	out := make([]mcp.ResourceContents, len(res.Contents))
	for i, c := range res.Contents {
		if c.IsText() {
			out[i] = mcp.TextResourceContents{URI: c.URI, MIMEType: c.MIMEType, Text: *c.Text}
		} else {
			out[i] = mcp.BlobResourceContents{URI: c.URI, MIMEType: c.MIMEType, Blob: c.Blob}
		}
	}
	return out, nil
}

// notFound records the error of a read of a URI that does not exist:
// -32602 with the URI in data.uri (over HTTP, with status 400 on
// 2026-07-28 only: earlier revisions answer errors with 200).
func (g *Gateway) notFound(ctx context.Context, uri string) error {
	if o := outcomeOf(ctx); o != nil && !mcp.IsModernProtocol(server.RequestProtocolVersion(ctx)) {
		o.keepStatus.Store(true) // HTTP 400 for -32602 is the 2026-07-28 rule
	}
	return g.fail(ctx, mcp.INVALID_PARAMS, "resource not found: "+uri, map[string]any{"uri": uri})
}

// rawContents is one content of a read result, encoded as the server sent
// it. It satisfies mcp.ResourceContents through the embedded
// TextResourceContents, whose fields it never uses.
type rawContents struct {
	mcp.TextResourceContents
	raw json.RawMessage
}

// MarshalJSON writes the content as it came.
func (c rawContents) MarshalJSON() ([]byte, error) { return c.raw, nil }

var _ mcp.ResourceContents = rawContents{}

// servedPrompts builds the served prompts: the server's objects under
// their public names.
func (g *Gateway) servedPrompts(all []prompts.Prompt) []server.ServerPrompt {
	list := make([]server.ServerPrompt, 0, len(all))
	for _, p := range all {
		mp := mcp.Prompt{Title: p.Title, Description: p.Description}
		for _, a := range p.Arguments {
			mp.Arguments = append(mp.Arguments, mcp.PromptArgument{Name: a.Name, Title: a.Title, Description: a.Description, Required: a.Required})
		}
		if len(p.Definition) > 0 {
			var d mcp.Prompt
			if json.Unmarshal(p.Definition, &d) == nil {
				mp = d
			}
		}
		mp.Name = p.Name
		list = append(list, server.ServerPrompt{Prompt: mp, Handler: g.promptHandler(p.Name)})
	}
	return list
}

// promptHandler renders the prompt served under name, with the gateway as
// the rendering's front, as for a tools/call (relay.go): what the prompt
// asks (a native prompt through tools.Ask, a server's prompt with its
// server's questions) goes to a client of the session era as a request, and
// to a 2026-07-28 client as an input_required result, the rendering parked
// until the client's retry (mrtr.go).
func (g *Gateway) promptHandler(name string) server.PromptHandlerFunc {
	return func(ctx context.Context, req mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
		args := req.Params.Arguments
		var token mcp.ProgressToken
		if req.Params.Meta != nil {
			token = req.Params.Meta.ProgressToken
		}
		if !server.IsModernRequest(ctx) {
			f := &relay{g: g, req: ctx, token: token, caps: sessionCapabilities(ctx)}
			res, err := g.opts.Prompts.Get(tools.WithFront(ctx, f), name, args)
			return g.promptAnswer(ctx, name, args, res, err)
		}
		run := func(ctx context.Context) any {
			res, err := g.opts.Prompts.Get(ctx, name, args)
			return promptOutcome{res, err}
		}
		p, err := g.resumeOrStart(ctx, promptSubject(name), req.Params.MultiRoundTripParams, token, run)
		if err != nil {
			return nil, err
		}
		more, err := g.await(ctx, p)
		if err != nil {
			return nil, err
		}
		if more != nil {
			return &mcp.GetPromptResult{
				Result:               mcp.Result{ResultType: mcp.ResultTypeInputRequired},
				MultiRoundTripResult: *more,
				Messages:             []mcp.PromptMessage{},
			}, nil
		}
		out := p.result.(promptOutcome)
		if err := g.missingCapability(ctx, p, out.err != nil); err != nil {
			return nil, err
		}
		return g.promptAnswer(ctx, name, args, out.res, out.err)
	}
}

// promptOutcome is what a parked prompts/get returned.
type promptOutcome struct {
	res prompts.Result
	err error
}

// promptAnswer is the answer to a prompts/get of name: the result, or
// -32602 for a prompt that is gone or an argument missing.
func (g *Gateway) promptAnswer(ctx context.Context, name string, args map[string]string, res prompts.Result, err error) (*mcp.GetPromptResult, error) {
	if err != nil {
		if p, ok := g.opts.Prompts.Lookup(name); !ok || missingArgument(p, args) {
			return nil, g.fail(ctx, mcp.INVALID_PARAMS, err.Error(), nil)
		}
		return nil, err
	}
	return promptResult(res), nil
}

// missingArgument reports whether args lacks a required argument of p.
func missingArgument(p prompts.Prompt, args map[string]string) bool {
	for _, a := range p.Arguments {
		if _, given := args[a.Name]; a.Required && !given {
			return true
		}
	}
	return false
}

// promptResult is the GetPromptResult for res: the server's own when there
// is one, each message's content as it came.
func promptResult(res prompts.Result) *mcp.GetPromptResult {
	var r struct {
		Description string    `json:"description"`
		Meta        *mcp.Meta `json:"_meta"`
		Messages    []struct {
			Role    mcp.Role        `json:"role"`
			Content json.RawMessage `json:"content"`
		} `json:"messages"`
	}
	out := &mcp.GetPromptResult{Description: res.Description, Messages: []mcp.PromptMessage{}}
	if len(res.Raw) > 0 && json.Unmarshal(res.Raw, &r) == nil {
		out.Description, out.Meta = r.Description, r.Meta
		for _, m := range r.Messages {
			out.Messages = append(out.Messages, mcp.PromptMessage{Role: m.Role, Content: rawBlock{raw: m.Content}})
		}
		return out
	}
	for _, m := range res.Messages {
		out.Messages = append(out.Messages, mcp.PromptMessage{Role: mcp.Role(m.Role), Content: rawBlock{raw: m.Content}})
	}
	return out
}

// primitivesChanged returns the channels closed at the next change of the
// resources and prompts registries; nil (never ready) for one not served.
func (g *Gateway) primitivesChanged() (res, prm <-chan struct{}) {
	if g.opts.Resources != nil {
		res = g.opts.Resources.Changed()
	}
	if g.opts.Prompts != nil {
		prm = g.opts.Prompts.Changed()
	}
	return res, prm
}
