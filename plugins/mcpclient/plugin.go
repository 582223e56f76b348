// Package mcpclient is the MCP bridge: one plugin instance per MCP server,
// connected over stdio or Streamable HTTP, registering each tool the server
// lists on the tools service as mcp__<serverName>__<rawName> (see
// [PublicName]).
//
// It follows the TypeScript plugin it re-creates (the seeds) and departs from
// it only where docs/rfc says why. One supervisor per instance owns the
// serverName reservation, the registration and the connection. In short:
//
//  1. Apply reserves the serverName in the host (a duplicate of another
//     entry fails the later instance; the instances of one entry share it,
//     each holding it by its own token) and starts the supervisor on a
//     goroutine of the instance; the entry is starting until the first
//     listing is registered, so a harness can wait for the tools before a
//     turn begins. A first connection that fails fails the entry at once.
//  2. Connect: stdio servers run in their own process group with a scrubbed
//     environment; Streamable HTTP sends the configured headers on every
//     request. The handshake is the initialize of protocol 2025-11-25, with
//     a fallback to the stateless protocol for servers that only speak that.
//  3. Sync: every page of tools/list is read raw (schemas verbatim); an
//     invalid listing (a name twice) changes nothing; a valid one replaces
//     the previous generation of tools, all or nothing.
//  4. notifications/tools/list_changed re-syncs, off the read loop,
//     serialized and coalesced.
//  5. A call sends the raw name, bounded by toolCallTimeoutMs; a timeout or a
//     cancellation tells the server (notifications/cancelled) before the
//     call returns. The result becomes one text for the model.
//  6. When a ready server goes away (exit, refused, reset), its tools stay
//     registered and the entry is reconnecting: the supervisor connects
//     again with backoff (reconnect), lists the tools again and swaps them
//     in one step. A call waits for the connection up to its own timeout; a
//     call not yet sent moves to the next connection, one already sent fails
//     ("connection lost during the call"). After maxAttempts the tools go and
//     the entry fails with the last error. With reconnect disabled, the tools
//     go at once and the entry fails (the seeds' behaviour).
//  7. An edit makes before it breaks: the new instance starts beside the old
//     one (the host's rule 10, make before break), takes over its registration in one step when
//     ready, and the old one drains its calls in flight and stops. The live
//     keys (Live) apply in place: same process, same connection.
package mcpclient

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"sync/atomic"

	"github.com/harness-go/harness/host"
	"github.com/harness-go/harness/internal/loop"
	"github.com/harness-go/harness/internal/proc"
	"github.com/harness-go/harness/plugins/prompts"
	"github.com/harness-go/harness/plugins/resources"
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
		Name:            KindName,
		Aliases:         []string{KindAlias},
		Doc:             "connects to one MCP server (stdio or Streamable HTTP) and registers its tools as mcp__<serverName>__<tool>",
		Inject:          []string{tools.Service, resources.Service, prompts.Service},
		New:             func() host.Plugin { return &Plugin{Config: defaultConfig()} },
		MakeBeforeBreak: true,
		Live:            Live,
	})
}

// Plugin is one MCP server connection. Its configuration is [Config], as
// decoded; once applied, the supervisor holds the live configuration.
type Plugin struct {
	Config `yaml:",inline"`

	sup atomic.Pointer[supervisor]
}

type reservationsKey struct{}

type spawnerKey struct{}

// hostSpawner is the host's spawner of stdio servers (internal/proc),
// created by the first stdio entry. The host closes it after every instance
// is disposed: it kills and reaps whatever a server left behind.
type hostSpawner struct {
	sp  *proc.Spawner
	err error
}

func (h *hostSpawner) Close() error {
	if h.sp == nil {
		return nil
	}
	return h.sp.Close()
}

var _ io.Closer = (*hostSpawner)(nil)

func spawnerOf(ctx *host.Context) (*proc.Spawner, error) {
	h := ctx.PerHost(spawnerKey{}, func() any {
		sp, err := proc.NewSpawner()
		return &hostSpawner{sp: sp, err: err}
	}).(*hostSpawner)
	return h.sp, h.err
}

// reservations holds the serverNames of a host's live instances. A name is
// claimed by one entry; the instances of that entry (an old one and its
// successor) hold it together, each by its own token, and it is free when
// the last lets go.
type reservations struct {
	mu     sync.Mutex
	claims map[string]*claim
}

type claim struct {
	entry   string
	holders map[*supervisor]bool
}

// reserve claims name for entry by token s.
func (r *reservations) reserve(name, entry string, s *supervisor) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	c := r.claims[name]
	if c != nil && c.entry != entry {
		return fmt.Errorf("serverName %q is already in use by entry %q", name, c.entry)
	}
	if c == nil {
		c = &claim{entry: entry, holders: map[*supervisor]bool{}}
		r.claims[name] = c
	}
	c.holders[s] = true
	return nil
}

// release lets go of token s's hold on name.
func (r *reservations) release(name string, s *supervisor) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if c := r.claims[name]; c != nil {
		delete(c.holders, s)
		if len(c.holders) == 0 {
			delete(r.claims, name)
		}
	}
}

// Apply reserves the serverName and starts the supervisor; it does not wait.
func (p *Plugin) Apply(ctx *host.Context) error {
	reg, err := tools.From(ctx)
	if err != nil {
		return err
	}
	resReg, err := resources.From(ctx)
	if err != nil {
		return err
	}
	promptReg, err := prompts.From(ctx)
	if err != nil {
		return err
	}
	cfg := p.Config
	s := newSupervisor(ctx, &cfg, reg, resReg, promptReg)
	// Registered first, run last: once disposed, status shows no process,
	// connection or tools of the instance.
	if _, err := ctx.Defer("mark the instance stopped", func(context.Context) error {
		s.setPhase(phaseStopped, nil)
		return nil
	}); err != nil {
		return err
	}
	if s.self, err = loop.From(ctx); err != nil {
		return err
	}
	if s.self != nil {
		self := s.self
		if _, err := ctx.Defer("forget the harnesses behind the server", func(context.Context) error {
			self.Forget(s)
			return nil
		}); err != nil {
			return err
		}
	}
	if s.auth, err = newEntryAuth(ctx, &cfg); err != nil {
		return err
	}
	if cfg.Transport == TransportStdio {
		if s.spawn, err = spawnerOf(ctx); err != nil {
			return err
		}
	}
	res := ctx.PerHost(reservationsKey{}, func() any { return &reservations{claims: map[string]*claim{}} }).(*reservations)
	name := cfg.ServerName
	if err := res.reserve(name, ctx.ID(), s); err != nil {
		return err
	}
	s.releaseName = func() { res.release(name, s) } // at TakeOver of a successor, or at disposal
	if _, err := ctx.Defer("release serverName "+name, func(context.Context) error {
		s.releaseName()
		return nil
	}); err != nil {
		return err
	}
	if pred, ok := ctx.Predecessor().(*Plugin); ok {
		if ps := pred.sup.Load(); ps != nil {
			s.succeed(ps)
		}
	}
	p.sup.Store(s)
	done := ctx.Begin("connect")
	return ctx.Go("mcp supervisor", func(life context.Context) { s.run(life, done) })
}

// TakeOver moves the predecessor's registration to this instance in one
// registry swap (host rule 10, make before break). pred is nil when the predecessor stopped
// before this instance was ready.
func (p *Plugin) TakeOver(pred host.Plugin) error {
	s := p.sup.Load()
	if s == nil {
		return errors.New("not applied")
	}
	var old *supervisor
	if pp, ok := pred.(*Plugin); ok {
		old = pp.sup.Load()
	}
	return s.takeOver(old)
}

// Drain waits until the calls routed to this instance have finished (each
// is bounded by its timeout), or ctx ends.
func (p *Plugin) Drain(ctx context.Context) {
	if s := p.sup.Load(); s != nil {
		s.drain(ctx)
	}
}

// Reconfigure applies the live keys of next (toolCallTimeoutMs,
// maxResultBytes, enabledTools, disabledTools, reconnect) to the running
// instance: same process, same connection.
func (p *Plugin) Reconfigure(next host.Plugin) error {
	n, ok := next.(*Plugin)
	s := p.sup.Load()
	if !ok || s == nil {
		return errors.New("cannot reconfigure")
	}
	return s.reconfigure(&n.Config)
}

// PublicPlain is the public name before normalization: equal to PublicName
// exactly when the raw name needed no rewriting.
func PublicPlain(serverName, raw string) string { return Prefix + serverName + "__" + raw }

var (
	_ host.Plugin         = (*Plugin)(nil)
	_ host.Validator      = (*Plugin)(nil)
	_ host.Uniquer        = (*Plugin)(nil)
	_ host.StatusReporter = (*Plugin)(nil)
	_ host.Successor      = (*Plugin)(nil)
	_ host.Drainer        = (*Plugin)(nil)
	_ host.Reconfigurer   = (*Plugin)(nil)
	_ host.TextStatus     = (*Status)(nil)
)
