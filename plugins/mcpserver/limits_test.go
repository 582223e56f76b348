package mcpserver

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/mark3labs/mcp-go/server"

	"github.com/harness-go/harness/internal/testkit/testlog"
	"github.com/harness-go/harness/plugins/tools"
)

// rawPost writes a POST's request line and headers on conn, announcing a
// body of length bytes, and then the first n bytes of it only.
func rawPost(t *testing.T, conn net.Conn, length, n int, header string) {
	t.Helper()
	req := fmt.Sprintf("POST %s HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nContent-Length: %d\r\n%s\r\n%s", Path, length, header, strings.Repeat(" ", n))
	if _, err := io.WriteString(conn, req); err != nil {
		t.Fatal(err)
	}
}

// answeredAndClosed reads one response from conn and then waits for the
// server to close the connection, within bound.
func answeredAndClosed(conn net.Conn, bound time.Duration) (int, error) {
	_ = conn.SetReadDeadline(time.Now().Add(bound))
	br := bufio.NewReader(conn)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		return 0, fmt.Errorf("no response within %s: %w", bound, err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if _, err := br.ReadByte(); !errors.Is(err, io.EOF) {
		return resp.StatusCode, fmt.Errorf("the server did not close the connection within %s (read: %v)", bound, err)
	}
	return resp.StatusCode, nil
}

// Slow bodies (a hostile test: 300 of 300 clients that dripped a body
// without credentials still held their connections after 25 s, because the
// 401 waited for the body): a request without the token is refused as soon
// as its headers are in, and its connection closed, whatever its body
// does; a body that does not arrive within BodyTimeout is refused (408)
// and its connection closed; an idle kept-alive connection is closed after
// IdleTimeout.
func TestHTTPSlowBodies(t *testing.T) {
	t.Parallel()
	r := newRig(t, Options{})
	const bodyTimeout, idleTimeout = 300 * time.Millisecond, 300 * time.Millisecond
	srv := r.serveHTTP(HTTPOptions{Token: "s3cret-token-value", BodyTimeout: bodyTimeout, IdleTimeout: idleTimeout}, "")
	addr := srv.Addr().String()
	dial := func(t *testing.T) net.Conn {
		t.Helper()
		conn, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { conn.Close() })
		return conn
	}

	t.Run("300 clients without the token, each body stalled", func(t *testing.T) {
		const clients = 300
		conns := make([]net.Conn, clients)
		for i := range conns {
			conns[i] = dial(t)
			rawPost(t, conns[i], 1000, 10, "")
		}
		var wg sync.WaitGroup
		errs := make(chan error, clients)
		for _, c := range conns {
			wg.Go(func() {
				status, err := answeredAndClosed(c, 5*time.Second)
				if err == nil && status != http.StatusUnauthorized {
					err = fmt.Errorf("HTTP %d, want 401", status)
				}
				if err != nil {
					errs <- err
				}
			})
		}
		wg.Wait()
		close(errs)
		n := 0
		for err := range errs {
			if n++; n <= 3 {
				t.Error(err)
			}
		}
		if n > 0 {
			t.Errorf("%d of %d clients were not refused and let go", n, clients)
		}
	})

	t.Run("a body that stalls, with the token", func(t *testing.T) {
		conn := dial(t)
		at := time.Now()
		rawPost(t, conn, 1000, 10, "Authorization: Bearer s3cret-token-value\r\n")
		status, err := answeredAndClosed(conn, 5*time.Second)
		if err != nil || status != http.StatusRequestTimeout {
			t.Fatalf("HTTP %d, %v; want 408 and the connection closed", status, err)
		}
		if took := time.Since(at); took < bodyTimeout {
			t.Errorf("refused after %s, before the body's %s", took, bodyTimeout)
		}
	})

	t.Run("an idle kept-alive connection", func(t *testing.T) {
		conn := dial(t)
		rawPost(t, conn, len(initializeBody), 0, "Authorization: Bearer s3cret-token-value\r\n")
		if _, err := io.WriteString(conn, initializeBody); err != nil {
			t.Fatal(err)
		}
		status, err := answeredAndClosed(conn, 5*time.Second)
		if err != nil || status != http.StatusOK {
			t.Fatalf("HTTP %d, %v; want 200, then the idle connection closed", status, err)
		}
	})
}

// handlerRig is a gateway whose HTTP handler is called in-process (no
// sockets), so that a synctest bubble holds all of it.
type handlerRig struct {
	t  *testing.T
	gw *Gateway
	h  *HTTPHandler
}

// newHandlerRig builds a gateway and its handler; call it inside the
// bubble. log nil: the test's log.
func newHandlerRig(t *testing.T, o HTTPOptions, log *slog.Logger) *handlerRig {
	if log == nil {
		log, _ = testlog.New(t)
	}
	gw, err := New(tools.New(), Options{Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	h := gw.HTTPHandler(o)
	t.Cleanup(func() { _ = h.Shutdown(context.Background()) })
	return &handlerRig{t: t, gw: gw, h: h}
}

// do serves one request and returns its recorded response.
func (hr *handlerRig) do(method, session, body string) *httptest.ResponseRecorder {
	req := httptest.NewRequest(method, Path, strings.NewReader(body))
	req.Host = "127.0.0.1"
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if session != "" {
		req.Header.Set(server.HeaderKeySessionID, session)
		req.Header.Set("Mcp-Protocol-Version", "2025-11-25")
	}
	w := httptest.NewRecorder()
	hr.h.ServeHTTP(w, req)
	return w
}

// initialize opens a session and returns its id.
func (hr *handlerRig) initialize() string {
	hr.t.Helper()
	w := hr.do(http.MethodPost, "", initializeBody)
	id := w.Header().Get(server.HeaderKeySessionID)
	if w.Code != http.StatusOK || id == "" {
		hr.t.Fatalf("initialize: HTTP %d, session %q: %s", w.Code, id, w.Body)
	}
	return id
}

// ping sends a ping in session id and returns the status.
func (hr *handlerRig) ping(id string) int {
	return hr.do(http.MethodPost, id, `{"jsonrpc":"2.0","id":7,"method":"ping"}`).Code
}

// registered reports whether mcp-go still holds session id.
func (hr *handlerRig) registered(id string) bool {
	return !errors.Is(hr.gw.mcp.DeleteSessionTools(id), server.ErrSessionNotFound)
}

// Sessions (a hostile test: each initialize cost about 14 KiB for ever, and
// a session id never issued was accepted): an id the gateway did not
// issue, or one that ended, is 404; a session expires after SessionIdle
// without a request, and an open stream keeps it alive; beyond MaxSessions
// an initialize gets 503 with Retry-After.
func TestHTTPSessions(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		const idle = 10 * time.Minute
		hr := newHandlerRig(t, HTTPOptions{MaxSessions: 3}, nil)

		a := hr.initialize()
		if got := hr.ping(a); got != http.StatusOK {
			t.Fatalf("a ping in the session: HTTP %d", got)
		}
		for _, tc := range []struct {
			name, method, session string
			want                  int
		}{
			{"a POST with an id never issued", http.MethodPost, "mcp-session-00000000-0000-4000-8000-000000000000", http.StatusNotFound},
			{"a GET with an id never issued", http.MethodGet, "mcp-session-never-issued", http.StatusNotFound},
			{"a DELETE with an id never issued", http.MethodDelete, "mcp-session-never-issued", http.StatusNotFound},
			{"a GET without an id", http.MethodGet, "", http.StatusBadRequest},
		} {
			body := ""
			if tc.method == http.MethodPost {
				body = `{"jsonrpc":"2.0","id":7,"method":"ping"}`
			}
			if w := hr.do(tc.method, tc.session, body); w.Code != tc.want {
				t.Errorf("%s: HTTP %d %s, want %d", tc.name, w.Code, w.Body, tc.want)
			}
		}

		// Idle for less than the bound, then a request: alive, and the
		// clock starts again.
		time.Sleep(idle - time.Second)
		if got := hr.ping(a); got != http.StatusOK {
			t.Fatalf("a ping after %s idle: HTTP %d", idle-time.Second, got)
		}

		// b keeps a GET stream open past the bound: alive; c does nothing.
		b, c := hr.initialize(), hr.initialize()
		if w := hr.do(http.MethodPost, "", initializeBody); w.Code != http.StatusServiceUnavailable || w.Header().Get("Retry-After") != "5" {
			t.Fatalf("a 4th initialize with MaxSessions 3: HTTP %d, Retry-After %q: %s", w.Code, w.Header().Get("Retry-After"), w.Body)
		} else if msg := refusal(t, w.Body.String()); !strings.Contains(msg, "the gateway holds 3 sessions, the most it keeps: try again in 5 s") {
			t.Fatalf("the 503 says %q", msg)
		}
		streamCtx, endStream := context.WithCancel(context.Background())
		streamDone := make(chan struct{})
		go func() {
			defer close(streamDone)
			req := httptest.NewRequestWithContext(streamCtx, http.MethodGet, Path, nil)
			req.Host = "127.0.0.1"
			req.Header.Set("Accept", "text/event-stream")
			req.Header.Set(server.HeaderKeySessionID, b)
			req.Header.Set("Mcp-Protocol-Version", "2025-11-25")
			hr.h.ServeHTTP(httptest.NewRecorder(), req)
		}()
		synctest.Wait()

		time.Sleep(idle + time.Second)
		synctest.Wait()
		if got := hr.ping(a); got != http.StatusNotFound {
			t.Errorf("a ping %s after the last request: HTTP %d, want 404 (expired)", idle+time.Second, got)
		}
		if got := hr.ping(c); got != http.StatusNotFound {
			t.Errorf("a session never used: HTTP %d, want 404 (expired)", got)
		}
		if hr.registered(a) || hr.registered(c) {
			t.Error("mcp-go still holds an expired session")
		}
		if got := hr.ping(b); got != http.StatusOK {
			t.Errorf("a session with an open stream: HTTP %d, want 200", got)
		}
		// Room again: expired sessions count no more.
		d := hr.initialize()

		// The stream ends: b expires a bound later; a DELETE ends d at once.
		endStream()
		<-streamDone
		if w := hr.do(http.MethodDelete, d, ""); w.Code != http.StatusOK {
			t.Fatalf("DELETE: HTTP %d %s", w.Code, w.Body)
		}
		if got := hr.ping(d); got != http.StatusNotFound {
			t.Errorf("a ping after DELETE: HTTP %d, want 404", got)
		}
		time.Sleep(idle + time.Second)
		synctest.Wait()
		if got := hr.ping(b); got != http.StatusNotFound || hr.registered(b) {
			t.Errorf("after its stream ended and %s passed: HTTP %d, registered %v; want 404, gone", idle, got, hr.registered(b))
		}
		if n := hr.h.sessions.len(); n != 0 {
			t.Errorf("%d sessions left", n)
		}
	})
}

// 10 000 sessions, none ever closed by its client, cost no more than the
// 1000 the gateway keeps at once: the live heap after each expiry comes
// back to what it was (not parallel, so that the heap is this test's; the
// log is discarded, since a test's log keeps every line).
func TestHTTPSessionsMemoryIsBounded(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		hr := newHandlerRig(t, HTTPOptions{}, slog.New(slog.DiscardHandler))
		heap := func() uint64 {
			runtime.GC()
			var m runtime.MemStats
			runtime.ReadMemStats(&m)
			return m.HeapAlloc
		}
		var base, full, last uint64
		refused := 0
		for round := range 10 {
			if round == 1 {
				base = heap() // the first round warmed every cache
			}
			for range DefaultMaxSessions {
				hr.initialize()
			}
			if w := hr.do(http.MethodPost, "", initializeBody); w.Code == http.StatusServiceUnavailable {
				refused++
			}
			if round == 1 {
				full = heap()
			}
			time.Sleep(DefaultSessionIdle + time.Second)
			synctest.Wait()
			if n := hr.h.sessions.len(); n != 0 {
				t.Fatalf("round %d: %d sessions left after the idle bound", round, n)
			}
		}
		last = heap()
		t.Logf("live heap: %d KiB before a round, %d KiB with %d sessions, %d KiB after 10 000 (%+d KiB)",
			base>>10, full>>10, DefaultMaxSessions, last>>10, (int64(last)-int64(base))>>10)
		if refused != 10 {
			t.Errorf("the 1001st initialize was refused in %d of 10 rounds", refused)
		}
		if growth := int64(last) - int64(base); growth > 1<<20 {
			t.Errorf("the live heap grew by %d KiB over 9 rounds of 1000 sessions: expired sessions are kept", growth>>10)
		}
	})
}

// Closing the HTTP server with a call in flight cancels the call (its
// backend sees its context end, as when the client cancels) and returns at
// once: `serve --http` waited the whole close bound (20 s) on SIGTERM.
func TestHTTPCloseCancelsCallsInFlight(t *testing.T) {
	t.Parallel()
	r := newRig(t, Options{})
	started, cancelled := make(chan struct{}), make(chan error, 1)
	r.register(tools.Tool{
		Name: "wait", Description: "Waits for its context to end.", Parameters: json.RawMessage(`{"type":"object"}`),
		Execute: func(ctx context.Context, _ json.RawMessage) (tools.Result, error) {
			close(started)
			<-ctx.Done()
			cancelled <- context.Cause(ctx)
			return tools.Result{}, ctx.Err()
		},
	})
	srv, err := r.gw.ListenHTTP("127.0.0.1:0", HTTPOptions{})
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- srv.Serve() }()

	req, _ := http.NewRequest(http.MethodPost, srv.URL(), strings.NewReader(initializeBody))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	id := resp.Header.Get(server.HeaderKeySessionID)
	if resp.StatusCode != http.StatusOK || id == "" {
		t.Fatalf("initialize: HTTP %d, session %q", resp.StatusCode, id)
	}
	call := make(chan error, 1)
	go func() {
		_, err := postErr(srv.URL(), `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"wait","arguments":{}}}`, id)
		call <- err
	}()
	select {
	case <-started:
	case <-time.After(waitTimeout):
		t.Fatal("the call never reached the tool")
	}
	at := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := srv.Close(ctx); err != nil {
		t.Errorf("Close: %v", err)
	}
	if took := time.Since(at); took > 2*time.Second {
		t.Errorf("Close took %s with a call in flight; want it cancelled at once", took.Round(time.Millisecond))
	}
	select {
	case err := <-cancelled:
		if !errors.Is(err, errClosing) && !errors.Is(err, context.Canceled) {
			t.Errorf("the call's context ended with %v", err)
		}
	case <-time.After(waitTimeout):
		t.Fatal("the tool's context never ended")
	}
	<-call
	if err := <-served; err != nil {
		t.Errorf("Serve: %v", err)
	}
}

// postErr posts body in session id and returns the status, or the error of
// a request the server dropped.
func postErr(url, body, id string) (int, error) {
	req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		return 0, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set(server.HeaderKeySessionID, id)
	req.Header.Set("Mcp-Protocol-Version", "2025-11-25")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, resp.Body)
	return resp.StatusCode, nil
}
