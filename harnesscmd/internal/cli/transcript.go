package cli

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/harness-go/harness/host/secret"
	"github.com/harness-go/harness/internal/safe"
	"github.com/harness-go/harness/plugins/agent"
)

// previewBytes bounds a tool call's or result's line on stderr.
const previewBytes = 200

// transcript shows a turn's events: the answer streamed to stdout, tool
// activity, reasoning (when asked for) and usage as lines on stderr; or,
// with --json, every event as one JSON object per line on stdout.
//
// Streamed model text is not redacted (a secret split across two deltas
// could not be caught, and holding text back would stall the stream), but
// on a terminal its control characters other than \n and \t are escaped.
// Our own lines (previews, errors, usage) are redacted: they go to the
// run's stderr, which redacts every write (Main wraps it; so does run on a
// terminal), and each is one write. Every piece of them that comes from the
// model or a server (a tool's name, its arguments, its result, a retry's
// reason) is escaped, on a terminal or not, and so is shown reasoning.
type transcript struct {
	out, errOut   io.Writer
	secrets       *secret.Set
	json          bool
	showReasoning bool
	outTTY        bool // stdout is a terminal: escape the text
	errTTY        bool // stderr is a terminal: dim the reasoning

	midLine     bool // stdout's last byte was not a newline
	inReasoning bool // a run of reasoning is open on stderr
	open        int  // calls announced and not answered yet
	many        bool // the step being answered made several calls
	saidError   bool // --json: an error event is out
	searchSent  int  // tool search: the tools the last shown step sent

	// resulted, when set, hears of each tool result (the console clears
	// that call's progress line).
	resulted func(name string)
}

// newTranscript shows a turn on the run's stdout and stderr (on a terminal,
// the console's writers).
func newTranscript(hs *harness) *transcript {
	return &transcript{
		out: hs.env.Stdout, errOut: hs.env.Stderr, secrets: hs.env.secrets,
		json: hs.o.json, showReasoning: hs.o.showReasoning,
		outTTY: hs.env.StdoutTTY, errTTY: hs.env.StderrTTY,
	}
}

// event shows one event.
func (t *transcript) event(e agent.Event) {
	if t.json {
		t.jsonEvent(e)
		return
	}
	switch e.Type {
	case agent.EventText:
		t.endReasoning()
		text := e.Delta
		if t.outTTY {
			text = safe.Text(text)
		}
		if text != "" {
			io.WriteString(t.out, text)
			t.midLine = !strings.HasSuffix(text, "\n")
		}
	case agent.EventReasoning:
		if !t.showReasoning || e.Delta == "" {
			return
		}
		if !t.inReasoning {
			t.breakLine()
			if t.errTTY {
				io.WriteString(t.errOut, "\x1b[2m")
			}
			t.inReasoning = true
		}
		io.WriteString(t.errOut, safe.Text(e.Delta))
	case agent.EventToolCall:
		t.endReasoning()
		t.breakLine()
		t.open++
		// The name is the model's word, as the arguments are: a model can
		// ask for any name, escapes included.
		t.line("→ " + t.preview(e.Name) + " " + t.preview(string(e.Arguments)))
	case agent.EventToolResult:
		if t.resulted != nil {
			t.resulted(e.Name)
		}
		if t.open > 1 {
			t.many = true
		}
		t.open = max(0, t.open-1)
		text := e.Text
		if t.many {
			text = e.Name + ": " + text
		}
		if t.open == 0 {
			t.many = false
		}
		t.line("← " + t.preview(text))
	case agent.EventRetry:
		t.endReasoning()
		t.breakLine()
		t.line(fmt.Sprintf("retrying in %s (attempt %d): %s", e.Wait.Round(10*time.Millisecond), e.Attempt, safe.Line(e.Message)))
	case agent.EventToolSearch:
		// Once a turn, and again when search_tools changed what is sent.
		if e.Sent == t.searchSent {
			return
		}
		t.searchSent = e.Sent
		t.endReasoning()
		t.breakLine()
		t.line(toolSearchLine(e))
	case agent.EventUsage:
		t.endReasoning()
		t.endAnswer()
		if u := e.Usage; u.Steps+u.ToolCalls > 0 || u.PromptTokens > 0 {
			t.line(usageLine(u))
		}
	case agent.EventDone:
		if e.FinishReason == "length" {
			t.line("the answer was cut: the model reached its token limit (maxTokens)")
		}
	}
	// Errors are reported by the caller, once, as the command's failure.
}

// jsonEvent writes e as one line on stdout, which does not redact: our own
// fields are redacted here (the error's message by Run), the model's text
// and the tools' results are not.
func (t *transcript) jsonEvent(e agent.Event) {
	switch e.Type {
	case agent.EventRetry:
		return // the log tells it (info level); not part of the event stream
	case agent.EventToolCall:
		// Arguments the redaction made invalid are written as {}.
		e.Arguments = json.RawMessage(t.secrets.Redact(string(e.Arguments)))
	case agent.EventError:
		t.saidError = true
	}
	b, _ := e.MarshalJSON()
	t.out.Write(append(inertJSON(b), '\n'))
}

// inertJSON writes the DEL and C1 control characters of a JSON line as \u
// escapes, as encoding/json already writes the C0 ones (ESC, BEL): it writes
// these raw, and a terminal may act on them (U+009B is CSI). Outside ASCII
// and DEL can only be inside a string, so the line means the same.
func inertJSON(b []byte) []byte {
	if !bytes.Contains(b, []byte{0x7f}) && !bytes.Contains(b, []byte{0xc2}) {
		return b
	}
	out := make([]byte, 0, len(b)+16)
	for i := 0; i < len(b); i++ {
		switch c := b[i]; {
		case c == 0x7f:
			out = append(out, `\u007f`...)
		case c == 0xc2 && i+1 < len(b) && b[i+1] >= 0x80 && b[i+1] <= 0x9f:
			out = fmt.Appendf(out, `\u%04x`, b[i+1])
			i++
		default:
			out = append(out, c)
		}
	}
	return out
}

// preview is one inert, redacted line of at most previewBytes (then "…"):
// redacted first (a cut secret would no longer match), then escaped, then
// cut.
func (t *transcript) preview(s string) string {
	line := safe.Line(t.secrets.Redact(strings.TrimSpace(s)))
	if cut := safe.Cut(line, previewBytes); len(cut) < len(line) {
		return cut + "…"
	}
	return line
}

// line writes one line of ours to stderr, in one write (stderr redacts).
func (t *transcript) line(s string) {
	io.WriteString(t.errOut, s+"\n")
}

// breakLine ends the answer's current line on a terminal before a line of
// ours goes to stderr, so the two do not share a line on screen.
func (t *transcript) breakLine() {
	if t.midLine && t.outTTY && t.errTTY {
		io.WriteString(t.out, "\n")
		t.midLine = false
	}
}

// endAnswer ends the answer with a newline.
func (t *transcript) endAnswer() {
	if t.midLine {
		io.WriteString(t.out, "\n")
		t.midLine = false
	}
}

func (t *transcript) endReasoning() {
	if !t.inReasoning {
		return
	}
	if t.errTTY {
		io.WriteString(t.errOut, "\x1b[0m")
	}
	io.WriteString(t.errOut, "\n")
	t.inReasoning = false
}

// usageLine is the turn's cost, for people.
func usageLine(u agent.Usage) string {
	var b strings.Builder
	b.WriteByte('[')
	if u.PromptTokens+u.CompletionTokens > 0 { // a server may report none
		fmt.Fprintf(&b, "%s prompt tokens", count(u.PromptTokens))
		if u.CacheHitTokens > 0 {
			fmt.Fprintf(&b, " (%s cached)", count(u.CacheHitTokens))
		}
		fmt.Fprintf(&b, ", %s completion, ", count(u.CompletionTokens))
	}
	fmt.Fprintf(&b, "%s, %s, %s]", plural(u.Steps, "step"), plural(u.ToolCalls, "tool call"), u.Duration.Round(10*time.Millisecond))
	return b.String()
}

func plural(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return fmt.Sprintf("%d %ss", n, what)
}

// count writes n with thousands separators.
func count(n int64) string {
	s := fmt.Sprint(n)
	for i := len(s) - 3; i > 0 && s[i-1] != '-'; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}

// toolSearchLine says what a step in tool search mode sends.
func toolSearchLine(e agent.Event) string {
	parts := []string{"search_tools"}
	if always := e.Sent - 1 - e.Loaded; always > 0 {
		parts = append(parts, fmt.Sprintf("%d always loaded", always))
	}
	if e.Loaded > 0 {
		parts = append(parts, fmt.Sprintf("%d found", e.Loaded))
	}
	return fmt.Sprintf("[tool search: %d of %s sent: %s]", e.Sent, plural(e.Available, "tool"), strings.Join(parts, ", "))
}
