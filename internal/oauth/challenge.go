package oauth

import (
	"net/http"
	"strings"
)

// Challenge is what a server's 401 or 403 says about OAuth: the Bearer or
// DPoP challenge of its WWW-Authenticate header (RFC 6750 §3, RFC 9728
// §5.1, RFC 9449 §7.1).
type Challenge struct {
	// ResourceMetadata is the URL of the protected resource metadata.
	ResourceMetadata string
	// Scopes the server asks for (scope=), in its order.
	Scopes []string
	// Error is the error code (invalid_token, insufficient_scope, …).
	Error string
	// Description is error_description, as the server wrote it.
	Description string
	// Header is the whole header, for messages.
	Header string
	// DPoP is set when the server offers the DPoP scheme (alone, or beside
	// Bearer): it takes DPoP-bound tokens.
	DPoP bool
}

// ParseChallenge reads the OAuth challenge of the WWW-Authenticate headers
// of h: its Bearer and DPoP challenges, each field from the first that
// has it; ok is false when there is none.
func ParseChallenge(h http.Header) (c *Challenge, ok bool) {
	values := h.Values("WWW-Authenticate")
	for _, v := range values {
		for _, ch := range splitChallenges(v) {
			dpop := strings.EqualFold(ch.scheme, "dpop")
			if !dpop && !strings.EqualFold(ch.scheme, "bearer") {
				continue
			}
			if c == nil {
				c = &Challenge{Header: strings.Join(values, ", ")}
			}
			// Bearer and DPoP side by side: what the first leaves out,
			// the next may say.
			if c.ResourceMetadata == "" {
				c.ResourceMetadata = ch.params["resource_metadata"]
			}
			if len(c.Scopes) == 0 {
				c.Scopes = strings.Fields(ch.params["scope"])
			}
			if c.Error == "" {
				c.Error, c.Description = ch.params["error"], ch.params["error_description"]
			}
			c.DPoP = c.DPoP || dpop
		}
	}
	return c, c != nil
}

// dpop reports whether the challenge offers the DPoP scheme.
func (c *Challenge) dpop() bool { return c != nil && c.DPoP }

// UseDPoPNonce reports a DPoP challenge that asks for a proof with the
// server's nonce (RFC 9449 §9).
func (c *Challenge) UseDPoPNonce() bool { return c != nil && c.Error == "use_dpop_nonce" }

// OAuth reports whether the challenge carries OAuth metadata: a
// resource_metadata URL, or any Bearer challenge at all (a server of
// 2025-03-26 names none: its metadata is at its root).
func (c *Challenge) OAuth() bool { return c != nil }

// InsufficientScope reports a 403's step-up challenge.
func (c *Challenge) InsufficientScope() bool { return c != nil && c.Error == "insufficient_scope" }

type rawChallenge struct {
	scheme string
	params map[string]string
}

// splitChallenges parses one WWW-Authenticate value (RFC 9110 §11.6.1):
// challenges separated by commas, each a scheme followed by auth-params
// (name=token or name="quoted string") or a token68.
func splitChallenges(v string) []rawChallenge {
	var out []rawChallenge
	var cur *rawChallenge
	i := 0
	skipSpace := func() {
		for i < len(v) && (v[i] == ' ' || v[i] == '\t') {
			i++
		}
	}
	token := func() string {
		start := i
		for i < len(v) && !strings.ContainsRune(" \t,=\"", rune(v[i])) {
			i++
		}
		return v[start:i]
	}
	for i < len(v) {
		skipSpace()
		if i < len(v) && v[i] == ',' {
			i++
			continue
		}
		name := token()
		if name == "" {
			i++ // a stray character
			continue
		}
		skipSpace()
		if i < len(v) && v[i] == '=' && cur != nil && !strings.HasPrefix(v[i:], "==") {
			// name=value, a parameter of the current challenge
			i++
			skipSpace()
			var val string
			if i < len(v) && v[i] == '"' {
				i++
				var b strings.Builder
				for i < len(v) && v[i] != '"' {
					if v[i] == '\\' && i+1 < len(v) {
						i++
					}
					b.WriteByte(v[i])
					i++
				}
				i++ // the closing quote
				val = b.String()
			} else {
				val = token()
			}
			cur.params[strings.ToLower(name)] = val
			continue
		}
		if cur != nil && len(cur.params) == 0 && i < len(v) && v[i] == '=' {
			// a token68 (padding '='s): not a parameter; skip it
			for i < len(v) && v[i] == '=' {
				i++
			}
			continue
		}
		// a new challenge: name is its scheme
		out = append(out, rawChallenge{scheme: name, params: map[string]string{}})
		cur = &out[len(out)-1]
	}
	return out
}
