package mcpdemo

import (
	"errors"
	"math"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestEvaluate(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name, expr, want string
	}{
		// numbers
		{"integer", "42", "42"},
		{"decimal", "2.5", "2.5"},
		{"leading dot", ".5", "0.5"},
		{"trailing dot", "5.", "5"},
		{"exponent", "1e3", "1000"},
		{"signed exponent", "1.5E-3", "0.0015"},
		{"exponent plus", "2e+2", "200"},
		{"underflow is zero", "1e-400", "0"},
		{"beyond 2^53 rounds to float64", "9007199254740993", "9007199254740992"},
		{"whitespace", " 1 +\t2\r\n", "3"},
		// operators and precedence
		{"addition", "1+2", "3"},
		{"subtraction is left-associative", "1-2-3", "-4"},
		{"multiplication before addition", "2+3*4", "14"},
		{"parentheses", "(2+3)*4", "20"},
		{"division", "10/4", "2.5"},
		{"division is left-associative", "64/4/2", "8"},
		{"remainder", "7%3", "1"},
		{"remainder keeps dividend sign", "-7%3", "-1"},
		{"fractional remainder", "7.5%2", "1.5"},
		{"power", "2^10", "1024"},
		{"power is right-associative", "2^3^2", "512"},
		{"double star power", "2**3**2", "512"},
		{"unary minus binds looser than power", "-2^2", "-4"},
		{"parenthesised negative base", "(-2)^2", "4"},
		{"negative exponent", "2^-1", "0.5"},
		{"fractional exponent", "2^0.5", "1.4142135623730951"},
		{"power before multiplication", "2*(3+4)^2", "98"},
		{"double negation", "--3", "3"},
		{"unary plus", "+3", "3"},
		{"negated group", "-(-3)", "3"},
		{"minus after operator", "3*-2", "-6"},
		{"nested parentheses", "((((1))))", "1"},
		{"unicode operators", "2×3÷4−1", "0.5"},
		// output formatting
		{"shortest exact decimal", "0.1+0.2", "0.30000000000000004"},
		{"repeating decimal", "1/3", "0.3333333333333333"},
		{"plain notation for large integers", "1000*1000", "1000000"},
		{"plain notation below 1e21", "10^20", "100000000000000000000"},
		{"exponent notation from 1e21", "2^70", "1.1805916207174113e+21"},
		{"plain notation down to 1e-6", "10^-6", "0.000001"},
		{"exponent notation below 1e-6", "1e-7", "1e-07"},
		{"negative zero prints as zero", "0*-1", "0"},
		// functions and constants
		{"sqrt", "sqrt(16)", "4"},
		{"sqrt irrational", "sqrt(2)", "1.4142135623730951"},
		{"abs", "abs(-3.5)", "3.5"},
		{"round half away from zero", "round(2.5)", "3"},
		{"round negative half", "round(-2.5)", "-3"},
		{"round to digits", "round(3.14159, 2)", "3.14"},
		{"round to tens", "round(1234.5, -2)", "1200"},
		{"round huge value unchanged", "round(1e300, 2)", "1e+300"},
		{"round huge value to hundreds unchanged", "round(1.7e308, -20)", "1.7e+308"},
		{"floor", "floor(-1.5)", "-2"},
		{"ceil", "ceil(1.2)", "2"},
		{"min of many", "min(3, 1, 2)", "1"},
		{"max of many", "max(3, 1, 2)", "3"},
		{"min of one", "min(5)", "5"},
		{"ln", "ln(e)", "1"},
		{"log10", "log10(1000)", "3"},
		{"sin", "sin(0)", "0"},
		{"cos", "cos(pi)", "-1"},
		{"tan", "tan(0)", "0"},
		{"pi", "pi", "3.141592653589793"},
		{"e", "e", "2.718281828459045"},
		{"names ignore case", "Sqrt(PI*PI)", "3.141592653589793"},
		{"pi symbol", "2*π", "6.283185307179586"},
		{"nested calls", "max(abs(-2), sqrt(9), min(10, 4))", "4"},
		{"function of expression", "sqrt(3^2 + 4^2)", "5"},
		{"sum near the length limit", strings.Repeat("1+", 4999) + "1", "5000"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			v, err := evaluate(tc.expr)
			if err != nil {
				t.Fatalf("evaluate(%q) error: %v", tc.expr, err)
			}
			if got := formatNumber(v); got != tc.want {
				t.Errorf("evaluate(%q) = %s, want %s", tc.expr, got, tc.want)
			}
		})
	}
}

func TestEvaluateErrors(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name, expr string
		pos        int
		msg        string // substring of the message
	}{
		{"empty", "", 1, "empty expression"},
		{"blank", "   ", 1, "empty expression"},
		{"division by zero", "1/0", 2, "division by zero"},
		{"division by zero expression", "1/(2-2)", 2, "division by zero"},
		{"modulo by zero", "1 % 0", 3, "modulo by zero"},
		{"zero to negative power", "0^-1", 2, "zero raised to a negative power"},
		{"division by zero in argument", "max(1, 1/0)", 9, "division by zero"},
		{"syntax errors win over evaluation", "1/0 +", 6, "unexpected end of expression"},
		{"dangling operator", "1 +", 4, `unexpected end of expression, expected a number, name or "("`},
		{"unclosed parenthesis", "(1+2", 5, `expected ")"`},
		{"extra closing parenthesis", "1+2)", 4, `unexpected ")", expected an operator or end of expression`},
		{"empty parentheses", "()", 2, `unexpected ")"`},
		{"leading operator", "*3", 1, `unexpected "*"`},
		{"doubled operator", "2 +* 3", 4, `unexpected "*"`},
		{"juxtaposed numbers", "2 3", 3, "implicit multiplication is not supported"},
		{"number before name", "2pi", 2, `unexpected name "pi"`},
		{"number before group", "2(3)", 2, "implicit multiplication is not supported"},
		{"constant called", "pi(2)", 3, `unexpected "("`},
		{"missing comma", "max(1 2)", 7, "implicit multiplication is not supported"},
		{"missing argument after comma", "max(1,)", 7, `unexpected ")"`},
		{"unclosed call", "sqrt(4", 7, `unexpected end of expression, expected "," or ")"`},
		{"comma outside call", "1,2", 2, `unexpected ","`},
		{"unknown function", "foo(1)", 1, `unknown name "foo" (supported: operators`},
		{"unknown variable", "1 + x", 5, `unknown name "x"`},
		{"function without parentheses", "sqrt 4", 6, `function sqrt must be followed by "("`},
		{"bare function name", "sqrt", 5, `function sqrt must be followed by "("`},
		{"too many arguments", "sqrt(1, 2)", 1, "sqrt takes 1 argument, got 2"},
		{"too few arguments", "round()", 1, "round takes 1 to 2 arguments, got 0"},
		{"min needs an argument", "min()", 1, "min takes at least 1 argument(s), got 0"},
		{"fractional digits", "round(1, 2.5)", 1, "digits must be an integer"},
		{"too many digits", "round(1, 21)", 1, "digits must be an integer from -20 to 20"},
		{"sqrt of negative", "1 + sqrt(-1)", 5, "square root of a negative number"},
		{"ln of zero", "ln(0)", 1, "logarithm of a non-positive number"},
		{"log10 of negative", "log10(-1)", 1, "logarithm of a non-positive number"},
		{"undefined power", "(-8)^(1/3)", 5, "result is undefined"},
		{"overflowing power", "10^400", 3, "overflows"},
		{"overflowing product", "1e308*10", 6, "overflows"},
		{"overflowing function", "max(1e308*10, 1)", 10, "overflows"},
		{"number out of range", "1 + 1e400", 5, "number 1e400 is out of range"},
		{"two decimal points", "1.2.3", 1, `malformed number "1.2."`},
		{"exponent without digits", "2e", 1, `malformed number "2e": exponent has no digits`},
		{"signed exponent without digits", "2e+", 1, `malformed number "2e+"`},
		{"exponent before parenthesis", "2e)", 1, `malformed number "2e"`},
		{"number then name starting with e", "2ex", 2, `unexpected name "ex"`},
		{"bad character", "1 $ 2", 3, "unexpected character '$'"},
		{"position counts characters not bytes", "π + é", 5, "unexpected character 'é'"},
		{"deep parentheses", strings.Repeat("(", 150) + "1" + strings.Repeat(")", 150), 101, "nested too deeply"},
		{"deep unary chain", strings.Repeat("-", 300) + "1", 201, "nested too deeply"},
		{"deep power chain", strings.Repeat("2^", 300) + "1", 401, "nested too deeply"},
		{"too long", strings.Repeat("1+", 5000) + "1", 10001, "expression too long (10001 characters, limit 10000)"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			v, err := evaluate(tc.expr)
			var ce *calcError
			if !errors.As(err, &ce) {
				t.Fatalf("evaluate(%q) = %v, %v; want a *calcError", tc.expr, v, err)
			}
			if ce.Pos != tc.pos || !strings.Contains(ce.Msg, tc.msg) {
				t.Errorf("evaluate(%q) error = %q at %d, want %q at %d", tc.expr, ce.Msg, ce.Pos, tc.msg, tc.pos)
			}
			if want := " at position " + strconv.Itoa(tc.pos); !strings.HasSuffix(err.Error(), want) {
				t.Errorf("error text %q should end with %q", err.Error(), want)
			}
		})
	}
}

func TestFormatNumber(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		in   float64
		want string
	}{
		{"zero", 0, "0"},
		{"negative zero", math.Copysign(0, -1), "0"},
		{"integer", -12, "-12"},
		{"max exact integer", 1 << 53, "9007199254740992"},
		{"just below 1e21", 999999999999999900000, "999999999999999900000"},
		{"1e21", 1e21, "1e+21"},
		{"smallest plain", 1e-6, "0.000001"},
		{"tiny", 5e-324, "5e-324"},
		{"largest", math.MaxFloat64, "1.7976931348623157e+308"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if got := formatNumber(tc.in); got != tc.want {
				t.Errorf("formatNumber(%v) = %s, want %s", tc.in, got, tc.want)
			}
		})
	}
}

// FuzzEvaluate checks that no input makes the calculator panic, that every
// failure is a *calcError pointing inside the expression (or just past
// it), and that every result is finite and printed exactly.
func FuzzEvaluate(f *testing.F) {
	for _, seed := range []string{
		"", "1+2*3", "-2^2", "2^3^2", "2**-1", "(1+2", "1/0", "7%0", "0^-1",
		"sqrt(-1)", "round(2.5, 1)", "min(1,2,3)", "max()", "ln(e)", "log10(0)",
		"sin(pi)/cos(0)+tan(1)", "1e308*10", "1e400", "1.2.3", "2e+", "2ex",
		"π×2÷−1", "((((", "----1", "abs(", "floor(ceil(1.5))", "1,2", "é",
		"round(123.456, -1)", "2^0.5^2", ".5e-3", "5.", "1 % -0",
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, expr string) {
		v, err := evaluate(expr)
		if err != nil {
			var ce *calcError
			if !errors.As(err, &ce) {
				t.Fatalf("evaluate(%q) error %v (%T) is not a *calcError", expr, err, err)
			}
			if ce.Pos < 1 || (ce.Pos > utf8.RuneCountInString(expr)+1 && ce.Pos != maxExprRunes+1) {
				t.Fatalf("evaluate(%q) error position %d outside the expression", expr, ce.Pos)
			}
			return
		}
		if math.IsNaN(v) || math.IsInf(v, 0) {
			t.Fatalf("evaluate(%q) = %v, want a finite number", expr, v)
		}
		s := formatNumber(v)
		back, perr := strconv.ParseFloat(s, 64)
		if perr != nil || back != v {
			t.Fatalf("formatNumber(%v) = %q does not round-trip (%v, %v)", v, s, back, perr)
		}
	})
}
