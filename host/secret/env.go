package secret

import (
	"encoding/base64"
	"net/url"
	"slices"
	"strings"
	"unicode"
)

// The scrub table: names of environment variables that look like
// credentials. A stdio MCP server does not inherit them (unless its entry
// sets them explicitly), and their values join the host's secret set.
//
// A name matches when, compared without regard to case:
//
//   - it contains one of [scrubContains] (the seeds' KEY, SECRET, TOKEN, the
//     upstream project's PASSWORD, and more spellings of the same:
//     PASSPHRASE, HTTP_AUTHORIZATION);
//   - one of its "_"-separated words, in a name of two words or more, is one
//     of [scrubWords] (GH_PAT, MYSQL_PWD, SMTP_PASS — but never PWD itself);
//   - it ends with one of [scrubSuffixes] (DATABASE_URL, MONGODBURL, PGPASS
//     but not PGPASSFILE, a path; X_AMZ_SIGNATURE);
//
// and it is not one of [keep]. A variable whose value is a URL carrying a
// password (scheme://user:password@host) matches whatever its name.
var (
	scrubContains = []string{"KEY", "SECRET", "TOKEN", "PASSWORD", "PASSWD", "PASSPHRASE", "CREDENTIAL", "AUTHORIZATION"}
	scrubWords    = []string{"PAT", "PWD", "PASS", "AUTH", "PRIVATE", "COOKIE", "DSN", "PW", "JWT"}
	scrubSuffixes = []string{"DATABASE_URL", "DB_URL", "DBURL", "CONNECTION_STRING", "CONN_STR", "PGPASS", "_SIGNATURE"}
	keep          = []string{"PATH", "HOME", "LANG", "PWD", "OLDPWD", "USER", "LOGNAME", "SHELL", "TERM", "TMPDIR", "TZ"}
)

// ScrubTable describes the table for documentation: one row per rule.
func ScrubTable() [][2]string {
	return [][2]string{
		{"name contains", strings.Join(scrubContains, ", ")},
		{"a word of the name (split at _, two words or more) is", strings.Join(scrubWords, ", ")},
		{"name ends with", strings.Join(scrubSuffixes, ", ")},
		{"never scrubbed", strings.Join(keep, ", ")},
		{"value is", "a URL with a password (scheme://user:password@host)"},
	}
}

// Sensitive reports whether an environment variable's name looks like a
// credential.
func Sensitive(name string) bool {
	up := strings.ToUpper(name)
	if kept(up) {
		return false
	}
	for _, c := range scrubContains {
		if strings.Contains(up, c) {
			return true
		}
	}
	for _, s := range scrubSuffixes {
		if strings.HasSuffix(up, s) {
			return true
		}
	}
	words := strings.Split(up, "_")
	if len(words) < 2 {
		return false
	}
	for _, w := range words {
		for _, s := range scrubWords {
			if w == s {
				return true
			}
		}
	}
	return false
}

// credentialHeaders are the header names that carry credentials whatever
// their values: besides these, a header whose name contains one of
// [headerWords] or matches the scrub table ("-" read as "_").
var (
	credentialHeaders = []string{"Authorization", "Proxy-Authorization", "Cookie", "X-Api-Key"}
	headerWords       = []string{"TOKEN", "KEY", "SECRET", "AUTH"}
)

// CredentialHeader reports whether an HTTP header's name looks like it
// carries a credential.
func CredentialHeader(name string) bool {
	for _, h := range credentialHeaders {
		if strings.EqualFold(h, name) {
			return true
		}
	}
	up := strings.ToUpper(strings.ReplaceAll(name, "-", "_"))
	for _, w := range headerWords {
		if strings.Contains(up, w) {
			return true
		}
	}
	return Sensitive(up)
}

// LooksLikeToken reports whether a value looks like a generated
// credential: 16 bytes or more, no white space, and at least two of
// lower-case letters, upper-case letters and digits (ghp_…, sk-…, a
// hex digest, a JWT). An ordinary word ("production", "stubborn"), a path
// or a sentence does not.
func LooksLikeToken(v string) bool {
	if len(v) < 16 {
		return false
	}
	var lower, upper, digit bool
	for _, r := range v {
		switch {
		case unicode.IsSpace(r):
			return false
		case 'a' <= r && r <= 'z':
			lower = true
		case 'A' <= r && r <= 'Z':
			upper = true
		case '0' <= r && r <= '9':
			digit = true
		}
	}
	n := 0
	for _, b := range []bool{lower, upper, digit} {
		if b {
			n++
		}
	}
	return n >= 2
}

// kept reports whether a variable is one of [keep], which a stdio server
// always inherits (name in upper case).
func kept(up string) bool { return slices.Contains(keep, up) }

// Withheld reports whether a stdio server must not inherit the ambient
// variable name=value: its name or value is in the scrub table
// ([SensitiveVar]), or its value is a credential of the configuration
// ([Set.AddCredential]: the variable a !!js expression read a token
// from). The variables the table never scrubs (PATH, HOME, …) are always
// inherited.
func (s *Set) Withheld(name, value string) bool {
	if SensitiveVar(name, value) {
		return true
	}
	return !kept(strings.ToUpper(name)) && s.IsCredential(value)
}

// LooksLikeCredential reports whether a value is a credential by its shape:
// it looks like a token ([LooksLikeToken]), carries one after "Bearer" or
// "Basic" ("Bearer T", 8 characters or more, not a lower-case word), or is
// a URL with a password.
func LooksLikeCredential(v string) bool {
	v = strings.TrimSpace(v)
	return LooksLikeToken(v) || len(authTokens(v)) > 0 || urlWithPassword(v)
}

// SensitiveVar reports whether a variable is a credential by its name or
// by its value (a URL with a password).
func SensitiveVar(name, value string) bool {
	return Sensitive(name) || urlWithPassword(value)
}

// urlWithPassword reports whether value is a URL carrying a password.
func urlWithPassword(value string) bool {
	if !strings.Contains(value, "://") || !strings.Contains(value, "@") {
		return false
	}
	u, err := url.Parse(value)
	if err != nil || u.User == nil {
		return false
	}
	_, hasPassword := u.User.Password()
	return hasPassword
}

// credentialName reports whether the name of a URL query parameter or of a
// command-line flag looks like a credential: by the scrub table ("-" read as
// "_"), or alone as one of its words (--pat, ?pass=), or a signature (?sig=,
// ?X-Amz-Signature=).
func credentialName(name string) bool {
	up := strings.ToUpper(strings.ReplaceAll(name, "-", "_"))
	if last := up[strings.LastIndex(up, "_")+1:]; Sensitive(up) || last == "SIG" || last == "SIGNATURE" {
		return true
	}
	for _, w := range scrubWords {
		if up == w && w != "PWD" {
			return true
		}
	}
	return false
}

// URLCredentials returns the credentials a URL carries in the clear: the
// password of its user information, with the base64 of "user:password"
// that Go's HTTP client sends for it as a Basic Authorization header, and
// the values of query parameters whose names look like credentials
// (?api_key=, ?access_token=, ?sig=).
func URLCredentials(raw string) []string {
	raw = strings.TrimSpace(raw)
	var out []string
	if scheme, rest, ok := strings.Cut(raw, "://"); ok && validScheme(scheme) {
		out = userinfoCredentials(rest)
	}
	u, err := url.Parse(raw)
	if err != nil {
		return out
	}
	for name, vals := range u.Query() {
		if credentialName(name) {
			out = append(out, vals...)
		}
	}
	return out
}

// userinfoCredentials returns the credentials in the user information of a
// URL, given the text after its "://": the password as written and
// percent-decoded, and the base64 of "user:password" (decoded, as Go's
// net/http computes the Basic Authorization header it sends for such a URL)
// in the standard and URL-safe alphabets, padded or not. Read as Go's
// url.Parse reads it: the authority ends at the first "/", "?" or "#", and
// the user information at its last "@". A URL Go would refuse (an invalid
// port, say) gives up its password all the same: its parse error quotes it.
func userinfoCredentials(rest string) []string {
	if end := strings.IndexAny(rest, "/?#"); end >= 0 {
		rest = rest[:end]
	}
	at := strings.LastIndex(rest, "@")
	if at < 0 {
		return nil
	}
	user, pw, ok := strings.Cut(rest[:at], ":")
	if !ok {
		return nil
	}
	out := []string{pw}
	if u, err := url.PathUnescape(user); err == nil {
		user = u
	}
	if p, err := url.PathUnescape(pw); err == nil && p != pw {
		pw = p
		out = append(out, pw)
	}
	basic := []byte(user + ":" + pw)
	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.RawStdEncoding, base64.URLEncoding, base64.RawURLEncoding} {
		if b := enc.EncodeToString(basic); !slices.Contains(out, b) {
			out = append(out, b)
		}
	}
	return out
}

// validScheme reports whether s is a URL scheme: a letter, then letters,
// digits, "+", "-" or ".".
func validScheme(s string) bool {
	if s == "" || !isLetter(s[0]) {
		return false
	}
	for i := 1; i < len(s); i++ {
		if !schemeByte(s[i]) {
			return false
		}
	}
	return true
}

func isLetter(c byte) bool { return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' }

func schemeByte(c byte) bool {
	return isLetter(c) || '0' <= c && c <= '9' || c == '+' || c == '-' || c == '.'
}

// ArgCredentials returns the credentials a command line carries: the value
// of a flag whose name looks like a credential (--api-key=V, --token V,
// -password=V; never a one-letter flag such as -p, usually a port), of a
// NAME=V argument whose NAME the scrub table matches (docker's -e
// GITHUB_TOKEN=V), of a header "Name: V" named like a credential
// ("X-Api-Key: V"), and, anywhere inside any argument (a flag's value, a
// header, a JSON object), the credentials of URLs (--db=mysql://u:pw@h/db)
// and the token after "Bearer " or "Basic " ([authTokens]).
func ArgCredentials(args []string) []string {
	var out []string
	for _, sp := range argCredentialSpans(args) {
		out = append(out, strings.TrimSpace(args[sp.arg][sp.from:]))
	}
	for _, a := range args {
		for _, u := range urlsIn(a) {
			out = append(out, URLCredentials(u)...)
		}
		out = append(out, authTokens(a)...)
	}
	return out
}

// argSpan is a credential a command line holds by its place: the end of
// argument arg from byte from (0: all of it).
type argSpan struct{ arg, from int }

// argCredentialSpans finds, in order, the values of flags named like a
// credential (--api-key=V, --token V; never a one-letter flag), of NAME=V
// with a NAME of the scrub table, and of a header "Name: V" named like a
// credential, alone or as a flag's value (-H "X-Api-Key: V",
// --header=X-Api-Key: V): what ArgCredentials returns and RedactArgs masks.
func argCredentialSpans(args []string) []argSpan {
	var out []argSpan
	header := func(i, at int) { // a header "Name: V" at args[i][at:]
		colon := at + strings.IndexByte(args[i][at:], ':') + 1
		for colon < len(args[i]) && args[i][colon] == ' ' {
			colon++
		}
		out = append(out, argSpan{i, colon})
	}
	for i, a := range args {
		if strings.HasPrefix(a, "-") {
			name, val, hasVal := strings.Cut(strings.TrimLeft(a, "-"), "=")
			eq := strings.IndexByte(a, '=') + 1
			switch {
			case hasVal && isCredentialHeader(val):
				header(i, eq)
			case len(name) < 2 || !credentialName(name):
			case hasVal:
				out = append(out, argSpan{i, eq})
			case i+1 < len(args) && !strings.HasPrefix(args[i+1], "-"):
				out = append(out, argSpan{i + 1, 0})
			}
		} else if name, _, ok := strings.Cut(a, "="); ok && !strings.ContainsAny(name, " /:") && Sensitive(name) {
			out = append(out, argSpan{i, len(name) + 1})
		} else if isCredentialHeader(a) {
			header(i, 0)
		}
	}
	return out
}

// urlsIn returns the URLs inside text: each "scheme://" and what follows it
// up to a space, a quote or an angle bracket.
func urlsIn(text string) []string {
	var out []string
	for i := 0; ; {
		j := strings.Index(text[i:], "://")
		if j < 0 {
			return out
		}
		j += i
		start := j
		for start > i && schemeByte(text[start-1]) {
			start--
		}
		for start < j && !isLetter(text[start]) {
			start++
		}
		end := j + 3
		for end < len(text) && !strings.ContainsRune(" \t\r\n\"'<>`", rune(text[end])) {
			end++
		}
		if start < j {
			out = append(out, text[start:end])
		}
		i = j + 3
	}
}

// authTokens returns the credentials after the words "Bearer" and "Basic"
// (in any case) inside text: a header passed as an argument ("Authorization:
// Bearer T"), alone, or inside JSON. The token is what RFC 6750 allows
// (letters, digits, "-._~+/", then "="), at least [MinLen] bytes, and not a
// word of lower-case letters ("Basic authentication").
func authTokens(text string) []string {
	var out []string
	for i := 0; i < len(text); i++ {
		if i > 0 && (isLetter(text[i-1]) || '0' <= text[i-1] && text[i-1] <= '9') {
			continue
		}
		for _, word := range []string{"bearer", "basic"} {
			j := i + len(word)
			if j >= len(text) || !equalFoldASCII(text[i:j], word) || text[j] != ' ' && text[j] != '\t' {
				continue
			}
			for j < len(text) && (text[j] == ' ' || text[j] == '\t') {
				j++
			}
			k := j
			for k < len(text) && (schemeByte(text[k]) || strings.IndexByte("_~/", text[k]) >= 0) {
				k++
			}
			for k < len(text) && text[k] == '=' {
				k++
			}
			if tok := text[j:k]; len(tok) >= MinLen && strings.Trim(tok, "abcdefghijklmnopqrstuvwxyz") != "" {
				out = append(out, tok)
			}
		}
	}
	return out
}

// equalFoldASCII reports whether s is lower, a word of lower-case ASCII
// letters, in any case.
func equalFoldASCII(s, lower string) bool {
	for i := 0; i < len(s); i++ {
		if s[i]|0x20 != lower[i] {
			return false
		}
	}
	return true
}

// RedactArgs returns a command line with what [ArgCredentials] finds by
// its place replaced by [Mask], whatever its length: the value of a flag
// named like a credential (--password hunter2, --api-key=abc), of NAME=V
// with a NAME of the scrub table, of a header "X-Api-Key: V", and the
// password and credential query values of a URL in any argument. A short
// value is no secret to look for in free text ([MinLen]), but here its
// place says what it is. Tokens after "Bearer " are left to the set.
func RedactArgs(args []string) []string {
	out := slices.Clone(args)
	for _, sp := range argCredentialSpans(args) {
		out[sp.arg] = args[sp.arg][:sp.from] + Mask
	}
	for i, a := range args {
		if out[i] == a {
			for _, u := range urlsIn(a) {
				out[i] = strings.Replace(out[i], u, RedactURL(u), 1)
			}
		}
	}
	return out
}

// RedactURL returns raw with the password of its user information and the
// values of its query parameters named like credentials replaced by
// [Mask], whatever their length; the rest as written.
func RedactURL(raw string) string {
	scheme, rest, ok := strings.Cut(raw, "://")
	if !ok || !validScheme(scheme) {
		return raw
	}
	end := len(rest)
	if e := strings.IndexAny(rest, "/?#"); e >= 0 {
		end = e
	}
	if at := strings.LastIndex(rest[:end], "@"); at >= 0 {
		if user, _, ok := strings.Cut(rest[:at], ":"); ok {
			rest = user + ":" + Mask + rest[at:]
		}
	}
	q := strings.IndexByte(rest, '?')
	if q < 0 {
		return scheme + "://" + rest
	}
	query, frag, hasFrag := strings.Cut(rest[q+1:], "#")
	params := strings.Split(query, "&")
	for j, p := range params {
		name, _, ok := strings.Cut(p, "=")
		if n, err := url.QueryUnescape(name); err == nil {
			name = n
		}
		if ok && credentialName(name) {
			params[j] = p[:strings.IndexByte(p, '=')+1] + Mask
		}
	}
	out := scheme + "://" + rest[:q+1] + strings.Join(params, "&")
	if hasFrag {
		out += "#" + frag
	}
	return out
}

// isCredentialHeader reports whether a is a header "Name: V" named like a
// credential, its name a header field's token (RFC 9110: letters, digits,
// "!#$%&'*+-.^_`|~"; not JSON's {"Authorization").
func isCredentialHeader(a string) bool {
	name, _, ok := strings.Cut(a, ":")
	if !ok || name == "" {
		return false
	}
	for i := 0; i < len(name); i++ {
		if c := name[i]; !isLetter(c) && (c < '0' || c > '9') && !strings.ContainsRune("!#$%&'*+-.^_`|~", rune(c)) {
			return false
		}
	}
	return credentialName(name)
}
