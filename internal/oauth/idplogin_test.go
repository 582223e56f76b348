package oauth_test

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/harness-go/harness/internal/oauth"
	"github.com/harness-go/harness/internal/testkit/oauthtest"
)

// idpLoginFlow is the flow of an enterprise entry of server whose ID token
// comes from the harness's own login at p.
func idpLoginFlow(p *oauthtest.IdP, server string, st *oauth.Store) *oauth.Flow {
	idp := &oauth.IdP{Issuer: p.URL, ClientID: p.ClientID, ClientSecret: p.ClientSecret}
	return &oauth.Flow{Server: server, Settings: oauth.Settings{Grant: oauth.GrantJWTBearer, ClientID: "svc", ClientSecret: "svc-secret-0123456789", IdP: idp},
		Store: st, HTTP: &http.Client{Timeout: 10 * time.Second}}
}

// approve is a person who approves whatever login page is opened; it
// counts the pages.
func approve(t *testing.T, opened *int) oauth.LoginOptions {
	open := oauthtest.Approver(t)
	return oauth.LoginOptions{Open: func(u string) error {
		*opened++
		return open(u)
	}}
}

// An enterprise entry without an ID token of its own: `harness login` logs
// the person in at the IdP (OpenID Connect, PKCE, a nonce, openid and
// offline_access), keeps the ID token and the refresh token, and makes the
// grant. The ID token is refreshed when it is near its end, and a second
// server through the same IdP asks nobody.
func TestIdPLogin(t *testing.T) {
	as, server, _ := workloadServer(t)
	p := oauthtest.NewIdP(t)
	p.ClientSecret = "idp-secret-0123456789"
	p.Trust(as)
	st := newStore(t)
	f := idpLoginFlow(p, server, st)
	if !f.Settings.IdPLogin() || f.IdPLoggedIn() {
		t.Fatalf("IdPLogin %v, IdPLoggedIn %v before any login", f.Settings.IdPLogin(), f.IdPLoggedIn())
	}
	// Before the login, a grant needs one.
	if _, err := f.MachineToken(context.Background(), nil); !errors.Is(err, oauth.ErrNoLogin) || !strings.Contains(err.Error(), "nobody logged in at the IdP") {
		t.Fatalf("a grant before the login: %v, want ErrNoLogin", err)
	}
	opened := 0
	rec, err := f.Login(context.Background(), approve(t, &opened))
	if err != nil {
		t.Fatal(err)
	}
	if opened != 1 || p.Count("authorize") != 1 || p.Count("token:code") != 1 || p.Count("exchange") != 1 || as.Count("token:jwt-bearer") != 1 {
		t.Fatalf("%d pages, %d authorizations, %d codes, %d exchanges, %d grants", opened, p.Count("authorize"), p.Count("token:code"), p.Count("exchange"), as.Count("token:jwt-bearer"))
	}
	if rec.Issuer != as.URL || rec.AccessToken == "" || !f.IdPLoggedIn() {
		t.Fatalf("the login: issuer %q, token %q, IdP logged in %v", rec.Issuer, rec.AccessToken, f.IdPLoggedIn())
	}
	idpRec, err := st.IdPLoginRecord(f.Settings.IdP)
	if err != nil || idpRec == nil || idpRec.IDToken == "" || idpRec.RefreshToken == "" || idpRec.Client.Registration != oauth.RegistrationIdP {
		t.Fatalf("the IdP login's record: %+v, %v", idpRec, err)
	}
	if c, err := oauth.ParseIDToken(idpRec.IDToken); err != nil || c.User() != "alice@example.com" {
		t.Fatalf("the ID token: %+v, %v", c, err)
	}
	if out := st.Secrets.Redact(idpRec.IDToken + " " + idpRec.RefreshToken); strings.Contains(out, idpRec.IDToken) || strings.Contains(out, idpRec.RefreshToken) {
		t.Error("the IdP login's tokens are not secrets")
	}

	// Each grant exchanges the ID token in the store while it is good for
	// more than a minute; a shorter one is refreshed first.
	get := machineGet(t, f)
	as.Expire()
	get()
	if p.Count("exchange") != 2 || p.Count("token:refresh") != 0 {
		t.Fatalf("a second grant: %d exchanges, %d refreshes", p.Count("exchange"), p.Count("token:refresh"))
	}
	p.IDTokenLifetime = 30 * time.Second // below the margin: every grant refreshes it
	idpRec.IDToken = oauthtest.SignJWT(p.Key, map[string]any{"iss": p.URL, "aud": p.ClientID, "sub": "user-1", "exp": time.Now().Add(30 * time.Second).Unix()})
	if err := st.Save(idpRec); err != nil {
		t.Fatal(err)
	}
	as.Expire()
	get()
	if p.Count("token:refresh") != 1 || p.Count("exchange") != 3 || p.Count("authorize") != 1 {
		t.Fatalf("a grant with an ID token near its end: %d refreshes, %d exchanges, %d authorizations", p.Count("token:refresh"), p.Count("exchange"), p.Count("authorize"))
	}

	// Another server behind the same IdP: its login asks nobody.
	p.IDTokenLifetime = time.Hour
	as.Expire()
	get() // refreshes the 30-second ID token again, to one of an hour
	as2, server2, _ := workloadServer(t)
	p.Trust(as2)
	f2 := idpLoginFlow(p, server2, st)
	if _, err := f2.Login(context.Background(), approve(t, &opened)); err != nil {
		t.Fatal(err)
	}
	if opened != 1 || p.Count("authorize") != 1 {
		t.Fatalf("the second server's login opened %d pages, %d authorizations in all", opened, p.Count("authorize"))
	}
}

// The IdP login ends when the IdP no longer takes its refresh token, or
// refreshes without an ID token: the grant is then ErrNoLogin, saying so,
// the record keeps no token to try again with, and the next `harness
// login` asks the person again.
func TestIdPLoginEnds(t *testing.T) {
	as, server, _ := workloadServer(t)
	p := oauthtest.NewIdP(t)
	p.Trust(as)
	st := newStore(t)
	f := idpLoginFlow(p, server, st)
	opened := 0
	nearEnd := func() {
		t.Helper()
		r, err := st.IdPLoginRecord(f.Settings.IdP)
		if err != nil || r == nil {
			t.Fatalf("the IdP login's record: %v", err)
		}
		r.IDToken = oauthtest.SignJWT(p.Key, map[string]any{"iss": p.URL, "aud": p.ClientID, "sub": "user-1", "exp": time.Now().Add(10 * time.Second).Unix()})
		if err := st.Save(r); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range []struct {
		name string
		end  func()
		want string
	}{
		{"the refresh token revoked", p.RevokeLogins, "the refresh at the IdP was refused: invalid_grant"},
		{"a refresh without an ID token", func() { p.NoIDTokenOnRefresh = true }, "the IdP's refresh gave no new ID token"},
	} {
		if _, err := f.Login(context.Background(), approve(t, &opened)); err != nil {
			t.Fatalf("%s: the login: %v", c.name, err)
		}
		nearEnd()
		c.end()
		_, err := f.MachineToken(context.Background(), nil)
		if !errors.Is(err, oauth.ErrNoLogin) || !strings.Contains(err.Error(), c.want) {
			t.Fatalf("%s: %v, want ErrNoLogin saying %q", c.name, err, c.want)
		}
		after, _ := st.IdPLoginRecord(f.Settings.IdP)
		if after.IDToken != "" || after.RefreshToken != "" || after.LastRefreshError == "" || f.IdPLoggedIn() {
			t.Errorf("%s: the record keeps a token, or no error: %+v", c.name, after)
		}
	}
	if opened != 2 {
		t.Errorf("%d login pages, want one per login", opened)
	}
}
