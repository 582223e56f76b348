package tools

import (
	"strings"
	"sync"
	"testing"
)

// writer is a writer that follows Burst's rules, keeping each write.
type writer struct {
	mu     sync.Mutex
	held   Held
	writes []string
}

func (w *writer) flush() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.held.Bytes()) > 0 {
		w.writes = append(w.writes, string(w.held.Bytes()))
	}
	w.held.Reset()
}

func (w *writer) write(b *Burst, msg string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.held.Hold(b, w.flush, []byte(msg)) {
		return
	}
	w.writes = append(w.writes, string(w.held.Bytes())+msg)
	w.held.Reset()
}

func (w *writer) got() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return strings.Join(w.writes, "|")
}

func TestBurst(t *testing.T) {
	var b Burst
	var w1, w2 writer

	// No burst under way (and a nil one): every write goes now.
	w1.write(&b, "a")
	w1.write(nil, "b")
	if got := w1.got(); got != "a|b" {
		t.Fatalf("outside a burst: %q", got)
	}

	// In a burst, each writer's writes wait for its end, one write each;
	// a writer registers its flush once.
	b.Begin()
	w1.write(&b, "c")
	w1.write(&b, "d")
	w2.write(&b, "x")
	if len(b.flushes) != 2 {
		t.Fatalf("%d flushes registered, want one per writer", len(b.flushes))
	}
	if got := w1.got(); got != "a|b" {
		t.Fatalf("during the burst: %q", got)
	}
	b.End()
	if got, got2 := w1.got(), w2.got(); got != "a|b|cd" || got2 != "x" {
		t.Fatalf("after the burst: %q and %q", got, got2)
	}
	b.End() // no burst: nothing happens
	w1.write(&b, "e")
	if got := w1.got(); got != "a|b|cd|e" {
		t.Fatalf("after the burst, a write: %q", got)
	}

	// A write outside the burst goes now, the held bytes first; the flush
	// then finds nothing.
	b.Begin()
	w1.write(&b, "f")
	w1.write(nil, "g")
	b.End()
	if got := w1.got(); got != "a|b|cd|e|fg" {
		t.Fatalf("a write outside the burst: %q", got)
	}

	// Held for two bursts at once: the first to end writes everything.
	var b2 Burst
	b.Begin()
	b2.Begin()
	w1.write(&b, "h")
	w1.write(&b2, "i")
	b2.End()
	b.End()
	if got := w1.got(); got != "a|b|cd|e|fg|hi" {
		t.Fatalf("two bursts: %q", got)
	}
}

// Bursts are used from many goroutines: the reader's and the writers'.
func TestBurstConcurrent(t *testing.T) {
	var b Burst
	var w writer
	var wg sync.WaitGroup
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 200 {
				w.write(&b, "m")
			}
		}()
	}
	for range 200 {
		b.Begin()
		b.End()
	}
	wg.Wait()
	b.End()
	if got := strings.Count(w.got(), "m"); got != 800 {
		t.Fatalf("%d messages written, want 800", got)
	}
}
