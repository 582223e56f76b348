package web

import (
	"context"
	"sync"

	"github.com/harness-go/harness/host"
	"github.com/harness-go/harness/plugins/agent"
	"github.com/harness-go/harness/plugins/prompts"
	"github.com/harness-go/harness/plugins/resources"
	"github.com/harness-go/harness/plugins/tools"
)

// KindName is the plugin kind of the page in cordis.yml.
const KindName = "web"

func init() {
	host.Register(host.Kind{
		Name:   KindName,
		Doc:    "serves the harness as a live page in a browser (harness web does the same on its own)",
		Inject: []string{tools.Service, agent.DirectoryService, resources.Service, prompts.Service},
		New:    func() host.Plugin { return &Plugin{Listen: DefaultListen} },
	})
}

// Plugin serves the page beside the console of `harness run` or the
// gateway of `harness serve`. Its exported fields are its configuration.
type Plugin struct {
	// Listen is the host:port to serve on.
	Listen string `yaml:"listen" json:"listen" desc:"host:port to serve the page on (default 127.0.0.1:8760); a non-loopback address needs a token."`
	// Token is what opens the page; without one, a fresh one each time the
	// entry starts.
	Token string `yaml:"token" json:"-" secret:"true" desc:"the token that opens the page; default: a fresh one each start, printed in the page's URL. Required for a non-loopback address."`
	// AllowHosts are further Host header values accepted.
	AllowHosts []string `yaml:"allowHosts" json:"allowHosts,omitempty" desc:"Host header values accepted besides loopback names and the bound IP (name or name:port), for a page reached under a name."`

	mu  sync.Mutex
	srv *Server
	off string
}

// Validate checks the configuration.
func (p *Plugin) Validate() error {
	if err := CheckListen(p.Listen, p.Token != ""); err != nil {
		return host.FieldErrorf("listen", "%v; set token: or listen on 127.0.0.1", err)
	}
	return nil
}

// Apply listens and serves; the listener closes when the instance is
// disposed. The page's URL is told to the person through the program's
// Announce (with a fresh token in its fragment).
func (p *Plugin) Apply(ctx *host.Context) error {
	ho, _, err := HostOptionsKey.Provided(ctx)
	if err != nil {
		return err
	}
	if ho.Ignore != "" || ho.Host == nil {
		why := ho.Ignore
		if why == "" {
			why = "this program serves no page"
		}
		ctx.Logger().Info("web entry ignored", "why", why)
		p.mu.Lock()
		p.off = why
		p.mu.Unlock()
		return nil
	}
	reg, err := tools.From(ctx)
	if err != nil {
		return err
	}
	agents, err := agent.DirectoryFrom(ctx)
	if err != nil {
		return err
	}
	res, err := resources.From(ctx)
	if err != nil {
		return err
	}
	pr, err := prompts.Key.From(ctx)
	if err != nil {
		return err
	}
	token := p.Token
	if token == "" {
		token = NewToken()
	}
	srv, err := New(Options{Host: ho.Host, Tools: reg, Agents: agents, Resources: res, Prompts: pr, Login: ho.Login, Config: ho.Config, Logs: ho.Logs, Token: token,
		AllowHosts: p.AllowHosts, Self: ctx.ID(), Logger: ctx.Logger(), Version: ho.Version})
	if err != nil {
		return err
	}
	if err := srv.Listen(p.Listen, p.Token != ""); err != nil {
		return err
	}
	if _, err := ctx.Defer("close the page's listener", srv.Close); err != nil {
		_ = srv.Close(context.Background())
		return err
	}
	if err := ctx.Go("web events", func(life context.Context) { _ = srv.Run(life) }); err != nil {
		return err
	}
	if err := ctx.Go("web http", func(context.Context) {
		if err := srv.Serve(); err != nil {
			ctx.Fail(err)
		}
	}); err != nil {
		return err
	}
	p.mu.Lock()
	p.srv = srv
	p.mu.Unlock()
	if ho.Announce != nil {
		ho.Announce(ctx.ID(), srv.URL(p.Token == ""))
	}
	ctx.Logger().Info("serving the page", "url", srv.URL(false))
	return nil
}

// Status describes the page for `harness status`.
type Status struct {
	URL  string `json:"url,omitempty"`
	Note string `json:"note,omitempty"`
}

// Status reports where the page is served.
func (p *Plugin) Status() any {
	p.mu.Lock()
	defer p.mu.Unlock()
	switch {
	case p.off != "":
		return &Status{Note: "ignored: " + p.off}
	case p.srv != nil:
		return &Status{URL: p.srv.URL(false)}
	}
	return &Status{}
}

// StatusLines renders the status for people.
func (s *Status) StatusLines() []string {
	switch {
	case s.Note != "":
		return []string{s.Note}
	case s.URL != "":
		return []string{"serving " + s.URL + " (open the URL with the token, printed at start)"}
	}
	return nil
}

// HostOptions are what the program running a host tells its web entries:
// it provides them under [HostOptionsKey] before it loads a configuration.
// Without them (no Host), an entry does nothing, and says so.
type HostOptions struct {
	// Host is the host the page shows (its entries, events, restarts).
	Host *host.Host
	// Config is the path of cordis.yml.
	Config string
	// Logs gives the page the log's records (nil: none).
	Logs *Logs
	// Announce tells the person the page's URL, token included: printed
	// where the person reads it, never logged. Nil: not told.
	Announce func(entry, url string)
	// Version is the harness's version, shown on the page.
	Version string
	// Login logs an entry in from the page (nil: the page cannot).
	Login Login
	// Ignore, when set, makes web entries do nothing, and says why:
	// `harness web` serves the page itself, and a one-shot command must
	// not take the port of a running harness.
	Ignore string
}

// HostOptionsKey is where a program provides [HostOptions]:
// HostOptionsKey.ProvideBy(h, o), once, before loading a configuration (a
// second is an error, and so is one after an entry started without them).
var HostOptionsKey = host.NewKey[HostOptions]("web.host-options")

var (
	_ host.Plugin         = (*Plugin)(nil)
	_ host.Validator      = (*Plugin)(nil)
	_ host.StatusReporter = (*Plugin)(nil)
	_ host.TextStatus     = (*Status)(nil)
)
