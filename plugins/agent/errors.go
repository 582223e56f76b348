package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/harness-go/harness/internal/safe"
)

// Errors a turn can end with; the error returned wraps one of them and
// says, in words, which entry and what happened.
var (
	// ErrKeyRefused: the endpoint refused the API key (401 or 403), or
	// asked for one the entry does not have.
	ErrKeyRefused = errors.New("the API key was refused")
	// ErrRefused: the endpoint refused the request (another 4xx).
	ErrRefused = errors.New("the request was refused")
	// ErrUnavailable: 429, 5xx, a reset connection or stream, or
	// insufficient_system_resource, still so after the retries.
	ErrUnavailable = errors.New("the endpoint is unavailable")
	// ErrUnreachable: no connection, no response headers in time, a
	// redirect refused.
	ErrUnreachable = errors.New("the endpoint is unreachable")
	// ErrIdle: a stream fell silent for longer than streamIdleTimeoutMs.
	ErrIdle = errors.New("the stream fell silent")
	// ErrBadStream: the endpoint sent something that is not a chat
	// completion stream.
	ErrBadStream = errors.New("the stream could not be read")
	// ErrTooLarge: one model response carried more than this package's
	// bounds allow ([MaxReplyTextBytes], [MaxReplyCallBytes],
	// [MaxReplyToolCalls]); it is not sent again.
	ErrTooLarge = errors.New("the model's response is too large")
	// ErrConversationTooLarge: the conversation's messages would pass
	// maxConversationBytes; the turn ended before sending them.
	ErrConversationTooLarge = errors.New("the conversation is too large")
	// ErrMaxSteps: the turn made maxSteps model requests without an answer.
	ErrMaxSteps = errors.New("maxSteps reached")
	// ErrTooManyTools: more tools than maxTools would be sent.
	ErrTooManyTools = errors.New("too many tools")
	// ErrCancelled: the caller cancelled the turn.
	ErrCancelled = errors.New("cancelled")
	// ErrStopped: the agent's entry was disposed during the turn.
	ErrStopped = errors.New("the agent's entry was stopped")
)

// Finish reasons the endpoint may end a stream with that the loop acts on
// (tool_calls needs nothing: a step with tool calls runs them whatever the
// reason says).
const (
	// finishNoResource is DeepSeek's: the answer was cut because the
	// inference system ran short; the request may be sent again.
	finishNoResource = "insufficient_system_resource"
)

// errors of one attempt, before classification.
var (
	errIdle       = errors.New("idle")
	errTruncated  = errors.New("the stream ended before the answer was complete")
	errNoResource = errors.New("the answer was cut: insufficient_system_resource")
)

// failure is a classified error: what to tell people, and whether sending
// the request again may help.
type failure struct {
	err   error
	retry bool
	after time.Duration // the endpoint's Retry-After, if any
}

// classify turns the error of one attempt into the error of the turn.
func (a *Agent) classify(ctx context.Context, err error) failure {
	entry := fmt.Sprintf("entry %q", a.id)
	if errors.Is(err, errIdle) {
		return failure{err: fmt.Errorf("%s: %w for %s (streamIdleTimeoutMs)", entry, ErrIdle, a.cfg.idleTimeout())}
	}
	if ctx.Err() != nil {
		if errors.Is(context.Cause(ctx), ErrStopped) {
			return failure{err: fmt.Errorf("%s: %w during the turn (edited, removed or restarted)", entry, ErrStopped)}
		}
		return failure{err: fmt.Errorf("%s: %w", entry, ErrCancelled)}
	}
	if errors.Is(err, ErrTooLarge) {
		return failure{err: fmt.Errorf("%s: %w", entry, err)}
	}
	var apiErr *httpError
	var streamErr *streamError
	var cross *CrossOriginError
	var netErr net.Error
	switch {
	case errors.As(err, &apiErr):
		return a.httpFailure(entry, apiErr)
	case errors.As(err, &streamErr):
		return a.streamFailure(entry, streamErr)
	case errors.Is(err, errNoResource), errors.Is(err, errTruncated):
		return failure{err: fmt.Errorf("%s: %w: %v", entry, ErrUnavailable, err), retry: true}
	case errors.As(err, &cross):
		return failure{err: fmt.Errorf("%s: %w: %v", entry, ErrUnreachable, cross)}
	case errors.Is(err, syscall.ECONNRESET), errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, syscall.EPIPE),
		errors.Is(err, io.EOF):
		return failure{err: fmt.Errorf("%s: %w: the connection was reset", entry, ErrUnavailable), retry: true}
	case errors.Is(err, syscall.ECONNREFUSED):
		return failure{err: fmt.Errorf("%s: %w: %s refused the connection", entry, ErrUnreachable, a.cfg.endpoint())}
	case errors.As(err, &netErr) && netErr.Timeout():
		return failure{err: fmt.Errorf("%s: %w: no response from %s within %s (requestTimeoutMs)", entry, ErrUnreachable, a.cfg.endpoint(), a.cfg.requestTimeout())}
	case errors.As(err, &netErr):
		return failure{err: fmt.Errorf("%s: %w: %s", entry, ErrUnreachable, safe.Line(err.Error()))}
	}
	var syntax *json.SyntaxError
	if errors.As(err, &syntax) {
		return failure{err: fmt.Errorf("%s: %w: %v", entry, ErrBadStream, err)}
	}
	return failure{err: fmt.Errorf("%s: %w: %s", entry, ErrBadStream, safe.Line(err.Error()))}
}

// httpError is a response with an error status (400 or more).
type httpError struct {
	status  int
	message string // the body's error.message, or the body itself
	header  http.Header
}

func (e *httpError) Error() string { return fmt.Sprintf("HTTP %d: %s", e.status, e.message) }

// newHTTPError reads an error response's body: OpenAI's shape,
// {"error": {"message": …}}, or any other text.
func newHTTPError(resp *http.Response, body []byte) *httpError {
	e := &httpError{status: resp.StatusCode, header: resp.Header, message: string(body)}
	var shaped struct {
		Error struct {
			Message string `json:"message"`
		} `json:"error"`
	}
	if json.Unmarshal(body, &shaped) == nil {
		e.message = shaped.Error.Message
	}
	return e
}

// streamError is an error the endpoint sent inside a stream: the data of
// the event that carried it.
type streamError struct{ data []byte }

func (e *streamError) Error() string { return "the endpoint sent an error inside the stream" }

// httpFailure classifies a response with an error status.
func (a *Agent) httpFailure(entry string, e *httpError) failure {
	status := e.status
	detail := fmt.Sprintf("HTTP %d", status)
	if msg := a.clipMessage(e.message); msg != "" {
		detail += ": " + msg
	}
	f := failure{}
	switch {
	case (status == http.StatusUnauthorized || status == http.StatusForbidden) && a.cfg.APIKey == "":
		f.err = fmt.Errorf("%s: %w: %s asks for an API key and %s (%s)", entry, ErrKeyRefused, a.cfg.endpoint(), a.noKey(), detail)
	case status == http.StatusUnauthorized || status == http.StatusForbidden:
		f.err = fmt.Errorf("%s: %w (%s)", entry, ErrKeyRefused, detail)
	case status == http.StatusTooManyRequests || status >= 500:
		f.err = fmt.Errorf("%s: %w (%s)", entry, ErrUnavailable, detail)
		f.retry = true
		f.after = retryAfter(e.header.Get("Retry-After"))
	default:
		f.err = fmt.Errorf("%s: %w (%s)", entry, ErrRefused, detail)
	}
	return f
}

// streamFailure classifies an error the endpoint sent inside a stream
// (`data: {"error": …}`, some servers' way even for what would be a 401).
func (a *Agent) streamFailure(entry string, e *streamError) failure {
	var body struct {
		Error struct {
			Message string `json:"message"`
			Type    string `json:"type"`
			Code    any    `json:"code"`
		} `json:"error"`
	}
	_ = json.Unmarshal(e.data, &body)
	code := strings.ToLower(fmt.Sprint(body.Error.Code))
	kind := strings.ToLower(body.Error.Type)
	detail := a.clipMessage(body.Error.Message)
	if detail == "" {
		detail = a.clipMessage(string(e.data))
	}
	if body.Error.Code != nil && code != "" {
		detail += " (" + safe.Line(code) + ")"
	}
	has := func(words ...string) bool {
		for _, w := range words {
			if strings.Contains(code, w) || strings.Contains(kind, w) {
				return true
			}
		}
		return false
	}
	switch {
	case has("invalid_api_key", "authentication", "unauthorized", "401", "403"):
		return failure{err: fmt.Errorf("%s: %w: %s", entry, ErrKeyRefused, detail)}
	case has("insufficient_system_resource", "rate_limit", "overloaded", "server_error", "429", "500", "502", "503"):
		return failure{err: fmt.Errorf("%s: %w: %s", entry, ErrUnavailable, detail), retry: true}
	}
	return failure{err: fmt.Errorf("%s: %w: the endpoint reported an error: %s", entry, ErrRefused, detail)}
}

// clipMessage makes a message from outside one short, inert line. Secrets
// are redacted before the cut: a key cut in half would no longer match.
func (a *Agent) clipMessage(s string) string {
	return safe.Line(a.secrets.Clip(strings.TrimSpace(s), 300))
}

// retryAfter reads a Retry-After header given in seconds.
func retryAfter(v string) time.Duration {
	n, err := strconv.Atoi(strings.TrimSpace(v))
	if err != nil || n < 0 {
		return 0
	}
	return time.Duration(n) * time.Second
}
