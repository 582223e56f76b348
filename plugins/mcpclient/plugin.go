// Package mcpclient is the MCP bridge: one plugin instance per MCP server,
// connected over stdio or Streamable HTTP, registering each tool the server
// lists on the tools service as mcp__<serverName>__<rawName> (see
// [PublicName]).
//
// It follows the TypeScript plugin it re-creates (the seeds) and departs from
// it only where docs/rfc says why. In short:
//
//  1. Apply reserves the serverName in the host (a duplicate fails the later
//     instance) and starts the connection on a goroutine of the instance; the
//     entry is starting until the first listing is registered, so a harness
//     can wait for the tools before a turn begins.
//  2. Connect: stdio servers run in their own process group with a scrubbed
//     environment; Streamable HTTP sends the configured headers on every
//     request. The handshake is the initialize of protocol 2025-11-25, with a
//     fallback to the stateless protocol for servers that only speak that.
//  3. Sync: every page of tools/list is read raw (schemas verbatim); an
//     invalid listing (a name twice) changes nothing; a valid one replaces
//     the previous generation of tools, all or nothing.
//  4. notifications/tools/list_changed re-syncs, off the read loop,
//     serialized and coalesced.
//  5. A call sends the raw name, bounded by toolCallTimeoutMs; a timeout or a
//     cancellation tells the server (notifications/cancelled). The result
//     becomes one text for the model.
//  6. When the server exits or the connection is lost, the tools are
//     unregistered at once and the entry fails with the reason (exit status,
//     last stderr lines). There is no silent reconnect.
package mcpclient

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net/url"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/harness-go/harness/host"
	"github.com/harness-go/harness/host/secret"
	"github.com/harness-go/harness/internal/loop"
	"github.com/harness-go/harness/internal/safe"
	"github.com/harness-go/harness/plugins/tools"
)

// Kind names: the seeds' package name, so seed configurations run unchanged,
// and a short alias.
const (
	KindName  = "@deepseek-ai/dsh-mcp-client"
	KindAlias = "mcp-client"
)

func init() {
	host.Register(host.Kind{
		Name:    KindName,
		Aliases: []string{KindAlias},
		Doc:     "connects to one MCP server (stdio or Streamable HTTP) and registers its tools as mcp__<serverName>__<tool>",
		Inject:  []string{tools.Service},
		New:     func() host.Plugin { return &Plugin{Config: defaultConfig()} },
	})
}

// Plugin is one MCP server connection. Its configuration is [Config].
type Plugin struct {
	Config `yaml:",inline"`

	rt atomic.Pointer[runtime]
}

// runtime is the live state of an applied instance.
type runtime struct {
	secrets *secret.Set
	self    *loop.Self // this harness, for loop detection
	cfg     Config
	ctx     *host.Context
	log     *slog.Logger
	reg     *tools.Registry
	sync    chan struct{} // coalesced re-sync requests

	syncMu sync.Mutex // serializes listings and swaps

	mu       sync.Mutex
	sess     *session
	phase    string
	gen      *generation
	syncs    int
	lastSync time.Time
	syncErr  string
	hidden   int // tools the filters left out of the last listing
}

// generation is the set of tools registered from one listing.
type generation struct {
	names  []NamePair
	digest string
	set    *tools.Set
}

// NamePair maps a public tool name to the server's own.
type NamePair struct {
	Public string `json:"public"`
	Raw    string `json:"raw"`
}

type reservationsKey struct{}

// reservations holds the serverNames of a host's live instances.
type reservations struct {
	mu    sync.Mutex
	owner map[string]string
}

// Apply reserves the serverName and starts connecting; it does not wait.
func (p *Plugin) Apply(ctx *host.Context) error {
	reg, err := tools.From(ctx)
	if err != nil {
		return err
	}
	res := ctx.Shared(reservationsKey{}, func() any { return &reservations{owner: map[string]string{}} }).(*reservations)
	name := p.ServerName
	res.mu.Lock()
	if _, taken := res.owner[name]; taken {
		res.mu.Unlock()
		return fmt.Errorf("mcp-client: serverName %q is already in use by another mcp-client instance — pick a unique serverName in cordis.yml", name)
	}
	res.owner[name] = ctx.ID()
	res.mu.Unlock()
	if _, err := ctx.Defer("release serverName "+name, func(context.Context) error {
		res.mu.Lock()
		delete(res.owner, name)
		res.mu.Unlock()
		return nil
	}); err != nil {
		return err
	}

	rt := &runtime{
		secrets: ctx.Secrets(),
		self:    loop.From(ctx),
		cfg:     p.Config,
		ctx:     ctx,
		log:     ctx.Logger().With("server", name),
		reg:     reg,
		sync:    make(chan struct{}, 1),
		phase:   "connecting",
	}
	p.rt.Store(rt)
	done := ctx.Begin("connect")
	return ctx.Go("mcp session", func(life context.Context) { rt.run(life, done) })
}

// run connects, registers the first listing, then serves re-syncs until the
// instance is disposed or the connection is lost.
func (rt *runtime) run(life context.Context, done func(error)) {
	err := rt.connect(life)
	if err != nil {
		rt.setPhase("failed")
		done(err)
		return
	}
	rt.setPhase("connected")
	done(nil)

	var lost <-chan struct{}
	if rt.sess.stdio != nil {
		lost = rt.sess.stdio.Done()
	}
	for {
		select {
		case <-life.Done():
			return
		case <-rt.sync:
			if err := rt.resync(life); err != nil && life.Err() == nil {
				if rt.toolCount() > 0 {
					rt.log.Warn("re-sync failed; the previous tools stay registered", "err", err)
				} else {
					rt.log.Warn("re-sync failed; the server has no tools registered", "err", err)
				}
			}
		case <-lost:
			reason := rt.secrets.Err(rt.sess.stdio.Err())
			rt.dropTools()
			rt.setPhase("lost")
			rt.ctx.Fail(fmt.Errorf("mcp-client(%s): %w", rt.cfg.ServerName, reason))
			return
		}
	}
}

func (rt *runtime) connect(life context.Context) error {
	ctx, cancel := context.WithTimeout(life, rt.cfg.startupTimeout())
	defer cancel()
	sess, err := dial(life, withChain(rt.cfg, rt.self), rt.ctx.Dir(), rt.log, rt.secrets)
	if err != nil {
		return fmt.Errorf("mcp-client(%s): %w", rt.cfg.ServerName, err)
	}
	if _, err := rt.ctx.Defer("close the connection", func(context.Context) error { return sess.close() }); err != nil {
		return err
	}
	rt.mu.Lock()
	rt.sess = sess
	rt.mu.Unlock()
	if sess.stdio != nil {
		rt.log.Debug("server started", "pid", sess.stdio.PID(), "command", rt.cfg.describe())
	}
	err = sess.handshake(life, ctx, rt.requestSync)
	if err == nil {
		if err := rt.checkLoop(sess); err != nil {
			return err
		}
		info, proto := sess.info()
		rt.log.Info("connected", "serverInfo", safe.Line(info.Name+" "+info.Version), "protocol", proto)
		err = rt.resync(ctx)
	}
	if err != nil {
		if errors.Is(err, context.DeadlineExceeded) && life.Err() == nil {
			err = fmt.Errorf("startup timed out after %s (startupTimeoutMs): %w", rt.cfg.startupTimeout(), sess.explain(err))
		}
		var named *listingError
		if errors.As(err, &named) {
			return err // the seeds' messages name the server already
		}
		return fmt.Errorf("mcp-client(%s): %w", rt.cfg.ServerName, rt.secrets.Err(err))
	}
	return nil
}

// requestSync asks for a re-sync. Requests made while one is pending merge
// into it: a storm of notifications costs at most two listings.
func (rt *runtime) requestSync() {
	select {
	case rt.sync <- struct{}{}:
	default:
	}
}

// resync lists the tools and, if the listing is valid and differs from what
// is registered, swaps the generations (the seeds' sync semantics).
func (rt *runtime) resync(ctx context.Context) error {
	rt.syncMu.Lock()
	defer rt.syncMu.Unlock()
	list, err := rt.sess.listTools(ctx)
	if err == nil {
		err = rt.swap(list)
	}
	rt.mu.Lock()
	rt.syncs++
	rt.lastSync = time.Now()
	rt.syncErr = ""
	if err != nil {
		rt.syncErr = rt.secrets.Redact(err.Error())
	}
	rt.mu.Unlock()
	return err
}

func (rt *runtime) swap(list []rawTool) error {
	server := rt.cfg.ServerName
	batch := make([]tools.Tool, 0, len(list))
	names := make([]NamePair, 0, len(list))
	byPublic := make(map[string]string, len(list))
	byRaw := make(map[string]bool, len(list))
	hidden := 0
	for _, t := range list {
		if t.Name == "" {
			return listingErrorf("mcp-client(%s): server listed a tool without a name — invalid tool list", server)
		}
		if byRaw[t.Name] {
			return listingErrorf("mcp-client(%s): server listed tool %q more than once — invalid tool list", server, t.Name)
		}
		byRaw[t.Name] = true
		public := PublicName(server, t.Name)
		if other, dup := byPublic[public]; dup {
			return listingErrorf("mcp-client(%s): server listed tools %q and %q, which both become %q — invalid tool list", server, other, t.Name, public)
		}
		byPublic[public] = t.Name
		if !rt.cfg.exposes(t.Name) {
			hidden++
			continue // filtered out by enabledTools/disabledTools
		}
		batch = append(batch, tools.Tool{Name: public, Description: t.Description, Parameters: t.InputSchema, Definition: t.Definition, Execute: rt.executor(t.Name)})
		names = append(names, NamePair{Public: public, Raw: t.Name})
	}
	sort.Slice(names, func(i, j int) bool { return names[i].Public < names[j].Public })
	digest := digestTools(list)
	rt.mu.Lock()
	rt.hidden = hidden
	rt.mu.Unlock()

	rt.mu.Lock()
	prev := rt.gen
	rt.mu.Unlock()
	if prev != nil && prev.digest == digest {
		return nil // nothing changed: the model-visible JSON stays byte-identical
	}
	var prevSet *tools.Set
	if prev != nil {
		prevSet = prev.set
	}
	// One step: readers see the previous generation or this one, never
	// neither; on a conflict the previous one is gone too (the seeds).
	set, err := rt.reg.Replace(rt.ctx.Fiber(), prevSet, batch...)
	if err != nil {
		rt.mu.Lock()
		rt.gen = nil
		rt.mu.Unlock()
		if !errors.Is(err, tools.ErrConflict) {
			return err // the instance is being disposed
		}
		err = listingErrorf("mcp-client(%s): tool registration failed, no tools registered: %w", server, err)
		rt.log.Error(err.Error())
		return err
	}
	rt.mu.Lock()
	rt.gen = &generation{names: names, digest: digest, set: set}
	rt.mu.Unlock()
	rt.log.Info("tools registered", "count", len(batch))
	return nil
}

// listingError is a sync failure in the seeds' words, which start with
// "mcp-client(<serverName>): ".
type listingError struct{ err error }

func (e *listingError) Error() string { return e.err.Error() }
func (e *listingError) Unwrap() error { return e.err }

func listingErrorf(format string, args ...any) error {
	return &listingError{fmt.Errorf(format, args...)}
}

// digestTools identifies a listing by everything that reaches the model, and
// by the rest of each tool's definition (title, annotations), which the
// gateway serves.
func digestTools(list []rawTool) string {
	var b strings.Builder
	for _, t := range list {
		fmt.Fprintf(&b, "%q %q %d:", t.Name, t.Description, len(t.InputSchema))
		b.Write(t.InputSchema)
		fmt.Fprintf(&b, " %d:", len(t.Definition))
		b.Write(t.Definition)
		b.WriteByte('\n')
	}
	return b.String()
}

// dropTools unregisters the current generation at once.
func (rt *runtime) dropTools() {
	rt.mu.Lock()
	gen := rt.gen
	rt.gen = nil
	rt.mu.Unlock()
	if gen != nil {
		_ = gen.set.Release(context.Background())
	}
}

func (rt *runtime) toolCount() int {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	if rt.gen == nil {
		return 0
	}
	return len(rt.gen.names)
}

func (rt *runtime) setPhase(p string) {
	rt.mu.Lock()
	rt.phase = p
	rt.mu.Unlock()
}

// executor calls one tool by its raw name.
func (rt *runtime) executor(raw string) tools.Executor {
	return func(ctx context.Context, args json.RawMessage) (tools.Result, error) {
		rt.mu.Lock()
		sess := rt.sess
		rt.mu.Unlock()
		timeout := rt.cfg.toolCallTimeout()
		cctx, cancel := context.WithTimeout(ctx, timeout)
		defer cancel()
		res, err := sess.callTool(cctx, raw, objectArgs(args))
		if err != nil {
			switch {
			case ctx.Err() != nil:
				return tools.Result{}, fmt.Errorf("the call to %q was cancelled", raw)
			case errors.Is(cctx.Err(), context.DeadlineExceeded):
				return tools.Result{}, fmt.Errorf("%q timed out after %s (toolCallTimeoutMs)", raw, timeout)
			}
			// Transport errors may quote what we sent (an error page that
			// repeats the headers): they are our text, so hide the secrets.
			return tools.Result{}, rt.secrets.Err(err)
		}
		m, err := mapTextResult(res, raw)
		if err != nil {
			return tools.Result{}, err
		}
		for _, d := range m.Discarded {
			rt.log.Warn("non-text content discarded from a tool result", "tool", safe.Line(raw), "placeholder", d)
		}
		// maxResultBytes cuts the model's text only; the raw result is
		// the server's, for the gateway to pass on.
		return tools.Result{Text: budget(m.Text, rt.cfg.MaxResultBytes), IsError: m.IsError, Raw: res}, nil
	}
}

// textResult is a tools/call result with its content blocks decoded in one
// pass.
type textResult struct {
	Content []block `json:"content"`
	IsError bool    `json:"isError"`
}

// budget cuts text to at most max bytes (0: no limit), at a UTF-8 boundary,
// and says so at the end, so the model knows the result is incomplete.
func budget(text string, max int) string {
	if max <= 0 || len(text) <= max {
		return text
	}
	cut := max
	for cut > 0 && !utf8.RuneStart(text[cut]) {
		cut--
	}
	return fmt.Sprintf("%s\n[result truncated: %d of %d bytes shown (maxResultBytes)]", text[:cut], cut, len(text))
}

// mapTextResult is [mapResult] with a fast path for the usual result, text
// blocks only: one decoding pass instead of one per block, the same text.
// Every other result goes to mapResult.
func mapTextResult(raw json.RawMessage, rawName string) (mapped, error) {
	var r textResult
	if json.Unmarshal(raw, &r) != nil || len(r.Content) == 0 {
		return mapResult(raw, rawName)
	}
	parts := make([]string, len(r.Content))
	for i, b := range r.Content {
		if b.Type != "text" {
			return mapResult(raw, rawName)
		}
		parts[i] = b.Text
	}
	return mapped{Text: strings.Join(parts, "\n"), IsError: r.IsError}, nil
}

// Status describes the server for `harness status`. Values of env and
// headers are never shown.
type Status struct {
	ServerName string            `json:"serverName"`
	Transport  string            `json:"transport"`
	Command    string            `json:"command,omitempty"`
	Args       []string          `json:"args,omitempty"`
	Cwd        string            `json:"cwd,omitempty"`
	URL        string            `json:"url,omitempty"`
	Env        map[string]string `json:"env,omitempty"`
	Headers    map[string]string `json:"headers,omitempty"`
	Protocol   string            `json:"protocol"`

	Phase           string            `json:"phase"`
	PID             int               `json:"pid,omitempty"`
	Server          *Server           `json:"server,omitempty"`
	ProtocolVersion string            `json:"protocolVersion,omitempty"`
	ToolCount       int               `json:"toolCount"`
	HiddenTools     int               `json:"hiddenTools,omitempty"` // left out by enabledTools/disabledTools
	Tools           map[string]string `json:"tools"`                 // public name → the server's name
	Syncs           int               `json:"syncs"`
	LastSync        *time.Time        `json:"lastSync,omitempty"`
	SyncError       string            `json:"syncError,omitempty"`
	Stderr          []string          `json:"stderr,omitempty"`
}

// Server is what a server says about itself.
type Server struct {
	Name    string `json:"name"`
	Version string `json:"version"`
}

// Status reports the live state of the instance. Values of env and headers
// are never shown, and every string is redacted with the host's secret set:
// a secret may sit in the command line, the URL, the server's own words
// (serverInfo, a sync error, stderr).
func (p *Plugin) Status() any {
	rt := p.rt.Load()
	red := secret.New() // before apply: the entry's own secrets
	red.Add(slices.Collect(maps.Values(p.Env))...)
	red.Add(slices.Collect(maps.Values(p.Headers))...)
	if rt != nil {
		red = rt.secrets
	}
	args := make([]string, len(p.Args))
	for i, a := range p.Args {
		args[i] = red.Redact(a)
	}
	st := &Status{
		ServerName: p.ServerName,
		Transport:  p.Transport,
		Command:    red.Redact(p.Command),
		Args:       args,
		Cwd:        red.Redact(p.Cwd),
		Env:        redacted(p.Env),
		Headers:    redacted(p.Headers),
		Protocol:   p.Protocol,
		Phase:      "configured",
		Tools:      map[string]string{},
	}
	if u, err := url.Parse(p.URL); err == nil && p.URL != "" {
		st.URL = red.Redact(u.Redacted())
	}
	if rt == nil {
		return st
	}
	rt.mu.Lock()
	defer rt.mu.Unlock()
	st.Phase = rt.phase
	st.Syncs = rt.syncs
	st.SyncError = red.Redact(rt.syncErr)
	if !rt.lastSync.IsZero() {
		t := rt.lastSync
		st.LastSync = &t
	}
	if rt.gen != nil {
		for _, n := range rt.gen.names {
			st.Tools[n.Public] = n.Raw
		}
		st.ToolCount = len(rt.gen.names)
	}
	st.HiddenTools = rt.hidden
	if s := rt.sess; s != nil {
		if info, proto := s.info(); proto != "" {
			st.Server = &Server{Name: red.Redact(info.Name), Version: red.Redact(info.Version)}
			st.ProtocolVersion = red.Redact(proto)
		}
		if s.stdio != nil {
			st.PID = s.stdio.PID()
			st.Stderr = s.stdio.Stderr() // redacted as it was read
		}
	}
	return st
}

// StatusLines renders the status for people, with everything that came from
// the server escaped.
func (s *Status) StatusLines() []string {
	where := s.URL
	if s.Transport == TransportStdio {
		where = strings.TrimSpace(s.Command + " " + strings.Join(s.Args, " "))
	}
	lines := []string{fmt.Sprintf("server %s via %s: %s", s.ServerName, s.Transport, safe.Line(where))}
	if s.Server != nil {
		lines = append(lines, fmt.Sprintf("serverInfo: %s %s, protocol %s", safe.Line(s.Server.Name), safe.Line(s.Server.Version), s.ProtocolVersion))
	}
	for _, m := range []struct {
		label string
		keys  map[string]string
	}{{"env", s.Env}, {"headers", s.Headers}} {
		if len(m.keys) > 0 {
			keys := make([]string, 0, len(m.keys))
			for k := range m.keys {
				keys = append(keys, safe.Line(k)+"=<redacted>")
			}
			sort.Strings(keys)
			lines = append(lines, m.label+": "+strings.Join(keys, " "))
		}
	}
	if s.PID != 0 {
		lines = append(lines, fmt.Sprintf("pid %d, phase %s", s.PID, s.Phase))
	} else {
		lines = append(lines, "phase "+s.Phase)
	}
	if s.HiddenTools > 0 {
		lines = append(lines, fmt.Sprintf("tools: %d (%d more left out by enabledTools/disabledTools)", len(s.Tools), s.HiddenTools))
	} else {
		lines = append(lines, fmt.Sprintf("tools: %d", len(s.Tools)))
	}
	publics := make([]string, 0, len(s.Tools))
	for p := range s.Tools {
		publics = append(publics, p)
	}
	sort.Strings(publics)
	for _, p := range publics {
		if raw := s.Tools[p]; p == PublicPlain(s.ServerName, raw) {
			lines = append(lines, "  "+p)
		} else {
			lines = append(lines, fmt.Sprintf("  %s ← %s", p, safe.Line(raw)))
		}
	}
	if s.SyncError != "" {
		lines = append(lines, "last sync failed: "+safe.Line(s.SyncError))
	}
	if len(s.Stderr) > 0 {
		lines = append(lines, "stderr (last lines):")
		for _, l := range s.Stderr {
			lines = append(lines, "  "+safe.Line(l))
		}
	}
	return lines
}

// PublicPlain is the public name before normalization: equal to PublicName
// exactly when the raw name needed no rewriting.
func PublicPlain(serverName, raw string) string { return Prefix + serverName + "__" + raw }

var (
	_ host.Plugin         = (*Plugin)(nil)
	_ host.Validator      = (*Plugin)(nil)
	_ host.Uniquer        = (*Plugin)(nil)
	_ host.StatusReporter = (*Plugin)(nil)
	_ host.TextStatus     = (*Status)(nil)
)
