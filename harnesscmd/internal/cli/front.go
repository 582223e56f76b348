package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/url"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/harness-go/harness/internal/form"
	"github.com/harness-go/harness/internal/safe"
	"github.com/harness-go/harness/plugins/tools"
)

// The fronts of the harness's commands (tools.Front, docs/rfc/0002): who
// answers what a tool asks while it runs — an MCP server's elicitation, a
// native tool's question — and sees what it reports. docs/rfc/0006-console.md,
// "Questions", says why they are built so:
//
//  1. The console on a terminal asks the person: a form built from the
//     elicitation's schema, or a URL shown with its host and opened only
//     after a yes (consoleFront). At most one question is shown at a time;
//     the others wait in order. A question ends with its call: Ctrl-C, a
//     reload that replaces the tool's server, a shutdown.
//  2. Everything else — the console in a pipe, ask, call — declines, and
//     says so on stderr (noteFront). Declining is an answer, never a wait.
//  3. None of them samples: sampling is deprecated (2026-07-28) and the
//     harness has no model of its own to offer; roots are the entries'
//     (roots: in cordis.yml), not the console's. Both are unsupported.
//  4. Progress of a call in flight is one live line on a terminal,
//     replaced, cleared when the call ends (progressLine); in a pipe one
//     line per notification. A server's log messages reach stderr through
//     the log, where mcp-client puts them (with its entry); a native tool's
//     are logged here the same way.

// asker returns what the front says the question is, for a person.
func asker(q tools.Question) string {
	who := "a tool"
	if q.Server != "" {
		who = fmt.Sprintf("server %q", safe.Line(q.Server))
	}
	if q.Tool != "" {
		who += fmt.Sprintf(" (tool %s)", safe.Line(q.Tool))
	}
	return who
}

// elicitation is what the fronts read of an elicitation's params.
type elicitation struct {
	Mode            string          `json:"mode"`
	Message         string          `json:"message"`
	RequestedSchema json.RawMessage `json:"requestedSchema"`
	URL             string          `json:"url"`
}

func readElicitation(params json.RawMessage) (elicitation, error) {
	var e elicitation
	if err := json.Unmarshal(params, &e); err != nil {
		return e, fmt.Errorf("the elicitation's params are not a JSON object: %v", err)
	}
	return e, nil
}

// noteFront declines every question with a note on stderr, and shows
// progress when it has a line for it. It is the front of ask, call, and
// the console in a pipe.
type noteFront struct {
	hs       *harness
	who      string        // "harness call": who declines, in the note
	progress *progressLine // nil: progress is not shown
}

var _ tools.Front = (*noteFront)(nil)

func (f *noteFront) Offers() tools.Offers { return tools.Offers{Progress: f.progress != nil} }

func (f *noteFront) Ask(_ context.Context, q tools.Question) (json.RawMessage, error) {
	switch q.Method {
	case tools.MethodElicit:
		e, _ := readElicitation(q.Params)
		what := "to fill a form"
		if e.Mode == "url" {
			what = "to open " + safe.Line(e.URL)
		}
		f.hs.note("warn", fmt.Sprintf("%s asks %s: %q — declined: %s has nobody to ask (the console on a terminal, harness run, answers questions)",
			asker(q), what, safe.Line(e.Message), f.who))
		return tools.Declined(), nil
	case tools.MethodSample:
		f.hs.note("warn", fmt.Sprintf("%s asks for a completion from a model (sampling): not supported — the harness offers its servers no model", asker(q)))
	}
	return nil, tools.ErrUnsupported
}

func (f *noteFront) Notify(_ context.Context, n tools.Notification) {
	switch n.Method {
	case tools.MethodProgress:
		if f.progress != nil {
			f.progress.show(n)
		}
	case tools.MethodLog:
		logNative(f.hs.log, n)
	}
}

// logNative logs a native tool's log message at its level; a server's the
// bridge has logged already, with its entry.
func logNative(log *slog.Logger, n tools.Notification) {
	if n.Server != "" {
		return
	}
	var m struct {
		Level  string          `json:"level"`
		Logger string          `json:"logger"`
		Data   json.RawMessage `json:"data"`
	}
	if json.Unmarshal(n.Params, &m) != nil {
		return
	}
	level := slog.LevelInfo
	switch m.Level {
	case "debug":
		level = slog.LevelDebug
	case "notice", "info":
	case "warning":
		level = slog.LevelWarn
	default:
		if m.Level != "" {
			level = slog.LevelError
		}
	}
	text := form.JSONText(m.Data)
	log.Log(context.Background(), level, safe.Line(text), "tool", safe.Line(n.Tool), "logger", safe.Line(m.Logger))
}

// progressLine shows the progress of the calls in flight: on a terminal
// one live line, replaced at each notification and cleared when its call
// ends; elsewhere one line per notification.
type progressLine struct {
	hs   *harness
	w    io.Writer
	live bool

	mu    sync.Mutex
	calls map[string]string // tool → its last progress text
	last  string            // the tool shown
	drawn bool
}

func newProgressLine(hs *harness, w io.Writer) *progressLine {
	return &progressLine{hs: hs, w: w, live: drawable(hs), calls: map[string]string{}}
}

// show takes a progress notification.
func (p *progressLine) show(n tools.Notification) {
	if p == nil {
		return
	}
	var m struct {
		Progress float64  `json:"progress"`
		Total    *float64 `json:"total"`
		Message  string   `json:"message"`
	}
	if json.Unmarshal(n.Params, &m) != nil {
		return
	}
	text := fmt.Sprintf("%g", m.Progress)
	if m.Total != nil && *m.Total > 0 {
		text = fmt.Sprintf("%g/%g (%d%%)", m.Progress, *m.Total, int(100*m.Progress / *m.Total))
	}
	if m.Message != "" {
		text += " " + m.Message
	}
	tool := n.Tool
	if tool == "" {
		tool = "the call"
	}
	line := safe.Line(tool + ": " + text)
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.live {
		p.hs.note("info", "progress of "+line)
		return
	}
	p.calls[tool], p.last = line, tool
	p.drawLocked()
}

// done says tool's call ended: its line goes.
func (p *progressLine) done(tool string) {
	if p == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if _, ok := p.calls[tool]; !ok {
		return
	}
	delete(p.calls, tool)
	if p.last == tool {
		p.last = ""
		for t := range p.calls { // another call still reports: show it
			p.last = t
			break
		}
	}
	p.drawLocked()
}

// clear ends every call's line.
func (p *progressLine) clear() {
	if p == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.calls, p.last = map[string]string{}, ""
	p.drawLocked()
}

func (p *progressLine) drawLocked() {
	if !p.live {
		return
	}
	line, ok := p.calls[p.last]
	if !ok {
		if p.drawn {
			io.WriteString(p.w, "\r\x1b[K")
			p.drawn = false
		}
		return
	}
	if n := len(p.calls); n > 1 {
		line = fmt.Sprintf("%s (+%d more)", line, n-1)
	}
	// One row: a line that wraps leaves a row behind at every redraw.
	width := 100
	if w := stderrWidth(); w > 1 {
		width = w - 1
	}
	if utf8.RuneCountInString(line) > width {
		line = string([]rune(line)[:width-1]) + "…"
	}
	io.WriteString(p.w, "\r\x1b[K"+line)
	p.drawn = true
}

// answerSource reads a person's answers to a question: the console's
// terminal, through its reading goroutine.
type answerSource interface {
	// answer shows prompt and returns the line typed; errCancelled when
	// the person cancels (Ctrl-C, Ctrl-D); ctx ending withdraws it.
	answer(ctx context.Context, prompt string) (string, error)
}

// consoleFront asks the person at the console's terminal.
type consoleFront struct {
	hs       *harness
	out      io.Writer // the console's stderr: above the prompt
	in       answerSource
	progress *progressLine
	open     func(string) error // opens a URL in a browser (browser.go)

	mu    sync.Mutex
	queue []chan struct{} // the questions shown (the first) and waiting, in order
}

var _ tools.Front = (*consoleFront)(nil)

func newConsoleFront(hs *harness, out io.Writer, in answerSource, progress *progressLine) *consoleFront {
	return &consoleFront{hs: hs, out: out, in: in, progress: progress, open: openBrowser(hs.env.Lookup)}
}

func (f *consoleFront) Offers() tools.Offers {
	return tools.Offers{Elicitation: true, ElicitationURL: true, Progress: true}
}

func (f *consoleFront) Notify(_ context.Context, n tools.Notification) {
	switch n.Method {
	case tools.MethodProgress:
		f.progress.show(n)
	case tools.MethodLog:
		logNative(f.hs.log, n)
	}
}

// wait queues a question and returns once it is first (its channel is
// closed then), or when ctx ends (ok false).
func (f *consoleFront) wait(ctx context.Context) (me chan struct{}, ok bool) {
	f.mu.Lock()
	me = make(chan struct{})
	f.queue = append(f.queue, me)
	if len(f.queue) == 1 {
		close(me)
	}
	f.mu.Unlock()
	select {
	case <-me:
		return me, true
	case <-ctx.Done():
		f.leave(me)
		return nil, false
	}
}

// leave takes a question out of the queue; when it was shown, the next is.
func (f *consoleFront) leave(me chan struct{}) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for i, c := range f.queue {
		if c == me {
			f.queue = append(f.queue[:i], f.queue[i+1:]...)
			if i == 0 && len(f.queue) > 0 {
				close(f.queue[0])
			}
			return
		}
	}
}

func (f *consoleFront) say(text string) { io.WriteString(f.out, text+"\n") }

func (f *consoleFront) line(ctx context.Context, prompt string) (string, error) {
	return f.in.answer(ctx, prompt)
}

// Ask shows q to the person, one question at a time.
func (f *consoleFront) Ask(ctx context.Context, q tools.Question) (json.RawMessage, error) {
	if q.Method != tools.MethodElicit {
		return nil, tools.ErrUnsupported
	}
	e, err := readElicitation(q.Params)
	if err != nil {
		return nil, err
	}
	me, ok := f.wait(ctx)
	if !ok {
		return nil, context.Cause(ctx)
	}
	defer f.leave(me)
	// The live progress line makes room.
	f.progress.clear()
	var res map[string]any
	if e.Mode == "url" {
		res, err = f.askURL(ctx, q, e)
	} else {
		res, err = f.askForm(ctx, q, e)
	}
	switch {
	case ctx.Err() != nil:
		f.say("  (the question was withdrawn: " + safe.Line(context.Cause(ctx).Error()) + ")")
		return nil, context.Cause(ctx)
	case errors.Is(err, errCancelled):
		f.say("  cancelled")
		res = map[string]any{"action": actionCancel}
	case err != nil:
		return nil, err
	}
	return json.Marshal(res)
}

// askForm shows a form's message and asks its fields.
func (f *consoleFront) askForm(ctx context.Context, q tools.Question, e elicitation) (map[string]any, error) {
	fields, err := form.Parse(e.RequestedSchema)
	f.say(fmt.Sprintf("%s asks: %s", asker(q), safe.Text(e.Message)))
	if err != nil {
		f.say("  declined: " + safe.Line(err.Error()))
		return map[string]any{"action": actionDecline}, nil
	}
	return fillForm(ctx, f, fields)
}

// askURL shows the URL and its host, and opens it only after a yes.
func (f *consoleFront) askURL(ctx context.Context, q tools.Question, e elicitation) (map[string]any, error) {
	f.say(fmt.Sprintf("%s asks you to open a page: %s", asker(q), safe.Text(e.Message)))
	u, err := url.Parse(e.URL)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
		f.say(fmt.Sprintf("  %s — declined: not a web address (http or https)", safe.Line(e.URL)))
		return map[string]any{"action": actionDecline}, nil
	}
	f.say("  " + safe.Line(u.String()))
	f.say("  host: " + safe.Line(u.Hostname()))
	for {
		text, err := f.line(ctx, "  open it in your browser? [y]es, [N]o, [c]ancel: ")
		if err != nil {
			return nil, err
		}
		switch strings.ToLower(strings.TrimSpace(text)) {
		case "y", "yes":
			if err := f.open(u.String()); err != nil {
				f.say("  could not open a browser (" + safe.Line(err.Error()) + "): open the address above yourself")
			}
			return map[string]any{"action": actionAccept}, nil
		case "", "n", "no":
			return map[string]any{"action": actionDecline}, nil
		case "c", "cancel":
			return map[string]any{"action": actionCancel}, nil
		}
		f.say("    answer y, n or c")
	}
}
