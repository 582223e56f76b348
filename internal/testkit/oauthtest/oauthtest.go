// Package oauthtest is test support: an OAuth 2.1 authorization server that
// approves every authorization at once (the redirect carries the code), and
// a middleware that makes an MCP handler a protected resource (RFC 9728),
// for the tests of internal/oauth, plugins/mcpclient and the CLI.
//
// The server rotates refresh tokens and refuses one that was spent
// (invalid_grant), so a test sees a refresh token spent twice. It counts
// what it was asked. It also grants client_credentials to the machine
// clients a test gives it (Machines, Keys), checking their secret or their
// signed JWT assertion (RFC 7523), and grants tokens for the workload
// tokens of the issuers it trusts (Workloads, RFC 7523's JWT bearer grant).
package oauthtest

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/sha512"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
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
	// Machines are the clients of the client credentials grant that
	// authenticate with a secret (client_secret_basic or _post): id →
	// secret. Keys are those that authenticate with a JWT signed by their
	// key (private_key_jwt): id → public key. Set before the first request.
	Machines map[string]string
	Keys     map[string]crypto.PublicKey
	// Workloads are the issuers of workload tokens it takes as a JWT
	// bearer grant (their aud must be its issuer): iss → public key. A
	// client of such a grant may be anonymous, or authenticate as above.
	Workloads map[string]crypto.PublicKey
	// DPoP makes it take ES256 DPoP proofs (RFC 9449): a token request
	// with a valid proof gets tokens bound to its key, and Protect takes a
	// bound token only under the DPoP scheme with a proof of that key.
	// DPoPChallenge makes Protect's challenge use the DPoP scheme. Nonce,
	// when set, is the nonce every proof must carry (use_dpop_nonce
	// otherwise, at the token endpoint and at the resource).
	DPoP          bool
	DPoPChallenge bool
	Nonce         string

	mu       sync.Mutex
	bound    map[string]string // token (access or refresh) → its key's thumbprint
	jtis     map[string]bool   // the proofs seen
	codes    map[string]grant  // code → what it grants
	access   map[string]bool   // live access tokens
	scopes   map[string]string // the scope of each client credentials token
	refresh  map[string]bool   // live refresh tokens (false: spent)
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
	as := &AS{TokenLifetime: time.Hour, codes: map[string]grant{}, access: map[string]bool{}, scopes: map[string]string{}, refresh: map[string]bool{},
		clients: map[string]bool{}, counts: map[string]int{}, bound: map[string]string{}, jtis: map[string]bool{}}
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
// token:refresh, token:client, revoke) was asked, and how machine clients
// authenticated (client:basic, client:post, client:jwt).
func (as *AS) Count(what string) int {
	as.mu.Lock()
	defer as.mu.Unlock()
	return as.counts[what]
}

func (as *AS) count(what string) {
	as.mu.Lock()
	defer as.mu.Unlock()
	as.counts[what]++
}

// Bound is the thumbprint of the key tok is bound to ("" for a Bearer
// token).
func (as *AS) Bound(tok string) string {
	as.mu.Lock()
	defer as.mu.Unlock()
	return as.bound[tok]
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

// TokenScope is the scope a client credentials token was granted.
func (as *AS) TokenScope(tok string) string {
	as.mu.Lock()
	defer as.mu.Unlock()
	return as.scopes[tok]
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
	grants, methods := []string{"authorization_code", "refresh_token"}, []string{"none"}
	if len(as.Machines)+len(as.Keys) > 0 {
		grants = append(grants, "client_credentials")
		methods = append(methods, "client_secret_basic", "client_secret_post", "private_key_jwt")
	}
	if len(as.Workloads) > 0 {
		grants = append(grants, jwtBearer)
	}
	writeJSON(w, http.StatusOK, map[string]any{
		"issuer":                                as.URL,
		"authorization_endpoint":                as.URL + "/authorize",
		"token_endpoint":                        as.URL + "/token",
		"registration_endpoint":                 as.URL + "/register",
		"revocation_endpoint":                   as.URL + "/revoke",
		"response_types_supported":              []string{"code"},
		"grant_types_supported":                 grants,
		"code_challenge_methods_supported":      []string{"S256"},
		"token_endpoint_auth_methods_supported": methods,
		"scopes_supported":                      as.Scopes,
		"dpop_signing_alg_values_supported":     map[bool][]string{true: {"ES256"}}[as.DPoP],
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
	redirectBack(w, r, code)
}

// redirectBack approves an authorization request r: the browser goes back
// to its redirect_uri with code and its state.
func redirectBack(w http.ResponseWriter, r *http.Request, code string) {
	q := r.URL.Query()
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
	jkt, ok := as.tokenProof(w, r)
	if !ok {
		return
	}
	if rt := f.Get("refresh_token"); f.Get("grant_type") == "refresh_token" && as.bound[rt] != jkt {
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": "invalid_grant", "error_description": "the refresh token is bound to another key"})
		return
	}
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
	case "client_credentials":
		as.counts["token:client"]++
		method, err := as.machine(r)
		if err != nil {
			writeJSON(w, http.StatusUnauthorized, map[string]string{"error": "invalid_client", "error_description": err.Error()})
			return
		}
		as.counts["client:"+method]++
		as.machineToken(w, f, jkt)
		return
	case jwtBearer:
		as.counts["token:jwt-bearer"]++
		if err := as.workload(f.Get("assertion")); err != nil {
			writeJSON(w, http.StatusBadRequest, map[string]string{"error": "invalid_grant", "error_description": err.Error()})
			return
		}
		method := "none"
		if _, _, basic := r.BasicAuth(); basic || f.Get("client_secret") != "" || f.Get("client_assertion") != "" {
			var err error
			if method, err = as.machine(r); err != nil {
				writeJSON(w, http.StatusUnauthorized, map[string]string{"error": "invalid_client", "error_description": err.Error()})
				return
			}
		}
		as.counts["client:"+method]++
		as.machineToken(w, f, jkt)
		return
	default:
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": "unsupported_grant_type"})
		return
	}
	at, rt := "at-"+rand.Text(), "rt-"+rand.Text()
	as.access[at], as.refresh[rt] = true, true
	resp := map[string]any{"access_token": at, "token_type": as.bind(jkt, at, rt), "refresh_token": rt, "expires_in": int(as.TokenLifetime / time.Second)}
	if scope != "" {
		resp["scope"] = scope
	}
	writeJSON(w, http.StatusOK, resp)
}

// jwtBearer is the grant_type of RFC 7523's JWT bearer grant.
const jwtBearer = "urn:ietf:params:oauth:grant-type:jwt-bearer"

// machineToken answers a machine client's grant (as.mu held): an access
// token with the scope asked for, and no refresh token.
func (as *AS) machineToken(w http.ResponseWriter, f url.Values, jkt string) {
	at := "at-" + rand.Text()
	as.access[at] = true
	as.scopes[at] = f.Get("scope")
	resp := map[string]any{"access_token": at, "token_type": as.bind(jkt, at), "expires_in": int(as.TokenLifetime / time.Second)}
	if sc := f.Get("scope"); sc != "" {
		resp["scope"] = sc
	}
	writeJSON(w, http.StatusOK, resp)
}

// workload checks the assertion of a JWT bearer grant: signed by an issuer
// in Workloads, for this server, not expired.
func (as *AS) workload(jwt string) error {
	if jwt == "" {
		return errors.New("no assertion")
	}
	claims, err := VerifyJWT(jwt, func(iss string) crypto.PublicKey { return as.Workloads[iss] })
	switch {
	case err != nil:
		return err
	case claims.Aud != as.URL:
		return fmt.Errorf("the assertion's audience %q is not the issuer %q", claims.Aud, as.URL)
	case time.Unix(claims.Exp, 0).Before(time.Now()):
		return errors.New("the assertion expired")
	case claims.Sub == "":
		return errors.New("the assertion has no subject")
	}
	return nil
}

// machine authenticates the client of a client credentials request (a
// parsed form): its secret, in the Authorization header or the form, or
// its JWT assertion. It returns how (basic, post, jwt).
func (as *AS) machine(r *http.Request) (string, error) {
	f := r.PostForm
	if id, secret, ok := r.BasicAuth(); ok {
		id, _ = url.QueryUnescape(id)
		secret, _ = url.QueryUnescape(secret)
		if want, known := as.Machines[id]; !known || want != secret {
			return "", fmt.Errorf("unknown client %q or a wrong secret", id)
		}
		return "basic", nil
	}
	if secret := f.Get("client_secret"); secret != "" {
		if want, known := as.Machines[f.Get("client_id")]; !known || want != secret {
			return "", fmt.Errorf("unknown client %q or a wrong secret", f.Get("client_id"))
		}
		return "post", nil
	}
	if f.Get("client_assertion_type") != "urn:ietf:params:oauth:client-assertion-type:jwt-bearer" {
		return "", errors.New("no client authentication")
	}
	claims, err := VerifyJWT(f.Get("client_assertion"), func(iss string) crypto.PublicKey { return as.Keys[iss] })
	if err != nil {
		return "", err
	}
	switch {
	case claims.Sub != claims.Iss || (f.Get("client_id") != "" && f.Get("client_id") != claims.Iss):
		return "", errors.New("the assertion's iss, sub and client_id differ")
	case claims.Aud != as.URL:
		return "", fmt.Errorf("the assertion's audience %q is not the issuer %q", claims.Aud, as.URL)
	case time.Unix(claims.Exp, 0).Before(time.Now()):
		return "", errors.New("the assertion expired")
	case claims.Jti == "":
		return "", errors.New("the assertion has no jti")
	}
	return "jwt", nil
}

// Claims are the claims of a client assertion.
type Claims struct {
	Iss, Sub, Aud, Jti string
	Iat, Exp           int64
}

// VerifyJWT checks a compact JWS signed with ES256/384/512, RS256 or
// EdDSA by the key keyOf returns for its issuer, and returns its claims.
func VerifyJWT(jwt string, keyOf func(iss string) crypto.PublicKey) (*Claims, error) {
	parts := strings.Split(jwt, ".")
	if len(parts) != 3 {
		return nil, errors.New("not a compact JWS")
	}
	enc := base64.RawURLEncoding
	hb, err1 := enc.DecodeString(parts[0])
	cb, err2 := enc.DecodeString(parts[1])
	sig, err3 := enc.DecodeString(parts[2])
	if err := errors.Join(err1, err2, err3); err != nil {
		return nil, err
	}
	var h struct{ Alg, Typ string }
	var c Claims
	if err := errors.Join(json.Unmarshal(hb, &h), json.Unmarshal(cb, &c)); err != nil {
		return nil, err
	}
	input := []byte(parts[0] + "." + parts[1])
	ok := false
	switch k := keyOf(c.Iss).(type) {
	case nil:
		return nil, fmt.Errorf("no key for the issuer %q", c.Iss)
	case *ecdsa.PublicKey:
		var d []byte
		switch h.Alg {
		case "ES256":
			s := sha256.Sum256(input)
			d = s[:]
		case "ES384":
			s := sha512.Sum384(input)
			d = s[:]
		case "ES512":
			s := sha512.Sum512(input)
			d = s[:]
		default:
			return nil, fmt.Errorf("alg %q with an EC key", h.Alg)
		}
		n := len(sig) / 2
		ok = len(sig) == 2*((k.Curve.Params().BitSize+7)/8) && ecdsa.Verify(k, d, new(big.Int).SetBytes(sig[:n]), new(big.Int).SetBytes(sig[n:]))
	case *rsa.PublicKey:
		if h.Alg != "RS256" {
			return nil, fmt.Errorf("alg %q with an RSA key", h.Alg)
		}
		d := sha256.Sum256(input)
		ok = rsa.VerifyPKCS1v15(k, crypto.SHA256, d[:], sig) == nil
	case ed25519.PublicKey:
		if h.Alg != "EdDSA" {
			return nil, fmt.Errorf("alg %q with an Ed25519 key", h.Alg)
		}
		ok = ed25519.Verify(k, input, sig)
	default:
		return nil, fmt.Errorf("a key of type %T", k)
	}
	if !ok {
		return nil, errors.New("the signature does not verify")
	}
	if h.Typ != "JWT" {
		return nil, fmt.Errorf("typ %q, want JWT", h.Typ)
	}
	return &c, nil
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
		u, _ := url.Parse(resource())
		refuse := func(code string) {
			scheme := "Bearer"
			if as.DPoPChallenge {
				scheme = "DPoP"
			}
			w.Header().Set("WWW-Authenticate", fmt.Sprintf(`%s error="%s", resource_metadata="%s://%s/.well-known/oauth-protected-resource%s"`, scheme, code, u.Scheme, u.Host, u.Path))
			http.Error(w, "unauthorized", http.StatusUnauthorized)
		}
		scheme, tok, _ := strings.Cut(r.Header.Get("Authorization"), " ")
		if !as.Valid(tok) {
			refuse("invalid_token")
			return
		}
		as.mu.Lock()
		jkt := as.bound[tok]
		as.mu.Unlock()
		switch {
		case jkt == "" && strings.EqualFold(scheme, "Bearer"):
		case jkt != "" && strings.EqualFold(scheme, "DPoP"):
			as.mu.Lock()
			got, err := as.verifyProof(r.Header.Values("DPoP"), r.Method, "http://"+r.Host+r.URL.Path, tok)
			as.mu.Unlock()
			switch {
			case errors.Is(err, errNonce):
				w.Header().Set("DPoP-Nonce", as.Nonce)
				refuse("use_dpop_nonce")
				return
			case err != nil || got != jkt:
				as.count("dpop:refused")
				refuse("invalid_dpop_proof")
				return
			}
		default:
			as.count("dpop:wrong-scheme")
			refuse("invalid_token")
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

// Approver is a person who approves every login page opened (an
// oauth.LoginOptions.Open): each is followed with FollowHeadless in the
// background, its error reported on t; the test waits for them at its end.
func Approver(t testing.TB) func(authURL string) error {
	var wg sync.WaitGroup
	t.Cleanup(wg.Wait)
	return func(u string) error {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := FollowHeadless(u); err != nil {
				t.Errorf("the login page %s: %v", u, err)
			}
		}()
		return nil
	}
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

// WorkloadToken is a workload identity token as a platform issues one: a
// JWT signed with ES256 by k, from iss, about sub, for aud, ending at exp.
func WorkloadToken(k *ecdsa.PrivateKey, iss, sub, aud string, exp time.Time) string {
	return SignJWT(k, map[string]any{"iss": iss, "sub": sub, "aud": aud, "iat": time.Now().Unix(), "exp": exp.Unix(), "jti": rand.Text()})
}

// SignJWT is a compact JWT of claims, signed ES256 with k.
func SignJWT(k *ecdsa.PrivateKey, claims map[string]any) string {
	enc := base64.RawURLEncoding
	header, _ := json.Marshal(map[string]string{"alg": "ES256", "typ": "JWT"})
	body, _ := json.Marshal(claims)
	input := enc.EncodeToString(header) + "." + enc.EncodeToString(body)
	d := sha256.Sum256([]byte(input))
	r, s, err := ecdsa.Sign(rand.Reader, k, d[:])
	if err != nil {
		panic(err) // only a broken random source
	}
	sig := make([]byte, 64)
	r.FillBytes(sig[:32])
	s.FillBytes(sig[32:])
	return input + "." + enc.EncodeToString(sig)
}
