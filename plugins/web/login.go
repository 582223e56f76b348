package web

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"time"

	"github.com/harness-go/harness/host"
)

// Login runs the OAuth login of entry id for the page, as `harness login`
// does (docs/rfc/0009-web.md, "Logins"): show is called once with the
// authorization URL the person opens; paste carries a redirect URL the
// person pastes (a browser that cannot reach the harness's loopback); it
// returns when the login is saved, or failed.
type Login func(ctx context.Context, id string, show func(url string), paste io.Reader) error

// loginTimeout bounds a login the page started: as long as `harness
// login` waits for a person.
const loginTimeout = 10 * time.Minute

// pendingLogin is a login under way: its URL, once known, and the pipe of
// pasted redirects.
type pendingLogin struct {
	url   chan struct{} // closed once set is
	set   string
	end   chan struct{} // closed once err is set: the login ended
	err   error
	paste *io.PipeWriter
}

// login is POST /api/login {"id"}: it starts the entry's login (or finds
// the one under way) and answers its authorization URL; the login goes on
// after the answer, and its end is a "login" message to every page (the
// entry leaves needs-login by itself, from the store).
func (s *Server) login(w http.ResponseWriter, r *http.Request) {
	if s.o.Login == nil {
		problem(w, http.StatusNotFound, "this page cannot log in: run harness login ID")
		return
	}
	var in struct {
		ID string `json:"id"`
	}
	if err := readJSON(r, &in); err != nil {
		problem(w, http.StatusBadRequest, err.Error())
		return
	}
	if !slices.ContainsFunc(s.o.Host.Snapshot(), func(e host.EntryStatus) bool { return e.ID == in.ID }) {
		problem(w, http.StatusNotFound, "no entry "+quote(in.ID))
		return
	}
	s.mu.Lock()
	p := s.logins[in.ID]
	if p == nil {
		pr, pw := io.Pipe()
		p = &pendingLogin{url: make(chan struct{}), end: make(chan struct{}), paste: pw}
		s.logins[in.ID] = p
		s.work.Add(1)
		go s.runLogin(in.ID, p, pr)
	}
	s.mu.Unlock()
	select {
	case <-p.url:
		writeJSON(w, http.StatusOK, map[string]any{"url": p.set})
	case <-p.end:
		// Over before a URL: refused at once, or a machine client's
		// grant, which asks nobody.
		if p.err != nil {
			problem(w, http.StatusBadGateway, s.secrets.Redact(p.err.Error()))
			return
		}
		writeJSON(w, http.StatusOK, map[string]any{"done": true})
	case <-r.Context().Done():
	}
}

// runLogin runs one login to its end (s.work counts it).
func (s *Server) runLogin(id string, p *pendingLogin, paste *io.PipeReader) {
	defer s.work.Done()
	ctx, cancel := context.WithTimeoutCause(s.life, loginTimeout, fmt.Errorf("nobody finished the login within %s", loginTimeout))
	defer cancel()
	shown := false
	err := s.o.Login(ctx, id, func(u string) {
		if shown {
			return
		}
		shown = true
		p.set = u
		close(p.url)
	}, paste)
	_ = p.paste.Close()
	_ = paste.Close()
	s.mu.Lock()
	delete(s.logins, id)
	s.mu.Unlock()
	p.err = err
	close(p.end)
	m := map[string]any{"id": id, "ok": err == nil}
	if err != nil {
		m["error"] = err.Error()
		if errors.Is(err, context.Canceled) && s.life.Err() != nil {
			return // the page's server is closing
		}
	}
	s.broadcast(s.redact(message("login", "login", m)), nil)
}

// pasteLogin is POST /api/login/paste {"id", "url"}: the address the
// browser ended on, for a login under way whose redirect could not reach
// this machine.
func (s *Server) pasteLogin(w http.ResponseWriter, r *http.Request) {
	var in struct {
		ID  string `json:"id"`
		URL string `json:"url"`
	}
	if err := readJSON(r, &in); err != nil {
		problem(w, http.StatusBadRequest, err.Error())
		return
	}
	s.mu.Lock()
	p := s.logins[in.ID]
	s.mu.Unlock()
	if p == nil {
		problem(w, http.StatusNotFound, "no login of "+quote(in.ID)+" is under way")
		return
	}
	if _, err := io.WriteString(p.paste, in.URL+"\n"); err != nil {
		problem(w, http.StatusGone, "the login ended")
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{})
}
