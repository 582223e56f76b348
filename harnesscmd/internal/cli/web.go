package cli

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/harness-go/harness/fiber"
	"github.com/harness-go/harness/host"
	"github.com/harness-go/harness/plugins/web"
)

// WebTokenEnv is the variable `harness web` reads its token from when
// --token is not given; without either, the token is a fresh one.
const WebTokenEnv = "HARNESS_WEB_TOKEN"

const webHelp = `Usage: harness web [flags] [--http ADDR] [--token TOKEN] [--allow-host NAME]...

Runs the harness as harness run does — boots cordis.yml, follows it as it is
edited — and serves it as a live page in a browser: the entries and their
servers (restart them there), the tools (try one from a form), the chat with
the agent, the reload lines and logs as they come, and cordis.yml with the
last load's problems. It prints one URL on stdout, with a fresh token in its
fragment (http://127.0.0.1:8760/#token=…): open it. It stops on SIGINT or
SIGTERM; SIGHUP re-reads cordis.yml.

  --http ADDR          serve on ADDR (default 127.0.0.1:8760)
  --token TOKEN        the token that opens the page (default: $HARNESS_WEB_TOKEN, else a
                       fresh one); needed for an address other than loopback
  --allow-host NAME    accept this Host header too (a reverse proxy's name); repeatable

The page trades the token for a session cookie; every change it makes is a
POST with a CSRF token; a request from another origin is refused. web entries
of cordis.yml are ignored (harness web serves the page itself); mcp-server
entries serve as under harness run.
`

// servesPages reports whether a command runs web entries, or a page of its
// own: the record keeper of the pages' logs is made for those only.
func servesPages(command string) bool {
	return command == "run" || command == "serve" || command == "web"
}

// webHostOptions is what the web entries of this run are told: the host,
// the file, the logs, and where to print a page's URL — stdout under run (a
// result of ours, with a secret a person needs: not redacted), the raw
// stderr under serve (stdout is protocol). Other commands ignore them.
func webHostOptions(h *host.Host, o *options, env Env, pages *web.Logs) web.HostOptions {
	ho := web.HostOptions{Host: h, Config: o.config, Logs: pages, Version: Version(), Login: pageLogin(o, env)}
	announce := func(w io.Writer) func(entry, url string) {
		return func(entry, url string) { fmt.Fprintf(w, "page of entry %s: %s\n", entry, url) }
	}
	switch o.command {
	case "run":
		ho.Announce = announce(env.Stdout)
	case "serve":
		w := env.rawStderr
		if w == nil {
			w = env.Stderr
		}
		ho.Announce = announce(w)
	case "web":
		ho.Ignore = "harness web serves the page itself"
	default:
		ho.Ignore = "only harness run and harness serve serve web entries"
	}
	return ho
}

// serveWeb is `harness web`: boot, watch cordis.yml, serve the page until a
// signal comes.
func serveWeb(ctx context.Context, o *options, env Env) error {
	f := o.serve
	addr := f.http
	if addr == "" {
		addr = web.DefaultListen
	}
	token := f.token
	if token == "" {
		token, _ = env.Lookup(WebTokenEnv)
	}
	chosen := token != ""
	if !chosen {
		token = web.NewToken()
	}
	env.secrets.Add(token)
	if err := web.CheckListen(addr, chosen); err != nil {
		return usagef("%v%s", err, listenHint(err, "a token of your own (--token or "+WebTokenEnv+")"))
	}
	hs, file, err := boot(o, env)
	if err != nil {
		return err
	}
	defer hs.close()
	srv, err := web.New(web.Options{Host: hs.host, Tools: hs.tools, Agents: hs.agents, Resources: hs.resources, Prompts: hs.prompts, Login: pageLogin(o, env), Config: o.config, Logs: hs.logs,
		Token: token, AllowHosts: f.allowHosts, Logger: hs.log, Version: Version()})
	if err != nil {
		return err
	}
	if err := srv.Listen(addr, chosen); err != nil {
		return exit(ExitFailure, "harness web: %v", err)
	}
	// The page's run, the watcher, the signals and the HTTP server are
	// goroutines of one fiber, disposed once the server is closed.
	ctx, interrupt := context.WithCancelCause(ctx)
	defer interrupt(nil)
	life := fiber.New(ctx, "web")
	defer func() {
		interrupt(nil)
		closeCtx, stop := context.WithTimeout(context.Background(), shutdownTimeout)
		defer stop()
		_ = srv.Close(closeCtx)
		_ = life.Dispose(context.Background())
	}()
	_ = life.Go("run", func(ctx context.Context) { _ = srv.Run(ctx) })
	if err := hs.load(life.Context(), file); err != nil {
		return err
	}

	hs.follow(life, interrupt, o.config, env.Signals)

	served := make(chan error, 1)
	_ = life.Go("http", func(context.Context) { served <- srv.Serve() })
	// The one line with the token: stdout, unredacted (the person needs
	// it); with a token of the person's own, the URL without it.
	fmt.Fprintln(env.Stdout, srv.URL(!chosen))
	if chosen {
		hs.note("info", "the page takes the token you set (--token or "+WebTokenEnv+")")
	}
	select {
	case err = <-served:
	case <-life.Context().Done():
	}
	if err != nil && !errors.Is(err, context.Canceled) {
		return exit(ExitFailure, "harness web: %v", err)
	}
	return nil
}
