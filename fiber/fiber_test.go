package fiber_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"go.uber.org/goleak"

	"github.com/harness-go/harness/fiber"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// recorder collects the order in which disposers ran.
type recorder struct {
	mu  sync.Mutex
	log []string
}

func (r *recorder) add(s string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.log = append(r.log, s)
}

func (r *recorder) disposer(name string, err error) fiber.Disposer {
	return func(context.Context) error {
		r.add(name)
		return err
	}
}

func (r *recorder) String() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return strings.Join(r.log, ",")
}

func mustDefer(t *testing.T, f *fiber.Fiber, name string, fn fiber.Disposer) fiber.Disposer {
	t.Helper()
	release, err := f.Defer(name, fn)
	if err != nil {
		t.Fatalf("Defer(%q): %v", name, err)
	}
	return release
}

func mustChild(t *testing.T, f *fiber.Fiber, name string) *fiber.Fiber {
	t.Helper()
	c, err := f.Child(name)
	if err != nil {
		t.Fatalf("Child(%q): %v", name, err)
	}
	return c
}

func TestDisposeOrderChildrenFirstThenLIFO(t *testing.T) {
	t.Parallel()
	var r recorder
	root := fiber.New(context.Background(), "root")
	mustDefer(t, root, "root-1", r.disposer("root-1", nil))
	a := mustChild(t, root, "a")
	mustDefer(t, a, "a-1", r.disposer("a-1", nil))
	mustDefer(t, a, "a-2", r.disposer("a-2", nil))
	b := mustChild(t, root, "b")
	mustDefer(t, b, "b-1", r.disposer("b-1", nil))
	b1 := mustChild(t, b, "b1")
	mustDefer(t, b1, "b1-1", r.disposer("b1-1", nil))
	mustDefer(t, root, "root-2", r.disposer("root-2", nil))

	if err := root.Dispose(context.Background()); err != nil {
		t.Fatalf("Dispose: %v", err)
	}
	want := "b1-1,b-1,a-2,a-1,root-2,root-1"
	if got := r.String(); got != want {
		t.Fatalf("order = %s, want %s", got, want)
	}
	for _, f := range []*fiber.Fiber{root, a, b, b1} {
		if f.State() != fiber.Disposed {
			t.Errorf("%s state = %v, want disposed", f.Path(), f.State())
		}
		if !errors.Is(context.Cause(f.Context()), fiber.ErrDisposed) {
			t.Errorf("%s cause = %v", f.Path(), context.Cause(f.Context()))
		}
	}
}

func TestEveryDisposerRunsAndErrorsAreListed(t *testing.T) {
	t.Parallel()
	var r recorder
	f := fiber.New(context.Background(), "plugin")
	errA, errC := errors.New("boom a"), errors.New("boom c")
	mustDefer(t, f, "a", r.disposer("a", errA))
	mustDefer(t, f, "b", func(context.Context) error { r.add("b"); panic("kaput") })
	mustDefer(t, f, "c", r.disposer("c", errC))
	mustDefer(t, f, "d", r.disposer("d", nil))

	err := f.Dispose(context.Background())
	if got, want := r.String(), "d,c,b,a"; got != want {
		t.Fatalf("ran %s, want %s", got, want)
	}
	if !errors.Is(err, errA) || !errors.Is(err, errC) {
		t.Fatalf("aggregated error %v does not wrap both causes", err)
	}
	// The panic keeps its stack, which names the disposer's own code.
	for _, part := range []string{`disposer "a": boom a`, `disposer "b" panicked: kaput`, "fiber_test.go", `disposer "c": boom c`, "3 errors"} {
		if !strings.Contains(err.Error(), part) {
			t.Errorf("error %q does not mention %q", err, part)
		}
	}
}

func TestDisposeIsIdempotentAndConcurrent(t *testing.T) {
	t.Parallel()
	var r recorder
	f := fiber.New(context.Background(), "x")
	boom := errors.New("boom")
	mustDefer(t, f, "once", r.disposer("once", boom))
	var wg sync.WaitGroup
	errs := make([]error, 8)
	for i := range errs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = f.Dispose(context.Background())
		}()
	}
	wg.Wait()
	if r.String() != "once" {
		t.Fatalf("disposer ran %q, want once", r.String())
	}
	for i, err := range errs {
		if !errors.Is(err, boom) {
			t.Errorf("call %d: err = %v, want the disposal's error", i, err)
		}
	}
}

func TestHungDisposerIsBoundedAndNamed(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		var r recorder
		release := make(chan struct{})
		f := fiber.New(context.Background(), "srv")
		mustDefer(t, f, "first", r.disposer("first", nil))
		mustDefer(t, f, "close-transport", func(context.Context) error {
			<-release // ignores its ctx: the worst case
			return nil
		})
		mustDefer(t, f, "last", r.disposer("last", nil))

		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		start := time.Now()
		err := f.Dispose(ctx)
		if elapsed := time.Since(start); elapsed != 2*time.Second {
			t.Errorf("Dispose returned after %v, want the 2s deadline", elapsed)
		}
		if err == nil || !strings.Contains(err.Error(), `disposer "close-transport" hung`) {
			t.Fatalf("err = %v, want it to name the hung disposer", err)
		}
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("err = %v, want it to wrap the deadline", err)
		}
		close(release)
		synctest.Wait()
		// The disposer registered before the hung one still ran, after the deadline.
		if got := r.String(); got != "last,first" {
			t.Fatalf("ran %q, want last,first", got)
		}
		<-f.Done()
	})
}

func TestHungGoroutineIsNamed(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		release := make(chan struct{})
		f := fiber.New(context.Background(), "srv")
		if err := f.Go("reader", func(context.Context) { <-release }); err != nil {
			t.Fatal(err)
		}
		if err := f.Go("polite", func(ctx context.Context) { <-ctx.Done() }); err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		err := f.Dispose(ctx)
		if err == nil || !strings.Contains(err.Error(), `goroutines still running: "reader"`) {
			t.Fatalf("err = %v, want it to name the hung goroutine", err)
		}
		if strings.Contains(err.Error(), "polite") {
			t.Errorf("err = %v names a goroutine that stopped", err)
		}
		close(release)
		synctest.Wait()
	})
}

func TestOwnedGoroutinesAreCancelledAndAwaited(t *testing.T) {
	t.Parallel()
	f := fiber.New(context.Background(), "x")
	var stopped sync.WaitGroup
	for i := range 5 {
		stopped.Add(1)
		if err := f.Go(fmt.Sprintf("worker-%d", i), func(ctx context.Context) {
			defer stopped.Done()
			<-ctx.Done()
		}); err != nil {
			t.Fatal(err)
		}
	}
	if err := f.Dispose(context.Background()); err != nil {
		t.Fatal(err)
	}
	stopped.Wait() // returns at once: Dispose already waited for them
	if err := f.Go("late", func(context.Context) { t.Error("late goroutine ran") }); !errors.Is(err, fiber.ErrDisposed) {
		t.Fatalf("Go after dispose: err = %v, want ErrDisposed", err)
	}
}

func TestLateDisposerRunsAtOnce(t *testing.T) {
	t.Parallel()
	f := fiber.New(context.Background(), "x")
	if err := f.Dispose(context.Background()); err != nil {
		t.Fatal(err)
	}
	ran := false
	release, err := f.Defer("late", func(ctx context.Context) error {
		ran = true
		if ctx.Err() == nil {
			t.Error("late disposer got a live context")
		}
		return nil
	})
	if !ran {
		t.Fatal("late disposer did not run at once")
	}
	if !errors.Is(err, fiber.ErrDisposed) {
		t.Fatalf("err = %v, want ErrDisposed", err)
	}
	if err := release(context.Background()); err != nil {
		t.Fatalf("release of a late disposer: %v", err)
	}
	if _, err := f.Child("c"); !errors.Is(err, fiber.ErrDisposed) {
		t.Fatalf("Child after dispose: err = %v", err)
	}
}

func TestLateDisposerDuringDisposal(t *testing.T) {
	t.Parallel()
	f := fiber.New(context.Background(), "x")
	var lateRan bool
	mustDefer(t, f, "registers-late", func(context.Context) error {
		_, err := f.Defer("late", func(context.Context) error { lateRan = true; return errors.New("late boom") })
		if !errors.Is(err, fiber.ErrDisposed) || !strings.Contains(err.Error(), "late boom") {
			t.Errorf("Defer during disposal: err = %v", err)
		}
		return nil
	})
	if err := f.Dispose(context.Background()); err != nil {
		t.Fatal(err)
	}
	if !lateRan {
		t.Fatal("disposer registered during disposal never ran")
	}
}

func TestReleaseRunsEarlyOnce(t *testing.T) {
	t.Parallel()
	var r recorder
	f := fiber.New(context.Background(), "x")
	mustDefer(t, f, "keep", r.disposer("keep", nil))
	release := mustDefer(t, f, "early", r.disposer("early", nil))
	if err := release(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := release(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := f.Dispose(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got := r.String(); got != "early,keep" {
		t.Fatalf("ran %q, want early,keep", got)
	}
}

func TestFailRecordsCause(t *testing.T) {
	t.Parallel()
	root := fiber.New(context.Background(), "root")
	c := mustChild(t, root, "plugin")
	gc := mustChild(t, c, "conn")
	cause := errors.New("server exited with status 3")
	if err := c.Fail(context.Background(), cause); err != nil {
		t.Fatal(err)
	}
	if c.State() != fiber.Failed || !errors.Is(c.Err(), cause) {
		t.Fatalf("state %v err %v, want failed with the cause", c.State(), c.Err())
	}
	if !errors.Is(context.Cause(gc.Context()), cause) {
		t.Errorf("grandchild cause = %v, want the failure", context.Cause(gc.Context()))
	}
	if root.State() != fiber.Active {
		t.Fatalf("a failed child took its parent with it: %v", root.State())
	}
	// The parent forgets a child that finished its own disposal.
	var r recorder
	mustDefer(t, root, "root", r.disposer("root", nil))
	if err := root.Dispose(context.Background()); err != nil {
		t.Fatalf("root dispose re-reported a disposed child: %v", err)
	}
	if err := c.Fail(context.Background(), nil); err != nil {
		t.Fatalf("second Fail: %v", err)
	}
}

// A value given to a child is seen through its descendants' contexts, not
// its parent's, and the child's context is still cancelled with its cause.
func TestChildValueIsInherited(t *testing.T) {
	t.Parallel()
	type key struct{}
	root := fiber.New(context.Background(), "root")
	c, err := root.Child("entry", fiber.WithValue(key{}, "gh"))
	if err != nil {
		t.Fatal(err)
	}
	gc := mustChild(t, c, "conn")
	if got := gc.Context().Value(key{}); got != "gh" {
		t.Errorf("grandchild value = %v, want gh", got)
	}
	if got := root.Context().Value(key{}); got != nil {
		t.Errorf("root value = %v, want none", got)
	}
	cause := errors.New("gone")
	if err := c.Fail(context.Background(), cause); err != nil {
		t.Fatal(err)
	}
	if !errors.Is(context.Cause(gc.Context()), cause) {
		t.Errorf("grandchild cause = %v, want the failure", context.Cause(gc.Context()))
	}
	if err := root.Dispose(context.Background()); err != nil {
		t.Fatal(err)
	}
}

func TestGoroutinePanicReachesFaultHandler(t *testing.T) {
	t.Parallel()
	faults := make(chan error, 1)
	root := fiber.New(context.Background(), "root", fiber.WithFaultHandler(func(f *fiber.Fiber, err error) {
		if f.Path() != "root/plugin" {
			t.Errorf("fault from %s", f.Path())
		}
		faults <- err
	}))
	c := mustChild(t, root, "plugin")
	if err := c.Go("watch", func(context.Context) { panic("nil map") }); err != nil {
		t.Fatal(err)
	}
	err := <-faults
	if !strings.Contains(err.Error(), `goroutine "watch" panicked: nil map`) {
		t.Fatalf("fault = %v", err)
	}
	if err := root.Dispose(context.Background()); err != nil {
		t.Fatal(err)
	}
}

func TestDisposeWaitBoundedForSecondCaller(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		release := make(chan struct{})
		f := fiber.New(context.Background(), "x")
		mustDefer(t, f, "slow", func(context.Context) error { <-release; return nil })
		go func() { _ = f.Dispose(context.Background()) }()
		synctest.Wait()
		if f.State() != fiber.Disposing {
			t.Fatalf("state = %v, want disposing", f.State())
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		if err := f.Dispose(ctx); !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("second Dispose: err = %v, want deadline", err)
		}
		close(release)
		<-f.Done()
		if err := f.Dispose(context.Background()); err != nil {
			t.Fatal(err)
		}
	})
}

func TestStateStrings(t *testing.T) {
	t.Parallel()
	for s, want := range map[fiber.State]string{fiber.Active: "active", fiber.Disposing: "disposing", fiber.Disposed: "disposed", fiber.Failed: "failed", fiber.State(9): "State(9)"} {
		if s.String() != want {
			t.Errorf("%d.String() = %q, want %q", int(s), s.String(), want)
		}
	}
}

func ExampleFiber() {
	root := fiber.New(context.Background(), "host")
	plugin, _ := root.Child("echo")
	_, _ = plugin.Defer("unregister tools", func(context.Context) error {
		fmt.Println("tools unregistered")
		return nil
	})
	_, _ = plugin.Defer("close connection", func(context.Context) error {
		fmt.Println("connection closed")
		return nil
	})
	_ = root.Dispose(context.Background())
	fmt.Println(plugin.State())
	// Output:
	// connection closed
	// tools unregistered
	// disposed
}
