package oauth

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"slices"
	"strings"

	"github.com/harness-go/harness/internal/safe"
)

// maxMetadataBytes bounds a metadata document or a token response.
const maxMetadataBytes = 1 << 20

// ResourceMetadata is the protected resource metadata of RFC 9728, the
// fields the flow reads.
type ResourceMetadata struct {
	Resource             string   `json:"resource"`
	AuthorizationServers []string `json:"authorization_servers"`
	ScopesSupported      []string `json:"scopes_supported,omitempty"`
	// DPoP (RFC 9728 §2): the proof algorithms the server takes, and
	// whether it takes only DPoP-bound tokens.
	DPoPSigningAlgs   []string `json:"dpop_signing_alg_values_supported,omitempty"`
	DPoPBoundRequired bool     `json:"dpop_bound_access_tokens_required,omitempty"`
}

// ServerMetadata is the authorization server metadata of RFC 8414 (and
// OpenID Connect Discovery), the fields the flow reads.
type ServerMetadata struct {
	Issuer                            string   `json:"issuer"`
	AuthorizationEndpoint             string   `json:"authorization_endpoint"`
	TokenEndpoint                     string   `json:"token_endpoint"`
	RegistrationEndpoint              string   `json:"registration_endpoint,omitempty"`
	RevocationEndpoint                string   `json:"revocation_endpoint,omitempty"`
	ScopesSupported                   []string `json:"scopes_supported,omitempty"`
	CodeChallengeMethodsSupported     []string `json:"code_challenge_methods_supported,omitempty"`
	TokenEndpointAuthMethodsSupported []string `json:"token_endpoint_auth_methods_supported,omitempty"`
	TokenEndpointAuthSigningAlgs      []string `json:"token_endpoint_auth_signing_alg_values_supported,omitempty"`
	RevocationAuthMethodsSupported    []string `json:"revocation_endpoint_auth_methods_supported,omitempty"`
	GrantTypesSupported               []string `json:"grant_types_supported,omitempty"`
	ClientIDMetadataDocumentSupported bool     `json:"client_id_metadata_document_supported,omitempty"`
	IssParameterSupported             bool     `json:"authorization_response_iss_parameter_supported,omitempty"`
	DPoPSigningAlgs                   []string `json:"dpop_signing_alg_values_supported,omitempty"`
	// fallback marks endpoints guessed by the 2025-03-26 rule (no metadata
	// anywhere): PKCE cannot be checked, and is used anyway.
	fallback bool
}

// Discovery is what the flow learnt before it asks anyone anything.
type Discovery struct {
	// Resource is the resource indicator (RFC 8707) of the server.
	Resource string
	// Resource metadata, when the server has some (nil: 2025-03-26).
	PRM *ResourceMetadata
	// AS is the authorization server's metadata.
	AS *ServerMetadata
}

// getJSON fetches a JSON document; found is false for a 4xx (the document
// is not there: try the next place).
func getJSON(ctx context.Context, c *http.Client, u string, v any) (found bool, err error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return false, err
	}
	req.Header.Set("Accept", "application/json")
	resp, err := c.Do(req)
	if err != nil {
		return false, err
	}
	defer resp.Body.Close()
	if resp.StatusCode >= 400 && resp.StatusCode < 500 {
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, maxMetadataBytes))
		return false, nil
	}
	if resp.StatusCode != http.StatusOK {
		return false, fmt.Errorf("GET %s: HTTP %d", safeURL(u), resp.StatusCode)
	}
	if mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type")); mt != "application/json" && !strings.HasSuffix(mt, "+json") {
		return false, fmt.Errorf("GET %s: the answer is %s, not JSON", safeURL(u), safe.Line(resp.Header.Get("Content-Type")))
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxMetadataBytes+1))
	if err != nil {
		return false, fmt.Errorf("GET %s: %w", safeURL(u), err)
	}
	if len(body) > maxMetadataBytes {
		return false, fmt.Errorf("GET %s: the document is larger than %d bytes", safeURL(u), maxMetadataBytes)
	}
	if err := json.Unmarshal(body, v); err != nil {
		return false, fmt.Errorf("GET %s: %v", safeURL(u), err)
	}
	return true, nil
}

// resourceMetadataURLs are the places of a server's protected resource
// metadata, in the order of the specification: the challenge's
// resource_metadata, then the well-known URL with the server's path
// inserted, then the one at the root.
func resourceMetadataURLs(server string, ch *Challenge) []string {
	var out []string
	if ch != nil && ch.ResourceMetadata != "" {
		out = append(out, ch.ResourceMetadata)
	}
	u, err := url.Parse(server)
	if err != nil {
		return out
	}
	u.RawQuery, u.Fragment = "", ""
	if p := strings.Trim(u.Path, "/"); p != "" {
		u.Path = "/.well-known/oauth-protected-resource/" + p
		out = append(out, u.String())
	}
	u.Path = "/.well-known/oauth-protected-resource"
	out = append(out, u.String())
	return out
}

// serverMetadataURLs are the places of an issuer's metadata, in the order
// of the specification: RFC 8414 with the path inserted, OpenID Connect
// with the path inserted, OpenID Connect with the path appended; an issuer
// without a path has the first two at the root.
func serverMetadataURLs(issuer string) []string {
	u, err := url.Parse(issuer)
	if err != nil {
		return nil
	}
	u.RawQuery, u.Fragment = "", ""
	p := strings.Trim(u.Path, "/")
	if p == "" {
		u.Path = "/.well-known/oauth-authorization-server"
		a := u.String()
		u.Path = "/.well-known/openid-configuration"
		return []string{a, u.String()}
	}
	u.Path = "/.well-known/oauth-authorization-server/" + p
	a := u.String()
	u.Path = "/.well-known/openid-configuration/" + p
	b := u.String()
	u.Path = "/" + p + "/.well-known/openid-configuration"
	return []string{a, b, u.String()}
}

// resourceMatches reports whether the resource a server's metadata names
// may stand for the server: the same origin, and the server's path at or
// under its path (RFC 9728 §3.3, the MCP specification's canonical URI).
func resourceMatches(resource, server string) bool {
	r, err1 := url.Parse(Canonical(resource))
	s, err2 := url.Parse(Canonical(server))
	if err1 != nil || err2 != nil || r.Scheme != s.Scheme || r.Host != s.Host {
		return false
	}
	rp := strings.TrimSuffix(r.Path, "/")
	sp := strings.TrimSuffix(s.Path, "/")
	return rp == "" || sp == rp || strings.HasPrefix(sp, rp+"/")
}

// Discover finds the server's authorization server and its metadata: the
// protected resource metadata (the challenge's URL, the path-inserted then
// the root well-known URL), its resource checked against the server URL;
// then the issuer's metadata in the RFC 8414 / OpenID order, its issuer
// matched exactly. A server without resource metadata is one of 2025-03-26:
// its origin is the issuer, and without metadata there, the endpoints
// /authorize, /token and /register at that origin.
// asMetadataURL, when set, is where the authorization server's metadata is
// (the entry's authServerMetadataUrl): it replaces that search.
func Discover(ctx context.Context, c *http.Client, server string, ch *Challenge, asMetadataURL string) (*Discovery, error) {
	d := &Discovery{Resource: Canonical(server)}
	var errs []error
	for _, u := range resourceMetadataURLs(server, ch) {
		var prm ResourceMetadata
		found, err := getJSON(ctx, c, u, &prm)
		if err != nil {
			if ctx.Err() != nil {
				return nil, err
			}
			errs = append(errs, err)
			continue
		}
		if !found {
			continue
		}
		if prm.Resource != "" && !resourceMatches(prm.Resource, server) {
			return nil, fmt.Errorf("the protected resource metadata at %s is for %s, not for this server (%s): refused", safeURL(u), safe.Line(prm.Resource), safeURL(server))
		}
		if len(prm.AuthorizationServers) == 0 {
			return nil, fmt.Errorf("the protected resource metadata at %s names no authorization server", safeURL(u))
		}
		if prm.Resource != "" {
			d.Resource = prm.Resource
		}
		d.PRM = &prm
		break
	}
	issuer := ""
	if d.PRM != nil {
		issuer = d.PRM.AuthorizationServers[0]
	} else {
		o, err := url.Parse(server)
		if err != nil {
			return nil, err
		}
		issuer = o.Scheme + "://" + o.Host
	}
	if err := httpsOrLoopback(issuer); err != nil {
		return nil, fmt.Errorf("the authorization server %s: %w", safe.Line(issuer), err)
	}
	if asMetadataURL != "" {
		var as ServerMetadata
		found, err := getJSON(ctx, c, asMetadataURL, &as)
		if err != nil {
			return nil, fmt.Errorf("oauth.authServerMetadataUrl: %w", err)
		}
		if !found {
			return nil, fmt.Errorf("oauth.authServerMetadataUrl: %s has no metadata", safeURL(asMetadataURL))
		}
		if err := as.check(as.Issuer); err != nil {
			return nil, err
		}
		d.AS = &as
		return d, nil
	}
	for _, u := range serverMetadataURLs(issuer) {
		var as ServerMetadata
		found, err := getJSON(ctx, c, u, &as)
		if err != nil {
			if ctx.Err() != nil {
				return nil, err
			}
			errs = append(errs, err)
			continue
		}
		if !found {
			continue
		}
		if err := as.check(issuer); err != nil {
			return nil, fmt.Errorf("the authorization server metadata at %s: %w", safeURL(u), err)
		}
		d.AS = &as
		return d, nil
	}
	if d.PRM == nil {
		// 2025-03-26: the default endpoints at the server's origin.
		d.AS = &ServerMetadata{
			Issuer:                issuer,
			AuthorizationEndpoint: issuer + "/authorize",
			TokenEndpoint:         issuer + "/token",
			RegistrationEndpoint:  issuer + "/register",
			fallback:              true,
		}
		return d, nil
	}
	if len(errs) == 0 {
		return nil, fmt.Errorf("the authorization server %s publishes no metadata (tried %s)", safe.Line(issuer), strings.Join(serverMetadataURLs(issuer), ", "))
	}
	return nil, fmt.Errorf("the authorization server %s: %w", safe.Line(issuer), errors.Join(errs...))
}

// check refuses metadata whose issuer is not the one asked for (compared
// as strings, RFC 8414 §3.3), that lacks an endpoint, or whose PKCE methods
// do not include S256.
func (as *ServerMetadata) check(issuer string) error {
	if as.Issuer != issuer {
		return fmt.Errorf("its issuer %q is not %q, the issuer asked for: refused", safe.Line(as.Issuer), safe.Line(issuer))
	}
	if as.AuthorizationEndpoint == "" || as.TokenEndpoint == "" {
		return errors.New("it names no authorization_endpoint or token_endpoint")
	}
	if !slices.Contains(as.CodeChallengeMethodsSupported, "S256") {
		return fmt.Errorf("the authorization server %s does not list PKCE S256 in code_challenge_methods_supported (%s): refused", safe.Line(as.Issuer), strings.Join(as.CodeChallengeMethodsSupported, ", "))
	}
	for _, e := range []string{as.AuthorizationEndpoint, as.TokenEndpoint, as.RegistrationEndpoint, as.RevocationEndpoint} {
		if e == "" {
			continue
		}
		if err := httpsOrLoopback(e); err != nil {
			return err
		}
	}
	return nil
}

// httpsOrLoopback refuses an endpoint that is neither https nor on the
// loopback (plain http elsewhere would carry codes and tokens in clear).
func httpsOrLoopback(raw string) error {
	u, err := url.Parse(raw)
	if err != nil {
		return err
	}
	switch {
	case u.Scheme == "https":
		return nil
	case u.Scheme == "http" && loopbackHost(u.Hostname()):
		return nil
	}
	return fmt.Errorf("%s is neither https nor on the loopback", safeURL(raw))
}

func loopbackHost(h string) bool {
	return h == "localhost" || h == "127.0.0.1" || h == "::1" || strings.HasPrefix(h, "127.")
}

// safeURL is a URL without credentials or query, escaped, for messages.
func safeURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return safe.Line(raw)
	}
	u.User = nil
	u.RawQuery = ""
	return safe.Line(u.String())
}
