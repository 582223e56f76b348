package cli

import (
	"context"
	"errors"
	"fmt"

	"github.com/harness-go/harness/fiber"
	"github.com/harness-go/harness/host"
	"github.com/harness-go/harness/plugins/mcpserver"
)

// TokenEnv is the variable `serve --http` reads its token from when --token
// is not given (a flag shows in ps).
const TokenEnv = "HARNESS_TOKEN"

const serveHelp = `Usage: harness serve [flags] [--http ADDR [--token TOKEN] [--allow-host NAME]...] [--tools full|meta]

Serves the tools of cordis.yml as an MCP server, and keeps serving them as
cordis.yml is edited: every change is announced to the client
(notifications/tools/list_changed). Without --http it speaks MCP on stdin and
stdout, for an MCP client's "command"; stdout carries only protocol, logs go
to stderr. It stops at the end of stdin, or on SIGINT or SIGTERM; SIGHUP
re-reads cordis.yml.

  --http ADDR          serve Streamable HTTP at http://ADDR/mcp instead (127.0.0.1:8750,
                       say); prints "listening URL" on stdout once it accepts connections
  --token TOKEN        require "Authorization: Bearer TOKEN" (default: $HARNESS_TOKEN);
                       needed for an address other than loopback
  --allow-host NAME    accept this Host header too (a reverse proxy's name); repeatable
  --tools full|meta    full (default): every tool; meta: search_tools, describe_tool and
                       call_tool, which reach every tool, for clients that ignore list_changed

The first tools/list waits until the entries have settled (bounded by --wait).
mcp-server entries of cordis.yml are ignored: serve is the server. A
cordis.yml whose entry runs harness serve on that same file is refused
(a harness loop), and so is an HTTP request coming from this harness itself.
`

// serveFlags are the flags only serve takes.
type serveFlags struct {
	http       string
	token      string
	tools      string
	allowHosts []string
}

// set records one of serve's flags.
func (f *serveFlags) set(name string, value func() (string, error)) error {
	v, err := value()
	if err != nil {
		return err
	}
	switch name {
	case "http":
		f.http = v
	case "token":
		f.token = v
	case "tools":
		if mcpserver.CheckMode(v) != nil {
			return usagef("--tools must be full or meta, not %q", v)
		}
		f.tools = v
	case "allow-host":
		f.allowHosts = append(f.allowHosts, v)
	}
	return nil
}

// serve is `harness serve`: boot, watch cordis.yml, serve the tools over MCP
// until stdin ends (stdio) or a signal comes. Its goroutines (the watcher,
// the signals, the gateway's run, the report of problems, the HTTP server)
// live in one fiber, disposed on the way out before the listener and the
// host close.
func serve(ctx context.Context, o *options, env Env) error {
	f, err := serveFlagsOf(o, env)
	if err != nil {
		return err
	}
	hs, file, err := boot(o, env)
	if err != nil {
		return err
	}
	defer hs.close()
	gw, srv, err := hs.gateway(o, f)
	if err != nil {
		return err
	}
	if srv != nil {
		defer srv.Close(context.Background())
	}
	if err := hs.load(ctx, file); err != nil {
		return err
	}
	ctx, interrupt := context.WithCancelCause(ctx)
	defer interrupt(nil)
	life := fiber.New(ctx, "serve")
	defer life.Dispose(context.Background())
	hs.follow(life, interrupt, o.config, env.Signals)
	_ = life.Go("gateway", func(ctx context.Context) { _ = gw.Run(ctx) })
	_ = life.Go("problems", func(ctx context.Context) {
		// Once settled (or at the --wait bound), say on stderr what went
		// wrong: the client shows it in its server log.
		// Then a line per event: an edit of cordis.yml refused, an entry
		// that failed, what a reload changed.
		select {
		case <-gw.Ready():
			r := followEvents(hs) // from before the report: nothing after it is missed
			hs.reportProblems(!host.AllSettled(hs.host.Snapshot()))
			<-ctx.Done()
			r.stop()
		case <-ctx.Done():
		}
	})
	if srv == nil {
		if err := gw.ServeStdio(life.Context(), env.Stdin, env.Stdout); err != nil && life.Context().Err() == nil {
			return exit(ExitFailure, "harness serve: %v", err)
		}
		return nil
	}
	return serveHTTP(life, srv, env)
}

// serveFlagsOf returns serve's flags, the token from the environment when
// --token is not given, and refuses those that do not go together.
func serveFlagsOf(o *options, env Env) (serveFlags, error) {
	f := o.serve
	if f.token == "" {
		f.token, _ = env.Lookup(TokenEnv)
	}
	env.secrets.AddCredential(f.token)
	if f.http == "" && (o.serve.token != "" || len(f.allowHosts) > 0) {
		return f, usagef("--token and --allow-host go with --http")
	}
	if f.http != "" {
		if err := mcpserver.CheckListen(f.http, f.token); err != nil {
			return f, usagef("%v%s", err, listenHint(err, "a token (--token or "+TokenEnv+")"))
		}
	}
	return f, nil
}

// gateway creates serve's gateway and, with --http, binds its listener:
// before the entries start, so that an entry that reaches this gateway (a
// loop, refused) waits in the listen queue, not on a closed port.
func (hs *harness) gateway(o *options, f serveFlags) (*mcpserver.Gateway, *mcpserver.HTTPServer, error) {
	gw, err := mcpserver.New(hs.tools, mcpserver.Options{
		Mode:    f.tools,
		Settle:  mcpserver.SettleWithin(hs.host, o.wait),
		Self:    hs.self,
		Logger:  hs.log,
		Version: Version(),
		// Resources and prompts beside the tools (docs/rfc/0008-resources-prompts.md).
		Resources: hs.resources,
		Prompts:   hs.prompts,
	})
	if err != nil {
		return nil, nil, usagef("%v", err)
	}
	if f.http == "" {
		return gw, nil, nil
	}
	srv, err := gw.ListenHTTP(f.http, mcpserver.HTTPOptions{Token: f.token, AllowHosts: f.allowHosts})
	if err != nil {
		return nil, nil, exit(ExitFailure, "harness serve: %v", err)
	}
	return gw, srv, nil
}

// serveHTTP serves srv, on a goroutine of life, until it fails or life's
// context ends, then closes it, bounded.
func serveHTTP(life *fiber.Fiber, srv *mcpserver.HTTPServer, env Env) error {
	served := make(chan error, 1)
	if err := life.Go("http", func(context.Context) { served <- srv.Serve() }); err != nil {
		return nil // the serve's life already ended: nothing to serve
	}
	fmt.Fprintf(env.Stdout, "listening %s\n", srv.URL())
	var err error
	select {
	case err = <-served:
	case <-life.Context().Done():
	}
	closeCtx, stop := context.WithTimeout(context.Background(), shutdownTimeout)
	defer stop()
	_ = srv.Close(closeCtx)
	if err == nil {
		err = <-served
	}
	if err != nil && !errors.Is(err, context.Canceled) {
		return exit(ExitFailure, "harness serve: %v", err)
	}
	return nil
}
