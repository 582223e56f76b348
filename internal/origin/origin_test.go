package origin_test

import (
	"errors"
	"net/http"
	"net/url"
	"testing"

	"github.com/harness-go/harness/internal/origin"
)

func TestOf(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"http://Example.com/mcp":      "http://example.com:80",
		"https://example.com/mcp":     "https://example.com:443",
		"https://example.com:443/x":   "https://example.com:443",
		"http://127.0.0.1:8080/mcp":   "http://127.0.0.1:8080",
		"http://[::1]:9/mcp":          "http://::1:9",
		"HTTPS://example.com:8443/mc": "https://example.com:8443",
	} {
		u, err := url.Parse(in)
		if err != nil {
			t.Fatal(err)
		}
		if got := origin.Of(u); got != want {
			t.Errorf("Of(%s) = %s, want %s", in, got, want)
		}
	}
}

func TestSameOnly(t *testing.T) {
	t.Parallel()
	check := origin.SameOnly("the key is")
	req := func(u string) *http.Request {
		r, err := http.NewRequest(http.MethodGet, u, nil)
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	first := []*http.Request{req("https://api.example.com/v1")}
	if err := check(req("https://API.example.com:443/v2"), first); err != nil {
		t.Fatalf("same origin refused: %v", err)
	}
	for _, to := range []string{"http://api.example.com/v1", "https://evil.example/v1", "https://api.example.com:8443/v1"} {
		err := check(req(to), first)
		var re *origin.RedirectError
		if !errors.As(err, &re) || re.From != "https://api.example.com:443" || re.What != "the key is" {
			t.Errorf("redirect to %s: %v", to, err)
		}
	}
	many := make([]*http.Request, 10)
	for i := range many {
		many[i] = first[0]
	}
	if err := check(req("https://api.example.com/v3"), many); err == nil {
		t.Error("an eleventh redirect was followed")
	}
}
