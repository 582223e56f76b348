package cli

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"syscall"

	"github.com/harness-go/harness/host"
	"github.com/harness-go/harness/internal/safe"
)

const consoleHelp = `commands:
  TEXT                talk to the agent (a line not starting with /)
  /new                start a new conversation
  /agent [ID]         show the agents and the usage so far; ID switches
  /tools              list the tools
  /call NAME [JSON]   call a tool
  /status             show every entry
  /restart ID         restart an entry
  /reload             re-read cordis.yml now
  /help               this list
  /quit               shut down
`

// run is `harness run`: boot, settle, watch cordis.yml, serve the console.
// It returns nil (exit 0) when told to stop, whatever state entries are in.
func run(ctx context.Context, o *options, env Env) error {
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

	watchCtx, stopWatch := context.WithCancel(ctx)
	watcher := host.NewWatcher(hs.host, o.config, host.WatcherOptions{Logger: hs.log})
	watchDone := make(chan struct{})
	go func() {
		defer close(watchDone)
		if err := watcher.Run(watchCtx); err != nil {
			hs.log.Warn("not watching the configuration", "err", err)
		}
	}()
	defer func() { stopWatch(); <-watchDone }()

	c := &console{hs: hs, watcher: watcher, signals: env.Signals}
	// Settle before the first command, so a piped /tools sees the tools.
	settled := make(chan struct{})
	settleCtx, stopSettle := context.WithCancel(ctx)
	go func() { hs.settle(settleCtx); close(settled) }()
	var timedOut bool
	quit := c.waitOrSignal(settled, stopSettle)
	stopSettle()
	<-settled
	timedOut = !host.AllSettled(hs.host.Snapshot())
	if quit {
		return nil
	}
	if !rep.plain {
		// The live line said nothing lasting: say what went wrong.
		hs.reportProblems(timedOut)
	}
	rep.eventsFollow()
	return c.serve(ctx, env.Stdin)
}

// console reads commands and runs them one at a time.
type console struct {
	hs      *harness
	watcher *host.Watcher
	signals <-chan os.Signal
	chat    chat // the conversation with the agent (console_agent.go)
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

func (c *console) serve(ctx context.Context, stdin io.Reader) error {
	lines := make(chan string)
	stop := make(chan struct{})
	defer close(stop)
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(stdin)
		sc.Buffer(make([]byte, 64<<10), 16<<20)
		for sc.Scan() {
			select {
			case lines <- sc.Text():
			case <-stop:
				return
			}
		}
	}()
	for {
		c.prompt()
		select {
		case line, ok := <-lines:
			if !ok {
				return nil // EOF: the command in flight is done; shut down
			}
			if c.exec(ctx, strings.TrimSpace(line)) {
				return nil
			}
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
}

func (c *console) prompt() {
	if c.hs.env.StdinTTY {
		fmt.Fprint(c.hs.env.Stderr, "> ")
	}
}

// exec runs one command line and reports whether to quit.
func (c *console) exec(ctx context.Context, line string) (quit bool) {
	hs := c.hs
	out, errOut := hs.env.Stdout, hs.env.Stderr
	if line == "" {
		return false
	}
	cmd, rest, _ := strings.Cut(line, " ")
	rest = strings.TrimSpace(rest)
	switch cmd {
	case "/quit", "/exit":
		return true
	case "/help":
		fmt.Fprint(out, consoleHelp)
	case "/tools":
		writeTools(out, hs.tools, rest == "--json")
	case "/status":
		writeStatusText(hs.env.secrets.Writer(out), hs.host.Snapshot(), hs.tools)
	case "/restart":
		if rest == "" {
			fmt.Fprintln(errOut, "usage: /restart ID")
			return false
		}
		if err := hs.host.Restart(ctx, rest); err != nil {
			fmt.Fprintln(errOut, "restart: "+safe.Text(err.Error()))
			return false
		}
		fmt.Fprintf(out, "restarting %s\n", rest)
	case "/reload":
		if _, err := hs.host.LoadFile(ctx, hs.o.config, true); err != nil {
			// The refusal is reported as an event, with the problems.
			return false
		}
	case "/call":
		return c.call(ctx, rest)
	case "/new":
		c.newConversation()
	case "/agent":
		c.agentCommand(rest)
	default:
		if !strings.HasPrefix(line, "/") {
			return c.talk(ctx, line)
		}
		fmt.Fprintf(errOut, "unknown command %q; /help lists the commands\n", safe.Line(cmd))
	}
	return false
}

// call runs /call NAME [JSON]. On a terminal, SIGINT cancels the call; in a
// pipe it cancels the call and quits.
func (c *console) call(ctx context.Context, rest string) (quit bool) {
	hs := c.hs
	name, args, _ := strings.Cut(rest, " ")
	if name == "" {
		fmt.Fprintln(hs.env.Stderr, "usage: /call NAME [JSON]")
		return false
	}
	var argv []string
	if a := strings.TrimSpace(args); a != "" {
		argv = []string{a}
	}
	raw, err := readArgs(argv, strings.NewReader(""), hs.env.Stderr)
	if err != nil {
		var ee *exitError
		if errors.As(err, &ee) {
			fmt.Fprintln(hs.env.Stderr, ee.msg)
		}
		return false
	}
	if _, ok := hs.tools.Lookup(name); !ok {
		fmt.Fprintf(hs.env.Stderr, "unknown tool %q; /tools lists them\n", safe.Line(name))
		return false
	}
	callCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	done := make(chan struct{})
	go func() {
		defer close(done)
		writeResult(hs.env.Stdout, hs.tools.Execute(callCtx, name, raw), false)
	}()
	for {
		select {
		case <-done:
			return quit
		case s := <-c.signals:
			switch {
			case s == syscall.SIGHUP:
				c.watcher.Reload()
			case s == os.Interrupt && hs.env.StdinTTY:
				fmt.Fprintln(hs.env.Stderr, "call cancelled")
				cancel()
			default:
				cancel()
				quit = true
			}
		}
	}
}
