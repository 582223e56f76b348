// Package cli is the harness command: it parses the command line, boots a
// host from cordis.yml, and runs one command or the console. The contract
// (commands, flags, streams, exit codes) is written in the README and tested
// through the built binary in tests/.
package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"runtime/debug"
	"slices"
	"strings"
	"time"

	"github.com/harness-go/harness/host/secret"
	"github.com/harness-go/harness/plugins/mcpservers"
)

// Exit codes.
const (
	ExitOK      = 0 // success
	ExitFailure = 1 // a tool returned an error result; an entry failed or did not settle
	ExitUsage   = 2 // usage error, unknown tool, bad JSON, a config that does not load
)

// Env is the outside world of one run: streams, environment, signals. Tests
// run the command in-process with their own.
type Env struct {
	Stdin  io.Reader
	Stdout io.Writer
	Stderr io.Writer
	// Lookup reads the environment (for !!js); nil means os.LookupEnv.
	Lookup func(string) (string, bool)
	// Signals delivers SIGINT/SIGTERM/SIGHUP; nil means none.
	Signals <-chan os.Signal
	// StdinTTY, StdoutTTY and StderrTTY say whether the streams are
	// terminals.
	StdinTTY, StdoutTTY, StderrTTY bool

	// secrets is the run's secret set, made by Main: Stderr redacts with it,
	// and the host adds the configuration's secrets to it.
	secrets *secret.Set
	// rawStderr is stderr before redaction, for the one line that must
	// carry a secret: a page's URL with its token, under harness serve
	// (whose stdout is protocol).
	rawStderr io.Writer
}

// options are the parsed flags.
type options struct {
	config    string
	wait      time.Duration
	logLevel  string
	logFormat string
	json      bool
	noBrowser bool
	output    string // -o FILE of read
	help      bool
	command   string
	explicit  bool // the command was named, not defaulted to run
	args      []string
	// set records the flags given explicitly.
	set map[string]bool

	// agent and showReasoning are for ask and the console.
	agent         string
	showReasoning bool
	// serve holds the flags of harness serve (serve.go).
	serve serveFlags
	// format is harness import's --format.
	format string
}

// usageError is a command line that does not parse.
type usageError struct{ msg string }

func (e *usageError) Error() string { return e.msg }

func usagef(format string, args ...any) error { return &usageError{fmt.Sprintf(format, args...)} }

// exitError carries an exit code and a message for stderr.
type exitError struct {
	code int
	msg  string
}

func (e *exitError) Error() string { return e.msg }

func exit(code int, format string, args ...any) error {
	return &exitError{code: code, msg: fmt.Sprintf(format, args...)}
}

var commands = map[string]bool{"run": true, "ask": true, "serve": true, "web": true, "tools": true, "call": true, "status": true, "login": true, "logout": true, "validate": true, "import": true, "schema": true, "version": true, "help": true,
	"resources": true, "read": true, "prompts": true, "prompt": true}

// parse reads flags anywhere on the line: before or after the command and its
// arguments. "--" ends the flags. What each flag takes, sets and is for is
// its row of flagTable.
func parse(args []string) (*options, error) {
	o := &options{config: "cordis.yml", wait: 30 * time.Second, logFormat: "text", set: map[string]bool{}}
	var positional []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			positional = append(positional, args[i+1:]...)
			break
		}
		if !strings.HasPrefix(a, "-") || a == "-" || !isFlag(a) {
			positional = append(positional, a)
			continue
		}
		var err error
		if i, err = readFlag(o, args, i); err != nil {
			return nil, err
		}
	}
	if len(positional) > 0 {
		o.command, o.args, o.explicit = positional[0], positional[1:], true
	}
	if o.command == "" {
		o.command = "run"
	}
	if !commands[o.command] {
		return nil, usagef("unknown command %q", o.command)
	}
	if err := checkFlagCommands(o); err != nil {
		return nil, err
	}
	return o, nil
}

// readFlag records the flag args[i] in o, and returns the index of the
// last argument it took (its value, when it takes one as the next
// argument).
func readFlag(o *options, args []string, i int) (int, error) {
	a := args[i]
	name, value, hasValue := strings.Cut(strings.TrimLeft(a, "-"), "=")
	f, ok := lookupFlag(name)
	switch {
	case !ok:
		return i, usagef("unknown flag %s", a)
	case f.value && !hasValue:
		if i+1 >= len(args) {
			return i, usagef("flag %s needs a value", a)
		}
		i++
		value = args[i]
	case !f.value && hasValue && !f.ignoreValue:
		return i, usagef("flag --%s takes no value", f.names[len(f.names)-1])
	}
	if err := f.set(o, name, value); err != nil {
		return i, err
	}
	o.set[name] = true
	return i, nil
}

// checkFlagCommands refuses a flag given to a command it is not for (help
// takes every flag).
func checkFlagCommands(o *options) error {
	if o.command == "help" {
		return nil
	}
	for name := range o.set {
		f, _ := lookupFlag(name)
		if len(f.commands) > 0 && !slices.Contains(f.commands, o.command) {
			return usagef("flag --%s is for %s, not %s", name, andList(f.commands), o.command)
		}
	}
	return nil
}

// cliFlag is one row of flagTable.
type cliFlag struct {
	names []string // as typed after the dashes; the last is the long name
	value bool     // takes a value: --name v or --name=v
	// ignoreValue accepts --name=v of a flag that takes none, and drops v.
	ignoreValue bool
	// set records the flag in o; name is how it was typed, v its value.
	set func(o *options, name, v string) error
	// commands are the commands the flag is for; none: every command.
	commands []string
	// arg names the value in the help ("FILE"); help is the flag's line
	// in the general help (none: told in its commands' help).
	arg, help string
}

// flagTable is every flag of the command line, in the order of the
// general help.
var flagTable = []cliFlag{
	{names: []string{"c", "config"}, value: true, arg: "FILE", help: "the configuration (default ./cordis.yml)",
		set: func(o *options, _, v string) error { o.config = v; return nil }},
	{names: []string{"wait"}, value: true, arg: "DURATION", help: "how long to wait for entries to settle (default 30s; 0 = do not wait)",
		set: func(o *options, _, v string) (err error) { o.wait, err = parseWait(v); return err }},
	{names: []string{"log-level"}, value: true, arg: "LEVEL", help: "debug, info, warn or error (default warn)", set: func(o *options, _, v string) error {
		if _, ok := levels[v]; !ok {
			return usagef("--log-level must be debug, info, warn or error, not %q", v)
		}
		o.logLevel = v
		return nil
	}},
	{names: []string{"log-format"}, value: true, arg: "FORMAT", help: "text or json (default text)", set: func(o *options, _, v string) error {
		if v != "text" && v != "json" {
			return usagef("--log-format must be text or json, not %q", v)
		}
		o.logFormat = v
		return nil
	}},
	{names: []string{"json"}, help: "machine-readable output (tools, call, status, ask, login, resources, read, prompts, prompt)",
		set: func(o *options, _, _ string) error { o.json = true; return nil }, commands: []string{"tools", "call", "status", "ask", "login", "resources", "read", "prompts", "prompt"}},
	{names: []string{"o", "output"}, value: true, arg: "FILE", help: "write what read reads to FILE (read)",
		commands: []string{"read"}, set: func(o *options, _, v string) error {
			if v == "" {
				return usagef("-o needs a file name")
			}
			o.output = v
			return nil
		}},
	{names: []string{"no-browser"}, help: "print the login address instead of opening a browser (login)",
		set: func(o *options, _, _ string) error { o.noBrowser = true; return nil }, commands: []string{"login"}},
	{names: []string{"agent"}, value: true, arg: "ID", help: "the agent entry to talk to, when there are several (ask, run)",
		commands: []string{"ask", "run"}, set: func(o *options, _, v string) error {
			if v == "" {
				return usagef("--agent needs an entry id")
			}
			o.agent = v
			return nil
		}},
	{names: []string{"show-reasoning"}, help: "show a thinking model's reasoning on stderr (ask, run)",
		set: func(o *options, _, _ string) error { o.showReasoning = true; return nil }, commands: []string{"ask", "run"}},
	{names: []string{"format"}, value: true, arg: "FORMAT", help: "the format of the files (import; default auto)",
		commands: []string{"import"}, set: func(o *options, _, v string) error {
			if !slices.Contains(mcpservers.Formats, v) {
				return usagef("--format must be one of %s, not %q", strings.Join(mcpservers.Formats, ", "), v)
			}
			o.format = v
			return nil
		}},
	{names: []string{"h", "help"}, ignoreValue: true, help: "print help", set: func(o *options, _, _ string) error { o.help = true; return nil }},
	// The flags of serve and web, told in their own help.
	{names: []string{"http"}, value: true, set: serveFlag, commands: []string{"serve", "web"}},
	{names: []string{"token"}, value: true, set: serveFlag, commands: []string{"serve", "web"}},
	{names: []string{"tools"}, value: true, set: serveFlag, commands: []string{"serve"}},
	{names: []string{"allow-host"}, value: true, set: serveFlag, commands: []string{"serve", "web"}},
}

// serveFlag sets a flag of harness serve and harness web (serve.go).
func serveFlag(o *options, name, v string) error {
	return o.serve.set(name, func() (string, error) { return v, nil })
}

// lookupFlag returns the row of flagTable with name among its names.
func lookupFlag(name string) (cliFlag, bool) {
	for _, f := range flagTable {
		if slices.Contains(f.names, name) {
			return f, true
		}
	}
	return cliFlag{}, false
}

// andList writes words as a sentence does: "a", "a and b", "a, b and c".
func andList(words []string) string {
	if len(words) < 2 {
		return strings.Join(words, "")
	}
	return strings.Join(words[:len(words)-1], ", ") + " and " + words[len(words)-1]
}

// logFormatJSON reports whether a command line that did not parse asks for
// JSON records on stderr, so that its usage error is one.
func logFormatJSON(args []string) bool {
	for i, a := range args {
		if a == "--" {
			return false
		}
		if a == "--log-format=json" || a == "-log-format=json" || (a == "--log-format" || a == "-log-format") && i+1 < len(args) && args[i+1] == "json" {
			return true
		}
	}
	return false
}

// isFlag tells a flag from a negative number or other argument that starts
// with a dash.
func isFlag(a string) bool {
	c := strings.TrimLeft(a, "-")
	return c != "" && (c[0] >= 'a' && c[0] <= 'z' || c[0] >= 'A' && c[0] <= 'Z')
}

func parseWait(v string) (time.Duration, error) {
	d, err := time.ParseDuration(v)
	if err != nil {
		return 0, usagef("--wait takes a duration such as 30s or 2m (0 = do not wait), not %q", v)
	}
	if d < 0 {
		return 0, usagef("--wait must not be negative")
	}
	return d, nil
}

var levels = map[string]slog.Level{"debug": slog.LevelDebug, "info": slog.LevelInfo, "warn": slog.LevelWarn, "error": slog.LevelError}

// Main runs the harness command line and returns the exit code. When a
// write to stdout finds its reader gone, the run shuts down as on a signal
// and the code is ExitBrokenPipe.
func Main(ctx context.Context, args []string, env Env) (code int) {
	if env.Lookup == nil {
		env.Lookup = os.LookupEnv
	}
	// One secret set for the run: the ambient credentials now, the
	// configuration's secrets as it is read. Everything on stderr passes
	// through it; stdout only where the text is ours (status), never a tool
	// result.
	env.secrets = secret.New()
	env.secrets.AddEnviron(os.Environ())
	env.rawStderr = env.Stderr
	env.Stderr = env.secrets.Writer(env.Stderr)
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	stdout := &brokenPipeWatch{w: env.Stdout, cancel: cancel}
	env.Stdout = stdout
	defer func() {
		if stdout.broken.Load() {
			code = ExitBrokenPipe
		}
	}()
	o, err := parse(args)
	if err != nil {
		if logFormatJSON(args) {
			writeRecord(env.Stderr, "error", fmt.Sprintf("harness: %v (harness help shows the usage)", err))
			return ExitUsage
		}
		fmt.Fprintf(env.Stderr, "harness: %v\n\n", err)
		fmt.Fprint(env.Stderr, usage)
		return ExitUsage
	}
	if o.help || o.command == "help" {
		topic := ""
		switch {
		case o.command == "help" && len(o.args) > 0:
			topic = o.args[0]
		case o.command != "help" && o.explicit:
			topic = o.command
		}
		return printHelp(env.Stdout, env.Stderr, topic)
	}
	err = dispatch(ctx, o, env)
	var ue *usageError
	var ee *exitError
	records := o.logFormat == "json" // stderr stays one format
	switch {
	case err == nil:
		return ExitOK
	case errors.As(err, &ue) && records:
		writeRecord(env.Stderr, "error", fmt.Sprintf("harness %s: %v (harness help %s shows the usage)", o.command, ue, o.command))
		return ExitUsage
	case errors.As(err, &ue):
		fmt.Fprintf(env.Stderr, "harness %s: %v\n\n", o.command, ue)
		fmt.Fprint(env.Stderr, commandUsage(o.command))
		return ExitUsage
	case errors.As(err, &ee):
		switch {
		case ee.msg == "":
		case records:
			writeRecord(env.Stderr, "error", ee.msg)
		default:
			fmt.Fprintln(env.Stderr, ee.msg)
		}
		return ee.code
	case records:
		writeRecord(env.Stderr, "error", "harness: "+err.Error())
		return ExitFailure
	default:
		fmt.Fprintf(env.Stderr, "harness: %v\n", err)
		return ExitFailure
	}
}

func dispatch(ctx context.Context, o *options, env Env) error {
	switch o.command {
	case "version":
		if len(o.args) > 0 {
			return usagef("version takes no arguments")
		}
		fmt.Fprintf(env.Stdout, "harness %s\n", Version())
		return nil
	case "schema":
		if len(o.args) > 0 {
			return usagef("schema takes no arguments")
		}
		return printSchema(env.Stdout)
	case "validate":
		if len(o.args) > 0 {
			return usagef("validate takes no arguments")
		}
		return validate(o, env)
	case "import":
		if len(o.args) == 0 {
			return usagef("import takes the files to read (a .mcp.json, a config.toml, …)")
		}
		return importServers(o, env)
	case "tools":
		if len(o.args) > 0 {
			return usagef("tools takes no arguments")
		}
		return oneShot(ctx, o, env, listTools)
	case "status":
		if len(o.args) > 0 {
			return usagef("status takes no arguments")
		}
		return oneShot(ctx, o, env, showStatus)
	case "login":
		return login(ctx, o, env)
	case "logout":
		return logout(ctx, o, env)
	case "ask":
		if len(o.args) != 1 {
			return usagef("ask takes one prompt (or - to read it from stdin); quote a prompt of several words")
		}
		return ask(ctx, o, env)
	case "serve":
		if len(o.args) > 0 {
			return usagef("serve takes no arguments")
		}
		return serve(ctx, o, env)
	case "web":
		if len(o.args) > 0 {
			return usagef("web takes no arguments")
		}
		return serveWeb(ctx, o, env)
	case "resources", "prompts":
		if len(o.args) > 0 {
			return usagef("%s takes no arguments", o.command)
		}
		if o.command == "resources" {
			return oneShot(ctx, o, env, listResources)
		}
		return oneShot(ctx, o, env, listPrompts)
	case "read":
		if len(o.args) != 2 {
			return usagef("read takes a server and a resource uri")
		}
		return oneShot(ctx, o, env, readResource)
	case "prompt":
		if len(o.args) < 1 {
			return usagef("prompt takes a prompt name and optionally its arguments (key=value ..., or one JSON object)")
		}
		return oneShot(ctx, o, env, getPrompt)
	case "call":
		if len(o.args) < 1 || len(o.args) > 2 {
			return usagef("call takes a tool name and optionally its JSON arguments (or - to read them from stdin)")
		}
		return oneShot(ctx, o, env, callTool)
	default: // run
		if len(o.args) > 0 {
			return usagef("run takes no arguments")
		}
		return run(ctx, o, env)
	}
}

// Version is the module version the binary was built from.
func Version() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "dev"
	}
	v := bi.Main.Version
	if v == "" || v == "(devel)" {
		v = "dev"
	}
	return fmt.Sprintf("%s (%s)", v, bi.GoVersion)
}
