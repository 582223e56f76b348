//go:build unix

package faults

// Row 6: cordis.yml edited 100 times at random — good edits, malformed
// ones, half-written ones, the file deleted and restored — while tools are
// being called. No call to an unchanged entry fails, an unchanged entry is
// never restarted (even when only its formatting or position changed), a
// refused edit changes nothing, and disposed servers are gone.
//
// Elsewhere: TestConsoleBrokenEditChangesNothing (tests/e2e), and
// TestBadFilesChangeNothing, TestReloadTouchesOnlyWhatChanged,
// TestDigestIgnoresFormatting and TestWatcherDebouncesBurstsAndSkipsIdenticalContent
// (host).

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/harness-go/harness/host"
	"github.com/harness-go/harness/internal/testkit/proctest"
)

// editCount is how many edits the tests make.
const editCount = 100

// seed returns the random seed of a test: FAULTS_SEED if set, else a fresh
// one. It is logged, so a failure can be replayed.
func seed(t *testing.T) uint64 {
	t.Helper()
	s := uint64(time.Now().UnixNano())
	if v := os.Getenv("FAULTS_SEED"); v != "" {
		var err error
		if s, err = strconv.ParseUint(v, 10, 64); err != nil {
			t.Fatalf("FAULTS_SEED=%q: %v", v, err)
		}
	}
	t.Logf("seed %d (FAULTS_SEED=%d replays it)", s, s)
	return s
}

// churner is an entry the edits change.
type churner struct {
	id       string
	present  bool
	disabled bool
	mcp      bool   // a fixture server; else the echo plugin
	server   string // its serverName
	variant  int
}

// expectation of an edit.
const (
	wantApplied = "applied"
	wantRefused = "refused"
	wantEither  = "either" // a half-written file may happen to be valid
)

// editor makes random cordis.yml contents around one entry, "stable", that
// never changes but for its formatting and place in the file.
type editor struct {
	rng       *rand.Rand
	stablePID string // the stable server's --pidfile
	churn     []churner
	n         int
	// halfWritten enables truncated files, whose outcome the test cannot
	// know in advance.
	halfWritten bool
}

func newEditor(s uint64, dir string) *editor {
	e := &editor{rng: rand.New(rand.NewPCG(s, s^0x9e3779b97f4a7c15)), stablePID: filepath.Join(dir, "pids-stable")}
	for i := range 4 {
		e.churn = append(e.churn, churner{id: fmt.Sprintf("c%d", i)})
	}
	return e
}

// stable renders the stable entry in one of several formattings that all
// mean the same configuration.
func (e *editor) stable() string {
	switch e.rng.IntN(4) {
	case 0:
		return cordis(stdioEnt("stable", "stable", "--only", "echo", "--pidfile", e.stablePID))
	case 1:
		return fmt.Sprintf("- id: stable\n  name: mcp-client\n  config:\n    serverName: stable\n    transport: stdio\n    command: %s\n    args: [--only, echo, --pidfile, %s]\n",
			fixtureBin, e.stablePID)
	case 2:
		return fmt.Sprintf("# the entry that must never restart\n- name: \"mcp-client\"   # kind\n  id: 'stable'\n  config:\n    args:\n      - \"--only\"\n      - echo\n      - --pidfile\n      - '%s'\n    command: \"%s\"\n    transport: 'stdio'\n    serverName: stable\n",
			e.stablePID, fixtureBin)
	default:
		return fmt.Sprintf("-   {config: {transport: stdio, serverName: stable, command: '%s', args: ['--only', 'echo', '--pidfile', '%s']},\n     name: mcp-client, id: stable}\n",
			fixtureBin, e.stablePID)
	}
}

func (c churner) ent(dir string) ent {
	if !c.mcp {
		return ent{ID: c.id, Name: "echo", Disabled: c.disabled, Config: map[string]any{"prefix": fmt.Sprintf("%s_v%d_", c.id, c.variant)}}
	}
	only := []string{"echo", "echo,add", "echo,pid"}[c.variant%3]
	x := stdioEnt(c.id, c.server, "--only", only, "--name", "churn "+dir)
	x.Disabled = c.disabled
	return x
}

// mutate changes one or two churners, keeping serverNames unique among
// the enabled ones.
func (e *editor) mutate() []churner {
	next := slices.Clone(e.churn)
	for range 1 + e.rng.IntN(2) {
		c := &next[e.rng.IntN(len(next))]
		switch e.rng.IntN(5) {
		case 0:
			c.present = !c.present
		case 1:
			c.disabled = !c.disabled
		case 2:
			c.mcp = !c.mcp
		case 3:
			c.variant++
		default:
			c.server = ""
		}
		c.present = c.present || e.rng.IntN(3) == 0
	}
	// Assign serverNames: keep those that are free, pick free ones for the
	// others. A name may move from one entry to another in one edit.
	pool := []string{"a", "b", "c", "d", "e", "f"}
	used := map[string]bool{}
	for i := range next {
		c := &next[i]
		if !c.mcp || !c.present || c.disabled {
			continue
		}
		if c.server == "" || used[c.server] || e.rng.IntN(4) == 0 {
			free := slices.DeleteFunc(slices.Clone(pool), func(s string) bool { return used[s] })
			c.server = free[e.rng.IntN(len(free))]
		}
		used[c.server] = true
	}
	for i := range next {
		if next[i].server == "" {
			next[i].server = pool[e.rng.IntN(len(pool))] // disabled or absent: may repeat
		}
	}
	return next
}

// render writes the stable entry at a random place among the churners.
func (e *editor) render(dir string, churn []churner, stableFirst bool) (string, int) {
	var parts []string
	for _, c := range churn {
		if c.present {
			parts = append(parts, cordis(c.ent(dir)))
		}
	}
	at := 0
	if !stableFirst {
		at = e.rng.IntN(len(parts) + 1)
	}
	parts = slices.Insert(parts, at, e.stable())
	stableEnd := 0
	for _, p := range parts[:at+1] {
		stableEnd += len(p)
	}
	return strings.Join(parts, ""), stableEnd
}

// next returns the next content to write, what must happen to it, and a
// description for failure messages.
func (e *editor) next(dir string) (content, want, what string) {
	e.n++
	tag := fmt.Sprintf("# edit %d\n", e.n)
	candidate := e.mutate()
	good, stableEnd := e.render(dir, candidate, false)
	malformed := []struct {
		what    string
		content string
	}{
		{"a YAML syntax error", good + "- id: [\n"},
		{"an unknown config key", good + "- {id: x1, name: echo, config: {bogus: 1}}\n"},
		{"a duplicate id", good + "- {id: stable, name: echo}\n"},
		{"!!js that is not the subset", good + "- id: x3\n  name: echo\n  config:\n    prefix: !!js require('child_process').execSync('touch pwned')\n"},
		{"everything deleted", ""},
		{"not a list", "id: stable\nname: mcp-client\n"},
		{"an unknown plugin", good + "- {id: x4, name: no-such-plugin}\n"},
		{"an invalid serverName", good + cordis(stdioEnt("x5", "a__b", "--only", "echo"))},
		{"a missing command", good + "- {id: x6, name: mcp-client, config: {serverName: x6, transport: stdio}}\n"},
		{"the legacy SSE transport", good + "- {id: x7, name: mcp-client, config: {serverName: x7, transport: sse, url: 'http://127.0.0.1:1/sse'}}\n"},
		{"an alias bomb", good + aliasBomb(5)},
	}
	r := e.rng.IntN(100)
	switch {
	case r < 55:
		e.churn = candidate
		return good + tag, wantApplied, "a good edit"
	case r < 60:
		// A running host leaves a taken serverName to the plugin: the file
		// applies, the newcomer fails, the owner is untouched.
		e.churn = candidate
		return good + cordis(stdioEnt("x2", "stable", "--only", "echo")) + tag, wantApplied, "a second entry with the stable serverName"
	case r < 68 && e.halfWritten:
		// Half a file, as an editor that writes in place leaves it for a
		// moment: cut somewhere after the stable entry.
		cut := stableEnd + e.rng.IntN(len(good)-stableEnd+1)
		return good[:cut] + "\n" + tag, wantEither, fmt.Sprintf("a file cut at byte %d of %d", cut, len(good))
	default:
		m := malformed[e.rng.IntN(len(malformed))]
		return m.content + tag, wantRefused, m.what
	}
}

// aliasBomb is a "billion laughs" document: levels of nine aliases each,
// 9^levels values once expanded, from a few hundred bytes.
func aliasBomb(levels int) string {
	var b strings.Builder
	b.WriteString("- id: bomb\n  name: mcp-client\n  config:\n    serverName: bomb\n    transport: stdio\n    command: x\n    env:\n")
	b.WriteString("      L0: &l0 lol\n")
	for i := 1; i <= levels; i++ {
		refs := strings.TrimSuffix(strings.Repeat(fmt.Sprintf("*l%d, ", i-1), 9), ", ")
		fmt.Fprintf(&b, "      L%d: &l%d [%s]\n", i, i, refs)
	}
	fmt.Fprintf(&b, "    args: *l%d\n", levels)
	return b.String()
}

// Through the binary: the console keeps calling the stable entry's tool
// while the file is edited 100 times under it.
func TestRandomEditsUnderLoad(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	ed := newEditor(seed(t), dir)
	ed.halfWritten = true
	killLeftovers(t, ed.stablePID)
	t.Cleanup(func() { // churn servers a failure left behind
		for _, pid := range proctest.Mentioning(t, "churn "+dir) {
			_ = syscallKill(pid)
		}
	})
	writeConfig(t, dir, ed.stable())
	s := start(t, harnessBin, dir, nil)
	if got := s.do("/tools"); len(got) != 1 {
		t.Fatalf("/tools = %q\n%s", got, s.dump())
	}
	stablePID := readPIDs(t, ed.stablePID)[0]

	// The load: calls, one after the other, until the edits are done.
	var calls atomic.Int64
	stop := make(chan struct{})
	callerDone := make(chan struct{})
	var callErrs []string
	go func() {
		defer close(callerDone)
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			msg := "load " + strconv.Itoa(i)
			got, err := s.tryDo(`/call mcp__stable__echo {"message":"` + msg + `"}`)
			if err != nil {
				callErrs = append(callErrs, err.Error())
				return
			}
			if len(got) != 1 || got[0] != "echo: "+msg {
				callErrs = append(callErrs, fmt.Sprintf("call %d printed %q", i, got))
			}
			calls.Add(1)
		}
	}()

	refusal := func(l string) bool { return strings.HasPrefix(l, "harness: reload refused") }
	reload := func(l string) bool { return strings.HasPrefix(l, "harness: reloaded") || refusal(l) }
	var applied, refused int
	lastRefusal := -1 // the stderr line after the last refusal, if the last edit was refused
	for i := 1; i <= editCount; i++ {
		content, want, what := ed.next(dir)
		from := s.err.Len()
		if lastRefusal >= 0 {
			// Nothing changed since the last refusal: no entry stopped or
			// started.
			for _, l := range s.err.From(lastRefusal) {
				if strings.HasSuffix(l, " stopped") || strings.HasSuffix(l, " starting") {
					t.Errorf("after a refused edit, %q", l)
				}
			}
			lastRefusal = -1
		}
		if i == editCount/2 {
			// The file deleted, then restored.
			if err := os.Remove(filepath.Join(dir, "cordis.yml")); err != nil {
				t.Fatal(err)
			}
			j := s.waitErr(from, "refusing a deleted cordis.yml", refusal)
			if l := s.err.From(j)[0]; !strings.Contains(l, "no such file") {
				t.Errorf("deleting cordis.yml: %q", l)
			}
			from = s.err.Len()
		}
		writeConfig(t, dir, content)
		j := s.waitErr(from, fmt.Sprintf("after edit %d (%s)", i, what), reload)
		line := s.err.From(j)[0]
		got := wantApplied
		if refusal(line) {
			got = wantRefused
			refused++
			lastRefusal = j + 1
		} else {
			applied++
		}
		if want != wantEither && got != want {
			t.Errorf("edit %d (%s) was %s, want %s: %q\n--- content ---\n%s", i, what, got, want, line, clip(content, 2000))
		}
		if got == wantApplied && strings.Contains(line, "stable") {
			t.Errorf("edit %d (%s) touched the unchanged entry: %q", i, what, line)
		}
	}
	close(stop)
	<-callerDone
	for _, e := range callErrs {
		t.Error("a call to the unchanged entry failed: " + e)
	}
	t.Logf("%d edits applied, %d refused, %d calls during the edits", applied, refused, calls.Load())
	if calls.Load() < 10 {
		t.Errorf("only %d calls ran during the edits", calls.Load())
	}

	// Finally a known file: the stable entry and one new server.
	from := s.err.Len()
	writeConfig(t, dir, ed.stable()+cordis(stdioEnt("final", "final", "--only", "echo", "--name", "churn "+dir)))
	s.waitErr(from, `"final ready"`, prefix("harness: final ready"))
	if got := s.do("/tools"); strings.Join(got, "\n") != "mcp__final__echo  Echo a message back.\nmcp__stable__echo  Echo a message back." {
		t.Errorf("/tools after the last edit:\n%s", strings.Join(got, "\n"))
	}
	if n := strings.Count(s.err.Text(), "harness: stable starting"); n != 1 {
		t.Errorf("the stable entry started %d times", n)
	}
	if pid := readPIDs(t, ed.stablePID)[0]; pid != stablePID || proctest.Dead(pid) {
		t.Errorf("the stable server was %d and is now %d (dead: %v)", stablePID, pid, proctest.Dead(pid))
	}
	// Every server the edits disposed is gone; only "final" runs.
	if pids := proctest.WaitMentioning(t, "churn "+dir, 1, closeBound); len(pids) != 1 {
		t.Errorf("want only the final churn server running, found %s", proctest.Describe(pids))
	}
	if strings.Contains(s.err.Text(), "unknown tool") {
		t.Errorf("a call found no tool:\n%s", s.dump())
	}
	s.send("/quit\n")
	if code := s.waitExit(); code != 0 {
		t.Errorf("/quit: exit code %d", code)
	}
	if pids := proctest.WaitMentioning(t, "churn "+dir, 0, time.Second); len(pids) != 0 {
		t.Errorf("after /quit: %s", proctest.Describe(pids))
	}
	if _, err := os.Stat(filepath.Join(dir, "pwned")); err == nil {
		t.Error("a !!js value ran a command")
	}
}

// In-process, with a real watcher: four goroutines call the stable entry's
// tool as fast as they can while the file changes; after every edit the
// host's state is checked against the model — a refused edit leaves every
// entry exactly as it was (same state, same time of last change).
func TestRandomEditsConcurrentCalls(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	ed := newEditor(seed(t), w.Dir)
	killLeftovers(t, ed.stablePID)
	t.Cleanup(func() {
		for _, pid := range proctest.Mentioning(t, "churn "+w.Dir) {
			_ = syscallKill(pid)
		}
	})
	w.mustLoad(ed.stable())
	w.Settle(30 * time.Second)
	stablePID := readPIDs(t, ed.stablePID)[0]
	stableSince := w.Entry("stable").Since

	sub := w.H.Subscribe()
	defer sub.Close()
	ctx, cancel := context.WithCancel(context.Background())
	watchDone := make(chan struct{})
	watcher := host.NewWatcher(w.H, w.File, host.WatcherOptions{})
	go func() { defer close(watchDone); _ = watcher.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-watchDone })
	// The watcher is running once a forced reload comes through.
	watcher.Reload()
	nextReload := func(what string) host.Event {
		t.Helper()
		timer := time.NewTimer(waitTimeout)
		defer timer.Stop()
		for {
			select {
			case ev := <-sub.C:
				if ev.Type == host.Reloaded || ev.Type == host.ReloadRejected {
					return ev
				}
			case <-timer.C:
				t.Fatalf("no reload event %s: %s", what, w.States())
			}
		}
	}
	nextReload("for the forced reload")

	var calls, failures atomic.Int64
	var firstFailure sync.Once
	var failure string
	stop := make(chan struct{})
	var callers sync.WaitGroup
	for g := range 4 {
		callers.Add(1)
		go func() {
			defer callers.Done()
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				msg := fmt.Sprintf("g%d-%d", g, i)
				res := w.Call("mcp__stable__echo", `{"message":"`+msg+`"}`)
				calls.Add(1)
				if res.IsError || res.Text != "echo: "+msg {
					failures.Add(1)
					firstFailure.Do(func() { failure = fmt.Sprintf("%+v", clipResult(res)) })
				}
			}
		}()
	}

	type state struct {
		state host.State
		since time.Time
	}
	snapshot := func() map[string]state {
		m := map[string]state{}
		for _, e := range w.H.Snapshot() {
			m[e.ID] = state{e.State, e.Since}
		}
		return m
	}
	for i := 1; i <= editCount; i++ {
		before := snapshot()
		content, want, what := ed.next(w.Dir)
		if i == editCount/2 {
			if err := os.Remove(w.File); err != nil {
				t.Fatal(err)
			}
			if ev := nextReload("for the deleted file"); ev.Type != host.ReloadRejected {
				t.Fatalf("deleting cordis.yml: %v", ev)
			}
		}
		writeConfig(t, w.Dir, content)
		ev := nextReload(fmt.Sprintf("after edit %d (%s)", i, what))
		switch {
		case want == wantApplied && ev.Type != host.Reloaded:
			t.Fatalf("edit %d (%s) was refused: %v\n%s", i, what, ev.Err, content)
		case want == wantRefused && ev.Type != host.ReloadRejected:
			t.Fatalf("edit %d (%s) was applied: %s\n%s", i, what, ev.Plan, content)
		case ev.Type == host.ReloadRejected:
			if after := snapshot(); !mapsEqual(before, after) {
				t.Fatalf("edit %d (%s) was refused but the entries changed:\nbefore %v\nafter  %v", i, what, before, after)
			}
			continue
		}
		if p := ev.Plan; slices.Contains(p.Start, "stable") || slices.Contains(p.Stop, "stable") {
			t.Fatalf("edit %d (%s) restarts the unchanged entry: %s", i, what, p)
		}
		if since := w.Entry("stable").Since; !since.Equal(stableSince) {
			t.Fatalf("edit %d (%s): the unchanged entry changed state at %s", i, what, since)
		}
		w.Settle(30 * time.Second)
		// The host runs exactly what the file says.
		wantStates := map[string]host.State{"stable": host.Ready}
		if strings.Contains(what, "stable serverName") {
			wantStates["x2"] = host.Failed
			if e := w.Entry("x2"); !strings.Contains(e.Error, `serverName "stable" is already in use`) {
				t.Errorf("the entry taking the stable serverName failed with %q", e.Error)
			}
		}
		for _, c := range ed.churn {
			if c.present {
				wantStates[c.id] = map[bool]host.State{true: host.Disabled, false: host.Ready}[c.disabled]
			}
		}
		got := map[string]host.State{}
		for id, s := range snapshot() {
			got[id] = s.state
		}
		if !mapsEqual(wantStates, got) {
			t.Fatalf("after edit %d (%s): entries %v, want %v (%s)", i, what, got, wantStates, w.States())
		}
	}
	close(stop)
	callers.Wait()
	t.Logf("%d calls during the edits", calls.Load())
	if n := failures.Load(); n > 0 {
		t.Errorf("%d of %d calls to the unchanged entry failed; the first: %s", n, calls.Load(), failure)
	}
	if pid := readPIDs(t, ed.stablePID)[0]; pid != stablePID {
		t.Errorf("the stable server was restarted: pid %d, then %d", stablePID, pid)
	}
	// Only the servers of enabled churners run.
	running := 0
	for _, c := range ed.churn {
		if c.present && !c.disabled && c.mcp {
			running++
		}
	}
	if pids := proctest.WaitMentioning(t, "churn "+w.Dir, running, closeBound); len(pids) != running {
		t.Errorf("%d churn servers should run, found: %s", running, proctest.Describe(pids))
	}
}

func mapsEqual[K comparable, V comparable](a, b map[K]V) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

// Row 12a: an edit storm — 100 edits of one entry's arguments, one in five
// invalid — while 16 callers call that entry's tool without pause: every
// call answers (make before break: the old instance serves until the new
// one takes over), every invalid edit is refused, and the last valid edit
// is the one that serves. (bench's leak soak checks that 1 000 such swaps
// leave no process, goroutine or descriptor behind.)
func TestEditStormMakesNoCallFail(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	pidFile := w.pidFile("storm")
	entry := func(i int) string {
		return cordis(fixtureEnt("storm", "storm", "--only", "echo,pid", "--pidfile", pidFile, "--name", fmt.Sprintf("v%d", i)))
	}
	w.mustLoad(entry(0))
	w.Settle(30 * time.Second)

	var calls, failed atomic.Int64
	var first atomic.Value
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				res := w.Call("mcp__storm__echo", `{"message":"x"}`)
				calls.Add(1)
				if res.IsError || res.Text != "echo: x" {
					failed.Add(1)
					first.CompareAndSwap(nil, res.Text)
				}
			}
		}()
	}
	refused := 0
	for i := 1; i <= 100; i++ {
		src := entry(i)
		if i%5 == 0 {
			src = strings.Replace(src, `"serverName"`, `"serverNam"`, 1) // an unknown key: refused
		}
		if err := w.Load(src); err != nil {
			refused++
			continue
		}
		if i%3 == 0 {
			w.Settle(30 * time.Second) // some edits land on a settled entry, others on one still swapping
		}
	}
	w.Settle(30 * time.Second)
	close(stop)
	wg.Wait()
	if refused != 20 {
		t.Errorf("%d edits refused, want 20", refused)
	}
	if n := failed.Load(); n > 0 {
		t.Fatalf("%d of %d calls failed during the storm; the first: %q", n, calls.Load(), first.Load())
	}
	if st := w.status("storm"); st.Server == nil || st.Server.Name != "v99" {
		t.Fatalf("the last valid edit does not serve: %+v", st.Server)
	}
	t.Logf("%d calls during 100 edits", calls.Load())
}
