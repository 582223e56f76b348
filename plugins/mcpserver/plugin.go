package mcpserver

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/harness-go/harness/host"
	"github.com/harness-go/harness/internal/loop"
	"github.com/harness-go/harness/plugins/prompts"
	"github.com/harness-go/harness/plugins/resources"
	"github.com/harness-go/harness/plugins/tools"
)

// KindName is the plugin kind of the gateway in cordis.yml.
const KindName = "mcp-server"

func init() {
	host.Register(host.Kind{
		Name:   KindName,
		Doc:    "serves the harness's tools to MCP clients over Streamable HTTP (the gateway; harness serve does the same on stdio)",
		Inject: []string{tools.Service},
		New:    func() host.Plugin { return &Plugin{Tools: ModeFull} },
		Live:   []string{"tools", "token"},
	})
}

// Plugin is one gateway served over HTTP beside the rest of the harness
// (`harness run`). Its exported fields are its configuration.
//
// Tools and Token are live (host rule 11, live settings): an edit of those alone applies to
// the running gateway ([Plugin.Reconfigure]), with no new listener and no
// session lost.
type Plugin struct {
	// Listen is the host:port to serve on.
	Listen string `yaml:"listen" json:"listen" required:"true" desc:"host:port to serve Streamable HTTP on, at /mcp (127.0.0.1:8750, say); a non-loopback address needs a token."`
	// Token is required as a Bearer token on every request.
	Token string `yaml:"token" json:"-" secret:"true" desc:"Bearer token every request must carry; required for a non-loopback address."`
	// Tools is the served list: full or meta.
	Tools string `yaml:"tools" json:"tools" enum:"full,meta" desc:"full: every tool; meta: search_tools, describe_tool and call_tool, for clients that ignore list_changed."`
	// AllowHosts are further Host header values accepted.
	AllowHosts []string `yaml:"allowHosts" json:"allowHosts,omitempty" desc:"Host header values accepted besides loopback names and the bound IP (name or name:port), for a gateway reached under a name."`

	mu  sync.Mutex
	gw  *Gateway
	srv *HTTPServer
	off string // why the entry does nothing ("" when it serves)
}

// Validate checks the configuration.
func (p *Plugin) Validate() error {
	if p.Listen == "" {
		return host.FieldErrorf("listen", "is required: host:port, such as 127.0.0.1:8750")
	}
	if err := CheckMode(p.Tools); err != nil {
		return host.FieldErrorf("tools", "must be %q or %q, not %q", ModeFull, ModeMeta, p.Tools)
	}
	if err := CheckListen(p.Listen, p.Token); err != nil {
		return host.FieldErrorf("listen", "%v; set token: or listen on 127.0.0.1", err)
	}
	return nil
}

// Apply listens and serves; the listener closes when the instance is
// disposed.
func (p *Plugin) Apply(ctx *host.Context) error {
	ho, _, err := HostOptionsKey.Provided(ctx)
	if err != nil {
		return err
	}
	if ho.Ignore != "" {
		ctx.Logger().Info("mcp-server entry ignored", "why", ho.Ignore)
		p.mu.Lock()
		p.off = ho.Ignore
		p.mu.Unlock()
		return nil
	}
	reg, err := tools.From(ctx)
	if err != nil {
		return err
	}
	self, err := loop.From(ctx)
	if err != nil {
		return err
	}
	opts := Options{Mode: p.Tools, Settle: ho.Settle, Self: self, Logger: ctx.Logger()}
	// Resources and prompts are served when the host provides them
	// (docs/rfc/0008-resources-prompts.md).
	if res, err := resources.From(ctx); err == nil {
		opts.Resources = res
	}
	if pr, err := prompts.From(ctx); err == nil {
		opts.Prompts = pr
	}
	gw, err := New(reg, opts)
	if err != nil {
		return err
	}
	srv, err := gw.ListenHTTP(p.Listen, HTTPOptions{Token: p.Token, AllowHosts: p.AllowHosts})
	if err != nil {
		return err
	}
	p.mu.Lock()
	p.gw, p.srv = gw, srv
	p.mu.Unlock()
	if _, err := ctx.Defer("close the gateway's listener", func(dctx context.Context) error {
		return srv.Close(dctx)
	}); err != nil {
		_ = srv.Close(context.Background())
		return err
	}
	if err := ctx.Go("gateway", func(life context.Context) { _ = gw.Run(life) }); err != nil {
		return err
	}
	if err := ctx.Go("gateway http", func(context.Context) {
		if err := srv.Serve(); err != nil {
			ctx.Fail(err)
		}
	}); err != nil {
		return err
	}
	ctx.Logger().Info("serving MCP", "url", srv.URL(), "tools", p.Tools)
	return nil
}

// Reconfigure applies an edit of tools or token to the running gateway:
// the served list changes mode (clients get list_changed), the next request
// needs the new token.
func (p *Plugin) Reconfigure(next host.Plugin) error {
	n, ok := next.(*Plugin)
	if !ok {
		return fmt.Errorf("cannot reconfigure from a %T", next)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.gw != nil {
		if err := p.gw.SetMode(n.Tools); err != nil {
			return err
		}
	}
	if p.srv != nil {
		p.srv.Handler().SetToken(n.Token)
	}
	p.Tools, p.Token = n.Tools, n.Token
	return nil
}

var _ host.Reconfigurer = (*Plugin)(nil)

// Status describes the gateway for `harness status`.
type Status struct {
	URL   string `json:"url,omitempty"`
	Tools string `json:"tools"`
	Token bool   `json:"token"`
	Note  string `json:"note,omitempty"`
}

// Status reports where the gateway serves.
func (p *Plugin) Status() any {
	p.mu.Lock()
	defer p.mu.Unlock()
	st := &Status{Tools: p.Tools, Token: p.Token != ""} // Reconfigure keeps Tools the gateway's mode
	switch {
	case p.off != "":
		st.Note = "ignored: " + p.off
	case p.srv != nil:
		st.URL = p.srv.URL()
	}
	return st
}

// StatusLines renders the status for people.
func (s *Status) StatusLines() []string {
	if s.Note != "" {
		return []string{s.Note}
	}
	auth := "no token"
	if s.Token {
		auth = "Bearer token required"
	}
	if s.URL == "" {
		return []string{fmt.Sprintf("tools %s, %s", s.Tools, auth)}
	}
	return []string{fmt.Sprintf("serving %s (tools %s, %s)", s.URL, s.Tools, auth)}
}

// HostOptions are what the program running a host tells its mcp-server
// entries: it provides them under [HostOptionsKey] before it loads a
// configuration. Without them, an entry serves and waits for nothing.
type HostOptions struct {
	// Settle waits until the host's entries have settled, bounded as the
	// program wants: a gateway's first tools/list waits for it.
	Settle func(context.Context) error
	// Ignore, when set, makes mcp-server entries do nothing, and says
	// why: `harness serve` serves the host itself (a listener from the
	// file would serve it twice), and a one-shot command must not take
	// the port of a running harness.
	Ignore string
}

// HostOptionsKey is where a program provides [HostOptions]:
// HostOptionsKey.ProvideBy(h, o), once, before loading a configuration (a
// second is an error, and so is one after an entry started without them).
var HostOptionsKey = host.NewKey[HostOptions]("mcp-server.host-options")

// SettleWithin returns a Settle function for [HostOptions] and [Options]:
// h's entries settle, waiting at most d (0: not at all).
func SettleWithin(h *host.Host, d time.Duration) func(context.Context) error {
	return func(ctx context.Context) error {
		if d <= 0 {
			return nil
		}
		ctx, cancel := context.WithTimeout(ctx, d)
		defer cancel()
		return h.Settle(ctx)
	}
}

var (
	_ host.Plugin         = (*Plugin)(nil)
	_ host.Validator      = (*Plugin)(nil)
	_ host.StatusReporter = (*Plugin)(nil)
	_ host.TextStatus     = (*Status)(nil)
)
