package mcpclient

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/harness-go/harness/host"
	"github.com/harness-go/harness/host/secret"
	"github.com/harness-go/harness/internal/jsonrpc"
	"github.com/harness-go/harness/internal/loop"
	"github.com/harness-go/harness/internal/proc"
	"github.com/harness-go/harness/internal/safe"
	"github.com/harness-go/harness/plugins/prompts"
	"github.com/harness-go/harness/plugins/resources"
	"github.com/harness-go/harness/plugins/tools"
)

// supervisor is one instance's owner of its connection, its registration
// (registration.go) and its calls. Its goroutine (run) makes every
// connection and every listing, one at a time; calls read the current
// session under mu. Where the connection stands is one typed phase, which
// changes in one function, setPhase, with everything that goes with a
// change.
//
// The rules, in order:
//
//  1. The first connection and listing are the instance's start: a failure
//     fails the entry (a typo in command fails fast, nothing retries).
//  2. A fresh instance registers its first listing at once. A successor
//     (make before break) keeps it staged until the host calls TakeOver,
//     which swaps the predecessor's registration for it in one step; from
//     then on the predecessor is retired: it lists and swaps nothing, and
//     hands any call that reaches it to its successor.
//  3. list_changed re-lists and swaps, in the run goroutine: listings never
//     overlap. A change of the live filters swaps the last listing,
//     filtered anew, without listing.
//  4. When the connection is lost: with reconnect disabled, the tools go and
//     the entry fails. Otherwise the entry is reconnecting and the tools
//     stay; the attempts follow the policy (policy.go: nextAttempt), each
//     connects, lists and swaps; success makes the entry ready again. A
//     live edit of the policy starts the count again. After maxAttempts, or
//     once a live edit turned reconnecting off, the tools go and the entry
//     fails with the last error. A successor starting beside this instance
//     pauses its attempts (the edit supersedes them) until it takes over;
//     if it fails, the host stops this instance too (host rule 10, make before break), and
//     resuming them matters only when the successor went another way (a
//     newer edit).
//  5. A call waits for a session up to its own timeout, and is counted on
//     the instance whose session it gets (a retired one's drain waits for
//     it there). A request that never reached the server moves to the next
//     connection; one that was sent and lost fails, and is never sent twice.
type supervisor struct {
	ctx       *host.Context
	log       *slog.Logger
	secrets   *secret.Set
	reg       *tools.Registry
	resReg    *resources.Registry
	promptReg *prompts.Registry
	spawn     *proc.Spawner // the host's, for a stdio server; nil over HTTP
	self      *loop.Self    // this harness, for loop detection (package loop)
	auth      *entryAuth    // OAuth over HTTP (oauth.go); nil without
	// authedAtDial: the store held a login when the session in use was
	// dialled (OAuth entries). Written by connect and read by serve, both
	// on the supervisor's goroutine.
	authedAtDial bool
	server       string // serverName, fixed for the instance's life
	syncReq      chan struct{}
	pending      atomic.Uint32 // the listKind bits a re-sync is asked to list
	// releaseName lets go of this instance's hold on the serverName; a
	// retired instance lets go at once, so the name can move to another
	// entry while it drains.
	releaseName func()

	cfg configRef

	syncMu sync.Mutex // serializes registry swaps with TakeOver

	mu           sync.Mutex
	phase        phase
	failErr      error                       // why the instance stopped serving for good (phase failed)
	ready        bool                        // it started: a later failure fails the entry
	sess         *session                    // the session calls use; nil while there is none
	closeSess    func(context.Context) error // closes sess, once
	last         *session                    // the latest session made, for status (stderr, pid)
	changed      chan struct{}               // closed and replaced at every change of phase, sess, successor
	attempt      int
	nextTry      time.Time
	lastErr      string
	reconnects   int
	since        time.Time // when the current connection came up
	gen          *generation
	staged       *generation // a successor's listing before TakeOver
	lastList     []rawTool   // the last valid listing, for a change of the filters
	syncs        int
	lastSync     time.Time
	syncErr      string
	resSet       *resources.Set // the registered resources, nil when none
	promptSet    *prompts.Set   // the registered prompts, nil when none
	resDigest    [32]byte
	promptDigest [32]byte
	stagedX      *extras         // a successor's resources and prompts before TakeOver
	subs         map[string]bool // resource uris subscribed to on the server
	pred         *supervisor     // the instance this one is to replace, until TakeOver
	successor    *supervisor     // set at TakeOver: calls that still reach us go there
	paused       bool            // a successor is starting: hold the reconnect attempts
	resume       chan struct{}
	inflight     int
	idle         chan struct{} // closed when inflight drops to 0
}

// phase is where an instance's connection stands.
type phase int

const (
	phaseConnecting   phase = iota // the first connection is under way
	phaseConnected                 // a session serves calls
	phaseReconnecting              // the connection was lost; attempts follow the policy
	phaseNeedsLogin                // the server wants a login: no tools; waits for one in the store
	phaseLost                      // retired, and its connection is gone: calls go to the successor
	phaseFailed                    // it stopped serving for good (start failed, gave up)
	phaseStopped                   // disposed: nothing of it runs or is registered
)

func (p phase) String() string {
	switch p {
	case phaseConnecting:
		return "connecting"
	case phaseConnected:
		return "connected"
	case phaseReconnecting:
		return "reconnecting"
	case phaseNeedsLogin:
		return "needs-login"
	case phaseLost:
		return "lost"
	case phaseFailed:
		return "failed"
	case phaseStopped:
		return "stopped"
	}
	return fmt.Sprintf("phase(%d)", int(p))
}

// configRef is the one owner of the instance's configuration: the
// supervisor reads it where a value is used, and Reconfigure replaces it
// (never changes it in place).
type configRef struct{ p atomic.Pointer[Config] }

func (r *configRef) load() *Config   { return r.p.Load() }
func (r *configRef) store(c *Config) { r.p.Store(c) }

func newSupervisor(ctx *host.Context, cfg *Config, reg *tools.Registry, resReg *resources.Registry, promptReg *prompts.Registry) *supervisor {
	s := &supervisor{
		ctx:       ctx,
		log:       ctx.Logger().With("server", cfg.ServerName),
		secrets:   ctx.Secrets(),
		reg:       reg,
		resReg:    resReg,
		promptReg: promptReg,
		server:    cfg.ServerName,
		syncReq:   make(chan struct{}, 1),
		changed:   make(chan struct{}),
	}
	s.cfg.store(cfg)
	return s
}

func (s *supervisor) config() *Config { return s.cfg.load() }

// setPhase is the one place where the phase changes, and where what goes
// with a change is done: the calls waiting for a session are woken, the
// host hears of an outage (reconnecting, with why: err) and of its end,
// and a failure drops the tools and fails the entry (a failure at start is
// reported by the start itself). failed and stopped are final.
func (s *supervisor) setPhase(p phase, err error) {
	s.mu.Lock()
	prev := s.phase
	if prev == phaseFailed || prev == phaseStopped {
		s.mu.Unlock()
		return
	}
	s.phase = p
	wasReady := s.ready
	switch p {
	case phaseConnected:
		s.nextTry, s.lastErr = time.Time{}, ""
		if prev == phaseReconnecting {
			s.reconnects++
		}
	case phaseReconnecting, phaseNeedsLogin:
		if err != nil {
			s.lastErr = err.Error()
		}
	case phaseFailed:
		s.failErr = err
	}
	s.bumpLocked()
	s.mu.Unlock()

	switch {
	case p == phaseConnected && (prev == phaseReconnecting || prev == phaseNeedsLogin):
		s.ctx.Reconnecting(nil)
	case p == phaseNeedsLogin:
		s.dropTools()
		if wasReady {
			s.ctx.NeedsLogin(err)
		}
	case p == phaseReconnecting:
		s.ctx.Reconnecting(err)
	case p == phaseFailed:
		s.dropTools()
		if wasReady {
			s.ctx.Fail(err)
		}
	}
}

// succeed makes s the successor-to-be of pred: pred holds its reconnect
// attempts while s starts, and resumes them if s goes without taking over.
func (s *supervisor) succeed(pred *supervisor) {
	s.pred = pred
	pred.holdAttempts(true)
	_, _ = s.ctx.Defer("resume the predecessor", func(context.Context) error {
		s.mu.Lock()
		p := s.pred
		s.mu.Unlock()
		if p != nil {
			p.holdAttempts(false) // never took over
		}
		return nil
	})
}

// holdAttempts pauses (or resumes) the reconnect attempts.
func (s *supervisor) holdAttempts(paused bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.paused == paused {
		return
	}
	s.paused = paused
	if !paused && s.resume != nil {
		close(s.resume)
		s.resume = nil
	}
}

// bumpLocked wakes the calls that wait for a change.
func (s *supervisor) bumpLocked() {
	close(s.changed)
	s.changed = make(chan struct{})
}

// run connects, registers (or stages) the first listing, then serves
// re-syncs and reconnects until the instance is disposed or gives up.
func (s *supervisor) run(life context.Context, done func(error)) {
	sess, list, more, err := s.connect(life)
	if nl, ok := s.needsLogin(err); ok {
		// Settled, not failed: the entry needs a login (rule 6). An empty
		// generation is registered (or staged, for a successor).
		_ = s.sync(nil)
		s.setPhase(phaseNeedsLogin, nl)
		done(&host.LoginNeeded{Err: nl})
		s.mu.Lock()
		s.ready = true // it started: from now on a failure fails the entry
		s.mu.Unlock()
		if sess, list, more = s.awaitLogin(life); sess == nil {
			return
		}
		s.install(sess)
		err = s.sync(list)
		s.noteSync(err)
		if err != nil {
			s.setPhase(phaseFailed, err)
			return
		}
		s.syncExtras(more)
		s.setPhase(phaseConnected, nil)
		s.serve(life, sess)
		return
	}
	if err != nil {
		s.setPhase(phaseFailed, err)
		done(err)
		return
	}
	s.install(sess)
	s.setPhase(phaseConnected, nil)
	err = s.sync(list)
	s.noteSync(err)
	if err != nil {
		s.setPhase(phaseFailed, err)
		done(err) // the disposal closes the session
		return
	}
	s.syncExtras(more)
	s.mu.Lock()
	s.ready = true // from now on a failure fails the entry (setPhase)
	s.mu.Unlock()
	done(nil)
	s.serve(life, sess)
}

// serve re-syncs and reconnects until the instance is disposed or gives up.
func (s *supervisor) serve(life context.Context, sess *session) {
	// An OAuth entry watches the store: a logout (by `harness logout`, in
	// any process) ends the session at once, and the entry needs a login.
	// A machine client does not: its next request gets another token;
	// unless it is the person's, through the harness's login at an IdP.
	var watch <-chan time.Time
	loggedIn := false
	if s.auth != nil && (!s.auth.machine() || s.auth.flow.Settings.IdPLogin()) {
		t := time.NewTicker(s.auth.poll())
		defer t.Stop()
		watch = t.C
		loggedIn = s.authedAtDial
	}
	for {
		select {
		case <-life.Done():
			return
		case <-s.syncReq:
			s.resync(life)
		case <-sess.Done():
			if sess = s.recover(life, sess); sess == nil {
				return
			}
			// What the store held when the new session was dialled, not
			// now: a logout right after the login it waited for (the entry
			// was ready before this line) must still end the session.
			loggedIn = s.authedAtDial
		case <-watch:
			now := s.auth.loggedIn()
			if !loggedIn || now {
				loggedIn = now
				continue
			}
			s.mu.Lock()
			closeSess := s.closeSess
			s.closeSess, s.sess = nil, nil
			s.mu.Unlock()
			if closeSess != nil {
				_ = closeSess(context.Background())
			}
			if sess = s.relogin(life, &NeedsLoginError{Server: s.server, Entry: s.ctx.ID(), Reason: "logged out"}); sess == nil {
				return
			}
			loggedIn = s.authedAtDial
		}
	}
}

// connect dials, starts the session and lists the tools (and the
// resources and prompts), within startupTimeoutMs. What it returns is not
// installed yet.
func (s *supervisor) connect(life context.Context) (*session, []rawTool, *extras, error) {
	cfg := s.config()
	ctx, cancel := context.WithTimeout(life, cfg.startupTimeout())
	defer cancel()
	chained := withChain(*cfg, s.self)
	if s.auth != nil {
		s.authedAtDial = s.auth.loggedIn()
		chained.wrap = s.auth.wrap
	}
	f, err := dial(s.spawn, &chained, s.ctx.Dir(), s.log, s.secrets)
	if err != nil {
		return nil, nil, nil, err
	}
	sess := newSession(f, s.log, s.secrets, sessionOptions{
		strategy:      cfg.Protocol,
		server:        s.server,
		roots:         func() []string { return rootURIs(s.config().Roots, s.ctx.Dir()) },
		onListChanged: s.requestSync,
		onUpdated:     s.updated,
	})
	if pid := sess.pid(); pid != 0 {
		s.log.Debug("server started", "pid", pid, "command", cfg.describe())
	}
	s.mu.Lock()
	s.last = sess // its stderr explains a failure
	s.mu.Unlock()
	err = sess.handshake(life, ctx)
	if err == nil {
		err = s.checkLoop(sess)
	}
	var list []rawTool
	if err == nil {
		info, proto := sess.serverInfo()
		s.log.Info("connected", "serverInfo", safe.Line(info.Name+" "+info.Version), "protocol", proto)
		list, err = sess.listTools(ctx)
		if err != nil {
			s.noteSync(err)
		}
	}
	if err != nil {
		if errors.Is(err, context.DeadlineExceeded) && life.Err() == nil {
			err = fmt.Errorf("startup timed out after %s (startupTimeoutMs): %w", cfg.startupTimeout(), sess.explain(err))
		}
		_ = sess.close()
		return nil, nil, nil, s.secrets.Err(err)
	}
	return sess, list, s.listExtras(ctx, sess, listResources|listPrompts), nil
}

// install makes sess the session calls use; it is closed when it is lost
// (recover) or the instance is disposed, whichever comes first. The caller
// moves the phase to connected once the listing is in.
func (s *supervisor) install(sess *session) {
	release, err := s.ctx.Defer("close the connection", func(context.Context) error { return sess.close() })
	if err != nil {
		return // disposed meanwhile: the disposer ran already
	}
	s.mu.Lock()
	s.closeSess = release
	s.sess, s.since = sess, time.Now()
	s.bumpLocked()
	s.mu.Unlock()
}

// recover handles the loss of sess (rule 4) and returns the next session,
// or nil when the instance stops.
func (s *supervisor) recover(life context.Context, lost *session) *session {
	reason := s.secrets.Err(lost.Err())
	if life.Err() != nil {
		return nil
	}
	s.mu.Lock()
	retired := s.successor != nil
	up := time.Since(s.since)
	closeLost := s.closeSess
	s.closeSess, s.sess = nil, nil
	s.mu.Unlock()
	if closeLost != nil {
		_ = closeLost(context.Background()) // its process is gone: the ladder is quick
	}
	if retired {
		s.setPhase(phaseLost, reason) // a successor serves: calls that still reach us go there
		return nil
	}
	if nl, ok := s.needsLogin(reason); ok {
		return s.relogin(life, nl)
	}
	if !s.config().Reconnect.Enabled {
		s.setPhase(phaseFailed, reason)
		return nil
	}
	s.log.Info("the connection was lost; reconnecting", "err", reason)
	s.setPhase(phaseReconnecting, reason)
	for {
		cfg := s.config()
		s.mu.Lock()
		next := nextAttempt(cfg.Reconnect, s.attempt, up)
		up = 0
		s.attempt = next.n
		last := s.lastErr
		if !next.giveUp {
			s.nextTry = time.Now().Add(next.wait)
		}
		s.mu.Unlock()
		switch {
		case next.giveUp && !cfg.Reconnect.Enabled:
			// Turned off by a live edit during the outage.
			s.setPhase(phaseFailed, fmt.Errorf("reconnecting was turned off: %s", last))
			return nil
		case next.giveUp:
			s.setPhase(phaseFailed, fmt.Errorf("gave up reconnecting after %d attempts: %s", cfg.Reconnect.MaxAttempts, last))
			return nil
		}
		if !s.waitForAttempt(life, next.wait) {
			return nil
		}
		sess, list, more, err := s.connect(life)
		if nl, ok := s.needsLogin(err); ok {
			return s.relogin(life, nl)
		}
		if err != nil {
			if life.Err() != nil {
				return nil
			}
			s.setPhase(phaseReconnecting, fmt.Errorf("attempt %d/%d failed: %w", next.n, cfg.Reconnect.MaxAttempts, err))
			s.mu.Lock()
			s.lastErr = err.Error()
			s.mu.Unlock()
			continue
		}
		s.install(sess)
		err = s.sync(list)
		s.noteSync(err)
		if err != nil {
			// The seeds' rule holds here too: an invalid listing changes
			// nothing, and the previous tools stay.
			s.log.Warn("the listing after reconnecting is invalid; the previous tools stay registered", "err", err)
		}
		s.syncExtras(more)
		_ = s.ctx.Go("subscribe anew", func(ctx context.Context) { s.resubscribe(ctx, sess) }) // the new connection knows of no subscription
		s.log.Info("reconnected", "attempt", next.n)
		s.setPhase(phaseConnected, nil)
		return sess
	}
}

// waitForAttempt waits d before the next reconnect attempt, then for as
// long as the attempts are held (holdAttempts: a successor starts). It
// reports false when the instance stops meanwhile.
func (s *supervisor) waitForAttempt(life context.Context, d time.Duration) bool {
	if !sleepCtx(life, d) {
		return false
	}
	for {
		s.mu.Lock()
		if !s.paused {
			s.mu.Unlock()
			return true
		}
		if s.resume == nil {
			s.resume = make(chan struct{})
		}
		resume := s.resume
		s.mu.Unlock()
		select {
		case <-resume:
		case <-life.Done():
			return false
		}
	}
}

// resync lists what list_changed named and swaps it in (rule 3).
func (s *supervisor) resync(life context.Context) {
	what := listKind(s.pending.Swap(0))
	s.mu.Lock()
	sess := s.sess
	s.mu.Unlock()
	if sess == nil {
		return
	}
	ctx, cancel := context.WithTimeout(life, s.config().startupTimeout())
	defer cancel()
	if what&(listResources|listPrompts) != 0 {
		s.syncExtras(s.listExtras(ctx, sess, what))
	}
	if what&listTools == 0 {
		return
	}
	list, err := sess.listTools(ctx)
	if err == nil {
		err = s.sync(list)
	}
	s.noteSync(err)
	if err != nil && life.Err() == nil {
		if s.toolCount() > 0 {
			s.log.Warn("re-sync failed; the previous tools stay registered", "err", err)
		} else {
			s.log.Warn("re-sync failed; the server has no tools registered", "err", err)
		}
	}
}

// reconfigure applies the live keys of next. An edit of roots that would
// declare roots to a server of the handshake era that was told there are
// none (or the other way round) cannot apply to the running session: it is
// refused, and the host re-creates the instance.
func (s *supervisor) reconfigure(next *Config) error {
	cur := s.config()
	s.mu.Lock()
	sess := s.sess
	s.mu.Unlock()
	if sess != nil && !sess.modern() && (len(cur.Roots) > 0) != (len(next.Roots) > 0) {
		return errors.New("roots were declared to the server at its start, or not: a new connection declares them")
	}
	cfg := *cur
	cfg.ToolCallTimeoutMs = next.ToolCallTimeoutMs
	cfg.MaxResultBytes = next.MaxResultBytes
	cfg.EnabledTools = next.EnabledTools
	cfg.DisabledTools = next.DisabledTools
	cfg.Reconnect = next.Reconnect
	cfg.Roots = next.Roots
	s.cfg.store(&cfg)
	if cur.Reconnect != cfg.Reconnect {
		s.mu.Lock()
		s.attempt = 0 // an edit of the policy starts the count again
		s.mu.Unlock()
	}
	if !slices.Equal(cur.EnabledTools, cfg.EnabledTools) || !slices.Equal(cur.DisabledTools, cfg.DisabledTools) {
		_ = s.ctx.Go("apply the tool filters", s.refilter) // off the host's goroutine; fails only once disposed
	}
	if !slices.Equal(cur.Roots, cfg.Roots) && sess != nil {
		_ = s.ctx.Go("tell the server of the new roots", func(context.Context) { sess.rootsChanged() })
	}
	return nil
}

// callDone uncounts a call that session counted here.
func (s *supervisor) callDone() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.inflight--
	if s.inflight == 0 && s.idle != nil {
		close(s.idle)
		s.idle = nil
	}
}

// drain waits until no call is in flight here, or ctx ends.
func (s *supervisor) drain(ctx context.Context) {
	s.mu.Lock()
	if s.inflight == 0 {
		s.mu.Unlock()
		return
	}
	if s.idle == nil {
		s.idle = make(chan struct{})
	}
	idle := s.idle
	n := s.inflight
	s.mu.Unlock()
	s.log.Debug("draining calls in flight", "calls", n)
	select {
	case <-idle:
	case <-ctx.Done():
	}
}

// errStopped is the error of a call that reached an instance that was
// disposed without a successor (its entry removed).
var errStopped = errors.New("the server's entry was stopped")

// session returns the session a call should use: this instance's, once it
// is up, or — retired — its successor's (rule 5). It waits up to ctx. The
// call is counted on the instance whose session it gets, in the same step
// (drain waits for it there); owner.callDone uncounts it.
func (s *supervisor) session(ctx context.Context) (owner *supervisor, sess *session, err error) {
	for {
		owner, sess, wait, err := s.trySession()
		if wait == nil {
			return owner, sess, err
		}
		s = owner
		select {
		case <-wait:
		case <-s.ctx.Context().Done():
		case <-ctx.Done():
			return s, nil, ctx.Err()
		}
	}
}

// sessionNow is session without waiting: nil when no session is there now
// (the caller then waits in session). A session it returns is counted
// (callDone).
func (s *supervisor) sessionNow() (owner *supervisor, sess *session) {
	owner, sess, _, _ = s.trySession()
	if sess == nil {
		return owner, nil
	}
	return owner, sess
}

// trySession is one look for session: the session (counted), or why there
// is none, or a channel that changes when there may be one.
func (s *supervisor) trySession() (owner *supervisor, sess *session, wait <-chan struct{}, err error) {
	for {
		s.mu.Lock()
		sess, changed, next, ph, failErr := s.sess, s.changed, s.successor, s.phase, s.failErr
		if sess != nil && isDone(sess.Done()) {
			sess = nil // lost; the run goroutine is about to notice
		}
		if next == nil && sess != nil {
			s.inflight++
		}
		s.mu.Unlock()
		switch {
		case next != nil:
			// Retired: the successor takes every call from now on; those
			// already in flight here finish here (drain).
			s = next
			continue
		case sess != nil:
			return s, sess, nil, nil
		case ph == phaseFailed:
			return s, nil, nil, failErr
		case ph == phaseNeedsLogin:
			return s, nil, nil, s.loginError()
		case s.ctx.Context().Err() != nil:
			return s, nil, nil, errStopped
		}
		return s, nil, changed, nil
	}
}

// outage describes why no session is there, for a call that waited in
// vain.
func (s *supervisor) outage() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.phase != phaseReconnecting {
		return ""
	}
	max := s.config().Reconnect.MaxAttempts
	return fmt.Sprintf("server %s is reconnecting (attempt %d/%d): %s", s.server, s.attempt, max, s.lastErr)
}

// executor calls one tool by its raw name; public is its name in the
// registry, for the fronts the server's questions go to.
func (s *supervisor) executor(raw, public string) tools.Executor {
	return func(ctx context.Context, args json.RawMessage) (tools.Result, error) {
		cfg := s.config()
		timeout := cfg.toolCallTimeout()
		cctx, cancel := context.WithTimeout(ctx, timeout)
		defer cancel()
		for {
			owner, sess, err := s.session(cctx)
			if err == nil {
				var res json.RawMessage
				res, err = sess.callTool(cctx, public, raw, tools.ObjectArgs(args))
				owner.callDone()
				if err == nil {
					return owner.callResult(ctx, res, raw)
				}
				if nl, ok := s.needsLogin(err); ok {
					// The model's words: it cannot log in, a person can.
					return tools.Result{Text: nl.Error() + "; a person logs in with `harness login " + nl.Entry + "`", IsError: true}, nil
				}
				if notSent(err) && !errors.Is(err, errSessionGone) && cctx.Err() == nil {
					continue // it never reached the server: the next connection takes it
				}
			}
			return tools.Result{}, owner.callError(ctx.Err() != nil, errors.Is(cctx.Err(), context.DeadlineExceeded), raw, timeout, err)
		}
	}
}

// callError is the error of a call of tool raw that failed with err:
// cancelled by its caller, timed out after timeout, or err, said for the
// model.
func (s *supervisor) callError(cancelled, timedOut bool, raw string, timeout time.Duration, err error) error {
	switch {
	case cancelled:
		return fmt.Errorf("the call to %q was cancelled", raw)
	case timedOut:
		if o := s.outage(); o != "" {
			return errors.New(o)
		}
		return fmt.Errorf("%q timed out after %s (toolCallTimeoutMs)", raw, timeout)
	}
	var lost *ConnectionLostError
	if errors.As(err, &lost) {
		err = fmt.Errorf("connection lost during the call: %s", lost.Reason)
	}
	// Transport errors may quote what we sent (an error page that repeats
	// the headers): they are our text, so hide the secrets.
	return s.secrets.Err(err)
}

// starter starts one call of a tool by its raw name without waiting
// (tools.Starter), when a session is there now and can (session.startCall);
// otherwise the caller runs executor, which waits for a session.
func (s *supervisor) starter(raw, public string) tools.Starter {
	return func(ctx context.Context, args json.RawMessage, done func(tools.Result, error)) bool {
		owner, sess := s.sessionNow()
		if sess == nil {
			return false
		}
		timeout := s.config().toolCallTimeout()
		// The result carries the burst its response was read in: the
		// caller may write it out with the others (tools.Result.Burst).
		burst := sess.r.resultBurst()
		ok := sess.startCall(ctx, public, raw, tools.ObjectArgs(args), timeout, func(res json.RawMessage, err error) {
			owner.callDone()
			if err != nil {
				done(tools.Result{Burst: burst}, owner.callError(ctx.Err() != nil, errors.Is(err, errCallTimedOut), raw, timeout, err))
				return
			}
			r, err := owner.callResult(ctx, res, raw)
			r.Burst = burst
			done(r, err)
		})
		if !ok {
			owner.callDone()
		}
		return ok
	}
}

// callResult is what a call of tool raw answered res gives its caller: the
// raw result alone when ctx asks for it and it can be passed on
// (rawOnly), else the model's text.
func (s *supervisor) callResult(ctx context.Context, res json.RawMessage, raw string) (tools.Result, error) {
	if tools.WantsRawResult(ctx) {
		if r, ok := rawOnly(res); ok {
			return r, nil
		}
	}
	return s.result(res, raw)
}

// rawOnly is a tools/call result for a caller that asked for the raw
// result alone (tools.WithRawResult): the model's text is not decoded. ok
// is false unless the result is valid JSON, an object whose content is an
// array, whose isError, if any, is a boolean and whose _meta, if any, an
// object (keys matched in any case, as encoding/json matches them), so
// that the caller can decode what it gets; any other result is mapped as
// for the model, which says what is wrong with it.
func rawOnly(raw json.RawMessage) (_ tools.Result, ok bool) {
	var isError, content bool
	// Validated as it is read: the read path does not validate what it skips.
	ok = jsonrpc.EachKeyValid(raw, func(key, v []byte) bool {
		switch {
		case bytes.EqualFold(key, []byte("content")):
			content = v[0] == '['
			return content
		case bytes.EqualFold(key, []byte("isError")):
			isError = string(v) == "true"
			return isError || string(v) == "false"
		case bytes.EqualFold(key, []byte("_meta")):
			return v[0] == '{'
		}
		return true
	})
	if !ok || !content {
		return tools.Result{}, false
	}
	return tools.Result{IsError: isError, Raw: raw}, true
}

// result maps a raw tools/call result to the model's text.
func (s *supervisor) result(raw json.RawMessage, name string) (tools.Result, error) {
	m, err := mapTextResult(raw, name)
	if err != nil {
		return tools.Result{}, err
	}
	for _, d := range m.Discarded {
		s.log.Warn("non-text content discarded from a tool result", "tool", safe.Line(name), "placeholder", d)
	}
	// maxResultBytes cuts the model's text only; the raw result is the
	// server's, for the gateway to pass on.
	return tools.Result{Text: budget(m.Text, s.config().MaxResultBytes), IsError: m.IsError, Raw: raw}, nil
}

// budget cuts text to at most max bytes (0: no limit), at a UTF-8 boundary,
// and says so at the end, so the model knows the result is incomplete.
func budget(text string, max int) string {
	if max <= 0 || len(text) <= max {
		return text
	}
	cut := safe.Cut(text, max)
	return fmt.Sprintf("%s\n[result truncated: %d of %d bytes shown (maxResultBytes)]", cut, len(cut), len(text))
}
