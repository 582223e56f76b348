package mcpserver

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"unicode/utf8"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/harness-go/harness/internal/jsonrpc"
	"github.com/harness-go/harness/plugins/tools"
)

// The fast path of a tools/call (docs/rfc/0005-gateway.md, "The fast path
// of a call"). mcp-go's HandleMessage decodes a call five times over (the
// envelope, the protocol's _meta, tracing's _meta, the typed request, its
// arguments into a map), and encodes the answer through a map of its
// typed result: most of the gateway's own CPU per call. A call of an
// initialized stdio session that asks for nothing but a served tool with
// arguments — no _meta (so no progress token, no 2026-07-28 request, no
// trace), no task, no requestState — is served here instead: the envelope
// is read once, the registry runs the tool as callHandler would, and the
// answer is written from the result's bytes.
//
// Every request it does not take goes through HandleMessage as before, so
// the rule is: take a request only when mcp-go would read it exactly as
// parseFastCall does, and answer only with the bytes mcp-go's answer would
// have. A result the encoder here does not know how to write that way is
// encoded by mcp-go's types (slowAnswer), after the call. fastcall_test.go
// sends every case through both paths and compares the bytes.

// fastCall is a tools/call the fast path takes.
type fastCall struct {
	id   json.RawMessage // a plain string or an integer of at most 15 digits, as it came
	name string
	args json.RawMessage // an object, or {} when there were none
}

// parseFastCall returns the call line asks for when the fast path may take
// it: a valid JSON object whose keys are exactly jsonrpc ("2.0"), id,
// method ("tools/call") and params, each once; params an object of name (a
// plain string) and, if at all, arguments (an object), each once. Any other
// key — _meta, task, requestState, inputResponses, a key spelled in another
// case that encoding/json would match — sends the request to mcp-go.
func parseFastCall(line []byte) (fastCall, bool) {
	m, ok := jsonrpc.ScanValid(line)
	if !ok {
		return fastCall{}, false
	}
	return parseFastMessage(m)
}

// parseFastMessage is parseFastCall of a line jsonrpc.ScanValid read (and
// so validated): the reader of stdio reads each line once.
func parseFastMessage(m jsonrpc.Message) (fastCall, bool) {
	if !m.Exact || string(m.JSONRPC) != `"2.0"` || string(m.Method) != `"tools/call"` || m.Params == nil ||
		m.Result != nil || m.Error != nil || m.ID == nil || !fastID(m.ID) {
		return fastCall{}, false
	}
	c := fastCall{id: m.ID}
	if !parseFastParams(m.Params, &c) {
		return fastCall{}, false
	}
	return c, true
}

// parseFastParams reads the params of a fast call into c.
func parseFastParams(params []byte, c *fastCall) bool {
	var named bool
	ok := jsonrpc.EachKey(params, func(key, v []byte) bool {
		switch string(key) {
		case "name":
			name, plain := jsonrpc.PlainString(v)
			if named || !plain {
				return false
			}
			c.name, named = name, true
		case "arguments":
			if c.args != nil || v[0] != '{' {
				return false
			}
			c.args = v
		default:
			return false
		}
		return true
	})
	if !ok || !named {
		return false
	}
	if c.args == nil {
		c.args = json.RawMessage("{}")
	}
	return true
}

// fastID reports whether a request id is written back by mcp-go as it
// came: a string without escapes or characters encoding/json escapes, or
// an integer a float64 holds exactly (mcp-go decodes ids into any).
func fastID(v []byte) bool {
	if s, ok := jsonrpc.PlainString(v); ok {
		return htmlSafe(s)
	}
	d := v
	if len(d) > 0 && d[0] == '-' {
		d = d[1:]
	}
	if len(d) == 0 || len(d) > 15 || (d[0] == '0' && len(v) > 1) {
		return false // "-0" and leading zeros are left to mcp-go
	}
	for _, b := range d {
		if b < '0' || b > '9' {
			return false
		}
	}
	return true
}

// htmlSafe reports whether encoding/json writes s as it is: printable
// ASCII but for the characters it escapes.
func htmlSafe(s string) bool {
	for i := 0; i < len(s); i++ {
		if b := s[i]; b < 0x20 || b >= utf8.RuneSelf || b == '"' || b == '\\' || b == '<' || b == '>' || b == '&' {
			return false
		}
	}
	return true
}

// serveFast runs a fast call as callHandler and g.execute do for a client
// of the session era, and returns its answer, a line.
func (g *Gateway) serveFast(ctx context.Context, c fastCall) (answer []byte) {
	g.fastCalls.Add(1)
	if o := outcomeOf(ctx); o != nil {
		// What the call reports after its answer has nowhere to go.
		defer o.answered.Store(true)
	}
	defer func() {
		// As mcp-go's WithRecovery answers a handler's panic.
		if p := recover(); p != nil {
			msg := fmt.Sprintf("panic recovered in %s tool handler: %v", c.name, p)
			answer = mustEncode(mcp.JSONRPCError{JSONRPC: mcp.JSONRPC_VERSION, ID: mcp.NewRequestId(idValue(c.id)), Error: mcp.NewJSONRPCErrorDetails(mcp.INTERNAL_ERROR, msg, nil)})
		}
	}()
	f := &relay{g: g, req: ctx, caps: sessionCapabilities(ctx)}
	res := g.reg.Execute(tools.WithRawResult(tools.WithFront(ctx, f)), c.name, c.args)
	return appendAnswer(make([]byte, 0, len(res.Raw)+len(res.Text)+64), c.id, res)
}

// startFast starts a fast call as serveFast runs it, when its tool can run
// it without anyone waiting (tools.Registry.Start: an MCP server's tool
// over stdio) on stdio request r: r.answer gets the result, on whatever
// goroutine has it — for a server's tool, the one that read its response —
// and writes the answer (appendAnswer). No goroutine waits for the call,
// and the one that read the request reads on: the path of a call is that
// of a relay's bytes, parsed. It reports false, and r.answer is not
// called, when the call was not started. The result's burst
// (tools.Result.Burst) says whether the answer may be held.
func (g *Gateway) startFast(r *request, c fastCall) bool {
	// The request carries its call's values itself (request, rule 2).
	r.front = relay{g: g, req: r, caps: sessionCapabilities(r)}
	r.call = tools.CallValues{Front: &r.front, RawResult: true}
	started := g.reg.Start(r, c.name, c.args, r.answer)
	if started {
		g.fastCalls.Add(1)
	}
	return started
}

// idValue is a fast id as mcp-go holds it: a string, or a float64.
func idValue(id json.RawMessage) any {
	if s, ok := jsonrpc.PlainString(id); ok {
		return s
	}
	n, _ := strconv.ParseFloat(string(id), 64)
	return n
}

// appendAnswer appends the answer to a fast call whose tool returned res:
// the bytes mcp-go writes for toResult(res), newline included.
func appendAnswer(dst []byte, id json.RawMessage, res tools.Result) []byte {
	start := len(dst)
	dst = append(dst, `{"jsonrpc":"2.0","id":`...)
	dst = append(dst, id...)
	dst = append(dst, `,"result":`...)
	var ok bool
	if len(res.Raw) > 0 {
		dst, ok = appendRawResult(dst, res.Raw)
	} else {
		dst, ok = appendTextResult(dst, res.Text, res.IsError), true
	}
	if !ok {
		return append(dst[:start], slowAnswer(id, res)...)
	}
	return append(dst, "}\n"...)
}

// slowAnswer is the answer as mcp-go's types encode it.
func slowAnswer(id json.RawMessage, res tools.Result) []byte {
	return mustEncode(mcp.NewJSONRPCResultResponse(mcp.NewRequestId(idValue(id)), toResult(res)))
}

// appendTextResult appends a result of one text block, as mcp-go encodes
// it (encoding/json's map order; HTML characters escaped).
func appendTextResult(dst []byte, text string, isError bool) []byte {
	dst = append(dst, `{"content":[{"type":"text","text":`...)
	if htmlSafe(text) {
		dst = append(dst, '"')
		dst = append(dst, text...)
		dst = append(dst, '"')
	} else {
		b, _ := json.Marshal(text) // a string always encodes
		dst = append(dst, b...)
	}
	dst = append(dst, "}]"...)
	if isError {
		dst = append(dst, `,"isError":true`...)
	}
	return append(dst, '}')
}

// appendRawResult appends a server's result as rawResult and mcp-go's
// encoding of it would write it — content (blocks of the types MCP
// defines, compacted), isError when true, structuredContent when not null,
// in that order — when it holds nothing else; ok is false for anything
// rawResult would change or mcp-go would re-encode (_meta, a block of
// another type, a key in another case, a repeated key, an isError that is
// not a boolean), and for invalid JSON.
func appendRawResult(dst []byte, raw json.RawMessage) (_ []byte, ok bool) {
	var content, isError, structured []byte
	ok = jsonrpc.EachKeyValid(raw, func(key, v []byte) bool {
		switch string(key) {
		case "content":
			if content != nil || v[0] != '[' {
				return false
			}
			content = v
		case "isError":
			if isError != nil || (string(v) != "true" && string(v) != "false") {
				return false
			}
			isError = v
		case "structuredContent":
			if structured != nil {
				return false
			}
			structured = v
		default:
			return false
		}
		return true
	})
	if !ok || content == nil {
		return dst, false
	}
	start := len(dst)
	dst = append(dst, `{"content":[`...)
	// Each block's keys are walked on the way through the array (one pass
	// over the block, not one to find its end and another for its type).
	var typed bool
	first := true
	ok = jsonrpc.EachObject(content, func(key, v []byte) bool {
		ok, isType := blockKey(key, v, typed)
		typed = typed || isType
		return ok
	}, func(block []byte) bool {
		if !typed {
			return false
		}
		typed = false
		if !first {
			dst = append(dst, ',')
		}
		first = false
		dst = appendCompactHTML(dst, block)
		return true
	})
	if !ok {
		return dst[:start], false
	}
	dst = append(dst, ']')
	if string(isError) == "true" {
		dst = append(dst, `,"isError":true`...)
	}
	if structured != nil && string(structured) != "null" {
		dst = append(dst, `,"structuredContent":`...)
		dst = appendCompactHTML(dst, structured)
	}
	return append(dst, '}'), true
}

// blockKey looks at one key of a content block, typed when the block's
// type was already seen. A block passes on unchanged when it is an object
// with one "type" key, a type MCP defines, and no other key encoding/json
// would read as its type: ok false when this key makes it otherwise,
// isType when it is the block's type.
func blockKey(key, v []byte, typed bool) (ok, isType bool) {
	if !bytes.EqualFold(key, []byte("type")) {
		return true, false
	}
	if string(key) != "type" || typed || len(v) < 2 || v[0] != '"' || !knownBlocks[string(v[1:len(v)-1])] {
		return false, false
	}
	return true, true
}

// appendCompactHTML appends the valid JSON src without the whitespace
// between its tokens, with <, >, &, U+2028 and U+2029 escaped: what
// encoding/json writes for a json.Marshaler's output. Runs of bytes that
// need nothing are copied whole; a table says, for the bytes inside a
// string and for those outside, which do, and inside a string, where a
// result's text is, eight bytes at a time go by up to the first that may
// (htmlStops).
func appendCompactHTML(dst, src []byte) []byte {
	const hex = "0123456789abcdef"
	inString := false
	start := 0
	for i := 0; i < len(src); i++ {
		if inString {
			for len(src)-i >= 8 {
				if m := htmlStops(jsonrpc.Word(src, i)); m != 0 {
					i += jsonrpc.FirstMark(m)
					break
				}
				i += 8
			}
			if i >= len(src) {
				break
			}
		}
		c := src[i]
		if !compactStops[b2i(inString)][c] {
			continue
		}
		switch {
		case c == '<' || c == '>' || c == '&':
			dst = append(dst, src[start:i]...)
			dst = append(dst, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xF])
			start = i + 1
		case c == 0xE2:
			if i+2 < len(src) && src[i+1] == 0x80 && src[i+2]&^1 == 0xA8 {
				dst = append(dst, src[start:i]...)
				dst = append(dst, '\\', 'u', '2', '0', '2', hex[src[i+2]&0xF])
				i += 2
				start = i + 1
			}
		case c == '\\':
			i++ // inside a string: the escaped byte is taken as it is
		case c == '"':
			inString = !inString
		default: // white space between tokens
			dst = append(dst, src[start:i]...)
			start = i + 1
		}
	}
	return append(dst, src[start:]...)
}

// htmlStops marks (as internal/jsonrpc's string readers mark theirs) the bytes of a word that
// may stop appendCompactHTML inside a string: those compactStops[1] holds.
// A quote and an ampersand (0x22, 0x26) differ in one bit, as do < and >
// (0x3c, 0x3e): with that bit set, one test finds both.
func htmlStops(x uint64) uint64 {
	return (jsonrpc.Zeros((x|jsonrpc.Spread(0x04))^jsonrpc.Spread('&')) |
		jsonrpc.Zeros((x|jsonrpc.Spread(0x02))^jsonrpc.Spread('>')) |
		jsonrpc.Zeros(x^jsonrpc.Spread('\\')) |
		jsonrpc.Zeros(x^jsonrpc.Spread(0xe2))) & jsonrpc.HighBits // 0xe2: the first byte of U+2028 and U+2029
}

// compactStops are the bytes appendCompactHTML looks at: [0] outside a
// string (white space, the quote that opens one), [1] inside (the quote
// and backslash, the characters escaped for HTML, the first byte of
// U+2028 and U+2029). A table, read only.
var compactStops = func() (t [2][256]bool) {
	for _, c := range []byte(" \t\n\r\"") {
		t[0][c] = true
	}
	for _, c := range []byte("\"\\<>&\xe2") {
		t[1][c] = true
	}
	return t
}()

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}
