package jsexpr

import (
	"errors"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
)

// envOf returns an Env whose variables are vars and whose Cwd is "/work".
func envOf(vars map[string]string) Env {
	return Env{
		Lookup: func(name string) (string, bool) {
			v, ok := vars[name]
			return v, ok
		},
		Cwd:      "/work",
		ExecPath: "/opt/bin/harness",
	}
}

func TestEval(t *testing.T) {
	t.Parallel()
	vars := map[string]string{
		"A":         "a",
		"B":         "b",
		"EMPTY":     "",
		"MCP_TOKEN": "tok",
		"a-b":       "dash",
		"$x_1":      "dollar",
		"if":        "keyword",
		"é":         "accent",
	}
	tests := []struct {
		name   string
		src    string
		want   string
		wantOK bool
	}{
		// process.env
		{"dotted", "process.env.A", "a", true},
		{"dotted unset", "process.env.UNSET", "", false},
		{"dotted empty", "process.env.EMPTY", "", true},
		{"dotted dollar underscore digit", "process.env.$x_1", "dollar", true},
		{"dotted keyword name", "process.env.if", "keyword", true},
		{"bracket single", "process.env['a-b']", "dash", true},
		{"bracket double", `process.env["a-b"]`, "dash", true},
		{"bracket identifier name", "process.env['A']", "a", true},
		{"bracket non-ASCII", "process.env['é']", "accent", true},
		{"bracket escaped name", `process.env['\x41']`, "a", true},
		{"bracket unset", "process.env['NOPE']", "", false},
		{"whitespace everywhere", " \t\n process \n. env\r\n[ 'A' ] ", "a", true},
		{"unicode whitespace", "\ufeff\u00a0process\u2028.\u2029env\u3000.A\u205f", "a", true},
		// process.cwd()
		{"cwd", "process.cwd()", "/work", true},
		{"cwd spaced", "process . cwd ( )", "/work", true},
		// process.execPath
		{"execPath", "process.execPath", "/opt/bin/harness", true},
		{"execPath in template", "`${process.execPath} mcp-demo`", "/opt/bin/harness mcp-demo", true},
		{"execPath fallback", "process.env.UNSET ?? process.execPath", "/opt/bin/harness", true},
		// literals
		{"single quoted", "'hello'", "hello", true},
		{"double quoted", `"hello"`, "hello", true},
		{"empty string", "''", "", true},
		{"other quote inside", `"it's"`, "it's", true},
		{"raw control and LS", "'a\x01\u2028b'", "a\x01\u2028b", true},
		{"non-ASCII", "'grüße 😀'", "grüße 😀", true},
		// templates
		{"template plain", "`hello`", "hello", true},
		{"template empty", "``", "", true},
		{"template substitution", "`x${process.env.A}y`", "xay", true},
		{"template only substitution", "`${process.env.A}`", "a", true},
		{"template adjacent substitutions", "`${process.env.A}${process.env.B}`", "ab", true},
		{"template cwd", "`${process.cwd()}/data`", "/work/data", true},
		{"template nested", "`<${`[${process.env.A}]`}>`", "<[a]>", true},
		{"template with string", "`${'q'}`", "q", true},
		{"template with default", "`Bearer ${process.env.UNSET ?? 'none'}`", "Bearer none", true},
		{"template empty variable", "`[${process.env.EMPTY}]`", "[]", true},
		{"template spaced substitution", "`${ process.env.A\n}`", "a", true},
		{"template dollar alone", "`$ $$ $A {}`", "$ $$ $A {}", true},
		{"template dollar before substitution", "`$${process.env.A}`", "$a", true},
		{"template quotes", "`'\"`", "'\"", true},
		{"template raw LF", "`a\nb`", "a\nb", true},
		{"template raw CRLF", "`a\r\nb`", "a\nb", true},
		{"template raw CR", "`a\rb`", "a\nb", true},
		{"template raw LS", "`a\u2028b`", "a\u2028b", true},
		// ??
		{"nullish set", "process.env.A ?? 'x'", "a", true},
		{"nullish unset", "process.env.UNSET ?? 'x'", "x", true},
		{"nullish empty kept", "process.env.EMPTY ?? 'x'", "", true},
		{"nullish chain", "process.env.U1 ?? process.env.U2 ?? process.env.B", "b", true},
		{"nullish all unset", "process.env.U1 ?? process.env.U2", "", false},
		{"nullish short-circuits", "'x' ?? `${process.env.UNSET}`", "x", true},
		{"nullish no spaces", "process.env.UNSET??'x'", "x", true},
		// ||
		{"or set", "process.env.A || 'x'", "a", true},
		{"or unset", "process.env.UNSET || 'x'", "x", true},
		{"or empty", "process.env.EMPTY || 'x'", "x", true},
		{"or empty last", "process.env.UNSET || ''", "", true},
		{"or empty then unset", "process.env.EMPTY || process.env.UNSET", "", false},
		{"or chain", "'' || process.env.EMPTY || process.env.B || 'z'", "b", true},
		{"or short-circuits", "'x' || process.cwd() || `${process.env.UNSET}`", "x", true},
		// grouping and mixing
		{"parens", "(process.env.A)", "a", true},
		{"deep parens", "((((('x')))))", "x", true},
		{"nullish then or", "(process.env.EMPTY ?? 'x') || 'y'", "y", true},
		{"or then nullish", "(process.env.UNSET || process.env.U2) ?? 'y'", "y", true},
		{"nullish of or", "process.env.UNSET ?? (process.env.EMPTY || 'z')", "z", true},
		{"right-nested nullish", "process.env.U1 ?? (process.env.U2 ?? 'c')", "c", true},
		{"group in template", "`${(process.env.A || 'x')}`", "a", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			e, err := Parse(tt.src)
			if err != nil {
				t.Fatalf("Parse(%q): %v", tt.src, err)
			}
			got, ok, err := e.Eval(envOf(vars))
			if err != nil || got != tt.want || ok != tt.wantOK {
				t.Errorf("Eval(%q) = %q, %v, %v; want %q, %v, <nil>", tt.src, got, ok, err, tt.want, tt.wantOK)
			}
		})
	}
}

func TestEscapes(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		escape string // written between the quotes
		want   string
	}{
		{"newline", `\n`, "\n"},
		{"carriage return", `\r`, "\r"},
		{"tab", `\t`, "\t"},
		{"backspace", `\b`, "\b"},
		{"form feed", `\f`, "\f"},
		{"vertical tab", `\v`, "\v"},
		{"NUL", `\0`, "\x00"},
		{"NUL then letter", `\0a`, "\x00a"},
		{"backslash", `\\`, `\`},
		{"single quote", `\'`, "'"},
		{"double quote", `\"`, `"`},
		{"hex", `\x41\x7e`, "A~"},
		{"hex high", `\xe9\xFF`, "éÿ"},
		{"unicode 4", `\u00e9\u20AC`, "é€"},
		{"unicode braces", `\u{41}\u{1F600}\u{0000000041}`, "A😀A"},
		{"unicode max", `\u{10FFFF}`, "\U0010FFFF"},
		{"surrogate pair", `\uD83D\uDE00`, "😀"},
		{"surrogate pair braces", `\u{D83D}\u{DE00}`, "😀"},
		{"continuation LF", "a\\\nb", "ab"},
		{"continuation CRLF", "a\\\r\nb", "ab"},
		{"continuation CR", "a\\\rb", "ab"},
		{"continuation LS", "a\\\u2028b", "ab"},
		{"continuation PS", "a\\\u2029b", "ab"},
	}
	for _, tt := range tests {
		for _, quote := range []string{"'", `"`, "`"} {
			t.Run(tt.name+" "+quote, func(t *testing.T) {
				t.Parallel()
				src := quote + tt.escape + quote
				e, err := Parse(src)
				if err != nil {
					t.Fatalf("Parse(%q): %v", src, err)
				}
				if got, ok, err := e.Eval(Env{}); got != tt.want || !ok || err != nil {
					t.Errorf("Eval(%q) = %q, %v, %v; want %q", src, got, ok, err, tt.want)
				}
			})
		}
	}
}

func TestTemplateOnlyEscapes(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		src  string
		want string
	}{
		{"backtick", "`\\``", "`"},
		{"dollar", "`\\$`", "$"},
		{"escaped substitution", "`\\${process.env.A}`", "${process.env.A}"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			e, err := Parse(tt.src)
			if err != nil {
				t.Fatalf("Parse(%q): %v", tt.src, err)
			}
			if got, ok, err := e.Eval(Env{}); got != tt.want || !ok || err != nil {
				t.Errorf("Eval(%q) = %q, %v, %v; want %q", tt.src, got, ok, err, tt.want)
			}
		})
	}
}

func TestEvalErrors(t *testing.T) {
	t.Parallel()
	env := envOf(map[string]string{"A": "a", "EMPTY": ""})
	tests := []struct {
		name    string
		src     string
		env     Env
		want    string
		unset   string // the UnsetError's Name, if any
		wantCwd bool   // errors.Is(err, ErrNoCwd)
	}{
		{"template unset", "`Bearer ${process.env.MCP_TOKEN}`", env,
			"process.env.MCP_TOKEN is not set (used in a template literal)", "MCP_TOKEN", false},
		{"template unset bracket", "`${process.env['my-token']}`", env,
			"process.env['my-token'] is not set (used in a template literal)", "my-token", false},
		{"template unset after set", "`${process.env.A}${process.env.B}`", env,
			"process.env.B is not set (used in a template literal)", "B", false},
		{"template nullish falls through", "`${process.env.X ?? process.env.Y}`", env,
			"process.env.Y is not set (used in a template literal)", "Y", false},
		{"template or falls through", "`${process.env.EMPTY || process.env.Z}`", env,
			"process.env.Z is not set (used in a template literal)", "Z", false},
		{"nested template unset", "process.env.X ?? `a${`b${process.env.Q}`}`", env,
			"process.env.Q is not set (used in a template literal)", "Q", false},
		{"nil Lookup", "`${process.env.A}`", Env{},
			"process.env.A is not set (used in a template literal)", "A", false},
		{"cwd missing", "process.cwd()", Env{},
			ErrNoCwd.Error(), "", true},
		{"cwd missing in template", "`${process.cwd()}`", Env{},
			ErrNoCwd.Error(), "", true},
		{"cwd missing in chain", "process.env.X ?? process.cwd()", Env{},
			ErrNoCwd.Error(), "", true},
		{"execPath missing", "process.execPath", Env{},
			ErrNoExecPath.Error(), "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			e, err := Parse(tt.src)
			if err != nil {
				t.Fatalf("Parse(%q): %v", tt.src, err)
			}
			got, ok, err := e.Eval(tt.env)
			if err == nil || err.Error() != tt.want || got != "" || ok {
				t.Fatalf("Eval(%q) = %q, %v, %v; want error %q", tt.src, got, ok, err, tt.want)
			}
			var ue *UnsetError
			if errors.As(err, &ue) != (tt.unset != "") || ue != nil && ue.Name != tt.unset {
				t.Errorf("Eval(%q) error %#v; want UnsetError for %q", tt.src, err, tt.unset)
			}
			if errors.Is(err, ErrNoCwd) != tt.wantCwd {
				t.Errorf("errors.Is(%v, ErrNoCwd) = %v; want %v", err, !tt.wantCwd, tt.wantCwd)
			}
			if strings.Contains(err.Error(), "undefined") {
				t.Errorf("error %q mentions undefined", err)
			}
		})
	}
}

func TestSyntaxErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		src       string
		line, col int
		msg       string
	}{
		// What the subset leaves out.
		{"require", "require('fs')", 1, 1, `unsupported expression "require(...)"`},
		{"require spaced", "  require ('fs')", 1, 3, `unsupported expression "require(...)"`},
		{"identifier", "undefined", 1, 1, `unsupported expression "undefined"`},
		{"non-ASCII identifier", "café", 1, 1, `unsupported expression "café"`},
		{"process alone", "process", 1, 1, `unsupported expression "process"`},
		{"process bracket", "process['env']", 1, 1, `unsupported expression "process"`},
		{"process.exit", "process.exit()", 1, 1, `unsupported expression "process.exit(...)"`},
		{"process.argv", "process.argv", 1, 1, `unsupported expression "process.argv"`},
		{"process.argv index", "process.argv[0]", 1, 1, `unsupported expression "process.argv"`},
		{"process dot nothing", "process.", 1, 9, `expected a property name after "process.", found end of input`},
		{"process dot string", "process.'env'", 1, 9, `expected a property name after "process.", found string`},
		{"process.env", "process.env", 1, 1, `"process.env" needs a variable name: write process.env.NAME or process.env['NAME']`},
		{"process.env in chain", "process.env ?? 'x'", 1, 1, `"process.env" needs a variable name: write process.env.NAME or process.env['NAME']`},
		{"process.env optional", "process.env?.A", 1, 1, `"process.env" needs a variable name: write process.env.NAME or process.env['NAME']`},
		{"process.env dot nothing", "process.env.", 1, 13, `expected a variable name after "process.env.", found end of input (a name that is not an identifier needs process.env['NAME'])`},
		{"process.env digit name", "process.env.1A", 1, 13, `expected a variable name after "process.env.", found "1A" (a name that is not an identifier needs process.env['NAME'])`},
		{"process.env non-ASCII name", "process.env.café", 1, 13, `variable name "café" is not ASCII; write process.env['café']`},
		{"process.env bracket identifier", "process.env[A]", 1, 13, `expected a quoted variable name inside process.env[...], found "A"`},
		{"process.env bracket template", "process.env[`A`]", 1, 13, "expected a quoted variable name inside process.env[...], found template string"},
		{"process.env bracket unclosed", "process.env['A'", 1, 16, `expected "]" to close "[" at 1:12, found end of input`},
		{"process.env bracket paren", "process.env['A')", 1, 16, `expected "]" to close "[" at 1:12, found ")"`},
		{"process.env bracket concat", "process.env['A' + 'B']", 1, 17, `unsupported operator "+"`},
		{"process.env empty name", "process.env['']", 1, 13, `empty environment variable name`},
		{"process.env name with =", "process.env['A=B']", 1, 13, `environment variable name "A=B" cannot contain "=" or NUL`},
		{"process.env name with NUL", `process.env['A\0']`, 1, 13, `environment variable name "A\x00" cannot contain "=" or NUL`},
		{"process.env.A member", "process.env.A.length", 1, 14, `unsupported member access "."`},
		{"process.env.A optional member", "process.env.A?.x", 1, 14, `unsupported member access "?."`},
		{"process.env.A index", "process.env.A[0]", 1, 14, `unsupported member access "["`},
		{"process.env.A call", "process.env.A()", 1, 14, `unsupported function call (only process.cwd() can be called)`},
		{"process.cwd uncalled", "process.cwd", 1, 1, `process.cwd must be called: write process.cwd()`},
		{"process.cwd argument", "process.cwd('x')", 1, 13, `process.cwd() takes no arguments`},
		{"process.cwd unclosed", "process.cwd(", 1, 13, `expected ")" to close "(" at 1:12, found end of input`},
		{"process.cwd wrong closer", "process.cwd(]", 1, 13, `expected ")" to close "(" at 1:12, found "]"`},
		{"process.cwd member", "process.cwd().length", 1, 14, `unsupported member access "."`},
		{"process.execPath called", "process.execPath()", 1, 1, `process.execPath is not a function: write process.execPath`},
		{"process.execPath member", "process.execPath.length", 1, 17, `unsupported member access "."`},
		{"string method", "'a'.toUpperCase()", 1, 4, `unsupported member access "."`},
		{"tagged template", "process.env.A`x`", 1, 14, `unsupported tagged template`},
		{"plus", "process.env.A + 'b'", 1, 15, `unsupported operator "+"`},
		{"and", "process.env.A && 'b'", 1, 15, `unsupported operator "&&"`},
		{"conditional", "process.env.A ? 'a' : 'b'", 1, 15, `unsupported operator "?"`},
		{"strict equality", "process.env.A === 'b'", 1, 15, `unsupported operator "==="`},
		{"assignment", "process.env.A = 'b'", 1, 15, `unsupported operator "="`},
		{"nullish assignment", "process.env.A ??= 'b'", 1, 15, `unsupported operator "??="`},
		{"comma", "'a', 'b'", 1, 4, `unsupported operator ","`},
		{"unary minus", "-'a'", 1, 1, `expected an expression, found "-"`},
		{"not", "!process.env.A", 1, 1, `expected an expression, found "!"`},
		{"spread", "...process.env.A", 1, 1, `expected an expression, found "..."`},
		{"object literal", "{}", 1, 1, `expected an expression, found "{"`},
		{"semicolon", "process.env.A; x", 1, 14, `unexpected ";" (statements are not supported)`},
		{"trailing string", "'a' 'b'", 1, 5, `unexpected string after the end of the expression`},
		{"trailing identifier", "process.env.A\nx", 2, 1, `unexpected "x" after the end of the expression`},
		{"trailing number", "'a' 1", 1, 5, `unexpected "1" after the end of the expression`},
		{"trailing colon", "'a' :", 1, 5, `unexpected ":"`},
		{"trailing brace", "'a' {", 1, 5, `unexpected "{"`},
		{"stray closing paren", "'a')", 1, 4, `unexpected ")"`},
		{"stray closing bracket", "'a']", 1, 4, `unexpected "]"`},
		{"stray closing brace", "'a'}", 1, 4, `unexpected "}"`},
		{"number", "42", 1, 1, `unsupported expression "42" (numbers are not supported)`},
		{"hex number", "0x1F", 1, 1, `unsupported expression "0x1F" (numbers are not supported)`},
		{"float exponent", "1.5e+3", 1, 1, `unsupported expression "1.5e+3" (numbers are not supported)`},
		{"number minus", "1-2", 1, 1, `unsupported expression "1" (numbers are not supported)`},
		{"line comment", "process.env.A // token", 1, 15, `comments are not supported`},
		{"block comment", "/* x */ 'a'", 1, 1, `comments are not supported`},
		{"block comment after operator", "process.env.A ?? /* x */ 'a'", 1, 18, `comments are not supported`},
		{"division", "'a' / 'b'", 1, 5, `unsupported operator "/"`},
		{"hash", "#x", 1, 1, `unexpected character '#'`},
		{"at sign", "'a' ?? @x", 1, 8, `unexpected character '@'`},
		{"backslash outside string", `\u0041`, 1, 1, `unexpected character '\\'`},
		{"control character", "'a' \x01", 1, 5, `unexpected character '\x01'`},
		{"invalid UTF-8", "'a' \xff", 1, 5, `invalid UTF-8 byte 0xFF`},
		{"invalid UTF-8 in string", "'a\xc3'", 1, 3, `invalid UTF-8 byte 0xC3`},
		{"invalid UTF-8 in template", "`a\xfe`", 1, 3, `invalid UTF-8 byte 0xFE`},
		// Structure.
		{"empty", "", 1, 1, `empty expression`},
		{"blank", " \n\t", 2, 2, `empty expression`},
		{"empty parens", "()", 1, 2, `expected an expression, found ")"`},
		{"unclosed paren", "(process.env.A", 1, 15, `expected ")" to close "(" at 1:1, found end of input`},
		{"unclosed paren wrong closer", "(process.env.A]", 1, 15, `expected ")" to close "(" at 1:1, found "]"`},
		{"unclosed paren operator", "(process.env.A + 'b')", 1, 16, `unsupported operator "+"`},
		{"operator first", "?? 'a'", 1, 1, `expected an expression, found "??"`},
		{"operator last", "process.env.A ??", 1, 17, `expected an expression, found end of input`},
		{"operator twice", "'a' || || 'b'", 1, 8, `expected an expression, found "||"`},
		{"nullish then or", "process.env.A ?? process.env.B || 'c'", 1, 32, `cannot mix ?? and || without parentheses`},
		{"or then nullish", "process.env.A || process.env.B ?? 'c'", 1, 32, `cannot mix ?? and || without parentheses`},
		{"mixing inside parens", "('a' || ('b' ?? 'c') ?? 'd')", 1, 22, `cannot mix ?? and || without parentheses`},
		{"single pipe", "'a' | 'b'", 1, 5, `unsupported operator "|"`},
		// Literals.
		{"unterminated single", "'unterminated", 1, 1, `unterminated string literal`},
		{"unterminated double", `x ?? "abc`, 1, 1, `unsupported expression "x"`},
		{"unterminated after chain", `'a' ?? "abc`, 1, 8, `unterminated string literal`},
		{"unterminated at backslash", `'abc\`, 1, 1, `unterminated string literal`},
		{"line break in string", "'a\nb'", 1, 1, `unterminated string literal (a line break inside quotes must be written as \n)`},
		{"CR in string", "'a\rb'", 1, 1, `unterminated string literal (a line break inside quotes must be written as \n)`},
		{"unterminated template", "`abc", 1, 1, `unterminated template literal`},
		{"unterminated template at backslash", "`abc\\", 1, 1, `unterminated template literal`},
		{"unterminated template substitution", "`a ${", 1, 6, `expected an expression, found end of input`},
		{"unclosed substitution", "`a ${process.env.A", 1, 19, `expected "}" to close "${" at 1:4, found end of input`},
		{"unclosed substitution paren", "`a ${process.env.A)`", 1, 19, `expected "}" to close "${" at 1:4, found ")"`},
		{"unterminated after substitution", "`a ${process.env.A} b", 1, 1, `unterminated template literal`},
		{"unterminated nested template", "`a ${`b} c`", 1, 12, `expected "}" to close "${" at 1:4, found end of input`},
		{"invalid escape brace in template", "`$\\{x}`", 1, 3, `invalid escape sequence "\{" (a backslash itself is written \\)`},
		{"empty substitution", "`${}`", 1, 4, `expected an expression, found "}"`},
		{"operator in substitution", "`${process.env.A + 1}`", 1, 18, `unsupported operator "+"`},
		{"invalid escape letter", `'\a'`, 1, 2, `invalid escape sequence "\a" (a backslash itself is written \\)`},
		{"invalid escape slash", `'\/'`, 1, 2, `invalid escape sequence "\/" (a backslash itself is written \\)`},
		{"invalid escape backtick in string", "'\\`'", 1, 2, "invalid escape sequence \"\\`\" (a backslash itself is written \\\\)"},
		{"invalid escape dollar in string", `'\$'`, 1, 2, `invalid escape sequence "\$" (a backslash itself is written \\)`},
		{"invalid escape non-ASCII", `'\é'`, 1, 2, `invalid escape sequence "\é" (a backslash itself is written \\)`},
		{"invalid escape non-printable", "'\\\u200b'", 1, 2, `invalid escape sequence: backslash followed by U+200B`},
		{"invalid escape in template", "`\\q`", 1, 2, `invalid escape sequence "\q" (a backslash itself is written \\)`},
		{"invalid escape UTF-8", "'\\\xff'", 1, 3, `invalid UTF-8 byte 0xFF`},
		{"octal", `'\1'`, 1, 2, `invalid escape sequence "\1": octal escapes are not supported (use \x or \u)`},
		{"octal 8", `'\8'`, 1, 2, `invalid escape sequence "\8": octal escapes are not supported (use \x or \u)`},
		{"NUL then digit", `'\01'`, 1, 2, `invalid escape sequence "\01": octal escapes are not supported (use \x or \u)`},
		{"NUL then digit in template", "`\\00`", 1, 2, `invalid escape sequence "\00": octal escapes are not supported (use \x or \u)`},
		{"hex short", `'\x4'`, 1, 2, `invalid escape sequence: \x must be followed by two hexadecimal digits`},
		{"hex at end", `'\x`, 1, 2, `invalid escape sequence: \x must be followed by two hexadecimal digits`},
		{"hex bad", `'\xg0'`, 1, 2, `invalid escape sequence: \x must be followed by two hexadecimal digits`},
		{"unicode short", `'\u12'`, 1, 2, `invalid escape sequence: \u must be followed by four hexadecimal digits or {hex digits}`},
		{"unicode bad", `'\u12G4'`, 1, 2, `invalid escape sequence: \u must be followed by four hexadecimal digits or {hex digits}`},
		{"unicode braces empty", `'\u{}'`, 1, 2, `invalid escape sequence: \u{ must be followed by hexadecimal digits and }`},
		{"unicode braces unclosed", `'\u{41'`, 1, 2, `invalid escape sequence: \u{ must be followed by hexadecimal digits and }`},
		{"unicode braces at end", `'\u{41`, 1, 2, `invalid escape sequence: \u{ must be followed by hexadecimal digits and }`},
		{"unicode braces too large", `'\u{110000}'`, 1, 2, `invalid escape sequence: \u{...} is above the largest code point 10FFFF`},
		{"unicode braces huge", `'\u{FFFFFFFFFFFFFFFFFFFF}'`, 1, 2, `invalid escape sequence: \u{...} is above the largest code point 10FFFF`},
		{"lone high surrogate", `'\uD83D'`, 1, 2, `unpaired surrogate \uD83D in escape sequence`},
		{"lone high surrogate then text", `'\uD83Dx'`, 1, 2, `unpaired surrogate \uD83D in escape sequence`},
		{"high surrogate twice", `'\uD83D\uD83D'`, 1, 2, `unpaired surrogate \uD83D in escape sequence`},
		{"high surrogate then bad escape", `'\uD83D\uZ'`, 1, 8, `invalid escape sequence: \u must be followed by four hexadecimal digits or {hex digits}`},
		{"lone low surrogate", `'\uDE00'`, 1, 2, `unpaired surrogate \uDE00 in escape sequence`},
		{"lone low surrogate braces", `'\u{DE00}'`, 1, 2, `unpaired surrogate \u{DE00} in escape sequence`},
		// A lexical error is reported wherever the next token is read.
		{"bad character after paren", "(#", 1, 2, `unexpected character '#'`},
		{"bad character after substitution", "`${#}`", 1, 4, `unexpected character '#'`},
		{"bad character after process", "process#", 1, 8, `unexpected character '#'`},
		{"bad character after process dot", "process.#", 1, 9, `unexpected character '#'`},
		{"bad character after env", "process.env#", 1, 12, `unexpected character '#'`},
		{"bad character after env dot", "process.env.#", 1, 13, `unexpected character '#'`},
		{"bad character after bracket", "process.env[#", 1, 13, `unexpected character '#'`},
		{"bad character after bracket name", "process.env['A'#", 1, 16, `unexpected character '#'`},
		{"bad character after cwd", "process.cwd#", 1, 12, `unexpected character '#'`},
		{"bad character after cwd paren", "process.cwd(#", 1, 13, `unexpected character '#'`},
		{"bad character after operator", "'a' ?? #", 1, 8, `unexpected character '#'`},
		// Positions on later lines.
		{"second line", "process.env.A ??\n  require('x')", 2, 3, `unsupported expression "require(...)"`},
		{"CRLF lines", "'a' ??\r\n'b' ??\r\n  +", 3, 3, `expected an expression, found "+"`},
		{"CR lines", "'a' ??\r\r  +", 3, 3, `expected an expression, found "+"`},
		{"column in bytes", "'é' + 1", 1, 6, `unsupported operator "+"`},
		{"template line", "`a\nb ${process.env.A +", 2, 19, `unsupported operator "+"`},
		{"long token truncated", "'a' abcdefghijklmnopqrstuvwxyz", 1, 5, `unexpected "abcdefghijklmnopqrstuvwx…" after the end of the expression`},
		// A string may be a literal secret: it is named, never quoted.
		{"a second string is not quoted", "'Bearer x' 'sk-second-literal-secret-99'", 1, 12, `unexpected string after the end of the expression`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			e, err := Parse(tt.src)
			if err == nil {
				t.Fatalf("Parse(%q) = %v; want error", tt.src, e)
			}
			var se *SyntaxError
			if !errors.As(err, &se) {
				t.Fatalf("Parse(%q) error %T; want *SyntaxError", tt.src, err)
			}
			if se.Line != tt.line || se.Column != tt.col || se.Msg != tt.msg {
				t.Errorf("Parse(%q) = %d:%d: %s\nwant        %d:%d: %s", tt.src, se.Line, se.Column, se.Msg, tt.line, tt.col, tt.msg)
			}
			if line, col := position(tt.src, se.Offset); line != se.Line || col != se.Column {
				t.Errorf("Offset %d is at %d:%d, not %d:%d", se.Offset, line, col, se.Line, se.Column)
			}
			if e != nil {
				t.Errorf("Parse(%q) returned an Expr with an error", tt.src)
			}
		})
	}
}

func TestSyntaxErrorString(t *testing.T) {
	t.Parallel()
	_, err := Parse("require('fs')")
	want := `1:1: unsupported expression "require(...)"; supported: process.env.NAME, process.env['NAME'], 'string', ` +
		"`template ${…}`, a ?? b, a || b, process.cwd(), process.execPath"
	if err == nil || err.Error() != want {
		t.Errorf("Parse error = %v\nwant %s", err, want)
	}
	if !strings.HasSuffix(want, Supported) {
		t.Errorf("Supported = %q is not the tail of the message", Supported)
	}
}

func TestDepth(t *testing.T) {
	t.Parallel()
	parens := func(n int) string { return strings.Repeat("(", n) + "'x'" + strings.Repeat(")", n) }
	templates := func(n int) string {
		return strings.Repeat("`${", n) + "process.env.A" + strings.Repeat("}`", n)
	}
	mixed := func(n int) string { // alternating ( and `${
		var open, closing string
		for i := range n {
			if i%2 == 0 {
				open, closing = open+"(", ")"+closing
			} else {
				open, closing = open+"`${", "}`"+closing
			}
		}
		return open + "process.env.A" + closing
	}
	tests := []struct {
		name    string
		src     string
		wantErr string
	}{
		{"parens at limit", parens(maxDepth), ""},
		{"parens over limit", parens(maxDepth + 1), "1:65: expression nested too deeply (more than 64 levels of parentheses and ${…})"},
		{"templates at limit", templates(maxDepth), ""},
		{"templates over limit", templates(maxDepth + 1), "1:194: expression nested too deeply (more than 64 levels of parentheses and ${…})"},
		{"mixed at limit", mixed(maxDepth), ""},
		{"mixed over limit", mixed(maxDepth + 1), "1:129: expression nested too deeply (more than 64 levels of parentheses and ${…})"},
		{"sequential groups do not add up", strings.Repeat(parens(maxDepth)+" ?? ", 3) + "'y'", ""},
		{"long chain is not nesting", strings.Repeat("process.env.A ?? ", 10000) + "'y'", ""},
		{"hostile", strings.Repeat("(", 1<<20), "1:65: expression nested too deeply (more than 64 levels of parentheses and ${…})"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			e, err := Parse(tt.src)
			if tt.wantErr != "" {
				if err == nil || !strings.HasPrefix(err.Error(), tt.wantErr+"; supported: ") {
					t.Fatalf("Parse error = %v; want %s", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			if _, _, err := e.Eval(envOf(map[string]string{"A": "a"})); err != nil {
				t.Fatalf("Eval: %v", err)
			}
			if _, err := Parse(e.String()); err != nil {
				t.Fatalf("Parse(String()): %v", err)
			}
		})
	}
}

func TestString(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		src  string
		want string
	}{
		{"dotted", "process.env.A", "process.env.A"},
		{"spaced", " process . env . A ", "process.env.A"},
		{"bracket identifier becomes dotted", `process.env["A_1"]`, "process.env.A_1"},
		{"bracket keeps non-identifier", `process.env["a-b"]`, "process.env['a-b']"},
		{"bracket non-ASCII", `process.env["é"]`, "process.env['é']"},
		{"bracket digit first", `process.env['1A']`, "process.env['1A']"},
		{"cwd", "process . cwd ( )", "process.cwd()"},
		{"double quotes become single", `"it's \"q\""`, `'it\'s "q"'`},
		{"escapes normalised", `'\x41\u0042\u{43}\0\b\f\v\n\r\t\\'`, `'ABC\x00\x08\x0C\x0B\n\r\t\\'`},
		{"non-printable escaped", "'\u00a0\u2028\u200b\U000E0001'", `'\xA0\u2028\u200B\u{E0001}'`},
		{"printable kept", "'é😀'", "'é😀'"},
		{"continuation dropped", "'a\\\nb'", "'ab'"},
		{"template", "`a ${ process.env.A } b`", "`a ${process.env.A} b`"},
		{"template escapes", "`\\` \\${x} ${'$'}{ $ $$ \\\\ ' \"`", "`\\` \\${x} ${'$'}{ $ $$ \\\\ ' \"`"},
		{"template dollar before substitution", "`$${process.env.A}`", "`$${process.env.A}`"},
		{"template line breaks", "`a\r\nb\rc\nd`", "`a\\nb\\nc\\nd`"},
		{"template nested", "`${`${process.env.A}`}`", "`${`${process.env.A}`}`"},
		{"nullish", "process.env.A??'x'", "process.env.A ?? 'x'"},
		{"or", "process.env.A||'x'", "process.env.A || 'x'"},
		{"redundant parens", "((process.env.A))", "process.env.A"},
		{"left group flattened", "(process.env.A ?? process.env.B) ?? 'c'", "process.env.A ?? process.env.B ?? 'c'"},
		{"right group flattened", "process.env.A || (process.env.B || 'c')", "process.env.A || process.env.B || 'c'"},
		{"mixed group kept", "(process.env.A ?? 'x') || 'y'", "(process.env.A ?? 'x') || 'y'"},
		{"mixed group kept right", "'y' ?? (process.env.A || 'x')", "'y' ?? (process.env.A || 'x')"},
		{"group in template dropped", "`${(process.env.A ?? 'x')}`", "`${process.env.A ?? 'x'}`"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			e, err := Parse(tt.src)
			if err != nil {
				t.Fatalf("Parse(%q): %v", tt.src, err)
			}
			got := e.String()
			if got != tt.want {
				t.Errorf("String() = %s; want %s", got, tt.want)
			}
			again, err := Parse(got)
			if err != nil {
				t.Fatalf("Parse(%q): %v", got, err)
			}
			if again.String() != got {
				t.Errorf("String() of the reparse = %s; want %s", again.String(), got)
			}
		})
	}
}

func TestVars(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		src  string
		want []string
	}{
		{"none", "'x'", []string{}},
		{"cwd", "process.cwd()", []string{}},
		{"one", "process.env.A", []string{"A"}},
		{"sorted unique", "process.env.B ?? process.env['A'] ?? `${process.env.B}${process.env.a}`", []string{"A", "B", "a"}},
		{"short-circuited still listed", "'x' ?? process.env.Z", []string{"Z"}},
		{"bracket names", "process.env['a-b'] || process.env['é']", []string{"a-b", "é"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			e, err := Parse(tt.src)
			if err != nil {
				t.Fatalf("Parse(%q): %v", tt.src, err)
			}
			got := e.Vars()
			if !slices.Equal(got, tt.want) {
				t.Errorf("Vars() = %q; want %q", got, tt.want)
			}
			if len(got) > 0 {
				got[0] = "mutated"
				if e.Vars()[0] == "mutated" {
					t.Errorf("Vars() returned the Expr's own slice")
				}
			}
		})
	}
}

func TestOSEnv(t *testing.T) {
	t.Parallel()
	env := OSEnv()
	wd, err := os.Getwd()
	if err != nil || env.Cwd != wd {
		t.Errorf("OSEnv().Cwd = %q; want %q (%v)", env.Cwd, wd, err)
	}
	for _, kv := range os.Environ() {
		name, value, _ := strings.Cut(kv, "=")
		if name == "" {
			continue
		}
		if got, ok := env.Lookup(name); !ok || got != value {
			t.Errorf("OSEnv().Lookup(%q) = %q, %v; want %q, true", name, got, ok, value)
		}
		break
	}
}

func TestConcurrentEval(t *testing.T) {
	t.Parallel()
	e, err := Parse("`${process.env.A ?? 'x'}:${process.cwd()}`")
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			env := Env{Cwd: "/w"}
			want := "x:/w"
			if i%2 == 0 {
				env.Lookup = func(string) (string, bool) { return "v", true }
				want = "v:/w"
			}
			for range 100 {
				if got, ok, err := e.Eval(env); got != want || !ok || err != nil {
					t.Errorf("Eval = %q, %v, %v; want %q", got, ok, err, want)
					return
				}
				_ = e.String()
				_ = e.Vars()
			}
		})
	}
	wg.Wait()
}
