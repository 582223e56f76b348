package agent

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
)

// maxErrorBody bounds what is read of an error response: the message we
// show is one line, and an endpoint must not make us read without end.
const maxErrorBody = 64 << 10

// boundedErrors cuts the bodies of error responses (status 400 and above) at
// maxErrorBody; a stream's body is not bounded (the idle timeout and the
// decoder's line limit watch it).
type boundedErrors struct{ next http.RoundTripper }

func (t boundedErrors) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := t.next.RoundTrip(req)
	if err == nil && resp.StatusCode >= 400 {
		resp.Body = struct {
			io.Reader
			io.Closer
		}{io.LimitReader(resp.Body, maxErrorBody), resp.Body}
	}
	return resp, err
}

// sameOriginRedirects follows a redirect only to the origin (scheme, host,
// port) of the first request, at most 10 times: the API key must never
// reach another origin.
func sameOriginRedirects(req *http.Request, via []*http.Request) error {
	if len(via) >= 10 {
		return errors.New("stopped after 10 redirects")
	}
	if from, to := origin(via[0].URL), origin(req.URL); from != to {
		return &CrossOriginError{From: from, To: to}
	}
	return nil
}

// CrossOriginError is a redirect refused because it leads to another origin.
type CrossOriginError struct{ From, To string }

func (e *CrossOriginError) Error() string {
	return fmt.Sprintf("the endpoint redirected to another origin, %s; refused: the API key is never sent to another origin than %s", e.To, e.From)
}

// origin is scheme://host:port, with the scheme's default port made explicit.
func origin(u *url.URL) string {
	port := u.Port()
	if port == "" {
		switch u.Scheme {
		case "https":
			port = "443"
		default:
			port = "80"
		}
	}
	return strings.ToLower(u.Scheme) + "://" + strings.ToLower(u.Hostname()) + ":" + port
}
