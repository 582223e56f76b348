// Package origin keeps credentials on the origin they were configured for:
// an HTTP client of ours follows a redirect only within one origin (scheme,
// host and port), because the headers it sets — an MCP server's, an
// agent's API key — would go wherever a redirect points.
package origin

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
)

// Of is u's origin, scheme://host:port, in lower case, the scheme's
// default port made explicit.
func Of(u *url.URL) string {
	port := u.Port()
	if port == "" {
		switch strings.ToLower(u.Scheme) {
		case "https":
			port = "443"
		default:
			port = "80"
		}
	}
	return strings.ToLower(u.Scheme) + "://" + strings.ToLower(u.Hostname()) + ":" + port
}

// RedirectError is a redirect refused because it leads to another origin.
type RedirectError struct {
	From, To string
	// What names the credential kept, as a subject: "the configured headers
	// are", "the API key is".
	What string
}

func (e *RedirectError) Error() string {
	return fmt.Sprintf("redirected to another origin, %s; refused: %s never sent to another origin than %s", e.To, e.What, e.From)
}

// SameOnly returns an http.Client CheckRedirect that follows redirects
// within the first request's origin, at most 10, and refuses any other
// with a *RedirectError naming what says.
func SameOnly(what string) func(req *http.Request, via []*http.Request) error {
	return func(req *http.Request, via []*http.Request) error {
		if len(via) >= 10 {
			return errors.New("stopped after 10 redirects")
		}
		if from, to := Of(via[0].URL), Of(req.URL); from != to {
			return &RedirectError{From: from, To: to, What: what}
		}
		return nil
	}
}
