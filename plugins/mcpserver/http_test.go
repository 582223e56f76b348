package mcpserver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"

	"github.com/harness-go/harness/internal/loop"
	"github.com/harness-go/harness/internal/testkit/mcptest"
)

// httpRig serves r's gateway over HTTP on a loopback port.
func (r *rig) serveHTTP(o HTTPOptions, addr string) *HTTPServer {
	r.t.Helper()
	if addr == "" {
		addr = "127.0.0.1:0"
	}
	srv, err := r.gw.ListenHTTP(addr, o)
	if err != nil {
		r.t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- srv.Serve() }()
	r.t.Cleanup(func() {
		if err := srv.Close(context.Background()); err != nil {
			r.t.Errorf("closing the HTTP server: %v", err)
		}
		if err := <-done; err != nil {
			r.t.Errorf("Serve: %v", err)
		}
	})
	return srv
}

const initializeBody = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"0"}}}`

// post sends an initialize with the given Host, Origin and headers.
func post(t *testing.T, url, host, body string, header map[string]string) (int, string) {
	t.Helper()
	return mcptest.Post(t, url, host, strings.NewReader(body), header)
}

func TestHTTPRefusals(t *testing.T) {
	t.Parallel()
	r := newRig(t, Options{})
	open := r.serveHTTP(HTTPOptions{AllowHosts: []string{"gateway.example", "other.example:9000"}}, "")
	locked := r.serveHTTP(HTTPOptions{Token: "s3cret-token-value", MaxBodyBytes: 4096}, "")
	_, port, _ := net.SplitHostPort(open.Addr().String())
	self := r.gw.self

	for _, tc := range []struct {
		name   string
		srv    *HTTPServer
		path   string
		host   string
		header map[string]string
		body   string
		// chunked sends the body with no Content-Length.
		chunked bool
		status  int
		says    string
	}{
		{name: "loopback host and origin", srv: open, status: 200},
		{name: "localhost by name", srv: open, host: "localhost:" + port, header: map[string]string{"Origin": "http://localhost:" + port}, status: 200},
		{name: "an allowed host, any port", srv: open, host: "gateway.example:1234", status: 200},
		{name: "an allowed host and port", srv: open, host: "other.example:9000", status: 200},
		{name: "an allowed host on another port", srv: open, host: "other.example:9001", status: 403, says: `Host "other.example:9001" is not accepted`},
		{name: "DNS rebinding", srv: open, host: "evil.example.com:" + port, header: map[string]string{"Origin": "http://evil.example.com:" + port}, status: 403, says: "DNS rebinding protection"},
		{name: "a web page's origin", srv: open, header: map[string]string{"Origin": "https://evil.example.com"}, status: 403, says: `Origin "https://evil.example.com" is not accepted`},
		{name: "a null origin", srv: open, header: map[string]string{"Origin": "null"}, status: 403, says: `Origin "null"`},
		{name: "another path", srv: open, path: "/other", status: 404, says: "the gateway serves /mcp"},
		{name: "this harness's own request", srv: open, header: map[string]string{loop.Header: self.Next()}, status: 508, says: "harness loop: this request came from this harness itself"},
		{name: "another harness's request", srv: open, header: map[string]string{loop.Header: loop.New("", "").Next()}, status: 200},
		{name: "no token", srv: locked, status: 401, says: "a Bearer token is required"},
		{name: "a wrong token", srv: locked, header: map[string]string{"Authorization": "Bearer s3cret-token-valuX"}, status: 401, says: "the Bearer token is wrong"},
		{name: "another scheme", srv: locked, header: map[string]string{"Authorization": "Basic s3cret-token-value"}, status: 401, says: "a Bearer token is required"},
		{name: "the token", srv: locked, header: map[string]string{"Authorization": "Bearer s3cret-token-value"}, status: 200},
		{name: "the token, scheme in any case", srv: locked, header: map[string]string{"Authorization": "bearer s3cret-token-value"}, status: 200},
		{name: "a body over the bound", srv: locked, header: map[string]string{"Authorization": "Bearer s3cret-token-value"}, body: `{"x":"` + strings.Repeat("a", 5000) + `"}`, status: 413, says: "the most accepted is 4096"},
		{name: "a chunked body over the bound", srv: locked, header: map[string]string{"Authorization": "Bearer s3cret-token-value"}, body: `{"x":"` + strings.Repeat("a", 5000) + `"}`, chunked: true, status: 413, says: "the request body is over 4096 bytes"},
		{name: "a chunked body within the bound", srv: locked, header: map[string]string{"Authorization": "Bearer s3cret-token-value"}, chunked: true, status: 200},
	} {
		t.Run(tc.name, func(t *testing.T) {
			url := "http://" + tc.srv.Addr().String() + Path
			if tc.path != "" {
				url = "http://" + tc.srv.Addr().String() + tc.path
			}
			body := tc.body
			if body == "" {
				body = initializeBody
			}
			var r io.Reader = strings.NewReader(body)
			if tc.chunked {
				r = io.MultiReader(r) // hides the length
			}
			status, got := mcptest.Post(t, url, tc.host, r, tc.header)
			if status >= 400 {
				got = refusal(t, got)
			}
			if status != tc.status || !strings.Contains(got, tc.says) {
				t.Fatalf("HTTP %d %s\nwant %d and %q", status, got, tc.status, tc.says)
			}
		})
	}

	// The token can change while serving.
	locked.Handler().SetToken("another-token-value")
	if status, got := post(t, locked.URL(), "", initializeBody, map[string]string{"Authorization": "Bearer s3cret-token-value"}); status != 401 {
		t.Fatalf("the old token after SetToken: %d %s", status, got)
	}
	if status, got := post(t, locked.URL(), "", initializeBody, map[string]string{"Authorization": "Bearer another-token-value"}); status != 200 {
		t.Fatalf("the new token: %d %s", status, got)
	}
}

// A client that got the 401 tries OAuth: every path it looks at answers
// 404 with an OAuth error whose description says the gateway takes a
// Bearer token (the text the client shows), with or without a token set;
// the 401 says the same; other paths stay the plain 404.
func TestHTTPNoOAuth(t *testing.T) {
	t.Parallel()
	r := newRig(t, Options{})
	locked := r.serveHTTP(HTTPOptions{Token: "s3cret-token-value"}, "")
	open := r.serveHTTP(HTTPOptions{}, "")
	for _, srv := range []*HTTPServer{locked, open} {
		for _, path := range []string{
			"/.well-known/oauth-protected-resource",
			"/.well-known/oauth-protected-resource/mcp",
			"/.well-known/oauth-authorization-server",
			"/.well-known/oauth-authorization-server/mcp",
			"/.well-known/openid-configuration",
			"/.well-known/openid-configuration/mcp",
			"/mcp/.well-known/openid-configuration",
			"/register",
			"/authorize",
			"/token",
		} {
			for _, method := range []string{http.MethodGet, http.MethodPost} {
				req, _ := http.NewRequest(method, "http://"+srv.Addr().String()+path, strings.NewReader(`{"redirect_uris":["http://localhost/cb"]}`))
				req.Header.Set("Content-Type", "application/json")
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				b, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				var body struct {
					Error       string `json:"error"`
					Description string `json:"error_description"`
				}
				if resp.StatusCode != http.StatusNotFound || json.Unmarshal(b, &body) != nil || body.Error != "invalid_request" ||
					!strings.Contains(body.Description, `this gateway takes "Authorization: Bearer <token>"`) || !strings.Contains(body.Description, "it offers no OAuth") {
					t.Errorf("%s %s: HTTP %d %s", method, path, resp.StatusCode, b)
				}
				if ct := resp.Header.Get("Content-Type"); ct != "application/json" {
					t.Errorf("%s %s: Content-Type %q", method, path, ct)
				}
			}
		}
	}
	status, got := post(t, locked.URL(), "", initializeBody, nil)
	if msg := refusal(t, got); status != 401 || !strings.Contains(msg, `a Bearer token is required: this gateway takes "Authorization: Bearer <token>"`) || !strings.Contains(msg, "HARNESS_TOKEN") {
		t.Errorf("the 401: %d %s", status, got)
	}
	if status, got := post(t, "http://"+open.Addr().String()+"/.well-known/other", "", "", nil); status != 404 || !strings.Contains(refusal(t, got), "no MCP endpoint at /.well-known/other") {
		t.Errorf("another well-known path: %d %s", status, got)
	}
}

func TestCheckListen(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		addr, token string
		ok          bool
	}{
		{"127.0.0.1:8750", "", true},
		{"localhost:0", "", true},
		{"[::1]:8750", "", true},
		{"127.0.0.2:8750", "", true},
		{":8750", "", false},
		{"0.0.0.0:8750", "", false},
		{"192.168.1.10:8750", "", false},
		{"gateway.example:8750", "", false},
		{":8750", "a-token-value", true},
		{"192.168.1.10:8750", "a-token-value", true},
		{"8750", "", false},
	} {
		err := CheckListen(tc.addr, tc.token)
		if (err == nil) != tc.ok {
			t.Errorf("CheckListen(%q, token %t) = %v", tc.addr, tc.token != "", err)
		}
		if err != nil && tc.token == "" && strings.Contains(tc.addr, ":") && tc.addr != "8750" && !errors.Is(err, ErrNeedsToken) {
			t.Errorf("CheckListen(%q): %v does not wrap ErrNeedsToken", tc.addr, err)
		}
	}
}

// A non-loopback bind accepts its own IP as Host, and needs a token.
func TestNonLoopbackBind(t *testing.T) {
	t.Parallel()
	r := newRig(t, Options{})
	if _, err := r.gw.ListenHTTP("0.0.0.0:0", HTTPOptions{}); !errors.Is(err, ErrNeedsToken) {
		t.Fatalf("listening on every interface without a token: %v", err)
	}
	ip := firstNonLoopbackIP(t)
	srv := r.serveHTTP(HTTPOptions{Token: "a-token-value"}, net.JoinHostPort(ip, "0"))
	_, port, _ := net.SplitHostPort(srv.Addr().String())
	auth := map[string]string{"Authorization": "Bearer a-token-value"}
	if status, got := post(t, "http://"+srv.Addr().String()+Path, "", initializeBody, auth); status != 200 {
		t.Fatalf("Host = the bound IP: %d %s", status, got)
	}
	status, got := post(t, "http://"+srv.Addr().String()+Path, "box.example:"+port, initializeBody, auth)
	if msg := refusal(t, got); status != 403 || !strings.Contains(msg, ", "+ip+";") || !strings.Contains(msg, "--allow-host") {
		t.Fatalf("an unknown name: %d %s", status, msg)
	}
}

// refusal returns the message of a refusal's JSON-RPC error body.
func refusal(t *testing.T, body string) string {
	t.Helper()
	var m struct {
		JSONRPC string `json:"jsonrpc"`
		Error   struct {
			Message string `json:"message"`
		} `json:"error"`
	}
	if err := json.Unmarshal([]byte(body), &m); err != nil || m.JSONRPC != "2.0" || m.Error.Message == "" {
		t.Fatalf("a refusal must be a JSON-RPC error: %s", body)
	}
	return m.Error.Message
}

func firstNonLoopbackIP(t *testing.T) string {
	t.Helper()
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok && !n.IP.IsLoopback() && n.IP.To4() != nil {
			return n.IP.String()
		}
	}
	t.Skip("no non-loopback IPv4 address on this machine")
	return ""
}

func TestHTTPServerURL(t *testing.T) {
	t.Parallel()
	r := newRig(t, Options{})
	srv := r.serveHTTP(HTTPOptions{}, "")
	if got := srv.URL(); got != fmt.Sprintf("http://%s%s", srv.Addr(), Path) {
		t.Fatalf("URL %q", got)
	}
}
