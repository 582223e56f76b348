package jsexpr_test

import (
	"errors"
	"fmt"

	"github.com/harness-go/harness/host/jsexpr"
)

// mapEnv returns an Env with the given variables and working directory.
func mapEnv(cwd string, vars map[string]string) jsexpr.Env {
	return jsexpr.Env{
		Lookup: func(name string) (string, bool) {
			v, ok := vars[name]
			return v, ok
		},
		Cwd: cwd,
	}
}

func Example() {
	e, err := jsexpr.Parse("process.env.API_URL ?? `http://localhost:${process.env.PORT || '8080'}/api`")
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, vars := range []map[string]string{
		{},
		{"PORT": ""},
		{"PORT": "9000"},
		{"API_URL": "https://example.com/api", "PORT": "9000"},
	} {
		value, ok, err := e.Eval(mapEnv("/srv", vars))
		fmt.Println(value, ok, err)
	}
	// Output:
	// http://localhost:8080/api true <nil>
	// http://localhost:8080/api true <nil>
	// http://localhost:9000/api true <nil>
	// https://example.com/api true <nil>
}

func ExampleParse() {
	e, err := jsexpr.Parse(`process.env["HOME"]`)
	fmt.Println(e, err)

	_, err = jsexpr.Parse("require('fs').readFileSync('/etc/passwd')")
	fmt.Println(err)

	var se *jsexpr.SyntaxError
	_, err = jsexpr.Parse("process.env.TOKEN + 'suffix'")
	if errors.As(err, &se) {
		fmt.Printf("line %d, column %d: %s\n", se.Line, se.Column, se.Msg)
	}
	// Output:
	// process.env.HOME <nil>
	// 1:1: unsupported expression "require(...)"; supported: process.env.NAME, process.env['NAME'], 'string', `template ${…}`, a ?? b, a || b, process.cwd(), process.execPath
	// line 1, column 19: unsupported operator "+"
}

func ExampleExpr_Eval() {
	env := mapEnv("/srv/app", map[string]string{"EMPTY": ""})
	for _, src := range []string{
		"process.env.MISSING",           // undefined: leave the key out
		"process.env.EMPTY",             // set to the empty string
		"process.env.MISSING ?? 'x'",    // ?? replaces undefined
		"process.env.EMPTY ?? 'x'",      // ... but not ""
		"process.env.EMPTY || 'x'",      // || replaces both
		"`${process.cwd()}/data`",       // the working directory
		"`Bearer ${process.env.TOKEN}`", // a template needs a string
	} {
		e, err := jsexpr.Parse(src)
		if err != nil {
			fmt.Println(err)
			continue
		}
		value, ok, err := e.Eval(env)
		fmt.Printf("%-31s => %q %v %v\n", src, value, ok, err)
	}
	// Output:
	// process.env.MISSING             => "" false <nil>
	// process.env.EMPTY               => "" true <nil>
	// process.env.MISSING ?? 'x'      => "x" true <nil>
	// process.env.EMPTY ?? 'x'        => "" true <nil>
	// process.env.EMPTY || 'x'        => "x" true <nil>
	// `${process.cwd()}/data`         => "/srv/app/data" true <nil>
	// `Bearer ${process.env.TOKEN}`   => "" false process.env.TOKEN is not set (used in a template literal)
}

func ExampleExpr_Vars() {
	e, _ := jsexpr.Parse("`${process.env.USER}@${process.env['db-host'] ?? process.env.HOST}:${process.env.USER}`")
	fmt.Println(e.Vars())
	// Output: [HOST USER db-host]
}

func ExampleExpr_String() {
	e, _ := jsexpr.Parse(`( process.env["TOKEN"] ?? (process.env.KEY ?? "none") ) || "\x41\u{1F600}"`)
	fmt.Println(e)
	// Output: (process.env.TOKEN ?? process.env.KEY ?? 'none') || 'A😀'
}
