package mcpclient

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/harness-go/harness/internal/jsonrpc"
	"github.com/harness-go/harness/plugins/tools"
)

// serverRequestBound bounds the write of our answer to a server's request.
const serverRequestBound = 10 * time.Second

// rpc is JSON-RPC over a framing, the same for every transport: one reader
// goroutine, the requests of ours waiting for their responses (pending: a
// caller waits; started: a callback gets it, rpc.register), and
// the one place where every message from the server is dispatched —
// a response to its caller, a notification to the notifier goroutine (in
// order, never on the reader: a handler may send requests), a request of the
// server's to a goroutine of its own whose answer is written back (an
// unknown method gets -32601; every request gets an answer unless the
// server cancels it).
//
// notifications/cancelled is handled here too: for a request of the
// server's being answered, its context ends and no answer is sent; for a
// request of ours, its caller gets an error saying the server cancelled it.
type rpc struct {
	f         framing
	log       *slog.Logger
	onNotify  func(*inMsg)
	onRequest requestHandler
	// attach, when set, is called on the reader for every request and
	// notification of the server's, before it is handed on.
	attach func(*inMsg)
	path   *readPath // nil: the reader goroutine reads everything (readpath.go)
	// burst is the burst of responses being read (dispatchRead): the
	// results of started calls carry it, for their callers to write
	// together. buffered reports whether a whole message is buffered
	// behind the one just read; nil for a framing that cannot tell.
	burst    tools.Burst
	buffered func() bool

	mu      sync.Mutex
	pending map[string]chan *inMsg
	started map[string]responder // requests nobody waits for (register)
	serving map[string]*served   // the server's requests being answered, by id key
	lost    error                // why the connection ended; set once
	done    chan struct{}        // closed when it ends

	notes     chan *inMsg
	workers   sync.WaitGroup
	closeOnce sync.Once
	closeErr  error
}

// requestHandler answers one request of the server's: a result, or an
// error object. ctx ends when the connection ends or the server cancels.
type requestHandler func(ctx context.Context, m *inMsg) (json.RawMessage, *wireError)

// served is a request of the server's being answered.
type served struct {
	cancel    context.CancelFunc
	cancelled bool // by the server: no answer is sent; guarded by rpc.mu
}

// errServerCancelled is the error of a request of ours the server cancelled.
var errServerCancelled = errors.New("the server cancelled the request")

// newRPC starts the reader and the notifier on f. onNotify gets the
// notifications in order; onRequest answers the server's requests (nil:
// every one gets -32601).
func newRPC(f framing, log *slog.Logger, onNotify func(*inMsg), onRequest requestHandler) *rpc {
	r := &rpc{
		f:         f,
		log:       log,
		onNotify:  onNotify,
		onRequest: onRequest,
		pending:   map[string]chan *inMsg{},
		started:   map[string]responder{},
		serving:   map[string]*served{},
		done:      make(chan struct{}),
		notes:     make(chan *inMsg, 64),
		path:      newReadPath(f),
	}
	if b, ok := f.(interface{ buffered() bool }); ok {
		r.buffered = b.buffered
	}
	r.workers.Add(2)
	if r.path != nil {
		go func() { defer r.workers.Done(); r.readLoopWithPath() }()
	} else {
		go func() { defer r.workers.Done(); r.readLoop() }()
	}
	go func() { defer r.workers.Done(); r.notifyLoop() }()
	return r
}

// Done is closed when the connection ends, for whatever reason.
func (r *rpc) Done() <-chan struct{} { return r.done }

// Err says why the connection ended, or nil.
func (r *rpc) Err() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.lost
}

// call writes a request (m.id set) and waits for its response, the end of
// ctx, or the end of the connection, whichever is first. A request that
// never reached the server is a notSentError.
func (r *rpc) call(ctx context.Context, m *outMsg) (*inMsg, error) {
	key := idKey(m.id)
	ch := make(chan *inMsg, 1)
	r.mu.Lock()
	if r.lost != nil {
		err := r.lost
		r.mu.Unlock()
		return nil, &notSentError{err}
	}
	r.pending[key] = ch
	r.mu.Unlock()
	if p := r.path; p != nil {
		p.calls.Add(1)
		p.waiters.Add(1)
		defer func() {
			if p.waiters.Add(-1) == 0 && p.started.Load() > 0 {
				p.wake() // started requests need a reader again
			}
		}()
		if p.bgReading.Load() {
			p.f.interrupt() // the reader goroutine steps aside while the server works
		}
	}
	if err := r.write(ctx, m); err != nil {
		r.forget(key)
		return nil, err
	}
	if r.path != nil {
		return r.waitReading(ctx, key, ch)
	}
	select {
	case resp := <-ch:
		return answer(resp)
	case <-ctx.Done():
		r.forget(key)
		return nil, ctx.Err()
	case <-r.done:
		return r.ended(key, ch)
	}
}

// responder is what takes the response of a request nobody waits for
// (register): an interface rather than a func, so that a started call
// registers itself without a closure.
type responder interface{ respond(*inMsg, error) }

// respondFunc is a func as a responder.
type respondFunc func(*inMsg, error)

func (f respondFunc) respond(m *inMsg, err error) { f(m, err) }

// register records a request nobody will wait for: cb gets its response
// (or the error that ended the connection) on the goroutine that reads it,
// exactly once — unless abandon takes the request back first. It reports
// false when the connection has ended. send then writes the request.
func (r *rpc) register(key string, cb responder) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.lost != nil {
		return false
	}
	r.started[key] = cb
	if r.path != nil {
		r.path.started.Add(1)
	}
	return true
}

// send writes a registered request; when it fails the request is
// abandoned (cb is not called) unless the connection ended meanwhile, which
// told cb (taken false). With a read path, a reader is made sure of: the
// reader goroutine reads at once when no caller does (readpath.go).
func (r *rpc) send(ctx context.Context, key string, m *outMsg) (taken bool, err error) {
	if err := r.f.Write(ctx, m); err != nil {
		taken = r.abandon(key)
		var lost *ConnectionLostError
		if errors.As(err, &lost) {
			r.lose(lost)
		}
		return taken, err
	}
	if p := r.path; p != nil && p.waiters.Load() == 0 && !p.bgReading.Load() {
		p.wake()
	}
	return true, nil
}

// abandon takes back a registered request whose response is no longer
// wanted, and reports whether it did (false: cb was, or is being, called).
func (r *rpc) abandon(key string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, ok := r.started[key]; !ok {
		return false
	}
	delete(r.started, key)
	if r.path != nil {
		r.path.started.Add(-1)
	}
	return true
}

// takeStarted removes and returns the callback of a started request.
func (r *rpc) takeStarted(key []byte) responder {
	r.mu.Lock()
	defer r.mu.Unlock()
	cb := r.started[string(key)]
	if cb != nil {
		delete(r.started, string(key))
		if r.path != nil {
			r.path.started.Add(-1)
		}
	}
	return cb
}

// ended is the answer of a call whose connection ended while it waited.
func (r *rpc) ended(key string, ch chan *inMsg) (*inMsg, error) {
	r.forget(key)
	select {
	case resp := <-ch: // answered just before the end
		return answer(resp)
	default:
	}
	return nil, r.Err()
}

func answer(resp *inMsg) (*inMsg, error) {
	if resp.tooLarge {
		return nil, errTooLarge
	}
	return resp, nil
}

// failPending gives the caller of a pending request an error answer.
func (r *rpc) failPending(key string, resp *inMsg) {
	r.mu.Lock()
	ch := r.pending[key]
	delete(r.pending, key)
	r.mu.Unlock()
	if ch != nil {
		ch <- resp
		return
	}
	if cb := r.takeStarted([]byte(key)); cb != nil {
		cb.respond(answer(resp))
	}
}

func (r *rpc) forget(key string) {
	r.mu.Lock()
	delete(r.pending, key)
	r.mu.Unlock()
}

// notify writes a notification.
func (r *rpc) notify(ctx context.Context, m *outMsg) error {
	if err := r.Err(); err != nil {
		return err
	}
	return r.write(ctx, m)
}

// write writes m; a write that lost the connection ends it.
func (r *rpc) write(ctx context.Context, m *outMsg) error {
	err := r.f.Write(ctx, m)
	var lost *ConnectionLostError
	if err != nil && errors.As(err, &lost) {
		r.lose(lost)
	}
	return err
}

// readLoop reads until the framing says the connection ended (a framing
// without a read path).
func (r *rpc) readLoop() {
	for {
		m, err := r.f.Read()
		if err != nil {
			r.lose(err) // which ends the burst
			return
		}
		r.dispatchRead(m)
	}
}

// dispatchRead dispatches a message just read. Responses with more
// messages buffered behind them are a burst (tools.Burst): the answers
// their callers write are held until the reader runs dry. A request or
// notification of the server's ends the burst first: its handling may
// wait, and what is held must not wait with it.
func (r *rpc) dispatchRead(m *inMsg) {
	more := r.buffered != nil && r.buffered()
	switch {
	case !m.isResponse():
		r.burst.End()
	case more:
		r.burst.Begin()
	}
	r.dispatch(m)
	if !more {
		r.burst.End()
	}
}

// resultBurst is the burst a started call's result carries, or nil when
// the framing cannot tell what is buffered.
func (r *rpc) resultBurst() *tools.Burst {
	if r.buffered == nil {
		return nil
	}
	return &r.burst
}

// dispatch routes one message: the one place where that happens. A
// borrowed message (inMsg.borrowed) is owned before it goes anywhere but to
// a started request's responder: that runs here, before the next read, and
// whoever it gives the result to copies what it keeps (tools.Starter).
func (r *rpc) dispatch(m *inMsg) {
	if !m.isResponse() {
		m.own()
	}
	switch {
	case m.tooLarge:
		r.failPending(m.key(), m)
	case m.isRequest():
		if r.attach != nil {
			r.attach(m)
		}
		r.serve(m)
	case m.Method != "":
		if r.attach != nil {
			r.attach(m)
		}
		if m.Method == string(mcp.MethodNotificationCancelled) {
			r.cancelled(m)
		}
		select {
		case r.notes <- m:
		case <-r.done:
		}
	case m.isResponse():
		var kb [64]byte
		key := jsonrpc.AppendIDKey(kb[:0], m.ID) // looked up without allocating
		r.mu.Lock()
		ch := r.pending[string(key)]
		delete(r.pending, string(key))
		r.mu.Unlock()
		if ch != nil {
			m.own() // the caller reads it after the reader has read on
			ch <- m
			return
		}
		if cb := r.takeStarted(key); cb != nil {
			cb.respond(answer(m))
			return
		}
		r.log.Debug("a response to no request in flight; ignored", "id", string(m.ID))
		// a late answer to a request we gave up on
	}
}

// cancelled handles notifications/cancelled: it names a request of the
// server's we are answering, or one of ours.
func (r *rpc) cancelled(m *inMsg) {
	var p struct {
		RequestID json.RawMessage `json:"requestId"`
		Reason    string          `json:"reason"`
	}
	if json.Unmarshal(m.Params, &p) != nil || len(p.RequestID) == 0 {
		return
	}
	key := idKey(p.RequestID)
	r.mu.Lock()
	s := r.serving[key]
	if s != nil {
		s.cancelled = true
	}
	r.mu.Unlock()
	if s != nil {
		s.cancel()
		return
	}
	msg := errServerCancelled.Error()
	if p.Reason != "" {
		msg += ": " + p.Reason
	}
	r.failPending(key, &inMsg{ID: p.RequestID, Error: &wireError{Code: mcp.REQUEST_INTERRUPTED, Message: msg}})
}

func (r *rpc) notifyLoop() {
	for {
		select {
		case m := <-r.notes:
			if r.onNotify != nil {
				r.onNotify(m)
			}
		case <-r.done:
			return
		}
	}
}

// serve answers a request of the server's on a goroutine of its own.
func (r *rpc) serve(m *inMsg) {
	key := m.key()
	ctx, cancel := context.WithCancel(context.Background())
	s := &served{cancel: cancel}
	r.mu.Lock()
	if r.lost != nil {
		r.mu.Unlock()
		cancel()
		return
	}
	r.serving[key] = s
	r.workers.Add(1)
	r.mu.Unlock()
	go func() {
		defer r.workers.Done()
		defer cancel()
		go func() {
			select {
			case <-r.done:
				cancel()
			case <-ctx.Done():
			}
		}()
		var result json.RawMessage
		var werr *wireError
		if r.onRequest != nil {
			result, werr = r.onRequest(ctx, m)
		} else {
			werr = &wireError{Code: mcp.METHOD_NOT_FOUND, Message: fmt.Sprintf("method %q is not supported", m.Method)}
		}
		r.mu.Lock()
		delete(r.serving, key)
		skip := s.cancelled || r.lost != nil
		r.mu.Unlock()
		if skip {
			if s.cancelled {
				r.log.Debug("the server cancelled its request; not answered", "method", m.Method)
			}
			return // the MCP specification: no answer to a cancelled request
		}
		data, err := encodeResponse(m.ID, result, werr)
		if err != nil {
			r.log.Debug("could not encode an answer to the server", "method", m.Method, "err", err)
			return
		}
		wctx, wcancel := context.WithTimeout(context.Background(), serverRequestBound)
		defer wcancel()
		if err := r.write(wctx, &outMsg{data: data}); err != nil {
			r.log.Debug("could not answer the server", "method", m.Method, "err", err)
		}
	}()
}

// encodeResponse encodes the answer to a request of the server's.
func encodeResponse(id json.RawMessage, result json.RawMessage, werr *wireError) ([]byte, error) {
	type response struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Result  json.RawMessage `json:"result,omitempty"`
		Error   *wireError      `json:"error,omitempty"`
	}
	resp := response{JSONRPC: mcp.JSONRPC_VERSION, ID: id, Error: werr}
	if werr == nil {
		resp.Result = result
		if len(resp.Result) == 0 {
			resp.Result = json.RawMessage("{}")
		}
	}
	return json.Marshal(resp)
}

// lose ends the connection once: every caller waiting for a response sees
// done and gets err.
func (r *rpc) lose(err error) {
	r.mu.Lock()
	if r.lost != nil {
		r.mu.Unlock()
		return
	}
	r.lost = err
	clear(r.pending)
	started := r.started
	r.started = map[string]responder{}
	if r.path != nil {
		r.path.started.Store(0)
	}
	close(r.done)
	r.mu.Unlock()
	for _, cb := range started {
		cb.respond(nil, err)
	}
	r.burst.End()
}

// Close ends the connection (for stdio: the close ladder) and waits for
// every goroutine of the rpc. It is safe to call twice.
func (r *rpc) Close() error {
	r.closeOnce.Do(func() {
		r.lose(&ConnectionLostError{Reason: "closed"})
		r.closeErr = r.f.Close()
		r.workers.Wait()
	})
	return r.closeErr
}
