//go:build unix

package faults

// Row 9b: `harness serve --http` gets SIGTERM or SIGINT while a client's
// call is in flight. It waited the whole close bound (20 s) for the call;
// now the call is cancelled — its server receives notifications/cancelled
// — and the harness exits within the close bound, its servers gone.

import (
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/harness-go/harness/internal/testkit/proctest"
)

func TestServeHTTPSignalCancelsTheCallInFlight(t *testing.T) {
	t.Parallel()
	for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGINT} {
		t.Run(sig.String(), func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			pidFile := filepath.Join(dir, "pids")
			killLeftovers(t, pidFile)
			log := newFifoLog(t, dir, "fixture.log")
			writeConfig(t, dir, cordis(stdioEnt("fx", "fx", "--only", "echo,sleep", "--pidfile", pidFile, "--log", log.path)))
			s := start(t, harnessBin, dir, nil, "serve", "--http", "127.0.0.1:0")
			i, ok := s.out.Find(0, waitTimeout, prefix("listening "))
			if !ok {
				t.Fatalf("serve --http did not listen\n%s", s.dump())
			}
			url := strings.TrimPrefix(s.out.From(i)[0], "listening ")

			session := httpInitialize(t, url)
			call := make(chan string, 1)
			go func() {
				status, body, err := httpPost(url, session, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"mcp__fx__sleep","arguments":{"ms":60000}}}`)
				call <- fmt.Sprintf("HTTP %d %.200s %v", status, body, err)
			}()
			log.waitMethod(t, "tools/call")
			pids := readPIDs(t, pidFile)

			at := s.signal(sig)
			s.waitExit()
			if took := s.exit.At().Sub(at); took > closeBound {
				t.Errorf("exited %s after %s with a call in flight (bound %s)\n%s", took.Round(time.Millisecond), sig, closeBound, s.dump())
			}
			log.waitMethod(t, "notifications/cancelled")
			select {
			case got := <-call:
				t.Logf("the client's call: %s", got)
			case <-time.After(waitTimeout):
				t.Error("the client's call never ended")
			}
			if alive := proctest.WaitDead(pids, time.Second); len(alive) > 0 {
				t.Errorf("after %s these processes still run: %s", sig, proctest.Describe(alive))
			}
		})
	}
}

// httpInitialize opens a session of the gateway at url (protocol
// 2025-11-25) and returns its id.
func httpInitialize(t *testing.T, url string) string {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"faults","version":"0"}}}`))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	id := resp.Header.Get("Mcp-Session-Id")
	if resp.StatusCode != http.StatusOK || id == "" {
		t.Fatalf("initialize: HTTP %d, session %q: %s", resp.StatusCode, id, body)
	}
	if status, body, err := httpPost(url, id, `{"jsonrpc":"2.0","method":"notifications/initialized"}`); err != nil || status != http.StatusAccepted {
		t.Fatalf("notifications/initialized: HTTP %d %s %v", status, body, err)
	}
	return id
}

// httpPost posts one message in session id.
func httpPost(url, id, body string) (int, string, error) {
	req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		return 0, "", err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Session-Id", id)
	req.Header.Set("Mcp-Protocol-Version", "2025-11-25")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), nil
}
