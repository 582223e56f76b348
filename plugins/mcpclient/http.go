package mcpclient

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/harness-go/harness/host/secret"
	"github.com/harness-go/harness/internal/debuglog"
	"github.com/harness-go/harness/internal/origin"
)

// httpConn is a Streamable HTTP connection: mcp-go's transport, which keeps
// the session id and reads event streams, over an HTTP client of ours that
// tells the connection when the network under it fails. A refused
// connection, a reset, a listening stream cut: the connection is lost, and
// the supervisor makes a new one. An HTTP error status is an answer, not a
// loss; nor is a server that offers no listening stream (405).
type httpConn struct {
	*transport.StreamableHTTP

	mu   sync.Mutex
	lost error
	done chan struct{}
}

// dialHTTP prepares the connection; nothing is sent until the handshake.
func dialHTTP(life context.Context, cfg *Config, log *slog.Logger, secrets *secret.Set) (*httpConn, error) {
	c := &httpConn{done: make(chan struct{})}
	opts := []transport.StreamableHTTPCOption{
		transport.WithHTTPHeaders(cfg.Headers),
		// Our client sets the headers too: mcp-go's Close sends the DELETE
		// that ends a session without the headers above, and a server that
		// requires them answers 401 and keeps the session.
		transport.WithHTTPBasicClient(httpClient(cfg, secrets, c.lose)),
		// mcp-go logs what it retries (a GET stream a server refuses, once
		// a second, for ever) at error level; what matters reaches us as
		// errors. Its records stay available at debug level.
		transport.WithHTTPLogger(slog.New(debuglog.Handler(log.Handler()))),
	}
	if cfg.Protocol != ProtocolModern {
		// Before 2026-07-28, list_changed arrives on the GET stream, and
		// mcp-go offers that stream only through this option (deprecated
		// since the modern protocol dropped the stream; see docs/rfc/0003).
		opts = append(opts, transport.WithContinuousListening())
	}
	tr, err := transport.NewStreamableHTTP(cfg.URL, opts...)
	if err != nil {
		return nil, err
	}
	c.StreamableHTTP = tr
	if err := tr.Start(life); err != nil {
		return nil, err
	}
	return c, nil
}

// SendRequest sends one request. A request that never reached the server
// (the connection was lost already, or refused) is a notSentError.
func (c *httpConn) SendRequest(ctx context.Context, req transport.JSONRPCRequest) (*transport.JSONRPCResponse, error) {
	if err := c.Err(); err != nil {
		return nil, &notSentError{err}
	}
	resp, err := c.StreamableHTTP.SendRequest(ctx, req)
	if err != nil {
		err = sentOnce(err)
	}
	if err != nil && ctx.Err() == nil && refused(err) {
		return nil, &notSentError{err}
	}
	return resp, err
}

// sendFailed is what mcp-go puts before an error of a request on the way,
// twice (its sendHTTP's and its SendRequest's).
const sendFailed = "failed to send request: "

// sentOnce says mcp-go's "failed to send request: " once, keeping the
// error's chain.
func sentOnce(err error) error {
	if msg := err.Error(); strings.HasPrefix(msg, sendFailed+sendFailed) {
		return &retold{msg: msg[len(sendFailed):], err: err}
	}
	return err
}

// retold is an error with a message of ours and the chain of the original.
type retold struct {
	msg string
	err error
}

func (e *retold) Error() string { return e.msg }
func (e *retold) Unwrap() error { return e.err }

// SendNotification sends one notification, unless the connection is lost.
func (c *httpConn) SendNotification(ctx context.Context, n mcp.JSONRPCNotification) error {
	if err := c.Err(); err != nil {
		return err
	}
	return c.StreamableHTTP.SendNotification(ctx, n)
}

// refused reports an error of dialing: the request was never written.
func refused(err error) bool {
	var op *net.OpError
	return errors.As(err, &op) && op.Op == "dial"
}

func (c *httpConn) lose(err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.lost == nil {
		c.lost = &ConnectionLostError{Reason: err.Error()}
		close(c.done)
	}
}

// Done is closed when the connection is lost or closed.
func (c *httpConn) Done() <-chan struct{} { return c.done }

// Err says why the connection ended, or nil.
func (c *httpConn) Err() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.lost
}

// Close ends the session (mcp-go sends the DELETE) and the connection.
func (c *httpConn) Close() error {
	err := c.StreamableHTTP.Close()
	c.lose(errors.New("closed"))
	return err
}

// SetProtocolVersion is mcp-go's: HTTP requests carry the negotiated
// version in a header.
var _ interface{ SetProtocolVersion(string) } = (*httpConn)(nil)

// httpClient is the client of one Streamable HTTP server: the configured
// headers on every request, bounded bodies, error pages clipped (after
// redaction), and no redirect to another origin — the headers carry
// credentials, and Go's client would forward custom ones (and ours are set
// on every request) to wherever a redirect points.
//
// lost, when set, hears of every failure of the network under a request
// (refused, reset, a listening stream cut) that the request's own context
// did not cause.
func httpClient(cfg *Config, secrets *secret.Set, lost func(error)) *http.Client {
	rt := http.DefaultTransport.(*http.Transport).Clone() // a pool of its own: a restart never meets a stale one
	return &http.Client{
		Transport:     &headerTransport{next: rt, headers: cfg.Headers, secrets: secrets, lost: lost},
		CheckRedirect: origin.SameOnly("the configured headers are"),
	}
}

// CrossOriginError is a redirect refused because it leads to another origin.
type CrossOriginError = origin.RedirectError

// headerTransport sets the configured headers on every request.
type headerTransport struct {
	next    *http.Transport
	headers map[string]string
	secrets *secret.Set
	lost    func(error)
}

func (h *headerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	for k, v := range h.headers {
		r.Header.Set(k, v)
	}
	resp, err := h.next.RoundTrip(r)
	if err != nil {
		if r.Context().Err() == nil {
			h.lost(fmt.Errorf("%s %s: %w", r.Method, r.URL.Redacted(), err))
		}
		return resp, err
	}
	sse := strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream")
	if sse && resp.StatusCode == http.StatusOK {
		// An event stream — the GET listening stream, a subscriptions/listen
		// or a call answered as a stream: the server's death shows here first.
		resp.Body = &watchedBody{ReadCloser: resp.Body, ctx: r.Context(), lost: h.lost}
	}
	// mcp-go reads bodies whole and copies error pages into errors: bound
	// them as the stdio transport bounds a line. An event stream is long
	// lived, so there the bound is per line (an SSE field), not per body.
	resp.Body = &boundedBody{ReadCloser: resp.Body, max: MaxMessageBytes, lines: sse}
	if resp.StatusCode >= 300 && !strings.HasPrefix(resp.Header.Get("Content-Type"), "application/json") {
		// An error page ends up in an error text, shown to the model.
		resp.Body = &clippedBody{ReadCloser: resp.Body, max: errorPageBytes, secrets: h.secrets}
	}
	return resp, nil
}

// errorPageBytes is how much of an HTTP error page reaches an error text.
const errorPageBytes = 512

// clippedBody is the first max bytes of a body, redacted before it is
// clipped (a secret cut at the boundary must not leak its prefix), ending
// with "…" when something was cut.
type clippedBody struct {
	io.ReadCloser
	max     int
	secrets *secret.Set
	page    *strings.Reader // nil until the first read
}

func (c *clippedBody) Read(p []byte) (int, error) {
	if c.page == nil {
		// A secret that starts before the clip ends within MaxLen bytes.
		head, err := io.ReadAll(io.LimitReader(c.ReadCloser, int64(c.max+c.secrets.MaxLen()+1)))
		if err != nil && len(head) == 0 {
			return 0, err
		}
		text := c.secrets.Clip(string(head), c.max)
		c.page = strings.NewReader(text)
	}
	return c.page.Read(p)
}

// boundedBody fails a read once the body (or, with lines, one line of it)
// exceeds max bytes.
type boundedBody struct {
	io.ReadCloser
	max   int
	n     int // bytes of the body, or of the current line
	lines bool
}

func (b *boundedBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if !b.lines {
		b.n += n
	} else {
		for chunk := p[:n]; ; {
			i := bytes.IndexByte(chunk, '\n')
			if i < 0 {
				b.n += len(chunk)
				break
			}
			if b.n+i > b.max {
				b.n += i
				break
			}
			b.n, chunk = 0, chunk[i+1:]
		}
	}
	if b.n > b.max {
		return n, errTooLarge
	}
	return n, err
}

// watchedBody reports a read error of an event stream that neither its
// request's context nor its reader caused (the server reset the connection,
// or died). A clean end is no loss: mcp-go opens a listening stream again,
// and a server that is gone then refuses it. mcp-go closes a stream it has
// its answer from while a goroutine still reads it: what that read returns
// is no loss either.
type watchedBody struct {
	io.ReadCloser
	ctx    context.Context
	lost   func(error)
	closed atomic.Bool
}

func (w *watchedBody) Read(p []byte) (int, error) {
	n, err := w.ReadCloser.Read(p)
	if err != nil && err != io.EOF && w.ctx.Err() == nil && !w.closed.Load() {
		w.lost(fmt.Errorf("the event stream broke: %w", err))
	}
	return n, err
}

func (w *watchedBody) Close() error {
	w.closed.Store(true)
	return w.ReadCloser.Close()
}
