package oauth

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"
)

// The metadata an authorization server publishes is refused unless its
// issuer is the one asked for, character for character (RFC 8414 §3.3), it
// names both endpoints, it lists PKCE S256, and every endpoint is https or
// on the loopback (codes and tokens never travel in clear).
func TestServerMetadataCheck(t *testing.T) {
	t.Parallel()
	good := func() ServerMetadata {
		return ServerMetadata{Issuer: "https://as.example", AuthorizationEndpoint: "https://as.example/authorize",
			TokenEndpoint: "https://as.example/token", CodeChallengeMethodsSupported: []string{"S256"}}
	}
	for _, c := range []struct {
		name   string
		edit   func(*ServerMetadata)
		issuer string
		want   string // "" accepted, else a part of the refusal
	}{
		{"as published", func(*ServerMetadata) {}, "https://as.example", ""},
		{"a trailing slash is another issuer", func(*ServerMetadata) {}, "https://as.example/", `its issuer "https://as.example" is not "https://as.example/"`},
		{"another issuer", func(m *ServerMetadata) { m.Issuer = "https://evil.example" }, "https://as.example", "the issuer asked for: refused"},
		{"no token endpoint", func(m *ServerMetadata) { m.TokenEndpoint = "" }, "https://as.example", "no authorization_endpoint or token_endpoint"},
		{"no PKCE listed", func(m *ServerMetadata) { m.CodeChallengeMethodsSupported = nil }, "https://as.example", "does not list PKCE S256"},
		{"plain PKCE only", func(m *ServerMetadata) { m.CodeChallengeMethodsSupported = []string{"plain"} }, "https://as.example", "does not list PKCE S256 in code_challenge_methods_supported (plain)"},
		{"a token endpoint in clear", func(m *ServerMetadata) { m.TokenEndpoint = "http://as.example/token" }, "https://as.example", "http://as.example/token is neither https nor on the loopback"},
		{"a registration endpoint in clear", func(m *ServerMetadata) { m.RegistrationEndpoint = "http://as.example/register" }, "https://as.example", "neither https nor on the loopback"},
		{"the loopback in clear", func(m *ServerMetadata) {
			m.Issuer, m.AuthorizationEndpoint, m.TokenEndpoint = "http://127.0.0.1:9", "http://127.0.0.1:9/a", "http://localhost:9/t"
		}, "http://127.0.0.1:9", ""},
	} {
		m := good()
		c.edit(&m)
		err := m.check(c.issuer)
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%s: refused: %v", c.name, err)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
			t.Errorf("%s: %v, want a refusal saying %q", c.name, err, c.want)
		}
	}
}

func TestHTTPSOrLoopback(t *testing.T) {
	t.Parallel()
	for raw, ok := range map[string]bool{
		"https://as.example/token": true, "http://localhost:8080/t": true, "http://127.0.0.1/t": true, "http://127.1.2.3/t": true,
		"http://[::1]:9/t": true, "http://as.example/t": false, "http://localhost.example/t": false, "ftp://as.example/t": false,
		"http://10.0.0.1/t": false, "://bad": false,
	} {
		if err := httpsOrLoopback(raw); (err == nil) != ok {
			t.Errorf("httpsOrLoopback(%q) = %v, want ok=%v", raw, err, ok)
		}
	}
}

// A client with a secret authenticates with client_secret_basic where it is
// listed or nothing is (RFC 8414's default), else with client_secret_post.
func TestPickAuthMethod(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		supported []string
		want      string
	}{
		{nil, "client_secret_basic"},
		{[]string{"client_secret_post", "client_secret_basic"}, "client_secret_basic"},
		{[]string{"client_secret_post"}, "client_secret_post"},
		{[]string{"none", "client_secret_post"}, "client_secret_post"},
		{[]string{"private_key_jwt"}, "client_secret_basic"},
	} {
		if got := pickAuthMethod(c.supported); got != c.want {
			t.Errorf("pickAuthMethod(%q) = %q, want %q", c.supported, got, c.want)
		}
	}
}

// Where the metadata documents are looked for, in the specification's order.
func TestMetadataURLs(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		server string
		ch     *Challenge
		want   []string
	}{
		{"https://mcp.example/v1/mcp?x=1", nil, []string{"https://mcp.example/.well-known/oauth-protected-resource/v1/mcp", "https://mcp.example/.well-known/oauth-protected-resource"}},
		{"https://mcp.example", &Challenge{ResourceMetadata: "https://meta.example/prm"}, []string{"https://meta.example/prm", "https://mcp.example/.well-known/oauth-protected-resource"}},
	} {
		if got := resourceMetadataURLs(c.server, c.ch); !slices.Equal(got, c.want) {
			t.Errorf("resourceMetadataURLs(%q) = %q, want %q", c.server, got, c.want)
		}
	}
	for issuer, want := range map[string][]string{
		"https://as.example":         {"https://as.example/.well-known/oauth-authorization-server", "https://as.example/.well-known/openid-configuration"},
		"https://as.example/tenant1": {"https://as.example/.well-known/oauth-authorization-server/tenant1", "https://as.example/.well-known/openid-configuration/tenant1", "https://as.example/tenant1/.well-known/openid-configuration"},
	} {
		if got := serverMetadataURLs(issuer); !slices.Equal(got, want) {
			t.Errorf("serverMetadataURLs(%q) = %q, want %q", issuer, got, want)
		}
	}
}

func TestResourceMatches(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		resource, server string
		ok               bool
	}{
		{"https://mcp.example/mcp", "https://mcp.example/mcp", true},
		{"https://mcp.example", "https://mcp.example/mcp", true},
		{"https://mcp.example/", "https://mcp.example/mcp", true},
		{"https://MCP.example/mcp", "https://mcp.example/mcp", true},
		{"https://mcp.example/mcp", "https://mcp.example/mcpx", false},
		{"https://mcp.example/other", "https://mcp.example/mcp", false},
		{"https://evil.example/mcp", "https://mcp.example/mcp", false},
		{"http://mcp.example/mcp", "https://mcp.example/mcp", false},
	} {
		if got := resourceMatches(c.resource, c.server); got != c.ok {
			t.Errorf("resourceMatches(%q, %q) = %v, want %v", c.resource, c.server, got, c.ok)
		}
	}
}

// Discover refuses what would send a login somewhere the server did not
// mean: resource metadata for another server, metadata naming no
// authorization server, an authorization server in clear, an issuer that
// does not match; and says where it looked when nothing is published.
func TestDiscoverRefuses(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name string
		prm  any    // served at the path-inserted well-known URL; nil: 404
		as   any    // served at the issuer's RFC 8414 URL; nil: 404
		want string // a part of the error
	}{
		{"resource metadata of another server", map[string]any{"resource": "https://elsewhere.example/mcp", "authorization_servers": []string{"{base}"}}, nil,
			"is for https://elsewhere.example/mcp, not for this server"},
		{"no authorization server", map[string]any{"resource": "{base}/mcp"}, nil, "names no authorization server"},
		{"an authorization server in clear", map[string]any{"resource": "{base}/mcp", "authorization_servers": []string{"http://as.example"}}, nil,
			"neither https nor on the loopback"},
		{"an issuer that does not match", map[string]any{"resource": "{base}/mcp", "authorization_servers": []string{"{base}"}},
			map[string]any{"issuer": "https://evil.example", "authorization_endpoint": "{base}/a", "token_endpoint": "{base}/t", "code_challenge_methods_supported": []string{"S256"}},
			"is not"},
		{"no metadata published", map[string]any{"resource": "{base}/mcp", "authorization_servers": []string{"{base}"}}, nil, "publishes no metadata (tried "},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			var base string
			serveJSON := func(w http.ResponseWriter, v any) {
				b, _ := json.Marshal(v)
				w.Header().Set("Content-Type", "application/json")
				w.Write([]byte(strings.ReplaceAll(string(b), "{base}", base)))
			}
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				switch {
				case r.URL.Path == "/.well-known/oauth-protected-resource/mcp" && c.prm != nil:
					serveJSON(w, c.prm)
				case r.URL.Path == "/.well-known/oauth-authorization-server" && c.as != nil:
					serveJSON(w, c.as)
				default:
					http.NotFound(w, r)
				}
			}))
			defer srv.Close()
			base = srv.URL
			_, err := Discover(context.Background(), srv.Client(), srv.URL+"/mcp", nil, "")
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("Discover: %v, want an error saying %q", err, c.want)
			}
		})
	}
}

// An ID token from the IdP's token endpoint is refused unless it is from
// the IdP, for the client, with the login's nonce, and not expired; an
// audience may be a list. Its signature is not checked (see idplogin.go).
func TestIDTokenCheck(t *testing.T) {
	t.Parallel()
	idp := &IdP{Issuer: "https://idp.example", ClientID: "harness"}
	now := time.Unix(1_800_000_000, 0)
	jwt := func(claims map[string]any) string {
		b, _ := json.Marshal(claims)
		return "eyJhbGciOiJFUzI1NiJ9." + base64.RawURLEncoding.EncodeToString(b) + ".c2ln"
	}
	good := func() map[string]any {
		return map[string]any{"iss": idp.Issuer, "aud": "harness", "sub": "u1", "nonce": "n-1", "exp": now.Add(time.Hour).Unix()}
	}
	for _, c := range []struct {
		name  string
		edit  func(map[string]any)
		nonce string
		want  string // "" accepted
	}{
		{"as issued", func(map[string]any) {}, "n-1", ""},
		{"a refresh's, without the nonce", func(m map[string]any) { delete(m, "nonce") }, "", ""},
		{"an audience list", func(m map[string]any) { m["aud"] = []string{"other", "harness"} }, "n-1", ""},
		{"another issuer", func(m map[string]any) { m["iss"] = "https://evil.example" }, "n-1", `issuer "https://evil.example" is not the IdP's`},
		{"another client", func(m map[string]any) { m["aud"] = "other" }, "n-1", `is for "other", not the client "harness"`},
		{"another login's nonce", func(m map[string]any) { m["nonce"] = "n-2" }, "n-1", "nonce is not this login's"},
		{"no nonce where one was sent", func(m map[string]any) { delete(m, "nonce") }, "n-1", "nonce is not this login's"},
		{"expired", func(m map[string]any) { m["exp"] = now.Add(-time.Second).Unix() }, "n-1", "has expired"},
		{"no expiry", func(m map[string]any) { delete(m, "exp") }, "n-1", "has expired"},
	} {
		m := good()
		c.edit(m)
		_, err := checkIDToken(jwt(m), idp, c.nonce, now)
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%s: refused: %v", c.name, err)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
			t.Errorf("%s: %v, want a refusal saying %q", c.name, err, c.want)
		}
	}
	for tok, want := range map[string]string{"": "holds no id_token", "a.b": "not a JWT", "a.!!.c": "not base64url", "a." + base64.RawURLEncoding.EncodeToString([]byte("[1]")) + ".c": "not a JSON object"} {
		if _, err := checkIDToken(tok, idp, "", now); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: %v, want %q", tok, err, want)
		}
	}
}
