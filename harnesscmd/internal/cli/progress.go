package cli

import (
	"fmt"
	"io"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/harness-go/harness/host"
	"github.com/harness-go/harness/internal/safe"
	"github.com/harness-go/harness/plugins/tools"
)

// reporter tells a person on stderr what the entries are doing: while they
// start, a live summary line on a terminal (plain lines in a pipe); then,
// for `run`, one line per event (reloads, failures, tool changes).
type reporter struct {
	hs     *harness
	w      io.Writer
	sub    *host.Subscription
	done   chan struct{}
	mu     sync.Mutex
	live   bool       // redraw one summary line
	plain  bool       // print a line per event
	drawn  bool       // a live line is on screen
	loaded bool       // the first load was seen
	since  time.Time  // events before this were summed up by the live line
	seen   uint64     // the Seq of the last event handled
	caught *sync.Cond // on mu: seen grew

	stopOnce sync.Once
}

// startProgress reports until stop is called. In a pipe a one-shot command
// stays quiet (its problems are reported at the end); run passes events=true
// to get a line per event.
func startProgress(hs *harness, events bool) *reporter {
	r := newReporter(hs)
	r.live = drawable(hs)
	r.plain = events && (!hs.env.StderrTTY || hs.o.logFormat == "json")
	go r.loop()
	r.redraw()
	return r
}

// followEvents reports a line per host event on stderr from now on (what
// came before is the start, which reportProblems tells), as run does in a
// pipe: for serve, whose stdout is the protocol's and whose client keeps
// stderr in its log.
func followEvents(hs *harness) *reporter {
	r := newReporter(hs)
	r.plain, r.loaded, r.since = true, true, time.Now()
	go r.loop()
	return r
}

// newReporter subscribes a reporter to the host's events, from now on:
// what came before the subscription is not its to see.
func newReporter(hs *harness) *reporter {
	r := &reporter{hs: hs, w: hs.env.Stderr, sub: hs.host.Subscribe(), done: make(chan struct{})}
	r.caught = sync.NewCond(&r.mu)
	r.seen = hs.host.Seq()
	return r
}

// stop ends the reporting and clears the live line. It may be called twice.
func (r *reporter) stop() {
	r.stopOnce.Do(func() {
		r.sub.Close()
		<-r.done
		r.mu.Lock()
		r.clear()
		r.mu.Unlock()
	})
}

// eventsFollow switches a live reporter to a line per event, after the first
// settle of `run`. It first handles every event the host emitted until
// now, so that in a pipe the lines of the start (an entry that failed) come
// before the replies of the first command, not after them.
func (r *reporter) eventsFollow() {
	r.mu.Lock()
	defer r.mu.Unlock()
	for upTo := r.hs.host.Seq(); r.seen < upTo; {
		select {
		case <-r.done:
			upTo = 0 // stopped: nothing more comes
		default:
			r.caught.Wait()
		}
	}
	r.clear()
	if !r.plain {
		// What happened until now is the start, which the live line
		// summed up, or which went quietly (a dumb terminal), and the
		// caller reports what went wrong: events (tool changes too) still
		// on their way from before are not news.
		r.since = time.Now()
	}
	r.live, r.plain = false, true
}

// loop reads the host's one stream: entries, reloads and the tools'
// changes alike.
func (r *reporter) loop() {
	defer func() {
		r.mu.Lock()
		close(r.done)
		r.caught.Broadcast()
		r.mu.Unlock()
	}()
	for ev := range r.sub.C {
		r.event(ev)
	}
}

func (r *reporter) event(ev host.Event) {
	r.mu.Lock()
	defer r.mu.Unlock()
	defer func() {
		r.seen = max(r.seen, ev.Seq)
		r.caught.Broadcast()
	}()
	if ev.Type == host.Reloaded && ev.Entry == "" && !r.loaded {
		// The first load is the start; the entries' own lines tell it.
		r.loaded = true
		r.redrawLocked()
		return
	}
	if r.plain {
		if ev.Time.Before(r.since) {
			return
		}
		if line := r.describe(ev); line != "" {
			r.clear()
			r.hs.note("info", safe.Text(line))
		}
		return
	}
	r.redrawLocked()
}

// describe is the line for one event, or "" for events not worth a line.
func (r *reporter) describe(ev host.Event) string {
	switch {
	case ev.Type == host.Reloaded && ev.Entry != "":
		// An entry's children were set again (an mcp-servers entry's file
		// changed).
		if ev.Plan.Empty() {
			return ""
		}
		return fmt.Sprintf("%s: its file reloaded: %s", ev.Entry, ev.Plan.String())
	case ev.Type == host.ReloadRejected && ev.Entry != "":
		return "" // the entry's note says it ("…; its children are unchanged")
	case ev.Type == host.ServiceChanged:
		if ev.Service != tools.Service {
			return ""
		}
		return toolsLine(ev.Added, ev.Removed)
	}
	switch ev.Type {
	case host.Reloaded:
		if ev.Plan.Empty() {
			return "reloaded: no entry changed"
		}
		return "reloaded: " + ev.Plan.String()
	case host.ReloadRejected:
		return "reload refused, nothing changed: " + safe.Text(ev.Err.Error())
	}
	switch {
	case ev.Reloading:
		return fmt.Sprintf("%s reloading: the new instance starts beside the one that serves", ev.Entry)
	case ev.Note != "":
		return fmt.Sprintf("%s: %s", ev.Entry, safe.Text(ev.Note))
	}
	switch ev.State {
	case host.Ready:
		return fmt.Sprintf("%s ready%s", ev.Entry, r.toolCount(ev.Entry))
	case host.Reconnecting:
		return fmt.Sprintf("%s reconnecting: %s", ev.Entry, safe.Text(ev.Reason()))
	case host.NeedsLogin:
		return fmt.Sprintf("%s needs a login: %s (%s)", ev.Entry, loginHint(ev.Entry), safe.Text(ev.Reason()))
	case host.Failed:
		return fmt.Sprintf("%s failed: %s", ev.Entry, safe.Text(ev.Reason()))
	case host.Pending:
		if len(ev.Missing) == 0 {
			return ""
		}
		return fmt.Sprintf("%s pending: waiting for %s", ev.Entry, strings.Join(ev.Missing, ", "))
	case host.Starting:
		return fmt.Sprintf("%s starting", ev.Entry)
	case host.Stopped:
		if ev.Prev == host.Stopped {
			return ""
		}
		return fmt.Sprintf("%s stopped", ev.Entry)
	case host.Disabled:
		return fmt.Sprintf("%s disabled", ev.Entry)
	}
	return ""
}

// toolCount is " (N tools)" for an entry that registered tools (the
// registry records who registered each), or "".
func (r *reporter) toolCount(id string) string {
	if n := len(r.hs.tools.Owned(id)); n > 0 {
		return fmt.Sprintf(" (%d tools)", n)
	}
	return ""
}

// toolsLine is the line of one change of the tools: the names added and
// removed (sorted, as the event has them), or "" when it named none.
func toolsLine(added, removed []string) string {
	var parts []string
	if len(added) > 0 {
		parts = append(parts, "added "+strings.Join(added, ", "))
	}
	if len(removed) > 0 {
		parts = append(parts, "removed "+strings.Join(removed, ", "))
	}
	if len(parts) == 0 {
		return ""
	}
	return "tools " + strings.Join(parts, "; ")
}

func (r *reporter) redraw() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.redrawLocked()
}

// redrawLocked draws the live line: counts per state and who is starting.
// drawable reports whether stderr takes a live line: a terminal that
// understands escapes, and text records. On a dumb terminal the start is
// quiet, as in a pipe (what went wrong is reported once it settled).
func drawable(hs *harness) bool {
	term := ""
	if hs.env.Lookup != nil {
		term, _ = hs.env.Lookup("TERM")
	}
	return hs.env.StderrTTY && hs.o.logFormat != "json" && term != "dumb"
}

func (r *reporter) redrawLocked() {
	if !r.live {
		return
	}
	snap := r.hs.host.Snapshot()
	counts := map[host.State]int{}
	var starting []string
	for _, e := range snap {
		counts[e.State]++
		if e.State == host.Starting || e.Reloading {
			starting = append(starting, e.ID)
		}
	}
	if len(starting) == 0 {
		r.clear()
		return
	}
	var parts []string
	for _, s := range []host.State{host.Ready, host.Failed, host.Pending} {
		if counts[s] > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", counts[s], s))
		}
	}
	line := fmt.Sprintf("starting %s", strings.Join(starting, ", "))
	if len(parts) > 0 {
		line = strings.Join(parts, ", ") + "; " + line
	}
	// One row: a line that wraps leaves a row behind at every redraw.
	width := 100
	if w := stderrWidth(); w > 1 {
		width = w - 1
	}
	if utf8.RuneCountInString(line) > width {
		line = string([]rune(line)[:width-1]) + "…"
	}
	fmt.Fprintf(r.w, "\r\x1b[K%s", line)
	r.drawn = true
}

func (r *reporter) clear() {
	if r.drawn {
		fmt.Fprint(r.w, "\r\x1b[K")
		r.drawn = false
	}
}
