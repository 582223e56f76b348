package oauth

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"golang.org/x/oauth2"

	"github.com/harness-go/harness/internal/safe"
)

// Settings are an entry's oauth key (docs/rfc/0007-oauth.md,
// "Configuration").
type Settings struct {
	// Grant is how tokens are got: GrantAuthorizationCode (a person logs
	// in; the default), GrantClientCredentials (the client's own
	// credentials, no person) or GrantJWTBearer (a workload's identity
	// token, no person).
	Grant        string
	ClientID     string
	ClientSecret string
	// Key is the private key of a client that authenticates with
	// private_key_jwt (machine clients only); nil: none.
	Key *Key
	// Assertion gives the workload's identity token of a GrantJWTBearer
	// flow, asked for at every grant (platforms rotate them).
	Assertion func() (string, error)
	// IdP, for a GrantJWTBearer flow without Assertion, is the identity
	// provider whose token exchange gives the assertion (an ID-JAG,
	// enterprise-managed authorization).
	IdP *IdP
	// DPoP is whether logins bind their tokens to a key of their own:
	// DPoPAuto (when the server asks for it), DPoPOn or DPoPOff.
	DPoP                  string
	ClientMetadataURL     string
	Scopes                []string
	CallbackPort          int
	AuthServerMetadataURL string
}

// The grants of Settings.Grant.
const (
	GrantAuthorizationCode = "authorization_code"
	GrantClientCredentials = "client_credentials"
	GrantJWTBearer         = "jwt_bearer"
)

// Machine reports whether the flow gets its tokens with what the entry
// holds (the client's credentials, a workload's token): no person, no
// browser, no refresh token.
func (s *Settings) Machine() bool {
	return s.Grant == GrantClientCredentials || s.Grant == GrantJWTBearer
}

// ClientName is the client_name of a dynamic registration.
const ClientName = "harness"

// Flow is the authorization code flow for one server.
type Flow struct {
	Server   string
	Settings Settings
	Store    *Store
	HTTP     *http.Client

	nonces nonces // the servers' DPoP nonces
}

// Pending is an authorization under way: the URL a person opens, and what
// the redirect back is checked against.
type Pending struct {
	// URL is the authorization URL. It holds no secret: the PKCE verifier
	// stays here, only its S256 challenge is in the URL.
	URL         string
	RedirectURI string
	Scopes      []string

	state    string
	verifier string
	disc     *Discovery
	client   Client
	dpop     bool // the login's tokens are bound to a key (DPoP)
}

// State is the state parameter the redirect must carry.
func (p *Pending) State() string { return p.state }

// Begin discovers the authorization server, registers the client (or
// reuses a registration), and builds the authorization URL for redirectURI.
// ch is the server's challenge (nil: none seen). Nothing is opened and
// nothing is written but a dynamic registration.
func (f *Flow) Begin(ctx context.Context, ch *Challenge, redirectURI string) (*Pending, error) {
	d, err := Discover(ctx, f.HTTP, f.Server, ch, f.Settings.AuthServerMetadataURL)
	if err != nil {
		return nil, err
	}
	dpop, err := f.wantDPoP(d, ch)
	if err != nil {
		return nil, err
	}
	prev, _ := f.Store.readAt(f.Server, d.AS.Issuer)
	client, err := f.register(ctx, d, prev, redirectURI)
	if err != nil {
		return nil, err
	}
	scopes := f.scopes(d, ch, prev)
	verifier := oauth2.GenerateVerifier()
	state := rand.Text()
	cfg := f.oauthConfig(d, client, redirectURI, scopes)
	authURL := cfg.AuthCodeURL(state, oauth2.S256ChallengeOption(verifier), oauth2.SetAuthURLParam("resource", d.Resource))
	return &Pending{URL: authURL, RedirectURI: redirectURI, Scopes: scopes, state: state, verifier: verifier, disc: d, client: client, dpop: dpop}, nil
}

// scopes are what to ask for: the entry's scopes, else the challenge's,
// else the resource metadata's scopes_supported, else none; joined with
// those already granted (a step-up keeps them); offline_access added when
// the authorization server lists it.
func (f *Flow) scopes(d *Discovery, ch *Challenge, prev *Record) []string {
	s := f.askedScopes(d, ch)
	if prev != nil && len(s) > 0 {
		s = addScopes(s, prev.Scopes...)
		s = addScopes(s, prev.Wanted...)
	}
	if slices.Contains(d.AS.ScopesSupported, "offline_access") {
		s = addScopes(s, "offline_access")
	}
	return s
}

// askedScopes are the entry's scopes, else the challenge's, else the
// resource metadata's scopes_supported, else none (a fresh slice).
func (f *Flow) askedScopes(d *Discovery, ch *Challenge) []string {
	switch {
	case len(f.Settings.Scopes) > 0:
		return slices.Clone(f.Settings.Scopes)
	case ch != nil && len(ch.Scopes) > 0:
		return slices.Clone(ch.Scopes)
	case d.PRM != nil && len(d.PRM.ScopesSupported) > 0:
		return slices.Clone(d.PRM.ScopesSupported)
	}
	return nil
}

// addScopes appends to s those of more it does not hold yet.
func addScopes(s []string, more ...string) []string {
	for _, v := range more {
		if !slices.Contains(s, v) {
			s = append(s, v)
		}
	}
	return s
}

func (f *Flow) oauthConfig(d *Discovery, c Client, redirectURI string, scopes []string) *oauth2.Config {
	style := oauth2.AuthStyleInHeader
	if c.AuthMethod != "client_secret_basic" {
		style = oauth2.AuthStyleInParams
	}
	return &oauth2.Config{
		ClientID:     c.ID,
		ClientSecret: c.Secret,
		Endpoint:     oauth2.Endpoint{AuthURL: d.AS.AuthorizationEndpoint, TokenURL: d.AS.TokenEndpoint, AuthStyle: style},
		RedirectURL:  redirectURI,
		Scopes:       scopes,
	}
}

// register picks the client, in this order: the entry's clientId
// (pre-registered), the entry's clientMetadataUrl where the authorization
// server takes metadata documents, a dynamic registration kept from an
// earlier login at this issuer that has this redirect URI, and a new
// dynamic registration (application_type native).
func (f *Flow) register(ctx context.Context, d *Discovery, prev *Record, redirectURI string) (Client, error) {
	as := d.AS
	if id := f.Settings.ClientID; id != "" {
		c := Client{ID: id, Secret: f.Settings.ClientSecret, Registration: "preregistered", AuthMethod: "none"}
		if c.Secret != "" {
			c.AuthMethod = pickAuthMethod(as.TokenEndpointAuthMethodsSupported)
		}
		return c, nil
	}
	if u := f.Settings.ClientMetadataURL; u != "" && as.ClientIDMetadataDocumentSupported {
		return Client{ID: u, Registration: "metadata-document", AuthMethod: "none"}, nil
	}
	if prev != nil && prev.Client.Registration == "dynamic" && slices.Contains(prev.Client.RedirectURIs, redirectURI) {
		return prev.Client, nil
	}
	if as.RegistrationEndpoint == "" {
		why := "it offers no dynamic client registration"
		if f.Settings.ClientMetadataURL != "" {
			why = "it takes no client metadata document and offers no dynamic client registration"
		}
		return Client{}, fmt.Errorf("the authorization server %s cannot register this client: %s: %w", safe.Line(as.Issuer), why, ErrNoRegistration)
	}
	return f.registerDynamic(ctx, as, redirectURI)
}

// pickAuthMethod is how a client with a secret authenticates: basic where
// listed (RFC 8414's default when nothing is listed), else post.
func pickAuthMethod(supported []string) string {
	switch {
	case len(supported) == 0, slices.Contains(supported, "client_secret_basic"):
		return "client_secret_basic"
	case slices.Contains(supported, "client_secret_post"):
		return "client_secret_post"
	}
	return "client_secret_basic"
}

// registerDynamic registers the client (RFC 7591) as a native application
// with the redirect URI; it asks for no secret when the server takes
// public clients.
func (f *Flow) registerDynamic(ctx context.Context, as *ServerMetadata, redirectURI string) (Client, error) {
	method := "none"
	if m := as.TokenEndpointAuthMethodsSupported; len(m) > 0 && !slices.Contains(m, "none") {
		method = pickAuthMethod(m)
	}
	body, _ := json.Marshal(map[string]any{
		"client_name":                ClientName,
		"redirect_uris":              []string{redirectURI},
		"grant_types":                []string{"authorization_code", "refresh_token"},
		"response_types":             []string{"code"},
		"token_endpoint_auth_method": method,
		"application_type":           "native",
	})
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, as.RegistrationEndpoint, bytes.NewReader(body))
	if err != nil {
		return Client{}, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	resp, err := f.HTTP.Do(req)
	if err != nil {
		return Client{}, fmt.Errorf("dynamic client registration at %s: %w", safeURL(as.RegistrationEndpoint), err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, maxMetadataBytes))
	if resp.StatusCode != http.StatusCreated && resp.StatusCode != http.StatusOK {
		return Client{}, fmt.Errorf("dynamic client registration at %s: HTTP %d: %s", safeURL(as.RegistrationEndpoint), resp.StatusCode, oauthError(b))
	}
	var r struct {
		ClientID     string   `json:"client_id"`
		ClientSecret string   `json:"client_secret"`
		AuthMethod   string   `json:"token_endpoint_auth_method"`
		RedirectURIs []string `json:"redirect_uris"`
	}
	if err := json.Unmarshal(b, &r); err != nil || r.ClientID == "" {
		return Client{}, fmt.Errorf("dynamic client registration at %s: the answer names no client_id", safeURL(as.RegistrationEndpoint))
	}
	c := Client{ID: r.ClientID, Secret: r.ClientSecret, AuthMethod: r.AuthMethod, Registration: "dynamic", RedirectURIs: []string{redirectURI}}
	switch {
	case c.AuthMethod == "" && c.Secret != "":
		c.AuthMethod = "client_secret_basic" // RFC 7591's default
	case c.AuthMethod == "":
		c.AuthMethod = "none"
	}
	if f.Store != nil {
		f.Store.Secrets.AddCredential(c.Secret)
	}
	return c, nil
}

// oauthError is the error and error_description of an OAuth error body,
// escaped, or the start of the body.
func oauthError(b []byte) string {
	var e struct {
		Error       string `json:"error"`
		Description string `json:"error_description"`
	}
	if json.Unmarshal(b, &e) == nil && e.Error != "" {
		if e.Description != "" {
			return safe.Line(e.Error + ": " + e.Description)
		}
		return safe.Line(e.Error)
	}
	return safe.Line(safe.Cut(string(b), 200))
}

// ErrDenied is a redirect that carries an error instead of a code.
type ErrDenied struct{ Code, Description string }

func (e *ErrDenied) Error() string {
	if e.Description != "" {
		return fmt.Sprintf("the authorization server refused: %s: %s", safe.Line(e.Code), safe.Line(e.Description))
	}
	return "the authorization server refused: " + safe.Line(e.Code)
}

// Finish checks the redirect (its state, the RFC 9207 iss), trades the code
// for tokens (with the PKCE verifier and the resource), and saves the
// login. redirect is the URL the browser was sent back to.
func (f *Flow) Finish(ctx context.Context, p *Pending, redirect *url.URL) (*Record, error) {
	as := p.disc.AS
	code, err := f.redirectCode(redirect, p.state, as)
	if err != nil {
		return nil, err
	}
	rec := &Record{
		Server:                f.Server,
		Resource:              p.disc.Resource,
		Issuer:                as.Issuer,
		AuthorizationEndpoint: as.AuthorizationEndpoint,
		TokenEndpoint:         as.TokenEndpoint,
		RevocationEndpoint:    as.RevocationEndpoint,
		RevocationAuthMethods: as.RevocationAuthMethodsSupported,
		Client:                p.client,
	}
	if p.dpop {
		k, err := newDPoPKey()
		if err != nil {
			return nil, err
		}
		rec.DPoPKey = k
	}
	v := url.Values{"grant_type": {"authorization_code"}, "code": {code}, "redirect_uri": {p.RedirectURI}, "code_verifier": {p.verifier}}
	if p.disc.Resource != "" {
		v.Set("resource", p.disc.Resource)
	}
	tok, err := f.tokenRequest(ctx, "the code exchange", rec, v)
	if err != nil {
		return nil, err
	}
	rec.setToken(tok, p.Scopes)
	if err := f.Store.Save(rec); err != nil {
		return nil, err
	}
	return rec, nil
}

// redirectCode checks a login's redirect (its state, the RFC 9207 iss of
// the authorization server as) and returns its code, which joins the
// secret set.
func (f *Flow) redirectCode(redirect *url.URL, state string, as *ServerMetadata) (string, error) {
	q := redirect.Query()
	if q.Get("state") != state {
		return "", errors.New("the redirect's state is not this login's: refused")
	}
	if e := q.Get("error"); e != "" {
		return "", &ErrDenied{Code: e, Description: q.Get("error_description")}
	}
	iss, hasIss := q["iss"]
	switch {
	case as.IssParameterSupported && !hasIss:
		return "", fmt.Errorf("the authorization server %s says it sends iss (RFC 9207) but the redirect has none: refused", safe.Line(as.Issuer))
	case hasIss && (len(iss) != 1 || iss[0] != as.Issuer):
		return "", fmt.Errorf("the redirect's iss %q is not the authorization server's issuer %q (RFC 9207): refused", safe.Line(strings.Join(iss, ",")), safe.Line(as.Issuer))
	}
	code := q.Get("code")
	if code == "" {
		return "", errors.New("the redirect carries no code")
	}
	if f.Store != nil {
		f.Store.Secrets.AddCredential(code)
	}
	return code, nil
}

// setToken records a token response; the scopes are the response's scope,
// else those asked for.
func (r *Record) setToken(t *oauth2.Token, asked []string) {
	r.AccessToken = t.AccessToken
	if t.RefreshToken != "" {
		r.RefreshToken = t.RefreshToken // a server that does not rotate sends none
	}
	r.TokenType = t.TokenType
	r.Expiry = t.Expiry.UTC()
	if s, ok := t.Extra("scope").(string); ok && s != "" {
		r.Scopes = strings.Fields(s)
	} else if asked != nil {
		r.Scopes = asked
	}
	r.LastRefreshError = ""
	r.Wanted = slices.DeleteFunc(r.Wanted, func(w string) bool { return slices.Contains(r.Scopes, w) })
}

// TokenError is a refusal of the token endpoint.
type TokenError struct {
	What, Code, Description string
}

func (e *TokenError) Error() string {
	msg := fmt.Sprintf("%s was refused: %s", e.What, safe.Line(e.Code))
	if e.Description != "" {
		msg += ": " + safe.Line(e.Description)
	}
	return msg
}

// InvalidGrant reports a refresh token the server no longer takes: only a
// new login helps.
func (e *TokenError) InvalidGrant() bool { return e.Code == "invalid_grant" }

// refresh spends r's refresh token (grant_type refresh_token, with the
// resource, RFC 8707) and records the answer in r.
func (f *Flow) refresh(ctx context.Context, r *Record) error {
	if f.Settings.Machine() {
		return f.machineGrant(ctx, r, append(slices.Clone(r.Scopes), r.Wanted...))
	}
	if r.RefreshToken == "" {
		return &TokenError{What: "the refresh", Code: "invalid_grant", Description: "no refresh token was issued"}
	}
	v := url.Values{"grant_type": {"refresh_token"}, "refresh_token": {r.RefreshToken}}
	if r.Resource != "" {
		v.Set("resource", r.Resource)
	}
	t, err := f.tokenRequest(ctx, "the refresh", r, v)
	if err != nil {
		return err
	}
	r.setToken(t, nil)
	return nil
}

// tokenRequest posts a form to the token endpoint with the client's
// authentication, and reads the token response.
func (f *Flow) tokenRequest(ctx context.Context, what string, r *Record, v url.Values) (*oauth2.Token, error) {
	var key *dpopKey
	if r.DPoPKey != "" {
		k, err := parseDPoPKey(r.DPoPKey)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", what, err)
		}
		key = k
	}
	var resp *http.Response
	for try := 0; ; try++ {
		req, err := f.clientRequest(ctx, r.TokenEndpoint, r, maps.Clone(v))
		if err != nil {
			return nil, err
		}
		if key != nil {
			proof, err := key.proof(http.MethodPost, r.TokenEndpoint, "", f.nonces.get(r.TokenEndpoint), time.Now())
			if err != nil {
				return nil, err
			}
			req.Header.Set("DPoP", proof)
		}
		if resp, err = f.HTTP.Do(req); err != nil {
			return nil, fmt.Errorf("%s at %s: %w", what, safeURL(r.TokenEndpoint), err)
		}
		fresh := key != nil && f.nonces.keep(r.TokenEndpoint, resp.Header)
		if try == 0 && fresh && resp.StatusCode == http.StatusBadRequest && useDPoPNonce(resp) {
			resp.Body.Close()
			continue // asked again with the server's nonce, once (docs/rfc/0007-oauth.md, "DPoP")
		}
		break
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, maxMetadataBytes))
	var tr struct {
		AccessToken  string `json:"access_token"`
		TokenType    string `json:"token_type"`
		RefreshToken string `json:"refresh_token"`
		ExpiresIn    int64  `json:"expires_in"`
		Scope        string `json:"scope"`
		IDToken      string `json:"id_token"` // OpenID Connect: the IdP login's (idplogin.go)
		Error        string `json:"error"`
		Description  string `json:"error_description"`
	}
	_ = json.Unmarshal(b, &tr)
	if resp.StatusCode == http.StatusOK && key == nil && strings.EqualFold(tr.TokenType, "DPoP") {
		return nil, fmt.Errorf("%s: the authorization server issued a DPoP-bound token to a login that sent no proof", what)
	}
	if resp.StatusCode != http.StatusOK || tr.AccessToken == "" {
		return nil, refused(what, resp.StatusCode, tr.Error, tr.Description)
	}
	if f.Store != nil {
		f.Store.Secrets.AddCredential(tr.AccessToken, tr.RefreshToken, tr.IDToken)
	}
	t := &oauth2.Token{AccessToken: tr.AccessToken, TokenType: tr.TokenType, RefreshToken: tr.RefreshToken}
	if tr.ExpiresIn > 0 {
		t.Expiry = time.Now().Add(time.Duration(tr.ExpiresIn) * time.Second)
	}
	if extra := map[string]any{}; tr.Scope != "" || tr.IDToken != "" {
		if tr.Scope != "" {
			extra["scope"] = tr.Scope
		}
		if tr.IDToken != "" {
			extra["id_token"] = tr.IDToken
		}
		t = t.WithExtra(extra)
	}
	return t, nil
}

// refused is a token endpoint's refusal: its error code, else the HTTP
// status.
func refused(what string, status int, code, description string) *TokenError {
	if code == "" {
		code = fmt.Sprintf("HTTP %d", status)
	}
	return &TokenError{What: what, Code: code, Description: description}
}

// useDPoPNonce reports a token endpoint's error use_dpop_nonce (it reads
// the body: resp is then only good for closing).
func useDPoPNonce(resp *http.Response) bool {
	var e struct {
		Error string `json:"error"`
	}
	_ = json.NewDecoder(io.LimitReader(resp.Body, maxMetadataBytes)).Decode(&e)
	return e.Error == "use_dpop_nonce"
}

// clientRequest is a form POST with the authentication of r's client at
// the token (or revocation) endpoint of r's authorization server.
func (f *Flow) clientRequest(ctx context.Context, endpoint string, r *Record, v url.Values) (*http.Request, error) {
	c := r.Client
	switch c.AuthMethod {
	case "client_secret_basic":
	case "private_key_jwt":
		if f.Settings.Key == nil {
			return nil, errors.New("the client authenticates with private_key_jwt, and no private key is set (oauth.privateKey)")
		}
		a, err := f.Settings.Key.assertion(c.ID, r.Issuer, time.Now())
		if err != nil {
			return nil, err
		}
		// The assertion is not added to the secret set: one is made at every
		// token request, it is good for minutes, and nothing prints a request.
		v.Set("client_id", c.ID)
		v.Set("client_assertion_type", AssertionType)
		v.Set("client_assertion", a)
	default:
		if c.ID != "" { // a jwt bearer grant may name no client (RFC 7523 §3.1)
			v.Set("client_id", c.ID)
		}
		if c.AuthMethod == "client_secret_post" {
			v.Set("client_secret", c.Secret)
		}
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, endpoint, strings.NewReader(v.Encode()))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Accept", "application/json")
	if c.AuthMethod == "client_secret_basic" {
		req.SetBasicAuth(url.QueryEscape(c.ID), url.QueryEscape(c.Secret))
	}
	return req, nil
}

// Revoke revokes r's tokens where the authorization server offers RFC
// 7009, the refresh token first (that ends the access tokens too at most
// servers). It reports what it could not revoke.
func (f *Flow) Revoke(ctx context.Context, r *Record) error {
	if r.RevocationEndpoint == "" {
		return nil
	}
	var errs []error
	for _, t := range []struct{ value, hint string }{{r.RefreshToken, "refresh_token"}, {r.AccessToken, "access_token"}} {
		if t.value == "" {
			continue
		}
		req, err := f.clientRequest(ctx, r.RevocationEndpoint, r, url.Values{"token": {t.value}, "token_type_hint": {t.hint}})
		if err != nil {
			errs = append(errs, err)
			continue
		}
		resp, err := f.HTTP.Do(req)
		if err != nil {
			errs = append(errs, fmt.Errorf("revoking the %s at %s: %w", strings.ReplaceAll(t.hint, "_", " "), safeURL(r.RevocationEndpoint), err))
			continue
		}
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, maxMetadataBytes))
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			errs = append(errs, fmt.Errorf("revoking the %s at %s: HTTP %d", strings.ReplaceAll(t.hint, "_", " "), safeURL(r.RevocationEndpoint), resp.StatusCode))
		}
	}
	return errors.Join(errs...)
}
