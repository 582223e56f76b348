package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/harness-go/harness/host"
	_ "github.com/harness-go/harness/plugins/echo"
	"github.com/harness-go/harness/plugins/tools"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// blocker is a test plugin with a tool that blocks until its call is
// cancelled, to test Ctrl-C in the console.
type blocker struct{}

func (blocker) Apply(ctx *host.Context) error {
	reg, err := tools.From(ctx)
	if err != nil {
		return err
	}
	log := ctx.Logger()
	_, err = reg.Register(ctx.Fiber(), tools.Tool{Name: "block", Execute: func(c context.Context, _ json.RawMessage) (tools.Result, error) {
		log.Warn("block called") // tells the test the call is in flight
		<-c.Done()
		return tools.Result{}, c.Err()
	}}, tools.Tool{Name: "progress_block", Execute: func(c context.Context, _ json.RawMessage) (tools.Result, error) {
		tools.Notify(c, tools.Notification{Tool: "progress_block", Method: tools.MethodProgress, Params: json.RawMessage(`{"progressToken":1,"progress":1,"total":2,"message":"working"}`)})
		log.Warn("progress sent")
		<-c.Done()
		return tools.Result{}, c.Err()
	}})
	return err
}

// slow is a test plugin whose start finishes when the test closes the gate
// named in its config.
type slow struct {
	Gate string `yaml:"gate"`
}

// gates holds the channels slow plugins wait on, by name (test code only).
var gates sync.Map

func (p *slow) Apply(ctx *host.Context) error {
	done := ctx.Begin("connect")
	gate, _ := gates.LoadOrStore(p.Gate, make(chan struct{}))
	return ctx.Go("connect", func(c context.Context) {
		select {
		case <-gate.(chan struct{}):
			done(nil)
		case <-c.Done():
		}
	})
}

func init() {
	host.Register(host.Kind{Name: "cli-test-blocker", Inject: []string{tools.Service}, New: func() host.Plugin { return blocker{} }})
	host.Register(host.Kind{Name: "cli-test-slow", New: func() host.Plugin { return &slow{} }})
}

func TestParseFlagsAnywhere(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		args    []string
		command string
		rest    []string
		config  string
		wait    time.Duration
		json    bool
	}{
		{"default run", nil, "run", nil, "cordis.yml", 30 * time.Second, false},
		{"flags first", []string{"-c", "f.yml", "tools"}, "tools", nil, "f.yml", 30 * time.Second, false},
		{"flags last", []string{"call", "X", "{}", "-c", "f.yml", "--json"}, "call", []string{"X", "{}"}, "f.yml", 30 * time.Second, true},
		{"equals form", []string{"--config=g.yml", "--wait=0", "status"}, "status", nil, "g.yml", 0, false},
		{"stdin marker", []string{"call", "X", "-"}, "call", []string{"X", "-"}, "cordis.yml", 30 * time.Second, false},
		{"negative number", []string{"call", "X", "-1"}, "call", []string{"X", "-1"}, "cordis.yml", 30 * time.Second, false},
		{"double dash", []string{"call", "--", "--json"}, "call", []string{"--json"}, "cordis.yml", 30 * time.Second, false},
		{"wait", []string{"tools", "--wait", "2m"}, "tools", nil, "cordis.yml", 2 * time.Minute, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			o, err := parse(tc.args)
			if err != nil {
				t.Fatal(err)
			}
			if o.command != tc.command || strings.Join(o.args, " ") != strings.Join(tc.rest, " ") || o.config != tc.config || o.wait != tc.wait || o.json != tc.json {
				t.Fatalf("got %+v", o)
			}
		})
	}
}

func TestParseErrors(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"frobnicate"}, `unknown command "frobnicate"`},
		{[]string{"tools", "--frob"}, "unknown flag --frob"},
		{[]string{"tools", "-c"}, "flag -c needs a value"},
		{[]string{"--wait", "soon"}, "--wait takes a duration"},
		{[]string{"--wait", "-1s"}, "must not be negative"},
		{[]string{"--log-level", "loud"}, "--log-level must be"},
		{[]string{"--log-format", "xml"}, "--log-format must be"},
		{[]string{"--json=yes"}, "takes no value"},
		// One table says which command a flag is for; run is the default.
		{[]string{"--json"}, "flag --json is for ask, tools, call, resources, read, prompts, prompt, status and login, not run"},
		{[]string{"validate", "--json"}, "flag --json is for ask, tools, call, resources, read, prompts, prompt, status and login, not validate"},
		{[]string{"status", "--show-reasoning"}, "flag --show-reasoning is for run and ask, not status"},
		{[]string{"run", "--tools", "meta"}, "flag --tools is for serve, not run"},
		{[]string{"call", "x", "--allow-host", "a.example"}, "flag --allow-host is for serve and web, not call"},
	} {
		if _, err := parse(tc.args); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: err = %v, want %q", tc.args, err, tc.want)
		}
	}
}

// session runs the harness in-process with pipes.
type session struct {
	t      *testing.T
	dir    string
	stdin  *io.PipeWriter
	out    *lines
	errOut *lines
	sigs   chan os.Signal
	code   chan int
}

// lines is a writer that lets a test wait for a line.
type lines struct {
	mu   sync.Mutex
	buf  bytes.Buffer
	wake chan struct{}
}

func newLines() *lines { return &lines{wake: make(chan struct{})} }

func (l *lines) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.buf.Write(p)
	close(l.wake)
	l.wake = make(chan struct{})
	return len(p), nil
}

func (l *lines) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}

// waitFor waits until the output contains s.
func (l *lines) waitFor(t *testing.T, s string) {
	t.Helper()
	deadline := time.After(10 * time.Second)
	for {
		l.mu.Lock()
		ok, wake := strings.Contains(l.buf.String(), s), l.wake
		l.mu.Unlock()
		if ok {
			return
		}
		select {
		case <-wake:
		case <-deadline:
			t.Fatalf("no %q in output:\n%s", s, l.String())
		}
	}
}

func start(t *testing.T, config string, tty bool, args ...string) *session {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "cordis.yml"), []byte(config), 0o644); err != nil {
		t.Fatal(err)
	}
	r, w := io.Pipe()
	s := &session{t: t, dir: dir, stdin: w, out: newLines(), errOut: newLines(), sigs: make(chan os.Signal, 4), code: make(chan int, 1)}
	env := Env{Stdin: r, Stdout: s.out, Stderr: s.errOut, Signals: s.sigs, StdinTTY: tty, StderrTTY: tty}
	go func() {
		s.code <- Main(context.Background(), append([]string{"-c", filepath.Join(dir, "cordis.yml")}, args...), env)
		r.Close()
	}()
	return s
}

func (s *session) send(line string) {
	s.t.Helper()
	if _, err := io.WriteString(s.stdin, line+"\n"); err != nil {
		s.t.Fatal(err)
	}
}

// idle returns once the console has finished its command and waits for the
// next line: it reads a line only then, and the pipe's write returns when
// the line is read. The empty line it sends runs nothing.
func (s *session) idle() { s.send("") }

func (s *session) exit() int {
	s.t.Helper()
	select {
	case c := <-s.code:
		return c
	case <-time.After(20 * time.Second):
		s.t.Fatal("the harness did not exit")
		return -1
	}
}

const blockConfig = "- id: b\n  name: cli-test-blocker\n- id: echo\n  name: echo\n"

func TestConsoleCtrlCCancelsTheCallOnATerminal(t *testing.T) {
	t.Parallel()
	s := start(t, blockConfig, true)
	s.send("/tools")
	s.out.waitFor(t, "block\n")
	s.send("/call block")
	s.errOut.waitFor(t, "block called")
	s.sigs <- os.Interrupt
	s.errOut.waitFor(t, "call cancelled")
	s.out.waitFor(t, "Error: context canceled")
	// Still running: the next command works; Ctrl-C at idle quits.
	s.send(`/call echo {"message":"still here"}`)
	s.out.waitFor(t, "still here\n")
	s.idle()
	s.sigs <- os.Interrupt
	if code := s.exit(); code != 0 {
		t.Fatalf("exit %d", code)
	}
}

func TestConsoleSignalInAPipeQuits(t *testing.T) {
	t.Parallel()
	s := start(t, blockConfig, false)
	s.send("/call block")
	s.errOut.waitFor(t, "block called")
	s.sigs <- syscall.SIGTERM
	if code := s.exit(); code != 0 {
		t.Fatalf("exit %d", code)
	}
	if strings.Contains(s.errOut.String(), "> ") {
		t.Fatalf("a prompt was printed to a pipe:\n%s", s.errOut)
	}
}

func TestConsoleCommands(t *testing.T) {
	t.Parallel()
	s := start(t, "- id: echo\n  name: echo\n", false)
	s.send("/help")
	s.out.waitFor(t, "/restart ID")
	s.send("/status")
	s.out.waitFor(t, "echo  echo  ready")
	s.send("/restart echo")
	s.out.waitFor(t, "restarting echo")
	s.send("/restart nope")
	s.errOut.waitFor(t, `restart "nope": unknown entry`)
	if strings.Contains(s.errOut.String(), `restart: restart`) {
		t.Fatalf("/restart names itself twice:\n%s", s.errOut)
	}
	s.send("/call nope")
	s.errOut.waitFor(t, `unknown tool "nope"`)
	s.send("/call echo {not json")
	s.errOut.waitFor(t, "not valid JSON")
	s.send("/frob")
	s.errOut.waitFor(t, `unknown command "/frob"`)
	// An edit applied by SIGHUP even without a watcher event.
	if err := os.WriteFile(filepath.Join(s.dir, "cordis.yml"), []byte("- id: echo\n  name: echo\n  config: {prefix: x_}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	s.sigs <- syscall.SIGHUP
	s.errOut.waitFor(t, "reloaded: restarted echo")
	s.send("/tools")
	s.out.waitFor(t, "x_echo")
	s.send("/reload")
	s.errOut.waitFor(t, "reloaded: no entry changed")
	s.send("/quit")
	if code := s.exit(); code != 0 {
		t.Fatalf("exit %d", code)
	}
}

func TestLiveProgressOnATerminal(t *testing.T) {
	t.Parallel()
	s := start(t, "- id: echo\n  name: echo\n- id: bad\n  name: echo\n", true, "tools")
	if code := s.exit(); code != 1 {
		t.Fatalf("exit %d, want 1 for the failed entry", code)
	}
	if !strings.Contains(s.errOut.String(), `harness: entry "bad" failed: apply:`) {
		t.Fatalf("stderr:\n%q", s.errOut)
	}
}

func TestLiveLineWhileEntriesStart(t *testing.T) {
	t.Parallel()
	gate := make(chan struct{})
	gates.Store(t.Name(), gate)
	s := start(t, "- id: echo\n  name: echo\n- id: slowpoke\n  name: cli-test-slow\n  config: {gate: "+t.Name()+"}\n", true, "tools")
	// A terminal gets one line, redrawn in place, naming who is starting.
	s.errOut.waitFor(t, "\r\x1b[K1 ready; starting slowpoke")
	close(gate)
	if code := s.exit(); code != 0 {
		t.Fatalf("exit %d\n%q", code, s.errOut)
	}
	if got := s.errOut.String(); !strings.HasSuffix(got, "\r\x1b[K") {
		t.Fatalf("the live line was not cleared at the end: %q", got)
	}
}

func TestHelp(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		args []string
		want string
		code int
	}{
		{[]string{"--help"}, "Usage:\n  harness [run]", 0},
		{[]string{"help"}, "Usage:\n  harness [run]", 0},
		{[]string{"help", "call"}, "Usage: harness call NAME", 0},
		{[]string{"tools", "-h"}, "Usage: harness tools", 0},
		{[]string{"help", "frob"}, "", 2},
	} {
		var out, errOut bytes.Buffer
		code := Main(context.Background(), tc.args, Env{Stdin: strings.NewReader(""), Stdout: &out, Stderr: &errOut})
		if code != tc.code || !strings.Contains(out.String(), tc.want) {
			t.Errorf("%v: exit %d, stdout %q", tc.args, code, out.String())
		}
	}
}

// A call's arguments, for call and /call: empty is {} (an empty stdin too),
// JSON that is not an object is {} with a note, bad JSON is refused.
func TestParseArgs(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ in, args, note, err string }{
		{"", "{}", "", ""},
		{" \n\t", "{}", "", ""},
		{`{"a":1}`, `{"a":1}`, "", ""},
		{" {\"a\": [1]} \n", `{"a": [1]}`, "", ""},
		{"[1]", "{}", "the arguments are not a JSON object; sending {}", ""},
		{"null", "{}", "the arguments are not a JSON object; sending {}", ""},
		{"{", "", "", "the arguments are not valid JSON: unexpected end of JSON input"},
		{`{"a":1} x`, "", "", "the arguments are not valid JSON: invalid character 'x' after top-level value"},
	} {
		args, note, err := parseArgs([]byte(tc.in))
		if string(args) != tc.args || note != tc.note || (err == nil) != (tc.err == "") || err != nil && err.Error() != tc.err {
			t.Errorf("parseArgs(%q) = %s, %q, %v; want %s, %q, %q", tc.in, args, note, err, tc.args, tc.note, tc.err)
		}
	}
	var notes []string
	if args, err := readArgs([]string{"-"}, strings.NewReader(""), func(n string) { notes = append(notes, n) }); err != nil || string(args) != "{}" || len(notes) != 0 {
		t.Errorf("an empty stdin: %s, %v, %q", args, err, notes)
	}
}

// Every flag is told: in the general help (generated from its row), or —
// the flags of serve and web — in their own.
func TestEveryFlagIsInTheHelp(t *testing.T) {
	for _, f := range flagTable {
		long := "--" + f.long()
		cmds := flagCommands(f.long())
		switch {
		case f.help != "":
			if !strings.Contains(usage, long) {
				t.Errorf("%s has help but the usage lacks it", long)
			}
		case len(cmds) == 0:
			t.Errorf("%s is for every command but has no help", long)
		default:
			for _, c := range cmds {
				if row, _ := lookupCommand(c); !strings.Contains(row.help, long) {
					t.Errorf("%s has no general help and %s's help does not tell it", long, c)
				}
			}
		}
	}
	// A row names only flags that exist, and every command has its help
	// and its line.
	for _, c := range commandTable {
		for _, name := range c.flags {
			if f, ok := lookupFlag(name); !ok || f.long() != name {
				t.Errorf("%s lists the flag %q, which is not a long name of flagTable", c.name, name)
			}
		}
		if !strings.HasPrefix(c.help, "Usage: harness") || !strings.Contains(usage, "  harness "+c.synopsis+" ") {
			t.Errorf("%s: no help of its own, or no line in the usage", c.name)
		}
		if c.run == nil && c.name != "help" {
			t.Errorf("%s runs nothing", c.name)
		}
	}
}

// The arguments a command takes are checked from its row, before it runs.
func TestCommandArguments(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"tools", "x"}, "tools takes no arguments"},
		{[]string{"version", "now"}, "version takes no arguments"},
		{[]string{"call"}, "call takes a tool name"},
		{[]string{"call", "a", "{}", "x"}, "call takes a tool name"},
		{[]string{"read", "srv"}, "read takes a server and a resource uri"},
		{[]string{"ask"}, "ask takes one prompt"},
		{[]string{"import"}, "import takes the files to read"},
		{[]string{"prompt"}, "prompt takes a prompt name"},
	} {
		var out, errOut strings.Builder
		code := Main(context.Background(), tc.args, Env{Stdin: strings.NewReader(""), Stdout: &out, Stderr: &errOut})
		if code != ExitUsage || !strings.Contains(errOut.String(), "harness "+tc.args[0]+": "+tc.want) || out.Len() != 0 {
			t.Errorf("%q: exit %d, stderr %q", tc.args, code, errOut.String())
		}
	}
}
