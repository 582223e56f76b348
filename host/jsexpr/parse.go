package jsexpr

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
)

// maxDepth bounds the nesting of parentheses and template substitutions, so
// that hostile input cannot exhaust the stack of the parser or evaluator.
const maxDepth = 64

// Supported lists the supported forms; every SyntaxError message ends with it.
const Supported = "process.env.NAME, process.env['NAME'], 'string', `template ${…}`, a ?? b, a || b, process.cwd(), process.execPath"

// SyntaxError reports where src stops being the supported subset.
type SyntaxError struct {
	Offset int    // byte offset into src where the problem starts
	Line   int    // 1-based line of Offset; LF, CR LF and a lone CR each end a line
	Column int    // 1-based column of Offset, counted in bytes from the start of its line
	Msg    string // what is wrong, e.g. `unsupported expression "require(...)"`
}

// Error returns "<line>:<col>: <msg>; supported: <Supported>".
func (e *SyntaxError) Error() string {
	return fmt.Sprintf("%d:%d: %s; supported: %s", e.Line, e.Column, e.Msg, Supported)
}

func newSyntaxError(src string, off int, format string, args ...any) *SyntaxError {
	line, col := position(src, off)
	return &SyntaxError{Offset: off, Line: line, Column: col, Msg: fmt.Sprintf(format, args...)}
}

// position converts a byte offset into a 1-based line and byte column.
func position(src string, off int) (line, col int) {
	line, lineStart := 1, 0
	for i := 0; i < off; i++ {
		switch src[i] {
		case '\r':
			if i+1 < len(src) && src[i+1] == '\n' {
				continue // the LF ends the line
			}
			fallthrough
		case '\n':
			line++
			lineStart = i + 1
		}
	}
	return line, off - lineStart + 1
}

// Parse parses src. On failure it returns a *SyntaxError.
func Parse(src string) (*Expr, error) {
	p := parser{s: scanner{src: src}, vars: map[string]bool{}}
	root, err := p.parse()
	if err != nil {
		return nil, err
	}
	vars := make([]string, 0, len(p.vars))
	for name := range p.vars {
		vars = append(vars, name)
	}
	slices.Sort(vars)
	return &Expr{root: root, vars: vars}, nil
}

// parser is a recursive-descent parser over the scanner's tokens with one
// token of lookahead (tok). The grammar:
//
//	expr    = primary { "??" primary } | primary { "||" primary }
//	primary = "(" expr ")" | string | template | process
//	process = "process" "." ( "env" ( "." name | "[" string "]" ) | "cwd" "(" ")" | "execPath" )
//	template = "`" text { "${" expr "}" text } "`"
type parser struct {
	s     scanner
	tok   token
	depth int
	vars  map[string]bool
}

func (p *parser) parse() (node, *SyntaxError) {
	if err := p.advance(); err != nil {
		return nil, err
	}
	if p.tok.kind == tEOF {
		return nil, p.s.errorf(p.tok.pos, "empty expression")
	}
	n, err := p.expr()
	if err != nil {
		return nil, err
	}
	if p.tok.kind != tEOF {
		return nil, p.unexpectedAfter()
	}
	return n, nil
}

func (p *parser) advance() *SyntaxError {
	t, err := p.s.next()
	if err != nil {
		return err
	}
	p.tok = t
	return nil
}

// is reports whether the current token is the punctuator text.
func (p *parser) is(text string) bool { return p.tok.kind == tPunct && p.tok.text == text }

// peekIs reports whether the token after the current one is the punctuator
// text, without consuming anything.
func (p *parser) peekIs(text string) bool {
	s := p.s
	t, err := s.next()
	return err == nil && t.kind == tPunct && t.text == text
}

// enter records one more level of nesting opened at offset at.
func (p *parser) enter(at int) *SyntaxError {
	if p.depth == maxDepth {
		return p.s.errorf(at, "expression nested too deeply (more than %d levels of parentheses and ${…})", maxDepth)
	}
	p.depth++
	return nil
}

func (p *parser) expr() (node, *SyntaxError) {
	first, err := p.primary()
	if err != nil {
		return nil, err
	}
	var op opKind
	switch {
	case p.is("??"):
		op = opNullish
	case p.is("||"):
		op = opOr
	default:
		return first, nil
	}
	c := &chain{op: op}
	c.add(first)
	for p.is(op.String()) {
		if err := p.advance(); err != nil {
			return nil, err
		}
		n, err := p.primary()
		if err != nil {
			return nil, err
		}
		c.add(n)
	}
	if p.is("??") || p.is("||") {
		return nil, p.s.errorf(p.tok.pos, "cannot mix ?? and || without parentheses")
	}
	return c, nil
}

func (p *parser) primary() (node, *SyntaxError) {
	switch t := p.tok; t.kind {
	case tString:
		return &strLit{val: t.val}, p.advance()
	case tTemplate:
		return p.template()
	case tIdent:
		if t.text == "process" {
			return p.process()
		}
		name := t.text
		if p.peekIs("(") {
			name += "(...)"
		}
		return nil, p.s.errorf(t.pos, "unsupported expression %q", name)
	case tNumber:
		return nil, p.s.errorf(t.pos, "unsupported expression %q (numbers are not supported)", t.text)
	}
	if !p.is("(") {
		return nil, p.s.errorf(p.tok.pos, "expected an expression, found %s", p.describe())
	}
	n, err := p.nested(p.tok.pos, "(", ")")
	if err != nil {
		return nil, err
	}
	return n, p.advance()
}

// nested parses the expression after an opening token at pos, up to its
// closing token, which stays current. Nesting counts towards the depth
// bound.
func (p *parser) nested(pos int, open, close string) (node, *SyntaxError) {
	if err := p.enter(pos); err != nil {
		return nil, err
	}
	if err := p.advance(); err != nil {
		return nil, err
	}
	n, err := p.expr()
	if err != nil {
		return nil, err
	}
	if err := p.expectClose(close, open, pos); err != nil {
		return nil, err
	}
	p.depth--
	return n, nil
}

// template parses a template literal; the current token is its first chunk.
func (p *parser) template() (node, *SyntaxError) {
	open := p.tok.pos
	t := &tmpl{texts: []string{p.tok.val}}
	for p.tok.more {
		n, err := p.nested(p.tok.end-len("${"), "${", "}")
		if err != nil {
			return nil, err
		}
		// The scanner stands just after the "}": read on as template text.
		if p.tok, err = p.s.templateChunk(open); err != nil {
			return nil, err
		}
		t.subs = append(t.subs, n)
		t.texts = append(t.texts, p.tok.val)
	}
	return t, p.advance()
}

// process parses what follows the identifier "process".
func (p *parser) process() (node, *SyntaxError) {
	start := p.tok.pos
	if err := p.advance(); err != nil {
		return nil, err
	}
	if !p.is(".") {
		return nil, p.s.errorf(start, "unsupported expression %q", "process")
	}
	if err := p.advance(); err != nil {
		return nil, err
	}
	if p.tok.kind != tIdent {
		return nil, p.s.errorf(p.tok.pos, `expected a property name after "process.", found %s`, p.describe())
	}
	switch p.tok.text {
	case "env":
		return p.env(start)
	case "cwd":
		return p.cwd(start)
	case "execPath":
		if p.peekIs("(") {
			return nil, p.s.errorf(start, "process.execPath is not a function: write process.execPath")
		}
		return execPathNode{}, p.advance()
	}
	name := "process." + p.tok.text
	if p.peekIs("(") {
		name += "(...)"
	}
	return nil, p.s.errorf(start, "unsupported expression %q", name)
}

// env parses what follows "process.env"; start is the offset of "process".
func (p *parser) env(start int) (node, *SyntaxError) {
	if err := p.advance(); err != nil {
		return nil, err
	}
	var name string
	switch {
	case p.is("."):
		if err := p.advance(); err != nil {
			return nil, err
		}
		switch {
		case p.tok.kind == tIdent && isASCIIIdent(p.tok.text):
			name = p.tok.text
		case p.tok.kind == tIdent:
			return nil, p.s.errorf(p.tok.pos, "variable name %q is not ASCII; write process.env[%s]", p.tok.text, quote(p.tok.text))
		default:
			return nil, p.s.errorf(p.tok.pos, `expected a variable name after "process.env.", found %s (a name that is not an identifier needs process.env['NAME'])`, p.describe())
		}
	case p.is("["):
		open := p.tok.pos
		if err := p.advance(); err != nil {
			return nil, err
		}
		if p.tok.kind != tString {
			return nil, p.s.errorf(p.tok.pos, "expected a quoted variable name inside process.env[...], found %s", p.describe())
		}
		name = p.tok.val
		if err := p.checkName(name); err != nil {
			return nil, err
		}
		if err := p.advance(); err != nil {
			return nil, err
		}
		if err := p.expectClose("]", "[", open); err != nil {
			return nil, err
		}
	default:
		return nil, p.s.errorf(start, `"process.env" needs a variable name: write process.env.NAME or process.env['NAME']`)
	}
	p.vars[name] = true
	return &envVar{name: name}, p.advance()
}

// checkName rejects names that no environment variable can have.
func (p *parser) checkName(name string) *SyntaxError {
	switch {
	case name == "":
		return p.s.errorf(p.tok.pos, "empty environment variable name")
	case strings.ContainsAny(name, "=\x00"):
		return p.s.errorf(p.tok.pos, "environment variable name %q cannot contain \"=\" or NUL", name)
	}
	return nil
}

// cwd parses what follows "process.cwd"; start is the offset of "process".
func (p *parser) cwd(start int) (node, *SyntaxError) {
	if err := p.advance(); err != nil {
		return nil, err
	}
	if !p.is("(") {
		return nil, p.s.errorf(start, "process.cwd must be called: write process.cwd()")
	}
	open := p.tok.pos
	if err := p.advance(); err != nil {
		return nil, err
	}
	if !p.atCloser() {
		return nil, p.s.errorf(p.tok.pos, "process.cwd() takes no arguments")
	}
	if err := p.expectClose(")", "(", open); err != nil {
		return nil, err
	}
	return cwdNode{}, p.advance()
}

// expectClose checks that the current token is closer, which closes opener
// at offset open.
func (p *parser) expectClose(closer, opener string, open int) *SyntaxError {
	switch {
	case p.is(closer):
		return nil
	case p.atCloser():
		line, col := position(p.s.src, open)
		return p.s.errorf(p.tok.pos, "expected %q to close %q at %d:%d, found %s", closer, opener, line, col, p.describe())
	}
	return p.unexpectedAfter()
}

// atCloser reports whether the current token ends the input or closes a
// group, so that a missing closer is reported as such.
func (p *parser) atCloser() bool {
	return p.tok.kind == tEOF || p.is(")") || p.is("]") || p.is("}")
}

// unexpectedAfter reports the current token, which follows a complete
// operand where it cannot.
func (p *parser) unexpectedAfter() *SyntaxError {
	t := p.tok
	if t.kind == tTemplate {
		return p.s.errorf(t.pos, "unsupported tagged template")
	}
	if t.kind != tPunct {
		return p.s.errorf(t.pos, "unexpected %s after the end of the expression", p.describe())
	}
	switch t.text {
	case ".", "?.", "[":
		return p.s.errorf(t.pos, "unsupported member access %q", t.text)
	case "(":
		return p.s.errorf(t.pos, "unsupported function call (only process.cwd() can be called)")
	case ";":
		return p.s.errorf(t.pos, `unexpected ";" (statements are not supported)`)
	case ")", "]", "}", "{", ":":
		return p.s.errorf(t.pos, "unexpected %q", t.text)
	}
	return p.s.errorf(t.pos, "unsupported operator %q", t.text)
}

// describe names the current token for an error message. A string or a
// template is named, not quoted: it may be a literal secret, and a message
// about a malformed expression is printed before its secrets are known.
func (p *parser) describe() string {
	switch p.tok.kind {
	case tEOF:
		return "end of input"
	case tString:
		return "string"
	case tTemplate:
		return "template string"
	}
	text := p.s.src[p.tok.pos:p.tok.end]
	const limit = 24
	if utf8.RuneCountInString(text) > limit {
		text = string([]rune(text)[:limit]) + "…"
	}
	return strconv.Quote(text)
}
