// Package mcpname is the naming algorithm of the names a server's tools and
// prompts are published under: "mcp__<serverName>__<rawName>", normalized to
// the function-name contract of the model APIs (docs/rfc/0003-mcp-client.md,
// "Names"). The tools bridge (plugins/mcpclient) and the prompts service
// (plugins/prompts) both use it, so the two kinds of names never drift apart.
package mcpname

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
	"unicode/utf8"
)

// Prefix starts every public name.
const Prefix = "mcp__"

// maxNameLen is the function-name limit of the model APIs.
const maxNameLen = 64

// hashLen is how many hex digits of the SHA-256 identity a rewritten name
// carries.
const hashLen = 12

// Public returns "mcp__<serverName>__<rawName>" normalized to
// [A-Za-z0-9_-], at most 64 characters. When normalizing changes anything,
// a hash of (serverName, rawName) is appended, so two different names never
// meet by accident.
//
// It reproduces the TypeScript original exactly, including JavaScript's
// UTF-16 semantics: every UTF-16 code unit outside the allowed set becomes
// one "_", so a character above U+FFFF (two code units) becomes "__".
func Public(serverName, rawName string) string {
	joined := Prefix + serverName + "__" + rawName
	var b strings.Builder
	b.Grow(len(joined))
	for _, r := range joined {
		switch {
		case allowed(r):
			b.WriteRune(r)
		case r > 0xFFFF:
			b.WriteString("__")
		default:
			b.WriteByte('_')
		}
	}
	normalized := b.String()
	if normalized == joined && len(normalized) <= maxNameLen {
		return normalized
	}
	sum := sha256.Sum256([]byte(serverName + "\x00" + rawName))
	keep := maxNameLen - hashLen - 1
	if len(normalized) < keep {
		keep = len(normalized)
	}
	return normalized[:keep] + "_" + hex.EncodeToString(sum[:])[:hashLen]
}

func allowed(r rune) bool {
	return r < utf8.RuneSelf && (r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' || r == '-')
}

// ServerOf returns the serverName part of a public name. The hardening of
// serverName (no "__", no leading or trailing "_", at most 32 characters)
// makes the first "__" after the prefix the separator, and keeps it inside
// the 51 characters that survive truncation.
func ServerOf(public string) (string, bool) {
	rest, ok := strings.CutPrefix(public, Prefix)
	if !ok {
		return "", false
	}
	server, _, ok := strings.Cut(rest, "__")
	if !ok || server == "" {
		return "", false
	}
	return server, true
}

// Valid reports whether name keeps the function-name contract as it is:
// 1 to 64 characters of [A-Za-z0-9_-]. A native tool's or prompt's name,
// which is published unchanged, must.
func Valid(name string) bool {
	if name == "" || len(name) > maxNameLen {
		return false
	}
	for i := 0; i < len(name); i++ {
		if !allowed(rune(name[i])) {
			return false
		}
	}
	return true
}
