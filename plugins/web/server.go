package web

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/harness-go/harness/host"
	"github.com/harness-go/harness/host/secret"
	"github.com/harness-go/harness/internal/debuglog"
	"github.com/harness-go/harness/internal/origin"
	"github.com/harness-go/harness/plugins/agent"
	"github.com/harness-go/harness/plugins/prompts"
	"github.com/harness-go/harness/plugins/resources"
	"github.com/harness-go/harness/plugins/tools"
)

// DefaultListen is where `harness web` serves the page.
const DefaultListen = "127.0.0.1:8760"

// Options are what a [Server] shows and works with: the services the CLI
// uses.
type Options struct {
	// Host is the harness's host: its entries, events and restarts.
	Host *host.Host
	// Tools is the tools registry; Agents the agent directory (nil: no
	// chat). Both are those provided to Host: the page learns of their
	// changes from its stream.
	Tools  *tools.Registry
	Agents *agent.Directory
	// Resources and Prompts are the registries of the servers' resources
	// and prompts (nil: the page has no such view).
	Resources *resources.Registry
	Prompts   *prompts.Registry
	// Login, when set, logs an entry in from the page (nil: the page says
	// to run harness login).
	Login Login
	// Config is the path of cordis.yml, shown on the page and read for
	// its Config view.
	Config string
	// Logs, when set, gives the page the harness's log records.
	Logs *Logs
	// Token is what a person needs to open the page (required).
	Token string
	// AllowHosts are further Host values accepted (name or name:port).
	AllowHosts []string
	// Self is the id of the entry that serves this page, if one does: the
	// page may not restart it (the request would wait for its own end).
	Self string
	// Logger receives the server's records; Version is shown on the page.
	Logger  *slog.Logger
	Version string
}

// Server serves the page. Create it with [New], bind it with
// [Server.Listen], run its event loop with [Server.Run] and serve with
// [Server.Serve]; [Server.Close] ends the streams and the turns.
type Server struct {
	o       Options
	log     *slog.Logger
	secrets *secret.Set
	token   [32]byte // SHA-256 of the token

	// life ends with Close: the streams and the chat turns watch it.
	life    context.Context
	endLife context.CancelFunc
	work    sync.WaitGroup // chat turns

	ln     net.Listener
	srv    *http.Server
	hosts  origin.Hosts
	cookie string // the session cookie's name (per port: cookies ignore ports)

	mu       sync.Mutex
	sessions map[string]*session      // by cookie value
	logins   map[string]*pendingLogin // by entry id
	streams  map[*stream]struct{}
	state    state // what a snapshot holds (state.go)
	// lastProblems are the problems of the last load refused (nil after
	// one that applied).
	lastProblems []map[string]string
}

// ErrNeedsToken refuses a non-loopback listen address without a token
// chosen by the person.
var ErrNeedsToken = errors.New("a non-loopback address needs a token")

// CheckListen refuses to serve the page on an address other machines can
// reach unless the person chose the token: a fresh token is printed in a
// terminal, fine for this machine, not for a network.
func CheckListen(addr string, tokenSet bool) error {
	h, _, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("listen address %q: want host:port, such as %s: %w", addr, DefaultListen, err)
	}
	if tokenSet || origin.IsLoopbackName(strings.ToLower(h)) {
		return nil
	}
	where := h
	if where == "" {
		where = "every interface"
	}
	return fmt.Errorf("refusing to serve the page on %s (%s) with a fresh token: other machines could drive the harness: %w", addr, where, ErrNeedsToken)
}

// NewToken returns a fresh random token for the page's URL.
func NewToken() string { return randomString(24) }

func randomString(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b) // never fails (crypto/rand)
	return base64.RawURLEncoding.EncodeToString(b)
}

// New returns a server for o.
func New(o Options) (*Server, error) {
	if o.Host == nil || o.Tools == nil {
		return nil, errors.New("web: a host and a tools registry are required")
	}
	if o.Token == "" {
		return nil, errors.New("web: a token is required")
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	s := &Server{o: o, log: o.Logger, secrets: o.Host.Secrets(), token: sha256.Sum256([]byte(o.Token)),
		sessions: map[string]*session{}, streams: map[*stream]struct{}{}, logins: map[string]*pendingLogin{}}
	s.secrets.Add(o.Token)
	s.life, s.endLife = context.WithCancel(context.Background())
	s.hosts = origin.Hosts{Allow: o.AllowHosts}
	return s, nil
}

// Listen binds addr (see [CheckListen]; tokenSet says the person chose
// the token).
func (s *Server) Listen(addr string, tokenSet bool) error {
	if err := CheckListen(addr, tokenSet); err != nil {
		return err
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("web: %w", err)
	}
	s.ln = ln
	s.hosts.Bind = ln.Addr()
	s.cookie = "harness_session"
	if a, ok := ln.Addr().(*net.TCPAddr); ok {
		s.cookie += "_" + strconv.Itoa(a.Port)
	}
	s.srv = &http.Server{
		Handler:           s,
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       2 * time.Minute,
		MaxHeaderBytes:    64 << 10,
		BaseContext:       func(net.Listener) context.Context { return s.life },
		ErrorLog:          slog.NewLogLogger(debuglog.Handler(s.log.Handler()), slog.LevelDebug),
	}
	return nil
}

// Addr is the address the server listens on.
func (s *Server) Addr() net.Addr { return s.ln.Addr() }

// URL is the page's address, for a listener on every interface its
// loopback one; withToken puts the token in the fragment.
func (s *Server) URL(withToken bool) string {
	host := s.ln.Addr().String()
	if a, ok := s.ln.Addr().(*net.TCPAddr); ok {
		ip := a.IP
		if ip.IsUnspecified() {
			ip = net.IPv4(127, 0, 0, 1)
		}
		host = net.JoinHostPort(ip.String(), strconv.Itoa(a.Port))
	}
	u := "http://" + host + "/"
	if withToken {
		u += "#token=" + s.o.Token
	}
	return u
}

// Serve serves until Close; it returns nil once closed.
func (s *Server) Serve() error {
	if err := s.srv.Serve(s.ln); !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("web: %w", err)
	}
	return nil
}

// Close ends the streams and the chat turns, lets requests in flight end
// within ctx, then closes what is left.
func (s *Server) Close(ctx context.Context) error {
	s.endLife()
	var err error
	if s.srv != nil {
		if err = s.srv.Shutdown(ctx); err != nil {
			err = s.srv.Close()
		}
		_ = s.ln.Close()
	}
	done := make(chan struct{})
	go func() { s.work.Wait(); close(done) }()
	select {
	case <-done:
	case <-ctx.Done():
		return errors.Join(err, fmt.Errorf("web: chat turns still running: %w", context.Cause(ctx)))
	}
	return err
}

// The paths the server answers.
const (
	pathSession = "/api/session"
	pathLogout  = "/api/logout"
	pathEvents  = "/api/events"
	pathRestart = "/api/restart"
	pathCall    = "/api/call"
	pathAnswer  = "/api/answer"
	pathChat    = "/api/chat"
	pathCancel  = "/api/chat/cancel"
	pathNew     = "/api/chat/new"
	pathRead    = "/api/read"
	pathPrompt  = "/api/prompt"
	pathSuggest = "/api/prompt/complete"
	pathFill    = "/api/template/complete"
	pathLogin   = "/api/login"
	pathPaste   = "/api/login/paste"
)

// csp is the page's Content-Security-Policy: its own scripts and styles
// only, none inline; images also as data: URLs (a tool result's images);
// no plugins, no framing, no form posts elsewhere.
const csp = "default-src 'self'; img-src 'self' data:; object-src 'none'; base-uri 'none'; frame-ancestors 'none'; form-action 'self'"

// ServeHTTP checks every request (rule 1 of the package documentation),
// then routes it.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	h.Set("Content-Security-Policy", csp)
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("X-Frame-Options", "DENY")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("Cross-Origin-Opener-Policy", "same-origin")
	h.Set("Cross-Origin-Resource-Policy", "same-origin")
	if !s.hosts.HostAllowed(r.Host) {
		names := ""
		if n := s.hosts.Names(); len(n) > 0 {
			names = ", " + strings.Join(n, ", ")
		}
		problem(w, http.StatusForbidden, fmt.Sprintf("Host %q is not accepted (DNS rebinding protection): the page answers to localhost, 127.0.0.1, [::1]%s", r.Host, names))
		return
	}
	if o := r.Header.Get("Origin"); o != "" && !sameOrigin(o, r.Host) {
		s.log.Info("refused a request from another origin", "origin", o, "method", r.Method, "path", r.URL.Path)
		problem(w, http.StatusForbidden, fmt.Sprintf("a request from another origin (%s) is refused: only the page itself may call the harness", o))
		return
	}
	if !strings.HasPrefix(r.URL.Path, "/api/") {
		s.serveAsset(w, r)
		return
	}
	h.Set("Cache-Control", "no-store")
	if site := r.Header.Get("Sec-Fetch-Site"); site != "" && site != "same-origin" && site != "none" {
		problem(w, http.StatusForbidden, fmt.Sprintf("a request from another site (Sec-Fetch-Site: %s) is refused", site))
		return
	}
	if r.URL.Path == pathSession {
		s.serveSession(w, r)
		return
	}
	sess, ok := s.authorize(w, r)
	if !ok {
		return
	}
	if r.URL.Path != pathEvents && r.Method != http.MethodPost {
		problem(w, http.StatusMethodNotAllowed, "a change is a POST")
		return
	}
	switch r.URL.Path {
	case pathEvents:
		if r.Method != http.MethodGet {
			problem(w, http.StatusMethodNotAllowed, "the event stream is a GET")
			return
		}
		s.serveEvents(w, r, sess)
	case pathLogout:
		s.logout(w, sess)
	case pathRestart:
		s.restart(w, r)
	case pathCall:
		s.call(w, r, sess)
	case pathAnswer:
		s.answer(w, r, sess)
	case pathChat:
		s.chat(w, r, sess)
	case pathCancel:
		s.cancelTurn(w, sess)
	case pathNew:
		s.newConversation(w, sess)
	case pathRead:
		s.read(w, r)
	case pathPrompt:
		s.prompt(w, r)
	case pathSuggest:
		s.completePrompt(w, r)
	case pathFill:
		s.completeTemplate(w, r)
	case pathLogin:
		s.login(w, r)
	case pathPaste:
		s.pasteLogin(w, r)
	default:
		problem(w, http.StatusNotFound, "no such API: "+r.URL.Path)
	}
}

// sameOrigin reports whether an Origin header names the origin the request
// was sent to: http://<Host> (or https, behind a proxy that terminates TLS).
func sameOrigin(o, hostport string) bool {
	return strings.EqualFold(o, "http://"+hostport) || strings.EqualFold(o, "https://"+hostport)
}
