package agent

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/harness-go/harness/host/secret"
	"github.com/harness-go/harness/internal/origin"
	"github.com/harness-go/harness/plugins/resources"
	"github.com/harness-go/harness/plugins/tools"
)

// Agent talks to one model endpoint with the tools of one registry. It is
// safe for concurrent use: each turn has its own [Conversation].
type Agent struct {
	id      string
	cfg     Config
	reg     *tools.Registry
	res     *resources.Registry // nil: no resource tools
	secrets *secret.Set
	log     *slog.Logger
	life    context.Context
	backoff func(attempt int) time.Duration

	transport *http.Transport // nil when the caller gave the client
	http      *http.Client
	url       string            // baseURL/chat/completions
	keep      func(string) bool // the tool filters; nil sends every tool
	keyVars   []string          // what apiKey reads, unset (Options.KeyVars)

	setMu  sync.Mutex
	set    *toolSet // the tools at the registry's last version seen (toolsearch.go)
	system []byte   // the system message, encoded; nil without one
}

// Options are what an Agent needs besides its configuration.
type Options struct {
	// ID names the agent in errors and logs: its entry id.
	ID string
	// Secrets redacts what the agent says about itself (errors, logs).
	Secrets *secret.Set
	// Logger receives the agent's records. Default: slog.Default().
	Logger *slog.Logger
	// Life, when it ends, ends every turn of the agent (its entry was
	// disposed). Default: never.
	Life context.Context
	// HTTPClient replaces the agent's own HTTP client (tests, benchmarks).
	// The agent's own bounds the wait for response headers by
	// requestTimeoutMs, refuses redirects to another origin and bounds
	// error bodies; a replacement should do the same.
	HTTPClient *http.Client
	// Backoff returns the wait before retry attempt (0-based). Default:
	// 500 ms doubling to 10 s, with jitter.
	Backoff func(attempt int) time.Duration
	// KeyVars are the environment variables the entry's apiKey reads when
	// they were not set (apiKey: !!js process.env.BAR_KEY without BAR_KEY),
	// so a refusal for a missing key can name them.
	KeyVars []string
	// Resources, when set, gives the model the resource tools while any
	// server has resources (resources.go).
	Resources *resources.Registry
}

// New returns an agent for cfg (validated by the caller) sending the tools
// of reg. It opens no connection.
func New(cfg Config, reg *tools.Registry, o Options) *Agent {
	a := &Agent{id: o.ID, cfg: cfg, reg: reg, res: o.Resources, secrets: o.Secrets, log: o.Logger, life: o.Life, backoff: o.Backoff, keyVars: o.KeyVars}
	if a.log == nil {
		a.log = slog.Default()
	}
	if a.life == nil {
		a.life = context.Background()
	}
	if a.backoff == nil {
		a.backoff = Backoff
	}
	a.secrets.AddCredential(cfg.APIKey) // the host adds it too; a caller without a host may not
	if cfg.filtered() {
		a.keep = a.cfg.exposes
	}
	if cfg.System != "" {
		a.system = marshal(struct {
			Role    string `json:"role"`
			Content string `json:"content"`
		}{"system", cfg.System})
	}
	a.http = o.HTTPClient
	if a.http == nil {
		a.transport = newTransport(cfg.requestTimeout())
		a.http = &http.Client{Transport: boundedErrors{a.transport}, CheckRedirect: origin.SameOnly("the API key is")}
	}
	a.url = cfg.endpoint() + "/chat/completions"
	return a
}

// ID returns the agent's id (its entry id).
func (a *Agent) ID() string { return a.id }

// Config returns the agent's configuration. Its APIKey is a secret.
func (a *Agent) Config() Config { return a.cfg }

// Info describes the agent for people.
type Info struct {
	ID       string `json:"id"`
	Model    string `json:"model"`
	Endpoint string `json:"endpoint"`
	HasKey   bool   `json:"hasKey"`
	// NeedsKey says the endpoint refuses requests without a key.
	NeedsKey bool   `json:"needsKey"`
	Thinking string `json:"thinking,omitempty"`
	// Tools is the number of tools the next request would carry.
	Tools int `json:"tools"`
	// Note is a remark for people: a missing key, a deprecated model.
	Note string `json:"note,omitempty"`
	// ToolSearch is the entry's mode (auto, on, off); Searching says
	// whether a request now uses tool search, and SearchReason why.
	ToolSearch   string `json:"toolSearch"`
	Searching    bool   `json:"searching"`
	SearchReason string `json:"searchReason,omitempty"`
}

// Info describes the agent now.
func (a *Agent) Info() Info {
	offered := a.offeredResourceTools()
	_, n := a.reg.ModelSubset(a.keepRegistry(offered))
	n += len(offered)
	info := Info{
		ID:         a.id,
		Model:      a.cfg.Model,
		Endpoint:   a.cfg.endpoint(),
		HasKey:     a.cfg.APIKey != "",
		NeedsKey:   a.cfg.NeedsKey(),
		Thinking:   a.cfg.Thinking,
		Tools:      n,
		Note:       note(&a.cfg),
		ToolSearch: a.cfg.ToolSearch,
	}
	if a.cfg.ToolSearch != ToolSearchOff {
		info.Searching, info.SearchReason = a.searching(a.toolSet())
	}
	return info
}

// note is the remark shown beside a keyless or deprecated configuration.
func note(c *Config) string {
	switch {
	case c.MissingKey():
		return "no API key: " + c.endpoint() + " refuses requests without one"
	case deprecatedModels[c.Model] != "":
		return fmt.Sprintf("model %q is deprecated (now %s)", c.Model, deprecatedModels[c.Model])
	}
	return ""
}

// noKey says why the entry has no key: which variables its apiKey reads,
// unset, or that it has no apiKey.
func (a *Agent) noKey() string {
	switch len(a.keyVars) {
	case 0:
		return "the entry has no apiKey"
	case 1:
		return "apiKey reads " + a.keyVars[0] + ", which is not set"
	}
	return "apiKey reads " + strings.Join(a.keyVars, " and ") + ", which are not set"
}

// ErrNoKey is returned by a turn of an agent whose endpoint needs an API
// key and has none.
var ErrNoKey = errors.New("no API key")

// close releases the agent's idle connections.
func (a *Agent) close(context.Context) error {
	if a.transport != nil {
		a.transport.CloseIdleConnections()
	}
	return nil
}

// Backoff is the default wait before retry attempt n (0-based): 500 ms
// doubling to 10 s, each wait drawn between half and all of that.
func Backoff(attempt int) time.Duration {
	d := 500 * time.Millisecond
	for i := 0; i < attempt && d < 10*time.Second; i++ {
		d *= 2
	}
	d = min(d, 10*time.Second)
	return d/2 + rand.N(d/2+1)
}

// newTransport is a copy of http.DefaultTransport with the wait for
// response headers bounded: a stream may then run as long as it keeps
// talking (the idle timeout watches that).
func newTransport(headers time.Duration) *http.Transport {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.ResponseHeaderTimeout = headers
	return t
}
