package mcpservers

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"unicode/utf8"
)

// maxDepth bounds the nesting of a JSON file: the reader below recurses
// once per level, and no client's configuration nests deeper than a few.
const maxDepth = 64

// A jnode is one JSON value with the byte offset where it starts, so that a
// problem with it can say line:column. Objects keep their members in file
// order (a key twice is refused: encoding/json would keep the last one
// silently).
type jnode struct {
	kind    jkind
	text    string // a string's value, a number's digits, "true" or "false"
	off     int
	members []jmember
	elems   []*jnode
}

type jmember struct {
	key    string
	keyOff int
	val    *jnode
}

type jkind int

const (
	jObject jkind = iota + 1
	jArray
	jString
	jNumber
	jBool
	jNull
)

func (k jkind) String() string {
	switch k {
	case jObject:
		return "an object"
	case jArray:
		return "an array"
	case jString:
		return "a string"
	case jNumber:
		return "a number"
	case jBool:
		return "true or false"
	case jNull:
		return "null"
	}
	return "nothing"
}

// get returns the member named key of an object, or nil.
func (n *jnode) get(key string) *jnode {
	if n == nil || n.kind != jObject {
		return nil
	}
	for _, m := range n.members {
		if m.key == key {
			return m.val
		}
	}
	return nil
}

// stripJSONC turns JSON with comments and trailing commas — what VS Code,
// Cursor and Gemini CLI accept in their configuration files — into strict
// JSON of the same length: every comment and every trailing comma becomes
// spaces (a newline stays a newline), so offsets, and so lines and columns,
// are those of the file. A UTF-8 byte order mark becomes spaces too.
func stripJSONC(data []byte) []byte {
	out := bytes.Clone(data)
	if bytes.HasPrefix(out, []byte("\ufeff")) {
		copy(out, "   ")
	}
	blank := func(from, to int) {
		for i := from; i < to && i < len(out); i++ {
			if out[i] != '\n' && out[i] != '\r' {
				out[i] = ' '
			}
		}
	}
	lastComma := -1 // a comma that may turn out to be trailing
	for i := 0; i < len(out); i++ {
		switch c := out[i]; {
		case c == '"':
			lastComma = -1
			for i++; i < len(out) && out[i] != '"'; i++ {
				if out[i] == '\\' {
					i++
				}
			}
		case c == '/' && i+1 < len(out) && out[i+1] == '/':
			end := bytes.IndexByte(out[i:], '\n')
			if end < 0 {
				end = len(out) - i
			}
			blank(i, i+end)
			i += end - 1
		case c == '/' && i+1 < len(out) && out[i+1] == '*':
			end := bytes.Index(out[i+2:], []byte("*/"))
			if end < 0 {
				// An unterminated comment: leave it for the parser to
				// refuse, where it starts.
				return out
			}
			blank(i, i+2+end+2)
			i += 2 + end + 1
		case c == ',':
			lastComma = i
		case c == '}' || c == ']':
			if lastComma >= 0 {
				out[lastComma] = ' '
			}
			lastComma = -1
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
		default:
			lastComma = -1
		}
	}
	return out
}

// parseJSON reads a JSON (or JSONC) document into a jnode tree. The error is
// a *fileError with the position of the problem.
func parseJSON(path string, data []byte) (*jnode, error) {
	clean := stripJSONC(data)
	p := &jparser{path: path, data: clean, dec: json.NewDecoder(bytes.NewReader(clean))}
	p.dec.UseNumber()
	root, err := p.value(0)
	if err != nil {
		return nil, err
	}
	end := p.next()
	if _, err := p.dec.Token(); err != io.EOF {
		return nil, p.fail(end, "more than one JSON value in the file: it must hold one object")
	}
	return root, nil
}

type jparser struct {
	path string
	data []byte
	dec  *json.Decoder
}

// next is the offset where the next token starts: past the white space and
// the separators after the decoder's position.
func (p *jparser) next() int {
	off := int(p.dec.InputOffset())
	for off < len(p.data) {
		switch p.data[off] {
		case ' ', '\t', '\n', '\r', ',', ':':
			off++
			continue
		}
		break
	}
	return off
}

func (p *jparser) fail(off int, format string, args ...any) error {
	return &fileError{problems: []Problem{{Pos: position(p.path, p.data, off), Msg: fmt.Sprintf(format, args...)}}}
}

// tokenError turns the decoder's error into a positioned one.
func (p *jparser) tokenError(off int, err error) error {
	var se *json.SyntaxError
	switch {
	case errors.As(err, &se):
		// The decoder's offset is that of the byte it could not take.
		return p.fail(int(se.Offset), "invalid JSON: %s", se.Error())
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return p.fail(len(p.data), "invalid JSON: the file ends before the value does")
	}
	return p.fail(off, "invalid JSON: %v", err)
}

func (p *jparser) value(depth int) (*jnode, error) {
	off := p.next()
	if depth > maxDepth {
		return nil, p.fail(off, "nested more than %d levels deep", maxDepth)
	}
	tok, err := p.dec.Token()
	if err != nil {
		return nil, p.tokenError(off, err)
	}
	n := &jnode{off: off}
	switch t := tok.(type) {
	case json.Delim:
		switch t {
		case '{':
			n.kind = jObject
			seen := map[string]int{}
			for p.dec.More() {
				keyOff := p.next()
				kt, err := p.dec.Token()
				if err != nil {
					return nil, p.tokenError(keyOff, err)
				}
				key, ok := kt.(string)
				if !ok {
					return nil, p.fail(keyOff, "invalid JSON: an object key must be a string")
				}
				if first, dup := seen[key]; dup {
					return nil, p.fail(keyOff, "the key %q is given twice in this object (first at %s): keep one", key, lineCol(position("", p.data, first)))
				}
				seen[key] = keyOff
				v, err := p.value(depth + 1)
				if err != nil {
					return nil, err
				}
				n.members = append(n.members, jmember{key: key, keyOff: keyOff, val: v})
			}
		case '[':
			n.kind = jArray
			for p.dec.More() {
				v, err := p.value(depth + 1)
				if err != nil {
					return nil, err
				}
				n.elems = append(n.elems, v)
			}
		default:
			return nil, p.fail(off, "invalid JSON: unexpected %q", string(t))
		}
		end := p.next()
		if _, err := p.dec.Token(); err != nil {
			return nil, p.tokenError(end, err)
		}
	case string:
		n.kind, n.text = jString, t
	case json.Number:
		n.kind, n.text = jNumber, t.String()
	case bool:
		n.kind, n.text = jBool, fmt.Sprint(t)
	case nil:
		n.kind = jNull
	}
	return n, nil
}

// position converts a byte offset of data into a line and a column (both
// from 1; the column counts characters, as editors show it).
func position(path string, data []byte, off int) Pos {
	off = min(max(off, 0), len(data))
	line := 1 + bytes.Count(data[:off], []byte("\n"))
	start := bytes.LastIndexByte(data[:off], '\n') + 1
	col := 1 + utf8.RuneCount(data[start:off])
	return Pos{File: path, Line: line, Col: col}
}

// lineCol is p's "line:column" alone.
func lineCol(p Pos) string {
	return strings.TrimPrefix(Pos{Line: p.Line, Col: p.Col}.String(), ":")
}
