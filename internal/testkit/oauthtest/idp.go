package oauthtest

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// IdP is an enterprise identity provider (SEP-990): OpenID Connect
// metadata, and a token endpoint that exchanges an ID token it issued
// (IDToken) for an ID-JAG (RFC 8693, requested_token_type id-jag), signed
// with Key, for the audience and resource asked. An authorization server
// takes its ID-JAGs when its Workloads name the IdP (Trust). It logs User
// in as well: an authorization endpoint that approves at once (PKCE S256,
// scope openid), and codes and refresh tokens (rotated) traded for ID
// tokens that live IDTokenLifetime.
type IdP struct {
	*httptest.Server
	Key *ecdsa.PrivateKey
	// ClientID is the harness's client at the IdP, the audience of its ID
	// tokens; ClientSecret, when set, must authenticate it (Basic).
	ClientID, ClientSecret string
	// User is who logs in (default alice@example.com).
	User string
	// IDTokenLifetime is how long the ID tokens of a login live (default an
	// hour).
	IDTokenLifetime time.Duration
	// NoIDTokenOnRefresh makes a refresh answer without an ID token.
	NoIDTokenOnRefresh bool

	mu      sync.Mutex
	counts  map[string]int
	last    url.Values
	codes   map[string]idpCode
	refresh map[string]bool
}

// idpCode is an authorization code of the IdP, and what it was given for.
type idpCode struct{ challenge, redirect, nonce string }

// NewIdP starts the IdP; it is closed at the end of the test.
func NewIdP(t testing.TB) *IdP {
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	p := &IdP{Key: k, ClientID: "harness-at-idp", User: "alice@example.com", IDTokenLifetime: time.Hour,
		counts: map[string]int{}, codes: map[string]idpCode{}, refresh: map[string]bool{}}
	mux := http.NewServeMux()
	mux.HandleFunc("/.well-known/openid-configuration", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusOK, map[string]any{"issuer": p.URL, "authorization_endpoint": p.URL + "/authorize", "token_endpoint": p.URL + "/token",
			"revocation_endpoint": p.URL + "/revoke", "scopes_supported": []string{"openid", "email", "offline_access"},
			"grant_types_supported": []string{"authorization_code", "refresh_token", "urn:ietf:params:oauth:grant-type:token-exchange"}})
	})
	mux.HandleFunc("/authorize", p.authorize)
	mux.HandleFunc("/token", p.token)
	mux.HandleFunc("/revoke", p.revoke)
	p.Server = httptest.NewServer(mux)
	t.Cleanup(p.Close)
	return p
}

// Trust makes as take the IdP's ID-JAGs as jwt bearer assertions.
func (p *IdP) Trust(as *AS) {
	if as.Workloads == nil {
		as.Workloads = map[string]crypto.PublicKey{}
	}
	as.Workloads[p.URL] = p.Key.Public()
}

// IDToken is an ID token of the IdP for sub, good for an hour.
func (p *IdP) IDToken(sub string) string {
	return WorkloadToken(p.Key, p.URL, sub, p.ClientID, time.Now().Add(time.Hour))
}

// Count is how many exchanges it made ("exchange"), logins it approved
// ("authorize"), codes and refresh tokens it took ("token:code",
// "token:refresh"), revocations ("revoke"), and requests it refused
// ("refused").
func (p *IdP) Count(what string) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.counts[what]
}

// LastExchange is the form of the last token exchange request.
func (p *IdP) LastExchange() url.Values {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.last
}

func (p *IdP) token(w http.ResponseWriter, r *http.Request) {
	if err := r.ParseForm(); err != nil {
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": "invalid_request"})
		return
	}
	f := r.PostForm
	p.mu.Lock()
	defer p.mu.Unlock()
	p.last = f
	refuse := func(status int, code, why string) {
		p.counts["refused"]++
		writeJSON(w, status, map[string]string{"error": code, "error_description": why})
	}
	id, secret, basic := r.BasicAuth()
	if !basic {
		id = f.Get("client_id")
	}
	switch {
	case id != p.ClientID || (p.ClientSecret != "" && secret != p.ClientSecret):
		refuse(http.StatusUnauthorized, "invalid_client", "unknown client or a wrong secret")
		return
	case f.Get("grant_type") == "authorization_code" || f.Get("grant_type") == "refresh_token":
		p.login(w, f, refuse)
		return
	case f.Get("grant_type") != "urn:ietf:params:oauth:grant-type:token-exchange":
		refuse(http.StatusBadRequest, "unsupported_grant_type", "no such grant here")
		return
	case f.Get("subject_token_type") != "urn:ietf:params:oauth:token-type:id_token" || f.Get("requested_token_type") != "urn:ietf:params:oauth:token-type:id-jag":
		refuse(http.StatusBadRequest, "invalid_request", "an id_token for an id-jag, please")
		return
	case f.Get("audience") == "" || f.Get("resource") == "":
		refuse(http.StatusBadRequest, "invalid_request", "no audience or resource")
		return
	}
	claims, err := VerifyJWT(f.Get("subject_token"), func(iss string) crypto.PublicKey {
		if iss == p.URL {
			return p.Key.Public()
		}
		return nil
	})
	switch {
	case err != nil:
		refuse(http.StatusBadRequest, "invalid_grant", err.Error())
		return
	case claims.Aud != p.ClientID || time.Unix(claims.Exp, 0).Before(time.Now()):
		refuse(http.StatusBadRequest, "invalid_grant", fmt.Sprintf("the ID token is for %q or expired", claims.Aud))
		return
	}
	p.counts["exchange"]++
	jag := WorkloadToken(p.Key, p.URL, claims.Sub, f.Get("audience"), time.Now().Add(5*time.Minute))
	writeJSON(w, http.StatusOK, map[string]string{"access_token": jag, "issued_token_type": "urn:ietf:params:oauth:token-type:id-jag", "token_type": "N_A"})
}

// RevokeLogins makes every refresh token of the IdP's logins invalid.
func (p *IdP) RevokeLogins() {
	p.mu.Lock()
	defer p.mu.Unlock()
	clear(p.refresh)
}

func (p *IdP) authorize(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	p.mu.Lock()
	defer p.mu.Unlock()
	p.counts["authorize"]++
	if q.Get("client_id") != p.ClientID || q.Get("response_type") != "code" || q.Get("code_challenge_method") != "S256" ||
		q.Get("code_challenge") == "" || !slices.Contains(strings.Fields(q.Get("scope")), "openid") {
		http.Error(w, "bad authorization request", http.StatusBadRequest)
		return
	}
	code := "idp-code-" + rand.Text()
	p.codes[code] = idpCode{challenge: q.Get("code_challenge"), redirect: q.Get("redirect_uri"), nonce: q.Get("nonce")}
	redirectBack(w, r, code)
}

// login answers a code or a refresh token (p.mu held) with an ID token and
// a new refresh token.
func (p *IdP) login(w http.ResponseWriter, f url.Values, refuse func(int, string, string)) {
	nonce := ""
	withID := true
	if f.Get("grant_type") == "authorization_code" {
		p.counts["token:code"]++
		c, ok := p.codes[f.Get("code")]
		delete(p.codes, f.Get("code"))
		sum := sha256.Sum256([]byte(f.Get("code_verifier")))
		if !ok || base64.RawURLEncoding.EncodeToString(sum[:]) != c.challenge || c.redirect != f.Get("redirect_uri") {
			refuse(http.StatusBadRequest, "invalid_grant", "bad code, verifier or redirect")
			return
		}
		nonce = c.nonce
	} else {
		p.counts["token:refresh"]++
		if rt := f.Get("refresh_token"); !p.refresh[rt] {
			refuse(http.StatusBadRequest, "invalid_grant", "the refresh token was spent or revoked")
			return
		}
		delete(p.refresh, f.Get("refresh_token")) // rotated
		withID = !p.NoIDTokenOnRefresh
	}
	rt := "idp-rt-" + rand.Text()
	p.refresh[rt] = true
	resp := map[string]any{"access_token": "idp-at-" + rand.Text(), "token_type": "Bearer", "refresh_token": rt, "expires_in": 3600, "scope": "openid offline_access"}
	if withID {
		claims := map[string]any{"iss": p.URL, "sub": "user-1", "email": p.User, "aud": p.ClientID, "exp": time.Now().Add(p.IDTokenLifetime).Unix()}
		if nonce != "" {
			claims["nonce"] = nonce
		}
		resp["id_token"] = SignJWT(p.Key, claims)
	}
	writeJSON(w, http.StatusOK, resp)
}

func (p *IdP) revoke(w http.ResponseWriter, r *http.Request) {
	_ = r.ParseForm()
	p.mu.Lock()
	defer p.mu.Unlock()
	p.counts["revoke"]++
	delete(p.refresh, r.PostForm.Get("token"))
	w.WriteHeader(http.StatusOK)
}
