// Package oauthtest is test support: an OAuth 2.1 authorization server that
// approves every authorization at once (the redirect carries the code), and
// a middleware that makes an MCP handler a protected resource (RFC 9728),
// for the tests of internal/oauth, plugins/mcpclient and the CLI.
//
// The server rotates refresh tokens and refuses one that was spent
// (invalid_grant), so a test sees a refresh token spent twice. It counts
// what it was asked.
package oauthtest

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"
)

// AS is the authorization server.
type AS struct {
	*httptest.Server
	// TokenLifetime is expires_in of the access tokens (default 1 h).
	TokenLifetime time.Duration
	// Scopes are its scopes_supported.
	Scopes []string

	mu       sync.Mutex
	codes    map[string]grant // code → what it grants
	access   map[string]bool  // live access tokens
	refresh  map[string]bool  // live refresh tokens (false: spent)
	clients  map[string]bool
	counts   map[string]int
	revoked  []string
	lastAuth url.Values
}

type grant struct {
	challenge, redirect, client, resource, scope string
}

// NewAS starts the server; it is closed at the end of the test.
func NewAS(t testing.TB) *AS {
	as := &AS{TokenLifetime: time.Hour, codes: map[string]grant{}, access: map[string]bool{}, refresh: map[string]bool{},
		clients: map[string]bool{}, counts: map[string]int{}}
	mux := http.NewServeMux()
	mux.HandleFunc("/.well-known/oauth-authorization-server", as.metadata)
	mux.HandleFunc("/register", as.register)
	mux.HandleFunc("/authorize", as.authorize)
	mux.HandleFunc("/token", as.token)
	mux.HandleFunc("/revoke", as.revoke)
	as.Server = httptest.NewServer(mux)
	t.Cleanup(as.Close)
	return as
}

// Count is how often the endpoint (register, authorize, token:code,
// token:refresh, revoke) was asked.
func (as *AS) Count(what string) int {
	as.mu.Lock()
	defer as.mu.Unlock()
	return as.counts[what]
}

// Revoked are the tokens revoked, in order.
func (as *AS) Revoked() []string {
	as.mu.Lock()
	defer as.mu.Unlock()
	return append([]string(nil), as.revoked...)
}

// LastAuthorization is the query of the last authorization request.
func (as *AS) LastAuthorization() url.Values {
	as.mu.Lock()
	defer as.mu.Unlock()
	return as.lastAuth
}

// Valid reports whether tok is a live access token.
func (as *AS) Valid(tok string) bool {
	as.mu.Lock()
	defer as.mu.Unlock()
	return as.access[tok]
}

// Expire ends every access token at once (the refresh tokens stay).
func (as *AS) Expire() {
	as.mu.Lock()
	defer as.mu.Unlock()
	as.access = map[string]bool{}
}

// RevokeAll ends every token (a refresh then gets invalid_grant).
func (as *AS) RevokeAll() {
	as.mu.Lock()
	defer as.mu.Unlock()
	as.access = map[string]bool{}
	for k := range as.refresh {
		as.refresh[k] = false
	}
}

func (as *AS) metadata(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, map[string]any{
		"issuer":                                as.URL,
		"authorization_endpoint":                as.URL + "/authorize",
		"token_endpoint":                        as.URL + "/token",
		"registration_endpoint":                 as.URL + "/register",
		"revocation_endpoint":                   as.URL + "/revoke",
		"response_types_supported":              []string{"code"},
		"grant_types_supported":                 []string{"authorization_code", "refresh_token"},
		"code_challenge_methods_supported":      []string{"S256"},
		"token_endpoint_auth_methods_supported": []string{"none"},
		"scopes_supported":                      as.Scopes,
	})
}

func (as *AS) register(w http.ResponseWriter, r *http.Request) {
	var req struct {
		RedirectURIs []string `json:"redirect_uris"`
	}
	_ = json.NewDecoder(r.Body).Decode(&req)
	id := "client-" + rand.Text()
	as.mu.Lock()
	as.counts["register"]++
	as.clients[id] = true
	as.mu.Unlock()
	writeJSON(w, http.StatusCreated, map[string]any{"client_id": id, "redirect_uris": req.RedirectURIs, "token_endpoint_auth_method": "none"})
}

func (as *AS) authorize(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	as.mu.Lock()
	as.counts["authorize"]++
	as.lastAuth = q
	known := as.clients[q.Get("client_id")]
	as.mu.Unlock()
	if !known || q.Get("code_challenge_method") != "S256" || q.Get("code_challenge") == "" {
		http.Error(w, "bad authorization request", http.StatusBadRequest)
		return
	}
	code := "code-" + rand.Text()
	as.mu.Lock()
	as.codes[code] = grant{challenge: q.Get("code_challenge"), redirect: q.Get("redirect_uri"), client: q.Get("client_id"), resource: q.Get("resource"), scope: q.Get("scope")}
	as.mu.Unlock()
	back, _ := url.Parse(q.Get("redirect_uri"))
	bq := back.Query()
	bq.Set("code", code)
	bq.Set("state", q.Get("state"))
	back.RawQuery = bq.Encode()
	http.Redirect(w, r, back.String(), http.StatusFound)
}

func (as *AS) token(w http.ResponseWriter, r *http.Request) {
	if err := r.ParseForm(); err != nil {
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": "invalid_request"})
		return
	}
	f := r.PostForm
	as.mu.Lock()
	defer as.mu.Unlock()
	scope := ""
	switch f.Get("grant_type") {
	case "authorization_code":
		as.counts["token:code"]++
		g, ok := as.codes[f.Get("code")]
		delete(as.codes, f.Get("code"))
		sum := sha256.Sum256([]byte(f.Get("code_verifier")))
		if !ok || base64.RawURLEncoding.EncodeToString(sum[:]) != g.challenge || g.redirect != f.Get("redirect_uri") || g.resource != f.Get("resource") {
			writeJSON(w, http.StatusBadRequest, map[string]string{"error": "invalid_grant", "error_description": "bad code, verifier, redirect or resource"})
			return
		}
		scope = g.scope
	case "refresh_token":
		as.counts["token:refresh"]++
		rt := f.Get("refresh_token")
		if !as.refresh[rt] {
			writeJSON(w, http.StatusBadRequest, map[string]string{"error": "invalid_grant", "error_description": "the refresh token was spent or revoked"})
			return
		}
		as.refresh[rt] = false // rotated: spent
	default:
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": "unsupported_grant_type"})
		return
	}
	at, rt := "at-"+rand.Text(), "rt-"+rand.Text()
	as.access[at], as.refresh[rt] = true, true
	resp := map[string]any{"access_token": at, "token_type": "Bearer", "refresh_token": rt, "expires_in": int(as.TokenLifetime / time.Second)}
	if scope != "" {
		resp["scope"] = scope
	}
	writeJSON(w, http.StatusOK, resp)
}

func (as *AS) revoke(w http.ResponseWriter, r *http.Request) {
	_ = r.ParseForm()
	as.mu.Lock()
	defer as.mu.Unlock()
	as.counts["revoke"]++
	tok := r.PostForm.Get("token")
	as.revoked = append(as.revoked, tok)
	delete(as.access, tok)
	if _, ok := as.refresh[tok]; ok {
		as.refresh[tok] = false
	}
	w.WriteHeader(http.StatusOK)
}

// Protect makes next a protected resource of as: a request without a live
// access token gets 401 with a WWW-Authenticate naming the resource
// metadata, which it serves at /.well-known/oauth-protected-resource.
// resource is the server's URL (its MCP endpoint), known once the caller's
// server listens: it is read at each request.
func (as *AS) Protect(next http.Handler, resource func() string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasPrefix(r.URL.Path, "/.well-known/oauth-protected-resource") {
			writeJSON(w, http.StatusOK, map[string]any{"resource": resource(), "authorization_servers": []string{as.URL}, "scopes_supported": as.Scopes})
			return
		}
		tok, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		if !ok || !as.Valid(tok) {
			u, _ := url.Parse(resource())
			w.Header().Set("WWW-Authenticate", fmt.Sprintf(`Bearer error="invalid_token", resource_metadata="%s://%s/.well-known/oauth-protected-resource%s"`, u.Scheme, u.Host, u.Path))
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// FollowHeadless takes an authorization URL as a browser would, with a
// person who approves: it fetches it with redirects off, then delivers the
// redirect (the Location) to the loopback listener it names; it returns
// the Location.
func FollowHeadless(authURL string) (*url.URL, error) {
	c := &http.Client{Timeout: 10 * time.Second, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := c.Get(authURL)
	if err != nil {
		return nil, err
	}
	resp.Body.Close()
	loc, err := resp.Location()
	if err != nil {
		return nil, fmt.Errorf("HTTP %d without a redirect", resp.StatusCode)
	}
	back, err := c.Get(loc.String())
	if err != nil {
		return loc, err
	}
	back.Body.Close()
	if back.StatusCode != http.StatusOK {
		return loc, fmt.Errorf("the loopback answered HTTP %d", back.StatusCode)
	}
	return loc, nil
}

// FollowHeadlessNoDeliver fetches an authorization URL with redirects off
// and returns its Location, delivering it nowhere (the caller finishes the
// flow with it, as the SDKs' conformance clients do).
func FollowHeadlessNoDeliver(authURL string) (*url.URL, error) {
	c := &http.Client{Timeout: 10 * time.Second, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := c.Get(authURL)
	if err != nil {
		return nil, err
	}
	resp.Body.Close()
	return resp.Location()
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}
