package mcpservers

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"

	"gopkg.in/yaml.v3"

	"github.com/harness-go/harness/host/jsexpr"
	"github.com/harness-go/harness/internal/safe"
)

// weird are values with characters a terminal or a YAML reader takes for
// something else: C0 and C1 controls, DEL, line separators, the
// bidirectional overrides and other format characters.
var weird = []string{
	"a\x07b", "x\x1b[31mred", "a\tb\rc", "two\nlines", "a\x7fb", "a\u0085b",
	"a\u2028b\u2029c", "a\u202eb\u2066c", "a\u200bb\ufeffc\u00add", "a\u009bb",
	"tag\U000e0041", "👩\u200d💻", "a \x01 b: c # d", "\x02",
}

// rawControl reports the first character of out that must not reach a
// terminal or a YAML reader raw: everything safe.Line escapes but the
// newlines that lay the file out (and the joiner it keeps).
func rawControl(out []byte) (rune, bool) {
	for len(out) > 0 {
		r, size := utf8.DecodeRune(out)
		if r == utf8.RuneError && size == 1 ||
			r != '\n' && (unicode.IsControl(r) || unicode.Is(unicode.Cf, r) && r != 0x200d || r == 0x2028 || r == 0x2029) {
			return r, true
		}
		out = out[size:]
	}
	return 0, false
}

// The entries of servers whose name, command, args, env and cwd hold
// control and format characters are valid YAML without one of them raw,
// read back as the same values, and load in cordis.yml.
func TestEntriesEscape(t *testing.T) {
	for i, w := range weird {
		q, _ := json.Marshal(w)
		inner := string(q[1 : len(q)-1])
		data := fmt.Sprintf(`{"mcpServers": {"s%d%s": {"command": %s, "args": [%s, "-v"], "env": {"K%s": %s, "T": "x${Y}%s"}, "cwd": "/d%s"}}}`,
			i, inner, q, q, inner, q, inner, inner)
		f, err := Parse("a.json", []byte(data), Options{})
		if err != nil {
			t.Fatalf("%q: %v", w, err)
		}
		out, problems := Entries([]*File{f})
		if len(problems) > 0 {
			t.Fatalf("%q: %v", w, problems)
		}
		if r, ok := rawControl(out); ok {
			t.Errorf("%q: a raw %U in the output:\n%s", w, r, out)
		}
		var back []struct {
			ID     string
			Config struct {
				Command string
				Args    []string
				Env     map[string]yaml.Node
				Cwd     string
			}
		}
		if err := yaml.Unmarshal(out, &back); err != nil || len(back) != 1 {
			t.Fatalf("%q: %v\n%s", w, err, out)
		}
		c := back[0].Config
		if c.Command != w || len(c.Args) != 2 || c.Args[0] != w || c.Env["K"+w].Value != w || c.Cwd != "/d"+w {
			t.Errorf("%q: read back %+v\n%s", w, c, out)
		}
		// The template that mixes text and a variable evaluates to both.
		tmpl := c.Env["T"]
		x, err := jsexpr.Parse(tmpl.Value)
		if tmpl.Tag != "!!js" || err != nil {
			t.Fatalf("%q: T is %s %q: %v", w, tmpl.Tag, tmpl.Value, err)
		}
		if v, _, err := x.Eval(mapEnv(map[string]string{"Y": "y"})); v != "xy"+w || err != nil {
			t.Errorf("%q: T evaluates to %q, %v", w, v, err)
		}
		if first, _, _ := strings.Cut(string(out), "\n"); first != fmt.Sprintf("# s%d%s: from a.json (claude-desktop)", i, safe.Line(w)) {
			t.Errorf("%q: the head comment is %q", w, first)
		}
		checkLoads(t, f)
	}
}

// A NUL in what starts the program cannot be passed to exec: the server
// is left out, naming it and the field; the file's other servers are not.
func TestNULRefused(t *testing.T) {
	for _, tc := range []struct{ server, want string }{
		{`{"command": "c\u0000d"}`, `server "bad": command: holds a NUL byte (\0): no program can be started with one`},
		{`{"command": "x", "args": ["-v", "a\u0000"]}`, `server "bad": args[1]: holds a NUL byte`},
		{`{"command": "x", "env": {"A": "${V:-\u0000}"}}`, `server "bad": env.A: holds a NUL byte`},
		{`{"command": "x", "env": {"A\u0000": "1"}}`, `server "bad": env: the name "A\x00" holds a NUL byte`},
		{`{"command": "x", "cwd": "/\u0000"}`, `server "bad": cwd: holds a NUL byte`},
	} {
		f, err := Parse("a.json", []byte(`{"mcpServers": {"ok": {"command": "x"}, "bad": `+tc.server+`}}`), Options{})
		if err != nil {
			t.Fatal(err)
		}
		out, problems := Entries([]*File{f})
		if len(problems) != 1 || !strings.Contains(problems[0].Error(), tc.want) {
			t.Errorf("%s: problems %v, want %q", tc.server, problems, tc.want)
		}
		if !strings.Contains(string(out), "id: ok\n") || strings.Contains(string(out), "bad") {
			t.Errorf("%s: output\n%s", tc.server, out)
		}
	}
	// Codex reads the same way.
	f, err := Parse("config.toml", []byte("[mcp_servers.bad]\ncommand = \"c\\u0000d\"\n"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, problems := Entries([]*File{f}); len(problems) != 1 || !strings.Contains(problems[0].Error(), "command: holds a NUL byte") {
		t.Errorf("codex: problems %v", problems)
	}
}
