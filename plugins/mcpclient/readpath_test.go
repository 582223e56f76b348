package mcpclient

import (
	"context"
	"errors"
	"log/slog"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/harness-go/harness/host/secret"
	"github.com/harness-go/harness/internal/testkit/testlog"
)

// kickAtRearm is a line framing whose first rearm by a caller reading its
// own response (rpc.readOwn) first ends that caller's context and waits
// until the context's hook has interrupted the read: the moment between
// the caller's last look at its context and its next read.
type kickAtRearm struct {
	*lineFraming
	cancel      context.CancelFunc
	once        sync.Once
	fired       atomic.Bool // the rearm of readOwn was reached
	interrupted chan struct{}
	intOnce     sync.Once
}

func (f *kickAtRearm) interrupt() {
	f.lineFraming.interrupt()
	f.intOnce.Do(func() { close(f.interrupted) })
}

func (f *kickAtRearm) rearm() {
	if inReadOwn() {
		f.once.Do(func() {
			f.fired.Store(true)
			f.cancel()
			<-f.interrupted
		})
	}
	f.lineFraming.rearm()
}

// inReadOwn reports whether the calling goroutine is in rpc.readOwn.
func inReadOwn() bool {
	pcs := make([]uintptr, 32)
	frames := runtime.CallersFrames(pcs[:runtime.Callers(2, pcs)])
	for {
		fr, more := frames.Next()
		if strings.HasSuffix(fr.Function, ".(*rpc).readOwn") {
			return true
		}
		if !more {
			return false
		}
	}
}

// A caller that reads its own response and is cancelled just before a read
// returns at once: the cancellation's kick is not undone by the rearm
// before the read (the server never answers, so a lost kick waits forever).
func TestReadOwnCancelledBeforeTheRead(t *testing.T) {
	t.Parallel()
	log, _ := testlog.New(t)
	p, err := startProcess(testSpawner(t), "/bin/sh", []string{"-c", "cat >/dev/null"}, []string{"PATH=/usr/bin:/bin"}, t.TempDir(), log, secret.New())
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	f := &kickAtRearm{lineFraming: newLineFraming(p, log, secret.New()), cancel: cancel, interrupted: make(chan struct{})}
	if !f.interruptible() {
		t.Fatal("a pipe from a process is not interruptible here: the read path is not under test")
	}
	r := newRPC(f, slog.New(log.Handler()), func(*inMsg) {}, nil)
	t.Cleanup(func() { _ = r.Close() })

	returned := make(chan error, 1)
	go func() {
		id := []byte(`"r1"`)
		_, err := r.call(ctx, &outMsg{data: []byte(`{"jsonrpc":"2.0","id":"r1","method":"tools/list"}`), id: id, method: "tools/list"})
		returned <- err
	}()
	select {
	case err := <-returned:
		if !f.fired.Load() {
			t.Fatal("the call never reached readOwn's rearm: the moment under test did not happen")
		}
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("the call returned %v, want context.Canceled", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the cancelled call still waits: the kick of its cancellation was lost")
	}
}
