package mcpclient

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/harness-go/harness/host/secret"
	"github.com/harness-go/harness/internal/oauth"
	"github.com/harness-go/harness/internal/origin"
	"github.com/harness-go/harness/internal/safe"
)

// Bounds of the Streamable HTTP framing.
const (
	// errorPageBytes is how much of an HTTP error page reaches an error text.
	errorPageBytes = 512
	// maxResumes bounds how often one request's event stream is resumed
	// (Last-Event-ID) without an event in between.
	maxResumes = 5
	// defaultRetry is the wait before resuming a stream, or opening the
	// listening stream again, when the server named none (retry:).
	defaultRetry = time.Second
	// maxListenBackoff bounds the wait between attempts at the listening
	// stream that the server answers with an error status.
	maxListenBackoff = 30 * time.Second
	// deleteBound bounds the DELETE that ends a session at Close.
	deleteBound = 2 * time.Second
	// inboxSize is how many messages may wait for the rpc's reader.
	inboxSize = 64
)

// errSessionGone is the error of a request the server answered with 404 for
// our session: it forgot the session (it restarted), and never processed the
// request. The session starts a new one and sends the request once more.
var errSessionGone = errors.New("the server ended the session (HTTP 404)")

// HTTPStatusError is an HTTP error status whose body is not a JSON-RPC
// answer: the first bytes of the page, redacted, then clipped.
type HTTPStatusError struct {
	Method string // the JSON-RPC method of the request, or the HTTP method
	Status int
	Page   string
	// Challenge is the WWW-Authenticate header of a 401 or 403 (escaped).
	Challenge string
}

func (e *HTTPStatusError) Error() string {
	msg := fmt.Sprintf("%s: HTTP %d %s", e.Method, e.Status, http.StatusText(e.Status))
	if e.Challenge != "" {
		msg += " (WWW-Authenticate: " + e.Challenge + ")"
	}
	if p := strings.TrimSpace(e.Page); p != "" {
		msg += ": " + p
	}
	return msg
}

// httpFraming is the framing of a Streamable HTTP server, on net/http: each
// message is a POST; its answer (a JSON body, or an event stream carrying
// the response and whatever the server sends about the request on the way:
// its own requests, progress, log messages) feeds Read. It keeps the
// session id of the handshake era, opens that era's listening stream (GET)
// when the session asks, resumes an event stream the server ends before
// answering (Last-Event-ID, after the server's retry: wait), and tells a
// lost server (refused, reset, a stream cut) from an answer (any HTTP
// status; a 405 on the listening stream means there is none).
//
// Every request carries the configured headers; bodies are bounded
// (MaxMessageBytes, per event on a stream); an error page reaches an error
// text clipped to errorPageBytes, after redaction; a redirect is followed
// only within the URL's origin.
type httpFraming struct {
	url     string
	client  *http.Client
	log     *slog.Logger
	secrets *secret.Set

	life   context.Context // ends at Close: the streams it reads
	cancel context.CancelFunc

	inbox chan *inMsg

	mu        sync.Mutex
	session   string // Mcp-Session-Id, once the server gave one
	version   string // the MCP-Protocol-Version header, once known
	listening bool
	lostErr   error
	lost      chan struct{}
	closeOnce sync.Once
	streams   sync.WaitGroup
}

func newHTTPFraming(cfg *Config, log *slog.Logger, secrets *secret.Set) *httpFraming {
	life, cancel := context.WithCancel(context.Background())
	return &httpFraming{
		url:     cfg.URL,
		client:  httpClient(cfg, secrets),
		log:     log,
		secrets: secrets,
		life:    life,
		cancel:  cancel,
		inbox:   make(chan *inMsg, inboxSize),
		lost:    make(chan struct{}),
	}
}

// setVersion sets the MCP-Protocol-Version header of every later request
// (a message may set its own).
func (f *httpFraming) setVersion(v string) {
	f.mu.Lock()
	f.version = v
	f.mu.Unlock()
}

// sessionID returns the session id the server gave, or "".
func (f *httpFraming) sessionID() string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.session
}

// addStream counts the reader of a stream before it starts, unless the
// connection is lost or closing: Close waits for the readers, and an Add
// may not race that Wait.
func (f *httpFraming) addStream() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.lostErr != nil {
		return false
	}
	f.streams.Add(1)
	return true
}

// fail ends the connection once, with why.
func (f *httpFraming) fail(err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.lostErr == nil {
		var lost *ConnectionLostError
		if !errors.As(err, &lost) {
			lost = &ConnectionLostError{Reason: err.Error()}
		}
		f.lostErr = lost
		close(f.lost)
	}
}

func (f *httpFraming) lostError() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.lostErr
}

// Read returns the next message from any of the server's answers.
func (f *httpFraming) Read() (*inMsg, error) {
	select {
	case m := <-f.inbox:
		return m, nil
	case <-f.lost:
		select {
		case m := <-f.inbox:
			return m, nil
		default:
		}
		return nil, f.lostError()
	}
}

// enqueue hands a message to Read.
func (f *httpFraming) enqueue(m *inMsg) {
	select {
	case f.inbox <- m:
	case <-f.lost:
	}
}

// newRequest builds a request to the endpoint with the session's headers.
func (f *httpFraming) newRequest(ctx context.Context, method string, body []byte) (*http.Request, string, error) {
	var r io.Reader
	if body != nil {
		r = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, f.url, r)
	if err != nil {
		return nil, "", err
	}
	f.mu.Lock()
	session, version := f.session, f.version
	f.mu.Unlock()
	if session != "" {
		req.Header.Set(mcp.HeaderSessionID, session)
	}
	if version != "" {
		req.Header.Set(mcp.HeaderProtocolVersion, version)
	}
	return req, session, nil
}

// Write POSTs one message. The answer is read before Write returns (a JSON
// body) or after, on a goroutine of its own (an event stream). A request
// the network refused is a notSentError, and the connection is lost; so is
// one answered 404 for our session (errSessionGone, the connection stays).
// An error status whose body is not JSON-RPC is an *HTTPStatusError.
func (f *httpFraming) Write(ctx context.Context, m *outMsg) error {
	if err := f.lostError(); err != nil {
		return &notSentError{err}
	}
	req, session, err := f.newRequest(ctx, http.MethodPost, m.data)
	if err != nil {
		return &notSentError{err}
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	for k, vs := range m.header {
		req.Header[k] = vs
	}
	resp, err := f.client.Do(req)
	if err != nil {
		return f.transportError(ctx, "POST", err)
	}
	if m.method == string(mcp.MethodInitialize) {
		if id := resp.Header.Get(mcp.HeaderSessionID); id != "" {
			f.mu.Lock()
			f.session = id
			f.mu.Unlock()
		}
	}
	via := ""
	if m.id != nil {
		via = idKey(m.id)
	}
	label := m.method
	if label == "" {
		label = "POST"
	}
	switch ct := resp.Header.Get("Content-Type"); {
	case resp.StatusCode == http.StatusNotFound && session != "":
		resp.Body.Close()
		f.mu.Lock()
		if f.session == session {
			f.session = ""
			f.listening = false
		}
		f.mu.Unlock()
		return &notSentError{errSessionGone}
	case resp.StatusCode == http.StatusOK && strings.HasPrefix(ct, "text/event-stream"):
		if !f.addStream() {
			resp.Body.Close()
			return f.lostError()
		}
		go func() {
			defer f.streams.Done()
			f.followStream(ctx, resp, m, via)
		}()
		return nil
	case strings.HasPrefix(ct, "application/json"):
		return f.readJSON(resp, m, via, label)
	case resp.StatusCode >= 300:
		defer resp.Body.Close()
		page, _ := io.ReadAll(&clippedBody{ReadCloser: resp.Body, max: errorPageBytes, secrets: f.secrets})
		return &HTTPStatusError{Method: label, Status: resp.StatusCode, Page: string(page), Challenge: challengeOf(resp, f.secrets)}
	default:
		// 202 for a notification or a response; anything else with no
		// JSON-RPC in it answers nothing.
		defer resp.Body.Close()
		n, _ := io.Copy(io.Discard, io.LimitReader(resp.Body, MaxMessageBytes))
		if m.id != nil {
			return fmt.Errorf("%s: the server answered HTTP %d with %d bytes of %q, not JSON-RPC", label, resp.StatusCode, n, ct)
		}
		return nil
	}
}

// transportError is the error of a request that got no HTTP answer. Unless
// the request's own context ended it, the connection is lost: a refused one
// never reached the server (notSent), a reset may have.
func (f *httpFraming) transportError(ctx context.Context, what string, err error) error {
	var redirect *origin.RedirectError
	switch {
	case ctx.Err() != nil:
		return err
	case errors.As(err, &redirect):
		return err // an answer of a kind: the server points elsewhere
	case errors.Is(err, oauth.ErrNoLogin):
		// The server wants a login nobody can make now: the request fails
		// saying so, and the connection ends (the supervisor waits for a
		// login).
		err = unwrapURL(err)
		f.fail(&ConnectionLostError{Reason: err.Error(), Err: err})
		return &notSentError{err}
	}
	lost := &ConnectionLostError{Reason: fmt.Sprintf("%s %s: %v", what, safeURL(f.url), unwrapURL(err))}
	f.fail(lost)
	if refused(err) {
		return &notSentError{lost}
	}
	return lost
}

// refused reports an error of dialing: the request was never written.
func refused(err error) bool {
	var op *net.OpError
	return errors.As(err, &op) && op.Op == "dial"
}

// unwrapURL drops net/http's `Post "url": ` prefix: the caller names both.
func unwrapURL(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err
	}
	return err
}

// readJSON reads a JSON answer: one message, or a batch of them. An error
// status with a JSON-RPC error in it is an answer like any other; its id
// may be null (the server could not read ours): it answers m.
func (f *httpFraming) readJSON(resp *http.Response, m *outMsg, via, label string) error {
	defer resp.Body.Close()
	body, err := io.ReadAll(&boundedBody{ReadCloser: resp.Body, max: MaxMessageBytes})
	if err != nil {
		if errors.Is(err, errTooLarge) && m.id != nil {
			f.enqueue(&inMsg{ID: m.id, tooLarge: true, via: via})
			return nil
		}
		return f.transportError(context.Background(), "reading the answer to "+label, err)
	}
	msgs, ok := decodeBody(body)
	if !ok || len(msgs) == 0 {
		if len(bytes.TrimSpace(body)) == 0 && m.id == nil && resp.StatusCode < 300 {
			return nil // an empty 200 for a notification
		}
		page := f.secrets.Clip(string(body), errorPageBytes)
		if resp.StatusCode >= 300 {
			return &HTTPStatusError{Method: label, Status: resp.StatusCode, Page: page, Challenge: challengeOf(resp, f.secrets)}
		}
		return fmt.Errorf("%s: the server's answer is not JSON-RPC: %s", label, page)
	}
	for _, msg := range msgs {
		if m.id != nil && msg.Method == "" && !msg.hasID() {
			msg.ID = m.id // an error "id": null answers the request it came for
		}
		msg.via = via
		f.enqueue(msg)
	}
	return nil
}

// decodeBody decodes a JSON body: one message or an array of them.
func decodeBody(body []byte) ([]*inMsg, bool) {
	body = bytes.TrimSpace(body)
	if len(body) > 0 && body[0] == '[' {
		var batch []json.RawMessage
		if err := json.Unmarshal(body, &batch); err != nil {
			return nil, false
		}
		out := make([]*inMsg, 0, len(batch))
		for _, raw := range batch {
			m, ok := decode(raw)
			if !ok {
				return nil, false
			}
			out = append(out, m)
		}
		return out, true
	}
	m, ok := decode(body)
	if !ok {
		return nil, false
	}
	return []*inMsg{m}, true
}

// followStream reads the event stream that answers m, resuming it (GET with
// Last-Event-ID, after the server's retry: wait) when the server ends it
// before the response to m came — on the handshake era's protocol only:
// 2026-07-28 dropped resumption. A stream that breaks (reset) is a lost
// connection; one that cannot be resumed fails m.
func (f *httpFraming) followStream(ctx context.Context, resp *http.Response, m *outMsg, via string) {
	st := &sseState{retry: -1}
	for resumes := 0; ; {
		answered, err := f.readEvents(ctx, resp.Body, st, via)
		resp.Body.Close()
		switch {
		case answered || m.id == nil || ctx.Err() != nil:
			return
		case err != nil && !errors.Is(err, io.EOF):
			if errors.Is(err, errTooLarge) {
				f.enqueue(&inMsg{ID: m.id, tooLarge: true, via: via})
				return
			}
			f.fail(&ConnectionLostError{Reason: fmt.Sprintf("the event stream of %s broke: %v", m.method, err)})
			return
		}
		f.mu.Lock()
		modern := mcp.IsModernProtocol(f.version)
		f.mu.Unlock()
		if st.lastID == "" || modern || resumes == maxResumes {
			f.enqueue(&inMsg{ID: m.id, via: via, Error: &wireError{Code: mcp.INTERNAL_ERROR,
				Message: fmt.Sprintf("the server ended the event stream of %s before answering it", m.method)}})
			return
		}
		if st.events > 0 {
			resumes = 0 // progress: the count is of resumes in a row without an event
		}
		resumes++
		st.events = 0
		if !sleepCtx(ctx, st.wait()) {
			return
		}
		req, _, err := f.newRequest(ctx, http.MethodGet, nil)
		if err != nil {
			return
		}
		req.Header.Set("Accept", "text/event-stream")
		req.Header.Set(mcp.HeaderLastEventID, st.lastID)
		if resp, err = f.client.Do(req); err != nil {
			_ = f.transportError(ctx, "GET", err) // the connection is lost: the rpc fails m
			return
		}
		if resp.StatusCode != http.StatusOK || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
			resp.Body.Close()
			f.enqueue(&inMsg{ID: m.id, via: via, Error: &wireError{Code: mcp.INTERNAL_ERROR,
				Message: fmt.Sprintf("the server ended the event stream of %s before answering it, and refused to resume it (HTTP %d)", m.method, resp.StatusCode)}})
			return
		}
	}
}

// sseState is what a reader of event streams keeps across streams.
type sseState struct {
	lastID string
	retry  time.Duration // the server's retry:, or -1
	events int           // messages read on the current stream
}

func (st *sseState) wait() time.Duration {
	if st.retry >= 0 {
		return st.retry
	}
	return defaultRetry
}

// readEvents reads one event stream until it ends, handing each JSON-RPC
// message to Read; answered reports that the response to via came. An
// event over MaxMessageBytes fails the stream (errTooLarge).
func (f *httpFraming) readEvents(ctx context.Context, body io.Reader, st *sseState, via string) (answered bool, err error) {
	rd := newLineReader(body, 64<<10)
	var data []byte
	dispatch := func() {
		defer func() { data = data[:0] }()
		if len(bytes.TrimSpace(data)) == 0 {
			return // a priming event, or a keep-alive
		}
		m, ok := decode(data)
		if !ok {
			f.log.Debug("an event that is not JSON-RPC; ignored", "data", f.secrets.Clip(string(data), 200))
			return
		}
		st.events++
		m.via = via
		if via != "" && m.isResponse() && m.key() == via {
			answered = true
		}
		f.enqueue(m)
	}
	for {
		line, tooLong, rerr := rd.next(MaxMessageBytes, 1)
		if tooLong != nil {
			return answered, errTooLarge
		}
		field := strings.TrimRight(string(line), "\r\n")
		switch {
		case field == "" && len(line) > 0:
			dispatch()
			if answered {
				return true, nil
			}
		case strings.HasPrefix(field, ":"):
			// a comment
		default:
			name, value, _ := strings.Cut(field, ":")
			value = strings.TrimPrefix(value, " ")
			switch name {
			case "data":
				if len(data) > 0 {
					data = append(data, '\n')
				}
				if len(data)+len(value) > MaxMessageBytes {
					return answered, errTooLarge
				}
				data = append(data, value...)
			case "id":
				if !strings.ContainsRune(value, 0) {
					st.lastID = value
				}
			case "retry":
				if ms, err := strconv.Atoi(value); err == nil && ms >= 0 {
					st.retry = time.Duration(ms) * time.Millisecond
				}
			}
		}
		if rerr != nil {
			if len(data) > 0 {
				dispatch() // the last event, without its blank line
			}
			if ctx.Err() != nil {
				return answered, ctx.Err()
			}
			return answered, rerr
		}
	}
}

// listen opens the handshake era's listening stream (GET), on which a
// server sends what belongs to no request (list_changed, and the requests
// of servers that send them there), unless it is open already. The channel
// it returns is closed once the server has answered the first GET (or it
// failed): a caller that waits for it knows the server can reach it before
// it sends a request of its own. The stream is opened again when the server
// ends it (after its retry: wait, never more than twice a second); a 405
// means the server offers none; a 404 means the session is gone (the next
// request starts a new one, and its session listens again); another error
// status is tried again later. A stream that breaks is a lost connection.
func (f *httpFraming) listen() <-chan struct{} {
	answered := make(chan struct{})
	f.mu.Lock()
	if f.listening || f.lostErr != nil {
		f.mu.Unlock()
		close(answered)
		return answered
	}
	f.listening = true
	f.streams.Add(1)
	f.mu.Unlock()
	go func() {
		defer f.streams.Done()
		f.listenLoop(answered)
	}()
	return answered
}

func (f *httpFraming) listenLoop(answered chan struct{}) {
	var once sync.Once
	first := func() { once.Do(func() { close(answered) }) }
	defer first()
	defer func() {
		f.mu.Lock()
		f.listening = false
		f.mu.Unlock()
	}()
	st := &sseState{retry: -1}
	backoff := defaultRetry
	var prev, last time.Time // when the two streams before this one opened
	for {
		if wait := time.Second - time.Since(prev); wait > 0 && !prev.IsZero() {
			if !sleepCtx(f.life, wait) {
				return
			}
		}
		opened := time.Now()
		req, session, err := f.newRequest(f.life, http.MethodGet, nil)
		if err != nil {
			return
		}
		req.Header.Set("Accept", "text/event-stream")
		if st.lastID != "" {
			req.Header.Set(mcp.HeaderLastEventID, st.lastID)
		}
		resp, err := f.client.Do(req)
		if err != nil {
			_ = f.transportError(f.life, "GET", err)
			return
		}
		first()
		ct := resp.Header.Get("Content-Type")
		switch {
		case resp.StatusCode == http.StatusMethodNotAllowed:
			resp.Body.Close()
			f.log.Debug("the server offers no listening stream (HTTP 405)")
			return
		case resp.StatusCode == http.StatusNotFound && session != "":
			resp.Body.Close()
			f.log.Debug("the listening stream met a session the server forgot (HTTP 404)")
			return
		case resp.StatusCode == http.StatusOK && strings.HasPrefix(ct, "text/event-stream"):
			backoff = defaultRetry
			_, err := f.readEvents(f.life, resp.Body, st, "")
			resp.Body.Close()
			if f.life.Err() != nil {
				return
			}
			if err != nil && !errors.Is(err, io.EOF) {
				f.fail(&ConnectionLostError{Reason: fmt.Sprintf("the listening stream broke: %v", err)})
				return
			}
			if !sleepCtx(f.life, max(st.wait()-time.Second, 0)) {
				return
			}
		default:
			resp.Body.Close()
			f.log.Debug("the server refused the listening stream; trying again later", "status", resp.StatusCode, "in", backoff)
			if !sleepCtx(f.life, backoff) {
				return
			}
			backoff = min(2*backoff, maxListenBackoff)
		}
		prev, last = last, opened
	}
}

// sleepCtx waits d or until ctx ends; false means ctx ended.
func sleepCtx(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return ctx.Err() == nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// Close ends the session (a DELETE, for the handshake era's session, with
// the configured headers: a server that requires them would keep the
// session otherwise), then every stream, and waits for their readers.
func (f *httpFraming) Close() error {
	f.closeOnce.Do(func() {
		f.mu.Lock()
		session, lost := f.session, f.lostErr
		f.mu.Unlock()
		if session != "" && lost == nil {
			ctx, cancel := context.WithTimeout(context.Background(), deleteBound)
			if req, _, err := f.newRequest(ctx, http.MethodDelete, nil); err == nil {
				if resp, err := f.client.Do(req); err == nil {
					resp.Body.Close()
				}
			}
			cancel()
		}
		f.fail(&ConnectionLostError{Reason: "closed"})
		f.cancel()
		f.streams.Wait()
		f.client.CloseIdleConnections()
	})
	return nil
}

// challengeOf is the WWW-Authenticate header of a 401 or 403, escaped and
// redacted, clipped.
func challengeOf(resp *http.Response, secrets *secret.Set) string {
	if resp.StatusCode != http.StatusUnauthorized && resp.StatusCode != http.StatusForbidden {
		return ""
	}
	return secrets.Clip(safe.Line(strings.Join(resp.Header.Values("WWW-Authenticate"), ", ")), errorPageBytes)
}

// safeURL is the endpoint without its credentials, for messages.
func safeURL(raw string) string {
	if u, err := url.Parse(raw); err == nil {
		return u.Redacted()
	}
	return raw
}

// httpClient is the client of one Streamable HTTP server: the configured
// headers on every request, and no redirect to another origin — the headers
// carry credentials, and Go's client would forward custom ones (and ours are
// set on every request) to wherever a redirect points.
func httpClient(cfg *Config, secrets *secret.Set) *http.Client {
	rt := http.DefaultTransport.(*http.Transport).Clone() // a pool of its own: a restart never meets a stale one
	var next http.RoundTripper = &headerTransport{next: rt, headers: cfg.Headers}
	if cfg.wrap != nil {
		next = cfg.wrap(next)
	}
	return &http.Client{
		Transport:     next,
		CheckRedirect: origin.SameOnly("the configured headers are"),
	}
}

// CrossOriginError is a redirect refused because it leads to another origin.
type CrossOriginError = origin.RedirectError

// headerTransport sets the configured headers on every request.
type headerTransport struct {
	next    http.RoundTripper
	headers map[string]string
}

func (h *headerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	for k, v := range h.headers {
		r.Header.Set(k, v)
	}
	return h.next.RoundTrip(r)
}

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

// boundedBody fails a read once the body exceeds max bytes.
type boundedBody struct {
	io.ReadCloser
	max int
	n   int
}

func (b *boundedBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	b.n += n
	if b.n > b.max {
		return n, errTooLarge
	}
	return n, err
}
