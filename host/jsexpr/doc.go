// Package jsexpr parses and evaluates the values tagged !!js in cordis.yml.
//
// In the original TypeScript system such a value was arbitrary JavaScript.
// This package accepts only a
// small, documented subset of JavaScript expressions, the part that
// configuration files actually use: reading environment variables, the
// working directory, the harness's own executable, and combining them with
// string literals.
//
// # The subset
//
//   - process.env.NAME, where NAME is an ASCII identifier
//     ([A-Za-z_$][A-Za-z0-9_$]*), or process.env['NAME'] and
//     process.env["NAME"] for any name (not empty, without "=" or NUL):
//     an environment variable.
//   - 'string' and "string" literals with the JavaScript escapes \n \r \t
//     \b \f \v \0 \\ \' \" \xHH \uHHHH \u{H...} and line continuations
//     (a backslash before a line break). Surrogate pairs written as two
//     \u escapes form one character; an unpaired surrogate is an error.
//   - `template ${expr} literals`, where each ${…} holds an expression of
//     this subset, with the same escapes plus \` and \$. As in JavaScript,
//     a raw CR or CR LF in a template reads as LF.
//   - a ?? b: a, unless a is undefined.
//   - a || b: a, unless a is undefined or the empty string.
//   - process.cwd(): the working directory, and process.execPath: the
//     running harness's executable (the path of the binary `go run`
//     built, for one), so an entry can start the harness itself.
//   - parentheses, and whitespace and line breaks between tokens wherever
//     JavaScript allows them.
//
// Chains of one operator (a ?? b ?? c) are fine; as in JavaScript, mixing
// ?? and || needs parentheses: (a ?? b) || c. Parentheses and template
// substitutions nest at most 64 deep.
//
// Everything else is a [SyntaxError] naming what was found and where: other
// identifiers (require, undefined), other calls and members (process.exit(),
// process.argv, process.env alone), numbers, other operators (+, &&, ?:),
// comments, semicolons and trailing text. Escapes outside the list above
// (such as \a, which JavaScript reads as "a", or the legacy octal \1) are
// rejected too. Whatever is accepted means the same in JavaScript, with one
// deliberate difference: process.env.NAME reads only the environment, so
// names such as constructor or __proto__ are never inherited object
// properties.
//
// # Undefined
//
// The only values are strings and undefined. An unset variable is undefined;
// a variable set to the empty string is not. [Expr.Eval] reports undefined as
// ok=false, and the caller leaves the configuration key out. A template
// literal needs a string: an unset variable in a ${…} is an [UnsetError]
// naming it, never the text "undefined". To make an absent variable empty,
// write
//
//	`Bearer ${process.env.TOKEN ?? ''}`
//
// # Why this is not JavaScript
//
// A configuration file must not be able to run code in the host: no
// require, no function calls other than process.cwd(), no access to
// anything but the environment, the working directory and the path of the
// running executable. The subset is
// parsed when the configuration is loaded, so a mistake is reported with its
// line and column before anything is started. It is evaluated when the entry
// is applied, not when parsed, against an explicit [Env], so a reload sees
// the environment of the moment and tests can supply their own.
package jsexpr
