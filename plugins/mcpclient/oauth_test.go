package mcpclient

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/harness-go/harness/host"
	"github.com/harness-go/harness/internal/oauth"
	"github.com/harness-go/harness/internal/testkit/fixture"
	"github.com/harness-go/harness/internal/testkit/oauthtest"
	"github.com/harness-go/harness/internal/testkit/testlog"
)

// oauthPeer is the fixture server behind the test authorization server.
func oauthPeer(t *testing.T, as *oauthtest.AS) string {
	t.Helper()
	_, rec := testlog.New(t)
	var srv *httptest.Server
	srv = httptest.NewServer(as.Protect(fixture.HTTPHandler(fixture.Options{Stderr: rec, Only: []string{"echo"}}), func() string { return srv.URL + "/mcp" }))
	t.Cleanup(srv.Close)
	return srv.URL + "/mcp"
}

// loginInto logs in to server with a store on dir, as `harness login` in
// another process would: its own store and flow.
func loginInto(t *testing.T, dir, server string) *oauth.Record {
	t.Helper()
	f := &oauth.Flow{Server: server, Store: &oauth.Store{Dir: dir}, HTTP: OAuthHTTPClient()}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	ch, err := oauth.Probe(ctx, f.HTTP, server)
	if err != nil {
		t.Fatal(err)
	}
	rec, err := f.Login(ctx, oauth.LoginOptions{Challenge: ch, Open: oauthtest.Approver(t)})
	if err != nil {
		t.Fatalf("login: %v", err)
	}
	return rec
}

// An entry whose server asks for a login is needs-login: settled, no
// tools; a call tells the model the command a person runs; nothing opens
// a browser. A login made elsewhere into the shared store is picked up: the
// entry connects and its tools appear. When the refresh token is refused
// later, the tools go and the entry needs a login again; a logout leaves it
// there.
func TestNeedsLoginThenLogin(t *testing.T) {
	as := oauthtest.NewAS(t)
	url := oauthPeer(t, as)
	dir := filepath.Join(t.TempDir(), "oauth")
	hx := newHarness(t)
	provideOAuth(t, hx.H, OAuthOptions{StoreDir: dir, Poll: 20 * time.Millisecond})
	hx.mustLoad(yml(httpEntry("web", "web", url, nil)))

	e := hx.wantState("web", host.NeedsLogin, "the server needs a login")
	if !e.Settled {
		t.Fatal("needs-login is not settled")
	}
	hx.wantNames("mcp__web__")
	if as.Count("authorize") != 0 || as.Count("register") != 0 {
		t.Fatalf("starting the entry went to the authorization server: %d authorizations, %d registrations", as.Count("authorize"), as.Count("register"))
	}
	st := hx.status("web")
	if st.Phase != "needs-login" || st.OAuth == nil || st.OAuth.LoggedIn {
		t.Fatalf("status: phase %s, oauth %+v", st.Phase, st.OAuth)
	}
	// A reload of the entry (an edit, then a restart) opens nothing and
	// says what to run, again.
	hx.mustLoad(yml(httpEntry("web", "web", url, map[string]any{"startupTimeoutMs": 9000})))
	hx.wantState("web", host.NeedsLogin, "the server needs a login")
	if err := hx.H.Restart(context.Background(), "web"); err != nil {
		t.Fatal(err)
	}
	hx.settle()
	hx.wantState("web", host.NeedsLogin, "the server needs a login")
	if as.Count("authorize") != 0 || as.Count("register") != 0 {
		t.Fatalf("a reload went to the authorization server: %d authorizations, %d registrations", as.Count("authorize"), as.Count("register"))
	}

	rec := loginInto(t, dir, url)
	hx.waitState("web", host.Ready)
	hx.waitTools("the server's tools after the login", func(n []string) bool { return len(n) == 1 })
	hx.wantCall("mcp__web__echo", `{"message":"hi"}`, "echo: hi", false)
	if st := hx.status("web"); !st.OAuth.LoggedIn || st.OAuth.Issuer != as.URL || st.OAuth.Expiry == nil {
		t.Fatalf("status after the login: %+v", st.OAuth)
	}

	// The access token ends early: refreshed with no one's help.
	as.Expire()
	hx.wantCall("mcp__web__echo", `{"message":"again"}`, "echo: again", false)
	if as.Count("token:refresh") < 1 {
		t.Fatal("no refresh after the token ended")
	}

	// The authorization server forgets the login: the next request finds
	// out, the tools go, the entry needs a login.
	as.RevokeAll()
	res := hx.Call("mcp__web__echo", `{"message":"x"}`)
	if !res.IsError || !strings.Contains(res.Text, "harness login web") {
		t.Fatalf("a call after the revocation = %+v", res)
	}
	hx.waitState("web", host.NeedsLogin)
	hx.waitTools("no tools once the login is gone", func(n []string) bool { return len(n) == 0 })
	if st := hx.status("web"); st.OAuth.LastRefreshError == "" || strings.Contains(st.OAuth.LastRefreshError, rec.RefreshToken) {
		t.Fatalf("status after invalid_grant: %+v", st.OAuth)
	}

	res = hx.Call("mcp__web__echo", `{"message":"x"}`)
	if !strings.Contains(res.Text, "unknown tool") && !strings.Contains(res.Text, "harness login web") {
		t.Fatalf("a call while the entry needs a login = %+v", res)
	}

	// A new login brings the tools back; a logout (the files removed, as
	// harness logout does) ends the session at once.
	rec = loginInto(t, dir, url)
	hx.waitState("web", host.Ready)
	hx.waitTools("the tools after the second login", func(n []string) bool { return len(n) == 1 })
	if _, err := (&oauth.Store{Dir: dir}).Delete(url); err != nil {
		t.Fatal(err)
	}
	hx.waitState("web", host.NeedsLogin)
	hx.waitTools("no tools after the logout", func(n []string) bool { return len(n) == 0 })
	if st := hx.status("web"); !strings.Contains(strings.Join(st.StatusLines(), "\n"), "oauth: not logged in") {
		t.Fatalf("status after the logout: %q", st.StatusLines())
	}

	// No token, code or verifier in any record of ours.
	logs := hx.Log.String()
	for _, v := range []string{rec.AccessToken, rec.RefreshToken} {
		if strings.Contains(logs, v) {
			t.Errorf("the log holds a token: %s", logs)
		}
	}
	if files, _ := filepath.Glob(filepath.Join(dir, "*.json")); len(files) != 0 {
		t.Fatalf("token files left after the logout: %v", files)
	}
}

// oauth: false turns the flow off: the 401 fails the entry, naming the
// server's challenge; a static Authorization header is sent as before.
func TestOAuthOffAndStaticHeader(t *testing.T) {
	as := oauthtest.NewAS(t)
	url := oauthPeer(t, as)
	hx := newHarness(t)
	provideOAuth(t, hx.H, OAuthOptions{StoreDir: t.TempDir()})
	hx.mustLoad(yml(httpEntry("web", "web", url, map[string]any{"oauth": false})))
	e := hx.wantState("web", host.Failed, "HTTP 401", "WWW-Authenticate: Bearer", "resource_metadata")
	if strings.Contains(e.Error, "initialize: initialize") || strings.Contains(e.Error, "server/discover: server/discover") {
		t.Errorf("a step named twice: %s", e.Error)
	}

	// A token from elsewhere, as a static header: no OAuth at all.
	rec := loginInto(t, t.TempDir(), url)
	hx.mustLoad(yml(httpEntry("web", "web", url, map[string]any{"headers": map[string]string{"Authorization": "Bearer " + rec.AccessToken}})))
	hx.waitState("web", host.Ready)
	if st := hx.status("web"); st.OAuth != nil {
		t.Fatalf("an entry with a static Authorization header shows oauth %+v", st.OAuth)
	}
}

func TestOAuthConfig(t *testing.T) {
	hx := newHarness(t)
	for _, c := range []struct {
		config map[string]any
		want   string
	}{
		{map[string]any{"oauth": map[string]any{"clientID": "x"}}, `oauth.clientID: unknown key`},
		{map[string]any{"oauth": map[string]any{"clientSecret": "s3cr3t-value"}}, "oauth.clientSecret: needs oauth.clientId"},
		{map[string]any{"oauth": map[string]any{"clientMetadataUrl": "http://x.example/m.json"}}, "must be an https URL"},
		{map[string]any{"oauth": map[string]any{"callbackPort": 70000}}, "oauth.callbackPort"},
		{map[string]any{"oauth": "yes please"}, "must be false, true or a mapping"},
		{map[string]any{"oauth": map[string]any{"clientId": "x"}, "headers": map[string]string{"Authorization": "Bearer abc"}}, "keep one of the two"},
		{map[string]any{"oauth": map[string]any{"scopes": []string{"a b"}}}, `oauth.scopes[0]: "a b" is not a scope`},
		{map[string]any{"oauth": map[string]any{"authServerMetadataUrl": "ftp://x"}}, "oauth.authServerMetadataUrl"},
		{map[string]any{"oauth": map[string]any{"grant": "password"}}, `oauth.grant: "password" is not a grant`},
		{map[string]any{"oauth": map[string]any{"grant": "client_credentials", "clientSecret": "s3cr3t-value"}}, "oauth.clientId: is required for oauth.grant"},
		{map[string]any{"oauth": map[string]any{"grant": "client_credentials", "clientId": "svc"}}, "needs exactly one of clientSecret, privateKey and privateKeyFile"},
		{map[string]any{"oauth": map[string]any{"grant": "client_credentials", "clientId": "svc", "clientSecret": "s3cr3t-value", "privateKeyFile": "k.pem"}}, "needs exactly one of"},
		{map[string]any{"oauth": map[string]any{"grant": "client_credentials", "clientId": "svc", "privateKey": "not a key"}}, "oauth.privateKey: no PEM block"},
		{map[string]any{"oauth": map[string]any{"grant": "client_credentials", "clientId": "svc", "clientSecret": "s3cr3t-value", "callbackPort": 8080}}, "oauth.callbackPort: is not for oauth.grant"},
		{map[string]any{"oauth": map[string]any{"clientId": "app", "privateKeyFile": "k.pem"}}, `oauth.privateKeyFile: is only for oauth.grant client_credentials or jwt_bearer`},
		{map[string]any{"oauth": map[string]any{"grant": "client_credentials", "clientId": "svc", "clientSecret": "s3cr3t-value", "assertionFile": "t.jwt"}}, `oauth.assertionFile: is only for oauth.grant jwt_bearer`},
		{map[string]any{"oauth": map[string]any{"grant": "jwt_bearer"}}, "needs exactly one of assertion, assertionFile (a workload's identity token) and idp"},
		{map[string]any{"oauth": map[string]any{"grant": "jwt_bearer", "assertion": "a.b.c", "assertionFile": "t.jwt"}}, "needs exactly one of assertion, assertionFile (a workload's identity token) and idp"},
		{map[string]any{"oauth": map[string]any{"grant": "jwt_bearer", "assertion": "not-a-jwt"}}, "oauth.assertion: is not a JWT"},
		{map[string]any{"oauth": map[string]any{"grant": "jwt_bearer", "assertionFile": "t.jwt", "privateKeyFile": "k.pem"}}, "oauth.clientId: is required to authenticate the client"},
		{map[string]any{"oauth": map[string]any{"grant": "jwt_bearer", "assertionFile": "t.jwt", "clientId": "svc", "clientSecret": "s3cr3t-value", "privateKeyFile": "k.pem"}}, "takes at most one of clientSecret, privateKey and privateKeyFile"},
		{map[string]any{"oauth": map[string]any{"grant": "jwt_bearer", "assertionFile": "t.jwt", "callbackPort": 8080}}, "oauth.callbackPort: is not for oauth.grant"},
		{map[string]any{"oauth": map[string]any{"dpop": "maybe"}}, "into bool"},
		{map[string]any{"oauth": map[string]any{"grant": "jwt_bearer", "assertion": "a.b.c", "idp": map[string]any{"issuer": "https://idp.example", "clientId": "h", "idToken": "a.b.c"}}}, "needs exactly one of assertion"},
		{map[string]any{"oauth": map[string]any{"grant": "jwt_bearer", "idp": map[string]any{"clientId": "h", "idToken": "a.b.c"}}}, "oauth.idp: needs exactly one of issuer and tokenEndpoint"},
		{map[string]any{"oauth": map[string]any{"grant": "jwt_bearer", "idp": map[string]any{"issuer": "https://idp.example", "idToken": "a.b.c"}}}, "oauth.idp.clientId: is required"},
		{map[string]any{"oauth": map[string]any{"grant": "jwt_bearer", "idp": map[string]any{"tokenEndpoint": "https://idp.example/token", "clientId": "h"}}}, "that needs its issuer"},
		{map[string]any{"oauth": map[string]any{"grant": "jwt_bearer", "idp": map[string]any{"issuer": "https://idp.example", "clientId": "h", "idToken": "a.b.c", "idTokenFile": "id.jwt"}}}, "takes one of idToken and idTokenFile"},
		{map[string]any{"oauth": map[string]any{"grant": "jwt_bearer", "idp": map[string]any{"issuer": "idp.example", "clientId": "h", "idToken": "a.b.c"}}}, `oauth.idp.issuer: "idp.example" is not an http:// or https:// URL`},
		{map[string]any{"oauth": map[string]any{"grant": "jwt_bearer", "idp": map[string]any{"issuer": "https://idp.example", "clientId": "h", "idToken": "abc"}}}, "oauth.idp.idToken: is not a JWT"},
		{map[string]any{"oauth": map[string]any{"grant": "jwt_bearer", "idp": map[string]any{"issuer": "https://idp.example", "clientID": "h"}}}, "oauth.idp.clientID: unknown key"},
		{map[string]any{"oauth": map[string]any{"idp": map[string]any{"issuer": "https://idp.example", "clientId": "h", "idToken": "a.b.c"}}}, "oauth.idp: is only for oauth.grant jwt_bearer"},
	} {
		err := hx.Load(yml(httpEntry("web", "web", "http://127.0.0.1:1/mcp", c.config)))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: %v, want %q", c.config, err, c.want)
		}
	}
	err := hx.Load(yml(hx.stdio("s", "s", map[string]any{"oauth": false})))
	if err == nil || !strings.Contains(err.Error(), "only for transport") {
		t.Errorf("oauth on stdio: %v", err)
	}
}

// A login that arrives while the server is down: the entry keeps waiting,
// and says why its connection failed.
func TestLoginWhileTheServerIsDown(t *testing.T) {
	as := oauthtest.NewAS(t)
	_, logs := testlog.New(t)
	var srv *httptest.Server
	srv = httptest.NewServer(as.Protect(fixture.HTTPHandler(fixture.Options{Stderr: logs, Only: []string{"echo"}}), func() string { return srv.URL + "/mcp" }))
	url := srv.URL + "/mcp"
	dir := t.TempDir()
	hx := newHarness(t)
	provideOAuth(t, hx.H, OAuthOptions{StoreDir: dir, Poll: 20 * time.Millisecond})
	hx.mustLoad(yml(httpEntry("web", "web", url, nil)))
	hx.wantState("web", host.NeedsLogin)
	srv.Close()
	if err := (&oauth.Store{Dir: dir}).Save(&oauth.Record{Server: url, Issuer: as.URL, TokenEndpoint: as.URL + "/token", AccessToken: "at-NotAnyServersToken42"}); err != nil {
		t.Fatal(err)
	}
	hx.Logs.Wait(t, waitTimeout, "the failed connection", 1, msg("web", "a login is there, but connecting failed; trying again later"))
	if e := hx.Entry("web"); e.State != host.NeedsLogin {
		t.Fatalf("entry %+v", e)
	}
	if st := hx.status("web"); st.LastError == "" {
		t.Fatalf("status has no lastError: %+v", st)
	}
	if !errors.Is(&NeedsLoginError{}, oauth.ErrNoLogin) {
		t.Fatal("a NeedsLoginError is not an oauth.ErrNoLogin")
	}
}

// What status says of a login, for people.
func TestOAuthStatusLine(t *testing.T) {
	future, past := time.Now().Add(time.Hour), time.Now().Add(-time.Hour)
	for _, c := range []struct {
		o    OAuthStatus
		want []string
	}{
		{OAuthStatus{}, []string{"oauth: not logged in"}},
		{OAuthStatus{Issuer: "https://as", LastRefreshError: "the refresh was refused: invalid_grant", Note: "the token file x cannot be used"}, []string{"not logged in (issuer https://as)", "last refresh error: the refresh was refused", "cannot be used"}},
		{OAuthStatus{LoggedIn: true, Issuer: "https://as", Scopes: []string{"repo", "read:org"}, Expiry: &future, Refreshable: true}, []string{"logged in at https://as", "scopes repo read:org", "the token expires at", "(refreshable)"}},
		{OAuthStatus{LoggedIn: true, Issuer: "https://as", Expiry: &past, LastRefreshError: "boom", Note: "n"}, []string{"the token expired at", "last refresh error: boom", "; n"}},
		{OAuthStatus{LoggedIn: true, Issuer: "https://as"}, []string{"the token does not expire"}},
	} {
		o := c.o
		lines := strings.Join((&Status{ServerName: "s", Transport: TransportHTTP, OAuth: &o}).StatusLines(), "\n")
		for _, w := range c.want {
			if !strings.Contains(lines, w) {
				t.Errorf("%+v: %q lacks %q", c.o, lines, w)
			}
		}
	}
}

// The flow's own POSTs never follow a redirect to another origin; a GET
// (metadata) may.
func TestOAuthHTTPClientRedirects(t *testing.T) {
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write([]byte("ok")) }))
	defer other.Close()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, other.URL+"/token", http.StatusTemporaryRedirect)
	}))
	defer srv.Close()
	c := OAuthHTTPClient()
	if _, err := c.Post(srv.URL+"/token", "application/x-www-form-urlencoded", strings.NewReader("refresh_token=x")); err == nil || !strings.Contains(err.Error(), "another origin") {
		t.Fatalf("a POST redirected elsewhere: %v", err)
	}
	resp, err := c.Get(srv.URL + "/.well-known/oauth-authorization-server")
	if err != nil {
		t.Fatalf("a GET redirected elsewhere: %v", err)
	}
	resp.Body.Close()
}

var _ http.RoundTripper = (*oauth.Transport)(nil)

// With someone to log in (OAuthOptions.Authorize: a test, the conformance
// client), the flow runs inline at the first 401 and the entry starts
// ready: the harness itself never sets it.
func TestOAuthAuthorizeInline(t *testing.T) {
	as := oauthtest.NewAS(t)
	url := oauthPeer(t, as)
	hx := newHarness(t)
	var authorized int
	provideOAuth(t, hx.H, OAuthOptions{StoreDir: t.TempDir(), Authorize: func(ctx context.Context, f *oauth.Flow, ch *oauth.Challenge) error {
		authorized++
		lb, err := oauth.Listen(0)
		if err != nil {
			return err
		}
		defer lb.Close()
		p, err := f.Begin(ctx, ch, lb.RedirectURI())
		if err != nil {
			return err
		}
		loc, err := oauthtest.FollowHeadlessNoDeliver(p.URL)
		if err != nil {
			return err
		}
		_, err = f.Finish(ctx, p, loc)
		return err
	}})
	hx.mustLoad(yml(httpEntry("web", "web", url, nil)))
	hx.wantState("web", host.Ready)
	hx.wantCall("mcp__web__echo", `{"message":"hi"}`, "echo: hi", false)
	if authorized != 1 {
		t.Fatalf("%d authorizations, want 1", authorized)
	}
}

// provideOAuth provides the test's OAuth settings to h, before a load.
func provideOAuth(t *testing.T, h *host.Host, o OAuthOptions) {
	t.Helper()
	if err := OAuthKey.ProvideBy(h, o); err != nil {
		t.Fatal(err)
	}
}

// A machine client (oauth.grant client_credentials, its key in a file
// beside cordis.yml) is never needs-login: its first 401 gets a token with
// its own credentials and the entry is ready; a token the server no
// longer takes, or a logout, is a new grant, not a login to wait for. A key
// file that is not there fails the entry, naming the file.
func TestMachineClient(t *testing.T) {
	as := oauthtest.NewAS(t)
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	as.Keys = map[string]crypto.PublicKey{"svc": key.Public()}
	url := oauthPeer(t, as)
	dir := filepath.Join(t.TempDir(), "oauth")
	hx := newHarness(t)
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	keyPEM := pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der})
	if err := os.WriteFile(filepath.Join(hx.Dir, "svc.pem"), keyPEM, 0o600); err != nil {
		t.Fatal(err)
	}
	provideOAuth(t, hx.H, OAuthOptions{StoreDir: dir, Poll: 20 * time.Millisecond})
	machine := map[string]any{"oauth": map[string]any{"grant": "client_credentials", "clientId": "svc", "privateKeyFile": "svc.pem"}}
	hx.mustLoad(yml(httpEntry("web", "web", url, machine)))
	hx.wantState("web", host.Ready)
	if out := hx.H.Secrets().Redact("key: " + string(keyPEM)); strings.Contains(out, "PRIVATE KEY") {
		t.Errorf("the key file is not a secret: %q", out)
	}
	hx.wantCall("mcp__web__echo", `{"message":"hi"}`, "echo: hi", false)
	if as.Count("client:jwt") != 1 || as.Count("authorize") != 0 {
		t.Fatalf("%d client credentials grants, %d authorizations", as.Count("client:jwt"), as.Count("authorize"))
	}
	if st := hx.status("web"); st.OAuth == nil || !st.OAuth.LoggedIn || st.OAuth.Client != oauth.RegistrationClientCredentials || st.OAuth.Refreshable ||
		!strings.Contains(strings.Join(st.StatusLines(), "\n"), "oauth: a client credentials token of "+as.URL) {
		t.Fatalf("status: %+v\n%s", st.OAuth, strings.Join(st.StatusLines(), "\n"))
	}

	as.Expire()
	hx.wantCall("mcp__web__echo", `{"message":"again"}`, "echo: again", false)
	if as.Count("client:jwt") != 2 {
		t.Fatalf("after the token ended: %d grants, want 2", as.Count("client:jwt"))
	}
	// A logout deletes the token; the next request gets another, while the
	// deleted one would still be taken: the entry reads the store, not a
	// copy of its own.
	if _, err := (&oauth.Store{Dir: dir}).Delete(url); err != nil {
		t.Fatal(err)
	}
	hx.wantCall("mcp__web__echo", `{"message":"after the logout"}`, "echo: after the logout", false)
	if e := hx.Entry("web"); e.State != host.Ready || as.Count("client:jwt") != 3 {
		t.Fatalf("after a logout: %s, %d grants", e.State, as.Count("client:jwt"))
	}

	// An edit naming a key file that is not there keeps the running
	// instance; a new entry with it fails, naming the file.
	missing := map[string]any{"oauth": map[string]any{"grant": "client_credentials", "clientId": "svc", "privateKeyFile": "gone.pem"}}
	_ = hx.Load(yml(httpEntry("web", "web", url, missing)))
	hx.wantState("web", host.Ready)
	hx.wantCall("mcp__web__echo", `{"message":"kept"}`, "echo: kept", false)
	_ = hx.Load(yml(httpEntry("web", "web", url, machine), httpEntry("web2", "web2", url, missing)))
	hx.wantState("web2", host.Failed, "oauth.privateKeyFile", "gone.pem")
}

// A workload identity entry (oauth.grant jwt_bearer) presents the token in
// its assertionFile: ready with no login, the file read again at the next
// grant (a platform rotates it), each token it held in the secret set; a
// file that is not there fails a new entry, naming it.
func TestWorkloadIdentity(t *testing.T) {
	as := oauthtest.NewAS(t)
	platform, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	as.Workloads = map[string]crypto.PublicKey{"https://platform.example": platform.Public()}
	url := oauthPeer(t, as)
	hx := newHarness(t)
	provideOAuth(t, hx.H, OAuthOptions{StoreDir: filepath.Join(t.TempDir(), "oauth")})
	tokenFile := filepath.Join(hx.Dir, "token")
	rotate := func() string {
		t.Helper()
		tok := oauthtest.WorkloadToken(platform, "https://platform.example", "system:serviceaccount:ci:agent", as.URL, time.Now().Add(time.Hour))
		if err := os.WriteFile(tokenFile, []byte(tok+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		return tok
	}
	first := rotate()
	workload := map[string]any{"oauth": map[string]any{"grant": "jwt_bearer", "assertionFile": "token"}}
	hx.mustLoad(yml(httpEntry("web", "web", url, workload)))
	hx.wantState("web", host.Ready)
	hx.wantCall("mcp__web__echo", `{"message":"hi"}`, "echo: hi", false)
	if as.Count("token:jwt-bearer") != 1 || as.Count("client:none") != 1 || as.Count("authorize") != 0 {
		t.Fatalf("%d jwt bearer grants, %d anonymous, %d authorizations", as.Count("token:jwt-bearer"), as.Count("client:none"), as.Count("authorize"))
	}
	if st := hx.status("web"); st.OAuth == nil || !st.OAuth.LoggedIn || st.OAuth.Client != oauth.RegistrationJWTBearer || st.OAuth.Refreshable ||
		!strings.Contains(strings.Join(st.StatusLines(), "\n"), "oauth: a workload identity token of "+as.URL) {
		t.Fatalf("status: %+v\n%s", st.OAuth, strings.Join(st.StatusLines(), "\n"))
	}

	// The platform rotates the token; the next grant presents the new one.
	second := rotate()
	as.Expire()
	hx.wantCall("mcp__web__echo", `{"message":"again"}`, "echo: again", false)
	if as.Count("token:jwt-bearer") != 2 {
		t.Fatalf("after the token ended: %d grants, want 2", as.Count("token:jwt-bearer"))
	}
	for _, tok := range []string{first, second} {
		if out := hx.H.Secrets().Redact("token " + tok); strings.Contains(out, tok) {
			t.Errorf("a workload token is not a secret: %q", out)
		}
	}

	// (Another server: this one's token in the store would serve web2.)
	missing := map[string]any{"oauth": map[string]any{"grant": "jwt_bearer", "assertionFile": "gone.jwt"}}
	_ = hx.Load(yml(httpEntry("web", "web", url, workload), httpEntry("web2", "web2", oauthPeer(t, as), missing)))
	if e := hx.waitState("web2", host.Failed); !strings.Contains(e.Error, "oauth.assertionFile") || !strings.Contains(e.Error, "gone.jwt") {
		t.Fatalf("web2: %s", e.Error)
	}
	hx.wantState("web", host.Ready)
}

// A DPoP-bound login (a server that asks for DPoP, an authorization server
// that takes ES256 proofs) made by `harness login` in another process
// serves the entry: its key comes from the store, every request to the
// server proves it (the test server refuses a proof seen twice), a refresh
// keeps it, and the status says the tokens are bound.
func TestDPoPEntry(t *testing.T) {
	as := oauthtest.NewAS(t)
	as.Scopes = []string{"mcp:tools", "offline_access"}
	as.DPoP, as.DPoPChallenge, as.Nonce = true, true, "n-0123"
	url := oauthPeer(t, as)
	dir := filepath.Join(t.TempDir(), "oauth")
	hx := newHarness(t)
	provideOAuth(t, hx.H, OAuthOptions{StoreDir: dir, Poll: 20 * time.Millisecond})
	rec := loginInto(t, dir, url)
	if rec.TokenType != "DPoP" || as.Bound(rec.AccessToken) == "" {
		t.Fatalf("the login is not bound: %q", rec.TokenType)
	}
	hx.mustLoad(yml(httpEntry("web", "web", url, nil)))
	hx.waitState("web", host.Ready)
	hx.wantCall("mcp__web__echo", `{"message":"bound"}`, "echo: bound", false)
	as.Expire()
	hx.wantCall("mcp__web__echo", `{"message":"refreshed"}`, "echo: refreshed", false)
	if as.Count("token:refresh") != 1 || as.Count("dpop:refused") != 0 || as.Count("dpop:wrong-scheme") != 0 {
		t.Fatalf("%d refreshes, %d proofs refused, %d requests under another scheme", as.Count("token:refresh"), as.Count("dpop:refused"), as.Count("dpop:wrong-scheme"))
	}
	if st := hx.status("web"); st.OAuth == nil || !st.OAuth.DPoP || !strings.Contains(strings.Join(st.StatusLines(), "\n"), ", DPoP-bound") {
		t.Fatalf("status: %+v\n%s", st.OAuth, strings.Join(st.StatusLines(), "\n"))
	}
	if out := hx.H.Secrets().Redact("key " + rec.DPoPKey); strings.Contains(out, rec.DPoPKey) {
		t.Error("the DPoP key is not in the secret set")
	}
}

// An enterprise-managed entry (oauth.grant jwt_bearer with an idp): the
// person's ID token in idTokenFile is exchanged at the IdP for an ID-JAG at
// every grant, presented to the authorization server with the client's
// secret; ready with no login, the status names the IdP, and neither the ID
// token nor the ID-JAG is printed.
func TestEnterpriseManagedEntry(t *testing.T) {
	as := oauthtest.NewAS(t)
	as.Machines = map[string]string{"svc": "svc-secret-0123456789"}
	p := oauthtest.NewIdP(t)
	p.Trust(as)
	url := oauthPeer(t, as)
	hx := newHarness(t)
	provideOAuth(t, hx.H, OAuthOptions{StoreDir: filepath.Join(t.TempDir(), "oauth")})
	idToken := p.IDToken("alice@example.com")
	if err := os.WriteFile(filepath.Join(hx.Dir, "id.jwt"), []byte(idToken+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	enterprise := map[string]any{"oauth": map[string]any{"grant": "jwt_bearer", "clientId": "svc", "clientSecret": "svc-secret-0123456789",
		"idp": map[string]any{"issuer": p.URL, "clientId": p.ClientID, "idTokenFile": "id.jwt"}}}
	hx.mustLoad(yml(httpEntry("web", "web", url, enterprise)))
	hx.wantState("web", host.Ready)
	hx.wantCall("mcp__web__echo", `{"message":"hi"}`, "echo: hi", false)
	as.Expire()
	hx.wantCall("mcp__web__echo", `{"message":"again"}`, "echo: again", false)
	if p.Count("exchange") != 2 || as.Count("token:jwt-bearer") != 2 || as.Count("client:basic") != 2 || as.Count("authorize") != 0 {
		t.Fatalf("%d exchanges, %d grants, %d with the secret, %d authorizations", p.Count("exchange"), as.Count("token:jwt-bearer"), as.Count("client:basic"), as.Count("authorize"))
	}
	lines := strings.Join(hx.status("web").StatusLines(), "\n")
	if !strings.Contains(lines, "oauth: an enterprise-managed token of "+as.URL+" (through the IdP "+p.URL+")") {
		t.Fatalf("status:\n%s", lines)
	}
	if out := hx.H.Secrets().Redact("id " + idToken); strings.Contains(out, idToken) {
		t.Error("the ID token is not a secret")
	}
}

// An enterprise entry whose oauth.idp gives no ID token needs the person's
// login at the IdP. Until then it waits (needs-login); one login there,
// made by another process on the same store for one entry, brings up every
// entry through that IdP; a logout at the IdP ends their sessions.
func TestIdPLoginEntry(t *testing.T) {
	as := oauthtest.NewAS(t)
	as.Machines = map[string]string{"svc": "svc-secret-0123456789"}
	p := oauthtest.NewIdP(t)
	p.Trust(as)
	one, two := oauthPeer(t, as), oauthPeer(t, as)
	dir := filepath.Join(t.TempDir(), "oauth")
	hx := newHarness(t)
	provideOAuth(t, hx.H, OAuthOptions{StoreDir: dir, Poll: 20 * time.Millisecond})
	enterprise := map[string]any{"oauth": map[string]any{"grant": "jwt_bearer", "clientId": "svc", "clientSecret": "svc-secret-0123456789",
		"idp": map[string]any{"issuer": p.URL, "clientId": p.ClientID}}}
	hx.mustLoad(yml(httpEntry("one", "one", one, enterprise), httpEntry("two", "two", two, enterprise)))
	hx.wantState("one", host.NeedsLogin, "nobody logged in at the IdP")
	hx.wantState("two", host.NeedsLogin)
	if lines := strings.Join(hx.status("one").StatusLines(), "\n"); !strings.Contains(lines, "oauth: enterprise-managed (through the IdP "+p.URL+"), no token yet; nobody is logged in at the IdP") {
		t.Fatalf("status before the login:\n%s", lines)
	}

	store := &oauth.Store{Dir: dir}
	flow := &oauth.Flow{Server: one, Store: store, HTTP: OAuthHTTPClient(), Settings: oauth.Settings{Grant: oauth.GrantJWTBearer, ClientID: "svc",
		ClientSecret: "svc-secret-0123456789", IdP: &oauth.IdP{Issuer: p.URL, ClientID: p.ClientID}}}
	if _, err := flow.Login(context.Background(), oauth.LoginOptions{Open: oauthtest.Approver(t)}); err != nil {
		t.Fatal(err)
	}
	hx.waitState("one", host.Ready)
	hx.waitState("two", host.Ready)
	hx.wantCall("mcp__one__echo", `{"message":"hi"}`, "echo: hi", false)
	hx.wantCall("mcp__two__echo", `{"message":"hi"}`, "echo: hi", false)
	if p.Count("authorize") != 1 || p.Count("exchange") < 2 {
		t.Fatalf("%d logins at the IdP, %d exchanges", p.Count("authorize"), p.Count("exchange"))
	}
	if lines := strings.Join(hx.status("two").StatusLines(), "\n"); !strings.Contains(lines, "; at the IdP as alice@example.com (refreshable)") {
		t.Fatalf("status after the login:\n%s", lines)
	}

	// `harness logout one`: its token, and the login at the IdP.
	if _, err := store.Delete(one); err != nil {
		t.Fatal(err)
	}
	if had, err := flow.LogoutIdP(context.Background()); !had || err != nil {
		t.Fatalf("the logout at the IdP: %v, %v", had, err)
	}
	if p.Count("revoke") != 1 {
		t.Errorf("%d revocations at the IdP", p.Count("revoke"))
	}
	hx.waitState("one", host.NeedsLogin)
	// Entry two keeps its token until the server refuses it; then it has
	// no login to get another with.
	as.RevokeAll()
	res := hx.Call("mcp__two__echo", `{"message":"x"}`)
	if !res.IsError {
		t.Fatalf("a call after the logout at the IdP = %+v", res)
	}
	hx.waitState("two", host.NeedsLogin)
}
