package browser

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"

	"github.com/harness-go/harness/internal/testkit/proctest"
)

// waitTimeout bounds one wait for the page or the harness: far above what
// a test needs on a busy machine.
const waitTimeout = 45 * time.Second

// web is one `harness web` of a test, in a folder of its own.
type web struct {
	t    *testing.T
	dir  string
	url  string // as printed: with #token=
	base string // http://127.0.0.1:PORT
	out  *proctest.Lines
	err  *proctest.Lines
	cmd  *exec.Cmd
	exit *proctest.Exit
}

// startWeb writes config to cordis.yml and starts harness web on a free
// loopback port; it stops at cleanup.
func startWeb(t *testing.T, config string, env ...string) *web {
	t.Helper()
	if skip != "" {
		t.Skip(skip)
	}
	dir := t.TempDir()
	w := &web{t: t, dir: dir}
	w.write(config)
	cmd := exec.Command(harnessBin, "web", "--http", "127.0.0.1:0", "--log-level", "info", "-c", "cordis.yml")
	cmd.Dir = dir
	cmd.Env = append(environ(), env...)
	w.cmd = cmd
	w.out, w.err = proctest.Start(t, cmd, 0)
	t.Cleanup(func() {
		proctest.NoRaceOrPanic(t, w.err.Text())
		if t.Failed() {
			t.Logf("harness web's stderr:\n%s", w.err.Text())
		}
	})
	w.exit = proctest.Await(t, cmd)
	t.Cleanup(func() { // before Await's kill: a clean stop, checked
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-w.exit.Done():
			if c := w.exit.Code(); c != 0 {
				t.Errorf("harness web exited %d after SIGTERM", c)
			}
		case <-time.After(waitTimeout):
			t.Errorf("harness web did not stop within %s of SIGTERM", waitTimeout)
		}
	})
	i, ok := w.out.Find(0, waitTimeout, func(l string) bool { return strings.HasPrefix(l, "http://") })
	if !ok {
		t.Fatalf("harness web printed no URL:\n%s\n%s", w.out.Text(), w.err.Text())
	}
	w.url = w.out.Slice(i, i+1)[0]
	u, err := url.Parse(w.url)
	if err != nil || !strings.HasPrefix(u.Fragment, "token=") || u.RawQuery != "" {
		t.Fatalf("the URL %q: want the token in its fragment only", w.url)
	}
	w.base = "http://" + u.Host
	return w
}

// environ is the test's environment without what would reach a real model.
func environ() []string {
	var out []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		switch k {
		case "DEEPSEEK_API_KEY", "DEEPSEEK_BASE_URL", "HARNESS_WEB_TOKEN", "GORACE":
			continue
		}
		out = append(out, kv)
	}
	if raceEnabled {
		out = append(out, "GORACE=atexit_sleep_ms=0")
	}
	return out
}

// write replaces cordis.yml as editors do: a temporary file renamed.
func (w *web) write(config string) {
	w.t.Helper()
	tmp := filepath.Join(w.dir, ".cordis.yml.tmp")
	if err := os.WriteFile(tmp, []byte(config), 0o644); err != nil {
		w.t.Fatal(err)
	}
	if err := os.Rename(tmp, filepath.Join(w.dir, "cordis.yml")); err != nil {
		w.t.Fatal(err)
	}
}

// waitErr waits for a line of the harness's stderr holding every part.
func (w *web) waitErr(parts ...string) {
	w.t.Helper()
	if _, ok := w.err.Find(0, waitTimeout, func(l string) bool {
		for _, p := range parts {
			if !strings.Contains(l, p) {
				return false
			}
		}
		return true
	}); !ok {
		w.t.Fatalf("no line with %q on the harness's stderr:\n%s", parts, w.err.Text())
	}
}

// tab is a page of the test's browser, in a browser context of its own
// (its own cookies). Uncaught exceptions and CSP violations fail the test.
type tab struct {
	t   *testing.T
	ctx context.Context

	mu       sync.Mutex
	problems []string
}

func newTab(t *testing.T, width, height int64) *tab {
	t.Helper()
	if skip != "" {
		t.Skip(skip)
	}
	ctx, cancel := chromedp.NewContext(browser, chromedp.WithNewBrowserContext())
	tb := &tab{t: t, ctx: ctx}
	if err := chromedp.Do(ctx, chromedp.EmulateViewport(width, height)); err != nil {
		cancel()
		t.Fatalf("opening a tab: %v", err)
	}
	watch, stopWatch := context.WithCancel(ctx)
	go func() {
		for m, err := range chromedp.Console(watch) {
			if err != nil {
				return
			}
			if m.Type == chromedp.ConsoleException || strings.Contains(m.Text, "Content Security Policy") {
				tb.mu.Lock()
				tb.problems = append(tb.problems, fmt.Sprintf("%s: %s (%s:%d)", m.Type, m.Text, m.URL, m.Line+1))
				tb.mu.Unlock()
			}
		}
	}()
	t.Cleanup(func() {
		stopWatch()
		cancel()
		tb.mu.Lock()
		defer tb.mu.Unlock()
		for _, p := range tb.problems {
			t.Errorf("the page: %s", p)
		}
	})
	return tb
}

func (tb *tab) do(what string, actions ...chromedp.Action[chromedp.Void]) {
	tb.t.Helper()
	ctx, cancel := context.WithTimeout(tb.ctx, waitTimeout)
	defer cancel()
	if err := chromedp.Do(ctx, actions...); err != nil {
		tb.t.Fatalf("%s: %v", what, err)
	}
}

func (tb *tab) open(u string) {
	tb.t.Helper()
	tb.do("opening "+u, chromedp.Navigate(u))
}

// eval runs a JavaScript expression and returns its value.
func eval[T any](tb *tab, expr string) T {
	tb.t.Helper()
	ctx, cancel := context.WithTimeout(tb.ctx, waitTimeout)
	defer cancel()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](expr, chromedp.EvalAwaitPromise))
	if err != nil {
		tb.t.Fatalf("evaluating %s: %v", expr, err)
	}
	return v
}

// until waits until a JavaScript expression is true.
func (tb *tab) until(what, expr string) {
	tb.t.Helper()
	ctx, cancel := context.WithTimeout(tb.ctx, waitTimeout)
	defer cancel()
	if _, err := chromedp.Run(ctx, chromedp.Poll[bool](expr, chromedp.WithPollingTimeout(waitTimeout))); err != nil {
		text, _ := chromedp.Run(tb.ctx, chromedp.Evaluate[string](`document.body.innerText.slice(0, 3000)`))
		tb.t.Fatalf("waiting for %s (%s): %v\nthe page says:\n%s", what, expr, err, text)
	}
}

// text is the text of the first element matching a CSS selector ("" when
// none).
func (tb *tab) text(sel string) string {
	tb.t.Helper()
	return eval[string](tb, fmt.Sprintf(`(document.querySelector(%q) || {}).textContent || ''`, sel))
}

func (tb *tab) click(sel string) {
	tb.t.Helper()
	tb.do("clicking "+sel, chromedp.Click(chromedp.CSS(sel)))
}

func (tb *tab) typeIn(sel, text string) {
	tb.t.Helper()
	tb.do("typing into "+sel, chromedp.SendKeys(chromedp.CSS(sel), text))
}

// view shows one of the page's views, as a click on its tab does.
func (tb *tab) view(name string) {
	tb.t.Helper()
	tb.click("#tab-" + name)
	tb.until("the "+name+" view", fmt.Sprintf(`!document.getElementById('view-%s').hidden`, name))
}

// shoot saves a screenshot to docs/web/NAME.png, when
// HARNESS_WEB_SCREENSHOTS=1 (the README's pictures; CI leaves the tree as
// it is).
func (tb *tab) shoot(name string) {
	tb.t.Helper()
	if os.Getenv("HARNESS_WEB_SCREENSHOTS") != "1" {
		return
	}
	ctx, cancel := context.WithTimeout(tb.ctx, waitTimeout)
	defer cancel()
	b, err := chromedp.Run(ctx, chromedp.CaptureScreenshot())
	if err != nil {
		tb.t.Fatalf("screenshot %s: %v", name, err)
	}
	if err := os.WriteFile(filepath.Join(repoRoot, "docs", "web", name+".png"), b, 0o644); err != nil {
		tb.t.Fatal(err)
	}
}

func chromedpFocus(sel string) chromedp.Action[chromedp.Void] {
	return chromedp.Focus(chromedp.CSS(sel))
}

// chromedpKey presses one key (kb's names: "ArrowRight").
func chromedpKey(name string) chromedp.Action[chromedp.Void] {
	return chromedp.KeyEvent(map[string]string{"ArrowRight": kb.ArrowRight, "ArrowLeft": kb.ArrowLeft, "Enter": kb.Enter}[name])
}

func timeout() <-chan time.Time { return time.After(waitTimeout) }

// setValue sets an input's value as typing would (an input event).
func (tb *tab) setValue(sel, v string) {
	tb.t.Helper()
	eval[bool](tb, fmt.Sprintf(`(() => { const e = document.querySelector(%q); e.value = %q; e.dispatchEvent(new Event('input', {bubbles: true})); return true })()`, sel, v))
}
