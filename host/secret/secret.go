// Package secret keeps the values a host must never print, and hides them in
// whatever the host prints.
//
// One [Set] belongs to one host. What joins it (docs/rfc/0003-mcp-client.md,
// "Secrets"):
//
//   - credentials, whatever their names ([Set.AddCredential]): the value of
//     a field tagged `secret:"true"` (an agent's apiKey, a gateway's token)
//     and every value a !!js expression read from the environment;
//   - a value of an MCP server's env or headers when its name looks like a
//     credential ([Sensitive], [CredentialHeader]) or the value looks like a
//     token ([LooksLikeToken]): `FIXTURE_MODE: stubborn` or `NODE_ENV:
//     production` are ordinary words and print;
//   - the credentials inside a URL or a command line ([URLCredentials],
//     [ArgCredentials]);
//   - the values of ambient variables whose names look like credentials
//     ([Sensitive]).
//
// Every output path of the harness — logs at every level, status, errors,
// console lines, agent events — passes through [Set.Redact], [Set.Handler]
// or [Set.Writer]. Tool results do not: they are the server's words. A
// credential is also kept from stdio servers by value ([Set.IsCredential]):
// the variable a !!js expression read it from is not inherited, whatever its
// name.
//
// The rules:
//
//  1. A value qualifies when it has at least [MinLen] bytes and is not a
//     plain number or a boolean: shorter values would blank out ordinary
//     words. "Bearer <token>" also adds the token alone; a URL with a
//     password adds the password alone and the base64 of "user:password"
//     (the Basic Authorization header Go's HTTP client sends for it).
//  2. Each value is matched in its raw form, JSON-escaped the ways common
//     encoders do it (Go's, with and without HTML escaping; every
//     non-ASCII character as \uXXXX, as Python's json.dumps does; "/" as
//     "\/", as PHP's json_encode does; and any of these escaped twice, a
//     JSON message quoted in a JSON string) and percent-encoded the ways
//     common libraries do it (Go's query and path escaping, JavaScript's
//     encodeURIComponent, Python's quote; upper- or lower-case hex; a space
//     as + or %20), so a secret quoted inside a JSON error or a URL is
//     hidden too. Each line of a value of several lines (a PEM key) is a
//     secret of its own: a server may print it line by line. Not matched:
//     a value in base64 (but for a URL's user:password, rule 1), in HTML
//     entities, percent-encoded from another charset than UTF-8 (Latin-1),
//     or split across lines.
//  3. The set only grows during a run: a value removed from cordis.yml may
//     still sit in a log line being written.
//  4. Redact before you clip ([Set.Clip]): a secret cut at a clip boundary
//     must not leak its prefix.
//  5. Matching ignores the case of ASCII letters: a server that prints a
//     token upper-cased (a log line in capitals, an error code) still
//     prints the token, and a hex token is the same credential in either
//     case. Letters beyond ASCII are matched as written.
package secret

import (
	"encoding/json"
	"errors"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"unicode/utf16"

	"github.com/harness-go/harness/internal/safe"
)

// MinLen is the length, in bytes, below which a value is not treated as a
// secret.
const MinLen = 8

// Mask replaces a secret in redacted text.
const Mask = "<redacted>"

// Set is the secrets of one host. It is safe for concurrent use; the zero
// value is not usable, see [New].
type Set struct {
	mu          sync.Mutex
	values      map[string]bool // the qualifying values added
	credentials map[string]bool // of values, those added by AddCredential
	forms       atomic.Pointer[spellings]
}

// spellings are every form of every secret, longest first, and one
// replacer over them: a text is scanned once, whatever the number of
// secrets, and at each position the longest spelling wins. The replacer
// resumes after a match, so it misses a secret that starts inside another;
// when it finds something, [spellings.union] redacts again, every match.
type spellings struct {
	forms []string
	rep   *strings.Replacer
	// For union: whether a form starts with a byte, and the forms by their
	// first MinLen bytes (every form has that many), longest first.
	first    [256]bool
	byPrefix map[string][]string
}

// New returns an empty set.
func New() *Set {
	s := &Set{values: map[string]bool{}, credentials: map[string]bool{}}
	s.forms.Store(&spellings{rep: strings.NewReplacer()})
	return s
}

// Qualifies reports whether v is treated as a secret (rule 1).
func Qualifies(v string) bool {
	v = strings.TrimSpace(v)
	if len(v) < MinLen {
		return false
	}
	if _, err := strconv.ParseFloat(v, 64); err == nil {
		return false
	}
	switch strings.ToLower(v) {
	case "true", "false":
		return false
	}
	return true
}

// AddCredential adds values that are credentials whatever their names: a
// field tagged secret, a value !!js read from the environment. Beyond
// [Set.Add], an ambient variable holding one of them is not inherited by
// stdio servers ([Set.IsCredential]).
func (s *Set) AddCredential(values ...string) {
	if s == nil {
		return
	}
	s.Add(values...)
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, v := range values {
		if v = strings.TrimSpace(v); Qualifies(v) {
			s.credentials[v] = true
		}
	}
}

// IsCredential reports whether value was added by [Set.AddCredential].
func (s *Set) IsCredential(value string) bool {
	if s == nil {
		return false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.credentials[strings.TrimSpace(value)]
}

// Add adds the values that qualify. It is cheap when nothing is new.
func (s *Set) Add(values ...string) {
	if s == nil {
		return
	}
	var fresh []string
	s.mu.Lock()
	defer s.mu.Unlock()
	add := func(v string) {
		v = strings.TrimSpace(v)
		if Qualifies(v) && !s.values[v] {
			s.values[v] = true
			fresh = append(fresh, v)
		}
	}
	for _, v := range values {
		add(v)
		// A password inside a URL may be printed alone, or as the Basic
		// Authorization header Go's HTTP client derives from it.
		if scheme, rest, ok := strings.Cut(strings.TrimSpace(v), "://"); ok && validScheme(scheme) {
			for _, c := range userinfoCredentials(rest) {
				add(c)
			}
		}
		// "Bearer <token>", "Basic <credentials>", "token <pat>": the
		// credential alone may be echoed too.
		if scheme, cred, ok := strings.Cut(strings.TrimSpace(v), " "); ok && !strings.ContainsAny(scheme, " \t") {
			add(cred)
		}
		if strings.Contains(v, "\n") {
			for _, line := range strings.Split(v, "\n") {
				add(strings.TrimSuffix(line, "\r"))
			}
		}
	}
	if len(fresh) == 0 {
		return
	}
	old := s.forms.Load().forms
	seen := make(map[string]bool, len(old)+4*len(fresh))
	forms := make([]string, 0, len(old)+4*len(fresh))
	for _, f := range old {
		seen[f] = true
		forms = append(forms, f)
	}
	for _, v := range fresh {
		for _, f := range formsOf(v) {
			if f = foldASCII(f); !seen[f] {
				seen[f] = true
				forms = append(forms, f)
			}
		}
	}
	// Longest first, so a value is hidden before a part of it.
	sort.SliceStable(forms, func(i, j int) bool { return len(forms[i]) > len(forms[j]) })
	pairs := make([]string, 0, 2*len(forms))
	for _, f := range forms {
		pairs = append(pairs, f, Mask)
	}
	sp := &spellings{forms: forms, rep: strings.NewReplacer(pairs...), byPrefix: map[string][]string{}}
	for _, f := range forms {
		sp.first[f[0]] = true
		sp.byPrefix[f[:MinLen]] = append(sp.byPrefix[f[:MinLen]], f)
	}
	s.forms.Store(sp)
}

// formsOf returns the spellings of v that text may hold (rule 2).
func formsOf(v string) []string {
	out := []string{v}
	once := jsonForms(v)
	out = append(out, once...)
	for _, q := range once {
		if q != v {
			out = append(out, jsonForms(q)...) // a JSON message quoted in a JSON string
		}
	}
	return append(out, percentForms(v)...)
}

// jsonForms returns v as it stands inside a JSON string, escaped the ways
// encoders differ in: Go's, with and without HTML escaping (\u003c for <);
// with every character beyond ASCII (and DEL) as \uXXXX, a surrogate pair
// for one beyond the BMP, as Python's json.dumps does by default (either
// hex case); and with "/" as "\/", as PHP's json_encode does by default
// (non-ASCII escaped or not). The caller drops the forms equal to v.
func jsonForms(v string) []string {
	html, _ := json.Marshal(v)
	var sb strings.Builder
	enc := json.NewEncoder(&sb)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(v) // a string always encodes
	plain := strings.TrimSuffix(sb.String(), "\n")
	plain = plain[1 : len(plain)-1]
	ascii := escapeNonASCII(plain, "0123456789abcdef")
	return []string{
		string(html[1 : len(html)-1]),
		plain,
		ascii,
		escapeNonASCII(plain, "0123456789ABCDEF"),
		strings.ReplaceAll(plain, "/", `\/`),
		strings.ReplaceAll(ascii, "/", `\/`),
	}
}

// escapeNonASCII returns q, a JSON string's content, with each character
// beyond ASCII, and DEL, written \uXXXX in the given hex digits (UTF-16
// surrogates for those beyond U+FFFF).
func escapeNonASCII(q, hex string) string {
	i := 0
	for i < len(q) && q[i] < 0x7f {
		i++
	}
	if i == len(q) {
		return q
	}
	var b strings.Builder
	b.WriteString(q[:i])
	u := func(r rune) {
		b.WriteString(`\u`)
		for shift := 12; shift >= 0; shift -= 4 {
			b.WriteByte(hex[r>>shift&15])
		}
	}
	for _, r := range q[i:] {
		switch {
		case r < 0x7f:
			b.WriteRune(r)
		case r > 0xffff:
			r1, r2 := utf16.EncodeRune(r)
			u(r1)
			u(r2)
		default:
			u(r)
		}
	}
	return b.String()
}

// percentForms returns v percent-encoded the ways libraries differ in: which
// bytes besides the unreserved ones they keep (none as Go's QueryEscape, "/"
// as Python's quote, "!*'()" as encodeURIComponent, Go's PathEscape, and
// JavaScript's encodeURI), a space as "+" or "%20", and the case of the hex
// digits. Forms equal to v are left out; a value of letters, digits and
// "-_.~" has none.
func percentForms(v string) []string {
	var out []string
	for _, keep := range []string{"", "/", "!*'()", "$&+:=@", "!#$&'()*+,/:;=?@"} {
		for _, plus := range []bool{false, true} {
			for _, hex := range []string{"0123456789ABCDEF", "0123456789abcdef"} {
				if f := percentEncode(v, keep, plus, hex); f != v {
					out = append(out, f)
				}
			}
		}
	}
	return out
}

func percentEncode(v, keep string, plus bool, hex string) string {
	var b strings.Builder
	for i := 0; i < len(v); i++ {
		c := v[i]
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9',
			c == '-', c == '_', c == '.', c == '~', strings.IndexByte(keep, c) >= 0:
			b.WriteByte(c)
		case c == ' ' && plus:
			b.WriteByte('+')
		default:
			b.WriteByte('%')
			b.WriteByte(hex[c>>4])
			b.WriteByte(hex[c&15])
		}
	}
	return b.String()
}

// AddEnviron adds the values of the variables of environ ("NAME=value")
// that look like credentials ([SensitiveVar]).
func (s *Set) AddEnviron(environ []string) {
	var vals []string
	for _, kv := range environ {
		if name, v, ok := strings.Cut(kv, "="); ok && SensitiveVar(name, v) {
			vals = append(vals, v)
		}
	}
	s.Add(vals...)
}

// Len returns the number of values in the set.
func (s *Set) Len() int {
	if s == nil {
		return 0
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.values)
}

// MaxLen returns the length of the longest spelling of a secret: text kept
// for redaction before a clip needs that many bytes beyond the clip.
func (s *Set) MaxLen() int {
	if s == nil {
		return 0
	}
	forms := s.forms.Load().forms
	if len(forms) == 0 {
		return 0
	}
	return len(forms[0])
}

// Redact returns text with every secret replaced by [Mask]: every match of
// every spelling, matches that overlap or touch making one mask. A nil set
// redacts nothing.
func (s *Set) Redact(text string) string {
	if s.empty() || len(text) < MinLen {
		return text
	}
	sp := s.forms.Load()
	folded := foldASCII(text)
	if sp.rep.Replace(folded) == folded {
		return text // the common case: no secret, one scan
	}
	return sp.union(text, folded)
}

// foldASCII returns s with its ASCII letters in lower case (rule 5); it
// keeps every byte where it is, so a match in the folded text is a match
// at the same place in s.
func foldASCII(s string) string {
	i := 0
	for i < len(s) && (s[i] < 'A' || s[i] > 'Z') {
		i++
	}
	if i == len(s) {
		return s
	}
	b := []byte(s)
	for ; i < len(b); i++ {
		if 'A' <= b[i] && b[i] <= 'Z' {
			b[i] += 'a' - 'A'
		}
	}
	return string(b)
}

// union returns text with every match of every spelling replaced, where
// matches that overlap or touch make one [Mask]: with the secrets
// AAAAxxxxBBBB and BBBBccccDDDD, AAAAxxxxBBBBccccDDDD is all hidden (the
// replacer alone left ccccDDDD).
func (sp *spellings) union(text, folded string) string {
	var b strings.Builder
	b.Grow(len(text))
	last, start, end := 0, -1, -1 // text[last:start] is not yet written; text[start:end] is masked
	for i := 0; i+MinLen <= len(folded); i++ {
		if !sp.first[folded[i]] {
			continue
		}
		for _, f := range sp.byPrefix[folded[i:i+MinLen]] {
			if !strings.HasPrefix(folded[i:], f) {
				continue
			}
			if i > end {
				if start >= 0 {
					b.WriteString(text[last:start])
					b.WriteString(Mask)
					last = end
				}
				start = i
			}
			end = max(end, i+len(f))
			break // the longest at i
		}
	}
	if start < 0 {
		return text
	}
	b.WriteString(text[last:start])
	b.WriteString(Mask)
	b.WriteString(text[end:])
	return b.String()
}

// empty reports whether the set holds nothing (a nil set does not); it
// takes no lock, for the paths every log record and every write take.
func (s *Set) empty() bool { return s == nil || len(s.forms.Load().forms) == 0 }

// Contains reports whether text holds a secret.
func (s *Set) Contains(text string) bool {
	return s.Redact(text) != text
}

// Clip redacts text, then cuts it to at most max bytes at a UTF-8 boundary,
// ending a cut text with "…". Give it the text before any clipping, or at
// least max+[Set.MaxLen] bytes of it (rule 4).
func (s *Set) Clip(text string, max int) string {
	text = s.Redact(text)
	if max <= 0 || len(text) <= max {
		return text
	}
	return safe.Cut(text, max) + "…"
}

// Err returns err with its message redacted; errors.Is and errors.As still
// see the original chain.
func (s *Set) Err(err error) error {
	if err == nil || s == nil {
		return err
	}
	msg := err.Error()
	if red := s.Redact(msg); red != msg {
		return &redacted{msg: red, err: err}
	}
	return err
}

type redacted struct {
	msg string
	err error
}

func (e *redacted) Error() string { return e.msg }
func (e *redacted) Unwrap() error { return e.err }

// IsRedacted reports whether err's message was redacted by a set.
func IsRedacted(err error) bool {
	var r *redacted
	return errors.As(err, &r)
}
