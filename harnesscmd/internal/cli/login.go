package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"github.com/harness-go/harness/host"
	"github.com/harness-go/harness/internal/oauth"
	"github.com/harness-go/harness/internal/safe"
	"github.com/harness-go/harness/plugins/mcpclient"
)

// loginTimeout bounds the wait for a person to finish a login.
const loginTimeout = 10 * time.Minute

// The commands of docs/rfc/0007-oauth.md, "The person's flow": `harness
// login ID` and `harness logout ID` work on the token store alone: they
// start no entry. A running harness that shares the store picks a new
// login up by itself.

// oauthStore is the token store of this run: $XDG_STATE_HOME/harness/oauth,
// else ~/.local/state/harness/oauth, as the environment of the run says.
func oauthStore(env Env) (*oauth.Store, error) {
	get := func(k string) string {
		v, _ := env.Lookup(k)
		return v
	}
	dir, err := oauth.DefaultDir(get)
	if err != nil {
		return nil, err
	}
	return &oauth.Store{Dir: dir, Secrets: env.secrets}, nil
}

// oauthEntry finds the streamable-http entry id of the file, decoded (its
// !!js values read, validated), and its OAuth flow on the run's store.
func oauthEntry(o *options, env Env, id string) (*mcpclient.Config, *oauth.Flow, error) {
	f, err := host.ReadFile(o.config)
	if err != nil {
		return nil, nil, exit(ExitUsage, "harness: %s", safe.Text(err.Error()))
	}
	decoded, report := host.Decode(f, *jsEnv(env), env.secrets)
	p, ok := decoded[id]
	if !ok {
		for _, pr := range report.Errors {
			if pr.Entry == id {
				return nil, nil, exit(ExitUsage, "harness: %s", safe.Text(pr.Error()))
			}
		}
		return nil, nil, exit(ExitUsage, "harness: no enabled entry %q in %s", safe.Line(id), safe.Line(o.config))
	}
	mc, ok := p.(*mcpclient.Plugin)
	if !ok {
		return nil, nil, exit(ExitUsage, "harness: entry %q is not an MCP server (mcp-client)", safe.Line(id))
	}
	cfg := &mc.Config
	if !cfg.UsesOAuth() {
		why := "its transport is stdio"
		switch {
		case cfg.Transport == mcpclient.TransportHTTP && cfg.OAuth.Off:
			why = "it has oauth: false"
		case cfg.Transport == mcpclient.TransportHTTP:
			why = "it sends a static Authorization header"
		}
		return nil, nil, exit(ExitUsage, "harness: entry %q does not log in with OAuth: %s", safe.Line(id), why)
	}
	store, err := oauthStore(env)
	if err != nil {
		return nil, nil, exit(ExitFailure, "harness: %v", err)
	}
	flow, err := mcpclient.NewFlow(cfg, filepath.Dir(o.config), store)
	if err != nil {
		return nil, nil, exit(ExitUsage, "harness: entry %q: %s", safe.Line(id), safe.Text(err.Error()))
	}
	return cfg, flow, nil
}

// loginEvent is one line of `harness login --json`.
type loginEvent struct {
	Type    string     `json:"type"` // authorize, done, error
	URL     string     `json:"url,omitempty"`
	Browser bool       `json:"browser,omitempty"` // the browser was opened
	Server  string     `json:"server,omitempty"`
	Issuer  string     `json:"issuer,omitempty"`
	Scopes  []string   `json:"scopes,omitempty"`
	Expiry  *time.Time `json:"expiry,omitempty"`
	Store   string     `json:"store,omitempty"`
	IdPUser string     `json:"idpUser,omitempty"` // who is signed in at the IdP, for an entry the harness signs in there
	Message string     `json:"message,omitempty"`
}

// noBrowser reports why a browser cannot be opened here, or "".
func noBrowser(o *options, env Env) string {
	get := func(k string) string {
		v, _ := env.Lookup(k)
		return v
	}
	switch {
	case o.noBrowser:
		return "--no-browser"
	case get("SSH_CONNECTION") != "":
		return "an SSH session"
	case isLinuxLike() && get("DISPLAY") == "" && get("WAYLAND_DISPLAY") == "" && get("BROWSER") == "":
		return "no display"
	}
	return ""
}

// login is `harness login ID [--no-browser] [--json]` (and the console's
// /login ID, which takes no paste: the console reads stdin).
func login(ctx context.Context, o *options, env Env) error {
	if len(o.args) != 1 {
		return usagef("login takes the id of an entry")
	}
	return loginEntry(ctx, o, env, o.args[0])
}

// loginEntry logs in to entry id; the redirect URL may be pasted on
// env.Stdin when it is set and no browser opens here.
func loginEntry(ctx context.Context, o *options, env Env, id string) error {
	cfg, flow, err := oauthEntry(o, env, id)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeoutCause(ctx, loginTimeout, fmt.Errorf("nobody finished the login within %s", loginTimeout))
	defer cancel()
	out := env.secrets.Writer(env.Stdout)
	emit := func(ev loginEvent) {
		b, _ := json.Marshal(ev)
		out.Write(append(b, '\n'))
	}
	ch, err := oauth.Probe(ctx, probeClient(cfg, flow.HTTP), cfg.URL)
	if err != nil {
		return loginFailed(o, emit, err)
	}
	opts := oauth.LoginOptions{Challenge: ch}
	why := noBrowser(o, env)
	if why == "" {
		opts.Open = openBrowser(env.Lookup)
	} else if env.Stdin != nil {
		opts.Paste = env.Stdin // the redirect URL, pasted from a browser elsewhere
	}
	// An entry that signs the person in at its IdP shows the IdP's page
	// (docs/rfc/0007-oauth.md, "The IdP login").
	target := safe.Line(cfg.ServerName)
	if flow.Settings.IdPLogin() {
		target = "the IdP " + safe.Line(flow.Settings.IdP.Issuer) + " (for " + target + ")"
	}
	opts.Show = func(u string, opened bool, openErr error) {
		if o.json {
			emit(loginEvent{Type: "authorize", URL: u, Browser: opened})
			return
		}
		var b strings.Builder
		switch {
		case opened:
			fmt.Fprintf(&b, "harness: the browser opened the login page of %s; if it did not, open:\n\n  %s\n\n", target, u)
		case why != "":
			fmt.Fprintf(&b, "harness: open this address in a browser to log in to %s (%s):\n\n  %s\n\n", target, why, u)
			b.WriteString("then come back; if the browser runs on another machine, paste here the address it ends on (it starts with http://127.0.0.1).\n")
		default:
			fmt.Fprintf(&b, "harness: the browser could not be opened (%v); open this address to log in to %s:\n\n  %s\n\n", safe.Text(fmt.Sprint(openErr)), target, u)
		}
		io.WriteString(env.Stderr, b.String())
	}
	rec, err := flow.Login(ctx, opts)
	if err != nil {
		return loginFailed(o, emit, err)
	}
	ev := loginEvent{Type: "done", Server: rec.Server, Issuer: rec.Issuer, Scopes: rec.Scopes, Store: flow.Store.Path(rec.Server, rec.Issuer)}
	if !rec.Expiry.IsZero() {
		e := rec.Expiry
		ev.Expiry = &e
	}
	if l := mcpclient.IdPLogin(cfg, flow.Store); l != nil {
		ev.IdPUser = l.User
	}
	if o.json {
		emit(ev)
		return nil
	}
	line := fmt.Sprintf("logged in to %s at %s", safe.Line(cfg.ServerName), safe.Line(rec.Issuer))
	if len(rec.Scopes) > 0 {
		line += " (scopes " + safe.Line(strings.Join(rec.Scopes, " ")) + ")"
	}
	if ev.IdPUser != "" {
		line += ", as " + safe.Line(ev.IdPUser) + " at the IdP " + safe.Line(flow.Settings.IdP.Issuer)
	}
	fmt.Fprintf(out, "%s; the token is in %s\n", line, safe.Line(filepath.Dir(ev.Store)))
	return nil
}

// pageLogin is the login of the web page (web.Login): `harness login ID`
// with the page as the person's side — the URL shown there, a redirect
// pasted there — on the same store, so the running entry picks it up.
func pageLogin(o *options, env Env) func(ctx context.Context, id string, show func(string), paste io.Reader) error {
	return func(ctx context.Context, id string, show func(string), paste io.Reader) error {
		cfg, flow, err := oauthEntry(o, env, id)
		if err != nil {
			var ee *exitError
			if errors.As(err, &ee) {
				return errors.New(strings.TrimPrefix(ee.msg, "harness: "))
			}
			return err
		}
		ch, err := oauth.Probe(ctx, probeClient(cfg, flow.HTTP), cfg.URL)
		if err != nil {
			return err
		}
		_, err = flow.Login(ctx, oauth.LoginOptions{Challenge: ch, Paste: paste, Show: func(u string, _ bool, _ error) { show(u) }})
		if err != nil {
			return errors.New(err.Error() + registrationHint(err))
		}
		return nil
	}
}

func loginFailed(o *options, emit func(loginEvent), err error) error {
	msg := safe.Text(err.Error()) + registrationHint(err)
	if o.json {
		emit(loginEvent{Type: "error", Message: msg})
		return exit(ExitFailure, "")
	}
	return exit(ExitFailure, "harness login: %s", msg)
}

// probeClient sends the entry's own headers with the probe (a server may
// want one before it answers at all).
func probeClient(cfg *mcpclient.Config, c *http.Client) *http.Client {
	if len(cfg.Headers) == 0 {
		return c
	}
	cc := *c
	cc.Transport = headerRT{next: c.Transport, headers: cfg.Headers}
	return &cc
}

type headerRT struct {
	next    http.RoundTripper
	headers map[string]string
}

func (h headerRT) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	for k, v := range h.headers {
		r.Header.Set(k, v)
	}
	next := h.next
	if next == nil {
		next = http.DefaultTransport
	}
	return next.RoundTrip(r)
}

// logout is `harness logout ID`: the entry's tokens are deleted from the
// store, and revoked where the authorization server offers RFC 7009.
func logout(ctx context.Context, o *options, env Env) error {
	if len(o.args) != 1 {
		return usagef("logout takes the id of an entry")
	}
	id := o.args[0]
	cfg, flow, err := oauthEntry(o, env, id)
	if err != nil {
		return err
	}
	removed, delErr := flow.Store.Delete(cfg.URL)
	out := env.secrets.Writer(env.Stdout)
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	// An entry the harness logs in at an IdP ends that login too, which
	// every entry through the IdP shares (docs/rfc/0007-oauth.md, "The IdP
	// login").
	atIdP, idpErr := flow.LogoutIdP(ctx)
	if atIdP {
		fmt.Fprintf(out, "logged out at the IdP %s: every entry through it needs a login again\n", safe.Line(flow.Settings.IdP.Issuer))
	}
	if idpErr != nil {
		fmt.Fprintf(env.Stderr, "harness logout: %s\n", safe.Text(idpErr.Error()))
	}
	if len(removed) == 0 && delErr == nil {
		if !atIdP {
			fmt.Fprintf(out, "not logged in to %s\n", safe.Line(cfg.ServerName))
		}
		return nil
	}
	var revokeErrs []error
	revoked := 0
	for _, r := range removed {
		if r.RevocationEndpoint == "" {
			continue
		}
		if err := flow.Revoke(ctx, r); err != nil {
			revokeErrs = append(revokeErrs, err)
		} else {
			revoked++
		}
	}
	line := fmt.Sprintf("logged out of %s: the tokens are deleted", safe.Line(cfg.ServerName))
	if revoked > 0 {
		line += " and revoked"
	}
	fmt.Fprintln(out, line)
	if err := errors.Join(append(revokeErrs, delErr)...); err != nil {
		fmt.Fprintf(env.Stderr, "harness logout: %s\n", safe.Text(err.Error()))
		if delErr != nil {
			return exit(ExitFailure, "")
		}
	}
	return nil
}

// isLinuxLike reports a system where no display means no browser.
func isLinuxLike() bool {
	switch runtime.GOOS {
	case "darwin", "windows":
		return false
	}
	return true
}
