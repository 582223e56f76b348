package oauth_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/harness-go/harness/internal/oauth"
	"github.com/harness-go/harness/internal/testkit/oauthtest"
)

// dpopServer is a protected endpoint of an authorization server that takes
// DPoP proofs, whose challenge uses the DPoP scheme.
func dpopServer(t *testing.T, nonce string) (*oauthtest.AS, string) {
	as := oauthtest.NewAS(t)
	as.Scopes = []string{"mcp:tools", "offline_access"}
	as.DPoP, as.DPoPChallenge, as.Nonce = true, true, nonce
	return as, protected(t, as).URL + "/mcp"
}

// A login to a server that asks for DPoP is bound to a key of its own:
// the code exchange and every refresh prove it, every request carries the
// token under the DPoP scheme with a fresh proof (the test server refuses a
// jti seen before), and the token alone, as Bearer, is refused. The key
// is kept in the store and is a secret.
func TestDPoPLogin(t *testing.T) {
	for _, nonce := range []string{"", "nonce-" + t.Name()} {
		t.Run(map[bool]string{true: "with a nonce", false: "no nonce"}[nonce != ""], func(t *testing.T) {
			as, server := dpopServer(t, nonce)
			st := newStore(t)
			f := &oauth.Flow{Server: server, Store: st, HTTP: &http.Client{Timeout: 10 * time.Second}}
			rec := login(t, f)
			if rec.TokenType != "DPoP" || rec.DPoPKey == "" || as.Bound(rec.AccessToken) == "" {
				t.Fatalf("the login is not DPoP-bound: token type %q, key set %v", rec.TokenType, rec.DPoPKey != "")
			}
			if out := st.Secrets.Redact("key " + rec.DPoPKey); strings.Contains(out, rec.DPoPKey) {
				t.Error("the DPoP key is not a secret")
			}
			c := &http.Client{Transport: &oauth.Transport{Next: http.DefaultTransport, Tokens: oauth.NewTokens(f)}}
			get := func() int {
				t.Helper()
				resp, err := c.Get(server)
				if err != nil {
					t.Fatalf("GET: %v", err)
				}
				resp.Body.Close()
				return resp.StatusCode
			}
			for range 3 {
				if code := get(); code != 200 {
					t.Fatalf("GET with the bound token: HTTP %d (%d proofs refused, %d wrong schemes)", code, as.Count("dpop:refused"), as.Count("dpop:wrong-scheme"))
				}
			}
			as.Expire() // a 401, a refresh that proves the same key, a retry
			if code := get(); code != 200 || as.Count("token:refresh") != 1 {
				t.Fatalf("GET after expiry: HTTP %d, %d refreshes", code, as.Count("token:refresh"))
			}
			again, _ := st.Load(server)
			if again.DPoPKey != rec.DPoPKey || again.TokenType != "DPoP" || as.Bound(again.AccessToken) != as.Bound(rec.AccessToken) {
				t.Fatal("the refresh did not keep the login's key")
			}
			if nonce != "" && as.Count("dpop:nonce-challenge") == 0 {
				t.Fatal("the nonce was never asked for")
			}
			if as.Count("dpop:refused") != 0 {
				t.Fatalf("%d proofs refused", as.Count("dpop:refused"))
			}

			// The token alone is worth nothing.
			req, _ := http.NewRequest(http.MethodGet, server, nil)
			req.Header.Set("Authorization", "Bearer "+again.AccessToken)
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusUnauthorized {
				t.Fatalf("the bound token as Bearer: HTTP %d", resp.StatusCode)
			}
		})
	}
}

// When a login binds its tokens: oauth.dpop absent, only where the server
// asks for it and the authorization server can; true, wherever the
// authorization server can (and an error saying so where it cannot);
// false, never. A machine client's token binds by the same rule.
func TestDPoPChoice(t *testing.T) {
	hc := &http.Client{Timeout: 10 * time.Second}
	bound := func(t *testing.T, as *oauthtest.AS, server, mode string) bool {
		t.Helper()
		rec := login(t, &oauth.Flow{Server: server, Settings: oauth.Settings{DPoP: mode}, Store: newStore(t), HTTP: hc})
		return rec.TokenType == "DPoP" && as.Bound(rec.AccessToken) != ""
	}
	as, server := dpopServer(t, "")
	if !bound(t, as, server, oauth.DPoPAuto) || bound(t, as, server, oauth.DPoPOff) {
		t.Error("a server that asks: bound by default, not with oauth.dpop false")
	}
	quiet := oauthtest.NewAS(t)
	quiet.DPoP = true // the authorization server can; the resource's challenge is Bearer
	quietServer := protected(t, quiet).URL + "/mcp"
	if bound(t, quiet, quietServer, oauth.DPoPAuto) || !bound(t, quiet, quietServer, oauth.DPoPOn) {
		t.Error("a server that does not ask: Bearer by default, bound with oauth.dpop true")
	}
	plain := oauthtest.NewAS(t)
	f := &oauth.Flow{Server: protected(t, plain).URL + "/mcp", Settings: oauth.Settings{DPoP: oauth.DPoPOn}, Store: newStore(t), HTTP: hc}
	ch, err := oauth.Probe(context.Background(), hc, f.Server)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Begin(context.Background(), ch, "http://127.0.0.1:1/callback"); err == nil || !strings.Contains(err.Error(), "oauth.dpop is true, and the authorization server "+plain.URL+" takes no ES256 DPoP proofs") {
		t.Errorf("oauth.dpop true where the authorization server cannot: %v", err)
	}

	as.Machines = map[string]string{"svc": "svc-secret-0123456789"}
	mf := &oauth.Flow{Server: server, Settings: oauth.Settings{Grant: oauth.GrantClientCredentials, ClientID: "svc", ClientSecret: "svc-secret-0123456789"}, Store: newStore(t), HTTP: hc}
	machineGet(t, mf)()
	rec, _ := mf.Store.Load(server)
	if rec == nil || rec.TokenType != "DPoP" || as.Bound(rec.AccessToken) == "" {
		t.Fatalf("a machine client of a server that asks: record %+v", rec)
	}
}
