package mcpclient

import (
	"context"
	"errors"
	"sync/atomic"
	"time"
)

// The read path (docs/rfc/0003-mcp-client.md, "The read path"). Over stdio,
// handing each response from the reader goroutine to the goroutine waiting
// for it is the largest cost left in a call (docs/benchmarks.md: about half
// of the bridge's share). So whoever holds the right to read (a token)
// reads: a caller that waits for its response takes the token and reads its
// own response — and whatever comes before it, dispatched as the reader
// goroutine would — and the reader goroutine reads only when no caller has
// waited for a short lull, for notifications and the server's requests. A
// caller that finds the reader goroutine blocked in a read kicks it out
// (interruptible.interrupt: a read deadline in the past); the line reader
// keeps a line cut by a kick. A started request (rpc.register) has no
// caller to read for it: while any is pending and no caller holds the
// token, the reader goroutine reads at once, without the lull. A framing
// that cannot be interrupted (a pipe that takes no deadline, Streamable
// HTTP) has no read path: the reader goroutine reads everything and hands
// every response over.

// lull is how long the reader goroutine waits, after the last request,
// before it reads itself: calls often come back to back, and a caller reads
// its own response with no hand-off as long as the reader goroutine is not
// in the way. A notification that arrives between calls waits at most this
// long.
const lull = 2 * time.Millisecond

// interruptible is a framing whose Read interrupt cuts short
// (errInterrupted), losing nothing.
type interruptible interface {
	interruptible() bool
	interrupt()
	rearm()
}

// readPath is the rpc's state of the read path.
type readPath struct {
	f         interruptible
	tok       chan struct{} // capacity 1: holding it is the right to read
	waiters   atomic.Int32  // callers waiting for a response
	started   atomic.Int32  // requests nobody waits for (rpc.register): the reader goroutine reads for them
	calls     atomic.Int64  // requests sent so far: the reader goroutine waits for a lull
	bgReading atomic.Bool   // the reader goroutine holds tok to read
	kick      chan struct{} // capacity 1: the reader goroutine looks again, without waiting for a lull
}

// wake makes the reader goroutine look again at once.
func (p *readPath) wake() {
	select {
	case p.kick <- struct{}{}:
	default:
	}
}

// newReadPath returns the read path of f, or nil when f cannot be
// interrupted.
func newReadPath(f framing) *readPath {
	i, ok := f.(interruptible)
	if !ok || !i.interruptible() {
		return nil
	}
	return &readPath{f: i, tok: make(chan struct{}, 1), kick: make(chan struct{}, 1)}
}

// readOne reads and dispatches one message; an error other than an
// interruption ends the connection.
func (r *rpc) readOne() error {
	m, err := r.f.Read()
	if err != nil {
		r.burst.End()
		if !errors.Is(err, errInterrupted) {
			r.lose(err)
		}
		return err
	}
	r.dispatchRead(m)
	return nil
}

// readLoopWithPath is the reader goroutine of a framing with a read path:
// it reads when no caller has waited for a lull, and stops when the
// connection ends.
func (r *rpc) readLoopWithPath() {
	p := r.path
	quiet := time.NewTimer(lull)
	defer quiet.Stop()
	seen := int64(-1)
	for {
		select {
		case <-quiet.C:
		case <-p.kick:
		case <-r.done:
			return
		}
		// Started requests have nobody else to read for them: no lull.
		if n := p.calls.Load(); (n != seen && p.started.Load() == 0) || p.waiters.Load() > 0 {
			seen = n
			quiet.Reset(lull)
			continue
		}
		select {
		case p.tok <- struct{}{}:
		case <-r.done:
			return
		}
		// The handshake with callers (call): clear any old kick, say we
		// read, then look for a caller once more. A caller that comes after
		// the look sees bgReading and kicks.
		p.f.rearm()
		p.bgReading.Store(true)
		if p.waiters.Load() > 0 {
			p.bgReading.Store(false)
			<-p.tok
			quiet.Reset(lull)
			continue
		}
		var err error
		for err == nil {
			err = r.readOne()
		}
		p.bgReading.Store(false)
		<-p.tok
		if !errors.Is(err, errInterrupted) {
			return // the connection ended (readOne lost it)
		}
		seen = p.calls.Load()
		quiet.Reset(lull)
	}
}

// waitReading waits for the response on ch like call does, and takes the
// token to read it itself when it can.
func (r *rpc) waitReading(ctx context.Context, key string, ch chan *inMsg) (*inMsg, error) {
	for {
		select {
		case resp := <-ch:
			return answer(resp)
		case r.path.tok <- struct{}{}:
			resp, err := r.readOwn(ctx, ch)
			<-r.path.tok
			if err != nil {
				r.forget(key)
			}
			return resp, err
		case <-ctx.Done():
			r.forget(key)
			return nil, ctx.Err()
		case <-r.done:
			return r.ended(key, ch)
		}
	}
}

// readOwn reads, holding the token, until the response for ch arrives, ctx
// ends (it kicks the read in progress) or the connection ends.
func (r *rpc) readOwn(ctx context.Context, ch chan *inMsg) (*inMsg, error) {
	stop := context.AfterFunc(ctx, r.path.f.interrupt)
	defer stop()
	defer r.burst.End() // it stops reading: nothing held waits for the next reader
	for {
		select {
		case resp := <-ch:
			return answer(resp)
		default:
		}
		// Rearm, then look at ctx: its hook interrupts after ctx ends, so
		// an end that came before the rearm (whose kick the rearm undoes)
		// is seen here, and one after it kicks the read.
		r.path.f.rearm()
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		if err := r.readOne(); err != nil {
			if errors.Is(err, errInterrupted) {
				continue // a kick: look at ch and ctx again
			}
			select {
			case resp := <-ch: // answered just before the end
				return answer(resp)
			default:
			}
			return nil, r.Err()
		}
	}
}
