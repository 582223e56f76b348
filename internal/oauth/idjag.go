package oauth

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"

	"github.com/harness-go/harness/internal/safe"
)

// Enterprise-managed authorization (docs/rfc/0007-oauth.md,
// "Enterprise-managed authorization"; the MCP extension
// io.modelcontextprotocol/enterprise-managed-authorization, SEP-990): the
// company's identity provider, not each server, decides who may use what.
// A jwt bearer flow with an IdP gets its assertion there, at every grant:
//
//  1. The IdP's token endpoint is its own (IdP.TokenEndpoint) or read from
//     its metadata (IdP.Issuer: RFC 8414 or OpenID Connect discovery, the
//     issuer matched exactly).
//  2. A token exchange (RFC 8693) presents the person's ID token from that
//     IdP (subject_token_type id_token: IdP.IDToken's, else that of the
//     harness's own login at the IdP, idplogin.go) and asks for an Identity Assertion
//     JWT Authorization Grant (requested_token_type id-jag) for the
//     authorization server (audience: its issuer), the resource (RFC 8707)
//     and the scopes; the harness's client at the IdP authenticates with
//     its secret (client_secret_basic), or names itself.
//  3. The ID-JAG is the assertion of the jwt bearer grant at the
//     authorization server, where the client authenticates as any machine
//     client does. It is good for minutes and is never stored; it joins
//     the secret set.

// The token types of the exchange.
const (
	TokenExchangeGrant = "urn:ietf:params:oauth:grant-type:token-exchange"
	tokenTypeIDToken   = "urn:ietf:params:oauth:token-type:id_token"
	tokenTypeIDJAG     = "urn:ietf:params:oauth:token-type:id-jag"
)

// IdP is the identity provider of an enterprise-managed jwt bearer flow.
type IdP struct {
	// Issuer is the IdP's issuer identifier; its metadata names the token
	// endpoint, unless TokenEndpoint does.
	Issuer        string
	TokenEndpoint string
	// ClientID and ClientSecret are the harness's client at the IdP (the
	// secret may be "": a public client).
	ClientID, ClientSecret string
	// IDToken gives the person's ID token from the IdP, asked for at every
	// grant (it expires, and whoever writes it renews it); nil: the
	// harness's own login at the IdP gives it (idplogin.go).
	IDToken func() (string, error)
}

// idJAG gets an ID-JAG from the IdP for r's authorization server and
// resource (points 1 and 2).
func (f *Flow) idJAG(ctx context.Context, idp *IdP, r *Record, scopes []string) (string, error) {
	const what = "the token exchange at the IdP"
	endpoint, err := f.idpTokenEndpoint(ctx, idp)
	if err != nil {
		return "", err
	}
	var idToken string
	if idp.IDToken != nil {
		idToken, err = idp.IDToken()
	} else {
		idToken, err = f.idpIDToken(ctx, idp) // the harness's own login at the IdP (idplogin.go)
	}
	if err != nil {
		return "", fmt.Errorf("%s: the ID token: %w", what, err)
	}
	if !LooksLikeJWT(idToken) {
		return "", fmt.Errorf("%s: the ID token is not a JWT (three dot-separated parts)", what)
	}
	v := url.Values{
		"grant_type":           {TokenExchangeGrant},
		"requested_token_type": {tokenTypeIDJAG},
		"subject_token":        {idToken},
		"subject_token_type":   {tokenTypeIDToken},
		"audience":             {r.Issuer},
	}
	if r.Resource != "" {
		v.Set("resource", r.Resource)
	}
	if len(scopes) > 0 {
		v.Set("scope", strings.Join(scopes, " "))
	}
	client := &Record{Client: Client{ID: idp.ClientID, Secret: idp.ClientSecret, AuthMethod: "none"}}
	if idp.ClientSecret != "" {
		client.Client.AuthMethod = "client_secret_basic"
	}
	req, err := f.clientRequest(ctx, endpoint, client, v)
	if err != nil {
		return "", err
	}
	resp, err := f.HTTP.Do(req)
	if err != nil {
		return "", fmt.Errorf("%s at %s: %w", what, safeURL(endpoint), err)
	}
	defer resp.Body.Close()
	var tr struct {
		AccessToken     string `json:"access_token"`
		IssuedTokenType string `json:"issued_token_type"`
		Error           string `json:"error"`
		Description     string `json:"error_description"`
	}
	_ = json.NewDecoder(io.LimitReader(resp.Body, maxMetadataBytes)).Decode(&tr)
	if resp.StatusCode != http.StatusOK || tr.AccessToken == "" {
		return "", refused(what, resp.StatusCode, tr.Error, tr.Description)
	}
	if f.Store != nil {
		f.Store.Secrets.AddCredential(tr.AccessToken)
	}
	if tr.IssuedTokenType != "" && tr.IssuedTokenType != tokenTypeIDJAG {
		return "", fmt.Errorf("%s: the IdP issued a %s, not an ID-JAG", what, safe.Line(tr.IssuedTokenType))
	}
	return tr.AccessToken, nil
}

// idpTokenEndpoint is point 1.
func (f *Flow) idpTokenEndpoint(ctx context.Context, idp *IdP) (string, error) {
	if e := idp.TokenEndpoint; e != "" {
		return e, httpsOrLoopback(e)
	}
	m, err := f.idpMetadata(ctx, idp)
	if err != nil {
		return "", err
	}
	return m.TokenEndpoint, nil
}

// idpMetadata reads the IdP's metadata at its issuer (RFC 8414, OpenID
// Connect discovery), the issuer matched exactly and the token endpoint
// checked.
func (f *Flow) idpMetadata(ctx context.Context, idp *IdP) (*ServerMetadata, error) {
	if idp.Issuer == "" {
		return nil, errors.New("the IdP needs its issuer or its token endpoint (oauth.idp.issuer, oauth.idp.tokenEndpoint)")
	}
	var errs []error
	for _, u := range serverMetadataURLs(idp.Issuer) {
		var m ServerMetadata
		found, err := getJSON(ctx, f.HTTP, u, &m)
		switch {
		case err != nil:
			if ctx.Err() != nil {
				return nil, err
			}
			errs = append(errs, err)
			continue
		case !found:
			continue
		case m.Issuer != idp.Issuer:
			return nil, fmt.Errorf("the IdP's metadata at %s: its issuer %q is not %q: refused", safeURL(u), safe.Line(m.Issuer), safe.Line(idp.Issuer))
		case m.TokenEndpoint == "":
			return nil, fmt.Errorf("the IdP's metadata at %s names no token_endpoint", safeURL(u))
		}
		return &m, httpsOrLoopback(m.TokenEndpoint)
	}
	if len(errs) == 0 {
		return nil, fmt.Errorf("the IdP %s publishes no metadata (tried %s): set oauth.idp.tokenEndpoint", safe.Line(idp.Issuer), strings.Join(serverMetadataURLs(idp.Issuer), ", "))
	}
	return nil, fmt.Errorf("the IdP %s: %w", safe.Line(idp.Issuer), errors.Join(errs...))
}
