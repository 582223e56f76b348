package mcpserver

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/harness-go/harness/plugins/tools"
)

type baseKey struct{}

// A stdio request is a context by the rules of its doc comment: it ends
// once, its AfterFuncs run then unless stopped, contexts derived from it
// end with it, and it answers its own values before the connection's.
func TestRequestIsAContext(t *testing.T) {
	t.Parallel()
	base, cancelBase := context.WithCancelCause(context.WithValue(context.Background(), baseKey{}, "conn"))
	defer cancelBase(nil)
	r := newRequest(&stdioConn{base: base}, "tools/call", "n:1")

	if r.Err() != nil {
		t.Fatalf("Err before the end: %v", r.Err())
	}
	if _, ok := r.Deadline(); ok {
		t.Fatal("a deadline the connection does not have")
	}
	// Rule 2: its values, then the connection's.
	if r.Value(baseKey{}) != "conn" || outcomeOf(r) != &r.outcome {
		t.Fatal("the request does not carry the connection's values and its outcome")
	}
	if tools.WantsRawResult(r) || tools.FrontOf(r) != nil {
		t.Fatal("a request that is no fast call carries a call's values")
	}
	r.call = tools.CallValues{Front: &r.front, RawResult: true}
	if !tools.WantsRawResult(r) || tools.FrontOf(r) != &r.front {
		t.Fatal("a fast call's request does not carry its call's values")
	}

	ran := make(chan string, 3)
	stopFirst := r.AfterFunc(func() { ran <- "first" })
	r.AfterFunc(func() { ran <- "second" })
	stopThird := r.AfterFunc(func() { ran <- "third" })
	if !stopThird() || stopThird() {
		t.Fatal("stop: true the first time only")
	}
	if len(r.afters) != 2 {
		t.Fatalf("%d functions registered after a stop, want 2", len(r.afters))
	}
	child, cancelChild := context.WithTimeout(r, time.Hour) // derived: through AfterFunc
	defer cancelChild()
	done := r.Done()

	r.end()
	r.end() // a second end changes nothing
	<-done
	<-child.Done()
	if !errors.Is(r.Err(), context.Canceled) || !errors.Is(context.Cause(r), context.Canceled) || !errors.Is(child.Err(), context.Canceled) {
		t.Fatalf("after the end: Err %v, Cause %v, the child's Err %v", r.Err(), context.Cause(r), child.Err())
	}
	got := map[string]bool{<-ran: true, <-ran: true}
	if !got["first"] || !got["second"] {
		t.Fatalf("AfterFuncs run at the end: %v", got)
	}
	if stopFirst() {
		t.Fatal("stop after the function ran says it stopped it")
	}
	// After the end, AfterFunc runs f at once, and Done is closed.
	r.AfterFunc(func() { ran <- "late" })
	if <-ran != "late" {
		t.Fatal("an AfterFunc after the end did not run")
	}
	select {
	case <-r.Done():
	default:
		t.Fatal("Done is open after the end")
	}
	select {
	case f := <-ran:
		t.Fatalf("%s ran though it was stopped", f)
	default:
	}
}

// Rule 1: when the connection ends with a cause, that is the cause of
// its requests.
func TestRequestCauseIsTheConnections(t *testing.T) {
	t.Parallel()
	base, cancelBase := context.WithCancelCause(context.Background())
	r := newRequest(&stdioConn{base: base}, "tools/call", "n:1")
	why := errors.New("the connection ended")
	cancelBase(why)
	r.end()
	if !errors.Is(r.Err(), context.Canceled) || !errors.Is(context.Cause(r), why) {
		t.Fatalf("Err %v, Cause %v", r.Err(), context.Cause(r))
	}
}
