package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"sort"
	"strings"
	"sync/atomic"
	"syscall"
	"unicode"

	"github.com/harness-go/harness/fiber"
	"github.com/harness-go/harness/host"
	"github.com/harness-go/harness/internal/safe"
	"github.com/harness-go/harness/plugins/tools"
)

// run is `harness run`: boot, settle, watch cordis.yml, serve the console.
// It returns nil (exit 0) when told to stop, whatever state entries are in.
//
// On a terminal the console owns the screen from the start: every line the
// harness prints (logs, progress, events, and results when stdout is a
// terminal too) goes through its writers, which print above the prompt and
// redraw the line being typed.
func run(ctx context.Context, o *options, env Env) error {
	term, err := openTerminal(env)
	if err != nil {
		fmt.Fprintf(env.Stderr, "harness: no line editor on this terminal (%s); reading plain lines\n", safe.Text(err.Error()))
	}
	if term != nil {
		defer term.close()
		env.Stdout, env.Stderr = term.stdout, env.secrets.Writer(term.stderr)
	}
	hs, f, err := boot(o, env)
	if err != nil {
		return err
	}
	defer hs.close()
	rep := startProgress(hs, true)
	defer rep.stop()
	if err := hs.load(ctx, f); err != nil {
		return err
	}

	// The watcher and the first settle live in the run's fiber: disposed
	// (its context cancelled, the goroutines awaited) before the host
	// closes. The console reads the signals itself, between lines and
	// while one runs (console.serve, console.exec).
	life := fiber.New(ctx, "run")
	defer life.Dispose(context.Background())
	watcher := host.NewWatcher(hs.host, o.config, host.WatcherOptions{Logger: hs.log})
	_ = life.Go("watch", func(ctx context.Context) {
		if err := watcher.Run(ctx); err != nil {
			hs.log.Warn("not watching the configuration", "err", err)
		}
	})

	c := newConsole(hs, watcher, env.Signals)
	c.addAgent() // plain lines, /new, /agent
	// Who answers what a tool asks while a line runs (front.go): the
	// person, on a terminal; in a pipe nobody, which is said.
	c.progress = newProgressLine(hs, c.stderr())
	if env.StdinTTY {
		c.front = newConsoleFront(hs, c.stderr(), c, c.progress)
	} else {
		c.front = &noteFront{hs: hs, who: "the console (reading a pipe)", progress: c.progress}
	}

	// Settle before the first command, so a piped /tools sees the tools.
	settled := make(chan struct{})
	settleCtx, stopSettle := context.WithCancel(life.Context())
	defer stopSettle()
	_ = life.Go("settle", func(context.Context) { defer close(settled); hs.settle(settleCtx) })
	quit := c.waitOrSignal(settled, stopSettle)
	stopSettle()
	<-settled
	timedOut := !host.AllSettled(hs.host.Snapshot())
	if quit {
		return nil
	}
	// Clear the live line first: what follows starts a line of its own.
	live := !rep.plain
	rep.eventsFollow()
	if live {
		// The live line said nothing lasting: say what went wrong.
		hs.reportProblems(timedOut)
	}

	var in lineSource
	if term != nil {
		// The configuration is loaded: its secrets are known, and the
		// history can drop the lines that hold one.
		term.start(c, openHistory(historyPath(env.Lookup), hs.host.Secrets(), hs.log))
		in = term
		c.turnOut, c.turnErr = term.turnOut, env.secrets.Writer(term.turnErr)
	} else {
		lr := newLineReader(env.Stdin, maxLine, c.promptFunc())
		if env.StdinTTY {
			lr.out = c.stderr() // a dumb terminal: questions are asked on it too
		}
		in = lr
	}
	return c.serve(ctx, in)
}

// maxLine bounds one console line (a pasted block included): a longer
// line is refused with an error, and the console goes on.
const maxLine = 16 << 20

// errQuit, returned by a command, ends the console.
var errQuit = errors.New("quit")

// A command is one row of the console's command table: /help prints the
// table, Tab completes its names and, through complete, its first
// argument.
type command struct {
	name string // "/call"
	args string // its arguments in /help, "NAME [JSON]"; "" if none
	help string // one line in /help; "" hides the command (an alias)
	// complete returns the values its first argument can take, read live
	// (the tools registered now, the entries now); nil: no completion.
	complete func() []string
	// run runs the command with the rest of the line. It prints its
	// results on the console's stdout; an error it returns is printed on
	// stderr (escaped), and errQuit ends the console. ctx ends when the
	// person presses Ctrl-C (on a terminal) or the console stops.
	run func(ctx context.Context, args string) error
	// cancelled is what Ctrl-C prints while it runs; "" means
	// "<name> cancelled".
	cancelled string
}

func (cmd *command) cancelMessage() string {
	if cmd.cancelled != "" {
		return cmd.cancelled
	}
	return strings.TrimPrefix(cmd.name, "/") + " cancelled"
}

// console reads lines and runs them one at a time: a line that starts with
// "/" is a command from the table, any other line goes to the plain-line
// handler (the agent, when one is configured).
type console struct {
	hs       *harness
	watcher  *host.Watcher
	signals  <-chan os.Signal
	commands map[string]*command
	order    []string // names as /help lists them
	// plain handles the lines that are not commands. By default it
	// answers "unknown command"; with a help, /help lists it first, under
	// its name.
	plain *command
	chat  chat // the conversation with the agent (console_agent.go)
	// turnOut and turnErr show the agent's answers; nil: stdout and
	// stderr. On a terminal they are its turn writers (console_term.go).
	turnOut, turnErr io.Writer

	// front answers what the tools of a running line ask (front.go), and
	// progress shows what they report.
	front    tools.Front
	progress *progressLine
	// questions take the reading goroutine's turn while a line runs: a
	// question's answer is read where commands are (console.answer).
	questions chan answerReq
	executing atomic.Bool   // a line runs
	served    chan struct{} // closed when serve returns
	in        lineSource
}

// answerReq asks the reading goroutine for the answer to a question.
type answerReq struct {
	prompt string
	reply  chan readResult // buffered: a withdrawn question's answer is dropped
}

func newConsole(hs *harness, watcher *host.Watcher, signals <-chan os.Signal) *console {
	c := &console{hs: hs, watcher: watcher, signals: signals, commands: map[string]*command{},
		questions: make(chan answerReq), served: make(chan struct{})}
	for _, cmd := range append(c.builtins(), c.resourceCommands()...) {
		c.add(cmd)
	}
	c.plain = &command{run: func(_ context.Context, line string) error {
		word, _ := cutSpace(line)
		return unknownCommand(word)
	}}
	return c
}

// add puts cmd in the table, replacing a command of the same name. /help
// and /quit stay last in /help.
func (c *console) add(cmd *command) {
	last := func(name string) bool { return name == "/help" || name == "/quit" || name == "/exit" }
	if _, ok := c.commands[cmd.name]; !ok {
		i := len(c.order)
		for i > 0 && !last(cmd.name) && last(c.order[i-1]) {
			i--
		}
		c.order = slices.Insert(c.order, i, cmd.name)
	}
	c.commands[cmd.name] = cmd
}

// handlePlain sets the handler of the lines that are not commands.
func (c *console) handlePlain(cmd *command) { c.plain = cmd }

// stdout and stderr are the console's writers: on a terminal they print
// above the prompt. stderr redacts secrets; stdout carries results as they
// are.
func (c *console) stdout() io.Writer { return c.hs.env.Stdout }
func (c *console) stderr() io.Writer { return c.hs.env.Stderr }

// reply writes the console's answer that is no result (a command's error, a
// note) to stderr: a line of text, or a JSON record with --log-format json,
// so that stderr stays one format.
func (c *console) reply(level, msg string) { say(c.stderr(), c.hs.o, level, msg) }

func unknownCommand(word string) error {
	return fmt.Errorf("unknown command %q; /help lists the commands", word) // %q escapes
}

// cutSpace splits a line at its first white space (a pasted block may hold
// a newline right after the command).
func cutSpace(line string) (first, rest string) {
	i := strings.IndexFunc(line, unicode.IsSpace)
	if i < 0 {
		return line, ""
	}
	return line[:i], strings.TrimSpace(line[i:])
}

// help is the text of /help.
func (c *console) help() string {
	var b strings.Builder
	b.WriteString("commands:\n")
	if c.plain.help != "" {
		fmt.Fprintf(&b, "  %-20s%s\n", c.plain.name, c.plain.help)
	}
	for _, name := range c.order {
		cmd := c.commands[name]
		if cmd.help == "" {
			continue
		}
		usage := cmd.name
		if cmd.args != "" {
			usage += " " + cmd.args
		}
		fmt.Fprintf(&b, "  %-20s%s\n", usage, cmd.help)
	}
	return b.String()
}

// complete returns the completions of the text before the cursor: command
// names at the start of a line, then the first argument of a command that
// has a completer. word is the part of before the candidates replace.
// A completed command that takes arguments ends with a space.
func (c *console) complete(before string) (candidates []string, word string) {
	if before != "" && !strings.HasPrefix(before, "/") {
		return c.completeMention(before) // a message: only its @server:uri
	}
	i := strings.IndexFunc(before, unicode.IsSpace)
	if i < 0 {
		for _, name := range c.order {
			cmd := c.commands[name]
			if cmd.help != "" && strings.HasPrefix(name, before) {
				if cmd.args != "" {
					name += " "
				}
				candidates = append(candidates, name)
			}
		}
		return candidates, before
	}
	cmd, ok := c.commands[before[:i]]
	if !ok || cmd.complete == nil {
		return nil, ""
	}
	word = strings.TrimLeftFunc(before[i:], unicode.IsSpace)
	if j := strings.IndexFunc(word, unicode.IsSpace); j >= 0 {
		if cmd.name == "/prompt" {
			return c.completePromptArgs(word[:j], word[j:])
		}
		return nil, "" // past the first argument
	}
	for _, v := range cmd.complete() {
		// A value that would not print as itself is not offered.
		if strings.HasPrefix(v, word) && safe.Line(v) == v && v != "" {
			candidates = append(candidates, v)
		}
	}
	sort.Strings(candidates)
	return candidates, word
}

// waitOrSignal waits for done; a signal meanwhile asks to quit (SIGHUP
// reloads instead). It reports whether to quit.
func (c *console) waitOrSignal(done <-chan struct{}, cancel func()) bool {
	for {
		select {
		case <-done:
			return false
		case s := <-c.signals:
			if s == syscall.SIGHUP {
				c.watcher.Reload()
				continue
			}
			cancel()
			return true
		}
	}
}

// promptFunc prints the prompt before each line when stdin is a terminal
// that the line editor does not drive; nil in a pipe.
func (c *console) promptFunc() func() {
	if !c.hs.env.StdinTTY {
		return nil
	}
	return func() { fmt.Fprint(c.stderr(), "> ") }
}

// A lineSource gives the console its lines: the line editor on a terminal,
// a plain reader otherwise.
type lineSource interface {
	// readLine returns the next line without its newline: io.EOF at the
	// end, an *interrupt for Ctrl-C at the prompt, a *longLineError for a
	// line over the bound (the source has skipped it and can go on).
	readLine() (string, error)
	// readAnswer reads the answer to a question after prompt:
	// errCancelled when the person cancels.
	readAnswer(prompt string) (string, error)
	// withdraw ends a readAnswer in progress if the source can.
	withdraw()
	// close ends a readLine in progress if the source can.
	close()
}

// answer reads the person's answer to a question of a running line's tool
// (answerSource, for consoleFront): the reading goroutine, idle while the
// line runs, reads it.
func (c *console) answer(ctx context.Context, prompt string) (string, error) {
	if !c.executing.Load() {
		return "", errCancelled // no line runs: nothing may take the prompt
	}
	// The editor draws the prompt itself, past the redacting writer: the
	// server's words in it (a field's title) are redacted here.
	req := answerReq{prompt: c.hs.env.secrets.Redact(prompt), reply: make(chan readResult, 1)}
	select {
	case c.questions <- req:
	case <-ctx.Done():
		return "", context.Cause(ctx)
	case <-c.served:
		return "", errCancelled
	}
	select {
	case r := <-req.reply:
		var long *longLineError
		if errors.As(r.err, &long) {
			return "", fmt.Errorf("the answer is longer than %s", sizeText(long.max))
		}
		return r.line, r.err
	case <-ctx.Done():
		c.in.withdraw()
		return "", context.Cause(ctx)
	case <-c.served:
		return "", errCancelled
	}
}

// interrupt is Ctrl-C pressed at the prompt.
// interrupt is Ctrl-C at the prompt: empty when the line was empty, typed
// when something was typed since the prompt came (and erased, if empty).
type interrupt struct{ empty, typed bool }

func (*interrupt) Error() string { return "interrupt" }

// longLineError is a line longer than the bound.
type longLineError struct {
	line int // 1-based line number, 0 if not counted
	max  int
}

func (e *longLineError) Error() string {
	where := "the line"
	if e.line > 0 {
		where = fmt.Sprintf("line %d", e.line)
	}
	return fmt.Sprintf("%s is longer than %s; skipped", where, sizeText(e.max))
}

func sizeText(n int) string {
	if n >= 1<<20 && n%(1<<20) == 0 {
		return fmt.Sprintf("%d MiB", n>>20)
	}
	return fmt.Sprintf("%d bytes", n)
}

// serve reads lines from in and runs them until /quit, EOF, a signal to
// stop, or ctx ends.
func (c *console) serve(ctx context.Context, in lineSource) error {
	lines := make(chan readResult)
	want := make(chan struct{}, 1)
	stop := make(chan struct{})
	c.in = in
	if c.served == nil {
		c.served = make(chan struct{})
	}
	defer close(c.served)
	go func() {
		for {
			select {
			case <-want:
			case q := <-c.questions:
				line, err := in.readAnswer(q.prompt)
				q.reply <- readResult{line, err}
				continue
			case <-stop:
				return
			}
			line, err := in.readLine()
			select {
			case lines <- readResult{line, err}:
			case <-stop:
				return
			}
		}
	}()
	defer func() { close(stop); in.close() }()

	armed := false // Ctrl-C at an empty prompt: a second one quits
	for {
		want <- struct{}{}
		var res readResult
	wait:
		for {
			select {
			case res = <-lines:
				break wait
			case s := <-c.signals:
				if s == syscall.SIGHUP {
					c.watcher.Reload()
					continue
				}
				return nil
			case <-ctx.Done():
				return nil
			}
		}
		var intr *interrupt
		var long *longLineError
		switch {
		case res.err == nil:
		case errors.Is(res.err, io.EOF):
			return nil // the command in flight is done; shut down
		case errors.As(res.err, &intr):
			if intr.empty && armed && !intr.typed {
				return nil
			}
			armed = intr.empty
			if armed {
				fmt.Fprintln(c.stderr(), "press Ctrl-C again to quit (or Ctrl-D, or /quit)")
			}
			continue
		case errors.As(res.err, &long):
			armed = false
			c.reply("error", long.Error())
			continue
		default:
			c.reply("error", "reading the console: "+safe.Text(res.err.Error()))
			return nil
		}
		armed = false
		if c.exec(ctx, strings.TrimSpace(res.line)) {
			return nil
		}
	}
}

type readResult struct {
	line string
	err  error
}

// exec runs one line until it ends, handling the signals that arrive
// meanwhile, and reports whether to quit. On a terminal SIGINT (Ctrl-C)
// cancels the command; in a pipe it cancels the command and quits.
func (c *console) exec(ctx context.Context, line string) (quit bool) {
	if line == "" {
		return false
	}
	cmd, args := c.plain, line
	if strings.HasPrefix(line, "/") {
		var name string
		name, args = cutSpace(line)
		var ok bool
		if cmd, ok = c.commands[name]; !ok {
			cmd = &command{run: func(context.Context, string) error { return unknownCommand(name) }}
		}
	}
	cmdCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	if c.front != nil {
		// What the line's tools ask goes to the person (or is declined).
		cmdCtx = tools.WithFront(cmdCtx, c.front)
	}
	c.executing.Store(true)
	defer c.executing.Store(false)
	if c.progress != nil {
		defer c.progress.clear()
	}
	done := make(chan error, 1)
	go func() { done <- cmd.run(cmdCtx, args) }()
	for {
		select {
		case err := <-done:
			switch {
			case errors.Is(err, errQuit):
				return true
			case err == nil, cmdCtx.Err() != nil && errors.Is(err, context.Canceled):
			default:
				c.reply("error", safe.Text(err.Error()))
			}
			return quit
		case s := <-c.signals:
			switch {
			case s == syscall.SIGHUP:
				c.watcher.Reload()
			case s == os.Interrupt && c.hs.env.StdinTTY:
				// The terminal echoed ^C where the cursor was (after the
				// live progress line, which goes first).
				c.progress.clear()
				fmt.Fprintln(c.stderr(), "\n"+cmd.cancelMessage())
				cancel()
			default:
				cancel()
				quit = true
			}
		}
	}
}
