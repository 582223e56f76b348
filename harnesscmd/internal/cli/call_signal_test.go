package cli

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/harness-go/harness/internal/testkit/fixture"
)

// A signal during `harness call` ends it with exit 1 and, on stderr, that
// the call was cancelled and why; nothing on stdout (the tool's
// "cancelled" is not its answer).
func TestCallEndedBySignal(t *testing.T) {
	t.Parallel()
	calling := make(chan struct{}, 1)
	h := fixture.HTTPHandler(fixture.Options{Only: []string{"sleep"}})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if bytes.Contains(body, []byte(`"tools/call"`)) {
			calling <- struct{}{}
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	config := filepath.Join(t.TempDir(), "cordis.yml")
	if err := os.WriteFile(config, []byte("- id: fx\n  name: mcp-client\n  config: {serverName: fx, transport: streamable-http, url: '"+srv.URL+"/mcp', oauth: false}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	sigs := make(chan os.Signal, 1)
	var out, errOut bytes.Buffer
	done := make(chan int, 1)
	go func() {
		done <- Main(context.Background(), []string{"-c", config, "call", "mcp__fx__sleep", `{"ms":600000}`},
			Env{Stdin: strings.NewReader(""), Stdout: &out, Stderr: &errOut, Signals: sigs})
	}()
	<-calling
	sigs <- syscall.SIGTERM
	if code := <-done; code != ExitFailure || out.Len() != 0 || !strings.Contains(errOut.String(), `harness call: the call to "mcp__fx__sleep" was cancelled: interrupted`) {
		t.Fatalf("exit %d\nstdout %q\nstderr %s", code, out.String(), errOut.String())
	}
}
