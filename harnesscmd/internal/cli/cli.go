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

// cliCommand is one row of commandTable.
type cliCommand struct {
	name string
	// synopsis and summary are its line in the general help, after
	// "harness "; help is its own (harness help NAME).
	synopsis, summary, help string
	// flags are the long names of the flags it takes beyond those for
	// every command (a flag no command lists is for every command).
	flags []string
	args  argSpec
	// run runs it; nil for help, which Main answers.
	run func(ctx context.Context, o *options, env Env) error
}

// argSpec is how many arguments a command takes, and what to say when
// the count is wrong ("" for "NAME takes no arguments").
type argSpec struct {
	min, max int // max < 0: no bound
	msg      string
}

// check refuses a count of arguments outside the spec.
func (a argSpec) check(name string, args []string) error {
	if len(args) >= a.min && (a.max < 0 || len(args) <= a.max) {
		return nil
	}
	if a.msg == "" {
		return usagef("%s takes no arguments", name)
	}
	return usagef("%s", a.msg)
}

// noArgs, anyArgs and the command's own: how the rows say it.
var noArgs, anyArgs = argSpec{}, argSpec{max: -1}

// oneShotOf runs fn as a one-shot command: boot, settle, fn, shut down.
func oneShotOf(fn func(context.Context, *harness, *reporter) error) func(context.Context, *options, Env) error {
	return func(ctx context.Context, o *options, env Env) error { return oneShot(ctx, o, env, fn) }
}

// commandTable is every command, in the order of the general help. parse
// knows the commands and their flags from it, dispatch checks the
// arguments and runs the row, and the help is written from it.
var commandTable = []cliCommand{
	{name: "run", synopsis: "[run] [flags]", summary: "boot, settle, watch cordis.yml, read console commands on stdin",
		help: runHelp, flags: []string{"agent", "show-reasoning"}, args: noArgs, run: run},
	{name: "ask", synopsis: "ask PROMPT|- [flags]", summary: "one turn with the agent: the answer streams to stdout",
		help: askHelp, flags: []string{"json", "agent", "show-reasoning"}, run: ask,
		args: argSpec{min: 1, max: 1, msg: "ask takes one prompt (or - to read it from stdin); quote a prompt of several words"}},
	{name: "serve", synopsis: "serve [flags] [--http ADDR]", summary: "serve the tools to MCP clients (stdio, or Streamable HTTP)",
		help: serveHelp, flags: []string{"http", "token", "tools", "allow-host"}, args: noArgs, run: serve},
	{name: "web", synopsis: "web [flags] [--http ADDR]", summary: "serve a live page in a browser: entries, tools, chat, events",
		help: webHelp, flags: []string{"http", "token", "allow-host"}, args: noArgs, run: serveWeb},
	{name: "tools", synopsis: "tools [flags] [--json]", summary: "print the model-visible tools, sorted by name",
		help: toolsHelp, flags: []string{"json"}, args: noArgs, run: oneShotOf(listTools)},
	{name: "call", synopsis: "call NAME [JSON|-] [flags]", summary: "call one tool and print what the model would see",
		help: callHelp, flags: []string{"json"}, run: oneShotOf(callTool),
		args: argSpec{min: 1, max: 2, msg: "call takes a tool name and optionally its JSON arguments (or - to read them from stdin)"}},
	{name: "resources", synopsis: "resources [flags] [--json]", summary: "print the servers' resources and resource templates",
		help: resourcesHelp, flags: []string{"json"}, args: noArgs, run: oneShotOf(listResources)},
	{name: "read", synopsis: "read SERVER URI [-o FILE]", summary: "print a resource (text; binary to FILE, or base64 with --json)",
		help: readHelp, flags: []string{"json", "output"}, run: oneShotOf(readResource),
		args: argSpec{min: 2, max: 2, msg: "read takes a server and a resource uri"}},
	{name: "prompts", synopsis: "prompts [flags] [--json]", summary: "print the prompts and their arguments",
		help: promptsHelp, flags: []string{"json"}, args: noArgs, run: oneShotOf(listPrompts)},
	{name: "prompt", synopsis: "prompt NAME [ARGS] [flags]", summary: "print a prompt's messages (ARGS: key=value ..., or one JSON object)",
		help: promptHelp, flags: []string{"json"}, run: oneShotOf(getPrompt),
		args: argSpec{min: 1, max: -1, msg: "prompt takes a prompt name and optionally its arguments (key=value ..., or one JSON object)"}},
	{name: "status", synopsis: "status [flags] [--json]", summary: "print every entry: state, tools, errors, server info",
		help: statusHelp, flags: []string{"json"}, args: noArgs, run: oneShotOf(showStatus)},
	{name: "login", synopsis: "login ID [--no-browser]", summary: "log in to the remote server of entry ID (OAuth)",
		help: loginHelp, flags: []string{"json", "no-browser"}, args: anyArgs, run: login}, // login says what ID is missing
	{name: "logout", synopsis: "logout ID", summary: "delete (and revoke) the tokens of entry ID",
		help: logoutHelp, args: anyArgs, run: logout},
	{name: "validate", synopsis: "validate [flags]", summary: "check cordis.yml without starting anything",
		help: validateHelp, args: noArgs, run: func(_ context.Context, o *options, env Env) error { return validate(o, env) }},
	{name: "import", synopsis: "import FILE... [--format F]", summary: "print the cordis.yml entries of another client's MCP servers",
		help: importHelp, flags: []string{"format"}, run: func(_ context.Context, o *options, env Env) error { return importServers(o, env) },
		args: argSpec{min: 1, max: -1, msg: "import takes the files to read (a .mcp.json, a config.toml, …)"}},
	{name: "schema", synopsis: "schema", summary: "print a JSON Schema of cordis.yml",
		help: schemaHelp, args: noArgs, run: func(_ context.Context, _ *options, env Env) error { return printSchema(env.Stdout) }},
	{name: "version", synopsis: "version", summary: "print the version", help: versionHelp, args: noArgs,
		run: func(_ context.Context, _ *options, env Env) error {
			fmt.Fprintf(env.Stdout, "harness %s\n", Version())
			return nil
		}},
	{name: "help", synopsis: "help [COMMAND]", summary: "print help", help: helpHelp, args: anyArgs},
}

// lookupCommand returns the row of commandTable called name.
func lookupCommand(name string) (cliCommand, bool) {
	for _, c := range commandTable {
		if c.name == name {
			return c, true
		}
	}
	return cliCommand{}, false
}

// flagCommands returns the commands that list the flag long among their
// flags, in the table's order; none: the flag is for every command.
func flagCommands(long string) []string {
	var out []string
	for _, c := range commandTable {
		if slices.Contains(c.flags, long) {
			out = append(out, c.name)
		}
	}
	return out
}

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
	if _, ok := lookupCommand(o.command); !ok {
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
		if cmds := flagCommands(f.long()); len(cmds) > 0 && !slices.Contains(cmds, o.command) {
			return usagef("flag --%s is for %s, not %s", name, andList(cmds), o.command)
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
	// The commands it is for are those whose row lists it (commandTable).
	set func(o *options, name, v string) error
	// arg names the value in the help ("FILE"); help is the flag's line
	// in the general help (none: told in its commands' help), which adds
	// the commands it is for.
	arg, help string
}

// long is the flag's long name.
func (f cliFlag) long() string { return f.names[len(f.names)-1] }

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
	{names: []string{"json"}, help: "machine-readable output",
		set: func(o *options, _, _ string) error { o.json = true; return nil }},
	{names: []string{"o", "output"}, value: true, arg: "FILE", help: "write what read reads to FILE",
		set: func(o *options, _, v string) error {
			if v == "" {
				return usagef("-o needs a file name")
			}
			o.output = v
			return nil
		}},
	{names: []string{"no-browser"}, help: "print the login address instead of opening a browser",
		set: func(o *options, _, _ string) error { o.noBrowser = true; return nil }},
	{names: []string{"agent"}, value: true, arg: "ID", help: "the agent entry to talk to, when there are several",
		set: func(o *options, _, v string) error {
			if v == "" {
				return usagef("--agent needs an entry id")
			}
			o.agent = v
			return nil
		}},
	{names: []string{"show-reasoning"}, help: "show a thinking model's reasoning on stderr",
		set: func(o *options, _, _ string) error { o.showReasoning = true; return nil }},
	{names: []string{"format"}, value: true, arg: "FORMAT", help: "the format of the files, default auto",
		set: func(o *options, _, v string) error {
			if !slices.Contains(mcpservers.Formats, v) {
				return usagef("--format must be one of %s, not %q", strings.Join(mcpservers.Formats, ", "), v)
			}
			o.format = v
			return nil
		}},
	{names: []string{"h", "help"}, ignoreValue: true, help: "print help", set: func(o *options, _, _ string) error { o.help = true; return nil }},
	// The flags of serve and web, told in their own help.
	{names: []string{"http"}, value: true, set: serveFlag},
	{names: []string{"token"}, value: true, set: serveFlag},
	{names: []string{"tools"}, value: true, set: serveFlag},
	{names: []string{"allow-host"}, value: true, set: serveFlag},
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
// and the code is ExitBrokenPipe; when a write to stdout fails otherwise,
// the command's success is ExitFailure, with the write's error on stderr.
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
	stdout := &stdoutWatch{w: env.Stdout, cancel: cancel}
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
		if code := printHelp(env.Stdout, env.Stderr, topic); code != ExitOK {
			return code
		}
		return report(env.Stderr, o, stdout.lost(nil))
	}
	return report(env.Stderr, o, stdout.lost(dispatch(ctx, o, env)))
}

// report writes what a command's error says on stderr (a usage error with
// the command's usage; an exit error as it is; JSON records with
// --log-format json, so stderr stays one format) and returns the exit
// code.
func report(stderr io.Writer, o *options, err error) int {
	var ue *usageError
	var ee *exitError
	records := o.logFormat == "json"
	switch {
	case err == nil:
		return ExitOK
	case errors.As(err, &ue) && records:
		writeRecord(stderr, "error", fmt.Sprintf("harness %s: %v (harness help %s shows the usage)", o.command, ue, o.command))
		return ExitUsage
	case errors.As(err, &ue):
		fmt.Fprintf(stderr, "harness %s: %v\n\n", o.command, ue)
		fmt.Fprint(stderr, commandUsage(o.command))
		return ExitUsage
	case errors.As(err, &ee):
		switch {
		case ee.msg == "":
		case records:
			writeRecord(stderr, "error", ee.msg)
		default:
			fmt.Fprintln(stderr, ee.msg)
		}
		return ee.code
	case records:
		writeRecord(stderr, "error", "harness: "+err.Error())
		return ExitFailure
	default:
		fmt.Fprintf(stderr, "harness: %v\n", err)
		return ExitFailure
	}
}

// dispatch checks the command's arguments against its row and runs it.
func dispatch(ctx context.Context, o *options, env Env) error {
	c, _ := lookupCommand(o.command) // parse knows it
	if err := c.args.check(c.name, o.args); err != nil {
		return err
	}
	return c.run(ctx, o, env)
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
