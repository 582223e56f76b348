package mcpclient

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sort"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/harness-go/harness/plugins/prompts"
	"github.com/harness-go/harness/plugins/resources"
)

// Resources and prompts, bridged the way tools are
// (docs/rfc/0008-resources-prompts.md): listed with the tools at every
// connection, re-listed on their list_changed, registered on the resources
// and prompts services in one step each, staged for TakeOver, and dropped
// with the tools. A listing of either that fails keeps the previous one.

// listKind says what a re-sync lists: a set of bits.
type listKind uint32

const (
	listTools listKind = 1 << iota
	listResources
	listPrompts
	listAll = listTools | listResources | listPrompts
)

// extras is one listing of a server's resources and prompts. A nil part
// was not listed (not offered, turned off, or its listing failed): what is
// registered stays.
type extras struct {
	res     *resources.Source
	prompts []prompts.Prompt
	// promptsListed says prompts holds a listing (possibly empty).
	promptsListed bool
	resDigest     [sha256.Size]byte
	promptDigest  [sha256.Size]byte
}

// merge lays newer parts over x.
func (x *extras) merge(n *extras) {
	if n.res != nil {
		x.res, x.resDigest = n.res, n.resDigest
	}
	if n.promptsListed {
		x.prompts, x.promptsListed, x.promptDigest = n.prompts, true, n.promptDigest
	}
}

// wantsResources reports whether resources are bridged for caps: the
// entry's resources key, else what the server declares.
func (c *Config) wantsResources(caps mcp.ServerCapabilities) bool {
	if c.Resources != nil {
		return *c.Resources
	}
	return caps.Resources != nil
}

func (c *Config) wantsPrompts(caps mcp.ServerCapabilities) bool {
	if c.Prompts != nil {
		return *c.Prompts
	}
	return caps.Prompts != nil
}

// listExtras lists what of `what` the server offers and the entry bridges.
// A part whose listing fails is left out of the result (nil), and said in
// the log: the previous listing stays. A listing cut short because the
// entry stops (ctx canceled, not timed out) is no failure: it is said at
// debug only, and what is left is not asked for.
func (s *supervisor) listExtras(ctx context.Context, sess *session, what listKind) *extras {
	cfg := s.config()
	caps := sess.capabilities()
	x := &extras{}
	if what&listResources != 0 && cfg.wantsResources(caps) {
		res, tpl, err := sess.listResources(ctx)
		if err != nil {
			s.listFailed(ctx, "listing the resources failed; the previous ones stay", err)
		} else {
			x.res = s.resourceSource(res, tpl, caps)
			x.resDigest = digestResources(res, tpl)
		}
	}
	if what&listPrompts != 0 && cfg.wantsPrompts(caps) && !errors.Is(ctx.Err(), context.Canceled) {
		list, err := sess.listPrompts(ctx)
		if err == nil {
			x.prompts, err = s.promptBatch(list)
		}
		if err != nil {
			s.listFailed(ctx, "listing the prompts failed; the previous ones stay", err)
		} else {
			x.promptsListed = true
			x.promptDigest = digestPrompts(list)
		}
	}
	return x
}

// listFailed logs a failed listing: at warn, or at debug when the entry
// stopping cut it short.
func (s *supervisor) listFailed(ctx context.Context, msg string, err error) {
	level := slog.LevelWarn
	if errors.Is(ctx.Err(), context.Canceled) {
		level = slog.LevelDebug
	}
	s.log.Log(context.WithoutCancel(ctx), level, msg, "err", s.secrets.Err(err))
}

// syncExtras registers x in place of what is registered, or stages it for
// TakeOver (rule 2), under syncMu like a tools swap.
func (s *supervisor) syncExtras(x *extras) {
	s.syncMu.Lock()
	defer s.syncMu.Unlock()
	s.mu.Lock()
	staging, retired := s.pred != nil, s.successor != nil
	if staging {
		if s.stagedX == nil {
			s.stagedX = &extras{}
		}
		s.stagedX.merge(x)
	}
	s.mu.Unlock()
	if staging || retired {
		return
	}
	s.swapExtrasLocked(nil, x)
}

// swapExtrasLocked registers x's parts in place of pred's (a TakeOver) or
// of our own (pred nil), each in one step; syncMu is held.
func (s *supervisor) swapExtrasLocked(pred *supervisor, x *extras) {
	from := s
	if pred != nil {
		from = pred
	}
	from.mu.Lock()
	oldRes, oldPrompts := from.resSet, from.promptSet
	oldResDigest, oldPromptDigest := from.resDigest, from.promptDigest
	if pred != nil {
		pred.resSet, pred.promptSet = nil, nil
	}
	from.mu.Unlock()
	fib := s.ctx.Fiber()
	if x.res != nil && (pred != nil || oldRes == nil || oldResDigest != x.resDigest) {
		set, err := s.resReg.Replace(fib, oldRes, *x.res)
		if err != nil {
			s.log.Error("resource registration failed, no resources registered", "err", err)
		} else {
			s.log.Info("resources registered", "resources", len(x.res.Resources), "templates", len(x.res.Templates))
		}
		s.mu.Lock()
		s.resSet, s.resDigest = set, x.resDigest
		s.mu.Unlock()
		if set != nil && pred != nil {
			_ = s.ctx.Go("subscribe anew", func(ctx context.Context) { s.resubscribe(ctx, nil) }) // the predecessor's subscriptions, on our connection
		}
	} else if pred != nil && oldRes != nil {
		_ = oldRes.Release(context.Background()) // the new instance does not bridge them
	}
	if x.promptsListed && (pred != nil || oldPrompts == nil || oldPromptDigest != x.promptDigest) {
		set, err := s.promptReg.Replace(fib, oldPrompts, x.prompts...)
		if err != nil {
			s.log.Error("prompt registration failed, no prompts registered", "err", err)
		} else {
			s.log.Info("prompts registered", "count", len(x.prompts))
		}
		s.mu.Lock()
		s.promptSet, s.promptDigest = set, x.promptDigest
		s.mu.Unlock()
	} else if pred != nil && oldPrompts != nil {
		_ = oldPrompts.Release(context.Background())
	}
}

// dropExtras unregisters the resources and prompts at once; syncMu is held.
func (s *supervisor) dropExtrasLocked() {
	s.mu.Lock()
	res, pr := s.resSet, s.promptSet
	s.resSet, s.promptSet = nil, nil
	s.mu.Unlock()
	if res != nil {
		_ = res.Release(context.Background())
	}
	if pr != nil {
		_ = pr.Release(context.Background())
	}
}

// resourceSource is the registration of a listing: reads and
// subscriptions go through whichever connection is current.
func (s *supervisor) resourceSource(res []resources.Resource, tpl []resources.Template, caps mcp.ServerCapabilities) *resources.Source {
	src := &resources.Source{
		Server:    s.server,
		Resources: res,
		Templates: tpl,
		Read:      s.readResource,
	}
	if caps.Resources != nil && caps.Resources.Subscribe {
		src.Subscribe, src.Unsubscribe = s.subscribe, s.unsubscribe
	}
	if caps.Completions != nil {
		src.Complete = s.complete
	}
	return src
}

// promptBatch turns a prompt listing into a registration; a name twice is
// an invalid listing (as for tools).
func (s *supervisor) promptBatch(list []rawPrompt) ([]prompts.Prompt, error) {
	seen := map[string]bool{}
	byPublic := map[string]string{}
	out := make([]prompts.Prompt, 0, len(list))
	for _, p := range list {
		if p.Name == "" {
			return nil, errors.New("invalid prompt list: the server listed a prompt without a name")
		}
		if seen[p.Name] {
			return nil, fmt.Errorf("invalid prompt list: the server listed prompt %q more than once", p.Name)
		}
		seen[p.Name] = true
		public := prompts.PublicName(s.server, p.Name)
		if other, dup := byPublic[public]; dup {
			return nil, fmt.Errorf("invalid prompt list: the server listed prompts %q and %q, which both become %q", other, p.Name, public)
		}
		byPublic[public] = p.Name
		raw := p.Name
		pr := prompts.Prompt{
			Server: s.server, RawName: raw, Title: p.Title, Description: p.Description,
			Arguments: p.Arguments, Definition: p.Definition,
			Get: func(ctx context.Context, args map[string]string) (prompts.Result, error) {
				return s.getPrompt(ctx, raw, args)
			},
		}
		if s.caps().Completions != nil {
			pr.Complete = s.complete
		}
		out = append(out, pr)
	}
	return out, nil
}

// caps returns the capabilities of the latest session.
func (s *supervisor) caps() mcp.ServerCapabilities {
	s.mu.Lock()
	sess := s.last
	s.mu.Unlock()
	if sess == nil {
		return mcp.ServerCapabilities{}
	}
	return sess.capabilities()
}

func digestResources(res []resources.Resource, tpl []resources.Template) [sha256.Size]byte {
	h := sha256.New()
	for _, r := range res {
		fmt.Fprintf(h, "r %d:", len(r.Definition))
		h.Write(r.Definition)
	}
	for _, t := range tpl {
		fmt.Fprintf(h, "t %d:", len(t.Definition))
		h.Write(t.Definition)
	}
	return [sha256.Size]byte(h.Sum(nil))
}

func digestPrompts(list []rawPrompt) [sha256.Size]byte {
	h := sha256.New()
	for _, p := range list {
		fmt.Fprintf(h, "%d:", len(p.Definition))
		h.Write(p.Definition)
	}
	return [sha256.Size]byte(h.Sum(nil))
}

// onSession runs fn with the current session, as a call does (rule 5):
// waiting for one up to ctx, and moving to the next connection what never
// reached the server.
func (s *supervisor) onSession(ctx context.Context, what string, fn func(*session) error) error {
	timeout := s.config().toolCallTimeout()
	cctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	for {
		owner, sess, err := s.session(cctx)
		if err == nil {
			err = fn(sess)
			owner.callDone()
			if err == nil {
				return nil
			}
			if notSent(err) && !errors.Is(err, errSessionGone) && cctx.Err() == nil {
				continue
			}
		}
		switch {
		case ctx.Err() != nil:
			return fmt.Errorf("%s was cancelled", what)
		case errors.Is(cctx.Err(), context.DeadlineExceeded):
			if o := owner.outage(); o != "" {
				return errors.New(o)
			}
			return fmt.Errorf("%s timed out after %s (toolCallTimeoutMs)", what, timeout)
		}
		var lost *ConnectionLostError
		if errors.As(err, &lost) {
			err = fmt.Errorf("connection lost during %s: %s", what, lost.Reason)
		}
		return s.secrets.Err(err)
	}
}

func (s *supervisor) readResource(ctx context.Context, uri string) (resources.ReadResult, error) {
	var out resources.ReadResult
	err := s.onSession(ctx, "resources/read", func(sess *session) error {
		raw, err := sess.request(ctx, string(mcp.MethodResourcesRead), map[string]any{"uri": uri})
		if err != nil {
			return err
		}
		var res struct {
			Contents []resources.Content `json:"contents"`
		}
		if err := json.Unmarshal(raw, &res); err != nil {
			return fmt.Errorf("resources/read: the result is not a read result: %w", err)
		}
		out = resources.ReadResult{Contents: res.Contents, Raw: raw}
		return nil
	})
	return out, err
}

func (s *supervisor) getPrompt(ctx context.Context, name string, args map[string]string) (prompts.Result, error) {
	var out prompts.Result
	err := s.onSession(ctx, "prompts/get", func(sess *session) error {
		raw, err := sess.request(ctx, string(mcp.MethodPromptsGet), map[string]any{"name": name, "arguments": args})
		if err != nil {
			return err
		}
		if err := json.Unmarshal(raw, &out); err != nil {
			return fmt.Errorf("prompts/get: the result is not a prompt: %w", err)
		}
		out.Raw = raw
		return nil
	})
	return out, err
}

// complete relays completion/complete; a prompt's ref is named by its
// public name in params and renamed to the server's own here.
func (s *supervisor) complete(ctx context.Context, params json.RawMessage) (json.RawMessage, error) {
	var p map[string]json.RawMessage
	if err := json.Unmarshal(params, &p); err != nil {
		return nil, fmt.Errorf("completion/complete: the params are not an object: %w", err)
	}
	var ref map[string]any
	if err := json.Unmarshal(p["ref"], &ref); err == nil && ref["type"] == "ref/prompt" {
		if name, _ := ref["name"].(string); name != "" {
			if pr, ok := s.promptReg.Lookup(name); ok && pr.Server == s.server {
				ref["name"] = pr.RawName
				p["ref"] = mustJSON(ref)
			}
		}
	}
	delete(p, "_meta")
	var out json.RawMessage
	err := s.onSession(ctx, "completion/complete", func(sess *session) error {
		raw, err := sess.request(ctx, string(mcp.MethodCompletionComplete), p)
		out = raw
		return err
	})
	return out, err
}

// subscribe asks the server to tell of changes of uri: resources/subscribe
// in the handshake era, the subscriptions/listen filter on 2026-07-28. The
// uri is remembered, so a new connection subscribes anew.
func (s *supervisor) subscribe(ctx context.Context, uri string) error {
	s.mu.Lock()
	if s.subs == nil {
		s.subs = map[string]bool{}
	}
	s.subs[uri] = true
	s.mu.Unlock()
	err := s.onSession(ctx, "resources/subscribe", func(sess *session) error { return sess.subscribe(ctx, uri, true) })
	if err != nil {
		s.mu.Lock()
		delete(s.subs, uri)
		s.mu.Unlock()
	}
	return err
}

func (s *supervisor) unsubscribe(ctx context.Context, uri string) error {
	s.mu.Lock()
	delete(s.subs, uri)
	s.mu.Unlock()
	return s.onSession(ctx, "resources/unsubscribe", func(sess *session) error { return sess.subscribe(ctx, uri, false) })
}

// subscriptions returns the uris subscribed to, sorted.
func (s *supervisor) subscriptions() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]string, 0, len(s.subs))
	for u := range s.subs {
		out = append(out, u)
	}
	slices.Sort(out)
	return out
}

// resubscribe subscribes sess (nil: the current session) to what the
// registry's subscribers wait for: after a reconnect, or a TakeOver.
func (s *supervisor) resubscribe(ctx context.Context, sess *session) {
	uris := s.resReg.Subscribed(s.server)
	if len(uris) == 0 {
		return
	}
	s.mu.Lock()
	if s.subs == nil {
		s.subs = map[string]bool{}
	}
	for _, u := range uris {
		s.subs[u] = true
	}
	s.mu.Unlock()
	for _, u := range uris {
		var err error
		if sess != nil {
			err = sess.subscribe(ctx, u, true)
		} else {
			err = s.onSession(ctx, "resources/subscribe", func(sess *session) error { return sess.subscribe(ctx, u, true) })
		}
		if err != nil && ctx.Err() == nil {
			s.log.Warn("subscribing again failed", "uri", u, "err", s.secrets.Err(err))
		}
	}
}

// updated hands notifications/resources/updated to the subscribers.
func (s *supervisor) updated(uri string) {
	s.mu.Lock()
	set := s.resSet
	s.mu.Unlock()
	if set != nil {
		set.Updated(uri)
	}
}

// rawPrompt is one prompt as listed.
type rawPrompt struct {
	Name        string             `json:"name"`
	Title       string             `json:"title"`
	Description string             `json:"description"`
	Arguments   []prompts.Argument `json:"arguments"`
	Definition  json.RawMessage    `json:"-"`
}

// listPages reads every page of a list method, handing each item of
// result[key] to each.
func (s *session) listPages(ctx context.Context, method, key string, each func(json.RawMessage) error) error {
	seen := map[string]bool{}
	cursor := ""
	for page := 0; ; page++ {
		if page == maxPages {
			return fmt.Errorf("%s: more than %d pages", method, maxPages)
		}
		params := map[string]any{}
		if cursor != "" {
			params["cursor"] = cursor
		}
		raw, err := s.request(ctx, method, params)
		if err != nil {
			return fmt.Errorf("%s: %w", method, err)
		}
		var res map[string]json.RawMessage
		if err := json.Unmarshal(raw, &res); err != nil {
			return fmt.Errorf("%s: the result is not an object: %w", method, err)
		}
		var items []json.RawMessage
		if v, ok := res[key]; ok && string(v) != "null" {
			if err := json.Unmarshal(v, &items); err != nil {
				return fmt.Errorf("%s: %s is not a list: %w", method, key, err)
			}
		}
		for i, it := range items {
			if err := each(it); err != nil {
				return fmt.Errorf("%s: item %d of page %d: %w", method, i, page+1, err)
			}
		}
		var next string
		if v, ok := res["nextCursor"]; ok {
			_ = json.Unmarshal(v, &next)
		}
		if next == "" {
			return nil
		}
		if seen[next] {
			return fmt.Errorf("%s: the server repeated cursor %q", method, next)
		}
		seen[next] = true
		cursor = next
	}
}

// listResources reads every page of resources/list and of
// resources/templates/list (a server that does not know the latter has no
// templates).
func (s *session) listResources(ctx context.Context) ([]resources.Resource, []resources.Template, error) {
	var res []resources.Resource
	err := s.listPages(ctx, string(mcp.MethodResourcesList), "resources", func(b json.RawMessage) error {
		var r resources.Resource
		if err := json.Unmarshal(b, &r); err != nil {
			return err
		}
		if r.URI == "" {
			return errors.New("a resource without a uri")
		}
		r.Server, r.Definition = "", b
		res = append(res, r)
		return nil
	})
	if err != nil {
		return nil, nil, err
	}
	if dup := duplicate(res, func(r resources.Resource) string { return r.URI }); dup != "" {
		return nil, nil, fmt.Errorf("resources/list: invalid resource list: the server listed resource %q more than once", dup)
	}
	var tpl []resources.Template
	err = s.listPages(ctx, string(mcp.MethodResourcesTemplatesList), "resourceTemplates", func(b json.RawMessage) error {
		var t resources.Template
		if err := json.Unmarshal(b, &t); err != nil {
			return err
		}
		if t.URITemplate == "" {
			return errors.New("a template without a uriTemplate")
		}
		t.Server, t.Definition = "", b
		tpl = append(tpl, t)
		return nil
	})
	var rpc *RPCError
	if errors.As(err, &rpc) && rpc.Code == mcp.METHOD_NOT_FOUND {
		err, tpl = nil, nil
	}
	if err != nil {
		return nil, nil, err
	}
	if dup := duplicate(tpl, func(t resources.Template) string { return t.URITemplate }); dup != "" {
		return nil, nil, fmt.Errorf("resources/templates/list: invalid template list: the server listed template %q more than once", dup)
	}
	return res, tpl, nil
}

func duplicate[T any](list []T, key func(T) string) string {
	seen := map[string]bool{}
	for _, it := range list {
		k := key(it)
		if seen[k] {
			return k
		}
		seen[k] = true
	}
	return ""
}

// listPrompts reads every page of prompts/list.
func (s *session) listPrompts(ctx context.Context) ([]rawPrompt, error) {
	var out []rawPrompt
	err := s.listPages(ctx, string(mcp.MethodPromptsList), "prompts", func(b json.RawMessage) error {
		var p rawPrompt
		if err := json.Unmarshal(b, &p); err != nil {
			return err
		}
		p.Definition = b
		out = append(out, p)
		return nil
	})
	if err != nil {
		return nil, err
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// subscribe subscribes to uri (on false: unsubscribes): resources/subscribe
// in the handshake era; on 2026-07-28 the listening stream is opened again
// with the new filter.
func (s *session) subscribe(ctx context.Context, uri string, on bool) error {
	if s.modern() {
		s.mu.Lock()
		if s.subs == nil {
			s.subs = map[string]bool{}
		}
		if on {
			s.subs[uri] = true
		} else {
			delete(s.subs, uri)
		}
		s.mu.Unlock()
		s.relisten()
		return nil
	}
	method := mcp.MethodResourcesSubscribe
	if !on {
		method = mcp.MethodResourcesUnsubscribe
	}
	_, err := s.request(ctx, string(method), map[string]any{"uri": uri})
	return err
}
