package cli

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/harness-go/harness/internal/testkit/proctest"
)

func TestWebUsage(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		args []string
		want string
		code int
	}{
		{[]string{"web", "extra"}, "web takes no arguments", 2},
		{[]string{"web", "--tools", "meta"}, "flag --tools is for serve, not web", 2},
		{[]string{"web", "--json"}, "flag --json is for ask, tools, call, resources, read, prompts, prompt, status and login, not web", 2},
		{[]string{"web", "--http", "0.0.0.0:8760"}, "with a fresh token", 2},
		{[]string{"help", "web"}, "", 0},
	} {
		var out, errOut bytes.Buffer
		code := Main(context.Background(), tc.args, Env{Stdin: strings.NewReader(""), Stdout: &out, Stderr: &errOut})
		if code != tc.code || !strings.Contains(errOut.String(), tc.want) {
			t.Errorf("%v: exit %d, stderr %q; want %d and %q", tc.args, code, errOut.String(), tc.code, tc.want)
		}
		if tc.code == 0 && !strings.Contains(out.String(), "Usage: harness web") {
			t.Errorf("help web: %q", out.String())
		}
	}
}

// waitLine waits for a line of what a command writes that starts with
// prefix.
func waitLine(t *testing.T, l *proctest.Lines, prefix string) string {
	t.Helper()
	i, ok := l.Find(0, 20*time.Second, func(s string) bool { return strings.HasPrefix(s, prefix) })
	if !ok {
		t.Fatalf("no line starting with %q in %q", prefix, l.Text())
	}
	return l.Slice(i, i+1)[0]
}

// harness web prints one URL with the token in its fragment, serves the
// page, and stops with exit 0 on SIGTERM. A web entry of the file is
// ignored: the command serves the page itself.
func TestWebCommand(t *testing.T) {
	t.Parallel()
	file := filepath.Join(t.TempDir(), "cordis.yml")
	if err := os.WriteFile(file, []byte("- id: echo\n  name: echo\n- id: page\n  name: web\n  config: {listen: \"127.0.0.1:0\"}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	var errOut syncBuffer
	outR, outW := io.Pipe()
	out := proctest.ReadLines(outR, 0)
	signals := make(chan os.Signal, 1)
	done := make(chan int, 1)
	go func() {
		defer outW.Close()
		done <- Main(context.Background(), []string{"web", "-c", file, "--http", "127.0.0.1:0", "--log-level", "info"},
			Env{Stdin: strings.NewReader(""), Stdout: outW, Stderr: &errOut, Signals: signals})
	}()
	url := waitLine(t, out, "http://")
	base, token, ok := strings.Cut(url, "/#token=")
	if !ok || len(token) < 20 {
		t.Fatalf("the URL %q", url)
	}
	res, err := http.Get(base + "/")
	if err != nil {
		t.Fatal(err)
	}
	page, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode != 200 || !strings.Contains(string(page), "harness") {
		t.Fatalf("GET /: %d", res.StatusCode)
	}
	res, err = http.Post(base+"/api/session", "application/json", strings.NewReader(`{"token":"`+token+`"}`))
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != 200 {
		t.Fatalf("the printed token does not open a session: %d", res.StatusCode)
	}
	signals <- syscall.SIGTERM
	select {
	case code := <-done:
		if code != 0 {
			t.Fatalf("exit %d\n%s", code, errOut.String())
		}
	case <-time.After(30 * time.Second):
		t.Fatal("harness web did not stop on SIGTERM")
	}
	if !strings.Contains(errOut.String(), "harness web serves the page itself") {
		t.Errorf("the web entry of the file was not ignored:\n%s", errOut.String())
	}
	if strings.Contains(errOut.String(), token) {
		t.Errorf("the token on stderr:\n%s", errOut.String())
	}
	out.WaitClosed(20 * time.Second)
	if n := out.Len(); n != 1 {
		t.Errorf("stdout holds %d lines, want the URL alone: %q", n, out.Text())
	}
}

// harness run serves a web entry beside its console, and prints its URL
// (the token in the fragment) on stdout, where results go.
func TestWebEntryUnderRun(t *testing.T) {
	t.Parallel()
	file := filepath.Join(t.TempDir(), "cordis.yml")
	if err := os.WriteFile(file, []byte("- id: echo\n  name: echo\n- id: page\n  name: web\n  config: {listen: \"127.0.0.1:0\"}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	var errOut syncBuffer
	outR, outW := io.Pipe()
	out := proctest.ReadLines(outR, 0)
	stdin, feed := io.Pipe()
	done := make(chan int, 1)
	go func() {
		defer outW.Close()
		done <- Main(context.Background(), []string{"run", "-c", file}, Env{Stdin: stdin, Stdout: outW, Stderr: &errOut})
	}()
	line := waitLine(t, out, "page of entry page: http://")
	url := strings.TrimPrefix(line, "page of entry page: ")
	base, token, ok := strings.Cut(url, "/#token=")
	if !ok || token == "" {
		t.Fatalf("the announced URL %q", line)
	}
	res, err := http.Post(base+"/api/session", "application/json", strings.NewReader(`{"token":"`+token+`"}`))
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != 200 {
		t.Fatalf("the announced token does not open a session: %d", res.StatusCode)
	}
	feed.Write([]byte("/status\n/quit\n"))
	select {
	case code := <-done:
		if code != 0 {
			t.Fatalf("exit %d\n%s", code, errOut.String())
		}
	case <-time.After(30 * time.Second):
		t.Fatal("harness run did not quit")
	}
	out.WaitClosed(20 * time.Second)
	if !strings.Contains(out.Text(), "serving "+base+"/") {
		t.Errorf("status does not say where the page is served:\n%s", out.Text())
	}
	if strings.Contains(errOut.String(), token) {
		t.Errorf("the token on stderr:\n%s", errOut.String())
	}
}

// harness serve serves a web entry beside its gateway; stdout is protocol,
// so the URL, its token whole, goes to stderr.
func TestWebEntryUnderServe(t *testing.T) {
	t.Parallel()
	file := filepath.Join(t.TempDir(), "cordis.yml")
	if err := os.WriteFile(file, []byte("- id: echo\n  name: echo\n- id: page\n  name: web\n  config: {listen: \"127.0.0.1:0\"}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	var out, errOut bytes.Buffer
	if code := Main(context.Background(), []string{"serve", "-c", file}, Env{Stdin: strings.NewReader(""), Stdout: &out, Stderr: &errOut}); code != 0 {
		t.Fatalf("exit %d\n%s", code, errOut.String())
	}
	if out.Len() != 0 {
		t.Errorf("stdout holds more than protocol: %q", out.String())
	}
	i := strings.Index(errOut.String(), "page of entry page: http://127.0.0.1:")
	if i < 0 {
		t.Fatalf("no URL on stderr:\n%s", errOut.String())
	}
	line, _, _ := strings.Cut(errOut.String()[i:], "\n")
	if _, token, ok := strings.Cut(line, "/#token="); !ok || len(token) < 20 || strings.Contains(token, "redacted") {
		t.Errorf("the announced URL %q", line)
	}
}

// A one-shot command ignores web entries: it must not take a running
// harness's port.
func TestWebEntryIgnoredByOneShots(t *testing.T) {
	t.Parallel()
	file := filepath.Join(t.TempDir(), "cordis.yml")
	if err := os.WriteFile(file, []byte("- id: echo\n  name: echo\n- id: page\n  name: web\n  config: {listen: \"127.0.0.1:0\"}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	var out, errOut bytes.Buffer
	if code := Main(context.Background(), []string{"status", "-c", file}, Env{Stdin: strings.NewReader(""), Stdout: &out, Stderr: &errOut}); code != 0 {
		t.Fatalf("exit %d\n%s", code, errOut.String())
	}
	if !strings.Contains(out.String(), "ignored: only harness run and harness serve serve web entries") {
		t.Errorf("status:\n%s", out.String())
	}
}
