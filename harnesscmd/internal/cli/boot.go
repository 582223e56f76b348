package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"syscall"
	"time"

	"github.com/harness-go/harness/fiber"
	"github.com/harness-go/harness/host"
	"github.com/harness-go/harness/host/jsexpr"
	"github.com/harness-go/harness/host/secret"
	"github.com/harness-go/harness/internal/loop"
	"github.com/harness-go/harness/internal/safe"
	"github.com/harness-go/harness/plugins/agent"
	"github.com/harness-go/harness/plugins/mcpclient"
	"github.com/harness-go/harness/plugins/mcpserver"
	"github.com/harness-go/harness/plugins/prompts"
	"github.com/harness-go/harness/plugins/resources"
	"github.com/harness-go/harness/plugins/tools"
	"github.com/harness-go/harness/plugins/web"
)

// shutdownTimeout bounds the disposal of everything at exit.
const shutdownTimeout = 20 * time.Second

// harness is a booted host with its tools.
type harness struct {
	o     *options
	env   Env
	log   *slog.Logger
	host  *host.Host
	self  *loop.Self // who this harness is among harnesses
	tools *tools.Registry
	// resources and prompts are the other two services of MCP servers.
	resources *resources.Registry
	prompts   *prompts.Registry
	// agents holds the agent entries' agents, by entry id.
	agents *agent.Directory
	// logs keeps the recent log records for the web pages (plugins/web).
	logs *web.Logs
}

// newLogger logs to w at --log-level, redacted; with pages, the records
// also go to them (at every level, while a page is served).
func newLogger(w io.Writer, o *options, secrets *secret.Set, pages *web.Logs) *slog.Logger {
	level := slog.LevelWarn
	if o.logLevel != "" {
		level = levels[o.logLevel]
	}
	opts := &slog.HandlerOptions{Level: level}
	var h slog.Handler = slog.NewTextHandler(w, opts)
	if o.logFormat == "json" {
		h = slog.NewJSONHandler(w, opts)
	}
	h = secrets.Handler(h)
	if pages != nil {
		h = slog.NewMultiHandler(h, secrets.Handler(pages.Handler()))
	}
	return slog.New(h)
}

func jsEnv(env Env) *jsexpr.Env {
	cwd, _ := os.Getwd()
	return &jsexpr.Env{Lookup: env.Lookup, Cwd: cwd, ExecPath: jsexpr.Executable()}
}

// boot reads cordis.yml and creates the host, with nothing loaded yet: the
// caller subscribes to progress, then calls load. A file that does not parse
// is exit code 2.
func boot(o *options, env Env) (*harness, *host.File, error) {
	var pages *web.Logs
	if servesPages(o.command) {
		pages = web.NewLogs()
	}
	log := newLogger(env.Stderr, o, env.secrets, pages)
	f, err := host.ReadFile(o.config)
	if err != nil {
		return nil, nil, exit(ExitUsage, "harness: %s", safe.Text(err.Error()))
	}
	// Who this harness is among harnesses (a loop of harnesses starting
	// one another is refused here, before anything starts).
	chain, _ := env.Lookup(loop.EnvVar)
	self := loop.New(o.config, chain)
	if err := self.CheckStart(); err != nil {
		return nil, nil, exit(ExitUsage, "harness: refusing to start: %v%s", err, loopHint(err))
	}
	h := host.New(host.Options{Logger: log, Env: jsEnv(env), Secrets: env.secrets})
	gateway := mcpserver.HostOptions{Settle: mcpserver.SettleWithin(h, o.wait)}
	switch o.command {
	case "run":
	case "serve":
		gateway.Ignore = "harness serve serves this host itself"
	default:
		gateway.Ignore = "only harness run serves mcp-server entries"
	}
	// The program's settings for its plugins, each provided once, before
	// the load (a second, or one after an entry went on without it, is an
	// error): who this harness is, the gateway's and the page's options,
	// and the token store of remote servers' logins, the one `harness
	// login` writes (no start ever logs in: it only reads it).
	settings := []error{
		loop.SelfKey.ProvideBy(h, self),
		mcpserver.HostOptionsKey.ProvideBy(h, gateway),
		web.HostOptionsKey.ProvideBy(h, webHostOptions(h, o, env, pages)),
	}
	if store, err := oauthStore(env); err == nil {
		settings = append(settings, mcpclient.OAuthKey.ProvideBy(h, mcpclient.OAuthOptions{StoreDir: store.Dir}))
	}
	reg := tools.New(tools.WithLogger(log))
	agents := agent.NewDirectory()
	res, pr := resources.New(), prompts.New()
	if err := errors.Join(append(settings, tools.Key.ProvideBy(h, reg), resources.Key.ProvideBy(h, res), prompts.Key.ProvideBy(h, pr), agent.DirectoryKey.ProvideBy(h, agents))...); err != nil {
		return nil, nil, err
	}
	return &harness{o: o, env: env, log: log, host: h, self: self, tools: reg, resources: res, prompts: pr, agents: agents, logs: pages}, f, nil
}

// load applies the configuration read by boot. A configuration that does not
// load is exit code 2.
func (hs *harness) load(ctx context.Context, f *host.File) error {
	if _, err := hs.host.Load(ctx, f); err != nil {
		return exit(ExitUsage, "harness: %s", safe.Text(err.Error()))
	}
	return nil
}

// close disposes every entry, bounded.
func (hs *harness) close() {
	ctx, cancel := context.WithTimeout(context.Background(), shutdownTimeout)
	defer cancel()
	if err := hs.host.Close(ctx); err != nil {
		hs.log.Warn("shutdown incomplete", "err", err)
	}
}

// settle waits until every entry settles, bounded by --wait, or until ctx
// ends. It returns false when the bound was hit first (with --wait 0: when
// anything is unsettled).
func (hs *harness) settle(ctx context.Context) bool {
	if hs.o.wait <= 0 {
		return host.AllSettled(hs.host.Snapshot())
	}
	ctx, cancel := context.WithTimeout(ctx, hs.o.wait)
	defer cancel()
	return hs.host.Settle(ctx) == nil
}

// reportProblems tells, on stderr, about the entries that failed, that are
// reconnecting, whose reload failed while the previous instance serves, that
// wait for a service nobody provides, and — when the caller waited the whole
// --wait bound (timedOut) — those that had not settled. It reports whether
// the exit code must be 1: any of these but the pending ones.
func (hs *harness) reportProblems(timedOut bool) bool {
	return hs.report(timedOut, false)
}

// report is reportProblems; with ignoreReconnecting (call, which cares only
// about its tool) an entry reconnecting or whose reload failed while the
// previous instance serves is no problem.
func (hs *harness) report(timedOut, ignoreReconnecting bool) bool {
	bad := false
	for _, e := range hs.host.Snapshot() {
		msg, counts := hs.problem(e, timedOut, ignoreReconnecting)
		if msg != "" {
			hs.note("warn", msg)
		}
		bad = bad || counts
	}
	return bad
}

// problem is the rule of report and status (the README's exit codes):
// what is wrong with e, for a person ("" if nothing), and whether it makes
// the exit code 1. Failed counts; so do reconnecting and a failed reload
// while the previous instance serves (the note), unless ignoreReconnecting;
// and not settled, when the caller waited the whole bound (timedOut). A
// pending entry that waits for a service nobody provides is said, not
// counted.
func (hs *harness) problem(e host.EntryStatus, timedOut, ignoreReconnecting bool) (msg string, counts bool) {
	switch {
	case e.State == host.Failed:
		return fmt.Sprintf("entry %q failed: %s", e.ID, safe.Text(e.Error)), true
	case e.State == host.NeedsLogin:
		return fmt.Sprintf("entry %q needs a login: %s: %s", e.ID, loginHint(e.ID), safe.Text(e.Error)), !ignoreReconnecting
	case e.State == host.Reconnecting && !ignoreReconnecting:
		return fmt.Sprintf("entry %q is reconnecting: %s", e.ID, safe.Text(e.Error)), true
	case e.Note != "" && !ignoreReconnecting:
		return fmt.Sprintf("entry %q: %s", e.ID, safe.Text(e.Note)), true
	case !e.Settled && timedOut:
		return fmt.Sprintf("entry %q is still %s after --wait %s", e.ID, e.State, hs.o.wait), true
	case e.State == host.Pending && e.Settled:
		return fmt.Sprintf("entry %q is pending: no enabled entry provides %s", e.ID, strings.Join(e.Missing, ", ")), false
	}
	return "", false
}

// note tells a person something on stderr: a line "harness: msg", or with
// --log-format json a JSON record, so that stderr stays one format.
func (hs *harness) note(level, msg string) {
	if hs.o.logFormat != "json" {
		msg = "harness: " + msg
	}
	say(hs.env.Stderr, hs.o, level, msg)
}

// say writes one line of ours to stderr: as it is, or as a JSON record with
// --log-format json.
func say(stderr io.Writer, o *options, level, msg string) {
	if o.logFormat == "json" {
		writeRecord(stderr, level, msg)
		return
	}
	fmt.Fprintln(stderr, msg)
}

// writeRecord writes msg as one JSON record, as the log's JSON handler
// writes them: --log-format json keeps stderr one format.
func writeRecord(w io.Writer, level, msg string) {
	b, _ := json.Marshal(struct {
		Time  time.Time `json:"time"`
		Level string    `json:"level"`
		Msg   string    `json:"msg"`
	}{time.Now(), strings.ToUpper(level), msg})
	w.Write(append(b, '\n'))
}

// oneShot boots, loads, runs fn (which settles as it needs) and shuts down.
// On a terminal a live line shows the entries starting.
func oneShot(ctx context.Context, o *options, env Env, fn func(context.Context, *harness, *reporter) error) error {
	ctx, stop := withSignals(ctx, env.Signals)
	defer stop()
	hs, f, err := boot(o, env)
	if err != nil {
		return err
	}
	defer hs.close()
	progress := startProgress(hs, false)
	err = hs.load(ctx, f)
	if err == nil {
		err = fn(ctx, hs, progress)
	}
	progress.stop()
	return err
}

// withSignals cancels ctx on the first signal.
func withSignals(ctx context.Context, signals <-chan os.Signal) (context.Context, func()) {
	ctx, cancel := context.WithCancelCause(ctx)
	done := make(chan struct{})
	go func() {
		select {
		case s, ok := <-signals:
			if ok {
				cancel(fmt.Errorf("%w: %s", errInterrupted, s))
			}
		case <-done:
		}
	}()
	return ctx, func() { close(done); cancel(nil) }
}

var errInterrupted = errors.New("interrupted")

// follow keeps a long-running command (serve, web) in step with its
// configuration file and its signals, on two goroutines of life: "watch"
// reloads on an edit of the file (host.Watcher); "signals" reloads on SIGHUP
// and, on any other signal, calls cancel with errInterrupted (cancel ends
// the context life derives from). Disposing life stops and awaits both.
func (hs *harness) follow(life *fiber.Fiber, cancel context.CancelCauseFunc, config string, signals <-chan os.Signal) {
	watcher := host.NewWatcher(hs.host, config, host.WatcherOptions{Logger: hs.log})
	_ = life.Go("watch", func(ctx context.Context) {
		if err := watcher.Run(ctx); err != nil {
			hs.log.Warn("not watching the configuration", "err", err)
		}
	})
	_ = life.Go("signals", func(ctx context.Context) {
		for {
			select {
			case s, ok := <-signals:
				if !ok {
					return
				}
				if s == syscall.SIGHUP {
					watcher.Reload()
					continue
				}
				cancel(fmt.Errorf("%w: %s", errInterrupted, s))
				return
			case <-ctx.Done():
				return
			}
		}
	})
}
