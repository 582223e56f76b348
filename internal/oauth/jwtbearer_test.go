package oauth_test

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"errors"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/harness-go/harness/internal/oauth"
	"github.com/harness-go/harness/internal/testkit/oauthtest"
)

// workloadPlatform is the issuer of workload tokens the test authorization
// servers trust.
const workloadPlatform = "https://platform.example"

// workloadServer is a protected endpoint of an authorization server that
// takes the workload tokens of workloadPlatform (and knows the machine
// client "svc"), and the platform's key.
func workloadServer(t *testing.T) (*oauthtest.AS, string, *ecdsa.PrivateKey) {
	t.Helper()
	as := oauthtest.NewAS(t)
	as.Scopes = []string{"mcp:tools", "offline_access"}
	as.Machines = map[string]string{"svc": "svc-secret-0123456789"}
	k := mustKey(ecdsa.GenerateKey(elliptic.P256(), rand.Reader))
	as.Workloads = map[string]crypto.PublicKey{workloadPlatform: k.Public()}
	return as, protected(t, as).URL + "/mcp", k
}

// A jwt bearer flow presents the workload's token as the grant, read anew
// at every grant (platforms rotate them): at the first 401, and again when
// the server ends the token. The client is anonymous, names itself, or
// authenticates with its secret; no person, no refresh token.
func TestJWTBearer(t *testing.T) {
	as, server, platform := workloadServer(t)
	for _, c := range []struct {
		name, client, secret, method string
	}{
		{"anonymous", "", "", "none"},
		{"a named public client", "wl-app", "", "none"},
		{"a client with a secret", "svc", "svc-secret-0123456789", "basic"},
	} {
		t.Run(c.name, func(t *testing.T) {
			st := newStore(t)
			var reads atomic.Int32
			var last atomic.Value
			settings := oauth.Settings{Grant: oauth.GrantJWTBearer, ClientID: c.client, ClientSecret: c.secret, Assertion: func() (string, error) {
				reads.Add(1)
				tok := oauthtest.WorkloadToken(platform, workloadPlatform, "system:serviceaccount:ci:agent", as.URL, time.Now().Add(time.Hour))
				last.Store(tok)
				return tok, nil
			}}
			f := &oauth.Flow{Server: server, Settings: settings, Store: st, HTTP: &http.Client{Timeout: 10 * time.Second}}
			before, grants := as.Count("client:"+c.method), as.Count("token:jwt-bearer")
			get := machineGet(t, f)
			get()
			if got := as.Count("token:jwt-bearer"); got != grants+1 || as.Count("client:"+c.method) != before+1 || reads.Load() != 1 {
				t.Fatalf("after the first 401: %d grants (want %d), %d client authentications by %s, the token read %d times",
					got, grants+1, as.Count("client:"+c.method)-before, c.method, reads.Load())
			}
			rec, err := st.Load(server)
			if err != nil || rec == nil || rec.Client.Registration != oauth.RegistrationJWTBearer || rec.Client.ID != c.client || rec.RefreshToken != "" || !as.Valid(rec.AccessToken) {
				t.Fatalf("the stored token: %+v, %v", rec, err)
			}
			if strings.Join(rec.Scopes, " ") != "mcp:tools" {
				t.Errorf("scopes %q: the resource's, never offline_access", rec.Scopes)
			}
			first := last.Load()
			as.Expire()
			get()
			if as.Count("token:jwt-bearer") != grants+2 || reads.Load() != 2 || last.Load() == first {
				t.Fatalf("after the token ended: %d grants, the workload token read %d times", as.Count("token:jwt-bearer")-grants, reads.Load())
			}
		})
	}
	if as.Count("authorize")+as.Count("register")+as.Count("token:refresh")+as.Count("token:client") != 0 {
		t.Fatal("a jwt bearer flow went to another grant")
	}
}

// A refused workload token is the server's answer, said once (no retry,
// no other grant); what cannot be sent is said before anything is; and a
// jwt bearer flow does not take a client credentials token of its client.
func TestJWTBearerRefusals(t *testing.T) {
	as, server, platform := workloadServer(t)
	hc := &http.Client{Timeout: 10 * time.Second}
	other := mustKey(ecdsa.GenerateKey(elliptic.P256(), rand.Reader))
	token := func(k *ecdsa.PrivateKey, aud string, exp time.Duration) func() (string, error) {
		return func() (string, error) {
			return oauthtest.WorkloadToken(k, workloadPlatform, "wl", aud, time.Now().Add(exp)), nil
		}
	}
	for _, c := range []struct {
		name      string
		assertion func() (string, error)
		want      string
		sent      bool
	}{
		{"another audience", token(platform, "https://elsewhere.example", time.Hour), "the jwt bearer grant was refused: invalid_grant: the assertion's audience", true},
		{"an expired token", token(platform, as.URL, -time.Minute), "invalid_grant: the assertion expired", true},
		{"a stranger's signature", token(other, as.URL, time.Hour), "invalid_grant: the signature does not verify", true},
		{"a token that cannot be read", func() (string, error) { return "", errors.New("open /var/run/secrets/token: no such file") }, "the workload's token: open /var/run/secrets/token", false},
		{"not a JWT", func() (string, error) { return "hello", nil }, "the workload's token is not a JWT", false},
		{"no token at all", nil, "needs oauth.assertion, oauth.assertionFile or oauth.idp", false},
	} {
		before := as.Count("token:jwt-bearer")
		f := &oauth.Flow{Server: server, Settings: oauth.Settings{Grant: oauth.GrantJWTBearer, Assertion: c.assertion}, Store: newStore(t), HTTP: hc}
		_, err := f.MachineToken(context.Background(), nil)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want an error saying %q", c.name, err, c.want)
		}
		if sent := as.Count("token:jwt-bearer") - before; sent != map[bool]int{true: 1, false: 0}[c.sent] {
			t.Errorf("%s: %d token requests", c.name, sent)
		}
	}

	// An authorization server without the grant (it has client
	// credentials, not this).
	plain := oauthtest.NewAS(t)
	plain.Machines = map[string]string{"svc": "svc-secret-0123456789"}
	f := &oauth.Flow{Server: protected(t, plain).URL + "/mcp", Settings: oauth.Settings{Grant: oauth.GrantJWTBearer, Assertion: token(platform, plain.URL, time.Hour)}, Store: newStore(t), HTTP: hc}
	if _, err := f.MachineToken(context.Background(), nil); err == nil || !strings.Contains(err.Error(), "does not offer the jwt bearer grant") {
		t.Errorf("an authorization server without the grant: %v", err)
	}
	if plain.Count("token:jwt-bearer") != 0 {
		t.Error("the grant was asked for anyway")
	}

	// The same client's client credentials token is not this flow's.
	st := newStore(t)
	cc := &oauth.Flow{Server: server, Settings: oauth.Settings{Grant: oauth.GrantClientCredentials, ClientID: "svc", ClientSecret: "svc-secret-0123456789"}, Store: st, HTTP: hc}
	if _, err := cc.MachineToken(context.Background(), nil); err != nil {
		t.Fatal(err)
	}
	wl := &oauth.Flow{Server: server, Settings: oauth.Settings{Grant: oauth.GrantJWTBearer, ClientID: "svc", ClientSecret: "svc-secret-0123456789", Assertion: token(platform, as.URL, time.Hour)}, Store: st, HTTP: hc}
	if _, err := oauth.NewTokens(wl).Token(context.Background(), ""); !errors.Is(err, oauth.ErrNoLogin) {
		t.Fatalf("a jwt bearer flow used a client credentials token: %v", err)
	}
}
