//go:build unix

package faults

// A minimal MCP server that streams huge messages without holding them, so
// that a test can send the harness hundreds of MiB and measure what the
// harness, not the server, holds. Over stdio it is this test binary run
// again with fakeServerEnv set (see TestMain); over HTTP it is a handler in
// the test process.

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
)

// fakeServerEnv makes the test binary a stdio MCP server; fakeHugeLineEnv
// makes it write a non-JSON line of that many bytes after the handshake.
const (
	fakeServerEnv   = "FAULTS_FAKE_MCP_SERVER"
	fakeHugeLineEnv = "FAULTS_FAKE_HUGE_LINE"
)

// fakeRequest is the part of a request the fake server reads.
type fakeRequest struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Params struct {
		Name      string `json:"name"`
		Arguments struct {
			Bytes int `json:"bytes"`
		} `json:"arguments"`
	} `json:"params"`
}

const fakeTools = `{"tools":[` +
	`{"name":"big","description":"A text of that many bytes.","inputSchema":{"type":"object","properties":{"bytes":{"type":"integer"}}}},` +
	`{"name":"big500","description":"Over HTTP: a 500 whose body has that many bytes.","inputSchema":{"type":"object","properties":{"bytes":{"type":"integer"}}}},` +
	`{"name":"echo","description":"Says ok.","inputSchema":{"type":"object"}}]}`

// fakeAnswer writes the response to req, streaming a big text; it reports
// false for a message that needs no answer.
func fakeAnswer(w io.Writer, req fakeRequest) bool {
	if len(req.ID) == 0 {
		return false // a notification
	}
	result := func(r string) { fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":%s}`, req.ID, r) }
	switch {
	case req.Method == "initialize":
		result(`{"protocolVersion":"2025-11-25","capabilities":{"tools":{}},"serverInfo":{"name":"fake","version":"1"}}`)
	case req.Method == "tools/list":
		result(fakeTools)
	case req.Method == "tools/call" && req.Params.Name == "big":
		fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":{"content":[{"type":"text","text":"`, req.ID)
		streamX(w, req.Params.Arguments.Bytes)
		io.WriteString(w, `"}]}}`)
	case req.Method == "tools/call":
		result(`{"content":[{"type":"text","text":"ok"}]}`)
	case req.Method == "server/discover":
		fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"error":{"code":-32601,"message":"method not found"}}`, req.ID)
	default:
		result(`{}`)
	}
	return true
}

// streamX writes n bytes 'x' in 64 KiB pieces.
func streamX(w io.Writer, n int) {
	chunk := make([]byte, 64<<10)
	for i := range chunk {
		chunk[i] = 'x'
	}
	for n > 0 {
		k := min(n, len(chunk))
		if _, err := w.Write(chunk[:k]); err != nil {
			return
		}
		n -= k
	}
}

// fakeStdioServer serves stdin/stdout until stdin ends.
func fakeStdioServer() int {
	hugeLine, _ := strconv.Atoi(os.Getenv(fakeHugeLineEnv))
	in := bufio.NewReader(os.Stdin)
	out := bufio.NewWriterSize(os.Stdout, 64<<10)
	for {
		line, err := in.ReadBytes('\n')
		if len(line) > 0 {
			var req fakeRequest
			if json.Unmarshal(line, &req) == nil && fakeAnswer(out, req) {
				out.WriteByte('\n')
				if req.Method == "initialize" && hugeLine > 0 {
					streamX(out, hugeLine)
					out.WriteByte('\n')
				}
				out.Flush()
			}
		}
		if err != nil {
			return 0
		}
	}
}

// fakeHTTPServer is the same server over Streamable HTTP (no session, no
// GET stream); big500 answers 500 with a body of that many bytes.
func fakeHTTPServer() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			w.WriteHeader(http.StatusMethodNotAllowed)
			return
		}
		var req fakeRequest
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		if len(req.ID) == 0 {
			w.WriteHeader(http.StatusAccepted)
			return
		}
		if req.Method == "tools/call" && req.Params.Name == "big500" {
			w.Header().Set("Content-Type", "text/plain")
			w.WriteHeader(http.StatusInternalServerError)
			streamX(w, req.Params.Arguments.Bytes)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		fakeAnswer(w, req)
	})
}
