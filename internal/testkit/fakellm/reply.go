package fakellm

import (
	"fmt"
	"math/rand/v2"
	"net/http"
	"strconv"
	"strings"
)

// Reply is how the server answers one request.
type Reply struct {
	// Status, when not 0 or 200, answers with that status and Body (a JSON
	// error) instead of a stream.
	Status int
	Body   string
	// Header is added to the response (Retry-After, say).
	Header map[string]string

	// Chunks are the stream's events, each the JSON of one data: line.
	Chunks []string
	// Pieces, when not nil, writes the stream's bytes in pieces of random
	// length (1 to 48 bytes), each flushed on its own, cut anywhere: inside
	// a data line, inside the JSON of tool arguments, inside a character.
	Pieces *rand.Rand
	// Stall, after the chunks, keeps the stream open and silent until the
	// client goes away.
	Stall bool
	// Cut, after the chunks, closes the connection without ending the
	// stream: the client sees a reset. With no chunks, no status line is
	// sent either.
	Cut bool
	// Gate, when not nil, is waited for before anything is written.
	Gate <-chan struct{}
}

// Status answers with an HTTP error status and an OpenAI-style error body.
func Status(code int, message string) Reply {
	kind := map[int]string{401: "authentication_error", 429: "rate_limit_error"}[code]
	if kind == "" {
		kind = "invalid_request_error"
	}
	return Reply{Status: code, Body: fmt.Sprintf(`{"error":{"message":%s,"type":%q,"param":null,"code":null}}`, quote(message), kind)}
}

// Stream answers with chunks, then [DONE].
func Stream(chunks ...[]string) Reply {
	var all []string
	for _, c := range chunks {
		all = append(all, c...)
	}
	return Reply{Chunks: all}
}

// Say answers text in one chunk, then stop and a usage chunk.
func Say(text string) Reply {
	return Stream(Text(text), Finish("stop"), Usage(10, 5, 0))
}

// Call answers with tool calls, each in one chunk, then tool_calls and a
// usage chunk.
func Call(calls ...ToolCallSpec) Reply {
	var chunks []string
	for i, c := range calls {
		chunks = append(chunks, CallDelta(i, c.ID, c.Name, c.Arguments))
	}
	return Stream(chunks, Finish("tool_calls"), Usage(10, 5, 0))
}

// ToolCallSpec is one tool call a reply makes.
type ToolCallSpec struct {
	ID, Name, Arguments string
}

// Text is one chunk of answer text (the first one also carries the role).
func Text(s string) []string {
	return []string{`{"choices":[{"index":0,"delta":{"role":"assistant","content":` + quote(s) + `},"finish_reason":null}]}`}
}

// Reasoning is one chunk of reasoning_content.
func Reasoning(s string) []string {
	return []string{`{"choices":[{"index":0,"delta":{"content":null,"reasoning_content":` + quote(s) + `},"finish_reason":null}]}`}
}

// CallDelta is one tool-call delta: id and name are sent when not empty
// (the first delta of a call), arguments is a fragment.
func CallDelta(index int, id, name, arguments string) string {
	var fn []string
	if name != "" {
		fn = append(fn, `"name":`+quote(name))
	}
	fn = append(fn, `"arguments":`+quote(arguments))
	call := `{"index":` + strconv.Itoa(index)
	if id != "" {
		call += `,"id":` + quote(id) + `,"type":"function"`
	}
	call += `,"function":{` + strings.Join(fn, ",") + `}}`
	return `{"choices":[{"index":0,"delta":{"tool_calls":[` + call + `]},"finish_reason":null}]}`
}

// Finish is the chunk that ends the answer with a finish reason.
func Finish(reason string) []string {
	return []string{`{"choices":[{"index":0,"delta":{},"finish_reason":` + quote(reason) + `}]}`}
}

// Usage is the usage chunk (no choices), DeepSeek's cache fields included.
func Usage(prompt, completion, cacheHit int) []string {
	return []string{fmt.Sprintf(`{"choices":[],"usage":{"prompt_tokens":%d,"completion_tokens":%d,"total_tokens":%d,"prompt_cache_hit_tokens":%d,"prompt_cache_miss_tokens":%d}}`,
		prompt, completion, prompt+completion, cacheHit, prompt-cacheHit)}
}

// StreamError is an error inside a 200 stream (`data: {"error": …}`), as
// some servers send even a refused key.
func StreamError(code, message string) []string {
	return []string{fmt.Sprintf(`{"error":{"message":%s,"type":"api_error","code":%s}}`, quote(message), quote(code))}
}

// TextSplit is s as text chunks cut at random byte positions: a multi-byte
// character may be cut, its bytes then sent raw in two chunks.
func TextSplit(rng *rand.Rand, s string) []string {
	var out []string
	for _, piece := range cut(rng, s) {
		out = append(out, Text(piece)...)
	}
	return out
}

// ReasoningSplit is TextSplit for reasoning_content.
func ReasoningSplit(rng *rand.Rand, s string) []string {
	var out []string
	for _, piece := range cut(rng, s) {
		out = append(out, Reasoning(piece)...)
	}
	return out
}

// CallsSplit streams calls made in parallel: each call's arguments cut at
// random byte positions, the deltas of the calls interleaved at random (the
// first delta of a call carries its id and name).
func CallsSplit(rng *rand.Rand, calls ...ToolCallSpec) []string {
	pending := make([][]string, len(calls))
	for i, c := range calls {
		for j, frag := range cut(rng, c.Arguments) {
			id, name := "", ""
			if j == 0 {
				id, name = c.ID, c.Name
			}
			pending[i] = append(pending[i], CallDelta(i, id, name, frag))
		}
	}
	var out []string
	for {
		var open []int
		for i, p := range pending {
			if len(p) > 0 {
				open = append(open, i)
			}
		}
		if len(open) == 0 {
			return out
		}
		i := open[rng.IntN(len(open))]
		out = append(out, pending[i][0])
		pending[i] = pending[i][1:]
	}
}

// cut splits s at random byte positions into 1 to 8 non-empty pieces (one
// empty piece for an empty s).
func cut(rng *rand.Rand, s string) []string {
	if len(s) < 2 {
		return []string{s}
	}
	n := 1 + rng.IntN(min(8, len(s)))
	at := map[int]bool{}
	for len(at) < n-1 {
		at[1+rng.IntN(len(s)-1)] = true
	}
	var out []string
	last := 0
	for i := 1; i < len(s); i++ {
		if at[i] {
			out = append(out, s[last:i])
			last = i
		}
	}
	return append(out, s[last:])
}

// write sends the reply.
func (rp Reply) write(w http.ResponseWriter, hr *http.Request, req *Request) {
	if rp.Gate != nil {
		select {
		case <-rp.Gate:
		case <-hr.Context().Done():
			req.cancelled.Store(true)
			return
		}
	}
	for k, v := range rp.Header {
		w.Header().Set(k, v)
	}
	if rp.Status != 0 && rp.Status != http.StatusOK {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(rp.Status)
		_, _ = w.Write([]byte(rp.Body))
		return
	}
	if rp.Cut && len(rp.Chunks) == 0 {
		hijackClose(w)
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	var b strings.Builder
	for _, c := range rp.Chunks {
		b.WriteString("data: " + c + "\n\n")
	}
	if !rp.Stall && !rp.Cut {
		b.WriteString("data: [DONE]\n\n")
	}
	data := []byte(b.String())
	for len(data) > 0 {
		n := len(data)
		if rp.Pieces != nil {
			n = min(n, 1+rp.Pieces.IntN(48))
		}
		if err := flush(w, data[:n]); err != nil {
			req.cancelled.Store(true)
			return
		}
		data = data[n:]
	}
	switch {
	case rp.Stall:
		<-hr.Context().Done()
		req.cancelled.Store(true)
	case rp.Cut:
		hijackClose(w)
	default:
		// The answer is complete; a client that left meanwhile is seen
		// when the connection closes, not here.
		if hr.Context().Err() != nil {
			req.cancelled.Store(true)
		}
	}
}

// hijackClose closes the connection under the response: the client reads
// a reset (or EOF) instead of an answer's end.
func hijackClose(w http.ResponseWriter) {
	hj, ok := w.(http.Hijacker)
	if !ok {
		panic("fakellm: the response cannot be hijacked")
	}
	conn, buf, err := hj.Hijack()
	if err != nil {
		return
	}
	_ = buf.Flush()
	_ = conn.Close()
}
