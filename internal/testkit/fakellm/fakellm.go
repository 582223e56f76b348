// Package fakellm is an OpenAI-compatible chat-completions server for tests.
// No test of the harness talks to a real model API: they talk to this.
//
// Each request is answered by the next [Reply] of the server's script, in
// order (or by a function of the request, [Func]); every request is
// recorded ([Request]): its headers, its raw body, its messages and the raw
// bytes of its tools array, and whether the client went away before the
// answer ended. Replies stream chunks the way DeepSeek does — text,
// reasoning_content, tool calls keyed by index with arguments in fragments,
// a finish reason, a usage chunk, data: [DONE] — and can misbehave on
// purpose: an error status, an error inside a 200 stream, a stall, a
// connection cut mid-stream, bytes written in random pieces, text and
// arguments cut at random byte positions (inside multi-byte characters too,
// whose bytes are then sent raw, as byte-level servers do).
//
// Two checks of DeepSeek's API run before the script: with
// [Server.RequireReasoning], an assistant message with tool calls that lacks
// reasoning_content is refused with a 400; more tools than [Server.MaxTools]
// (default 128) are refused with a 400. A refused request consumes no reply.
//
// The server listens on 127.0.0.1 in the test's process: [Start] for a test
// (closed at cleanup), [New] otherwise. Its [Server.URL] is the base URL an
// agent entry takes (requests go to URL/chat/completions; URL/v1/... works
// too).
package fakellm

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// Server is a scripted chat-completions endpoint.
type Server struct {
	// URL is the base URL: http://127.0.0.1:PORT.
	URL string

	srv *httptest.Server

	mu       sync.Mutex
	script   []Reply
	fn       func(*Request) Reply
	requests []*Request
	// forgotten counts the requests dropped by Forget.
	forgotten int
	changed   chan struct{}
	// requireReasoning and maxTools are DeepSeek's checks (see the package
	// documentation).
	requireReasoning bool
	maxTools         int
}

// New starts a server answering with script, in order. Close it when done.
func New(script ...Reply) *Server {
	s := &Server{script: script, changed: make(chan struct{}), maxTools: 128}
	s.srv = httptest.NewServer(http.HandlerFunc(s.serve))
	s.URL = s.srv.URL
	return s
}

// Start is New, closed when the test ends.
func Start(t testing.TB, script ...Reply) *Server {
	t.Helper()
	s := New(script...)
	t.Cleanup(s.Close)
	return s
}

// Close stops the server, cutting the streams still open.
func (s *Server) Close() {
	s.srv.CloseClientConnections()
	s.srv.Close()
}

// Func answers every request the script does not: fn sees the request and
// returns the reply.
func (s *Server) Func(fn func(*Request) Reply) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.fn = fn
}

// RequireReasoning makes the server refuse, as DeepSeek's thinking mode
// does, a request whose assistant messages with tool calls lack
// reasoning_content.
func (s *Server) RequireReasoning() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.requireReasoning = true
}

// MaxTools sets the most tools a request may carry (default 128).
func (s *Server) MaxTools(n int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.maxTools = n
}

// Requests returns the requests received so far.
func (s *Server) Requests() []*Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]*Request(nil), s.requests...)
}

// Forget drops the requests recorded so far (a long benchmark keeps
// none). Numbering goes on.
func (s *Server) Forget() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.forgotten += len(s.requests)
	s.requests = nil
}

// Wait waits until the n-th request (1-based) has arrived and returns it;
// nil when it did not arrive within d.
func (s *Server) Wait(n int, d time.Duration) *Request {
	deadline := time.NewTimer(d)
	defer deadline.Stop()
	for {
		s.mu.Lock()
		if s.forgotten+len(s.requests) >= n {
			if n <= s.forgotten {
				s.mu.Unlock()
				return nil
			}
			r := s.requests[n-1-s.forgotten]
			s.mu.Unlock()
			return r
		}
		ch := s.changed
		s.mu.Unlock()
		select {
		case <-ch:
		case <-deadline.C:
			return nil
		}
	}
}

// Request is one request the server received.
type Request struct {
	N      int // 1 for the first request
	Path   string
	Header http.Header
	Body   []byte

	Model           string
	Messages        []Message
	Tools           json.RawMessage // the tools array, byte for byte
	ToolNames       []string
	Stream          bool
	IncludeUsage    bool
	Thinking        json.RawMessage
	ReasoningEffort string
	MaxTokens       int
	Temperature     *float64

	done      chan struct{}
	cancelled atomic.Bool
}

// Message is one message of a request.
type Message struct {
	Role       string     `json:"role"`
	Content    string     `json:"content"`
	Reasoning  *string    `json:"reasoning_content"`
	ToolCalls  []ToolCall `json:"tool_calls"`
	ToolCallID string     `json:"tool_call_id"`
}

// ToolCall is one call of an assistant message.
type ToolCall struct {
	ID       string `json:"id"`
	Type     string `json:"type"`
	Function struct {
		Name      string `json:"name"`
		Arguments string `json:"arguments"`
	} `json:"function"`
}

// Done is closed when the server is done answering the request.
func (r *Request) Done() <-chan struct{} { return r.done }

// Cancelled reports whether the client went away before the answer ended
// (meaningful once Done is closed).
func (r *Request) Cancelled() bool { return r.cancelled.Load() }

// Auth returns the Authorization header.
func (r *Request) Auth() string { return r.Header.Get("Authorization") }

// Last returns the last message.
func (r *Request) Last() Message {
	if len(r.Messages) == 0 {
		return Message{}
	}
	return r.Messages[len(r.Messages)-1]
}

func (s *Server) serve(w http.ResponseWriter, hr *http.Request) {
	if hr.Method != http.MethodPost || !strings.HasSuffix(hr.URL.Path, "/chat/completions") {
		http.Error(w, `{"error":{"message":"not found","type":"invalid_request_error"}}`, http.StatusNotFound)
		return
	}
	body, _ := io.ReadAll(hr.Body)
	req := &Request{Path: hr.URL.Path, Header: hr.Header.Clone(), Body: body, done: make(chan struct{})}
	defer close(req.done)
	parseErr := req.parse()

	s.mu.Lock()
	s.requests = append(s.requests, req)
	req.N = s.forgotten + len(s.requests)
	close(s.changed)
	s.changed = make(chan struct{})
	missing := -1 // the message that lacks reasoning_content, when required
	if s.requireReasoning {
		missing = req.missingReasoning()
	}
	var reply Reply
	switch {
	case parseErr != nil:
		reply = Status(http.StatusBadRequest, "invalid request body: "+parseErr.Error())
	case len(req.ToolNames) > s.maxTools:
		reply = Status(http.StatusBadRequest, fmt.Sprintf("Invalid 'tools': array too long. Expected an array with maximum length %d, but got an array with length %d instead.", s.maxTools, len(req.ToolNames)))
	case missing >= 0:
		reply = Status(http.StatusBadRequest, fmt.Sprintf("Missing `reasoning_content` field in the assistant message at message index %d", missing))
	case len(s.script) > 0:
		reply = s.script[0]
		s.script = s.script[1:]
	case s.fn != nil:
		fn := s.fn
		s.mu.Unlock()
		reply = fn(req)
		s.mu.Lock()
	default:
		reply = Status(http.StatusInternalServerError, fmt.Sprintf("fakellm: no reply scripted for request %d", req.N))
	}
	s.mu.Unlock()
	reply.write(w, hr, req)
}

func (r *Request) parse() error {
	var b struct {
		Model         string          `json:"model"`
		Messages      []Message       `json:"messages"`
		Tools         json.RawMessage `json:"tools"`
		Stream        bool            `json:"stream"`
		StreamOptions struct {
			IncludeUsage bool `json:"include_usage"`
		} `json:"stream_options"`
		Thinking        json.RawMessage `json:"thinking"`
		ReasoningEffort string          `json:"reasoning_effort"`
		MaxTokens       int             `json:"max_tokens"`
		Temperature     *float64        `json:"temperature"`
	}
	if err := json.Unmarshal(r.Body, &b); err != nil {
		return err
	}
	r.Model, r.Messages, r.Tools, r.Stream = b.Model, b.Messages, b.Tools, b.Stream
	r.IncludeUsage, r.Thinking, r.ReasoningEffort = b.StreamOptions.IncludeUsage, b.Thinking, b.ReasoningEffort
	r.MaxTokens, r.Temperature = b.MaxTokens, b.Temperature
	if len(b.Tools) > 0 {
		var tools []struct {
			Function struct {
				Name string `json:"name"`
			} `json:"function"`
		}
		if err := json.Unmarshal(b.Tools, &tools); err != nil {
			return fmt.Errorf("tools: %w", err)
		}
		for _, t := range tools {
			r.ToolNames = append(r.ToolNames, t.Function.Name)
		}
	}
	return nil
}

// missingReasoning returns the index of the first assistant message with
// tool calls and no reasoning_content, or -1.
func (r *Request) missingReasoning() int {
	for i, m := range r.Messages {
		if m.Role == "assistant" && len(m.ToolCalls) > 0 && m.Reasoning == nil {
			return i
		}
	}
	return -1
}

// flush writes p and flushes it.
func flush(w http.ResponseWriter, p []byte) error {
	if _, err := w.Write(p); err != nil {
		return err
	}
	if f, ok := w.(http.Flusher); ok {
		f.Flush()
	}
	return nil
}

// quote returns s as a JSON string, escaping only what JSON requires; other
// bytes, an incomplete UTF-8 sequence included, are written as they are.
func quote(s string) string {
	var b bytes.Buffer
	b.WriteByte('"')
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '"' || c == '\\':
			b.WriteByte('\\')
			b.WriteByte(c)
		case c < 0x20:
			fmt.Fprintf(&b, `\u%04x`, c)
		default:
			b.WriteByte(c)
		}
	}
	b.WriteByte('"')
	return b.String()
}
