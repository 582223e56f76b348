package web

import (
	"crypto/sha256"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"time"
)

// A session is one browser that traded the token for a cookie: its tabs
// share the chat and see its questions. Its fields are guarded by the
// server's mutex.
type session struct {
	id, csrf string
	created  time.Time
	streams  int // open event streams

	chat      chatState   // chat.go
	questions []*question // front.go: the one shown first, then those waiting
}

// maxSessions bounds the sessions kept: the oldest goes first.
const maxSessions = 64

// maxBody bounds a request body (a tool call's arguments, a message).
const maxBody = 4 << 20

// csrfHeader carries the session's CSRF token on every POST.
const csrfHeader = "X-CSRF-Token"

// serveSession trades the token for a session (POST {"token"}), or tells
// a page that reloaded its CSRF token (GET, with the cookie).
func (s *Server) serveSession(w http.ResponseWriter, r *http.Request) {
	switch r.Method {
	case http.MethodGet:
		sess := s.sessionOf(r)
		if sess == nil {
			problem(w, http.StatusUnauthorized, "no session: open the URL harness web printed (it holds the token), or paste the token")
			return
		}
		s.writeSession(w, sess)
	case http.MethodPost:
		if !isJSON(r) {
			problem(w, http.StatusUnsupportedMediaType, "send the token as JSON: {\"token\": \"…\"}")
			return
		}
		var in struct {
			Token string `json:"token"`
		}
		if err := readJSON(r, &in); err != nil {
			problem(w, http.StatusBadRequest, err.Error())
			return
		}
		sum := sha256.Sum256([]byte(in.Token))
		if in.Token == "" || subtle.ConstantTimeCompare(sum[:], s.token[:]) != 1 {
			problem(w, http.StatusUnauthorized, "the token is wrong: use the one in the URL harness web printed")
			return
		}
		sess := &session{id: randomString(32), csrf: randomString(32), created: time.Now()}
		s.mu.Lock()
		s.sessions[sess.id] = sess
		s.evictLocked()
		s.mu.Unlock()
		http.SetCookie(w, &http.Cookie{Name: s.cookie, Value: sess.id, Path: "/", HttpOnly: true, SameSite: http.SameSiteStrictMode})
		s.writeSession(w, sess)
	default:
		problem(w, http.StatusMethodNotAllowed, "a session is a GET or a POST")
	}
}

func (s *Server) writeSession(w http.ResponseWriter, sess *session) {
	writeJSON(w, http.StatusOK, map[string]any{"csrf": sess.csrf, "version": s.o.Version, "config": s.secrets.Redact(s.o.Config)})
}

// evictLocked drops the oldest sessions past maxSessions, cancelling what
// they run.
func (s *Server) evictLocked() {
	for len(s.sessions) > maxSessions {
		var oldest *session
		for _, x := range s.sessions {
			if oldest == nil || x.created.Before(oldest.created) {
				oldest = x
			}
		}
		s.dropLocked(oldest)
	}
}

// dropLocked ends a session: its turn is cancelled, its questions
// withdrawn, its streams closed.
func (s *Server) dropLocked(sess *session) {
	delete(s.sessions, sess.id)
	if sess.chat.cancel != nil {
		sess.chat.cancel(errSessionEnded)
	}
	for _, q := range sess.questions {
		q.withdraw()
	}
	for st := range s.streams {
		if st.sess == sess {
			st.drop()
		}
	}
}

var errSessionEnded = errors.New("the page's session ended")

func (s *Server) sessionOf(r *http.Request) *session {
	c, err := r.Cookie(s.cookie)
	if err != nil {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.sessions[c.Value]
}

// authorize returns the request's session: the cookie must name one, and a
// POST must carry its CSRF token and a JSON body.
func (s *Server) authorize(w http.ResponseWriter, r *http.Request) (*session, bool) {
	sess := s.sessionOf(r)
	if sess == nil {
		problem(w, http.StatusUnauthorized, "no session: open the URL harness web printed (it holds the token)")
		return nil, false
	}
	if r.Method == http.MethodGet || r.Method == http.MethodHead {
		return sess, true
	}
	if r.Method != http.MethodPost {
		problem(w, http.StatusMethodNotAllowed, "a change is a POST")
		return nil, false
	}
	if got := r.Header.Get(csrfHeader); subtle.ConstantTimeCompare([]byte(got), []byte(sess.csrf)) != 1 {
		problem(w, http.StatusForbidden, "the CSRF token is missing or wrong: reload the page")
		return nil, false
	}
	if !isJSON(r) {
		problem(w, http.StatusUnsupportedMediaType, "a POST carries JSON (Content-Type: application/json)")
		return nil, false
	}
	return sess, true
}

// logout ends the session (POST /api/logout).
func (s *Server) logout(w http.ResponseWriter, sess *session) {
	s.mu.Lock()
	s.dropLocked(sess)
	s.mu.Unlock()
	http.SetCookie(w, &http.Cookie{Name: s.cookie, Value: "", Path: "/", MaxAge: -1, HttpOnly: true, SameSite: http.SameSiteStrictMode})
	writeJSON(w, http.StatusOK, map[string]any{})
}

func isJSON(r *http.Request) bool {
	mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
	return err == nil && mt == "application/json"
}

// readJSON decodes the request body, bounded by maxBody.
func readJSON(r *http.Request, v any) error {
	body, err := io.ReadAll(io.LimitReader(r.Body, maxBody+1))
	if err != nil {
		return fmt.Errorf("reading the request: %v", err)
	}
	if len(body) > maxBody {
		return fmt.Errorf("the request is over %d MiB, the most accepted", maxBody>>20)
	}
	if err := json.Unmarshal(body, v); err != nil {
		return fmt.Errorf("the request is not the JSON expected: %v", err)
	}
	return nil
}

// writeJSON answers v as JSON.
func writeJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		status, b = http.StatusInternalServerError, []byte(`{"error":"encoding the answer failed"}`)
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	w.Write(append(b, '\n'))
}

// problem answers an error as {"error": msg}: what the page shows.
func problem(w http.ResponseWriter, status int, msg string) {
	writeJSON(w, status, map[string]string{"error": msg})
}
