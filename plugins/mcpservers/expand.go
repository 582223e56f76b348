package mcpservers

import (
	"bytes"
	"encoding/json"
	"fmt"
	"path/filepath"
	"regexp"
	"strings"
)

// The variables a value of a JSON format may hold (Codex expands nothing:
// its configuration names variables in fields of their own):
//
//	${VAR}                   the variable VAR (Claude Code, Gemini CLI)
//	${VAR:-default}          VAR, or default when VAR is unset (Claude Code)
//	${env:VAR}               the variable VAR (Cursor, VS Code, Windsurf)
//	$VAR                     the variable VAR (Gemini CLI only: elsewhere a
//	                         bare $ is too common in arguments)
//	${input:ID}              a VS Code input: the variable HARNESS_INPUT_<ID>
//	${userHome}              the user's home folder
//	${workspaceFolder}       the folder of the file's project
//	${workspaceFolderBasename}, ${pathSeparator}, ${/}
//
// The harness runs no prompt for a VS Code input: HARNESS_INPUT_<ID> holds
// its answer (ID in upper case, every character that is not a letter or a
// digit as "_": ${input:api-key} reads HARNESS_INPUT_API_KEY).
//
// A value that reads a variable becomes a !!js expression, evaluated when
// the entry is applied, as every !!js value of cordis.yml is — so what it
// read is a secret (never printed, kept from stdio servers by value).

// InputPrefix starts the variable that answers a VS Code input.
const InputPrefix = "HARNESS_INPUT_"

var (
	varName    = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)
	varDefault = regexp.MustCompile(`^([A-Za-z_][A-Za-z0-9_]*):-(.*)$`)
	varKind    = regexp.MustCompile(`^([A-Za-z]+):(.*)$`)
	bareVar    = regexp.MustCompile(`^\$([A-Za-z_][A-Za-z0-9_]*)`)
)

// part is a piece of a value: literal text, or a variable (with its
// default).
type part struct {
	lit    string
	env    string // the variable; "" for literal text
	def    string
	hasDef bool
}

// expander expands the values of one file.
type expander struct {
	format    string
	workspace string
	home      string
}

// InputVar is the variable that answers the VS Code input id.
func InputVar(id string) string {
	var b strings.Builder
	b.WriteString(InputPrefix)
	for _, c := range strings.ToUpper(id) {
		if (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') {
			b.WriteRune(c)
		} else {
			b.WriteByte('_')
		}
	}
	return b.String()
}

// split cuts s into literal text and variables. A ${…} the format knows no
// meaning for (${VAR:?}, ${config:…}, ${command:…}) is an error: running
// the server with the text as written would be worse.
func (x *expander) split(s string) ([]part, error) {
	var parts []part
	var lit strings.Builder
	flush := func() {
		if lit.Len() > 0 {
			parts = append(parts, part{lit: lit.String()})
			lit.Reset()
		}
	}
	for i := 0; i < len(s); {
		c := s[i]
		if c != '$' {
			lit.WriteByte(c)
			i++
			continue
		}
		if strings.HasPrefix(s[i:], "${") {
			end := strings.IndexByte(s[i:], '}')
			if end < 0 {
				lit.WriteString(s[i:])
				break
			}
			inner := s[i+2 : i+end]
			p, known, err := x.variable(inner)
			if err != nil {
				return nil, err
			}
			if !known {
				lit.WriteString(s[i : i+end+1])
			} else if p.env == "" {
				lit.WriteString(p.lit)
			} else {
				flush()
				parts = append(parts, p)
			}
			i += end + 1
			continue
		}
		if m := bareVar.FindStringSubmatch(s[i:]); m != nil && x.format == FormatGemini {
			flush()
			parts = append(parts, part{env: m[1]})
			i += len(m[0])
			continue
		}
		lit.WriteByte(c)
		i++
	}
	flush()
	return parts, nil
}

// variable reads the inside of a ${…}. known is false for text that is no
// variable syntax at all (${ a b }), which stays as written.
func (x *expander) variable(inner string) (p part, known bool, err error) {
	switch inner {
	case "userHome":
		return part{lit: x.home}, true, nil
	case "workspaceFolder":
		return part{lit: x.workspace}, true, nil
	case "workspaceFolderBasename":
		return part{lit: filepath.Base(x.workspace)}, true, nil
	case "pathSeparator", "/":
		return part{lit: string(filepath.Separator)}, true, nil
	}
	if varName.MatchString(inner) {
		return part{env: inner}, true, nil
	}
	if m := varDefault.FindStringSubmatch(inner); m != nil {
		return part{env: m[1], def: m[2], hasDef: true}, true, nil
	}
	if m := varKind.FindStringSubmatch(inner); m != nil {
		switch m[1] {
		case "env":
			if !varName.MatchString(m[2]) {
				return part{}, false, fmt.Errorf("${%s}: %q is not a variable name", inner, m[2])
			}
			return part{env: m[2]}, true, nil
		case "input":
			if m[2] == "" {
				return part{}, false, fmt.Errorf("${%s}: the input has no id", inner)
			}
			return part{env: InputVar(m[2])}, true, nil
		}
		return part{}, false, fmt.Errorf("${%s} is not supported: the harness expands ${VAR}, ${VAR:-default}, ${env:VAR}, ${input:ID} (from %s<ID>), ${userHome} and ${workspaceFolder}", inner, InputPrefix)
	}
	if strings.HasPrefix(inner, "{") || strings.ContainsAny(inner, " \t") || inner == "" {
		return part{}, false, nil
	}
	return part{}, false, fmt.Errorf("${%s} is not supported: the harness expands ${VAR}, ${VAR:-default}, ${env:VAR}, ${input:ID} (from %s<ID>), ${userHome} and ${workspaceFolder}", inner, InputPrefix)
}

// expression is the !!js source of parts, or "" when no part reads a
// variable (then the value is literal, the parts' text). bare lets a value
// that is one variable alone be undefined when it is unset (its key is
// then left out); otherwise an unset variable without a default is an
// error for the entry, naming it.
func expression(parts []part, bare bool) (expr, literal string) {
	reads := false
	var text strings.Builder
	for _, p := range parts {
		if p.env != "" {
			reads = true
		}
		text.WriteString(p.lit)
	}
	if !reads {
		return "", text.String()
	}
	if len(parts) == 1 {
		p := parts[0]
		switch {
		case p.hasDef:
			return envRef(p.env) + " ?? " + jsString(p.def), ""
		case bare:
			return envRef(p.env), ""
		}
	}
	var b strings.Builder
	b.WriteByte('`')
	for _, p := range parts {
		switch {
		case p.env == "":
			b.WriteString(templateText(p.lit))
		case p.hasDef:
			b.WriteString("${" + envRef(p.env) + " ?? " + jsString(p.def) + "}")
		default:
			b.WriteString("${" + envRef(p.env) + "}")
		}
	}
	b.WriteByte('`')
	return b.String(), ""
}

func envRef(name string) string { return "process.env." + name }

// jsString quotes s as a JavaScript string literal: JSON's quoting, which
// JavaScript reads the same.
func jsString(s string) string {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s)
	return strings.TrimSuffix(b.String(), "\n")
}

// templateText escapes s for the text of a template literal.
func templateText(s string) string {
	r := strings.NewReplacer("\\", "\\\\", "`", "\\`", "${", "\\${", "\r", "\\r")
	return r.Replace(s)
}
