package mcpclient

import (
	"crypto/sha256"
	"encoding/hex"
	"regexp"
	"strings"
	"testing"
	"unicode/utf16"
)

// contract is the function-name contract of the model APIs.
var contract = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)

func TestPublicNameVectors(t *testing.T) {
	t.Parallel()
	// The vectors docs/rfc/0003-mcp-client.md ("Names") lists, every one
	// exactly.
	for _, tc := range []struct {
		name, server, raw, want string
	}{
		{"clean", "github", "create_issue", "mcp__github__create_issue"},
		{"dotted", "srv", "admin.reset", "mcp__srv__admin_reset_3b185f786768"},
		{"dotted on a short server", "gh", "a.b", "mcp__gh__a_b_506b5e9b51cb"},
		{"exactly 64 characters", "srv", strings.Repeat("x", 54), "mcp__srv__" + strings.Repeat("x", 54)},
		{"65 characters are truncated and hashed", "srv", strings.Repeat("x", 55), "mcp__srv__" + strings.Repeat("x", 41) + "_89af8a8d1d28"},
		{"non-ASCII letter", "srv", "héllo", "mcp__srv__h_llo_69aafb962afa"},
		{"astral character counts as two UTF-16 units", "srv", "😀x", "mcp__srv____x_ade70fbfc98a"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got := PublicName(tc.server, tc.raw)
			if got != tc.want {
				t.Fatalf("PublicName(%q, %q) = %q, want %q", tc.server, tc.raw, got, tc.want)
			}
			if !contract.MatchString(got) {
				t.Fatalf("%q breaks the function-name contract", got)
			}
			if len(got) > 64 {
				t.Fatalf("%q is %d characters", got, len(got))
			}
			if s, ok := ServerOf(got); !ok || s != tc.server {
				t.Fatalf("ServerOf(%q) = %q, %v; want %q", got, s, ok, tc.server)
			}
		})
	}
}

// jsPublicName is the seeds' TypeScript function transcribed literally with
// JavaScript's string model: a string is a sequence of UTF-16 code units,
// .length and .slice count units, and the regular expression (without the u
// flag) replaces one unit at a time.
func jsPublicName(serverName, rawName string) string {
	joined := utf16.Encode([]rune("mcp__" + serverName + "__" + rawName))
	normalized := make([]uint16, len(joined))
	same := true
	for i, u := range joined {
		if u < 0x80 && allowed(rune(u)) {
			normalized[i] = u
		} else {
			normalized[i] = '_'
			same = false
		}
	}
	if same && len(normalized) <= 64 {
		return string(utf16.Decode(normalized))
	}
	sum := sha256.Sum256([]byte(serverName + "\x00" + rawName))
	keep := normalized
	if len(keep) > 64-13 {
		keep = keep[:64-13]
	}
	return string(utf16.Decode(keep)) + "_" + hex.EncodeToString(sum[:])[:12]
}

func TestPublicNameUTF16(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, server, raw, want string
	}{
		// One character above U+FFFF is two UTF-16 units: two underscores.
		{"emoji", "srv", "😀", ""},
		{"two emoji", "srv", "😀😀", ""},
		{"musical symbol", "srv", "play_𝄞", ""},
		{"CJK in the BMP is one unit", "srv", "搜索", ""},
		{"combining mark", "srv", "e\u0301", ""},
		{"zero-width joiner sequence", "srv", "👩\u200d💻", ""},
		{"astral characters at the truncation point", "srv", strings.Repeat("x", 40) + "😀😀😀", ""},
		{"astral character straddling the truncation point", "srv", strings.Repeat("x", 40) + "a😀b", ""},
		{"long and non-ASCII", "srv", strings.Repeat("é", 80), ""},
		{"a space", "srv", "two words", ""},
		{"a slash", "srv", "fs/read", ""},
		{"a colon", "srv", "ns:tool", ""},
		{"a hyphen is allowed", "srv", "get-forecast", "mcp__srv__get-forecast"},
		{"uppercase is allowed", "srv", "ReadFile", "mcp__srv__ReadFile"},
		{"underscores are kept", "srv", "__x__", "mcp__srv____x__"},
		{"empty raw name", "srv", "", "mcp__srv__"},
		{"a NUL", "srv", "a\x00b", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got := PublicName(tc.server, tc.raw)
			if want := jsPublicName(tc.server, tc.raw); got != want {
				t.Fatalf("PublicName(%q, %q) = %q; the JavaScript original gives %q", tc.server, tc.raw, got, want)
			}
			if tc.want != "" && got != tc.want {
				t.Fatalf("PublicName(%q, %q) = %q, want %q", tc.server, tc.raw, got, tc.want)
			}
			if !contract.MatchString(got) {
				t.Fatalf("%q breaks the function-name contract", got)
			}
		})
	}
	// The emoji vector, spelled out: 😀 is U+1F600, the surrogate pair
	// D83D DE00.
	if got := PublicName("srv", "😀"); !strings.HasPrefix(got, "mcp__srv____") || len(got) != len("mcp__srv____")+13 {
		t.Fatalf("PublicName(srv, 😀) = %q", got)
	}
}

func TestPublicNameInvalidUTF8(t *testing.T) {
	t.Parallel()
	// A raw name off the wire is always valid UTF-8 (encoding/json replaces
	// bad bytes with U+FFFD), but PublicName must still be total: every byte
	// that is not valid UTF-8 becomes one "_", and the hash covers the bytes
	// as they are, so two different byte strings never share a name.
	hash := func(server, raw string) string {
		sum := sha256.Sum256([]byte(server + "\x00" + raw))
		return hex.EncodeToString(sum[:])[:12]
	}
	for _, tc := range []struct {
		name, raw, want string
	}{
		{"one bad byte", "a\xffb", "mcp__srv__a_b" + "_" + hash("srv", "a\xffb")},
		{"two bad bytes", "\xff\xfe", "mcp__srv____" + "_" + hash("srv", "\xff\xfe")},
		{"truncated sequence", "x\xe2\x82", "mcp__srv__x__" + "_" + hash("srv", "x\xe2\x82")},
		{"encoded surrogate", "\xed\xa0\x80", "mcp__srv_____" + "_" + hash("srv", "\xed\xa0\x80")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got := PublicName("srv", tc.raw)
			if got != tc.want {
				t.Fatalf("PublicName(srv, %q) = %q, want %q", tc.raw, got, tc.want)
			}
			if !contract.MatchString(got) {
				t.Fatalf("%q breaks the contract", got)
			}
			if got == PublicName("srv", strings.ToValidUTF8(tc.raw, "\uFFFD")) {
				t.Fatalf("%q and its repaired form share a name", tc.raw)
			}
		})
	}
}

func TestPublicNameIsAPureFunction(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ server, raw string }{
		{"github", "search"}, {"web", "search"}, {"srv", "admin.reset"}, {"gh", strings.Repeat("long", 40)},
	} {
		a, b := PublicName(tc.server, tc.raw), PublicName(tc.server, tc.raw)
		if a != b {
			t.Fatalf("PublicName(%q, %q) gave %q, then %q", tc.server, tc.raw, a, b)
		}
	}
	// Two servers publishing the same raw name never share a public name.
	if PublicName("github", "search") == PublicName("web", "search") {
		t.Fatal("github/search and web/search collide")
	}
}

func TestPublicPlain(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		server, raw string
		rewritten   bool
	}{
		{"github", "create_issue", false},
		{"srv", "admin.reset", true},
		{"srv", strings.Repeat("x", 54), false},
		{"srv", strings.Repeat("x", 55), true},
	} {
		plain := PublicPlain(tc.server, tc.raw)
		if plain != "mcp__"+tc.server+"__"+tc.raw {
			t.Fatalf("PublicPlain(%q, %q) = %q", tc.server, tc.raw, plain)
		}
		if got := PublicName(tc.server, tc.raw) != plain; got != tc.rewritten {
			t.Fatalf("(%q, %q): rewritten = %v, want %v", tc.server, tc.raw, got, tc.rewritten)
		}
	}
}

func TestServerOf(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		public, server string
		ok             bool
	}{
		{"mcp__github__create_issue", "github", true},
		{"mcp__a-b__x", "a-b", true},
		{"mcp__a_b__x", "a_b", true},
		{"mcp__a_b___x", "a_b", true}, // raw name "_x"
		{"mcp__srv____x_ade70fbfc98a", "srv", true},
		{"mcp__srv__", "srv", true},
		{"search", "", false},
		{"mcp_github__x", "", false},
		{"mcp__github", "", false},
		{"mcp____x", "", false},
	} {
		s, ok := ServerOf(tc.public)
		if s != tc.server || ok != tc.ok {
			t.Errorf("ServerOf(%q) = %q, %v; want %q, %v", tc.public, s, ok, tc.server, tc.ok)
		}
	}
}

// validServerName is the configuration rule for serverName (see
// Config.Validate).
func validServerName(s string) bool {
	return serverNamePattern.MatchString(s) && !strings.Contains(s, "__") &&
		!strings.HasPrefix(s, "_") && !strings.HasSuffix(s, "_")
}

func FuzzPublicName(f *testing.F) {
	for _, s := range [][4]string{
		{"github", "create_issue", "web", "create_issue"},
		{"srv", "admin.reset", "srv", "admin_reset_3b185f786768"},
		{"gh", "a.b", "gh", "a_b_506b5e9b51cb"}, // the collision the seeds accept, and detect
		{"srv", strings.Repeat("x", 54), "srv", strings.Repeat("x", 55)},
		{"srv", "héllo", "srv", "h_llo"},
		{"srv", "😀x", "srv", "__x"},
		{"a", "b__c", "a__b", "c"}, // why serverName may not contain "__"
		{"a_", "b", "a", "_b"},     // why serverName may not end with "_"
		{"x", "\xff", "x", "\xfe"},
		{"", "", "-", "-"},
		{strings.Repeat("s", 32), strings.Repeat("r", 128), strings.Repeat("s", 32), strings.Repeat("r", 127)},
	} {
		f.Add(s[0], s[1], s[2], s[3])
	}
	f.Fuzz(func(t *testing.T, s1, r1, s2, r2 string) {
		p1 := PublicName(s1, r1)
		if !contract.MatchString(p1) {
			t.Fatalf("PublicName(%q, %q) = %q breaks the function-name contract", s1, r1, p1)
		}
		if again := PublicName(s1, r1); again != p1 {
			t.Fatalf("PublicName(%q, %q) is not deterministic: %q then %q", s1, r1, p1, again)
		}
		if p1 != jsPublicName(s1, r1) {
			t.Fatalf("PublicName(%q, %q) = %q; the JavaScript original gives %q", s1, r1, p1, jsPublicName(s1, r1))
		}
		if !validServerName(s1) || !validServerName(s2) {
			return
		}
		if s, ok := ServerOf(p1); !ok || s != s1 {
			t.Fatalf("ServerOf(%q) = %q, %v; want %q", p1, s, ok, s1)
		}
		p2 := PublicName(s2, r2)
		if p1 != p2 || (s1 == s2 && r1 == r2) {
			return
		}
		// Two different tools share a name. Names that were not rewritten
		// are the joined strings themselves, which are unambiguous for valid
		// serverNames; two rewritten names end with the hashes of two
		// different identities. So exactly one of them was rewritten: the
		// case the seeds leave to the "listed more than once" check.
		rewritten1 := p1 != PublicPlain(s1, r1)
		rewritten2 := p2 != PublicPlain(s2, r2)
		if rewritten1 == rewritten2 {
			t.Fatalf("(%q, %q) and (%q, %q) both become %q (rewritten: %v, %v)", s1, r1, s2, r2, p1, rewritten1, rewritten2)
		}
	})
}

// The status claims the names of its own server, names another server's,
// and says nothing of a name outside mcp__<server>__.
func TestStatusClaimsItsServersNames(t *testing.T) {
	s := &Status{ServerName: "gh"}
	for _, c := range []struct {
		name, who string
		mine      bool
	}{
		{"mcp__gh__search", `serverName "gh"`, true},
		{"mcp__fs__read", `serverName "fs"`, false},
		{"greet", "", false},
	} {
		if who, mine := s.ClaimTool(c.name); who != c.who || mine != c.mine {
			t.Errorf("ClaimTool(%q) = %q, %v; want %q, %v", c.name, who, mine, c.who, c.mine)
		}
	}
}

// allowed is the function-name alphabet, for the transcription above.
func allowed(r rune) bool {
	return r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' || r == '-'
}
