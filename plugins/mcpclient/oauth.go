package mcpclient

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/harness-go/harness/host"
	"github.com/harness-go/harness/host/conffile"
	"github.com/harness-go/harness/host/secret"
	"github.com/harness-go/harness/internal/oauth"
)

// OAuth is the oauth key of a streamable-http entry
// (docs/rfc/0007-oauth.md): absent, the flow starts by itself when a 401
// carries OAuth metadata; false turns it off; a mapping sets how the client
// registers and what it asks for.
type OAuth struct {
	// Off is `oauth: false`.
	Off bool `yaml:"-" json:"off,omitempty"`
	// Set is true when the key is there at all.
	Set bool `yaml:"-" json:"-"`

	Grant                 string   `yaml:"grant" json:"grant,omitempty" enum:"authorization_code,client_credentials,jwt_bearer" desc:"How tokens are got: authorization_code (a person logs in with harness login; the default), client_credentials (the client's own credentials, clientId with clientSecret or a private key) or jwt_bearer (a workload identity token, assertion or assertionFile); the last two need no person and no browser."`
	ClientID              string   `yaml:"clientId" json:"clientId,omitempty" desc:"A client registered with the authorization server beforehand (servers without dynamic registration, such as GitHub's; every client_credentials client)."`
	ClientSecret          string   `yaml:"clientSecret" json:"-" secret:"true" desc:"The secret of clientId, when the authorization server gave one."`
	PrivateKey            string   `yaml:"privateKey" json:"-" secret:"true" desc:"client_credentials: the client's private key (PEM: EC P-256/P-384/P-521, RSA or Ed25519), to authenticate with a signed JWT (private_key_jwt) instead of a secret."`
	PrivateKeyFile        string   `yaml:"privateKeyFile" json:"privateKeyFile,omitempty" desc:"client_credentials: a file holding privateKey's PEM, relative to cordis.yml's folder."`
	Assertion             string   `yaml:"assertion" json:"-" secret:"true" desc:"jwt_bearer: the workload's identity token (a JWT its platform issued for the authorization server), such as !!js process.env.CI_JOB_JWT."`
	AssertionFile         string   `yaml:"assertionFile" json:"assertionFile,omitempty" desc:"jwt_bearer: a file holding the workload's identity token, relative to cordis.yml's folder, read again at every grant (a Kubernetes projected service account token, for one)."`
	IdP                   *IdP     `yaml:"idp" json:"idp,omitempty" desc:"jwt_bearer: the company's identity provider (enterprise-managed authorization): the person's ID token from it is exchanged there for an ID-JAG at every grant."`
	ClientMetadataURL     string   `yaml:"clientMetadataUrl" json:"clientMetadataUrl,omitempty" desc:"An https URL of a Client ID Metadata Document to use as client_id where the authorization server takes them."`
	Scopes                []string `yaml:"scopes" json:"scopes,omitempty" desc:"The scopes to ask for (default: the server's challenge, else its scopes_supported)."`
	CallbackPort          int      `yaml:"callbackPort" json:"callbackPort,omitempty" desc:"The loopback port of the login's redirect (default: a free one); for clients registered with a fixed redirect URI."`
	DPoP                  *bool    `yaml:"dpop" json:"dpop,omitempty" desc:"Bind the tokens to a key of the login's own (DPoP, RFC 9449): absent, when the server asks for it and the authorization server takes ES256 proofs; true, whenever the authorization server does (an error when it does not); false, never."`
	AuthServerMetadataURL string   `yaml:"authServerMetadataUrl" json:"authServerMetadataUrl,omitempty" desc:"Where the authorization server's metadata is, when the server's own discovery does not say."`
}

var oauthKeys = []string{"grant", "clientId", "clientSecret", "privateKey", "privateKeyFile", "assertion", "assertionFile", "idp", "clientMetadataUrl", "scopes", "callbackPort", "dpop", "authServerMetadataUrl"}

// IdP is oauth.idp: the identity provider of an enterprise-managed entry
// (docs/rfc/0007-oauth.md, "Enterprise-managed authorization").
type IdP struct {
	Issuer        string `yaml:"issuer" json:"issuer,omitempty" desc:"The IdP's issuer (its metadata names its token endpoint)."`
	TokenEndpoint string `yaml:"tokenEndpoint" json:"tokenEndpoint,omitempty" desc:"The IdP's token endpoint, instead of issuer."`
	ClientID      string `yaml:"clientId" json:"clientId,omitempty" desc:"The harness's client at the IdP (the audience of the ID token)."`
	ClientSecret  string `yaml:"clientSecret" json:"-" secret:"true" desc:"Its secret, when it has one."`
	IDToken       string `yaml:"idToken" json:"-" secret:"true" desc:"The person's ID token from the IdP, such as !!js process.env.ID_TOKEN; with neither this nor idTokenFile, harness login signs the person in at the IdP."`
	IDTokenFile   string `yaml:"idTokenFile" json:"idTokenFile,omitempty" desc:"A file holding the ID token, relative to cordis.yml's folder, read again at every grant."`
}

var idpKeys = []string{"issuer", "tokenEndpoint", "clientId", "clientSecret", "idToken", "idTokenFile"}

// UnmarshalYAML takes a mapping of the known keys (strict).
func (p *IdP) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind != yaml.MappingNode {
		return yamlError(n, "oauth.idp", "must be a mapping of %s", strings.Join(idpKeys, ", "))
	}
	if err := knownKeys(n, "oauth.idp", idpKeys); err != nil {
		return err
	}
	type plain IdP
	return n.Decode((*plain)(p))
}

// knownKeys refuses a key of the mapping n (at path) that is not in keys.
func knownKeys(n *yaml.Node, path string, keys []string) error {
	for i := 0; i+1 < len(n.Content); i += 2 {
		if k := n.Content[i]; !slices.Contains(keys, k.Value) {
			return yamlError(k, path+"."+k.Value, "unknown key (the keys are %s)", strings.Join(keys, ", "))
		}
	}
	return nil
}

// yamlError is an unmarshaler's error about node n at path: a
// *yaml.TypeError, which the decoder keeps with the others of the entry,
// and whose "line N: path: " the host reads to put it at n.
func yamlError(n *yaml.Node, path, format string, args ...any) error {
	return &yaml.TypeError{Errors: []string{fmt.Sprintf("line %d: %s: %s", n.Line, path, fmt.Sprintf(format, args...))}}
}

// validate checks oauth.idp.
func (p *IdP) validate(bad func(field, format string, args ...any)) {
	if (p.Issuer == "") == (p.TokenEndpoint == "") {
		bad("oauth.idp", "needs exactly one of issuer and tokenEndpoint")
	}
	for _, u := range []struct{ key, v string }{{"issuer", p.Issuer}, {"tokenEndpoint", p.TokenEndpoint}} {
		if u.v != "" && !strings.HasPrefix(u.v, "https://") && !strings.HasPrefix(u.v, "http://") {
			bad("oauth.idp."+u.key, "%q is not an http:// or https:// URL", u.v)
		}
	}
	if p.ClientID == "" {
		bad("oauth.idp.clientId", "is required (the harness's client at the IdP)")
	}
	switch {
	case p.IDToken != "" && p.IDTokenFile != "":
		bad("oauth.idp", "takes one of idToken and idTokenFile (the person's ID token), not both")
	case p.IDToken == "" && p.IDTokenFile == "" && p.Issuer == "":
		bad("oauth.idp", "without idToken or idTokenFile the harness logs the person in at the IdP (harness login), and that needs its issuer (its metadata names the login page)")
	}
	if t := strings.TrimSpace(p.IDToken); t != "" && !oauth.LooksLikeJWT(t) {
		bad("oauth.idp.idToken", "is not a JWT (three dot-separated parts)")
	}
}

// MappingFields tells the host that oauth's mapping has its fields' keys
// (host.MappingFields): an unknown one is reported where it is.
func (*OAuth) MappingFields() {}

// MappingFields: as OAuth's.
func (*IdP) MappingFields() {}

var _, _ host.MappingFields = (*OAuth)(nil), (*IdP)(nil)

// UnmarshalYAML takes false, true or a mapping of the known keys (strict:
// any other key is an error naming it).
func (o *OAuth) UnmarshalYAML(n *yaml.Node) error {
	*o = OAuth{Set: true}
	if n.Kind == yaml.ScalarNode {
		var b bool
		if err := n.Decode(&b); err != nil {
			return yamlError(n, "oauth", "must be false, true or a mapping of %s", strings.Join(oauthKeys, ", "))
		}
		o.Off = !b
		return nil
	}
	if n.Kind != yaml.MappingNode {
		return yamlError(n, "oauth", "must be false, true or a mapping of %s", strings.Join(oauthKeys, ", "))
	}
	if err := knownKeys(n, "oauth", oauthKeys); err != nil {
		return err
	}
	type plain OAuth
	var p plain
	if err := n.Decode(&p); err != nil {
		return err // a *yaml.TypeError as it is: the decoder keeps it with the entry's others
	}
	p.Set = true
	*o = OAuth(p)
	return nil
}

// YAMLSchema is the oauth key's form for `harness schema`: false, true,
// or the mapping (its fields' descriptions).
func (o *OAuth) YAMLSchema() map[string]any {
	props := map[string]any{}
	t := reflect.TypeOf(*o)
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("yaml"), ",")
		if name == "" || name == "-" {
			continue
		}
		p := map[string]any{"description": f.Tag.Get("desc")}
		switch f.Type.Kind() {
		case reflect.String:
			p["type"] = "string"
			if e := f.Tag.Get("enum"); e != "" {
				p["enum"] = strings.Split(e, ",")
			}
		case reflect.Int:
			p["type"] = "integer"
		case reflect.Pointer:
			p["type"] = "boolean"                       // dpop
			if f.Type.Elem().Kind() == reflect.Struct { // idp
				p["type"], p["additionalProperties"], p["properties"] = "object", false, stringProps(f.Type.Elem())
			}
		case reflect.Slice:
			p["type"], p["items"] = "array", map[string]any{"type": "string"}
		}
		props[name] = p
	}
	return map[string]any{"oneOf": []any{
		map[string]any{"type": "boolean"},
		map[string]any{"type": "object", "additionalProperties": false, "properties": props},
	}}
}

var _ host.Schemer = (*OAuth)(nil)

// stringProps are the schema properties of a struct of strings (oauth.idp).
func stringProps(t reflect.Type) map[string]any {
	props := map[string]any{}
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		if name, _, _ := strings.Cut(f.Tag.Get("yaml"), ","); name != "" && name != "-" {
			props[name] = map[string]any{"type": "string", "description": f.Tag.Get("desc")}
		}
	}
	return props
}

// validate checks the oauth key of a streamable-http entry.
func (o *OAuth) validate(c *Config, bad func(field, format string, args ...any)) {
	if !o.Set || o.Off {
		return
	}
	if c.Transport != TransportHTTP {
		bad("oauth", "is only for transport %q", TransportHTTP)
		return
	}
	for k := range c.Headers {
		if strings.EqualFold(k, "Authorization") {
			bad("oauth", "headers.Authorization sets the Authorization header already: keep one of the two (or set oauth: false)")
		}
	}
	if o.ClientSecret != "" && o.ClientID == "" {
		bad("oauth.clientSecret", "needs oauth.clientId")
	}
	only := func(name string, set bool, grants ...string) {
		if set && !slices.Contains(grants, o.Grant) {
			bad("oauth."+name, "is only for oauth.grant %s", strings.Join(grants, " or "))
		}
	}
	only("privateKey", o.PrivateKey != "", oauth.GrantClientCredentials, oauth.GrantJWTBearer)
	only("privateKeyFile", o.PrivateKeyFile != "", oauth.GrantClientCredentials, oauth.GrantJWTBearer)
	only("assertion", o.Assertion != "", oauth.GrantJWTBearer)
	only("assertionFile", o.AssertionFile != "", oauth.GrantJWTBearer)
	only("idp", o.IdP != nil, oauth.GrantJWTBearer)
	switch o.Grant {
	case "", oauth.GrantAuthorizationCode:
	case oauth.GrantClientCredentials, oauth.GrantJWTBearer:
		credentials := 0
		for _, v := range []string{o.ClientSecret, o.PrivateKey, o.PrivateKeyFile} {
			if v != "" {
				credentials++
			}
		}
		switch {
		case o.Grant == oauth.GrantClientCredentials && o.ClientID == "":
			bad("oauth.clientId", "is required for oauth.grant %q", o.Grant)
		case o.Grant == oauth.GrantClientCredentials && credentials != 1:
			bad("oauth", "grant %q needs exactly one of clientSecret, privateKey and privateKeyFile", o.Grant)
		case credentials > 1:
			bad("oauth", "grant %q takes at most one of clientSecret, privateKey and privateKeyFile", o.Grant)
		case credentials == 1 && o.ClientID == "":
			bad("oauth.clientId", "is required to authenticate the client (with clientSecret or a private key)")
		}
		if n := countSet(o.Assertion != "", o.AssertionFile != "", o.IdP != nil); o.Grant == oauth.GrantJWTBearer && n != 1 {
			bad("oauth", "grant %q needs exactly one of assertion, assertionFile (a workload's identity token) and idp (an ID-JAG from the company's IdP)", o.Grant)
		}
		if o.IdP != nil {
			o.IdP.validate(bad)
		}
		if o.PrivateKey != "" {
			if _, err := oauth.ParseKey([]byte(o.PrivateKey)); err != nil {
				bad("oauth.privateKey", "%v", err)
			}
		}
		if a := strings.TrimSpace(o.Assertion); a != "" && !oauth.LooksLikeJWT(a) {
			bad("oauth.assertion", "is not a JWT (three dot-separated parts)")
		}
		if o.ClientMetadataURL != "" {
			bad("oauth.clientMetadataUrl", "is not for oauth.grant %q (the client is clientId)", o.Grant)
		}
		if o.CallbackPort != 0 {
			bad("oauth.callbackPort", "is not for oauth.grant %q (nothing is redirected)", o.Grant)
		}
	default:
		bad("oauth.grant", "%q is not a grant: %q, %q or %q", o.Grant, oauth.GrantAuthorizationCode, oauth.GrantClientCredentials, oauth.GrantJWTBearer)
	}
	if u := o.ClientMetadataURL; u != "" && !strings.HasPrefix(u, "https://") {
		bad("oauth.clientMetadataUrl", "%q must be an https URL (a Client ID Metadata Document)", u)
	}
	if u := o.AuthServerMetadataURL; u != "" && !strings.HasPrefix(u, "https://") && !strings.HasPrefix(u, "http://") {
		bad("oauth.authServerMetadataUrl", "%q is not an http:// or https:// URL", u)
	}
	if o.CallbackPort < 0 || o.CallbackPort > 65535 {
		bad("oauth.callbackPort", "must be a port number (1–65535), or 0 for a free one")
	}
	for i, s := range o.Scopes {
		if s == "" || strings.ContainsAny(s, " \t\"\\") {
			bad(fmt.Sprintf("oauth.scopes[%d]", i), "%q is not a scope", s)
		}
	}
}

// countSet is how many of set are true.
func countSet(set ...bool) int {
	n := 0
	for _, s := range set {
		if s {
			n++
		}
	}
	return n
}

// UsesOAuth reports whether an entry's requests go through the OAuth
// transport: streamable-http, oauth not false, and no static Authorization
// header (which is sent as it always was).
func (c *Config) UsesOAuth() bool {
	if c.Transport != TransportHTTP || c.OAuth.Off {
		return false
	}
	for k := range c.Headers {
		if strings.EqualFold(k, "Authorization") {
			return false
		}
	}
	return true
}

// settings is the oauth key as the flow takes it; dir is cordis.yml's
// folder, which a relative privateKeyFile or assertionFile is in. What
// those files hold joins secrets, as an inline privateKey or assertion
// does.
func (o *OAuth) settings(dir string, secrets *secret.Set) (oauth.Settings, error) {
	st := oauth.Settings{
		Grant:                 o.Grant,
		ClientID:              o.ClientID,
		ClientSecret:          o.ClientSecret,
		ClientMetadataURL:     o.ClientMetadataURL,
		Scopes:                o.Scopes,
		CallbackPort:          o.CallbackPort,
		AuthServerMetadataURL: o.AuthServerMetadataURL,
	}
	if o.DPoP != nil {
		st.DPoP = oauth.DPoPOff
		if *o.DPoP {
			st.DPoP = oauth.DPoPOn
		}
	}
	if a := strings.TrimSpace(o.Assertion); a != "" {
		st.Assertion = func() (string, error) { return a, nil }
	}
	if p := o.AssertionFile; p != "" {
		st.Assertion = tokenFile("oauth.assertionFile", dir, p, secrets)
	}
	if p := o.IdP; p != nil {
		idp := &oauth.IdP{Issuer: p.Issuer, TokenEndpoint: p.TokenEndpoint, ClientID: p.ClientID, ClientSecret: p.ClientSecret}
		if t := strings.TrimSpace(p.IDToken); t != "" {
			idp.IDToken = func() (string, error) { return t, nil }
		}
		if p.IDTokenFile != "" {
			idp.IDToken = tokenFile("oauth.idp.idTokenFile", dir, p.IDTokenFile, secrets)
		}
		st.IdP = idp
	}
	pem := []byte(o.PrivateKey)
	if p := o.PrivateKeyFile; p != "" {
		if !filepath.IsAbs(p) {
			p = filepath.Join(dir, p)
		}
		b, err := conffile.Read(p)
		if err != nil {
			return st, fmt.Errorf("oauth.privateKeyFile: %w", err)
		}
		secrets.AddCredential(string(b), strings.TrimSpace(string(b)))
		pem = b
	}
	if len(pem) > 0 {
		k, err := oauth.ParseKey(pem)
		if err != nil {
			what := "oauth.privateKey"
			if o.PrivateKeyFile != "" {
				what = "oauth.privateKeyFile " + o.PrivateKeyFile
			}
			return st, fmt.Errorf("%s: %w", what, err)
		}
		st.Key = k
	}
	return st, nil
}

// tokenFile reads a token from the file at path (relative to dir) each
// time it is called; what it reads joins secrets.
func tokenFile(key, dir, path string, secrets *secret.Set) func() (string, error) {
	if !filepath.IsAbs(path) {
		path = filepath.Join(dir, path)
	}
	return func() (string, error) {
		b, err := conffile.Read(path)
		if err != nil {
			return "", fmt.Errorf("%s: %w", key, err)
		}
		t := strings.TrimSpace(string(b))
		secrets.AddCredential(t)
		return t, nil
	}
}

// OAuthOptions are the program's OAuth settings for a host, provided under
// [OAuthKey] before a configuration is loaded: where the token store is, and
// — for tests and the conformance client only — who logs in when a server
// asks.
type OAuthOptions struct {
	// StoreDir is the token store's folder (default: oauth.DefaultDir).
	StoreDir string
	// Authorize, when set, runs the whole flow inline when a server asks
	// for a login. The harness never sets it: no start, reconnect or reload
	// opens a browser; `harness login` does.
	Authorize func(ctx context.Context, f *oauth.Flow, ch *oauth.Challenge) error
	// Poll is how often an entry that needs a login looks for one in the
	// store (default 500 ms).
	Poll time.Duration
}

// OAuthKey is where a program provides the [OAuthOptions] of its
// mcp-client entries: OAuthKey.ProvideBy(h, o), once, before loading a
// configuration (a second is an error, and so is one after an entry
// started without them). Without them, the defaults.
var OAuthKey = host.NewKey[OAuthOptions]("mcp-client.oauth")

func oauthOptionsOf(ctx *host.Context) (*OAuthOptions, error) {
	o, _, err := OAuthKey.Provided(ctx)
	return &o, err
}

// StoreDir is the token store's folder of o.
func (o *OAuthOptions) storeDir() (string, error) {
	if o.StoreDir != "" {
		return o.StoreDir, nil
	}
	return oauth.DefaultDir(os.Getenv)
}

// NewFlow returns the OAuth flow of an entry's configuration, on the token
// store: for `harness login`, `logout` and `status`. dir is the folder of
// the entry's cordis.yml (a relative oauth.privateKeyFile is in it); the
// error is that file's.
func NewFlow(c *Config, dir string, store *oauth.Store) (*oauth.Flow, error) {
	st, err := c.OAuth.settings(dir, store.Secrets)
	if err != nil {
		return nil, err
	}
	return &oauth.Flow{Server: c.URL, Settings: st, Store: store, HTTP: OAuthHTTPClient()}, nil
}

// OAuthHTTPClient is the client of the flow's own requests (metadata,
// registration, tokens, revocation): bounded, a pool of its own, and a POST
// (which carries a code, a refresh token or a client secret) is never
// redirected to another origin.
func OAuthHTTPClient() *http.Client {
	rt := http.DefaultTransport.(*http.Transport).Clone()
	rt.DialContext = (&net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}).DialContext
	return &http.Client{Transport: rt, Timeout: 30 * time.Second, CheckRedirect: func(req *http.Request, via []*http.Request) error {
		if len(via) >= 10 {
			return errors.New("stopped after 10 redirects")
		}
		first := via[0]
		if first.Method != http.MethodGet && (req.URL.Scheme != first.URL.Scheme || req.URL.Host != first.URL.Host) {
			return fmt.Errorf("%s %s redirects to another origin (%s://%s): refused, the request carries credentials", first.Method, safeURL(first.URL.String()), req.URL.Scheme, req.URL.Host)
		}
		return nil
	}}
}

// entryAuth is an instance's OAuth: the flow, the tokens, and the wrapper
// of its HTTP client.
type entryAuth struct {
	flow   *oauth.Flow
	tokens *oauth.Tokens
	opts   *OAuthOptions

	mu      sync.Mutex
	loginBy string // the entry id, for messages
}

func newEntryAuth(ctx *host.Context, cfg *Config) (*entryAuth, error) {
	if !cfg.UsesOAuth() {
		return nil, nil
	}
	opts, err := oauthOptionsOf(ctx)
	if err != nil {
		return nil, err
	}
	dir, err := opts.storeDir()
	if err != nil {
		return nil, err
	}
	store := &oauth.Store{Dir: dir, Secrets: ctx.Secrets()}
	f, err := NewFlow(cfg, ctx.Dir(), store)
	if err != nil {
		return nil, err
	}
	return &entryAuth{flow: f, tokens: oauth.NewTokens(f), opts: opts, loginBy: ctx.ID()}, nil
}

// wrap puts the OAuth transport around next.
func (a *entryAuth) wrap(next http.RoundTripper) http.RoundTripper {
	t := &oauth.Transport{Next: next, Tokens: a.tokens}
	switch {
	case a.machine():
		// Nobody logs in: a challenge is answered with the client's own
		// credentials.
		t.Authorize = func(ctx context.Context, ch *oauth.Challenge) error {
			_, err := a.flow.MachineToken(ctx, ch)
			return err
		}
	case a.opts.Authorize != nil:
		t.Authorize = func(ctx context.Context, ch *oauth.Challenge) error { return a.opts.Authorize(ctx, a.flow, ch) }
	}
	return t
}

// machine reports whether the entry gets its tokens with its own client
// credentials: it never needs a login, and a logout is only the loss of
// a token it gets again.
func (a *entryAuth) machine() bool { return a != nil && a.flow.Settings.Machine() }

// loggedIn reports whether the store holds a login for the server now.
func (a *entryAuth) loggedIn() bool {
	if a == nil {
		return false
	}
	rec, _ := a.tokens.Record()
	return rec.LoggedIn() || a.flow.IdPLoggedIn() // the IdP login gets the server's token
}

func (a *entryAuth) poll() time.Duration {
	if a.opts.Poll > 0 {
		return a.opts.Poll
	}
	return 500 * time.Millisecond
}

// NeedsLoginError is the error of an entry whose server wants a login. It
// says why, not what to run: a front names its own command
// (docs/rfc/0001-host.md, "Messages").
type NeedsLoginError struct {
	Server string // serverName
	Entry  string // the entry's id
	Reason string
}

func (e *NeedsLoginError) Error() string {
	return fmt.Sprintf("the server needs a login (%s)", e.Reason)
}

func (e *NeedsLoginError) Is(target error) bool { return target == oauth.ErrNoLogin }

// needsLogin reports whether err says that only a login helps, and the
// error that says so, naming the command.
func (s *supervisor) needsLogin(err error) (*NeedsLoginError, bool) {
	if err == nil || !errors.Is(err, oauth.ErrNoLogin) {
		return nil, false
	}
	var nl *NeedsLoginError
	if errors.As(err, &nl) {
		return nl, true
	}
	reason := err.Error()
	var lr *oauth.LoginRequiredError
	var ne *oauth.NeedsLoginError
	switch {
	case errors.As(err, &lr):
		reason = lr.Reason
	case errors.As(err, &ne):
		reason = ne.Reason
	}
	return &NeedsLoginError{Server: s.server, Entry: s.ctx.ID(), Reason: s.secrets.Redact(reason)}, true
}

// awaitLogin waits until a login for the server is in the store (made by
// `harness login`, in this process or another), then connects and lists;
// it returns nil when the instance stops first. A connection that fails
// for another reason is tried again at the next change of the store, or
// after the reconnect policy's longest wait.
func (s *supervisor) awaitLogin(life context.Context) (*session, []rawTool, *extras) {
	a := s.auth // never nil: only an OAuth entry needs a login
	tick := time.NewTicker(a.poll())
	defer tick.Stop()
	var retry time.Time
	for {
		select {
		case <-life.Done():
			return nil, nil, nil
		case <-tick.C:
		}
		if !a.tokens.Changed() && (retry.IsZero() || time.Now().Before(retry)) {
			continue
		}
		retry = time.Time{}
		if !a.loggedIn() {
			continue
		}
		sess, list, more, err := s.connect(life)
		if err == nil {
			s.log.Info("logged in; connected")
			return sess, list, more
		}
		if life.Err() != nil {
			return nil, nil, nil
		}
		if nl, ok := s.needsLogin(err); ok {
			s.setPhase(phaseNeedsLogin, nl)
			continue
		}
		s.log.Warn("a login is there, but connecting failed; trying again later", "err", err)
		s.mu.Lock()
		s.lastErr = err.Error()
		s.mu.Unlock()
		retry = time.Now().Add(max(s.config().Reconnect.stable(), time.Second))
	}
}

// relogin handles a server that wants a login once the entry served: the
// tools go, the entry is needs-login, and the next session comes once
// someone logged in (nil: the instance stopped first).
func (s *supervisor) relogin(life context.Context, nl *NeedsLoginError) *session {
	s.log.Info("the server needs a login", "err", nl.Reason)
	s.setPhase(phaseNeedsLogin, nl)
	sess, list, more := s.awaitLogin(life)
	if sess == nil {
		return nil
	}
	s.install(sess)
	err := s.sync(list)
	s.noteSync(err)
	if err != nil {
		s.log.Warn("the listing after the login is invalid", "err", err)
	}
	s.syncExtras(more)
	s.setPhase(phaseConnected, nil)
	return sess
}

// loginError is the error of a call that reached an entry needing a login
// (it looked its tool up before the tools went).
func (s *supervisor) loginError() error {
	return &NeedsLoginError{Server: s.server, Entry: s.ctx.ID(), Reason: "no login"}
}

// OAuthStatus is what `status` shows of an OAuth entry's login.
type OAuthStatus struct {
	LoggedIn bool   `json:"loggedIn"`
	Grant    string `json:"grant,omitempty"` // client_credentials or jwt_bearer: a machine client
	IdP      string `json:"idp,omitempty"`   // jwt_bearer through an IdP: its issuer (or token endpoint)
	// IdPLogin is set when the harness logs the person in at the IdP
	// itself: who is logged in there ("" when nobody is).
	IdPLogin         *IdPLoginStatus `json:"idpLogin,omitempty"`
	Issuer           string          `json:"issuer,omitempty"`
	Scopes           []string        `json:"scopes,omitempty"`
	Expiry           *time.Time      `json:"expiry,omitempty"`
	Refreshable      bool            `json:"refreshable,omitempty"`
	DPoP             bool            `json:"dpop,omitempty"` // the tokens are bound to the login's key (RFC 9449)
	LastRefreshError string          `json:"lastRefreshError,omitempty"`
	Client           string          `json:"client,omitempty"` // how the client is registered
	Note             string          `json:"note,omitempty"`   // the store could not be read
	Store            string          `json:"store,omitempty"`
}

// LoginStatus reads the login of an entry's server from store: nil for an
// entry without OAuth, and for one without an oauth key that never logged
// in (most servers ask for nothing).
func LoginStatus(c *Config, store *oauth.Store) *OAuthStatus {
	if !c.UsesOAuth() {
		return nil
	}
	st := &OAuthStatus{Store: store.Dir, Grant: c.OAuth.Grant}
	if p := c.OAuth.IdP; p != nil {
		st.IdP = cmp.Or(p.Issuer, p.TokenEndpoint)
		st.IdPLogin = IdPLogin(c, store)
	}
	rec, err := store.Load(c.URL)
	if err != nil {
		st.Note = err.Error()
	}
	if rec == nil {
		if !c.OAuth.Set && err == nil {
			return nil
		}
		return st
	}
	st.LoggedIn = rec.LoggedIn()
	st.Issuer = rec.Issuer
	st.Scopes = rec.Scopes
	if !rec.Expiry.IsZero() {
		e := rec.Expiry
		st.Expiry = &e
	}
	st.Refreshable = rec.RefreshToken != ""
	st.DPoP = rec.DPoPBound()
	st.LastRefreshError = rec.LastRefreshError
	st.Client = rec.Client.Registration
	return st
}

// IdPLoginStatus is the harness's own login at an IdP, shared by every
// entry of that IdP and client.
type IdPLoginStatus struct {
	User   string     `json:"user,omitempty"`   // who the ID token names: email, username or subject
	Expiry *time.Time `json:"expiry,omitempty"` // the ID token's
	// Refreshable: the IdP gave a refresh token, which renews the ID token.
	Refreshable      bool   `json:"refreshable,omitempty"`
	LastRefreshError string `json:"lastRefreshError,omitempty"`
}

// IdPLogin reads the IdP login of c from store: nil when c has no IdP or
// gives its own ID token.
func IdPLogin(c *Config, store *oauth.Store) *IdPLoginStatus {
	p := c.OAuth.IdP
	if p == nil || p.IDToken != "" || p.IDTokenFile != "" {
		return nil
	}
	st := &IdPLoginStatus{}
	rec, _ := store.IdPLoginRecord(&oauth.IdP{Issuer: p.Issuer, ClientID: p.ClientID})
	if rec == nil {
		return st
	}
	st.Refreshable, st.LastRefreshError = rec.RefreshToken != "", rec.LastRefreshError
	if claims, err := oauth.ParseIDToken(rec.IDToken); err == nil {
		st.User = claims.User()
		e := claims.Expiry()
		st.Expiry = &e
	}
	return st
}

func (a *entryAuth) status(cfg *Config, needsLogin bool) *OAuthStatus {
	if a == nil {
		return nil
	}
	st := LoginStatus(cfg, a.flow.Store)
	if st == nil && needsLogin {
		st = &OAuthStatus{Store: a.flow.Store.Dir}
	}
	return st
}
