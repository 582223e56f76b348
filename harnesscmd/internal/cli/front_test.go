package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/harness-go/harness/host/secret"
	"github.com/harness-go/harness/plugins/tools"
)

const greetConfig = "- id: echo\n  name: echo\n  config: {greet: true}\n"

// On a terminal the console asks the person: the form's fields one at a
// time, an answer that does not fit asked again with why, Enter for the
// default, and the choice to send. A reload meanwhile is not held up.
func TestConsoleAsksThePerson(t *testing.T) {
	t.Parallel()
	s := start(t, greetConfig, true)
	s.send("/call greet")
	s.errOut.waitFor(t, "a tool (tool greet) asks: How should I greet you?")
	s.errOut.waitFor(t, "  Your name (text; required): ")
	// A reload is not held up by the question.
	s.sigs <- syscall.SIGHUP
	s.errOut.waitFor(t, "reloaded: no entry changed")
	s.send("")
	s.errOut.waitFor(t, "    an answer is required")
	s.send("Ada")
	s.errOut.waitFor(t, "  Manner (one of: 1 plain, 2 cheerful; Enter for plain): ")
	s.send("2")
	s.errOut.waitFor(t, "  send? [Y]es, [d]ecline, [c]ancel: ")
	s.send("")
	s.out.waitFor(t, "Hello, Ada! Lovely to meet you!\n")
	// Defaults, and a decline at the end.
	s.send("/call greet")
	s.errOut.waitFor(t, "How should I greet you?")
	s.send("Bo")
	s.send("")
	s.send("d")
	s.out.waitFor(t, "Hello, whoever you are (you chose to decline).\n")
	s.send("/quit")
	if code := s.exit(); code != 0 {
		t.Fatalf("exit %d", code)
	}
}

// Ctrl-C while a question waits cancels the call, which withdraws the
// question; the console goes on. On a terminal without the line editor
// (TERM=dumb) the line typed for the withdrawn question is dropped.
func TestConsoleCtrlCWithdrawsTheQuestion(t *testing.T) {
	t.Parallel()
	s := start(t, greetConfig, true)
	s.send("/call greet")
	s.errOut.waitFor(t, "  Your name (text; required): ")
	s.sigs <- os.Interrupt
	s.errOut.waitFor(t, "(the question was withdrawn: context canceled)")
	s.out.waitFor(t, "Error: context canceled")
	s.send("typed for the withdrawn question")
	s.send(`/call echo {"message":"still here"}`)
	s.out.waitFor(t, "still here\n")
	if strings.Contains(s.errOut.String(), "unknown command") {
		t.Fatalf("the answer of a withdrawn question ran as a line:\n%s", s.errOut)
	}
	s.send("/quit")
	if code := s.exit(); code != 0 {
		t.Fatalf("exit %d", code)
	}
}

// In a pipe nobody can answer: the question is declined at once, and
// stderr says so.
func TestConsoleInAPipeDeclines(t *testing.T) {
	t.Parallel()
	s := start(t, greetConfig, false)
	s.send("/call greet")
	s.out.waitFor(t, "Hello, whoever you are (you chose to decline).\n")
	s.errOut.waitFor(t, `a tool (tool greet) asks to fill a form: "How should I greet you?" — declined: the console (reading a pipe) has nobody to ask`)
	s.send("/quit")
	if code := s.exit(); code != 0 {
		t.Fatalf("exit %d", code)
	}
}

// harness call declines what the tool asks, with a note on stderr.
func TestCallDeclinesWithANote(t *testing.T) {
	t.Parallel()
	s := start(t, greetConfig, false, "call", "greet")
	if code := s.exit(); code != 0 {
		t.Fatalf("exit %d\nstderr:\n%s", code, s.errOut)
	}
	if got := s.out.String(); got != "Hello, whoever you are (you chose to decline).\n" {
		t.Fatalf("stdout %q", got)
	}
	if !strings.Contains(s.errOut.String(), "declined: harness call has nobody to ask") {
		t.Fatalf("stderr:\n%s", s.errOut)
	}
}

// fakeAnswers answers questions from a channel and records the prompts in
// the order they were shown.
type fakeAnswers struct {
	mu      sync.Mutex
	prompts []string
	answers chan string
	shown   chan struct{} // one per prompt, when set
}

func (f *fakeAnswers) answer(ctx context.Context, prompt string) (string, error) {
	f.mu.Lock()
	f.prompts = append(f.prompts, prompt)
	f.mu.Unlock()
	if f.shown != nil {
		f.shown <- struct{}{}
	}
	select {
	case a := <-f.answers:
		return a, nil
	case <-ctx.Done():
		return "", context.Cause(ctx)
	}
}

// At most one question is shown at a time; the others wait in order, and
// one whose call ends while it waits leaves the line.
func TestConsoleQuestionsWaitInOrder(t *testing.T) {
	t.Parallel()
	out := &syncBuffer{}
	hs := &harness{o: &options{}, env: Env{Stderr: out, Lookup: func(string) (string, bool) { return "", false }}}
	in := &fakeAnswers{answers: make(chan string), shown: make(chan struct{}, 16)}
	f := newConsoleFront(hs, out, in, newProgressLine(hs, out))
	form := func(title string) tools.Question {
		return tools.Question{Method: tools.MethodElicit, Params: json.RawMessage(`{"message":"` + title + `","requestedSchema":{"type":"object","properties":{"x":{"type":"string","title":"` + title + `"}}}}`)}
	}
	ask := func(ctx context.Context, title string) chan string {
		done := make(chan string, 1)
		go func() {
			raw, err := f.Ask(ctx, form(title))
			if err != nil {
				done <- "error: " + err.Error()
				return
			}
			done <- string(raw)
		}()
		return done
	}
	first := ask(context.Background(), "first")
	waitPrompt(t, in, 1)
	gone, leave := context.WithCancel(context.Background())
	second := ask(gone, "second")
	third := ask(context.Background(), "third")
	leave() // the second's call ends while it waits
	if got := <-second; !strings.Contains(got, "context canceled") {
		t.Fatalf("the withdrawn second question: %s", got)
	}
	in.answers <- "one"
	in.answers <- "y"
	if got := <-first; got != `{"action":"accept","content":{"x":"one"}}` {
		t.Fatalf("first: %s", got)
	}
	waitPrompt(t, in, 3)
	in.answers <- "three"
	in.answers <- ""
	if got := <-third; got != `{"action":"accept","content":{"x":"three"}}` {
		t.Fatalf("third: %s", got)
	}
	in.mu.Lock()
	defer in.mu.Unlock()
	want := []string{"  first (text): ", "  send? [Y]es, [d]ecline, [c]ancel: ", "  third (text): ", "  send? [Y]es, [d]ecline, [c]ancel: "}
	if strings.Join(in.prompts, "|") != strings.Join(want, "|") {
		t.Fatalf("prompts %q, want %q", in.prompts, want)
	}
	if strings.Contains(out.String(), "second") {
		t.Fatalf("the withdrawn question was shown:\n%s", out)
	}
}

// waitPrompt waits until the n-th prompt is shown.
func waitPrompt(t *testing.T, in *fakeAnswers, n int) {
	t.Helper()
	for {
		in.mu.Lock()
		got := len(in.prompts)
		in.mu.Unlock()
		if got >= n {
			return
		}
		select {
		case <-in.shown:
		case <-time.After(10 * time.Second):
			t.Fatalf("%d prompts shown, want %d", got, n)
		}
	}
}

// A URL is shown with its host and opened only after a yes; anything that
// is not a web address is declined.
func TestConsoleURLQuestion(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, url, typed, want string
		opened                 bool
	}{
		{"yes opens", "https://auth.example.com/device?code=1", "y", `{"action":"accept"}`, true},
		{"enter declines", "https://auth.example.com/device", "", `{"action":"decline"}`, false},
		{"cancel", "https://auth.example.com/device", "c", `{"action":"cancel"}`, false},
		{"not a web address", "javascript:alert(1)", "y", `{"action":"decline"}`, false},
	} {
		out := &syncBuffer{}
		hs := &harness{o: &options{}, env: Env{Stderr: out}}
		in := &fakeAnswers{answers: make(chan string, 1)}
		in.answers <- tc.typed
		f := newConsoleFront(hs, out, in, newProgressLine(hs, out))
		var opened []string
		f.open = func(u string) error { opened = append(opened, u); return nil }
		raw, err := f.Ask(context.Background(), tools.Question{Server: "auth", Method: tools.MethodElicit,
			Params: json.RawMessage(`{"mode":"url","message":"Sign in","elicitationId":"e1","url":"` + tc.url + `"}`)})
		if err != nil || string(raw) != tc.want || (len(opened) == 1) != tc.opened {
			t.Errorf("%s: %s, %v, opened %q; want %s, opened %t", tc.name, raw, err, opened, tc.want, tc.opened)
		}
		if tc.opened && !strings.Contains(out.String(), "  host: auth.example.com\n") {
			t.Errorf("%s: the host was not shown:\n%s", tc.name, out)
		}
	}
}

// Progress: one live line on a terminal, replaced and cleared; plain lines
// otherwise.
func TestProgressLine(t *testing.T) {
	t.Parallel()
	note := func(progress float64) tools.Notification {
		p, _ := json.Marshal(map[string]any{"progressToken": 1, "progress": progress, "total": 4, "message": "copying\x1b[2J"})
		return tools.Notification{Tool: "mcp__fs__copy", Method: tools.MethodProgress, Params: p}
	}
	live := &syncBuffer{}
	hs := &harness{o: &options{}, env: Env{Stderr: live, StderrTTY: true, Lookup: func(string) (string, bool) { return "xterm", true }}}
	p := newProgressLine(hs, live)
	p.show(note(1))
	p.show(note(2))
	p.done("mcp__fs__copy")
	if got, want := live.String(), "\r\x1b[Kmcp__fs__copy: 1/4 (25%) copying\\x1b[2J\r\x1b[Kmcp__fs__copy: 2/4 (50%) copying\\x1b[2J\r\x1b[K"; got != want {
		t.Fatalf("live:\n%q\nwant\n%q", got, want)
	}
	plain := &syncBuffer{}
	hs = &harness{o: &options{}, env: Env{Stderr: plain}}
	p = newProgressLine(hs, plain)
	p.show(note(3))
	p.clear()
	if got := plain.String(); got != "harness: progress of mcp__fs__copy: 3/4 (75%) copying\\x1b[2J\n" {
		t.Fatalf("plain: %q", got)
	}
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// The progress of a call in flight is one live line on a terminal, gone
// (cleared in place) before anything else is said of the call; in a pipe
// it is a line of its own.
func TestConsoleProgressLine(t *testing.T) {
	t.Parallel()
	s := start(t, blockConfig, true)
	s.send("/call progress_block")
	s.errOut.waitFor(t, "\r\x1b[Kprogress_block: 1/2 (50%) working")
	s.errOut.waitFor(t, "progress sent")
	s.sigs <- os.Interrupt
	s.errOut.waitFor(t, "\r\x1b[K\ncall cancelled")
	s.send("/quit")
	if code := s.exit(); code != 0 {
		t.Fatalf("exit %d", code)
	}

	p := start(t, blockConfig, false)
	p.send("/call progress_block")
	p.errOut.waitFor(t, "harness: progress of progress_block: 1/2 (50%) working\n")
	p.sigs <- syscall.SIGTERM
	if code := p.exit(); code != 0 {
		t.Fatalf("exit %d", code)
	}
}

// A question's prompt is drawn by the line editor, past the redacting
// writer: the console redacts it before (a server's field title may hold
// a secret of the configuration).
func TestQuestionPromptIsRedacted(t *testing.T) {
	t.Parallel()
	secrets := secret.New()
	secrets.Add("hunter2-hunter2-hunter2")
	c := &console{hs: &harness{o: &options{}, env: Env{secrets: secrets}}, questions: make(chan answerReq), served: make(chan struct{})}
	c.executing.Store(true)
	got := make(chan string, 1)
	go func() {
		q := <-c.questions
		got <- q.prompt
		q.reply <- readResult{line: "typed"}
	}()
	line, err := c.answer(context.Background(), "  token hunter2-hunter2-hunter2 (text): ")
	if err != nil || line != "typed" {
		t.Fatalf("answer: %q, %v", line, err)
	}
	if p := <-got; strings.Contains(p, "hunter2") || !strings.Contains(p, "<redacted>") {
		t.Fatalf("the prompt drawn: %q", p)
	}
}
