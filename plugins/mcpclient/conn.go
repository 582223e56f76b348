package mcpclient

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/harness-go/harness/host/secret"
	"github.com/harness-go/harness/internal/jsonrpc"
	"github.com/harness-go/harness/internal/proc"
)

// The layers of a connection to an MCP server (docs/rfc/0003-mcp-client.md,
// "Layers"), bottom up:
//
//  1. process.go: a stdio server's process (containment, the close ladder,
//     the exit reason, the stderr tail). Streamable HTTP has none.
//  2. A framing: one JSON-RPC message in, one out, close. framing.go over a
//     process's pipes (lines, bounded, garbage skipped), http.go over
//     Streamable HTTP (a POST per message, JSON or event-stream answers,
//     the session id, the listening stream, resumption).
//  3. rpc.go: one reader, the pending map, and the one place where
//     responses, notifications and the server's own requests are
//     dispatched, for every framing.
//  4. session.go: MCP on top (the handshake of either revision, the
//     per-request metadata, tools/list and tools/call read raw, the answers
//     to the server's requests).

// framing is a message-level connection to a server: Read returns the next
// message (an error ends the connection: the server went away, or Close was
// called), Write sends one, Close ends it. Read is called by one goroutine
// at a time; Write by any number.
type framing interface {
	Read() (*inMsg, error)
	Write(ctx context.Context, m *outMsg) error
	Close() error
}

// inMsg is one JSON-RPC message from the server, decoded at its top level;
// its values stay raw.
type inMsg struct {
	ID     json.RawMessage // absent (nil) for a notification
	Method string
	Params json.RawMessage
	Result json.RawMessage
	Error  *wireError
	// via is the id key of our request on whose HTTP response stream the
	// message came: a server request or notification there belongs to that
	// request. "" over stdio and on the listening stream.
	via string
	// tooLarge marks a message over MaxMessageBytes that was discarded:
	// only ID is known, when it could be read from the start.
	tooLarge bool
	// call is the call of ours in flight that a request or notification of
	// the server's belongs to, set as it is read (rpc.attach): by the time
	// it is handled, the call may have ended.
	call *callInfo
	// parts holds ID, Params and Result when they fit (copyParts): a
	// response read at every call is then one allocation.
	parts [160]byte
	// borrowed: ID, Params and Result did not fit in parts and alias the
	// framing's read buffer (decodeLine), valid until its next read. The
	// rpc owns them (own) before it hands the message to anyone but a
	// started request's responder, which runs before the next read.
	borrowed bool
}

// own copies the parts of a borrowed message out of the read buffer.
func (m *inMsg) own() {
	if !m.borrowed {
		return
	}
	m.borrowed = false
	m.ID, m.Params, m.Result = copyParts(jsonrpc.Message{ID: m.ID, Params: m.Params, Result: m.Result}, m.parts[:0])
}

// wireError is a JSON-RPC error object.
type wireError struct {
	Code    int             `json:"code"`
	Message string          `json:"message"`
	Data    json.RawMessage `json:"data,omitempty"`
}

func (m *inMsg) hasID() bool      { return len(m.ID) > 0 && string(m.ID) != "null" }
func (m *inMsg) isRequest() bool  { return m.Method != "" && m.hasID() }
func (m *inMsg) isResponse() bool { return m.Method == "" && (m.hasID() || m.Error != nil) }
func (m *inMsg) key() string      { return jsonrpc.IDKey(m.ID) }

// outMsg is one JSON-RPC message to the server.
type outMsg struct {
	data []byte // the encoded message, on one line
	// id is the encoded id of a request of ours (nil for a notification or
	// a response): Streamable HTTP answers a request on its own POST.
	id json.RawMessage
	// method is the message's method ("" for a response).
	method string
	// header holds the HTTP headers of this message (Mcp-Method, Mcp-Name,
	// Mcp-Param-*); stdio has none.
	header http.Header
}

// notSentError is the error of a request that never reached the server:
// the connection was already lost, or failed before the request was
// written. Such a request may be sent again on the next connection; one
// that was sent is never sent twice.
type notSentError struct{ err error }

func (e *notSentError) Error() string { return e.err.Error() }
func (e *notSentError) Unwrap() error { return e.err }

// notSent reports whether err is a request that never reached the server.
func notSent(err error) bool {
	var ns *notSentError
	return errors.As(err, &ns)
}

// errTooLarge is the error of a request whose response exceeded
// MaxMessageBytes.
var errTooLarge = fmt.Errorf("the server's response exceeded the %d MiB message limit", MaxMessageBytes>>20)

// decode reads one JSON-RPC message; false means it is not one.
func decode(data []byte) (*inMsg, bool) { return decodeLine(data, false) }

// decodeLine is decode of a line in a read buffer that the next read
// reuses: with borrow, parts larger than the message's own room alias
// data (inMsg.borrowed) instead of being copied — a result of tens of
// kilobytes, read at every call, is copied only for a caller that keeps
// it past the read.
func decodeLine(data []byte, borrow bool) (*inMsg, bool) {
	m, ok := jsonrpc.Scan(data)
	if !ok {
		var slow struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
			Params json.RawMessage `json:"params"`
			Result json.RawMessage `json:"result"`
			Error  json.RawMessage `json:"error"`
		}
		if json.Unmarshal(data, &slow) != nil {
			return nil, false
		}
		m = jsonrpc.Message{ID: slow.ID, Params: slow.Params, Result: slow.Result, Error: slow.Error}
		if slow.Method != "" {
			m.Method, _ = json.Marshal(slow.Method)
		}
	}
	if !validID(m.ID) || !structured(m.Params) {
		return nil, false // JSON-RPC: an id is a string or a number, params are structured
	}
	out := &inMsg{}
	if borrow && ok && len(m.ID)+len(m.Params)+len(m.Result) > len(out.parts) {
		out.ID, out.Params, out.Result, out.borrowed = capped(m.ID), capped(m.Params), capped(m.Result), true
	} else {
		out.ID, out.Params, out.Result = copyParts(m, out.parts[:0])
	}
	if len(m.Method) > 0 && string(m.Method) != "null" {
		if s, ok := jsonrpc.PlainString(m.Method); ok {
			out.Method = s
		} else if json.Unmarshal(m.Method, &out.Method) != nil {
			return nil, false
		}
	}
	if len(m.Error) > 0 && string(m.Error) != "null" {
		var e wireError
		if json.Unmarshal(m.Error, &e) != nil {
			e = wireError{Code: mcp.INTERNAL_ERROR, Message: "the server answered with an error that does not decode"}
		}
		out.Error = &e
	}
	if out.Method == "" && !out.hasID() && out.Error == nil {
		return nil, false // neither a request, a notification nor a response
	}
	return out, true
}

func validID(id json.RawMessage) bool {
	if len(id) == 0 || string(id) == "null" {
		return true
	}
	c := id[0]
	return c == '"' || c == '-' || (c >= '0' && c <= '9')
}

func structured(params json.RawMessage) bool {
	return len(params) == 0 || params[0] == '{' || params[0] == '[' || string(params) == "null"
}

// copyParts copies the id, params and result of m out of the reader's
// buffer into buf when they fit in its capacity, else in one allocation: a
// response is read at every call. Each part's
// capacity ends where it does, so that nothing appended to one writes over
// the next.
func copyParts(m jsonrpc.Message, buf []byte) (id, params, result json.RawMessage) {
	n := len(m.ID) + len(m.Params) + len(m.Result)
	if n == 0 {
		return nil, nil, nil
	}
	if cap(buf) < n {
		buf = make([]byte, 0, n)
	}
	part := func(b []byte) json.RawMessage {
		if len(b) == 0 {
			return nil
		}
		start := len(buf)
		buf = append(buf, b...)
		return buf[start:len(buf):len(buf)]
	}
	return part(m.ID), part(m.Params), part(m.Result)
}

// capped is b with no room to append over what follows it, or nil.
func capped(b []byte) json.RawMessage {
	if len(b) == 0 {
		return nil
	}
	return b[:len(b):len(b)]
}

// dial opens a framing as cfg says: it starts a stdio server, or prepares
// the Streamable HTTP client (nothing is sent before the handshake). dir is
// the directory of cordis.yml; spawn starts stdio servers (contained:
// internal/proc).
func dial(spawn *proc.Spawner, cfg *Config, dir string, log *slog.Logger, secrets *secret.Set) (framing, error) {
	switch cfg.Transport {
	case TransportStdio:
		env := childEnv(os.Environ(), cfg.Env, secrets)
		cwd := cfg.Cwd
		switch {
		case cwd == "":
			cwd, _ = os.Getwd()
		case !filepath.IsAbs(cwd):
			cwd = filepath.Join(dir, cwd)
		}
		// exec reports a missing folder as the command's "no such file".
		if fi, err := os.Stat(cwd); err != nil || !fi.IsDir() {
			if err == nil {
				err = errors.New("not a directory")
			}
			return nil, fmt.Errorf("cwd %s: %w", cwd, err)
		}
		p, err := startProcess(spawn, cfg.Command, cfg.Args, env, cwd, log, secrets)
		if err != nil {
			return nil, err
		}
		return newLineFraming(p, log, secrets), nil
	case TransportHTTP:
		return newHTTPFraming(cfg, log, secrets), nil
	}
	return nil, fmt.Errorf("transport %q is not supported", cfg.Transport)
}
