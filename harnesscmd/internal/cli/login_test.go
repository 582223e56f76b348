package cli

import (
	"bufio"
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"encoding/json"
	"io"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/harness-go/harness/internal/testkit/fixture"
	"github.com/harness-go/harness/internal/testkit/oauthtest"
	"github.com/harness-go/harness/internal/testkit/testlog"
)

// The person's flow through the command line, against the test
// authorization server: status says needs-login and names the command;
// login --no-browser --json prints the URL as an event and takes the
// redirect on the loopback; the tools are there; logout deletes and revokes
// the tokens, and the entry needs a login again. No token reaches any
// output; the token file is 0600.
func TestLoginLogoutThroughTheCLI(t *testing.T) {
	as, config, state, lookup := loginSetup(t)
	var all strings.Builder
	run := func(stdin io.Reader, args ...string) (int, string, string) {
		t.Helper()
		var out, errOut strings.Builder
		code := Main(context.Background(), append([]string{"-c", config, "--wait", "10s"}, args...), Env{Stdin: stdin, Stdout: &out, Stderr: &errOut, Lookup: lookup})
		all.WriteString(out.String() + errOut.String())
		return code, out.String(), errOut.String()
	}

	code, out, errOut := run(strings.NewReader(""), "status")
	if code != ExitFailure || !strings.Contains(out, "needs-login") || !strings.Contains(out, "run `harness login web`") {
		t.Fatalf("status before the login: %d\n%s\n%s", code, out, errOut)
	}
	code, _, errOut = run(strings.NewReader(""), "tools")
	if code != ExitFailure || !strings.Contains(errOut, "needs a login: run `harness login web`") {
		t.Fatalf("tools before the login: %d\n%s", code, errOut)
	}
	code, _, errOut = run(strings.NewReader(""), "call", "mcp__web__echo", `{"message":"x"}`)
	if code != ExitFailure || !strings.Contains(errOut, "needs a login: run `harness login web`") {
		t.Fatalf("call before the login: %d\n%s", code, errOut)
	}

	// login --no-browser --json: the URL is an event on stdout; the test
	// is the person who opens it.
	if c, events, errOut := loginJSON(t, config, lookup, &all, nil); c != 0 || len(events) != 2 || events[1]["type"] != "done" || events[1]["issuer"] != as.URL {
		t.Fatalf("login: exit %d, events %v, stderr %s", c, events, errOut)
	}
	files, _ := filepath.Glob(filepath.Join(state, "harness", "oauth", "*.json"))
	if len(files) != 1 {
		t.Fatalf("token files %v", files)
	}
	if fi, err := os.Stat(files[0]); err != nil || (runtime.GOOS != "windows" && fi.Mode().Perm() != 0o600) {
		t.Fatalf("token file %v, %v", fi.Mode(), err)
	}
	token, _ := os.ReadFile(files[0])
	var stored struct{ AccessToken, RefreshToken string }
	json.Unmarshal(token, &stored)

	code, out, errOut = run(strings.NewReader(""), "call", "mcp__web__echo", `{"message":"x"}`, "--log-level", "debug")
	if code != 0 || out != "echo: x\n" {
		t.Fatalf("call after the login: %d %q %s", code, out, errOut)
	}
	code, out, _ = run(strings.NewReader(""), "status", "--json")
	if code != 0 || !strings.Contains(out, `"loggedIn": true`) || !strings.Contains(out, `"state": "ready"`) {
		t.Fatalf("status --json after the login: %d\n%s", code, out)
	}

	code, out, errOut = run(strings.NewReader(""), "logout", "web")
	if code != 0 || !strings.Contains(out, "deleted and revoked") {
		t.Fatalf("logout: %d %s %s", code, out, errOut)
	}
	if as.Count("revoke") == 0 {
		t.Fatal("logout revoked nothing")
	}
	code, out, _ = run(strings.NewReader(""), "status")
	if code != ExitFailure || !strings.Contains(out, "needs-login") {
		t.Fatalf("status after the logout: %d\n%s", code, out)
	}
	code, _, errOut = run(strings.NewReader(""), "login", "nope")
	if code != ExitUsage || !strings.Contains(errOut, `no enabled entry "nope"`) {
		t.Fatalf("login of an unknown entry: %d %s", code, errOut)
	}
	for _, v := range []string{stored.AccessToken, stored.RefreshToken} {
		if v == "" || strings.Contains(all.String(), v) {
			t.Fatalf("a token (%q) is in the output:\n%s", v, all.String())
		}
	}
}

// The console's /login ID: the address is shown (no display here), the
// redirect comes to the loopback, and the entry of the running console
// connects by itself; no paste is read from the console's stdin.
func TestConsoleLogin(t *testing.T) {
	_, config, _, lookup := loginSetup(t)
	r, w := io.Pipe()
	out, errOut := newLines(), newLines()
	code := make(chan int, 1)
	go func() {
		code <- Main(context.Background(), []string{"-c", config, "--wait", "10s"}, Env{Stdin: r, Stdout: out, Stderr: errOut, Lookup: lookup})
		r.Close()
	}()
	errOut.waitFor(t, "needs a login")
	io.WriteString(w, "/login web\n")
	errOut.waitFor(t, "open this address")
	var url string
	for _, l := range strings.Split(errOut.String(), "\n") {
		if u, ok := strings.CutPrefix(l, "  http://127.0.0.1:"); ok {
			url = "http://127.0.0.1:" + u
		}
	}
	if url == "" {
		t.Fatalf("no address in:\n%s", errOut.String())
	}
	if _, err := oauthtest.FollowHeadless(url); err != nil {
		t.Fatal(err)
	}
	out.waitFor(t, "logged in to web")
	errOut.waitFor(t, "web ready")
	io.WriteString(w, "/tools\n")
	out.waitFor(t, "mcp__web__echo")
	w.Close()
	select {
	case c := <-code:
		if c != 0 {
			t.Fatalf("exit %d\n%s", c, errOut.String())
		}
	case <-time.After(20 * time.Second):
		t.Fatal("the console did not exit")
	}
}

// loginSetup serves the fixture behind the test authorization server and
// writes a cordis.yml with one entry, web, pointing at it; lookup gives the
// harness a state directory of the test's own (where the tokens go).
func loginSetup(t *testing.T) (as *oauthtest.AS, config, state string, lookup func(string) (string, bool)) {
	t.Helper()
	as = oauthtest.NewAS(t)
	_, rec := testlog.New(t)
	var srv *httptest.Server
	srv = httptest.NewServer(as.Protect(fixture.HTTPHandler(fixture.Options{Stderr: rec, Only: []string{"echo"}}), func() string { return srv.URL + "/mcp" }))
	t.Cleanup(srv.Close)
	dir := t.TempDir()
	config = filepath.Join(dir, "cordis.yml")
	yml := "- id: web\n  name: mcp-client\n  config: {serverName: web, transport: streamable-http, url: '" + srv.URL + "/mcp'}\n"
	if err := os.WriteFile(config, []byte(yml), 0o644); err != nil {
		t.Fatal(err)
	}
	state = filepath.Join(dir, "state")
	lookup = func(k string) (string, bool) {
		if k == "XDG_STATE_HOME" {
			return state, true
		}
		return "", false
	}
	return as, config, state, lookup
}

// oauthEntryRunner gives loginSetup's entry the oauth mapping oauth (flow
// YAML), with the variable name set to value, and returns a run of the
// command line on it and everything the runs printed.
func oauthEntryRunner(t *testing.T, config string, lookup func(string) (string, bool), oauth, name, value string) (func(args ...string) (int, string, string), *strings.Builder) {
	t.Helper()
	src, err := os.ReadFile(config)
	if err != nil {
		t.Fatal(err)
	}
	src = []byte(strings.Replace(string(src), "}\n", ", oauth: "+oauth+"}\n", 1))
	if err := os.WriteFile(config, src, 0o644); err != nil {
		t.Fatal(err)
	}
	env := func(k string) (string, bool) {
		if k == name {
			return value, true
		}
		return lookup(k)
	}
	all := &strings.Builder{}
	return func(args ...string) (int, string, string) {
		t.Helper()
		var out, errOut strings.Builder
		code := Main(context.Background(), append([]string{"-c", config, "--wait", "10s"}, args...), Env{Stdin: strings.NewReader(""), Stdout: &out, Stderr: &errOut, Lookup: env})
		all.WriteString(out.String() + errOut.String())
		return code, out.String(), errOut.String()
	}, all
}

// A machine client through the command line: tools and call work at once
// (the first 401 gets a token with the client's secret, nobody logs in);
// `harness login` of it is its grant, with no URL and no browser; the
// secret and the token reach no output.
func TestMachineClientThroughTheCLI(t *testing.T) {
	as, config, state, lookup := loginSetup(t)
	const secret = "svc-secret-MACHINE-0123456789"
	as.Machines = map[string]string{"svc": secret}
	run, all := oauthEntryRunner(t, config, lookup, "{grant: client_credentials, clientId: svc, clientSecret: !!js process.env.SVC_SECRET}", "SVC_SECRET", secret)
	if code, out, errOut := run("call", "mcp__web__echo", `{"message":"machine"}`); code != 0 || !strings.Contains(out, "echo: machine") {
		t.Fatalf("call: %d\n%s\n%s", code, out, errOut)
	}
	if as.Count("client:basic") != 1 {
		t.Fatalf("%d client credentials grants", as.Count("client:basic"))
	}
	// The next run reuses the stored token.
	if code, out, errOut := run("tools"); code != 0 || !strings.Contains(out, "mcp__web__echo") || as.Count("client:basic") != 1 {
		t.Fatalf("tools: %d, %d grants\n%s\n%s", code, as.Count("client:basic"), out, errOut)
	}
	code, out, errOut := run("login", "web", "--no-browser")
	if code != 0 || !strings.Contains(out, "logged in to web at "+as.URL) || strings.Contains(errOut, "http") || as.Count("client:basic") != 2 {
		t.Fatalf("login of a machine client: %d, %d grants\n%s\n%s", code, as.Count("client:basic"), out, errOut)
	}
	if as.Count("authorize") != 0 {
		t.Fatal("a machine client went to the authorization endpoint")
	}
	files, _ := filepath.Glob(filepath.Join(state, "harness", "oauth", "*.json"))
	if len(files) != 1 {
		t.Fatalf("token files %v", files)
	}
	var rec struct{ AccessToken string }
	if b, err := os.ReadFile(files[0]); err != nil || json.Unmarshal(b, &rec) != nil || rec.AccessToken == "" {
		t.Fatalf("the token file: %v", err)
	}
	for _, v := range []string{secret, rec.AccessToken} {
		if strings.Contains(all.String(), v) {
			t.Fatalf("%q reached the output:\n%s", v, all.String())
		}
	}
}

// A workload identity entry through the command line: the workload's
// token from the environment is the grant (no client secret, nobody logs
// in), and neither it nor the access token reaches any output.
func TestWorkloadIdentityThroughTheCLI(t *testing.T) {
	as, config, _, lookup := loginSetup(t)
	platform, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	as.Workloads = map[string]crypto.PublicKey{"https://platform.example": platform.Public()}
	workload := oauthtest.WorkloadToken(platform, "https://platform.example", "repo:harness:ref:main", as.URL, time.Now().Add(time.Hour))
	run, all := oauthEntryRunner(t, config, lookup, "{grant: jwt_bearer, assertion: !!js process.env.CI_JOB_JWT}", "CI_JOB_JWT", workload)
	if code, out, errOut := run("call", "mcp__web__echo", `{"message":"workload"}`); code != 0 || !strings.Contains(out, "echo: workload") {
		t.Fatalf("call: %d\n%s\n%s", code, out, errOut)
	}
	if as.Count("token:jwt-bearer") != 1 || as.Count("authorize") != 0 {
		t.Fatalf("%d jwt bearer grants, %d authorizations", as.Count("token:jwt-bearer"), as.Count("authorize"))
	}
	code, out, errOut := run("status")
	if code != 0 || !strings.Contains(out, "oauth: a workload identity token of "+as.URL) {
		t.Fatalf("status: %d\n%s\n%s", code, out, errOut)
	}
	if strings.Contains(all.String(), workload) || strings.Contains(all.String(), strings.Split(workload, ".")[2]) {
		t.Fatalf("the workload's token reached the output:\n%s", all.String())
	}
}

// An enterprise entry that the harness signs in at the IdP, through the
// command line: status says nobody is signed in there; login --json shows
// the IdP's page, not the server's, and names the user when done; the
// tools work; status names the user; logout ends the IdP login too
// (revoked), and the entry needs a login again. No token reaches any
// output.
func TestIdPLoginThroughTheCLI(t *testing.T) {
	as, config, state, lookup := loginSetup(t)
	const secret = "svc-secret-IDP-0123456789"
	as.Machines = map[string]string{"svc": secret}
	idp := oauthtest.NewIdP(t)
	idp.Trust(as)
	oauthYAML := "{grant: jwt_bearer, clientId: svc, clientSecret: !!js process.env.SVC_SECRET, idp: {issuer: '" + idp.URL + "', clientId: " + idp.ClientID + "}}"
	run, all := oauthEntryRunner(t, config, lookup, oauthYAML, "SVC_SECRET", secret)
	code, out, errOut := run("status")
	if code != ExitFailure || !strings.Contains(out, "needs-login") || !strings.Contains(out, "nobody is logged in at the IdP") {
		t.Fatalf("status before the login: %d\n%s\n%s", code, out, errOut)
	}

	env := func(k string) (string, bool) {
		if k == "SVC_SECRET" {
			return secret, true
		}
		return lookup(k)
	}
	page := func(u string) {
		if !strings.HasPrefix(u, idp.URL+"/authorize?") {
			t.Errorf("the login page is %q, not the IdP's", u)
		}
	}
	if c, events, errOut := loginJSON(t, config, env, all, page); c != 0 || len(events) != 2 || events[1]["type"] != "done" || events[1]["issuer"] != as.URL || events[1]["idpUser"] != idp.User {
		t.Fatalf("login: exit %d, events %v, stderr %s", c, events, errOut)
	}
	if as.Count("authorize") != 0 || idp.Count("authorize") != 1 {
		t.Fatalf("%d authorizations at the server's authorization server, %d at the IdP", as.Count("authorize"), idp.Count("authorize"))
	}
	var tokens []string
	files, _ := filepath.Glob(filepath.Join(state, "harness", "oauth", "*.json"))
	for _, f := range files {
		var rec struct{ AccessToken, RefreshToken, IDToken string }
		b, _ := os.ReadFile(f)
		json.Unmarshal(b, &rec)
		tokens = append(tokens, rec.AccessToken, rec.RefreshToken, rec.IDToken)
	}
	if len(files) != 2 {
		t.Fatalf("token files %v, want the server's and the IdP login's", files)
	}

	if code, out, errOut := run("call", "mcp__web__echo", `{"message":"sso"}`); code != 0 || out != "echo: sso\n" {
		t.Fatalf("call after the login: %d %q %s", code, out, errOut)
	}
	if code, out, _ := run("status"); code != 0 || !strings.Contains(out, "; at the IdP as "+idp.User+" (refreshable)") {
		t.Fatalf("status after the login: %d\n%s", code, out)
	}
	code, out, errOut = run("logout", "web")
	if code != 0 || !strings.Contains(out, "logged out at the IdP "+idp.URL) || idp.Count("revoke") != 1 {
		t.Fatalf("logout: %d, %d revocations at the IdP\n%s\n%s", code, idp.Count("revoke"), out, errOut)
	}
	if code, out, _ := run("status"); code != ExitFailure || !strings.Contains(out, "nobody is logged in at the IdP") {
		t.Fatalf("status after the logout: %d\n%s", code, out)
	}
	for _, v := range append(tokens, secret) {
		if v != "" && strings.Contains(all.String(), v) {
			t.Fatalf("a token (%q) is in the output:\n%s", v, all.String())
		}
	}
}

// loginJSON runs `harness login web --no-browser --json` on config, as
// the person who opens each authorize event's URL (seen first by page, when
// it is set) and approves; it returns the exit code, the events, and
// stderr. What it printed is added to all.
func loginJSON(t *testing.T, config string, lookup func(string) (string, bool), all *strings.Builder, page func(url string)) (int, []map[string]any, string) {
	t.Helper()
	pr, pw := io.Pipe()
	done := make(chan int, 1)
	var errBuf strings.Builder
	go func() {
		done <- Main(context.Background(), []string{"-c", config, "login", "web", "--no-browser", "--json"}, Env{Stdin: strings.NewReader(""), Stdout: pw, Stderr: &errBuf, Lookup: lookup})
		pw.Close()
	}()
	sc := bufio.NewScanner(pr)
	var events []map[string]any
	for sc.Scan() {
		all.WriteString(sc.Text() + "\n")
		var ev map[string]any
		if err := json.Unmarshal(sc.Bytes(), &ev); err != nil {
			t.Fatalf("login --json printed %q", sc.Text())
		}
		events = append(events, ev)
		if u, _ := ev["url"].(string); ev["type"] == "authorize" {
			if page != nil {
				page(u)
			}
			if _, err := oauthtest.FollowHeadless(u); err != nil {
				t.Fatal(err)
			}
		}
	}
	return <-done, events, errBuf.String()
}
