package mcpdemo

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"unicode/utf8"
)

// The calculator is a small hand-written lexer, recursive-descent parser and
// tree evaluator. Nothing is ever handed to a general-purpose interpreter, so
// the only things an expression can do are the ones listed in calcHelp.
//
// Grammar, lowest precedence first:
//
//	expr    = term { ("+" | "-") term }
//	term    = unary { ("*" | "/" | "%") unary }
//	unary   = ("-" | "+") unary | power
//	power   = primary [ ("^" | "**") unary ]      (right-associative)
//	primary = number | constant | name "(" [ expr { "," expr } ] ")" | "(" expr ")"
//
// Unary minus binds looser than "^", as in mathematics: -2^2 is -4, while
// 2^-1 is 0.5.

const (
	// maxExprRunes bounds the input so one call cannot make the server work
	// on an arbitrarily large expression.
	maxExprRunes = 10000
	// maxDepth bounds parser recursion (parentheses, function arguments,
	// chained unary operators and right-associative powers).
	maxDepth = 200
)

// calcHelp summarises what the calculator accepts; it is part of the tool
// description and of unknown-name errors.
const calcHelp = "operators + - * / % ^ (** also means ^), unary minus, parentheses; " +
	"functions sqrt, abs, round (round(x) or round(x, digits)), floor, ceil, min, max, ln, log10, " +
	"sin, cos, tan (radians); constants pi, e"

// calcError is a calculator failure tied to a 1-based character (rune)
// position in the expression.
type calcError struct {
	Pos int
	Msg string
}

func (e *calcError) Error() string {
	return fmt.Sprintf("%s at position %d", e.Msg, e.Pos)
}

func errAt(pos int, format string, args ...any) *calcError {
	return &calcError{Pos: pos, Msg: fmt.Sprintf(format, args...)}
}

// evaluate parses and evaluates an arithmetic expression. Every error it
// returns is a *calcError.
func evaluate(expr string) (float64, error) {
	n := utf8.RuneCountInString(expr)
	if n > maxExprRunes {
		return 0, errAt(maxExprRunes+1, "expression too long (%d characters, limit %d)", n, maxExprRunes)
	}
	toks, err := lex(expr)
	if err != nil {
		return 0, err
	}
	p := &parser{toks: toks}
	root, err := p.parse()
	if err != nil {
		return 0, err
	}
	return root.eval()
}

// formatNumber renders v with the shortest decimal digits that round-trip
// exactly (strconv precision -1). Values from 1e-6 up to 1e21 are written
// in plain notation, so integers print without a fraction or exponent
// (1000000, not 1e+06); anything smaller or larger uses the 'g' exponent
// form. Negative zero prints as 0.
func formatNumber(v float64) string {
	if v == 0 {
		return "0"
	}
	if a := math.Abs(v); a >= 1e-6 && a < 1e21 {
		return strconv.FormatFloat(v, 'f', -1, 64)
	}
	return strconv.FormatFloat(v, 'g', -1, 64)
}

// ---- lexer ----

type tokKind int

const (
	tokEOF tokKind = iota
	tokNum
	tokIdent
	tokOp     // + - * / % ^
	tokLParen // (
	tokRParen // )
	tokComma  // ,
)

type token struct {
	kind tokKind
	pos  int     // 1-based rune position of the token's first character
	text string  // source text (identifiers are lower-cased)
	op   byte    // operator, for tokOp
	num  float64 // value, for tokNum
}

func (t token) describe() string {
	switch t.kind {
	case tokEOF:
		return "end of expression"
	case tokNum:
		return fmt.Sprintf("number %s", t.text)
	case tokIdent:
		return fmt.Sprintf("name %q", t.text)
	default:
		return fmt.Sprintf("%q", t.text)
	}
}

func isDigit(r rune) bool { return r >= '0' && r <= '9' }

func isIdentStart(r rune) bool {
	return r == '_' || (r >= 'a' && r <= 'z') || (r >= 'A' && r <= 'Z')
}

func isIdentPart(r rune) bool { return isIdentStart(r) || isDigit(r) }

// lex splits src into tokens, always ending with a tokEOF.
func lex(src string) ([]token, error) {
	rs := []rune(src)
	var toks []token
	i := 0
	for i < len(rs) {
		r := rs[i]
		pos := i + 1
		switch {
		case r == ' ' || r == '\t' || r == '\n' || r == '\r':
			i++
		case isDigit(r) || (r == '.' && i+1 < len(rs) && isDigit(rs[i+1])):
			tok, next, err := lexNumber(rs, i)
			if err != nil {
				return nil, err
			}
			toks = append(toks, tok)
			i = next
		case isIdentStart(r):
			j := i
			for j < len(rs) && isIdentPart(rs[j]) {
				j++
			}
			toks = append(toks, token{kind: tokIdent, pos: pos, text: strings.ToLower(string(rs[i:j]))})
			i = j
		case r == 'π':
			toks = append(toks, token{kind: tokIdent, pos: pos, text: "pi"})
			i++
		case r == '*' && i+1 < len(rs) && rs[i+1] == '*':
			toks = append(toks, token{kind: tokOp, pos: pos, text: "**", op: '^'})
			i += 2
		case strings.ContainsRune("+-*/%^", r):
			toks = append(toks, token{kind: tokOp, pos: pos, text: string(r), op: byte(r)})
			i++
		case r == '−': // U+2212 MINUS SIGN
			toks = append(toks, token{kind: tokOp, pos: pos, text: string(r), op: '-'})
			i++
		case r == '×':
			toks = append(toks, token{kind: tokOp, pos: pos, text: string(r), op: '*'})
			i++
		case r == '÷':
			toks = append(toks, token{kind: tokOp, pos: pos, text: string(r), op: '/'})
			i++
		case r == '(':
			toks = append(toks, token{kind: tokLParen, pos: pos, text: "("})
			i++
		case r == ')':
			toks = append(toks, token{kind: tokRParen, pos: pos, text: ")"})
			i++
		case r == ',':
			toks = append(toks, token{kind: tokComma, pos: pos, text: ","})
			i++
		default:
			return nil, errAt(pos, "unexpected character %q", r)
		}
	}
	return append(toks, token{kind: tokEOF, pos: len(rs) + 1}), nil
}

// lexNumber scans digits [ "." digits ] [ ("e"|"E") ["+"|"-"] digits ]
// starting at rs[start].
func lexNumber(rs []rune, start int) (token, int, error) {
	i := start
	digits := func() {
		for i < len(rs) && isDigit(rs[i]) {
			i++
		}
	}
	digits()
	if i < len(rs) && rs[i] == '.' {
		i++
		digits()
	}
	if i < len(rs) && (rs[i] == 'e' || rs[i] == 'E') {
		j := i + 1
		if j < len(rs) && (rs[j] == '+' || rs[j] == '-') {
			j++
		}
		if j < len(rs) && isDigit(rs[j]) {
			i = j
			digits()
		} else if j > i+1 || j >= len(rs) || !isIdentPart(rs[j]) {
			// "2e", "2e+" or "2e)": an exponent marker with no digits.
			return token{}, 0, errAt(start+1, "malformed number %q: exponent has no digits", string(rs[start:j]))
		}
		// Otherwise "2ex..." is a number followed by a name; the parser
		// reports the missing operator.
	}
	if i < len(rs) && rs[i] == '.' {
		return token{}, 0, errAt(start+1, "malformed number %q", string(rs[start:i+1]))
	}
	text := string(rs[start:i])
	v, err := strconv.ParseFloat(text, 64)
	if err != nil {
		// The scanner only accepts valid float syntax, so this is a range
		// error: too large for float64. (Underflow silently becomes 0.)
		return token{}, 0, errAt(start+1, "number %s is out of range", text)
	}
	return token{kind: tokNum, pos: start + 1, text: text, num: v}, i, nil
}

// ---- parser ----

type parser struct {
	toks  []token
	i     int
	depth int
}

func (p *parser) peek() token { return p.toks[p.i] }

func (p *parser) next() token {
	t := p.toks[p.i]
	if t.kind != tokEOF {
		p.i++
	}
	return t
}

func (p *parser) parse() (node, error) {
	if p.peek().kind == tokEOF {
		return nil, errAt(1, "empty expression")
	}
	n, err := p.expr()
	if err != nil {
		return nil, err
	}
	if t := p.peek(); t.kind != tokEOF {
		return nil, unexpected(t, "an operator or end of expression")
	}
	return n, nil
}

func unexpected(t token, want string) *calcError {
	msg := fmt.Sprintf("syntax error: unexpected %s, expected %s", t.describe(), want)
	if t.kind == tokNum || t.kind == tokIdent || t.kind == tokLParen {
		if want == "an operator or end of expression" || want == `"," or ")"` || want == `")"` {
			msg += " (implicit multiplication is not supported; write * explicitly)"
		}
	}
	return &calcError{Pos: t.pos, Msg: msg}
}

// enter guards recursion depth; every successful call must be paired with
// leave.
func (p *parser) enter(pos int) error {
	p.depth++
	if p.depth > maxDepth {
		return errAt(pos, "expression nested too deeply (limit %d levels)", maxDepth)
	}
	return nil
}

func (p *parser) leave() { p.depth-- }

func (p *parser) expr() (node, error) {
	left, err := p.term()
	if err != nil {
		return nil, err
	}
	for {
		t := p.peek()
		if t.kind != tokOp || (t.op != '+' && t.op != '-') {
			return left, nil
		}
		p.next()
		right, err := p.term()
		if err != nil {
			return nil, err
		}
		left = &binNode{op: t.op, pos: t.pos, l: left, r: right}
	}
}

func (p *parser) term() (node, error) {
	left, err := p.unary()
	if err != nil {
		return nil, err
	}
	for {
		t := p.peek()
		if t.kind != tokOp || (t.op != '*' && t.op != '/' && t.op != '%') {
			return left, nil
		}
		p.next()
		right, err := p.unary()
		if err != nil {
			return nil, err
		}
		left = &binNode{op: t.op, pos: t.pos, l: left, r: right}
	}
}

func (p *parser) unary() (node, error) {
	t := p.peek()
	if err := p.enter(t.pos); err != nil {
		return nil, err
	}
	defer p.leave()
	if t.kind == tokOp && (t.op == '-' || t.op == '+') {
		p.next()
		x, err := p.unary()
		if err != nil {
			return nil, err
		}
		if t.op == '+' {
			return x, nil
		}
		return &negNode{x: x}, nil
	}
	return p.power()
}

func (p *parser) power() (node, error) {
	base, err := p.primary()
	if err != nil {
		return nil, err
	}
	t := p.peek()
	if t.kind != tokOp || t.op != '^' {
		return base, nil
	}
	p.next()
	exp, err := p.unary() // right-associative; allows 2^-1
	if err != nil {
		return nil, err
	}
	return &binNode{op: '^', pos: t.pos, l: base, r: exp}, nil
}

func (p *parser) primary() (node, error) {
	t := p.next()
	switch t.kind {
	case tokNum:
		return numNode(t.num), nil
	case tokLParen:
		if err := p.enter(t.pos); err != nil {
			return nil, err
		}
		defer p.leave()
		x, err := p.expr()
		if err != nil {
			return nil, err
		}
		if c := p.next(); c.kind != tokRParen {
			return nil, unexpected(c, `")"`)
		}
		return x, nil
	case tokIdent:
		return p.identifier(t)
	default:
		return nil, unexpected(t, "a number, name or \"(\"")
	}
}

func (p *parser) identifier(t token) (node, error) {
	if v, ok := constants[t.text]; ok {
		return numNode(v), nil
	}
	fn, ok := functions[t.text]
	if !ok {
		return nil, errAt(t.pos, "unknown name %q (supported: %s)", t.text, calcHelp)
	}
	if open := p.next(); open.kind != tokLParen {
		return nil, errAt(open.pos, "syntax error: function %s must be followed by \"(\"", t.text)
	}
	if err := p.enter(t.pos); err != nil {
		return nil, err
	}
	defer p.leave()
	var args []node
	if p.peek().kind == tokRParen {
		p.next()
	} else {
		for {
			a, err := p.expr()
			if err != nil {
				return nil, err
			}
			args = append(args, a)
			c := p.next()
			if c.kind == tokRParen {
				break
			}
			if c.kind != tokComma {
				return nil, unexpected(c, `"," or ")"`)
			}
		}
	}
	if len(args) < fn.minArgs || (fn.maxArgs >= 0 && len(args) > fn.maxArgs) {
		return nil, errAt(t.pos, "%s takes %s, got %d", t.text, fn.arity(), len(args))
	}
	return &callNode{name: t.text, pos: t.pos, fn: fn, args: args}, nil
}

// ---- evaluation ----

type node interface {
	eval() (float64, error)
}

type numNode float64

func (n numNode) eval() (float64, error) { return float64(n), nil }

type negNode struct{ x node }

func (n *negNode) eval() (float64, error) {
	v, err := n.x.eval()
	return -v, err
}

type binNode struct {
	op   byte
	pos  int
	l, r node
}

func (n *binNode) eval() (float64, error) {
	a, err := n.l.eval()
	if err != nil {
		return 0, err
	}
	b, err := n.r.eval()
	if err != nil {
		return 0, err
	}
	var v float64
	switch n.op {
	case '+':
		v = a + b
	case '-':
		v = a - b
	case '*':
		v = a * b
	case '/':
		if b == 0 {
			return 0, errAt(n.pos, "division by zero")
		}
		v = a / b
	case '%':
		if b == 0 {
			return 0, errAt(n.pos, "modulo by zero")
		}
		v = math.Mod(a, b)
	default: // '^'
		if a == 0 && b < 0 {
			return 0, errAt(n.pos, "division by zero (zero raised to a negative power)")
		}
		v = math.Pow(a, b)
	}
	return finite(n.pos, string(n.op), v)
}

// finite rejects NaN and ±Inf, which only arise from overflow or from an
// operation outside its domain (inputs are always finite).
func finite(pos int, what string, v float64) (float64, error) {
	switch {
	case math.IsNaN(v):
		return 0, errAt(pos, "%s: result is undefined (not a real number)", what)
	case math.IsInf(v, 0):
		return 0, errAt(pos, "%s: result overflows (too large for a 64-bit float)", what)
	}
	return v, nil
}

type callNode struct {
	name string
	pos  int
	fn   *function
	args []node
}

func (n *callNode) eval() (float64, error) {
	vals := make([]float64, len(n.args))
	for i, a := range n.args {
		v, err := a.eval()
		if err != nil {
			return 0, err
		}
		vals[i] = v
	}
	v, err := n.fn.call(vals)
	if err != nil {
		return 0, errAt(n.pos, "%s: %v", n.name, err)
	}
	return finite(n.pos, n.name, v)
}

type function struct {
	minArgs, maxArgs int // maxArgs < 0: no upper limit
	call             func(args []float64) (float64, error)
}

func (f *function) arity() string {
	switch {
	case f.maxArgs < 0:
		return fmt.Sprintf("at least %d argument(s)", f.minArgs)
	case f.minArgs == f.maxArgs && f.minArgs == 1:
		return "1 argument"
	case f.minArgs == f.maxArgs:
		return fmt.Sprintf("%d arguments", f.minArgs)
	default:
		return fmt.Sprintf("%d to %d arguments", f.minArgs, f.maxArgs)
	}
}

func unary(f func(float64) float64) *function {
	return &function{minArgs: 1, maxArgs: 1, call: func(a []float64) (float64, error) { return f(a[0]), nil }}
}

var constants = map[string]float64{
	"pi": math.Pi,
	"e":  math.E,
}

var functions = map[string]*function{
	"sqrt": {minArgs: 1, maxArgs: 1, call: func(a []float64) (float64, error) {
		if a[0] < 0 {
			return 0, errors.New("square root of a negative number")
		}
		return math.Sqrt(a[0]), nil
	}},
	"abs":   unary(math.Abs),
	"floor": unary(math.Floor),
	"ceil":  unary(math.Ceil),
	"round": {minArgs: 1, maxArgs: 2, call: roundDigits},
	"min": {minArgs: 1, maxArgs: -1, call: func(a []float64) (float64, error) {
		m := a[0]
		for _, v := range a[1:] {
			m = math.Min(m, v)
		}
		return m, nil
	}},
	"max": {minArgs: 1, maxArgs: -1, call: func(a []float64) (float64, error) {
		m := a[0]
		for _, v := range a[1:] {
			m = math.Max(m, v)
		}
		return m, nil
	}},
	"ln":    {minArgs: 1, maxArgs: 1, call: logFunc(math.Log)},
	"log10": {minArgs: 1, maxArgs: 1, call: logFunc(math.Log10)},
	"sin":   unary(math.Sin),
	"cos":   unary(math.Cos),
	"tan":   unary(math.Tan),
}

func logFunc(f func(float64) float64) func([]float64) (float64, error) {
	return func(a []float64) (float64, error) {
		if a[0] <= 0 {
			return 0, errors.New("logarithm of a non-positive number")
		}
		return f(a[0]), nil
	}
}

// roundDigits implements round(x) and round(x, digits): half away from
// zero, to the given number of decimal places (negative digits round to
// tens, hundreds, ...).
func roundDigits(a []float64) (float64, error) {
	x := a[0]
	if len(a) == 1 {
		return math.Round(x), nil
	}
	d := a[1]
	if d != math.Trunc(d) || d < -20 || d > 20 {
		return 0, errors.New("digits must be an integer from -20 to 20")
	}
	if d >= 0 {
		p := math.Pow(10, d)
		scaled := x * p
		if math.Abs(scaled) >= 1<<52 || math.IsInf(scaled, 0) {
			return x, nil // already has no digits beyond that place
		}
		return math.Round(scaled) / p, nil
	}
	p := math.Pow(10, -d)
	scaled := x / p
	if math.Abs(scaled) >= 1<<52 {
		return x, nil // x is too large to have digits below that place
	}
	return math.Round(scaled) * p, nil
}
