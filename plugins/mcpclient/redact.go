package mcpclient

import (
	"sort"
	"strings"
)

// minSecret is the shortest value treated as a secret: shorter ones would
// blank out ordinary words.
const minSecret = 4

// redactor hides the values of an entry's env and headers in text of ours
// that may repeat them: a server's stderr, an error message.
type redactor struct {
	secrets []string // longest first, so a value is hidden before its parts
}

func newRedactor(maps ...map[string]string) *redactor {
	seen := map[string]bool{}
	r := &redactor{}
	add := func(v string) {
		v = strings.TrimSpace(v)
		if len(v) >= minSecret && !seen[v] {
			seen[v] = true
			r.secrets = append(r.secrets, v)
		}
	}
	for _, m := range maps {
		for _, v := range m {
			add(v)
			// "Bearer <token>", "Basic <credentials>": the credential alone
			// may be echoed too.
			if _, cred, ok := strings.Cut(v, " "); ok {
				add(cred)
			}
		}
	}
	sort.Slice(r.secrets, func(i, j int) bool { return len(r.secrets[i]) > len(r.secrets[j]) })
	return r
}

// text returns s with every secret value replaced by <redacted>.
func (r *redactor) text(s string) string {
	if r == nil {
		return s
	}
	for _, v := range r.secrets {
		if strings.Contains(s, v) {
			s = strings.ReplaceAll(s, v, "<redacted>")
		}
	}
	return s
}

// err returns err with its message redacted; errors.Is and As still see the
// original chain.
func (r *redactor) err(err error) error {
	if err == nil || r == nil {
		return err
	}
	msg := err.Error()
	if red := r.text(msg); red != msg {
		return &redactedError{msg: red, err: err}
	}
	return err
}

type redactedError struct {
	msg string
	err error
}

func (e *redactedError) Error() string { return e.msg }
func (e *redactedError) Unwrap() error { return e.err }
