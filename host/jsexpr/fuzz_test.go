package jsexpr

import (
	"errors"
	"strings"
	"testing"
	"unicode/utf8"
)

// fuzzSeeds are starting inputs for the fuzz targets: valid expressions of
// every form and near misses.
var fuzzSeeds = []string{
	"process.env.A",
	"process.env['a-b']",
	`process.env["A"]`,
	"process.cwd()",
	"process.execPath",
	"`${process.execPath} x`",
	"'str\\n\\x41\\u{1F600}\\uD83D\\uDE00'",
	`"dq \' \" \0 \b \f \v \\"`,
	"`t ${process.env.A} ${`n ${'x'}`} \\` \\$ $ ${process.cwd()}`",
	"process.env.A ?? process.env.B ?? 'c'",
	"process.env.A || ''",
	"(process.env.A ?? 'x') || (process.env.B || 'y')",
	"`a\r\nb\\\r\nc`",
	"require('fs')",
	"process.env.A + 'b'",
	"process.exit()",
	"process.env",
	"'unterminated",
	"`a ${",
	"process.env.A; x",
	"42",
	"// comment",
	"'\\u{110000}'",
	"((((('x')))))",
	"\ufeff process\u2028.env .A",
	"'\xff'",
}

// fuzzEnv is the environment the fuzz targets evaluate against: A is set, E
// is empty, everything else is unset, except that the lookup also answers
// for names starting with "S".
var fuzzEnv = Env{
	Lookup: func(name string) (string, bool) {
		switch {
		case name == "A":
			return "a", true
		case name == "E":
			return "", true
		case strings.HasPrefix(name, "S"):
			return "s:" + name, true
		}
		return "", false
	},
	Cwd:      "/cwd",
	ExecPath: "/exe",
}

func FuzzParse(f *testing.F) {
	for _, s := range fuzzSeeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, src string) {
		e, err := Parse(src)
		if err != nil {
			var se *SyntaxError
			if !errors.As(err, &se) {
				t.Fatalf("Parse(%q) error %T, not *SyntaxError", src, err)
			}
			if se.Offset < 0 || se.Offset > len(src) {
				t.Fatalf("Parse(%q) error offset %d out of range", src, se.Offset)
			}
			if line, col := position(src, se.Offset); line != se.Line || col != se.Column {
				t.Fatalf("Parse(%q): offset %d is %d:%d, error says %d:%d", src, se.Offset, line, col, se.Line, se.Column)
			}
			if _, err2 := Parse(src); err2.Error() != err.Error() {
				t.Fatalf("Parse(%q) not deterministic: %v then %v", src, err, err2)
			}
			return
		}
		// Eval never panics, with or without variables.
		e.Eval(fuzzEnv)
		e.Eval(Env{})
		s := e.String()
		if !utf8.ValidString(s) || strings.ContainsAny(s, "\n\r") {
			t.Fatalf("String() of %q = %q: not one valid UTF-8 line", src, s)
		}
		again, err := Parse(s)
		if err != nil {
			t.Fatalf("Parse(%q) succeeded but its String() %q does not parse: %v", src, s, err)
		}
		if s2 := again.String(); s2 != s {
			t.Fatalf("String() not canonical for %q:\n%s\n%s", src, s, s2)
		}
	})
}

// FuzzEval checks that the canonical form means the same thing: it reads
// the same variables and evaluates to the same result.
func FuzzEval(f *testing.F) {
	for _, s := range fuzzSeeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, src string) {
		e, err := Parse(src)
		if err != nil {
			return
		}
		again, err := Parse(e.String())
		if err != nil {
			t.Fatalf("Parse(String()) of %q: %v", src, err)
		}
		if a, b := strings.Join(e.Vars(), "\x00"), strings.Join(again.Vars(), "\x00"); a != b {
			t.Fatalf("Vars differ for %q: %q vs %q", src, e.Vars(), again.Vars())
		}
		for _, env := range []Env{fuzzEnv, {}} {
			v1, ok1, err1 := e.Eval(env)
			v2, ok2, err2 := again.Eval(env)
			if v1 != v2 || ok1 != ok2 || errString(err1) != errString(err2) {
				t.Fatalf("Eval differs for %q and %q: (%q, %v, %v) vs (%q, %v, %v)", src, e, v1, ok1, err1, v2, ok2, err2)
			}
			if err1 != nil && (v1 != "" || ok1) {
				t.Fatalf("Eval(%q) = %q, %v with error %v", src, v1, ok1, err1)
			}
		}
	})
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}
