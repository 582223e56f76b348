package cli

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/harness-go/harness/internal/safe"
)

// builtins are the console's own commands, in the order /help lists them.
func (c *console) builtins() []*command {
	hs := c.hs
	return []*command{
		{name: "/tools", args: "[--json]", help: "list the tools", run: func(_ context.Context, args string) error {
			if args != "" && args != "--json" {
				return errors.New("usage: /tools [--json]")
			}
			writeTools(hs.ourStdout(), hs.tools, args == "--json")
			return nil
		}},
		{name: "/call", args: "NAME [JSON]", help: "call a tool", complete: hs.tools.Names, run: c.call},
		{name: "/status", help: "show every entry", run: noArguments("/status", func(context.Context, string) error {
			writeStatusText(hs.ourStdout(), hs.host.Snapshot(), hs.tools)
			return nil
		})},
		{name: "/restart", args: "ID", help: "restart an entry", complete: c.entryIDs, run: func(ctx context.Context, id string) error {
			if id == "" {
				return errors.New("usage: /restart ID")
			}
			if err := hs.host.Restart(ctx, id); err != nil {
				// The host's refusals name the operation and the entry
				// (restart "nosuch": unknown entry); the others (the host
				// closed, ctx ended) get them here.
				if !strings.HasPrefix(err.Error(), fmt.Sprintf("restart %q: ", id)) {
					err = fmt.Errorf("restart %q: %w", id, err)
				}
				return err
			}
			fmt.Fprintf(c.stdout(), "restarting %s\n", safe.Line(id))
			return nil
		}},
		{name: "/login", args: "ID", help: "log in to the remote server of an entry (OAuth)", complete: c.entryIDs, run: func(ctx context.Context, id string) error {
			if id == "" {
				return errors.New("usage: /login ID")
			}
			// The login page opens in the browser (or its address is shown);
			// the redirect comes to the loopback. The entry picks the token
			// up from the store by itself.
			env := hs.env
			env.Stdin, env.Stdout = nil, c.stdout()
			o := *hs.o
			o.json = false
			if err := loginEntry(ctx, &o, env, id); err != nil {
				var ee *exitError
				if errors.As(err, &ee) {
					return errors.New(strings.TrimPrefix(strings.TrimPrefix(ee.msg, "harness login: "), "harness: "))
				}
				return err
			}
			return nil
		}},
		{name: "/reload", help: "re-read cordis.yml now", run: noArguments("/reload", func(ctx context.Context, _ string) error {
			// A refusal is reported as an event, with the problems.
			_, _ = hs.host.LoadFile(ctx, hs.o.config, true)
			return nil
		})},
		{name: "/help", help: "this list", run: func(context.Context, string) error {
			fmt.Fprint(c.stdout(), c.help())
			return nil
		}},
		{name: "/quit", help: "shut down", run: func(context.Context, string) error { return errQuit }},
		{name: "/exit", run: func(context.Context, string) error { return errQuit }},
	}
}

// noArguments is run for a command that takes no arguments: given some, it
// says so rather than ignore them (as the command line does).
func noArguments(name string, run func(context.Context, string) error) func(context.Context, string) error {
	return func(ctx context.Context, args string) error {
		if args != "" {
			return fmt.Errorf("usage: %s takes no arguments", name)
		}
		return run(ctx, args)
	}
}

// entryIDs are the ids of the entries now, for completion.
func (c *console) entryIDs() []string {
	snap := c.hs.host.Snapshot()
	ids := make([]string, len(snap))
	for i, e := range snap {
		ids[i] = e.ID
	}
	return ids
}

// call runs /call NAME [JSON] until the result is printed or ctx ends.
func (c *console) call(ctx context.Context, rest string) error {
	hs := c.hs
	name, args := cutSpace(rest)
	if name == "" {
		return errors.New("usage: /call NAME [JSON]")
	}
	raw, note, err := parseArgs([]byte(args))
	if err != nil {
		return err
	}
	if note != "" {
		c.reply("warn", note)
	}
	if _, ok := hs.tools.Lookup(name); !ok {
		// As harness call says it: the entry the name points at and why it
		// lists no such tool (failed, needs a login, no such server).
		return fmt.Errorf("unknown tool %q%s; /tools lists them", name, claimHint(hs.host.Snapshot(), name, hs.o.wait)) // %q escapes
	}
	writeResult(c.stdout(), hs.tools.Execute(ctx, name, raw), false)
	return nil
}
