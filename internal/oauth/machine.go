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
// with oauth.grant client_credentials gets its tokens with its own
// credentials (OAuth 2.1 §4.2, the MCP extension
// io.modelcontextprotocol/oauth-client-credentials): a client secret
// (client_secret_basic or client_secret_post, as the authorization server
// takes them) or a private key (private_key_jwt, RFC 7523). Nobody logs in:
// the first 401 gets a token, and an expired or refused one gets the next.
// The token is kept in the store like a person's login, so that the next
// run of the CLI reuses it; there is no refresh token.

// RegistrationMachine is the Client.Registration of a machine client.
const RegistrationMachine = "client-credentials"

// ClientCredentials discovers the authorization server (ch is the server's
// challenge, nil when none was seen), gets a token with the client's
// credentials and saves it.
func (f *Flow) ClientCredentials(ctx context.Context, ch *Challenge) (*Record, error) {
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
	if err := f.grantClientCredentials(ctx, rec, f.machineScopes(d, ch)); err != nil {
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
	if st.ClientID == "" {
		return Client{}, errors.New("the client credentials grant needs oauth.clientId")
	}
	if g := as.GrantTypesSupported; len(g) > 0 && !slices.Contains(g, GrantClientCredentials) {
		return Client{}, fmt.Errorf("the authorization server %s does not offer the client credentials grant (its grant_types_supported: %s)", safe.Line(as.Issuer), safe.Line(strings.Join(g, ", ")))
	}
	methods := as.TokenEndpointAuthMethodsSupported
	c := Client{ID: st.ClientID, Registration: RegistrationMachine}
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
	default:
		return Client{}, errors.New("the client credentials grant needs oauth.clientSecret or oauth.privateKey")
	}
	return c, nil
}

// grantClientCredentials asks r's token endpoint for a token with the
// client's credentials (and the resource, RFC 8707) and records it in r.
func (f *Flow) grantClientCredentials(ctx context.Context, r *Record, scopes []string) error {
	if !f.usable(r) {
		return &NeedsLoginError{Reason: "the token in the store is not this client's"}
	}
	r.Client.Secret = f.Settings.ClientSecret // the entry's, which an edit may have changed
	v := url.Values{"grant_type": {GrantClientCredentials}}
	if len(scopes) > 0 {
		v.Set("scope", strings.Join(scopes, " "))
	}
	if r.Resource != "" {
		v.Set("resource", r.Resource)
	}
	t, err := f.tokenRequest(ctx, "the client credentials grant", r, v)
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
	machine := r.Client.Registration == RegistrationMachine
	if f.Settings.Machine() {
		return machine && r.Client.ID == f.Settings.ClientID
	}
	return !machine
}
