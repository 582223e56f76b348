package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/harness-go/harness/host/secret"
)

// The help text is generated from the command table and reads as it did
// when it was a constant: scripts and the e2e tests read it.
func TestConsoleHelpIsTheTable(t *testing.T) {
	t.Parallel()
	c := newConsole(&harness{tools: nil}, nil, nil)
	want := `commands:
  /tools [--json]     list the tools
  /call NAME [JSON]   call a tool
  /status             show every entry
  /restart ID         restart an entry
  /login ID           log in to the remote server of an entry (OAuth)
  /reload             re-read cordis.yml now
  /resources          list the resources (@server:uri in a message attaches one)
  /prompts            list the prompts and their arguments
  /prompt NAME [ARGS] send a prompt's messages to the agent as the next turn
  /help               this list
  /quit               shut down
`
	if got := c.help(); got != want {
		t.Fatalf("help:\n%s\nwant:\n%s", got, want)
	}
	// A command added later (the agent's) comes before /help and /quit.
	c.add(&command{name: "/new", help: "start a new conversation"})
	if got := c.help(); !strings.HasSuffix(got, "  /new                start a new conversation\n  /help               this list\n  /quit               shut down\n") {
		t.Fatalf("help after add:\n%s", got)
	}
}

// testConsole is a console over a harness with no host: enough for the
// table, completion and exec.
func testConsole(tty bool) (*console, *bytes.Buffer, *lines, chan os.Signal) {
	out, errOut := &bytes.Buffer{}, newLines()
	sigs := make(chan os.Signal, 1)
	hs := &harness{o: &options{}, env: Env{Stdout: out, Stderr: errOut, StdinTTY: tty}}
	c := &console{hs: hs, signals: sigs, commands: map[string]*command{}}
	for _, name := range []string{"/tools", "/call", "/status", "/restart", "/reload", "/help", "/quit", "/exit"} {
		c.add(&command{name: name, help: strings.TrimPrefix(name, "/"), run: func(context.Context, string) error { return nil }})
	}
	c.commands["/quit"].run = func(context.Context, string) error { return errQuit }
	c.commands["/exit"].help = ""
	c.commands["/call"].args = "NAME [JSON]"
	c.commands["/call"].complete = func() []string {
		return []string{"mcp__demo__calc", "mcp__demo__base64", "echo", "clock", "bad\x1bname"}
	}
	c.commands["/restart"].args = "ID"
	c.commands["/restart"].complete = func() []string { return []string{"demo", "echo"} }
	c.plain = &command{run: func(_ context.Context, line string) error {
		word, _ := cutSpace(line)
		return unknownCommand(word)
	}}
	return c, out, errOut, sigs
}

func TestConsoleCompletion(t *testing.T) {
	t.Parallel()
	c, _, _, _ := testConsole(true)
	// The agent's seam: a command whose argument completes from a function.
	c.add(&command{name: "/agent", args: "[ID]", help: "show or switch the agent", complete: func() []string { return []string{"deepseek", "local"} }})
	for _, tc := range []struct {
		name, before string
		want         []string
		word         string
	}{
		{"empty line lists the commands", "", []string{"/tools", "/call ", "/status", "/restart ", "/reload", "/agent ", "/help", "/quit"}, ""},
		{"a command prefix", "/re", []string{"/restart ", "/reload"}, "/re"},
		{"one command, with a space for its argument", "/ca", []string{"/call "}, "/ca"},
		{"a hidden alias is not offered", "/ex", nil, "/ex"},
		{"tool names after /call", "/call mcp__demo__ca", []string{"mcp__demo__calc"}, "mcp__demo__ca"},
		{"every tool after /call and a space", "/call ", []string{"clock", "echo", "mcp__demo__base64", "mcp__demo__calc"}, ""},
		{"extra spaces", "/call   ec", []string{"echo"}, "ec"},
		{"entry ids after /restart", "/restart d", []string{"demo"}, "d"},
		{"agent ids from the agent's completer", "/agent l", []string{"local"}, "l"},
		{"nothing past the first argument", `/call echo {"mes`, nil, ""},
		{"a command without a completer", "/tools x", nil, ""},
		{"an unknown command", "/frob x", nil, ""},
		{"a message to the agent", "hello wor", nil, ""},
		{"a message's first word", "hel", nil, ""},
	} {
		got, word := c.complete(tc.before)
		if !slices.Equal(got, tc.want) || word != tc.word {
			t.Errorf("%s: complete(%q) = %q, %q; want %q, %q", tc.name, tc.before, got, word, tc.want, tc.word)
		}
	}
	// The editor gets the remainders after the word.
	term := &terminal{console: c}
	rest, n := completer{term}.Do([]rune("/call mcp__demo__ca"), len("/call mcp__demo__ca"))
	if n != len("mcp__demo__ca") || len(rest) != 1 || string(rest[0]) != "lc" {
		t.Fatalf("Do = %q, %d", rest, n)
	}
}

// The plain-line hook and a command added to the table get the same
// treatment as the built-in commands: Ctrl-C cancels what runs and prints
// its message; an error is printed escaped.
func TestConsoleExecSeams(t *testing.T) {
	t.Parallel()
	c, out, errOut, sigs := testConsole(true)
	started := make(chan struct{})
	c.handlePlain(&command{cancelled: "answer cancelled", run: func(ctx context.Context, line string) error {
		io.WriteString(c.stdout(), "thinking about "+line+"\n")
		close(started)
		<-ctx.Done()
		return ctx.Err()
	}})
	done := make(chan bool)
	go func() { done <- c.exec(context.Background(), "hello there") }()
	<-started
	sigs <- os.Interrupt
	if quit := <-done; quit {
		t.Fatal("Ctrl-C on a terminal quit the console")
	}
	errOut.waitFor(t, "answer cancelled\n")
	if strings.Contains(errOut.String(), "context canceled") {
		t.Errorf("the cancellation was reported as an error:\n%s", errOut)
	}
	if out.String() != "thinking about hello there\n" {
		t.Errorf("stdout %q", out)
	}

	c.add(&command{name: "/fail", help: "x", run: func(context.Context, string) error {
		return errors.New("server said \x1b]0;pwned\x07 no")
	}})
	c.exec(context.Background(), "/fail")
	errOut.waitFor(t, `server said \x1b]0;pwned\x07 no`)
	if c.exec(context.Background(), "/quit") != true {
		t.Error("/quit did not quit")
	}
}

// In a pipe, SIGINT (not only SIGTERM) cancels what runs and quits; on a
// terminal it would cancel and go on.
func TestConsoleExecSignalInAPipe(t *testing.T) {
	t.Parallel()
	for _, sig := range []os.Signal{os.Interrupt, syscall.SIGTERM} {
		c, _, _, sigs := testConsole(false)
		started := make(chan struct{})
		c.add(&command{name: "/slow", help: "x", run: func(ctx context.Context, _ string) error {
			close(started)
			<-ctx.Done()
			return nil
		}})
		done := make(chan bool)
		go func() { done <- c.exec(context.Background(), "/slow") }()
		<-started
		sigs <- sig
		if !<-done {
			t.Fatalf("%v in a pipe did not quit", sig)
		}
	}
}

func TestPasteFilter(t *testing.T) {
	t.Parallel()
	nl, tab := string(newlineMark), string(tabMark)
	for _, tc := range []struct{ name, in, want string }{
		{"typing passes", "abc\r\x1b[A\x03\t", "abc\r\x1b[A\x03\t"},
		{"a pasted block is one line", "\x1b[200~one\ntwo\r\nthree\rfour\x1b[201~\r", "one" + nl + "two" + nl + "three" + nl + "four\r"},
		{"pasted tabs do not complete", "\x1b[200~a\tb\x1b[201~", "a" + tab + "b"},
		{"pasted keys are inert", "\x1b[200~x\x03\x04\x7f\x1b[31my\x1b[201~", "x[31my"},
		{"alt-enter is a newline", "first\x1b\rsecond\r", "first" + nl + "second\r"},
		{"a lone escape passes", "\x1bq", "\x1bq"},
		{"utf-8 passes", "\x1b[200~héllo 😀\x1b[201~", "héllo 😀"},
	} {
		// Every way of cutting the input into two reads gives the same.
		for cut := 0; cut <= len(tc.in); cut++ {
			f := newPasteFilter(io.MultiReader(strings.NewReader(tc.in[:cut]), strings.NewReader(tc.in[cut:])))
			got, err := io.ReadAll(f)
			if err != nil || string(got) != tc.want {
				t.Errorf("%s, cut at %d: %q, %v; want %q", tc.name, cut, got, err, tc.want)
				break
			}
		}
	}
	if got := fromEditor("a" + nl + "b" + tab + "c"); got != "a\nb\tc" {
		t.Errorf("fromEditor = %q", got)
	}
	if got := toEditor("a\nb\tc"); got != "a"+nl+"b"+tab+"c" {
		t.Errorf("toEditor = %q", got)
	}
	if got := string(paintMarks([]rune("a"+nl+"b"+tab), 0)); got != "a↵b⇥" {
		t.Errorf("paintMarks = %q", got)
	}
}

func TestLineReader(t *testing.T) {
	t.Parallel()
	in := "short\r\n" + strings.Repeat("x", 11) + "\n" + strings.Repeat("y", 10) + "\nlast"
	r := newLineReader(strings.NewReader(in), 10, nil)
	var got []string
	for {
		line, err := r.readLine()
		var long *longLineError
		switch {
		case errors.As(err, &long):
			got = append(got, long.Error())
			continue
		case errors.Is(err, io.EOF):
		case err != nil:
			t.Fatal(err)
		default:
			got = append(got, line)
			continue
		}
		break
	}
	want := []string{"short", "line 2 is longer than 10 bytes; skipped", strings.Repeat("y", 10), "last"}
	if !slices.Equal(got, want) {
		t.Fatalf("lines %q, want %q", got, want)
	}
}

// A console line over 16 MiB is refused with an error naming it, and the
// console goes on with the next line (it used to end silently).
func TestConsoleLineTooLong(t *testing.T) {
	t.Parallel()
	s := start(t, "- id: echo\n  name: echo\n", false)
	go func() {
		io.WriteString(s.stdin, strings.Repeat("a", maxLine+1)+"\n/tools\n/quit\n")
	}()
	s.errOut.waitFor(t, "line 1 is longer than 16 MiB; skipped")
	s.out.waitFor(t, "echo  Echo a message back")
	if code := s.exit(); code != 0 {
		t.Fatalf("exit %d", code)
	}
}

// Text from outside that the console prints outside a tool result is
// escaped: nothing typed or returned can drive the terminal.
func TestConsoleEscapesWhatItEchoes(t *testing.T) {
	t.Parallel()
	// A bidi override is a valid entry id.
	s := start(t, "- id: \"e\\u202ecko\"\n  name: echo\n", false)
	for _, line := range []string{
		"/status",
		"/restart e\u202ecko",
		"/restart \x1b[2Jecho",
		"/frob\x1b]0;title\x07",
		"/call \x1b[31mred {}",
		"/call echo {\"x\":\x1b[1m}",
		"plain \x1b[5mblink",
	} {
		s.send(line)
	}
	s.send("/quit")
	if code := s.exit(); code != 0 {
		t.Fatalf("exit %d", code)
	}
	for _, w := range []*lines{s.out, s.errOut} {
		if strings.ContainsAny(w.String(), "\x1b\u202e") {
			t.Errorf("a raw escape reached the output:\n%q", w)
		}
	}
	for _, want := range []string{`e\u202ecko  echo  ready`, `restarting e\u202ecko`} {
		if !strings.Contains(s.out.String(), want) {
			t.Errorf("stdout lacks %q:\n%s", want, s.out)
		}
	}
	for _, want := range []string{`restart "\x1b[2Jecho": unknown entry`, `unknown command "/frob\x1b]0;title\a"`, `unknown tool "\x1b[31mred"`, "not valid JSON", "no agent entry in "} {
		if !strings.Contains(s.errOut.String(), want) {
			t.Errorf("stderr lacks %q:\n%s", want, s.errOut)
		}
	}
}

func TestHistoryPath(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		env  map[string]string
		want string
	}{
		{"XDG_STATE_HOME", map[string]string{"XDG_STATE_HOME": "/state", "HOME": "/home/u"}, "/state/harness/history"},
		{"a relative XDG_STATE_HOME is ignored", map[string]string{"XDG_STATE_HOME": "state", "HOME": "/home/u"}, "/home/u/.local/state/harness/history"},
		{"HOME", map[string]string{"HOME": "/home/u"}, "/home/u/.local/state/harness/history"},
		{"nowhere", map[string]string{}, ""},
	} {
		lookup := func(k string) (string, bool) { v, ok := tc.env[k]; return v, ok }
		if got := historyPath(lookup); got != filepath.FromSlash(tc.want) {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
	}
}

func TestHistory(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "state", "harness", "history")
	secrets := secret.New()
	secrets.Add("sk-live-0123456789")
	log := testLogger(t)

	h := openHistory(path, secrets, log)
	for _, tc := range []struct {
		line string
		kept bool
	}{
		{"/tools", true},
		{"", false},
		{"   ", false},
		{" /call secret-ish", false}, // a leading space keeps a line out
		{`/call echo {"message":"sk-live-0123456789"}`, false},
		{"a pasted\nmessage with a \\ and\ta tab", true},
		{strings.Repeat("z", historyEntryMax+1), false},
		{"/tools", true},
		{"/tools", true}, // kept, not written twice in a row
		{"/status", true},
	} {
		if got := h.add(tc.line); got != tc.kept {
			t.Errorf("add(%.30q) = %v, want %v", tc.line, got, tc.kept)
		}
	}
	if !slices.Equal(h.entries, []string{"/tools", "a pasted\nmessage with a \\ and\ta tab", "/tools", "/status"}) {
		t.Fatalf("entries %q", h.entries)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if got := string(b); got != "/tools\na pasted\\nmessage with a \\\\ and\ta tab\n/tools\n/status\n" {
		t.Fatalf("file %q", got)
	}
	fi, _ := os.Stat(path)
	if runtime.GOOS != "windows" && fi.Mode().Perm() != 0o600 {
		t.Errorf("mode %v, want 0600", fi.Mode().Perm())
	}

	// A second console reads it back; a line holding a secret learnt
	// since is dropped from the file.
	later := secret.New()
	later.Add("/status-token-abcdef") // not in the file
	later.Add("message with")         // in the pasted entry
	h2 := openHistory(path, later, log)
	if !slices.Equal(h2.entries, []string{"/tools", "/tools", "/status"}) {
		t.Fatalf("reopened entries %q", h2.entries)
	}
	if b, _ := os.ReadFile(path); string(b) != "/tools\n/tools\n/status\n" {
		t.Fatalf("the file still holds the secret: %q", b)
	}
}

// The file stays bounded: compacted to the newest historyLimit entries.
func TestHistoryBounded(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "history")
	h := openHistory(path, secret.New(), testLogger(t))
	for i := range 2*historyLimit + 5 {
		h.add("/call echo " + strings.Repeat("x", i%7) + string(rune('a'+i%26)) + strconv.Itoa(i))
	}
	if len(h.entries) != historyLimit {
		t.Fatalf("%d entries in memory", len(h.entries))
	}
	b, _ := os.ReadFile(path)
	if n := strings.Count(string(b), "\n"); n > 2*historyLimit || n < historyLimit {
		t.Fatalf("%d lines in the file", n)
	}
	h2 := openHistory(path, secret.New(), testLogger(t))
	if len(h2.entries) != historyLimit || h2.entries[historyLimit-1] != h.entries[historyLimit-1] {
		t.Fatalf("reopened: %d entries, last %q", len(h2.entries), h2.entries[len(h2.entries)-1])
	}
}

// A history that cannot be written is said once and kept in memory.
func TestHistoryUnwritable(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	blocker := filepath.Join(dir, "file")
	os.WriteFile(blocker, nil, 0o600)
	var logged bytes.Buffer
	h := openHistory(filepath.Join(blocker, "harness", "history"), secret.New(), newLogger(&logged, &options{}, secret.New(), nil))
	if !h.add("/tools") || !h.add("/status") {
		t.Fatal("not kept in memory")
	}
	if n := strings.Count(logged.String(), "the history lasts until the console ends"); n != 1 {
		t.Fatalf("said %d times:\n%s", n, logged.String())
	}
}

func TestHistoryEncoding(t *testing.T) {
	t.Parallel()
	for _, s := range []string{"plain", "a\nb", `back\slash`, `\n literal`, "cr\r\n", `trailing\`, "\\\\n"} {
		enc := encodeHistory(s)
		if strings.ContainsAny(enc, "\n\r") {
			t.Errorf("%q encodes to %q, not one line", s, enc)
		}
		if got := decodeHistory(enc); got != s {
			t.Errorf("%q -> %q -> %q", s, enc, got)
		}
	}
}

func testLogger(t *testing.T) *slog.Logger {
	t.Helper()
	return slog.New(slog.NewTextHandler(io.Discard, nil))
}

// With --log-format json, stderr is JSON records only: the console's own
// replies (a command's error, a note) included.
func TestConsoleRepliesAsJSONRecords(t *testing.T) {
	t.Parallel()
	s := start(t, "- id: echo\n  name: echo\n", false, "--log-format", "json", "--log-level", "info")
	for _, line := range []string{"/restart nope", "/frob", "/call echo [1]", "/call nope {}", "hello", "/status now", "/tools all", "/quit"} {
		s.send(line)
	}
	if code := s.exit(); code != 0 {
		t.Fatalf("exit %d", code)
	}
	var msgs []string
	for _, l := range strings.Split(strings.TrimSpace(s.errOut.String()), "\n") {
		var rec struct{ Level, Msg string }
		if err := json.Unmarshal([]byte(l), &rec); err != nil || rec.Level == "" {
			t.Fatalf("a stderr line is not a JSON record: %q\n%s", l, s.errOut)
		}
		msgs = append(msgs, rec.Msg)
	}
	all := strings.Join(msgs, "\n")
	for _, want := range []string{`restart "nope": unknown entry`, `unknown command "/frob"`, "the arguments are not a JSON object; sending {}", `unknown tool "nope"`, "no agent entry in ",
		"usage: /status takes no arguments", "usage: /tools [--json]"} {
		if !strings.Contains(all, want) {
			t.Errorf("no record says %q:\n%s", want, all)
		}
	}
}

// In a pipe the console prints what the start did before the replies of
// the first command: the line of an entry that failed comes first, though
// both are on stderr and the failure's event reaches the printer on its own
// goroutine (a script reading stderr sees them in the order they happened).
// The reply says why there is no such tool, as harness call does.
func TestConsoleStartLinesComeBeforeTheFirstReply(t *testing.T) {
	t.Parallel()
	s := start(t, "- id: gone\n  name: mcp-client\n  config: {transport: stdio, serverName: gone, command: ./no-such-server}\n", false)
	s.send("/call mcp__gone__x {}")
	s.send("/quit")
	if code := s.exit(); code != 0 {
		t.Fatalf("exit %d", code)
	}
	out := s.errOut.String()
	failed, reply := strings.Index(out, "gone failed"), strings.Index(out, `unknown tool "mcp__gone__x"`)
	if failed < 0 || reply < 0 || failed > reply {
		t.Fatalf("stderr, want the failure before the reply:\n%s", out)
	}
	if !strings.Contains(out, `unknown tool "mcp__gone__x" (entry "gone", serverName "gone", failed: `) {
		t.Fatalf("the reply does not say the entry failed:\n%s", out)
	}
}
