// Package safe makes text from other programs (MCP servers' names,
// descriptions, stderr) safe to print: control characters are escaped, so a
// server cannot move the cursor, set the window title or hide text.
package safe

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Line escapes every control character, including newlines and tabs, the
// Unicode bidirectional overrides and format characters, and the line and
// paragraph separators (U+2028, U+2029), so s prints as one inert line.
// Invalid UTF-8 bytes are escaped as \xHH.
func Line(s string) string {
	if clean(s, false) {
		return s
	}
	return escape(s, false)
}

// FirstLine returns the first line of s, trimmed: it ends at any line
// separator, not only "\n" — "\r", "\v", "\f", NEL (U+0085), LINE
// SEPARATOR (U+2028) and PARAGRAPH SEPARATOR (U+2029) break a line in some
// reader (a terminal, a JSON viewer, a model's tokenizer), so a server
// cannot smuggle a second line into a one-line summary.
func FirstLine(s string) string {
	if i := strings.IndexFunc(s, lineSeparator); i >= 0 {
		s = s[:i]
	}
	return strings.TrimSpace(s)
}

func lineSeparator(r rune) bool {
	switch r {
	case '\n', '\r', '\v', '\f', '\u0085', '\u2028', '\u2029':
		return true
	}
	return false
}

// Text is Line but keeps newlines and tabs, for multi-line text such as a
// description.
func Text(s string) string {
	if clean(s, true) {
		return s
	}
	return escape(s, true)
}

func clean(s string, keepLayout bool) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= utf8.RuneSelf || c < 0x20 || c == 0x7f {
			if keepLayout && (c == '\n' || c == '\t') {
				continue
			}
			return false
		}
	}
	return true
}

func escape(s string, keepLayout bool) string {
	var b strings.Builder
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case keepLayout && (r == '\n' || r == '\t'):
			b.WriteRune(r)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\t':
			b.WriteString(`\t`)
		case r == '\r':
			b.WriteString(`\r`)
		case r < 0x20 || r == 0x7f:
			fmt.Fprintf(&b, `\x%02x`, r)
		case unicode.IsControl(r) || isBidi(r) || unicode.Is(unicode.Cf, r) && r != 0x200d || r == 0x2028 || r == 0x2029:
			fmt.Fprintf(&b, `\u%04x`, r)
		default:
			b.WriteRune(r)
		}
		i += size
	}
	return b.String()
}

func isBidi(r rune) bool {
	return r >= 0x202a && r <= 0x202e || r >= 0x2066 && r <= 0x2069
}

// Cut returns the longest prefix of s of at most max bytes that ends at a
// character boundary (max <= 0: s whole). Callers say themselves that text
// was cut.
func Cut(s string, max int) string {
	if max <= 0 || len(s) <= max {
		return s
	}
	cut := max
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut]
}
