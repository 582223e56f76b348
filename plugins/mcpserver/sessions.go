package mcpserver

import (
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

// Sessions of Streamable HTTP. The revisions before 2026-07-28 have them:
// initialize issues an Mcp-Session-Id, and every later request carries it.
// mcp-go keeps some 14 KiB for each and frees it only on a DELETE, which
// many clients never send, and by default it accepts any well-formed id,
// issued or not. The gateway keeps its own table of the ids it issued
// ([server.SessionIdManager]) and these rules:
//
//  1. A request that carries an id the gateway did not issue, or one that
//     ended, is answered 404, as the transport specification says; the
//     client initializes again. A GET or DELETE without an id is 400.
//  2. A session is idle when no request of it is under way (an open GET
//     stream, a call, anything) and expires after [DefaultSessionIdle] of
//     idleness; what mcp-go holds for it is freed then.
//  3. At most [DefaultMaxSessions] live at once: the initialize beyond is
//     answered 503 with Retry-After: 5.
//
// A request of 2026-07-28 has no session and passes untouched.
const (
	// DefaultMaxSessions is how many sessions an HTTP gateway keeps.
	DefaultMaxSessions = 1000
	// DefaultSessionIdle is how long a session lives without a request.
	DefaultSessionIdle = 10 * time.Minute
	// retryAfter is the Retry-After of a refused initialize, in seconds.
	retryAfter = 5
)

// errUnknownSession is what the table says of an id it does not hold.
var errUnknownSession = errors.New("unknown session")

// sessionTable is the gateway's record of the sessions it issued.
type sessionTable struct {
	max  int
	idle time.Duration
	drop func(id string) // frees what mcp-go holds for an expired session

	mu       sync.Mutex
	live     map[string]*sessionUse
	reserved int         // initialize requests under way, each may issue one
	timer    *time.Timer // the next sweep; nil when none is due
	closed   bool
}

// sessionUse is what the table knows of one session.
type sessionUse struct {
	inflight int       // its requests under way, GET streams included
	last     time.Time // when the last of them ended, or it was issued
}

func newSessionTable(max int, idle time.Duration, drop func(string)) *sessionTable {
	return &sessionTable{max: max, idle: idle, drop: drop, live: map[string]*sessionUse{}}
}

// Generate issues a session id (mcp-go calls it for an initialize).
func (t *sessionTable) Generate() string {
	id := "mcp-session-" + rand.Text()
	t.mu.Lock()
	defer t.mu.Unlock()
	t.live[id] = &sessionUse{last: time.Now()}
	t.armLocked()
	return id
}

// Validate accepts only the ids the table holds.
func (t *sessionTable) Validate(id string) (isTerminated bool, err error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.live[id] == nil {
		return false, errUnknownSession
	}
	return false, nil
}

// Terminate forgets a session (its client sent DELETE, or it expired).
func (t *sessionTable) Terminate(id string) (isNotAllowed bool, err error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	delete(t.live, id)
	return false, nil
}

var _ server.SessionIdManager = (*sessionTable)(nil)

// reserve makes room for the session an initialize may issue, and reports
// false when the table is full. Every issued session was reserved first,
// so live sessions never exceed max; one issued but not yet unreserved
// counts twice, which can refuse a concurrent initialize at the edge, never
// admit one too many.
func (t *sessionTable) reserve() bool {
	t.mu.Lock()
	expired := t.expireLocked(time.Now())
	ok := len(t.live)+t.reserved < t.max
	if ok {
		t.reserved++
	}
	t.mu.Unlock()
	t.dropAll(expired)
	return ok
}

func (t *sessionTable) unreserve() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.reserved--
}

// begin counts a request of session id, and reports false for an id the
// table does not hold.
func (t *sessionTable) begin(id string) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	s := t.live[id]
	if s == nil {
		return false
	}
	s.inflight++
	return true
}

// end records the end of a request counted by begin.
func (t *sessionTable) end(id string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if s := t.live[id]; s != nil {
		if s.inflight--; s.inflight == 0 {
			s.last = time.Now()
			t.armLocked()
		}
	}
}

// len is the number of live sessions.
func (t *sessionTable) len() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.live)
}

// close stops the sweeps.
func (t *sessionTable) close() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.closed = true
	if t.timer != nil {
		t.timer.Stop()
		t.timer = nil
	}
}

// sweep ends the sessions idle for too long, and arms the next sweep.
func (t *sessionTable) sweep() {
	t.mu.Lock()
	t.timer = nil
	expired := t.expireLocked(time.Now())
	t.armLocked()
	t.mu.Unlock()
	t.dropAll(expired)
}

func (t *sessionTable) dropAll(ids []string) {
	for _, id := range ids {
		t.drop(id)
	}
}

// expireLocked forgets the sessions idle since idle before now and
// returns their ids.
func (t *sessionTable) expireLocked(now time.Time) []string {
	var out []string
	for id, s := range t.live {
		if s.inflight == 0 && now.Sub(s.last) >= t.idle {
			delete(t.live, id)
			out = append(out, id)
		}
	}
	return out
}

// armLocked schedules a sweep for when the first idle session expires,
// unless one is due already (it comes earlier: a session that goes idle
// later expires later).
func (t *sessionTable) armLocked() {
	if t.closed || t.timer != nil {
		return
	}
	var first time.Time
	for _, s := range t.live {
		if s.inflight == 0 && (first.IsZero() || s.last.Before(first)) {
			first = s.last
		}
	}
	if first.IsZero() {
		return
	}
	t.timer = time.AfterFunc(max(0, time.Until(first.Add(t.idle))), t.sweep)
}

// admit applies the session rules to a request about to reach mcp-go (body
// is a POST's). It returns what to call once mcp-go is done, or false when
// it refused the request itself.
func (h *HTTPHandler) admit(w http.ResponseWriter, r *http.Request, body []byte) (done func(), ok bool) {
	head := requestHead(body)
	if mcp.IsModernProtocol(r.Header.Get(mcp.HeaderProtocolVersion)) || mcp.IsModernProtocol(head.Params.Meta.ProtocolVersion()) {
		return func() {}, true // 2026-07-28: no sessions
	}
	t := h.sessions
	if r.Method == http.MethodPost && head.Method == string(mcp.MethodInitialize) {
		if !t.reserve() {
			w.Header().Set("Retry-After", fmt.Sprint(retryAfter))
			refuse(w, http.StatusServiceUnavailable, fmt.Sprintf("the gateway holds %d sessions, the most it keeps: try again in %d s (a session ends after %s without a request, or at its DELETE)", t.max, retryAfter, t.idle))
			return nil, false
		}
		return t.unreserve, true
	}
	id := r.Header.Get(server.HeaderKeySessionID)
	switch {
	case id == "" && (r.Method == http.MethodGet || r.Method == http.MethodDelete):
		refuse(w, http.StatusBadRequest, "an Mcp-Session-Id header is required: send initialize first")
		return nil, false
	case id == "":
		return func() {}, true // mcp-go answers (a POST without a session)
	case !t.begin(id):
		refuse(w, http.StatusNotFound, "unknown session: it expired, ended or was never issued; send initialize again")
		return nil, false
	}
	return func() { t.end(id) }, true
}

// bodyHead is what admit reads of a request body.
type bodyHead struct {
	Method string `json:"method"`
	Params struct {
		Meta *mcp.Meta `json:"_meta"`
	} `json:"params"`
}

func requestHead(body []byte) bodyHead {
	var h bodyHead
	if len(body) > 0 {
		_ = json.Unmarshal(body, &h) // not JSON: mcp-go says so
	}
	return h
}

// dropSession frees what mcp-go holds for an expired session, through the
// one door it has for that: a DELETE of the session.
func (h *HTTPHandler) dropSession(id string) {
	req, err := http.NewRequest(http.MethodDelete, Path, nil)
	if err != nil {
		return
	}
	req.Header.Set(server.HeaderKeySessionID, id)
	h.mcp.ServeHTTP(discard{}, req)
	h.g.log.Debug("gateway session expired", "after", h.sessions.idle)
}

// discard is a ResponseWriter that keeps nothing.
type discard struct{}

func (discard) Header() http.Header         { return http.Header{} }
func (discard) Write(p []byte) (int, error) { return len(p), nil }
func (discard) WriteHeader(int)             {}
