package mcpserver

import (
	"context"
	"encoding/json"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/harness-go/harness/plugins/tools"
)

// writes is a stdout that keeps each Write as one element.
type writes chan string

func (w writes) Write(p []byte) (int, error) { w <- string(p); return len(p), nil }

// next returns the next write.
func (w writes) next(t *testing.T) string {
	t.Helper()
	select {
	case s := <-w:
		return s
	case <-time.After(waitTimeout):
		t.Fatal("nothing was written")
		return ""
	}
}

// none fails when something was written within a short while: what is held
// for a burst must not be written before it ends.
func (w writes) none(t *testing.T, why string) {
	t.Helper()
	select {
	case s := <-w:
		t.Fatalf("%s: %q was written", why, s)
	case <-time.After(50 * time.Millisecond):
	}
}

// ids returns the ids of the answers in one write, in order.
func ids(t *testing.T, write string) []string {
	t.Helper()
	var out []string
	for _, line := range strings.SplitAfter(write, "\n") {
		if line == "" {
			continue
		}
		var m message
		if err := json.Unmarshal([]byte(line), &m); err != nil || !strings.HasSuffix(line, "\n") {
			t.Fatalf("not one line of JSON-RPC: %q", line)
		}
		out = append(out, string(m.ID))
	}
	return out
}

// TestBurstsOverStdio: answers a tool gives in a burst (a server's
// connection read several responses at once) are written together at its
// end; an answer that is not held goes out at once, after what was held
// (tools.Burst).
func TestBurstsOverStdio(t *testing.T) {
	t.Parallel()
	r := newRig(t, Options{})
	started := make(chan func(tools.Result, error), 16)
	later := text("later", "")
	later.Start = func(_ context.Context, _ json.RawMessage, done func(tools.Result, error)) bool {
		started <- done
		return true
	}
	r.register(later, text("now", "at once"))

	inR, inW := io.Pipe()
	out := make(writes, 64)
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		served <- r.gw.ServeStdio(ctx, inR, out)
	}()
	t.Cleanup(func() {
		inW.Close()
		cancel()
		<-finished
	})
	send := func(lines ...string) {
		t.Helper()
		if _, err := io.WriteString(inW, strings.Join(lines, "\n")+"\n"); err != nil {
			t.Fatal(err)
		}
	}
	call := func(id, name string) string {
		return `{"jsonrpc":"2.0","id":` + id + `,"method":"tools/call","params":{"name":"` + name + `","arguments":{}}}`
	}
	send(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"0"}}}`)
	out.next(t)
	send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)

	// Answers given in a burst: held, then written in one write.
	send(call("5", "later"))
	send(call("6", "later"))
	done5, done6 := <-started, <-started
	var b tools.Burst
	b.Begin()
	done5(tools.Result{Text: "five", Burst: &b}, nil)
	done6(tools.Result{Text: "six", Burst: &b}, nil)
	out.none(t, "during the burst")
	b.End()
	if got := ids(t, out.next(t)); strings.Join(got, ",") != "5,6" {
		t.Fatalf("the burst's write holds answers %v, want 5,6", got)
	}

	// An answer that is not held goes now, what was held before it.
	send(call("7", "later"))
	done7 := <-started
	b.Begin()
	done7(tools.Result{Text: "seven", Burst: &b}, nil)
	send(call("8", "now"))
	if got := ids(t, out.next(t)); strings.Join(got, ",") != "7,8" {
		t.Fatalf("the write holds answers %v, want 7 (held) then 8", got)
	}
	b.End()
	out.none(t, "after the held answer went")

	// At the end of stdin, an answer still held is written before
	// ServeStdio returns.
	send(call("9", "later"))
	done9 := <-started
	b.Begin()
	done9(tools.Result{Text: "nine", Burst: &b}, nil)
	inW.Close()
	select {
	case err := <-served:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(waitTimeout):
		t.Fatal("ServeStdio did not return at the end of stdin")
	}
	select {
	case w := <-out:
		if got := ids(t, w); strings.Join(got, ",") != "9" {
			t.Fatalf("at the end: answers %v, want 9", got)
		}
	default:
		t.Fatal("ServeStdio returned with an answer held")
	}
	b.End()
}
