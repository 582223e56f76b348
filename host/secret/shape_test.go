package secret_test

import (
	"testing"

	"github.com/harness-go/harness/host/secret"
)

// What makes a value of env or headers a secret when its name does not:
// its shape. Ordinary words, paths and sentences print.
func TestLooksLikeCredential(t *testing.T) {
	t.Parallel()
	for v, want := range map[string]bool{
		"production":                           false,
		"stubborn":                             false,
		"a sentence of ordinary words":         false,
		"/usr/local/share/service/config.yaml": false,
		"development-environment":              false, // lower case only
		"https://example.com/mcp":              false,
		"ghp_R3alLookingTokenValue0123":        true,
		"sk-live-4f9a8b7c6d5e4f3a":             true,
		"9f86d081884c7d659a2feaa0c55ad015":     true,  // a hex digest: lower and digits
		"AKIAIOSFODNN7EXAMPLE":                 true,  // upper and digits
		"a1B2c3D4e5F6g7H":                      false, // 15 bytes
		"a1B2c3D4e5F6g7H8":                     true,
		"a1B2c3D4 e5F6g7H8":                    false, // white space
		"Bearer abcdefgh":                      false, // a lower-case word after Bearer
		"Bearer abcd1234":                      true,
		"Basic dXNlcjpwYXNzd29yZA==":           true,
		"postgres://app:pw@db/app":             true,
		"postgres://app@db/app":                false,
		"12345678901234567890":                 false, // digits only
	} {
		if got := secret.LooksLikeCredential(v); got != want {
			t.Errorf("LooksLikeCredential(%q) = %v, want %v", v, got, want)
		}
	}
}

func TestCredentialHeader(t *testing.T) {
	t.Parallel()
	for name, want := range map[string]bool{
		"Authorization":       true,
		"authorization":       true,
		"Proxy-Authorization": true,
		"Cookie":              true,
		"X-Api-Key":           true,
		"X-Upstream-Token":    true,
		"X-Client-Secret":     true,
		"X-Auth-User":         true,
		"Api-Key":             true,
		"X-Gh-Pat":            true, // the scrub table, "-" as "_"
		"Accept":              false,
		"X-Request-Source":    false,
		"User-Agent":          false,
		"Content-Type":        false,
		"X-Trace-Id":          false,
	} {
		if got := secret.CredentialHeader(name); got != want {
			t.Errorf("CredentialHeader(%q) = %v, want %v", name, got, want)
		}
	}
}

// A credential is withheld from stdio servers by value, whatever the
// variable's name; the variables the scrub table never scrubs stay; a
// secret that is not a credential (an env value hidden for its shape) is
// not withheld, nor is anything from a nil set but the scrub table.
func TestWithheld(t *testing.T) {
	t.Parallel()
	set := secret.New()
	set.AddCredential("gw-token-0123456", "short")
	set.Add("hidden-value-0123")
	for _, tc := range []struct {
		name, value string
		want        bool
	}{
		{"GW_VALUE", "gw-token-0123456", true},
		{"GW_VALUE", " gw-token-0123456 ", true},
		{"HOME", "gw-token-0123456", false},
		{"PATH", "gw-token-0123456", false},
		{"OTHER", "hidden-value-0123", false},
		{"SHORTY", "short", false}, // too short to be a secret at all
		{"GITHUB_TOKEN", "anything", true},
		{"PLAIN", "plain-value", false},
	} {
		if got := set.Withheld(tc.name, tc.value); got != tc.want {
			t.Errorf("Withheld(%s=%q) = %v, want %v", tc.name, tc.value, got, tc.want)
		}
	}
	var none *secret.Set
	if none.Withheld("GW_VALUE", "gw-token-0123456") || !none.Withheld("API_KEY", "x") {
		t.Error("a nil set withholds by the scrub table only")
	}
	if !set.Contains("gw-token-0123456") || !set.Contains("hidden-value-0123") {
		t.Error("a credential and a secret are both redacted")
	}
}

// Rule 5: a server that prints a secret upper-cased (or in any case) still
// prints it; the text around it keeps its case.
func TestRedactIgnoresASCIICase(t *testing.T) {
	t.Parallel()
	set := secret.New()
	set.Add("ghp_R3alLookingToken", "9f86d081884c7d65", "clé-secrète-0123")
	for in, want := range map[string]string{
		"ERROR: TOKEN GHP_R3ALLOOKINGTOKEN REFUSED": "ERROR: TOKEN <redacted> REFUSED",
		"digest 9F86D081884C7D65 In Hex":            "digest <redacted> In Hex",
		"Bearer%20GHP_R3ALLOOKINGTOKEN":             "Bearer%20<redacted>",
		"CLé-SECRèTE-0123":                          "<redacted>",
		"CLÉ-SECRÈTE-0123":                          "CLÉ-SECRÈTE-0123", // beyond ASCII: as written
		"Nothing Secret Here At All":                "Nothing Secret Here At All",
	} {
		if got := set.Redact(in); got != want {
			t.Errorf("Redact(%q) = %q, want %q", in, got, want)
		}
	}
}
