package oauth

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"
)

// CallbackPath is the path of the loopback redirect URI.
const CallbackPath = "/callback"

// donePage is what the browser shows once the redirect came back.
const donePage = `<!doctype html><meta charset="utf-8"><title>harness: login done</title>
<p>The login is done; harness has the token. You can close this tab.</p>
`

// Loopback is the listener of one login's redirect: on 127.0.0.1 only, at
// a free port or the entry's callbackPort. It accepts one redirect whose
// state matches, answers a small page, and is closed by its owner.
type Loopback struct {
	ln    net.Listener
	srv   *http.Server
	mu    sync.Mutex
	state string
	got   chan *url.URL
	once  sync.Once
	done  sync.WaitGroup
}

// Listen opens the listener (port 0: a free one).
func Listen(port int) (*Loopback, error) {
	ln, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
	if err != nil {
		if port != 0 {
			return nil, fmt.Errorf("listening for the login's redirect on 127.0.0.1:%d (oauth.callbackPort): %w", port, err)
		}
		return nil, fmt.Errorf("listening for the login's redirect on 127.0.0.1: %w", err)
	}
	l := &Loopback{ln: ln, got: make(chan *url.URL, 1)}
	l.srv = &http.Server{Handler: http.HandlerFunc(l.serve), ReadHeaderTimeout: 10 * time.Second}
	l.done.Add(1)
	go func() {
		defer l.done.Done()
		_ = l.srv.Serve(ln)
	}()
	return l, nil
}

// RedirectURI is the redirect URI of the listener.
func (l *Loopback) RedirectURI() string {
	return "http://127.0.0.1:" + strconv.Itoa(l.ln.Addr().(*net.TCPAddr).Port) + CallbackPath
}

// Expect sets the state the redirect must carry.
func (l *Loopback) Expect(state string) {
	l.mu.Lock()
	l.state = state
	l.mu.Unlock()
}

func (l *Loopback) serve(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != CallbackPath {
		http.NotFound(w, r)
		return
	}
	l.mu.Lock()
	want := l.state
	l.mu.Unlock()
	if want == "" || r.URL.Query().Get("state") != want {
		http.Error(w, "This is not the redirect of the login harness is waiting for.", http.StatusBadRequest)
		return
	}
	taken := false
	l.once.Do(func() {
		u := *r.URL
		u.Scheme, u.Host = "http", r.Host
		l.got <- &u
		taken = true
	})
	if !taken {
		http.Error(w, "This login is already done.", http.StatusConflict)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	_, _ = io.WriteString(w, donePage)
}

// Redirects delivers the one accepted redirect.
func (l *Loopback) Redirects() <-chan *url.URL { return l.got }

// Close stops the listener, after the page of the accepted redirect was
// written.
func (l *Loopback) Close() {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	_ = l.srv.Shutdown(ctx)
	l.done.Wait()
}

// LoginOptions say how a person takes part in a login.
type LoginOptions struct {
	// Open opens the URL in a browser (nil, or an error: the person opens
	// it; the URL is shown either way through Show).
	Open func(string) error
	// Show tells the person the URL (and whether the browser was opened).
	Show func(url string, opened bool, why error)
	// Paste, when set, is read for the redirect URL, pasted by a person
	// whose browser cannot reach this machine's loopback (SSH).
	Paste io.Reader
	// Challenge is the server's challenge, when one was seen.
	Challenge *Challenge
}

// Login runs the whole flow with a person: it listens on the loopback,
// builds the authorization URL, opens (or shows) it, waits for the redirect
// (on the loopback, or pasted), and saves the login. A machine client's
// login is its grant (client credentials, jwt bearer), with nothing shown.
func (f *Flow) Login(ctx context.Context, o LoginOptions) (*Record, error) {
	if f.Settings.Machine() {
		if f.Settings.IdPLogin() {
			if err := f.ensureIdPLogin(ctx, o); err != nil {
				return nil, err
			}
		}
		return f.MachineToken(ctx, o.Challenge) // nobody to ask
	}
	var p *Pending
	redirect, err := browse(ctx, o, f.Settings.CallbackPort, func(redirectURI string) (string, string, error) {
		var err error
		if p, err = f.Begin(ctx, o.Challenge, redirectURI); err != nil {
			return "", "", err
		}
		return p.URL, p.State(), nil
	})
	if err != nil {
		return nil, err
	}
	return f.Finish(ctx, p, redirect)
}

// browse is a person's part of a login: it listens on the loopback (port 0:
// a free one), has build make the authorization URL for its redirect URI
// (and the state the redirect must carry), opens or shows it, and waits for
// the redirect, on the loopback or pasted.
func browse(ctx context.Context, o LoginOptions, port int, build func(redirectURI string) (authURL, state string, err error)) (*url.URL, error) {
	lb, err := Listen(port)
	if err != nil {
		return nil, err
	}
	defer lb.Close()
	authURL, state, err := build(lb.RedirectURI())
	if err != nil {
		return nil, err
	}
	lb.Expect(state)
	var openErr error = errors.New("--no-browser")
	if o.Open != nil {
		openErr = o.Open(authURL)
	}
	if o.Show != nil {
		o.Show(authURL, openErr == nil, openErr)
	}
	pasted := make(chan *url.URL, 1)
	if o.Paste != nil {
		go readPasted(o.Paste, state, pasted)
	}
	select {
	case redirect := <-lb.Redirects():
		return redirect, nil
	case redirect := <-pasted:
		return redirect, nil
	case <-ctx.Done():
		return nil, fmt.Errorf("waiting for the login's redirect: %w", context.Cause(ctx))
	}
}

// readPasted reads lines until one is a redirect URL with this login's
// state (a person pasting what the browser's address bar shows).
func readPasted(r io.Reader, state string, out chan<- *url.URL) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 4096), 64<<10)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		u, err := url.Parse(line)
		if err != nil || u.Query().Get("state") != state {
			continue
		}
		out <- u
		return
	}
}

// Probe sends the server an unauthenticated initialize and returns the
// challenge of its answer: nil when it asks for nothing (a login may
// still be made from its well-known metadata).
func Probe(ctx context.Context, c *http.Client, server string) (*Challenge, error) {
	body := []byte(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"harness","version":"login"}}}`)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, server, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	resp, err := c.Do(req)
	if err != nil {
		return nil, fmt.Errorf("reaching %s: %w", safeURL(server), err)
	}
	drain(resp)
	if ch, ok := ParseChallenge(resp.Header); ok && (resp.StatusCode == http.StatusUnauthorized || resp.StatusCode == http.StatusForbidden) {
		return ch, nil
	}
	return nil, nil
}
