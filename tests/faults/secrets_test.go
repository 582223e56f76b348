//go:build unix

package faults

// Row 8: values of env and headers — literal or put there by !!js — never
// reach our logs, status or error texts. Here: an HTTP server that answers
// with an error page repeating the credentials it received, while
// connecting and on a call. The error text is ours (the transport's
// wording around the page), so the values must be redacted there as they
// are in a stdio server's stderr.
//
// Elsewhere: TestSecretsNeverPrinted and TestSecretEchoedInArgsIsRedacted
// (tests/e2e) through the binary, stderr and failure reasons;
// TestStdioSecretsNeverShow, TestRedactor, TestChildEnv and
// TestStdioEnvironment (plugins/mcpclient) for the redactor and the scrub
// pattern; TestSyntaxErrors and FuzzParse (host/jsexpr) and
// TestConfigThatDoesNotLoad (tests/e2e) for !!js running no code;
// TestServerTextCannotDriveTerminal (tests/e2e) and
// TestStatusLinesEscapeServerText (plugins/mcpclient) for terminal safety.

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/harness-go/harness/internal/testkit/fixture"
)

// secretValue is a fresh random value with a recognisable prefix; the
// package's sweep checks that no harness output holds it.
func secretValue(t *testing.T, prefix string) string {
	t.Helper()
	return printed.Secret(prefix)
}

// leakyServer is the fixture over HTTP, except that a POST of the given
// JSON-RPC method is answered 500 with a page that repeats the request's
// credentials.
func leakyServer(t *testing.T, method string) string {
	t.Helper()
	next := fixture.HTTPHandler(fixture.Options{Only: []string{"echo"}, Stderr: io.Discard})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost {
			body, _ := io.ReadAll(r.Body)
			r.Body = io.NopCloser(bytes.NewReader(body))
			var m struct{ Method string }
			if json.Unmarshal(body, &m) == nil && m.Method == method {
				http.Error(w, "rejected credentials: Authorization="+r.Header.Get("Authorization")+" X-Api-Key="+r.Header.Get("X-Api-Key"), http.StatusInternalServerError)
				return
			}
		}
		next.ServeHTTP(w, r)
	}))
	t.Cleanup(func() {
		srv.CloseClientConnections()
		srv.Close()
	})
	return srv.URL + fixture.HTTPPath
}

func TestSecretsInHTTPErrorPages(t *testing.T) {
	t.Parallel()
	fromJS := secretValue(t, "js-")
	literal := secretValue(t, "lit-")
	secrets := []string{fromJS, literal}
	entry := func(id, url string) string {
		return "- id: " + id + "\n  name: mcp-client\n  config:\n    serverName: " + id + "\n    transport: streamable-http\n    url: '" + url + "'\n" +
			"    headers:\n      Authorization: !!js '`Bearer ${process.env.FAULTS_HTTP_SECRET}`'\n      X-Api-Key: '" + literal + "'\n"
	}
	dir := t.TempDir()
	writeConfig(t, dir, entry("oncall", leakyServer(t, "tools/call"))+entry("oninit", leakyServer(t, "initialize")))
	env := []string{"FAULTS_HTTP_SECRET=" + fromJS}

	// The setup works: the page reaches the harness (the call fails with
	// the 500, the other entry fails to connect).
	r := oneShot(t, dir, env, "call", "mcp__oncall__echo", `{"message":"x"}`, "--log-level", "debug")
	if r.code != 1 || !strings.Contains(r.stdout, "500") || !strings.Contains(r.stdout, "rejected credentials") {
		t.Fatalf("want the call to fail with the server's 500 page\n%s", r)
	}
	runs := []result{r}
	st := oneShot(t, dir, env, "status", "--json", "--log-level", "debug")
	if e := parseStatus(t, st)["oninit"]; e.State != "failed" || !strings.Contains(e.Error, "rejected credentials") {
		t.Fatalf("want oninit failed with the server's page\n%s", st)
	}
	runs = append(runs, st, oneShot(t, dir, env, "status", "--log-level", "debug"))

	s := start(t, harnessBin, dir, env, "--log-level", "debug")
	s.do(`/call mcp__oncall__echo {"message":"x"}`)
	s.do("/status")
	s.send("/quit\n")
	s.waitExit()
	runs = append(runs, result{args: []string{"run", "--log-level", "debug"}, stdout: s.out.Text(), stderr: s.err.Text()})

	for _, r := range runs {
		noSecrets(t, "stdout of `harness "+strings.Join(r.args, " ")+"`", r.stdout, secrets...)
		noSecrets(t, "stderr of `harness "+strings.Join(r.args, " ")+"`", r.stderr, secrets...)
	}
}
