package oauth_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/harness-go/harness/host/secret"
	"github.com/harness-go/harness/internal/oauth"
	"github.com/harness-go/harness/internal/testkit/oauthtest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestParseChallenge(t *testing.T) {
	cases := []struct {
		header                 string
		ok                     bool
		meta, scope, errorCode string
		dpop                   bool
	}{
		{`Bearer resource_metadata="https://mcp.example.com/.well-known/oauth-protected-resource", scope="files:read files:write"`, true,
			"https://mcp.example.com/.well-known/oauth-protected-resource", "files:read files:write", "", false},
		{`Basic realm="x", Bearer error="insufficient_scope", scope="admin"`, true, "", "admin", "insufficient_scope", false},
		{`bearer error=invalid_token`, true, "", "", "invalid_token", false},
		{`Bearer`, true, "", "", "", false},
		{`Basic realm="only basic"`, false, "", "", "", false},
		{`Negotiate abc==, Bearer realm="a\"b", scope="s"`, true, "", "s", "", false},
		{``, false, "", "", "", false},
		{`DPoP error="use_dpop_nonce", resource_metadata="https://m.example/prm"`, true, "https://m.example/prm", "", "use_dpop_nonce", true},
		{`DPoP algs="ES256", Bearer resource_metadata="https://m.example/prm", scope="a"`, true, "https://m.example/prm", "a", "", true},
	}
	for _, c := range cases {
		h := http.Header{}
		if c.header != "" {
			h.Set("WWW-Authenticate", c.header)
		}
		ch, ok := oauth.ParseChallenge(h)
		if ok != c.ok {
			t.Errorf("%q: ok %t, want %t", c.header, ok, c.ok)
			continue
		}
		if !ok {
			continue
		}
		if ch.ResourceMetadata != c.meta || strings.Join(ch.Scopes, " ") != c.scope || ch.Error != c.errorCode || ch.DPoP != c.dpop {
			t.Errorf("%q: %+v", c.header, ch)
		}
	}
}

func TestCanonical(t *testing.T) {
	for in, want := range map[string]string{
		"HTTPS://MCP.Example.com:443/mcp/": "https://mcp.example.com/mcp",
		"http://localhost:80/":             "http://localhost",
		"https://a.example/mcp#frag":       "https://a.example/mcp",
		"https://user:pw@a.example/x":      "https://a.example/x",
	} {
		if got := oauth.Canonical(in); got != want {
			t.Errorf("Canonical(%q) = %q, want %q", in, got, want)
		}
	}
}

// newStore is a store in a temporary folder with a secret set.
func newStore(t *testing.T) *oauth.Store {
	return &oauth.Store{Dir: filepath.Join(t.TempDir(), "state", "harness", "oauth"), Secrets: secret.New()}
}

func TestStoreFilesAndCorruption(t *testing.T) {
	st := newStore(t)
	rec := &oauth.Record{Server: "https://mcp.example.com/mcp", Issuer: "https://as.example.com", TokenEndpoint: "https://as.example.com/token",
		AccessToken: "at-SECRETVALUE12345", RefreshToken: "rt-SECRETVALUE67890", Client: oauth.Client{ID: "c", Secret: "cs-SECRETVALUE24680"}}
	if err := st.Save(rec); err != nil {
		t.Fatal(err)
	}
	path := st.Path(rec.Server, rec.Issuer)
	if runtime.GOOS != "windows" {
		for p, want := range map[string]os.FileMode{path: 0o600, st.Dir: 0o700} {
			fi, err := os.Stat(p)
			if err != nil {
				t.Fatal(err)
			}
			if got := fi.Mode().Perm(); got != want {
				t.Errorf("%s: mode %o, want %o", p, got, want)
			}
		}
	}
	// Every secret value read joins the set of the reader.
	reader := &oauth.Store{Dir: st.Dir, Secrets: secret.New()}
	got, err := reader.Load("https://MCP.example.com/mcp/")
	if err != nil || got == nil || got.AccessToken != rec.AccessToken {
		t.Fatalf("Load = %+v, %v", got, err)
	}
	for _, v := range []string{rec.AccessToken, rec.RefreshToken, rec.Client.Secret} {
		if out := reader.Secrets.Redact("x " + v + " y"); strings.Contains(out, v) {
			t.Errorf("%s is not in the reader's secret set: %q", v, out)
		}
	}
	// A corrupt file reads as logged out, with a note naming it.
	if err := os.WriteFile(path, []byte("{not json"), 0o600); err != nil {
		t.Fatal(err)
	}
	got, err = reader.Load(rec.Server)
	var note *oauth.ReadNote
	if got != nil || !errors.As(err, &note) || note.Path != path {
		t.Fatalf("Load of a corrupt file = %+v, %v; want nil and a note", got, err)
	}
	// A folder where the file should be: the same.
	os.Remove(path)
	os.Mkdir(path, 0o700)
	if got, err := reader.Load(rec.Server); got != nil || err == nil {
		t.Fatalf("Load of a folder = %+v, %v", got, err)
	}
}

// protected is an MCP-ish endpoint of as: 200 {"ok":true} with a live token.
func protected(t *testing.T, as *oauthtest.AS) *httptest.Server {
	var srv *httptest.Server
	srv = httptest.NewServer(as.Protect(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{"ok":true}`))
	}), func() string { return srv.URL + "/mcp" }))
	t.Cleanup(srv.Close)
	return srv
}

// login logs in to server with a browser that follows the URL at once.
func login(t *testing.T, f *oauth.Flow) *oauth.Record {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	ch, err := oauth.Probe(ctx, f.HTTP, f.Server)
	if err != nil || ch == nil {
		t.Fatalf("Probe = %+v, %v", ch, err)
	}
	rec, err := f.Login(ctx, oauth.LoginOptions{Challenge: ch, Open: oauthtest.Approver(t)})
	if err != nil {
		t.Fatalf("Login: %v", err)
	}
	return rec
}

func TestLoginRefreshLogout(t *testing.T) {
	as := oauthtest.NewAS(t)
	as.Scopes = []string{"mcp:tools", "offline_access"}
	srv := protected(t, as)
	st := newStore(t)
	f := &oauth.Flow{Server: srv.URL + "/mcp", Store: st, HTTP: &http.Client{Timeout: 10 * time.Second}}
	rec := login(t, f)
	if rec.Issuer != as.URL || rec.Client.Registration != "dynamic" || !rec.LoggedIn() {
		t.Fatalf("record %+v", rec)
	}
	q := as.LastAuthorization()
	if q.Get("resource") != srv.URL+"/mcp" || q.Get("code_challenge_method") != "S256" || q.Get("scope") != "mcp:tools offline_access" {
		t.Errorf("authorization request %v", q)
	}

	// The transport puts the token on; an expired token is refreshed
	// before it is sent; a refused one after the 401.
	tokens := oauth.NewTokens(f)
	c := &http.Client{Transport: &oauth.Transport{Next: http.DefaultTransport, Tokens: tokens}}
	get := func() int {
		resp, err := c.Get(srv.URL + "/mcp")
		if err != nil {
			t.Fatalf("GET: %v", err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if code := get(); code != 200 {
		t.Fatalf("GET with the login: HTTP %d", code)
	}
	as.Expire() // the server no longer takes the token: a 401, a refresh, a retry
	if code := get(); code != 200 || as.Count("token:refresh") != 1 {
		t.Fatalf("GET after expiry: HTTP %d, %d refreshes", code, as.Count("token:refresh"))
	}

	// A refresh token the server no longer takes: a login is needed.
	as.RevokeAll()
	_, err := c.Get(srv.URL + "/mcp")
	if !errors.Is(err, oauth.ErrNoLogin) {
		t.Fatalf("GET after revocation: %v, want ErrNoLogin", err)
	}
	after, _ := st.Load(f.Server)
	if after.LoggedIn() || !strings.Contains(after.LastRefreshError, "invalid_grant") {
		t.Errorf("after invalid_grant the record is %+v", after)
	}

	// Logout revokes what is left and removes the files.
	rec = login(t, f)
	removed, err := st.Delete(f.Server)
	if err != nil || len(removed) != 1 {
		t.Fatalf("Delete = %d, %v", len(removed), err)
	}
	if err := f.Revoke(context.Background(), removed[0]); err != nil {
		t.Fatal(err)
	}
	if got := as.Revoked(); !slices.Contains(got, rec.RefreshToken) || !slices.Contains(got, rec.AccessToken) {
		t.Errorf("revoked %v", got)
	}
	if left, _ := filepath.Glob(filepath.Join(st.Dir, "*")); len(left) != 0 {
		t.Errorf("files left after logout: %v", left)
	}
}

// Two harnesses sharing a store (two Tokens on two Stores of one folder,
// each with goroutines of its own) refresh an expired token once: the
// rotated refresh token is never spent twice.
func TestRefreshSingleFlightAcrossStores(t *testing.T) {
	as := oauthtest.NewAS(t)
	srv := protected(t, as)
	dir := newStore(t).Dir
	first := &oauth.Flow{Server: srv.URL + "/mcp", Store: &oauth.Store{Dir: dir}, HTTP: &http.Client{Timeout: 10 * time.Second}}
	login(t, first)
	// Expire the token in the file: every Token call must refresh.
	rec, _ := first.Store.Load(first.Server)
	rec.Expiry = time.Now().Add(-time.Minute)
	if err := first.Store.Save(rec); err != nil {
		t.Fatal(err)
	}
	var sources []*oauth.Tokens
	for range 2 {
		f := &oauth.Flow{Server: first.Server, Store: &oauth.Store{Dir: dir}, HTTP: first.HTTP}
		sources = append(sources, oauth.NewTokens(f))
	}
	var wg sync.WaitGroup
	got := make([]string, 8)
	errs := make([]error, 8)
	for i := range got {
		wg.Add(1)
		go func() {
			defer wg.Done()
			got[i], errs[i] = sources[i%2].Token(context.Background(), "")
		}()
	}
	wg.Wait()
	for i := range got {
		if errs[i] != nil || got[i] != got[0] || got[i] == rec.AccessToken {
			t.Errorf("token %d: %q, %v (first %q, old %q)", i, got[i], errs[i], got[0], rec.AccessToken)
		}
	}
	if n := as.Count("token:refresh"); n != 1 {
		t.Errorf("%d refreshes, want 1", n)
	}
}

// Without a person, a 401 with an OAuth challenge is a LoginRequiredError
// naming the challenge; a 401 without one is the server's answer.
func TestTransportWithoutLogin(t *testing.T) {
	as := oauthtest.NewAS(t)
	srv := protected(t, as)
	f := &oauth.Flow{Server: srv.URL + "/mcp", Store: newStore(t), HTTP: http.DefaultClient}
	c := &http.Client{Transport: &oauth.Transport{Next: http.DefaultTransport, Tokens: oauth.NewTokens(f)}}
	_, err := c.Get(srv.URL + "/mcp")
	var lr *oauth.LoginRequiredError
	if !errors.As(err, &lr) || !errors.Is(err, oauth.ErrNoLogin) || !strings.Contains(lr.Reason, "resource_metadata") {
		t.Fatalf("GET = %v, want a LoginRequiredError with the challenge", err)
	}
	plain := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "no", http.StatusUnauthorized)
	}))
	defer plain.Close()
	f2 := &oauth.Flow{Server: plain.URL, Store: newStore(t), HTTP: http.DefaultClient}
	c2 := &http.Client{Transport: &oauth.Transport{Next: http.DefaultTransport, Tokens: oauth.NewTokens(f2)}}
	resp, err := c2.Get(plain.URL)
	if err != nil || resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("GET without a Bearer challenge = %v, %v", resp, err)
	}
	resp.Body.Close()
}

// The loopback listener takes one redirect whose state matches, on
// 127.0.0.1 only; a pasted redirect URL works as well.
func TestLoopbackAndPaste(t *testing.T) {
	lb, err := oauth.Listen(0)
	if err != nil {
		t.Fatal(err)
	}
	defer lb.Close()
	lb.Expect("the-state")
	if !strings.HasPrefix(lb.RedirectURI(), "http://127.0.0.1:") {
		t.Fatalf("redirect URI %s", lb.RedirectURI())
	}
	resp, err := http.Get(lb.RedirectURI() + "?state=other&code=x")
	if err != nil || resp.StatusCode != http.StatusBadRequest {
		t.Fatalf("a redirect of another state: %v, %v", resp, err)
	}
	resp.Body.Close()
	resp, err = http.Get(lb.RedirectURI() + "?state=the-state&code=x")
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("the redirect: %v, %v", resp, err)
	}
	resp.Body.Close()
	select {
	case u := <-lb.Redirects():
		if u.Query().Get("code") != "x" {
			t.Errorf("redirect %s", u)
		}
	default:
		t.Fatal("the redirect was not delivered")
	}
	resp, err = http.Get(lb.RedirectURI() + "?state=the-state&code=y")
	if err != nil || resp.StatusCode != http.StatusConflict {
		t.Fatalf("a second redirect: %v, %v", resp, err)
	}
	resp.Body.Close()
}

func TestLoginByPaste(t *testing.T) {
	as := oauthtest.NewAS(t)
	srv := protected(t, as)
	f := &oauth.Flow{Server: srv.URL + "/mcp", Store: newStore(t), HTTP: http.DefaultClient}
	pr, pw := io.Pipe()
	defer pw.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var wg sync.WaitGroup
	defer wg.Wait()
	_, err := f.Login(ctx, oauth.LoginOptions{Paste: pr, Show: func(u string, opened bool, _ error) {
		// The person's browser is elsewhere: the redirect does not reach
		// the loopback; they paste the address it shows.
		wg.Add(1)
		go func() {
			defer wg.Done()
			c := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
			resp, err := c.Get(u)
			if err != nil {
				t.Error(err)
				return
			}
			resp.Body.Close()
			pw.Write([]byte("garbage line\n" + resp.Header.Get("Location") + "\n"))
		}()
	}})
	if err != nil {
		t.Fatal(err)
	}
	if rec, _ := f.Store.Load(f.Server); !rec.LoggedIn() {
		t.Fatal("no login after the paste")
	}
}

// A 403 insufficient_scope with nobody to log in: the request fails as a
// login required, naming the scopes; the login records them, and the next
// login asks for the union of what it had and what the server wants.
func TestStepUpWithoutAPerson(t *testing.T) {
	as := oauthtest.NewAS(t)
	as.Scopes = []string{"read"}
	var srv *httptest.Server
	srv = httptest.NewServer(as.Protect(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("WWW-Authenticate", `Bearer error="insufficient_scope", scope="write"`)
		http.Error(w, "more scopes", http.StatusForbidden)
	}), func() string { return srv.URL + "/mcp" }))
	defer srv.Close()
	f := &oauth.Flow{Server: srv.URL + "/mcp", Store: newStore(t), HTTP: http.DefaultClient}
	login(t, f)
	c := &http.Client{Transport: &oauth.Transport{Next: http.DefaultTransport, Tokens: oauth.NewTokens(f)}}
	_, err := c.Get(srv.URL + "/mcp")
	var lr *oauth.LoginRequiredError
	if !errors.As(err, &lr) || !strings.Contains(lr.Reason, "more scopes (write)") {
		t.Fatalf("GET with too few scopes = %v", err)
	}
	rec, _ := f.Store.Load(f.Server)
	if !slices.Equal(rec.Wanted, []string{"write"}) {
		t.Fatalf("the login wants %v", rec.Wanted)
	}
	login(t, f)
	if got := as.LastAuthorization().Get("scope"); got != "read write" {
		t.Fatalf("the next login asked for %q, want the union", got)
	}
}
