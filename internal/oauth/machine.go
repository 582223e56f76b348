package oauth

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strings"

	"github.com/harness-go/harness/internal/safe"
)

// Machine clients (docs/rfc/0007-oauth.md, "Machine clients"): an entry
// whose oauth.grant is client_credentials or jwt_bearer gets its tokens
// with what it holds, and nobody logs in. client_credentials (OAuth 2.1
// §4.2, the MCP extension io.modelcontextprotocol/oauth-client-credentials)
// presents the client's own credentials: a client secret
// (client_secret_basic or client_secret_post, as the authorization server
// takes them) or a private key (private_key_jwt, RFC 7523 §2.2).
// jwt_bearer (RFC 7523 §2.1, workload identity federation, the extension
// io.modelcontextprotocol/auth/wif) presents a workload's identity token —
// a JWT its platform issued (a Kubernetes service account token, a CI
// job's OIDC token), or an ID-JAG its IdP exchanged for a person's ID
// token (enterprise-managed authorization, idjag.go) — as the grant
// itself; the client authenticates as for client_credentials, or not at
// all. The first 401 gets a token, and an expired or refused one gets the
// next. The token is kept in the store like a person's login, so that the
// next run of the CLI reuses it; there is no refresh token.

// The Client.Registration of machine clients, one per grant.
const (
	RegistrationClientCredentials = "client-credentials"
	RegistrationJWTBearer         = "jwt-bearer"
)

// JWTBearerGrant is the grant_type of RFC 7523's JWT bearer grant.
const JWTBearerGrant = "urn:ietf:params:oauth:grant-type:jwt-bearer"

// grantType is the token request's grant_type of a machine flow, and
// registration its records' Client.Registration.
func (s *Settings) grantType() (grantType, registration string) {
	if s.Grant == GrantJWTBearer {
		return JWTBearerGrant, RegistrationJWTBearer
	}
	return GrantClientCredentials, RegistrationClientCredentials
}

// grantName is how errors name the grant.
func (s *Settings) grantName() string {
	if s.Grant == GrantJWTBearer {
		return "the jwt bearer grant"
	}
	return "the client credentials grant"
}

// MachineToken discovers the authorization server (ch is the server's
// challenge, nil when none was seen), gets a token with the grant of a
// machine flow and saves it.
func (f *Flow) MachineToken(ctx context.Context, ch *Challenge) (*Record, error) {
	d, err := Discover(ctx, f.HTTP, f.Server, ch, f.Settings.AuthServerMetadataURL)
	if err != nil {
		return nil, err
	}
	c, err := f.machineClient(d.AS)
	if err != nil {
		return nil, err
	}
	rec := &Record{
		Server:                f.Server,
		Resource:              d.Resource,
		Issuer:                d.AS.Issuer,
		TokenEndpoint:         d.AS.TokenEndpoint,
		RevocationEndpoint:    d.AS.RevocationEndpoint,
		RevocationAuthMethods: d.AS.RevocationAuthMethodsSupported,
		Client:                c,
	}
	dpop, err := f.wantDPoP(d, ch)
	if err != nil {
		return nil, err
	}
	if dpop {
		if rec.DPoPKey, err = newDPoPKey(); err != nil {
			return nil, err
		}
	}
	if err := f.machineGrant(ctx, rec, f.machineScopes(d, ch)); err != nil {
		return nil, err
	}
	if err := f.Store.Save(rec); err != nil {
		return nil, err
	}
	return rec, nil
}

// machineScopes are what a machine client asks for: the entry's scopes,
// else the challenge's, else the resource metadata's scopes_supported; a
// step-up (403 insufficient_scope) adds the scopes it names. Never
// offline_access: a client credentials grant issues no refresh token.
func (f *Flow) machineScopes(d *Discovery, ch *Challenge) []string {
	s := f.askedScopes(d, ch)
	if ch.InsufficientScope() {
		s = addScopes(s, ch.Scopes...)
	}
	return slices.DeleteFunc(s, func(v string) bool { return v == "offline_access" })
}

// machineClient is the client of the entry's credentials, with the
// authentication the authorization server takes; an error says why the
// server cannot take this client.
func (f *Flow) machineClient(as *ServerMetadata) (Client, error) {
	st := f.Settings
	grant, registration := st.grantType()
	jwtBearer := st.Grant == GrantJWTBearer
	if st.ClientID == "" && (!jwtBearer || st.ClientSecret != "" || st.Key != nil) {
		return Client{}, fmt.Errorf("%s needs oauth.clientId", st.grantName())
	}
	if jwtBearer && st.Assertion == nil && st.IdP == nil {
		return Client{}, errors.New("the jwt bearer grant needs oauth.assertion, oauth.assertionFile or oauth.idp")
	}
	if g := as.GrantTypesSupported; len(g) > 0 && !slices.Contains(g, grant) {
		return Client{}, fmt.Errorf("the authorization server %s does not offer %s (its grant_types_supported: %s)", safe.Line(as.Issuer), st.grantName(), safe.Line(strings.Join(g, ", ")))
	}
	methods := as.TokenEndpointAuthMethodsSupported
	c := Client{ID: st.ClientID, Registration: registration}
	switch {
	case st.Key != nil:
		if len(methods) > 0 && !slices.Contains(methods, "private_key_jwt") {
			return Client{}, fmt.Errorf("the authorization server %s takes no private_key_jwt client authentication (it takes %s): set oauth.clientSecret instead of a private key", safe.Line(as.Issuer), safe.Line(strings.Join(methods, ", ")))
		}
		if algs := as.TokenEndpointAuthSigningAlgs; len(algs) > 0 && !slices.Contains(algs, st.Key.Alg) {
			return Client{}, fmt.Errorf("the authorization server %s takes no %s client assertions (it takes %s): use a key of one of those", safe.Line(as.Issuer), st.Key.Alg, safe.Line(strings.Join(algs, ", ")))
		}
		c.AuthMethod = "private_key_jwt"
	case st.ClientSecret != "":
		if len(methods) > 0 && !slices.Contains(methods, "client_secret_basic") && !slices.Contains(methods, "client_secret_post") {
			return Client{}, fmt.Errorf("the authorization server %s takes no client secret at its token endpoint (it takes %s)", safe.Line(as.Issuer), safe.Line(strings.Join(methods, ", ")))
		}
		c.Secret = st.ClientSecret
		c.AuthMethod = pickAuthMethod(methods)
	case jwtBearer:
		// The assertion is the grant; the client need not authenticate
		// (RFC 7523 §3.1), unless the server says otherwise.
		if len(methods) > 0 && !slices.Contains(methods, "none") {
			return Client{}, fmt.Errorf("the authorization server %s wants the client to authenticate (it takes %s): set oauth.clientId with oauth.clientSecret or a private key", safe.Line(as.Issuer), safe.Line(strings.Join(methods, ", ")))
		}
		c.AuthMethod = "none"
	default:
		return Client{}, errors.New("the client credentials grant needs oauth.clientSecret or oauth.privateKey")
	}
	return c, nil
}

// machineGrant asks r's token endpoint for a token with the machine
// flow's grant (and the resource, RFC 8707) and records it in r.
func (f *Flow) machineGrant(ctx context.Context, r *Record, scopes []string) error {
	if !f.usable(r) {
		return &NeedsLoginError{Reason: "the token in the store is not this client's"}
	}
	r.Client.Secret = f.Settings.ClientSecret // the entry's, which an edit may have changed
	grant, _ := f.Settings.grantType()
	v := url.Values{"grant_type": {grant}}
	if st := f.Settings; st.Grant == GrantJWTBearer {
		var a string
		switch {
		case st.Assertion != nil:
			var err error
			if a, err = st.Assertion(); err != nil {
				return fmt.Errorf("the jwt bearer grant: the workload's token: %w", err)
			}
			if !LooksLikeJWT(a) {
				return errors.New("the jwt bearer grant: the workload's token is not a JWT (three dot-separated parts)")
			}
		case st.IdP != nil:
			var err error
			if a, err = f.idJAG(ctx, st.IdP, r, scopes); err != nil {
				return err
			}
		default:
			return errors.New("the jwt bearer grant needs oauth.assertion, oauth.assertionFile or oauth.idp")
		}
		v.Set("assertion", a)
	}
	if len(scopes) > 0 {
		v.Set("scope", strings.Join(scopes, " "))
	}
	if r.Resource != "" {
		v.Set("resource", r.Resource)
	}
	t, err := f.tokenRequest(ctx, f.Settings.grantName(), r, v)
	if err != nil {
		return err
	}
	r.setToken(t, scopes)
	r.RefreshToken = "" // none is spent: the next token is another grant
	return nil
}

// usable reports whether r is a login this flow may use: a machine flow
// uses only the tokens of its own client, a person's flow none of a
// machine's.
func (f *Flow) usable(r *Record) bool {
	if r == nil {
		return false
	}
	reg := r.Client.Registration
	if f.Settings.Machine() {
		_, want := f.Settings.grantType()
		return reg == want && r.Client.ID == f.Settings.ClientID
	}
	return reg != RegistrationClientCredentials && reg != RegistrationJWTBearer
}
