package oauthtest

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"sync"
	"testing"
	"time"
)

// IdP is an enterprise identity provider (SEP-990): OpenID Connect
// metadata, and a token endpoint that exchanges an ID token it issued
// (IDToken) for an ID-JAG (RFC 8693, requested_token_type id-jag), signed
// with Key, for the audience and resource asked. An authorization server
// takes its ID-JAGs when its Workloads name the IdP (Trust).
type IdP struct {
	*httptest.Server
	Key *ecdsa.PrivateKey
	// ClientID is the harness's client at the IdP, the audience of its ID
	// tokens; ClientSecret, when set, must authenticate it (Basic).
	ClientID, ClientSecret string

	mu     sync.Mutex
	counts map[string]int
	last   url.Values
}

// NewIdP starts the IdP; it is closed at the end of the test.
func NewIdP(t testing.TB) *IdP {
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	p := &IdP{Key: k, ClientID: "harness-at-idp", counts: map[string]int{}}
	mux := http.NewServeMux()
	mux.HandleFunc("/.well-known/openid-configuration", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusOK, map[string]any{"issuer": p.URL, "authorization_endpoint": p.URL + "/authorize", "token_endpoint": p.URL + "/token",
			"grant_types_supported": []string{"urn:ietf:params:oauth:grant-type:token-exchange"}})
	})
	mux.HandleFunc("/token", p.token)
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

// Count is how many exchanges it made ("exchange") and refused
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
	case f.Get("grant_type") != "urn:ietf:params:oauth:grant-type:token-exchange":
		refuse(http.StatusBadRequest, "unsupported_grant_type", "only token exchange")
		return
	case id != p.ClientID || (p.ClientSecret != "" && secret != p.ClientSecret):
		refuse(http.StatusUnauthorized, "invalid_client", "unknown client or a wrong secret")
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
