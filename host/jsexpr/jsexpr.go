package jsexpr

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"unicode"
)

// Env supplies the values an expression can read.
type Env struct {
	Lookup func(name string) (string, bool) // nil means: no variable is set
	Cwd    string                           // the value of process.cwd(); empty makes process.cwd() fail with ErrNoCwd
	// ExecPath is the value of process.execPath: the running program's
	// executable (as Node's is node's). Empty makes process.execPath fail
	// with ErrNoExecPath.
	ExecPath string
}

// OSEnv returns an Env reading this process's environment (os.LookupEnv),
// working directory (os.Getwd) and executable (os.Executable). What cannot
// be determined is empty, and reading it fails (ErrNoCwd, ErrNoExecPath).
func OSEnv() Env {
	wd, _ := os.Getwd() // on error wd is "", reported by Eval as ErrNoCwd
	return Env{Lookup: os.LookupEnv, Cwd: wd, ExecPath: Executable()}
}

// Executable returns the running program's executable, symlinks resolved,
// or "" when it cannot be determined.
func Executable() string {
	p, err := os.Executable()
	if err != nil {
		return ""
	}
	if r, err := filepath.EvalSymlinks(p); err == nil {
		p = r
	}
	return p
}

// ErrNoCwd is returned by Eval when the expression calls process.cwd() and
// Env.Cwd is empty.
var ErrNoCwd = errors.New("process.cwd() is not available: no working directory given (Env.Cwd is empty)")

// ErrNoExecPath is returned by Eval when the expression reads
// process.execPath and Env.ExecPath is empty.
var ErrNoExecPath = errors.New("process.execPath is not available: the program's executable could not be determined")

// UnsetError is returned by Eval when an unset variable reaches a position
// that needs a string: a template literal substitution.
type UnsetError struct {
	Name string // the environment variable name
}

func (e *UnsetError) Error() string {
	return fmt.Sprintf("%s is not set (used in a template literal)", envRef(e.Name))
}

// Expr is a parsed expression; it is immutable and safe for concurrent use.
// The zero Expr is not valid: obtain one from Parse.
type Expr struct {
	root node
	vars []string // sorted, unique
}

// Eval evaluates e. ok=false means the value is undefined (a bare unset
// variable, or ?? / || falling through to an unset variable): the caller
// then leaves the key out. A template literal that meets an unset variable
// fails with an *UnsetError naming it, e.g. `process.env.MCP_TOKEN is not
// set (used in a template literal)`; process.cwd() with an empty Env.Cwd
// fails with ErrNoCwd. The text "undefined" is never produced. When err is
// non-nil, value is "" and ok is false.
func (e *Expr) Eval(env Env) (value string, ok bool, err error) {
	value, ok, _, err = e.root.eval(&env)
	if err != nil {
		return "", false, err
	}
	return value, ok, nil
}

// Vars lists the environment variable names e reads, sorted, without
// duplicates. It reports every name in e, including names that evaluation
// may skip by short-circuiting. The caller owns the returned slice.
func (e *Expr) Vars() []string { return slices.Clone(e.vars) }

// String returns a canonical source form that Parse accepts and that means
// the same thing: single-quoted strings, process.env.NAME whenever NAME is
// an ASCII identifier, no redundant parentheses, one space around ?? and ||,
// and escapes for line breaks and other non-printable characters, so the
// result is one line.
func (e *Expr) String() string {
	var b strings.Builder
	e.root.format(&b)
	return b.String()
}

// node is an expression tree node.
type node interface {
	// eval returns the value, or ok=false for undefined; unset then names
	// the variable whose absence made it undefined.
	eval(env *Env) (val string, ok bool, unset string, err error)
	format(b *strings.Builder)
}

// envVar is process.env.NAME.
type envVar struct{ name string }

func (n *envVar) eval(env *Env) (string, bool, string, error) {
	if env.Lookup != nil {
		if v, ok := env.Lookup(n.name); ok {
			return v, true, "", nil
		}
	}
	return "", false, n.name, nil
}

func (n *envVar) format(b *strings.Builder) { b.WriteString(envRef(n.name)) }

// envRef is the canonical source form of a reference to variable name.
// EnvRef is how a message names the variable name: process.env.NAME, or
// process.env['NAME'] when it is not an identifier.
func EnvRef(name string) string { return envRef(name) }

func envRef(name string) string {
	if isASCIIIdent(name) {
		return "process.env." + name
	}
	return "process.env[" + quote(name) + "]"
}

// cwdNode is process.cwd().
type cwdNode struct{}

func (cwdNode) eval(env *Env) (string, bool, string, error) {
	if env.Cwd == "" {
		return "", false, "", ErrNoCwd
	}
	return env.Cwd, true, "", nil
}

func (cwdNode) format(b *strings.Builder) { b.WriteString("process.cwd()") }

// execPathNode is process.execPath.
type execPathNode struct{}

func (execPathNode) eval(env *Env) (string, bool, string, error) {
	if env.ExecPath == "" {
		return "", false, "", ErrNoExecPath
	}
	return env.ExecPath, true, "", nil
}

func (execPathNode) format(b *strings.Builder) { b.WriteString("process.execPath") }

// strLit is a string literal.
type strLit struct{ val string }

func (n *strLit) eval(*Env) (string, bool, string, error) { return n.val, true, "", nil }

func (n *strLit) format(b *strings.Builder) { b.WriteString(quote(n.val)) }

// tmpl is a template literal: texts[0] subs[0] texts[1] ... texts[len(subs)].
type tmpl struct {
	texts []string
	subs  []node
}

func (n *tmpl) eval(env *Env) (string, bool, string, error) {
	var b strings.Builder
	b.WriteString(n.texts[0])
	for i, sub := range n.subs {
		v, ok, unset, err := sub.eval(env)
		if err != nil {
			return "", false, "", err
		}
		if !ok {
			return "", false, "", &UnsetError{Name: unset}
		}
		b.WriteString(v)
		b.WriteString(n.texts[i+1])
	}
	return b.String(), true, "", nil
}

func (n *tmpl) format(b *strings.Builder) {
	b.WriteByte('`')
	writeEscaped(b, n.texts[0], '`')
	for i, sub := range n.subs {
		b.WriteString("${")
		sub.format(b)
		b.WriteByte('}')
		writeEscaped(b, n.texts[i+1], '`')
	}
	b.WriteByte('`')
}

// opKind is a binary operator.
type opKind uint8

const (
	opNullish opKind = iota // ??
	opOr                    // ||
)

func (op opKind) String() string {
	if op == opNullish {
		return "??"
	}
	return "||"
}

// chain is a left-associative chain of one operator: a ?? b ?? c.
type chain struct {
	op       opKind
	operands []node // at least two
}

// add appends n, splicing in the operands of a parenthesised chain of the
// same operator: (a ?? b) ?? c and a ?? (b ?? c) both mean a ?? b ?? c.
func (c *chain) add(n node) {
	if inner, ok := n.(*chain); ok && inner.op == c.op {
		c.operands = append(c.operands, inner.operands...)
		return
	}
	c.operands = append(c.operands, n)
}

func (c *chain) eval(env *Env) (val string, ok bool, unset string, err error) {
	for _, n := range c.operands {
		val, ok, unset, err = n.eval(env)
		if err != nil || ok && (c.op == opNullish || val != "") {
			break
		}
	}
	return val, ok, unset, err
}

func (c *chain) format(b *strings.Builder) {
	for i, n := range c.operands {
		if i > 0 {
			b.WriteString(" " + c.op.String() + " ")
		}
		if _, nested := n.(*chain); nested {
			b.WriteByte('(')
			n.format(b)
			b.WriteByte(')')
			continue
		}
		n.format(b)
	}
}

// quote returns s as a single-quoted JavaScript string literal.
func quote(s string) string {
	var b strings.Builder
	b.WriteByte('\'')
	writeEscaped(&b, s, '\'')
	b.WriteByte('\'')
	return b.String()
}

// writeEscaped writes s as the body of a literal delimited by delim ('\” or
// '`'), escaping the delimiter, backslashes, "${" in templates, and every
// non-printable character.
func writeEscaped(b *strings.Builder, s string, delim rune) {
	for i, r := range s {
		switch {
		case r == '\\' || r == delim:
			b.WriteByte('\\')
			b.WriteRune(r)
		case r == '$' && delim == '`' && strings.HasPrefix(s[i+1:], "{"):
			b.WriteString(`\$`)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\r':
			b.WriteString(`\r`)
		case r == '\t':
			b.WriteString(`\t`)
		case unicode.IsPrint(r):
			b.WriteRune(r)
		case r < 0x100:
			fmt.Fprintf(b, `\x%02X`, r)
		case r < 0x10000:
			fmt.Fprintf(b, `\u%04X`, r)
		default:
			fmt.Fprintf(b, `\u{%X}`, r)
		}
	}
}
