package oauth_test

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/harness-go/harness/internal/oauth"
	"github.com/harness-go/harness/internal/testkit/oauthtest"
)

// pemOf encodes a private key in the PEM form named.
func pemOf(t *testing.T, k crypto.Signer, form string) []byte {
	t.Helper()
	var der []byte
	var err error
	switch form {
	case "PRIVATE KEY":
		der, err = x509.MarshalPKCS8PrivateKey(k)
	case "EC PRIVATE KEY":
		der, err = x509.MarshalECPrivateKey(k.(*ecdsa.PrivateKey))
	case "RSA PRIVATE KEY":
		der = x509.MarshalPKCS1PrivateKey(k.(*rsa.PrivateKey))
	}
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: form, Bytes: der})
}

// mustKey is a generated key (generating one does not fail but for a
// broken random source).
func mustKey[K crypto.Signer](k K, err error) K {
	if err != nil {
		panic(err)
	}
	return k
}

// Every key form a person may have parses, with the algorithm its key
// implies; what cannot sign a JWT is refused with the reason.
func TestParseKey(t *testing.T) {
	p256 := mustKey(ecdsa.GenerateKey(elliptic.P256(), rand.Reader))
	p384 := mustKey(ecdsa.GenerateKey(elliptic.P384(), rand.Reader))
	rsa2048 := mustKey(rsa.GenerateKey(rand.Reader, 2048))
	_, ed, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		pem  []byte
		alg  string
	}{
		{"P-256 PKCS #8", pemOf(t, p256, "PRIVATE KEY"), "ES256"},
		{"P-256 SEC 1", pemOf(t, p256, "EC PRIVATE KEY"), "ES256"},
		{"P-384 PKCS #8", pemOf(t, p384, "PRIVATE KEY"), "ES384"},
		{"RSA PKCS #1", pemOf(t, rsa2048, "RSA PRIVATE KEY"), "RS256"},
		{"RSA PKCS #8", pemOf(t, rsa2048, "PRIVATE KEY"), "RS256"},
		{"Ed25519", pemOf(t, ed, "PRIVATE KEY"), "EdDSA"},
		{"line breaks written as \\n", []byte(strings.ReplaceAll(strings.TrimSpace(string(pemOf(t, p256, "PRIVATE KEY"))), "\n", `\n`)), "ES256"},
	} {
		k, err := oauth.ParseKey(c.pem)
		if err != nil || k.Alg != c.alg {
			t.Errorf("%s: ParseKey = %+v, %v; want %s", c.name, k, err, c.alg)
		}
	}
	rsa1024 := mustKey(rsa.GenerateKey(rand.Reader, 1024))
	for _, c := range []struct {
		name, pem, want string
	}{
		{"not PEM", "hello", "no PEM block"},
		{"a certificate", string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: []byte{1}})), `"CERTIFICATE" is not a private key`},
		{"a short RSA key", string(pemOf(t, rsa1024, "RSA PRIVATE KEY")), "1024 bits"},
		{"garbage in the block", string(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: []byte{1, 2, 3}})), "the PRIVATE KEY block"},
	} {
		if _, err := oauth.ParseKey([]byte(c.pem)); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: ParseKey error %v, want one saying %q", c.name, err, c.want)
		}
	}
}

// machineServer is a protected endpoint of an authorization server that
// knows one machine client of each kind: "svc" with a secret, and one
// client per key kind with its public key.
func machineServer(t *testing.T) (*oauthtest.AS, string, map[string]*oauth.Key) {
	as := oauthtest.NewAS(t)
	as.Scopes = []string{"mcp:tools", "offline_access"}
	as.Machines = map[string]string{"svc": "svc-secret-0123456789"}
	as.Keys = map[string]crypto.PublicKey{}
	keys := map[string]*oauth.Key{}
	_, ed, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	for id, s := range map[string]crypto.Signer{
		"es256": mustKey(ecdsa.GenerateKey(elliptic.P256(), rand.Reader)),
		"es512": mustKey(ecdsa.GenerateKey(elliptic.P521(), rand.Reader)),
		"rs256": mustKey(rsa.GenerateKey(rand.Reader, 2048)),
		"eddsa": ed,
	} {
		k, err := oauth.ParseKey(pemOf(t, s, "PRIVATE KEY"))
		if err != nil {
			t.Fatal(err)
		}
		keys[id] = k
		as.Keys[id] = s.Public()
	}
	return as, protected(t, as).URL + "/mcp", keys
}

// machineGet returns a GET of f's server through a transport that answers
// a challenge with f's machine grant; it fails the test unless the answer
// is 200.
func machineGet(t *testing.T, f *oauth.Flow) func() {
	hc := &http.Client{Transport: &oauth.Transport{Next: http.DefaultTransport, Tokens: oauth.NewTokens(f), Authorize: func(ctx context.Context, ch *oauth.Challenge) error {
		_, err := f.MachineToken(ctx, ch)
		return err
	}}}
	return func() {
		t.Helper()
		resp, err := hc.Get(f.Server)
		if err != nil {
			t.Fatalf("GET: %v", err)
		}
		resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Fatalf("GET: HTTP %d", resp.StatusCode)
		}
	}
}

// A machine client gets its token at the first 401 with its own
// credentials — a secret, or a JWT signed with each kind of key — and gets
// a new one when the server refuses the old; nothing is asked of a person,
// and no refresh token is kept.
func TestClientCredentials(t *testing.T) {
	as, server, keys := machineServer(t)
	for _, c := range []struct {
		client string
		secret string
		method string
	}{
		{"svc", "svc-secret-0123456789", "basic"},
		{"es256", "", "jwt"},
		{"es512", "", "jwt"},
		{"rs256", "", "jwt"},
		{"eddsa", "", "jwt"},
	} {
		t.Run(c.client, func(t *testing.T) {
			st := newStore(t)
			settings := oauth.Settings{Grant: oauth.GrantClientCredentials, ClientID: c.client, ClientSecret: c.secret, Key: keys[c.client]}
			if c.secret != "" {
				settings.Key = nil
			}
			f := &oauth.Flow{Server: server, Settings: settings, Store: st, HTTP: &http.Client{Timeout: 10 * time.Second}}
			before := as.Count("client:" + c.method)
			get := machineGet(t, f)
			get()
			if got := as.Count("client:" + c.method); got != before+1 {
				t.Fatalf("client authentications by %s: %d, want %d", c.method, got, before+1)
			}
			rec, err := st.Load(server)
			if err != nil || rec == nil || rec.Client.Registration != oauth.RegistrationClientCredentials || rec.RefreshToken != "" || rec.Client.AuthMethod == "" {
				t.Fatalf("the stored token: %+v, %v", rec, err)
			}
			if strings.Contains(rec.AccessToken, " ") || !as.Valid(rec.AccessToken) {
				t.Fatalf("the stored access token %q is not the server's", rec.AccessToken)
			}
			if strings.Join(rec.Scopes, " ") != "mcp:tools" {
				t.Errorf("scopes %q: a machine client asks for the resource's scopes, never offline_access", rec.Scopes)
			}
			// The server forgets the token: the 401 gets another grant.
			as.Expire()
			get()
			if got := as.Count("client:" + c.method); got != before+2 {
				t.Fatalf("client authentications after the token ended: %d, want %d", got, before+2)
			}
		})
	}
	if as.Count("authorize") != 0 || as.Count("register") != 0 || as.Count("token:refresh") != 0 {
		t.Fatalf("a machine client went to the person's flow: %d authorizations, %d registrations, %d refreshes",
			as.Count("authorize"), as.Count("register"), as.Count("token:refresh"))
	}
}

// A token that expires is replaced before it is sent, with another grant
// (the margin is the refresh's); and a person's login in the store is not
// a machine client's token, nor the other way round.
func TestClientCredentialsExpiryAndOwnership(t *testing.T) {
	as, server, _ := machineServer(t)
	as.TokenLifetime = 10 * time.Second // under RefreshMargin: never fresh
	st := newStore(t)
	f := &oauth.Flow{Server: server, Settings: oauth.Settings{Grant: oauth.GrantClientCredentials, ClientID: "svc", ClientSecret: "svc-secret-0123456789"},
		Store: st, HTTP: &http.Client{Timeout: 10 * time.Second}}
	ctx := context.Background()
	if _, err := f.MachineToken(ctx, nil); err != nil {
		t.Fatalf("ClientCredentials with no challenge (harness login): %v", err)
	}
	tokens := oauth.NewTokens(f)
	first, err := tokens.Token(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	if as.Count("token:client") != 2 {
		t.Fatalf("a token about to expire was used: %d grants", as.Count("token:client"))
	}
	rec, _ := st.Load(server)
	if rec.AccessToken != first {
		t.Fatal("the new token is not the one stored")
	}

	// Another client id (an edit of the entry) does not use this token.
	other := &oauth.Flow{Server: server, Settings: oauth.Settings{Grant: oauth.GrantClientCredentials, ClientID: "es256"}, Store: st, HTTP: f.HTTP}
	if _, err := oauth.NewTokens(other).Token(ctx, ""); !errors.Is(err, oauth.ErrNoLogin) {
		t.Fatalf("another client's token was used: %v", err)
	}
	// Nor does a person's flow.
	person := &oauth.Flow{Server: server, Store: st, HTTP: f.HTTP}
	if _, err := oauth.NewTokens(person).Token(ctx, ""); !errors.Is(err, oauth.ErrNoLogin) {
		t.Fatalf("a person's flow used a machine client's token: %v", err)
	}
}

// What an authorization server cannot take is said before anything is
// sent, and a refused secret is the server's answer, quoted without the
// secret.
func TestClientCredentialsRefusals(t *testing.T) {
	_, server, keys := machineServer(t)
	hc := &http.Client{Timeout: 10 * time.Second}
	for _, c := range []struct {
		name     string
		settings oauth.Settings
		want     string
	}{
		{"a wrong secret", oauth.Settings{ClientID: "svc", ClientSecret: "not-the-secret-42"}, "the client credentials grant was refused: invalid_client"},
		{"another client's key", oauth.Settings{ClientID: "es512", Key: keys["es256"]}, "invalid_client: the signature does not verify"},
		{"a key the server does not know", oauth.Settings{ClientID: "nobody", Key: keys["es256"]}, "invalid_client: no key for the issuer"},
		{"no credentials", oauth.Settings{ClientID: "svc"}, "needs oauth.clientSecret or oauth.privateKey"},
	} {
		c.settings.Grant = oauth.GrantClientCredentials
		f := &oauth.Flow{Server: server, Settings: c.settings, Store: newStore(t), HTTP: hc}
		_, err := f.MachineToken(context.Background(), nil)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want an error saying %q", c.name, err, c.want)
		}
		if err != nil && c.settings.ClientSecret != "" && strings.Contains(err.Error(), c.settings.ClientSecret) {
			t.Errorf("%s: the error quotes the secret: %v", c.name, err)
		}
	}

	// An authorization server without the grant.
	plain := oauthtest.NewAS(t)
	f := &oauth.Flow{Server: protected(t, plain).URL + "/mcp", Settings: oauth.Settings{Grant: oauth.GrantClientCredentials, ClientID: "svc", ClientSecret: "svc-secret-0123456789"},
		Store: newStore(t), HTTP: hc}
	if _, err := f.MachineToken(context.Background(), nil); err == nil || !strings.Contains(err.Error(), "does not offer the client credentials grant") {
		t.Errorf("an authorization server without the grant: %v", err)
	}
	if plain.Count("token:client") != 0 {
		t.Error("the grant was asked for anyway")
	}
}

// A server that wants more than the token carries (403
// insufficient_scope) gets a new grant with the scopes it names on top of
// those the entry asks for.
func TestClientCredentialsStepUp(t *testing.T) {
	as := oauthtest.NewAS(t)
	as.Scopes = []string{"mcp:tools"}
	as.Machines = map[string]string{"svc": "svc-secret-0123456789"}
	var srv *httptest.Server
	srv = httptest.NewServer(as.Protect(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		tok := strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")
		if !strings.Contains(" "+as.TokenScope(tok)+" ", " mcp:admin ") {
			w.Header().Set("WWW-Authenticate", `Bearer error="insufficient_scope", scope="mcp:admin"`)
			http.Error(w, "more scope", http.StatusForbidden)
			return
		}
		w.Write([]byte(`{"ok":true}`))
	}), func() string { return srv.URL + "/mcp" }))
	t.Cleanup(srv.Close)
	st := newStore(t)
	f := &oauth.Flow{Server: srv.URL + "/mcp", Settings: oauth.Settings{Grant: oauth.GrantClientCredentials, ClientID: "svc", ClientSecret: "svc-secret-0123456789", Scopes: []string{"mcp:tools"}},
		Store: st, HTTP: &http.Client{Timeout: 10 * time.Second}}
	tr := &oauth.Transport{Next: http.DefaultTransport, Tokens: oauth.NewTokens(f), Authorize: func(ctx context.Context, ch *oauth.Challenge) error {
		_, err := f.MachineToken(ctx, ch)
		return err
	}}
	resp, err := (&http.Client{Transport: tr}).Get(srv.URL + "/mcp")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	rec, _ := st.Load(srv.URL + "/mcp")
	if resp.StatusCode != 200 || rec == nil || strings.Join(rec.Scopes, " ") != "mcp:tools mcp:admin" || as.Count("token:client") != 2 {
		t.Fatalf("after the step-up: HTTP %d, %d grants, record %+v", resp.StatusCode, as.Count("token:client"), rec)
	}
}
