package mcpclient

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/harness-go/harness/host"
	"github.com/harness-go/harness/host/secret"
	"github.com/harness-go/harness/internal/loop"
	"github.com/harness-go/harness/internal/proc"
	"github.com/harness-go/harness/internal/safe"
	"github.com/harness-go/harness/plugins/tools"
)

// supervisor is one instance's owner of its connection, its registration
// and its calls. Its goroutine (run) makes every connection and every
// listing, one at a time. Every registry swap — of a listing, of a change of
// the filters, of TakeOver — holds syncMu, so swaps never interleave; calls
// read the current session under mu.
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
//     stay; attempt n waits reconnect.delay(n), connects, lists and swaps;
//     success makes the entry ready again. Only a connection that stayed up
//     reconnect.maxDelayMs starts the count again (a server that crashes
//     soon after every start runs out of attempts), and so does a live edit
//     of the policy. After maxAttempts, or once a live edit turned
//     reconnecting off, the tools go and the entry fails with the last
//     error. A successor starting beside this instance pauses its attempts
//     (the edit supersedes them) until it takes over; if it fails, the host
//     stops this instance too (host rule 10), and resuming them matters
//     only when the successor went another way (a newer edit).
//  5. A call waits for a session up to its own timeout, and is counted on
//     the instance whose session it gets (a retired one's drain waits for
//     it there). A request that never reached the server moves to the next
//     connection; one that was sent and lost fails, and is never sent twice.
type supervisor struct {
	ctx     *host.Context
	log     *slog.Logger
	secrets *secret.Set
	reg     *tools.Registry
	spawn   *proc.Spawner // the host's, for a stdio server; nil over HTTP
	self    *loop.Self    // this harness, for loop detection (package loop)
	server  string        // serverName, fixed for the instance's life
	syncReq chan struct{}
	// releaseName lets go of this instance's hold on the serverName; a
	// retired instance lets go at once, so the name can move to another
	// entry while it drains.
	releaseName func()

	cfg configRef

	syncMu sync.Mutex // serializes registry swaps with TakeOver

	mu         sync.Mutex
	sess       *session                    // the session calls use; nil while there is none
	closeSess  func(context.Context) error // closes sess, once
	last       *session                    // the latest session made, for status (stderr, pid)
	changed    chan struct{}               // closed and replaced at every change of sess, gaveUp, successor
	gaveUp     error                       // why the instance stopped serving for good (start failed, gave up)
	stopped    bool                        // disposed: nothing of it runs or is registered
	attempt    int
	nextTry    time.Time
	lastErr    string
	reconnects int
	since      time.Time // when the current connection came up
	gen        *generation
	staged     *generation // a successor's listing before TakeOver
	lastList   []rawTool   // the last valid listing, for a change of the filters
	syncs      int
	lastSync   time.Time
	syncErr    string
	hidden     int
	pred       *supervisor // the instance this one is to replace, until TakeOver
	successor  *supervisor // set at TakeOver: calls that still reach us go there
	paused     bool        // a successor is starting: hold the reconnect attempts
	resume     chan struct{}
	inflight   int
	idle       chan struct{} // closed when inflight drops to 0
}

// generation is the set of tools registered (or staged) from one listing.
type generation struct {
	names  []NamePair
	digest [sha256.Size]byte
	batch  []tools.Tool
	set    *tools.Set // nil while staged
}

// configRef is the one owner of the instance's configuration: the
// supervisor reads it where a value is used, and Reconfigure replaces it
// (never changes it in place).
type configRef struct{ p atomic.Pointer[Config] }

func (r *configRef) load() *Config   { return r.p.Load() }
func (r *configRef) store(c *Config) { r.p.Store(c) }

func newSupervisor(ctx *host.Context, cfg *Config, reg *tools.Registry) *supervisor {
	s := &supervisor{
		ctx:     ctx,
		log:     ctx.Logger().With("server", cfg.ServerName),
		secrets: ctx.Secrets(),
		reg:     reg,
		server:  cfg.ServerName,
		syncReq: make(chan struct{}, 1),
		changed: make(chan struct{}),
	}
	s.cfg.store(cfg)
	return s
}

func (s *supervisor) config() *Config { return s.cfg.load() }

// follow makes s the successor-to-be of pred: pred holds its reconnect
// attempts while s starts, and resumes them if s goes without taking over.
func (s *supervisor) follow(pred *supervisor) {
	s.pred = pred
	pred.hold(true)
	_, _ = s.ctx.Defer("resume the predecessor", func(context.Context) error {
		s.mu.Lock()
		p := s.pred
		s.mu.Unlock()
		if p != nil {
			p.hold(false) // never took over
		}
		return nil
	})
}

// hold pauses (or resumes) the reconnect attempts.
func (s *supervisor) hold(paused bool) {
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
	sess, list, err := s.connect(life)
	if err != nil {
		err = fmt.Errorf("mcp-client(%s): %w", s.server, err)
		s.failed(err)
		done(err)
		return
	}
	s.install(sess)
	err = s.sync(list)
	s.noteSync(err)
	if err != nil {
		s.failed(err)
		done(err) // the disposal closes the session
		return
	}
	done(nil)
	for {
		select {
		case <-life.Done():
			return
		case <-s.syncReq:
			s.resync(life)
		case <-sess.c.Done():
			if sess = s.recover(life, sess); sess == nil {
				return
			}
		}
	}
}

// connect dials, shakes hands and lists the tools, within startupTimeoutMs.
// What it returns is not installed yet.
func (s *supervisor) connect(life context.Context) (*session, []rawTool, error) {
	cfg := s.config()
	ctx, cancel := context.WithTimeout(life, cfg.startupTimeout())
	defer cancel()
	chained := withChain(*cfg, s.self)
	c, err := dial(life, s.spawn, &chained, s.ctx.Dir(), s.log, s.secrets)
	if err != nil {
		return nil, nil, err
	}
	if sc, ok := c.(*stdioConn); ok {
		s.log.Debug("server started", "pid", sc.PID(), "command", cfg.describe())
	}
	sess := newSession(c, cfg.Protocol, s.log, s.requestSync)
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
		return nil, nil, s.secrets.Err(err)
	}
	return sess, list, nil
}

// install makes sess the session calls use; it is closed when it is lost
// (recover) or the instance is disposed, whichever comes first.
func (s *supervisor) install(sess *session) {
	release, err := s.ctx.Defer("close the connection", func(context.Context) error { return sess.close() })
	if err != nil {
		return // disposed meanwhile: the disposer ran already
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closeSess = release
	// The count of attempts stays: only a connection that stays up
	// maxDelayMs starts it again (recover), so a server that crashes soon
	// after every start is given up on.
	s.sess, s.since = sess, time.Now()
	s.nextTry, s.lastErr = time.Time{}, ""
	s.bumpLocked()
}

// recover handles the loss of sess (rule 4) and returns the next session,
// or nil when the instance stops.
func (s *supervisor) recover(life context.Context, lost *session) *session {
	reason := s.secrets.Err(lost.c.Err())
	if life.Err() != nil {
		return nil
	}
	cfg := s.config()
	s.mu.Lock()
	retired := s.successor != nil
	stable := time.Since(s.since) >= cfg.Reconnect.stable()
	closeLost := s.closeSess
	s.closeSess = nil
	s.sess = nil
	s.bumpLocked()
	s.lastErr = reason.Error()
	if stable {
		s.attempt = 0
	}
	s.mu.Unlock()
	if closeLost != nil {
		_ = closeLost(context.Background()) // its process is gone: the ladder is quick
	}
	if retired {
		// A successor serves: calls that still reach us go there.
		return nil
	}
	if !cfg.Reconnect.Enabled {
		s.giveUp(fmt.Errorf("mcp-client(%s): %w", s.server, reason))
		return nil
	}
	s.log.Info("the connection was lost; reconnecting", "err", reason)
	s.ctx.Reconnecting(fmt.Errorf("mcp-client(%s): %w", s.server, reason))
	for {
		cfg := s.config()
		if !cfg.Reconnect.Enabled {
			// Turned off by a live edit during the outage.
			s.giveUp(fmt.Errorf("mcp-client(%s): reconnecting was turned off: %s", s.server, s.lastErrText()))
			return nil
		}
		s.mu.Lock()
		s.attempt++
		attempt := s.attempt
		if attempt > cfg.Reconnect.MaxAttempts {
			last := s.lastErr
			s.mu.Unlock()
			s.giveUp(fmt.Errorf("mcp-client(%s): gave up reconnecting after %d attempts: %s", s.server, cfg.Reconnect.MaxAttempts, last))
			return nil
		}
		wait := cfg.Reconnect.delay(attempt)
		s.nextTry = time.Now().Add(wait)
		s.mu.Unlock()
		if !s.pause(life, wait) {
			return nil
		}
		sess, list, err := s.connect(life)
		if err != nil {
			if life.Err() != nil {
				return nil
			}
			s.mu.Lock()
			s.lastErr = err.Error()
			s.mu.Unlock()
			s.ctx.Reconnecting(fmt.Errorf("mcp-client(%s): attempt %d/%d failed: %s", s.server, attempt, cfg.Reconnect.MaxAttempts, err))
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
		s.mu.Lock()
		s.reconnects++
		s.mu.Unlock()
		s.log.Info("reconnected", "attempt", attempt)
		s.ctx.Reconnecting(nil)
		return sess
	}
}

func (s *supervisor) lastErrText() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.lastErr
}

// pause waits d, and while a successor starts; it reports false when the
// instance stops meanwhile.
func (s *supervisor) pause(life context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-life.Done():
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

// giveUp unregisters the tools, wakes the calls that wait, and fails the
// entry.
func (s *supervisor) giveUp(err error) {
	s.dropTools()
	s.failed(err)
	s.ctx.Fail(err)
}

// failed records why the instance stopped serving for good; calls waiting
// for a session get that error.
func (s *supervisor) failed(err error) {
	s.mu.Lock()
	s.gaveUp = err
	s.bumpLocked()
	s.mu.Unlock()
}

// phaseLocked names where the connection stands, for status and outage
// messages: each is a fact the fields already hold.
func (s *supervisor) phaseLocked() string {
	switch {
	case s.gaveUp != nil:
		return "failed"
	case s.stopped:
		return "stopped"
	case s.sess != nil:
		return "connected"
	case s.successor != nil:
		return "lost" // retired, and its connection is gone: calls go to the successor
	case s.since.IsZero():
		return "connecting"
	}
	return "reconnecting"
}

// requestSync asks for a re-sync. Requests made while one is pending merge
// into it: a storm of notifications costs at most two listings.
func (s *supervisor) requestSync() {
	select {
	case s.syncReq <- struct{}{}:
	default:
	}
}

// resync lists the tools and swaps them in (rule 3).
func (s *supervisor) resync(life context.Context) {
	s.mu.Lock()
	sess := s.sess
	s.mu.Unlock()
	if sess == nil {
		return
	}
	ctx, cancel := context.WithTimeout(life, s.config().startupTimeout())
	defer cancel()
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

// refilter applies a change of enabledTools/disabledTools to the last
// listing, without asking the server. It reads the listing under syncMu, so
// a re-sync that registers a newer one meanwhile is never undone.
func (s *supervisor) refilter(context.Context) {
	s.syncMu.Lock()
	defer s.syncMu.Unlock()
	s.mu.Lock()
	list := s.lastList
	s.mu.Unlock()
	if list == nil {
		return
	}
	if err := s.syncLocked(list); err != nil {
		s.log.Warn("applying the new tool filters failed", "err", err)
	}
}

func (s *supervisor) noteSync(err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.syncs++
	s.lastSync = time.Now()
	s.syncErr = ""
	if err != nil {
		s.syncErr = s.secrets.Redact(err.Error())
	}
}

// sync turns a listing into a generation and registers it in place of the
// current one — or stages it, for a successor before TakeOver (the seeds'
// sync semantics: an invalid listing changes nothing; a registration
// conflict leaves the server with no tools and says so loudly).
func (s *supervisor) sync(list []rawTool) error {
	s.syncMu.Lock()
	defer s.syncMu.Unlock()
	return s.syncLocked(list)
}

// syncLocked is sync, with syncMu held.
func (s *supervisor) syncLocked(list []rawTool) error {
	gen, hidden, err := s.generation(list)
	if err != nil {
		return err
	}
	s.mu.Lock()
	s.hidden, s.lastList = hidden, list
	prev, staging, retired := s.gen, s.pred != nil, s.successor != nil
	if staging {
		s.staged = gen
	}
	s.mu.Unlock()
	switch {
	case staging, retired:
		return nil
	case prev != nil && prev.digest == gen.digest:
		return nil // nothing changed: the model-visible JSON stays byte-identical
	}
	var prevSet *tools.Set
	if prev != nil {
		prevSet = prev.set
	}
	// One step: readers see the previous generation or this one, never
	// neither; on a conflict the previous one is gone too (the seeds).
	set, err := s.reg.Replace(s.ctx.Fiber(), prevSet, gen.batch...)
	if err != nil {
		s.mu.Lock()
		s.gen = nil
		s.mu.Unlock()
		if !errors.Is(err, tools.ErrConflict) {
			return err // the instance is being disposed
		}
		err = fmt.Errorf("mcp-client(%s): tool registration failed, no tools registered: %w", s.server, err)
		s.log.Error(err.Error())
		return err
	}
	gen.set = set
	s.mu.Lock()
	s.gen = gen
	s.mu.Unlock()
	s.log.Info("tools registered", "count", len(gen.batch))
	return nil
}

// generation checks a listing and builds what it registers.
func (s *supervisor) generation(list []rawTool) (*generation, int, error) {
	cfg := s.config()
	server := s.server
	batch := make([]tools.Tool, 0, len(list))
	names := make([]NamePair, 0, len(list))
	byPublic := make(map[string]string, len(list))
	byRaw := make(map[string]bool, len(list))
	hidden := 0
	for _, t := range list {
		if t.Name == "" {
			return nil, 0, fmt.Errorf("mcp-client(%s): server listed a tool without a name — invalid tool list", server)
		}
		if byRaw[t.Name] {
			return nil, 0, fmt.Errorf("mcp-client(%s): server listed tool %q more than once — invalid tool list", server, t.Name)
		}
		byRaw[t.Name] = true
		public := PublicName(server, t.Name)
		if other, dup := byPublic[public]; dup {
			return nil, 0, fmt.Errorf("mcp-client(%s): server listed tools %q and %q, which both become %q — invalid tool list", server, other, t.Name, public)
		}
		byPublic[public] = t.Name
		if !cfg.exposes(t.Name) {
			hidden++
			continue // filtered out by enabledTools/disabledTools
		}
		batch = append(batch, tools.Tool{Name: public, Description: t.Description, Parameters: t.InputSchema, Definition: t.Definition, AlwaysLoad: cfg.AlwaysLoad, Execute: s.executor(t.Name)})
		names = append(names, NamePair{Public: public, Raw: t.Name})
	}
	sort.Slice(names, func(i, j int) bool { return names[i].Public < names[j].Public })
	return &generation{names: names, digest: digestTools(list, cfg), batch: batch}, hidden, nil
}

// digestTools identifies a listing by everything that reaches the model,
// the rest of each tool's definition (title, annotations), which the gateway
// serves, and the filters.
func digestTools(list []rawTool, cfg *Config) [sha256.Size]byte {
	h := sha256.New()
	fmt.Fprintf(h, "%q %q\n", cfg.EnabledTools, cfg.DisabledTools)
	for _, t := range list {
		fmt.Fprintf(h, "%q %q %d:", t.Name, t.Description, len(t.InputSchema))
		h.Write(t.InputSchema)
		fmt.Fprintf(h, " %d:", len(t.Definition))
		h.Write(t.Definition)
		h.Write([]byte{'\n'})
	}
	return [sha256.Size]byte(h.Sum(nil))
}

// takeOver swaps pred's registration (nil: none) for the staged generation
// in one step (rule 2). It runs on the host's goroutine: nothing here waits
// for the network.
func (s *supervisor) takeOver(pred *supervisor) error {
	if pred != nil {
		pred.syncMu.Lock()
		defer pred.syncMu.Unlock()
	}
	s.syncMu.Lock()
	defer s.syncMu.Unlock()
	s.mu.Lock()
	gen := s.staged
	s.mu.Unlock()
	if gen == nil {
		return fmt.Errorf("mcp-client(%s): nothing listed to take over with", s.server)
	}
	var old *tools.Set
	if pred != nil {
		pred.mu.Lock()
		if pred.gen != nil {
			old = pred.gen.set
		}
		pred.gen, pred.successor = nil, s
		pred.bumpLocked()
		pred.mu.Unlock()
		if pred.releaseName != nil {
			pred.releaseName()
		}
	}
	set, err := s.reg.Replace(s.ctx.Fiber(), old, gen.batch...)
	if err != nil {
		return fmt.Errorf("mcp-client(%s): tool registration failed, no tools registered: %w", s.server, err)
	}
	gen.set = set
	s.mu.Lock()
	s.gen, s.staged, s.pred = gen, nil, nil
	s.mu.Unlock()
	s.log.Info("took over", "tools", len(gen.batch))
	return nil
}

// reconfigure applies the live keys of next.
func (s *supervisor) reconfigure(next *Config) {
	cur := s.config()
	cfg := *cur
	cfg.ToolCallTimeoutMs = next.ToolCallTimeoutMs
	cfg.MaxResultBytes = next.MaxResultBytes
	cfg.EnabledTools = next.EnabledTools
	cfg.DisabledTools = next.DisabledTools
	cfg.Reconnect = next.Reconnect
	s.cfg.store(&cfg)
	if cur.Reconnect != cfg.Reconnect {
		s.mu.Lock()
		s.attempt = 0 // an edit of the policy starts the count again
		s.mu.Unlock()
	}
	if !slices.Equal(cur.EnabledTools, cfg.EnabledTools) || !slices.Equal(cur.DisabledTools, cfg.DisabledTools) {
		_ = s.ctx.Go("apply the tool filters", s.refilter) // off the host's goroutine; fails only once disposed
	}
}

// dropTools unregisters the current generation at once.
func (s *supervisor) dropTools() {
	s.syncMu.Lock()
	defer s.syncMu.Unlock()
	s.mu.Lock()
	gen := s.gen
	s.gen = nil
	s.mu.Unlock()
	if gen != nil && gen.set != nil {
		_ = gen.set.Release(context.Background())
	}
}

func (s *supervisor) toolCount() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.gen == nil {
		return 0
	}
	return len(s.gen.names)
}

// leave uncounts a call that session counted here.
func (s *supervisor) leave() {
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
// (drain waits for it there); owner.leave uncounts it.
func (s *supervisor) session(ctx context.Context) (owner *supervisor, sess *session, err error) {
	for {
		s.mu.Lock()
		sess, changed, next, gaveUp := s.sess, s.changed, s.successor, s.gaveUp
		if sess != nil && isDone(sess.c.Done()) {
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
			return s, sess, nil
		case gaveUp != nil:
			return s, nil, gaveUp
		case s.ctx.Context().Err() != nil:
			return s, nil, errStopped
		}
		select {
		case <-changed:
		case <-s.ctx.Context().Done():
		case <-ctx.Done():
			return s, nil, ctx.Err()
		}
	}
}

func isDone(c <-chan struct{}) bool {
	select {
	case <-c:
		return true
	default:
		return false
	}
}

// outage describes why no session is there, for a call that waited in
// vain.
func (s *supervisor) outage() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.phaseLocked() != "reconnecting" {
		return ""
	}
	max := s.config().Reconnect.MaxAttempts
	return fmt.Sprintf("server %s is reconnecting (attempt %d/%d): %s", s.server, s.attempt, max, s.lastErr)
}

// executor calls one tool by its raw name.
func (s *supervisor) executor(raw string) tools.Executor {
	return func(ctx context.Context, args json.RawMessage) (tools.Result, error) {
		cfg := s.config()
		timeout := cfg.toolCallTimeout()
		cctx, cancel := context.WithTimeout(ctx, timeout)
		defer cancel()
		for {
			owner, sess, err := s.session(cctx)
			if err == nil {
				var res json.RawMessage
				res, err = sess.callTool(cctx, raw, tools.ObjectArgs(args))
				owner.leave()
				if err == nil {
					return owner.result(res, raw)
				}
				if notSent(err) && cctx.Err() == nil {
					continue // it never reached the server: the next connection takes it
				}
			}
			switch {
			case ctx.Err() != nil:
				return tools.Result{}, fmt.Errorf("the call to %q was cancelled", raw)
			case errors.Is(cctx.Err(), context.DeadlineExceeded):
				if o := owner.outage(); o != "" {
					return tools.Result{}, errors.New(o)
				}
				return tools.Result{}, fmt.Errorf("%q timed out after %s (toolCallTimeoutMs)", raw, timeout)
			}
			var lost *ConnectionLostError
			if errors.As(err, &lost) {
				err = fmt.Errorf("connection lost during the call: %s", lost.Reason)
			}
			// Transport errors may quote what we sent (an error page that
			// repeats the headers): they are our text, so hide the secrets.
			return tools.Result{}, s.secrets.Err(err)
		}
	}
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

// status fills the live part of st.
func (s *supervisor) status(st *Status, red *secret.Set) {
	s.mu.Lock()
	defer s.mu.Unlock()
	st.Phase = s.phaseLocked()
	st.Syncs = s.syncs
	st.SyncError = red.Redact(s.syncErr)
	if !s.lastSync.IsZero() {
		t := s.lastSync
		st.LastSync = &t
	}
	// What runs and what is registered: nothing once the instance has
	// failed or was disposed (the last words, stderr, stay below).
	live := s.gaveUp == nil && !s.stopped
	if s.gen != nil && live {
		for _, n := range s.gen.names {
			st.Tools[n.Public] = n.Raw
		}
		st.ToolCount = len(s.gen.names)
		st.HiddenTools = s.hidden
	}
	st.Reconnects = s.reconnects
	if s.sess != nil && live {
		t := s.since
		st.ConnectedSince = &t
	}
	if st.Phase == "reconnecting" && s.attempt > 0 {
		st.Attempt, st.MaxAttempts = s.attempt, st.Reconnect.MaxAttempts
		if !s.nextTry.IsZero() && s.nextTry.After(time.Now()) {
			t := s.nextTry
			st.NextTry = &t
		}
	}
	if s.sess == nil && s.lastErr != "" {
		st.LastError = red.Redact(s.lastErr)
	}
	sess := s.last
	if sess == nil {
		return
	}
	if info, proto := sess.serverInfo(); proto != "" && s.sess != nil {
		st.Server = &Server{Name: red.Redact(info.Name), Version: red.Redact(info.Version)}
		st.ProtocolVersion = red.Redact(proto)
	}
	if sc, ok := sess.c.(*stdioConn); ok {
		if s.sess != nil && live {
			st.PID = sc.PID() // a lost or stopped server's pid is gone, or someone else's
		}
		st.Stderr = sc.Stderr() // redacted as it was read; a lost server's last words
	}
}
