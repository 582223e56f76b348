package oauth

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"slices"
	"strings"
	"time"

	"golang.org/x/oauth2"

	"github.com/harness-go/harness/internal/safe"
)

// The IdP login (docs/rfc/0007-oauth.md, "The IdP login"): an
// enterprise-managed entry (idjag.go) whose oauth.idp gives no ID token gets
// the person's from a login of the harness's own at the IdP, kept in the
// store and shared by every entry of that IdP and client:
//
//  1. `harness login` of such an entry (and the page's Log in) reads the
//     IdP's metadata at its issuer and sends the person to its
//     authorization endpoint: OpenID Connect's code flow, with PKCE (S256),
//     a state and a nonce, scope openid (and offline_access where the IdP
//     lists it), the redirect on the loopback as in any login. A login
//     already in the store that still gives an ID token is used as it is:
//     nobody is asked twice.
//  2. The code is exchanged at the token endpoint, the client
//     authenticated as at the token exchange. The ID token of the answer
//     is checked — its issuer, its audience (the client), its nonce, its
//     expiry; not its signature: it came straight from the IdP's token
//     endpoint, over TLS (OpenID Connect Core §3.1.3.7) — and kept with
//     the refresh token in the record of (the issuer, the client).
//  3. At every grant the ID token in the store is used while it has more
//     than IDTokenMargin left; then the refresh token gets a new one, under
//     the record's lock file as a server's refresh is, its issuer and
//     audience checked again. No record, a refresh token refused, or an
//     IdP whose refresh gives no ID token: the entry needs a login
//     (a *NeedsLoginError). The record is in the store's folder, whose
//     change an entry waiting for a login sees (Tokens.Changed): one login
//     at the IdP serves every entry that goes through it.
//  4. `harness logout` of such an entry ends the IdP login too (its
//     refresh token revoked where the IdP offers RFC 7009): every entry
//     through it needs a login again.

// RegistrationIdP is the Client.Registration of an IdP login's record.
const RegistrationIdP = "idp-login"

// IDTokenMargin is how long an ID token must still be good for to be
// exchanged: the IdP checks it, and the ID-JAG it gives lives for minutes.
const IDTokenMargin = time.Minute

// IdPLogin reports whether the flow's ID token comes from the harness's
// own login at the IdP (an IdP that names no ID token).
func (s *Settings) IdPLogin() bool {
	return s.Grant == GrantJWTBearer && s.Assertion == nil && s.IdP != nil && s.IdP.IDToken == nil
}

// server is the Record.Server of the IdP login: the issuer, with the
// client (one login per client at the IdP).
func (p *IdP) server() string {
	return Canonical(p.Issuer) + "?client_id=" + url.QueryEscape(p.ClientID)
}

// client is the harness's client at the IdP.
func (p *IdP) client() Client {
	c := Client{ID: p.ClientID, Secret: p.ClientSecret, AuthMethod: "none", Registration: RegistrationIdP}
	if p.ClientSecret != "" {
		c.AuthMethod = "client_secret_basic"
	}
	return c
}

// IdPLoginRecord returns the record of the IdP login of p (nil: none).
func (s *Store) IdPLoginRecord(p *IdP) (*Record, error) {
	r, err := s.readAt(p.server(), p.Issuer)
	if r != nil && r.Client.Registration != RegistrationIdP {
		return nil, err
	}
	return r, err
}

// IdPLoggedIn reports whether the store holds a login at the flow's IdP
// that can still give an ID token.
func (f *Flow) IdPLoggedIn() bool {
	if !f.Settings.IdPLogin() {
		return false
	}
	r, _ := f.Store.IdPLoginRecord(f.Settings.IdP)
	return r != nil && (r.IDToken != "" || r.RefreshToken != "")
}

// ensureIdPLogin is point 1's "nobody is asked twice": the person logs in
// at the IdP unless the store's login still gives an ID token.
func (f *Flow) ensureIdPLogin(ctx context.Context, o LoginOptions) error {
	_, err := f.idpIDToken(ctx, f.Settings.IdP)
	if !errors.Is(err, ErrNoLogin) {
		return err
	}
	_, err = f.LoginIdP(ctx, o)
	return err
}

// LoginIdP is points 1 and 2: the person logs in at the flow's IdP, and the
// login is saved.
func (f *Flow) LoginIdP(ctx context.Context, o LoginOptions) (*Record, error) {
	idp := f.Settings.IdP
	if !f.Settings.IdPLogin() {
		return nil, errors.New("this entry logs in at no IdP (oauth.idp with neither idToken nor idTokenFile)")
	}
	m, err := f.idpMetadata(ctx, idp)
	if err != nil {
		return nil, err
	}
	if m.AuthorizationEndpoint == "" {
		return nil, fmt.Errorf("the IdP %s names no authorization_endpoint: it logs nobody in here; give the person's ID token (oauth.idp.idToken or idTokenFile)", safe.Line(idp.Issuer))
	}
	if err := httpsOrLoopback(m.AuthorizationEndpoint); err != nil {
		return nil, err
	}
	scopes := []string{"openid"}
	if slices.Contains(m.ScopesSupported, "offline_access") {
		scopes = append(scopes, "offline_access")
	}
	client := idp.client()
	verifier, state, nonce := oauth2.GenerateVerifier(), rand.Text(), rand.Text()
	var redirectURI string
	redirect, err := browse(ctx, o, f.Settings.CallbackPort, func(ru string) (string, string, error) {
		redirectURI = ru
		cfg := &oauth2.Config{ClientID: client.ID, Endpoint: oauth2.Endpoint{AuthURL: m.AuthorizationEndpoint}, RedirectURL: ru, Scopes: scopes}
		return cfg.AuthCodeURL(state, oauth2.S256ChallengeOption(verifier), oauth2.SetAuthURLParam("nonce", nonce)), state, nil
	})
	if err != nil {
		return nil, err
	}
	code, err := f.redirectCode(redirect, state, m)
	if err != nil {
		return nil, err
	}
	rec := &Record{
		Server:                idp.server(),
		Issuer:                m.Issuer,
		AuthorizationEndpoint: m.AuthorizationEndpoint,
		TokenEndpoint:         m.TokenEndpoint,
		RevocationEndpoint:    m.RevocationEndpoint,
		RevocationAuthMethods: m.RevocationAuthMethodsSupported,
		Client:                client,
	}
	v := url.Values{"grant_type": {"authorization_code"}, "code": {code}, "redirect_uri": {redirectURI}, "code_verifier": {verifier}}
	tok, err := f.tokenRequest(ctx, "the code exchange at the IdP", rec, v)
	if err != nil {
		return nil, err
	}
	idToken, _ := tok.Extra("id_token").(string)
	if _, err := checkIDToken(idToken, idp, nonce, time.Now()); err != nil {
		return nil, fmt.Errorf("the login at the IdP %s: %w", safe.Line(idp.Issuer), err)
	}
	rec.setToken(tok, scopes)
	rec.IDToken = idToken
	if err := f.Store.Save(rec); err != nil {
		return nil, err
	}
	return rec, nil
}

// idpIDToken is point 3.
func (f *Flow) idpIDToken(ctx context.Context, idp *IdP) (string, error) {
	st := f.Store
	now := time.Now()
	needs := func(why string) error {
		return &NeedsLoginError{Reason: why + " (the IdP " + safe.Line(idp.Issuer) + ")"}
	}
	rec, err := st.IdPLoginRecord(idp)
	switch {
	case err != nil:
		return "", needs((&ReadNote{Path: st.Path(idp.server(), idp.Issuer), Err: err}).Error())
	case rec == nil:
		return "", needs("nobody logged in at the IdP in " + st.Dir)
	case goodIDToken(rec.IDToken, idp, now):
		return rec.IDToken, nil
	case rec.RefreshToken == "":
		return "", needs("the ID token of the login at the IdP expired, and the IdP gave no refresh token")
	}
	path := st.Path(rec.Server, rec.Issuer)
	unlock, err := lock(path + ".lock")
	if err != nil {
		return "", fmt.Errorf("the lock of the token file %s: %w", path, err)
	}
	defer unlock()
	cur, err := st.IdPLoginRecord(idp)
	switch {
	case err != nil || cur == nil || cur.RefreshToken == "" && cur.IDToken == "":
		return "", needs("logged out at the IdP (the token file is gone)")
	case goodIDToken(cur.IDToken, idp, now):
		return cur.IDToken, nil // another process refreshed while we waited for the lock
	}
	cur.Client.Secret = idp.ClientSecret // the entry's, which an edit may have changed
	v := url.Values{"grant_type": {"refresh_token"}, "refresh_token": {cur.RefreshToken}}
	if len(cur.Scopes) > 0 {
		v.Set("scope", strings.Join(cur.Scopes, " "))
	}
	tok, err := f.tokenRequest(ctx, "the refresh at the IdP", cur, v)
	var te *TokenError
	switch {
	case errors.As(err, &te) && te.InvalidGrant():
		cur.AccessToken, cur.RefreshToken, cur.IDToken = "", "", ""
		cur.LastRefreshError = err.Error()
		_ = st.Save(cur)
		return "", needs(err.Error())
	case err != nil:
		cur.LastRefreshError = err.Error()
		_ = st.Save(cur)
		return "", err
	}
	idToken, _ := tok.Extra("id_token").(string)
	if idToken == "" {
		// Its refresh token is no use here: the login ends, and the person
		// is asked again (an entry waiting for a login must not refresh in
		// a loop).
		cur.AccessToken, cur.RefreshToken, cur.IDToken = "", "", ""
		cur.LastRefreshError = "the IdP's refresh gave no new ID token"
		_ = st.Save(cur)
		return "", needs(cur.LastRefreshError)
	}
	if _, err := checkIDToken(idToken, idp, "", now); err != nil {
		return "", fmt.Errorf("the refresh at the IdP %s: %w", safe.Line(idp.Issuer), err)
	}
	cur.setToken(tok, nil)
	cur.IDToken = idToken
	if err := st.Save(cur); err != nil {
		return "", err
	}
	return idToken, nil
}

// goodIDToken reports whether tok is an ID token of idp good for more than
// IDTokenMargin after now.
func goodIDToken(tok string, idp *IdP, now time.Time) bool {
	c, err := checkIDToken(tok, idp, "", now)
	return err == nil && now.Add(IDTokenMargin).Before(c.Expiry())
}

// IDClaims are the claims of an ID token the harness reads.
type IDClaims struct {
	Iss               string          `json:"iss"`
	Sub               string          `json:"sub"`
	Aud               json.RawMessage `json:"aud"` // a string or an array of them
	Exp               int64           `json:"exp"`
	Nonce             string          `json:"nonce"`
	Email             string          `json:"email"`
	PreferredUsername string          `json:"preferred_username"`
}

// Expiry is when the ID token ends (its exp).
func (c *IDClaims) Expiry() time.Time { return time.Unix(c.Exp, 0) }

// User is who the ID token says logged in: the email, else the
// preferred username, else the subject.
func (c *IDClaims) User() string {
	switch {
	case c.Email != "":
		return c.Email
	case c.PreferredUsername != "":
		return c.PreferredUsername
	}
	return c.Sub
}

// audiences are the token's aud.
func (c *IDClaims) audiences() []string {
	var one string
	if json.Unmarshal(c.Aud, &one) == nil {
		return []string{one}
	}
	var many []string
	_ = json.Unmarshal(c.Aud, &many)
	return many
}

// ParseIDToken reads the claims of a compact JWT, unverified.
func ParseIDToken(tok string) (*IDClaims, error) {
	if !LooksLikeJWT(tok) {
		return nil, errors.New("the ID token is not a JWT (three dot-separated parts)")
	}
	part := strings.Split(tok, ".")[1]
	b, err := base64.RawURLEncoding.DecodeString(strings.TrimRight(part, "="))
	if err != nil {
		return nil, fmt.Errorf("the ID token's claims are not base64url: %w", err)
	}
	var c IDClaims
	if err := json.Unmarshal(b, &c); err != nil {
		return nil, fmt.Errorf("the ID token's claims are not a JSON object: %w", err)
	}
	return &c, nil
}

// checkIDToken checks an ID token from idp's token endpoint (point 2): its
// issuer, its audience, its nonce (when one was sent: a refresh's token
// carries none, or the login's), and that it has not expired at now.
func checkIDToken(tok string, idp *IdP, nonce string, now time.Time) (*IDClaims, error) {
	if tok == "" {
		return nil, errors.New("the IdP's answer holds no id_token (is openid among the client's scopes there?)")
	}
	c, err := ParseIDToken(tok)
	switch {
	case err != nil:
		return nil, err
	case c.Iss != idp.Issuer:
		return nil, fmt.Errorf("the ID token's issuer %q is not the IdP's %q: refused", safe.Line(c.Iss), safe.Line(idp.Issuer))
	case !slices.Contains(c.audiences(), idp.ClientID):
		return nil, fmt.Errorf("the ID token is for %s, not the client %q: refused", safe.Line(string(c.Aud)), safe.Line(idp.ClientID))
	case nonce != "" && c.Nonce != nonce:
		return nil, errors.New("the ID token's nonce is not this login's: refused")
	case c.Exp == 0 || !now.Before(c.Expiry()):
		return nil, errors.New("the ID token has expired")
	}
	return c, nil
}

// LogoutIdP is point 4: the flow's IdP login is removed from the store, and
// its tokens are revoked where the IdP offers revocation. It returns
// whether there was one; the error is what could not be removed or
// revoked.
func (f *Flow) LogoutIdP(ctx context.Context) (bool, error) {
	if !f.Settings.IdPLogin() {
		return false, nil
	}
	p := f.Settings.IdP
	rec, _ := f.Store.IdPLoginRecord(p)
	path := f.Store.Path(p.server(), p.Issuer)
	var errs []error
	for _, name := range []string{path, path + ".lock"} {
		if err := os.Remove(name); err != nil && !errors.Is(err, fs.ErrNotExist) {
			errs = append(errs, err)
		}
	}
	if rec == nil {
		return false, errors.Join(errs...)
	}
	rec.AccessToken = "" // the IdP's own access token is not used: the refresh token is what ends the login
	if err := f.Revoke(ctx, rec); err != nil {
		errs = append(errs, err)
	}
	return true, errors.Join(errs...)
}
