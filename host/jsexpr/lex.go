package jsexpr

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// tokKind classifies a token.
type tokKind uint8

const (
	tEOF      tokKind = iota
	tIdent            // an identifier (possibly non-ASCII; only ASCII ones are accepted as names)
	tNumber           // a numeric literal, lexed only to be rejected by name
	tString           // a quoted string literal; val holds its value
	tTemplate         // a template chunk ending in "`" or "${"; val holds its value
	tPunct            // a punctuator; text holds it
)

// token is one lexical token. pos and end delimit its source text.
type token struct {
	kind     tokKind
	pos, end int
	text     string // source text (tIdent, tNumber, tPunct)
	val      string // cooked value (tString, tTemplate)
	more     bool   // tTemplate: the chunk ended with "${", a substitution follows
}

// puncts lists the JavaScript punctuators the lexer recognises, longest
// first, so that an unsupported operator is reported as the reader wrote it
// ("&&", "===") rather than by its first character.
var puncts = [...]string{
	">>>=", "...", "===", "!==", "**=", "<<=", ">>=", ">>>", "&&=", "||=", "??=",
	"=>", "==", "!=", "<=", ">=", "&&", "||", "??", "?.", "++", "--",
	"+=", "-=", "*=", "/=", "%=", "&=", "|=", "^=", "**", "<<", ">>",
	"{", "}", "(", ")", "[", "]", ".", ";", ",", ":", "<", ">",
	"+", "-", "*", "/", "%", "&", "|", "^", "!", "~", "?", "=",
}

// scanner turns source text into tokens on demand. The parser drives it:
// after the "}" that closes a template substitution it calls templateChunk
// instead of next, as the JavaScript grammar does.
type scanner struct {
	src string
	pos int
}

// isSpace reports whether r is JavaScript WhiteSpace or a LineTerminator.
func isSpace(r rune) bool {
	switch r {
	case '\t', '\v', '\f', ' ', '\u00a0', '\ufeff', '\n', '\r', '\u2028', '\u2029':
		return true
	}
	return unicode.Is(unicode.Zs, r)
}

func isDigit(c byte) bool { return '0' <= c && c <= '9' }

func isASCIIIdentStart(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || c == '_' || c == '$'
}

func isASCIIIdentPart(c byte) bool { return isASCIIIdentStart(c) || isDigit(c) }

// isIdentStart approximates JavaScript's ID_Start for non-ASCII runes. It is
// used only to report a non-ASCII name as one word.
func isIdentStart(r rune) bool {
	return r >= utf8.RuneSelf && (unicode.IsLetter(r) || unicode.Is(unicode.Nl, r))
}

// isIdentPart approximates JavaScript's ID_Continue for non-ASCII runes.
func isIdentPart(r rune) bool {
	return isIdentStart(r) || r >= utf8.RuneSelf &&
		(unicode.In(r, unicode.Mn, unicode.Mc, unicode.Nd, unicode.Pc) || r == '\u200c' || r == '\u200d')
}

// isASCIIIdent reports whether s is an identifier in the ASCII subset
// [A-Za-z_$][A-Za-z0-9_$]*, the names allowed in process.env.NAME.
func isASCIIIdent(s string) bool {
	if s == "" || !isASCIIIdentStart(s[0]) {
		return false
	}
	for i := 1; i < len(s); i++ {
		if !isASCIIIdentPart(s[i]) {
			return false
		}
	}
	return true
}

// skipSpace advances past whitespace and line terminators. Invalid UTF-8
// stops it; next reports the byte.
func (s *scanner) skipSpace() {
	for s.pos < len(s.src) {
		r, size := utf8.DecodeRuneInString(s.src[s.pos:])
		if !isSpace(r) {
			return
		}
		s.pos += size
	}
}

// next returns the token at the current position in the normal (not
// template text) lexical mode.
func (s *scanner) next() (token, *SyntaxError) {
	s.skipSpace()
	start := s.pos
	if start == len(s.src) {
		return token{kind: tEOF, pos: start, end: start}, nil
	}
	c := s.src[start]
	switch {
	case c == '\'' || c == '"':
		return s.scanString()
	case c == '`':
		s.pos++
		return s.templateChunk(start)
	case isDigit(c):
		return s.scanNumber(), nil
	case strings.HasPrefix(s.src[start:], "//") || strings.HasPrefix(s.src[start:], "/*"):
		return token{}, s.errorf(start, "comments are not supported")
	}
	if r, size := utf8.DecodeRuneInString(s.src[start:]); isASCIIIdentStart(c) || isIdentStart(r) {
		s.pos += size
		for s.pos < len(s.src) {
			r, size := utf8.DecodeRuneInString(s.src[s.pos:])
			if !(r < utf8.RuneSelf && isASCIIIdentPart(byte(r)) || isIdentPart(r)) {
				break
			}
			s.pos += size
		}
		return token{kind: tIdent, pos: start, end: s.pos, text: s.src[start:s.pos]}, nil
	}
	for _, p := range puncts {
		if strings.HasPrefix(s.src[start:], p) {
			s.pos += len(p)
			return token{kind: tPunct, pos: start, end: s.pos, text: p}, nil
		}
	}
	r, size := utf8.DecodeRuneInString(s.src[start:])
	if r == utf8.RuneError && size == 1 {
		return token{}, s.errorf(start, "invalid UTF-8 byte 0x%02X", c)
	}
	return token{}, s.errorf(start, "unexpected character %q", r)
}

// scanNumber lexes something that starts with a digit, loosely (1, 0x1F,
// 1_000, 1.5e+3, 10n), so that it can be rejected as one word.
func (s *scanner) scanNumber() token {
	start := s.pos
	s.pos++ // the first digit
	for s.pos < len(s.src) {
		c := s.src[s.pos]
		prev := s.src[s.pos-1]
		if !(isASCIIIdentPart(c) || c == '.' || (c == '+' || c == '-') && (prev == 'e' || prev == 'E')) {
			break
		}
		s.pos++
	}
	return token{kind: tNumber, pos: start, end: s.pos, text: s.src[start:s.pos]}
}

// scanString lexes a single- or double-quoted string literal.
func (s *scanner) scanString() (token, *SyntaxError) {
	start := s.pos
	quote := s.src[start]
	s.pos++
	var b strings.Builder
	for s.pos < len(s.src) {
		c := s.src[s.pos]
		switch {
		case c == quote:
			s.pos++
			return token{kind: tString, pos: start, end: s.pos, val: b.String()}, nil
		case c == '\n' || c == '\r':
			return token{}, s.errorf(start, `unterminated string literal (a line break inside quotes must be written as \n)`)
		case c == '\\':
			if err := s.escape(&b, start, false); err != nil {
				return token{}, err
			}
		default:
			if err := s.copyRune(&b); err != nil {
				return token{}, err
			}
		}
	}
	return token{}, s.errorf(start, "unterminated string literal")
}

// templateChunk lexes template text from the current position, which is just
// after the opening "`" or after the "}" closing a substitution, up to and
// including the next "`" or "${". open is the offset of the opening "`".
func (s *scanner) templateChunk(open int) (token, *SyntaxError) {
	start := s.pos - 1 // the "`" or "}"
	var b strings.Builder
	for s.pos < len(s.src) {
		c := s.src[s.pos]
		switch {
		case c == '`':
			s.pos++
			return token{kind: tTemplate, pos: start, end: s.pos, val: b.String()}, nil
		case c == '$' && strings.HasPrefix(s.src[s.pos:], "${"):
			s.pos += 2
			return token{kind: tTemplate, pos: start, end: s.pos, val: b.String(), more: true}, nil
		case c == '\\':
			if err := s.escape(&b, open, true); err != nil {
				return token{}, err
			}
		case c == '\r':
			// In a template, CR and CR LF are read as LF.
			b.WriteByte('\n')
			s.pos++
			if strings.HasPrefix(s.src[s.pos:], "\n") {
				s.pos++
			}
		default:
			if err := s.copyRune(&b); err != nil {
				return token{}, err
			}
		}
	}
	return token{}, s.errorf(open, "unterminated template literal")
}

// copyRune copies one UTF-8 encoded rune of literal text to b.
func (s *scanner) copyRune(b *strings.Builder) *SyntaxError {
	r, size := utf8.DecodeRuneInString(s.src[s.pos:])
	if r == utf8.RuneError && size == 1 {
		return s.errorf(s.pos, "invalid UTF-8 byte 0x%02X", s.src[s.pos])
	}
	b.WriteString(s.src[s.pos : s.pos+size])
	s.pos += size
	return nil
}

// simpleEscapes maps the single-character escapes to their values.
var simpleEscapes = map[byte]byte{
	'n': '\n', 'r': '\r', 't': '\t', 'b': '\b', 'f': '\f', 'v': '\v',
	'\\': '\\', '\'': '\'', '"': '"',
}

// escape decodes the escape sequence at s.pos (a backslash) into b. open is
// the offset of the literal's opening quote, for the unterminated case.
func (s *scanner) escape(b *strings.Builder, open int, template bool) *SyntaxError {
	at := s.pos
	s.pos++
	if s.pos == len(s.src) {
		if template {
			return s.errorf(open, "unterminated template literal")
		}
		return s.errorf(open, "unterminated string literal")
	}
	c := s.src[s.pos]
	if v, ok := simpleEscapes[c]; ok || template && (c == '`' || c == '$') {
		if !ok {
			v = c
		}
		b.WriteByte(v)
		s.pos++
		return nil
	}
	switch {
	case c == '0' && !(s.pos+1 < len(s.src) && isDigit(s.src[s.pos+1])):
		b.WriteByte(0)
		s.pos++
		return nil
	case isDigit(c):
		end := s.pos + 1
		if c == '0' {
			end++ // \0 followed by a digit
		}
		return s.errorf(at, `invalid escape sequence "%s": octal escapes are not supported (use \x or \u)`, s.src[at:end])
	case c == 'x':
		v, ok := hexValue(s.src[s.pos+1:], 2)
		if !ok {
			return s.errorf(at, `invalid escape sequence: \x must be followed by two hexadecimal digits`)
		}
		b.WriteRune(rune(v))
		s.pos += 3
		return nil
	case c == 'u':
		return s.unicodeEscape(b, at)
	case c == '\n':
		s.pos++
		return nil
	case c == '\r':
		s.pos++
		if strings.HasPrefix(s.src[s.pos:], "\n") {
			s.pos++
		}
		return nil
	}
	r, size := utf8.DecodeRuneInString(s.src[s.pos:])
	switch {
	case r == '\u2028' || r == '\u2029':
		s.pos += size
		return nil
	case r == utf8.RuneError && size == 1:
		return s.errorf(s.pos, "invalid UTF-8 byte 0x%02X", c)
	case unicode.IsPrint(r):
		return s.errorf(at, `invalid escape sequence "\%c" (a backslash itself is written \\)`, r)
	}
	return s.errorf(at, `invalid escape sequence: backslash followed by %U`, r)
}

// unicodeEscape decodes \uHHHH or \u{H...} at offset at (the backslash),
// pairing a high surrogate with an immediately following low-surrogate
// escape as JavaScript's UTF-16 strings do. An unpaired surrogate cannot be
// represented in UTF-8 and is an error.
func (s *scanner) unicodeEscape(b *strings.Builder, at int) *SyntaxError {
	r, err := s.codePoint(at)
	if err != nil {
		return err
	}
	if 0xDC00 <= r && r <= 0xDFFF {
		return s.errorf(at, "unpaired surrogate %s in escape sequence", s.src[at:s.pos])
	}
	if 0xD800 <= r && r <= 0xDBFF {
		first := s.src[at:s.pos]
		if !strings.HasPrefix(s.src[s.pos:], `\u`) {
			return s.errorf(at, "unpaired surrogate %s in escape sequence", first)
		}
		lo, err := s.codePoint(s.pos)
		if err != nil {
			return err
		}
		if !(0xDC00 <= lo && lo <= 0xDFFF) {
			return s.errorf(at, "unpaired surrogate %s in escape sequence", first)
		}
		r = 0x10000 + (r-0xD800)<<10 + (lo - 0xDC00)
	}
	b.WriteRune(r)
	return nil
}

// codePoint reads one \uHHHH or \u{H...} escape at offset at (the
// backslash) and leaves s.pos after it.
func (s *scanner) codePoint(at int) (rune, *SyntaxError) {
	rest := s.src[at+2:]
	if !strings.HasPrefix(rest, "{") {
		v, ok := hexValue(rest, 4)
		if !ok {
			return 0, s.errorf(at, `invalid escape sequence: \u must be followed by four hexadecimal digits or {hex digits}`)
		}
		s.pos = at + 6
		return rune(v), nil
	}
	v, n := 0, 1
	for ; n < len(rest) && hexDigit(rest[n]) >= 0; n++ {
		if v = v<<4 | hexDigit(rest[n]); v > unicode.MaxRune {
			return 0, s.errorf(at, `invalid escape sequence: \u{...} is above the largest code point 10FFFF`)
		}
	}
	if n == 1 || n == len(rest) || rest[n] != '}' {
		return 0, s.errorf(at, `invalid escape sequence: \u{ must be followed by hexadecimal digits and }`)
	}
	s.pos = at + 2 + n + 1
	return rune(v), nil
}

// hexDigit returns the value of hexadecimal digit c, or -1.
func hexDigit(c byte) int {
	switch {
	case '0' <= c && c <= '9':
		return int(c - '0')
	case 'a' <= c && c <= 'f':
		return int(c-'a') + 10
	case 'A' <= c && c <= 'F':
		return int(c-'A') + 10
	}
	return -1
}

// hexValue parses exactly n hexadecimal digits at the start of s.
func hexValue(s string, n int) (int, bool) {
	if len(s) < n {
		return 0, false
	}
	v := 0
	for i := range n {
		d := hexDigit(s[i])
		if d < 0 {
			return 0, false
		}
		v = v<<4 | d
	}
	return v, true
}

// errorf builds a SyntaxError at byte offset off of the source.
func (s *scanner) errorf(off int, format string, args ...any) *SyntaxError {
	return newSyntaxError(s.src, off, format, args...)
}
