package tools

import "sync"

// A Burst is a connection's reader working through responses it has
// already read: while more are buffered behind the one it hands on, the
// writes their results cause are held back, and written together when the
// reader runs dry — one write for many answers, as a process that only
// copies bytes writes what one read gave it (docs/rfc/0005-gateway.md,
// "Bursts"). A [Starter] gives it with each result ([Result.Burst]).
//
// The rules, for the reader and for a writer:
//
//  1. The reader calls Begin when a response it has read has others
//     complete behind it in its buffer, and End before it reads what might
//     make it wait, hands on anything else (a handler may wait), or stops
//     reading. So a burst lasts only while its reader is busy with
//     messages at hand, and a held write waits for nothing else.
//  2. A writer that has bytes to write asks Hold with its flush. true: the
//     burst is under way, flush runs at its End (on the reader's
//     goroutine), and the writer keeps its bytes for it. false: it writes
//     now.
//  3. A writer holding bytes for a burst adds to them what that burst's
//     results write ([Held]). What it writes otherwise it writes now, the
//     held bytes first, and flush then finds nothing: a writer's writes
//     stay in order, and a write that is not held is not delayed.
//  4. Hold and End may be called from any goroutine. A flush must not wait
//     for the reader (it runs on it).
//
// Only answers are held. Holding a caller's requests until it runs dry
// was measured too, and lost: the server then waits for the whole burst
// instead of starting on the first request (docs/benchmarks.md).
type Burst struct {
	mu      sync.Mutex
	active  bool
	flushes []func()
}

// Begin says that more messages are buffered behind the one being handled.
func (b *Burst) Begin() {
	b.mu.Lock()
	b.active = true
	b.mu.Unlock()
}

// Hold reports whether the write of a message may wait for the end of the
// burst; if so, flush runs then. A nil Burst holds nothing.
func (b *Burst) Hold(flush func()) bool {
	if b == nil {
		return false
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if !b.active {
		return false
	}
	b.flushes = append(b.flushes, flush)
	return true
}

// End ends the burst: the flushes held since Begin run, in order, on the
// calling goroutine. Nothing happens when no burst is under way.
func (b *Burst) End() {
	b.mu.Lock()
	if !b.active {
		b.mu.Unlock()
		return
	}
	b.active = false
	flushes := b.flushes
	b.flushes = nil
	b.mu.Unlock()
	for i, f := range flushes {
		f()
		flushes[i] = nil
	}
	b.mu.Lock()
	if b.flushes == nil {
		b.flushes = flushes[:0] // the next burst reuses the slice
	}
	b.mu.Unlock()
}

// Held is what a writer holds for bursts (rule 3): its bytes, and the
// burst whose end writes them. The writer's lock guards it; flush, run by
// the burst, takes that lock, writes Bytes and calls Reset.
type Held struct {
	buf []byte
	by  *Burst
}

// Hold appends msg to the held bytes when b holds the write — b already
// holds them, or Hold registers flush with it — and reports whether it did.
func (h *Held) Hold(b *Burst, flush func(), msg []byte) bool {
	if b == nil {
		return false
	}
	if len(h.buf) == 0 || h.by != b {
		if !b.Hold(flush) {
			return false
		}
		h.by = b
	}
	h.buf = append(h.buf, msg...)
	return true
}

// Bytes returns the held bytes; they are valid until the next Hold.
func (h *Held) Bytes() []byte { return h.buf }

// Reset forgets the held bytes (once written), keeping the buffer unless
// it grew large.
func (h *Held) Reset() {
	h.by = nil
	if cap(h.buf) > 64<<10 {
		h.buf = nil
		return
	}
	h.buf = h.buf[:0]
}
