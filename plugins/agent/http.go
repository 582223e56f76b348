package agent

import (
	"io"
	"net/http"

	"github.com/harness-go/harness/internal/origin"
)

// maxErrorBody bounds what is read of an error response: the message we
// show is one line, and an endpoint must not make us read without end.
const maxErrorBody = 64 << 10

// boundedErrors cuts the bodies of error responses (status 400 and above) at
// maxErrorBody; a stream's body is not bounded here (the idle timeout, the
// decoder's 32 MiB line limit and the bounds of one response, MaxReply…,
// watch it).
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

// CrossOriginError is a redirect refused because it leads to another origin.
type CrossOriginError = origin.RedirectError
