package web

import (
	"encoding/json"
	"net/http"
	"sync"
	"time"
)

// A stream is one page's server-sent-events connection.
type stream struct {
	sess  *session
	since uint64 // the generation of the state its snapshot read
	c     chan json.RawMessage
	once  sync.Once
	gone  chan struct{} // closed when the server drops the stream
}

// streamQueue bounds what waits to be written to one stream; past it the
// stream is dropped, and the page reconnects to a fresh snapshot.
const streamQueue = 1024

// heartbeat keeps an idle stream's connection alive through proxies.
const heartbeat = 25 * time.Second

func (st *stream) drop() { st.once.Do(func() { close(st.gone) }) }

// send queues m, or drops the stream when its queue is full. Called with
// the server's mutex held.
func (st *stream) send(m json.RawMessage) {
	select {
	case st.c <- m:
	default:
		st.drop()
	}
}

// broadcast sends m to every stream, or to those of one session.
func (s *Server) broadcast(m json.RawMessage, only *session) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.broadcastLocked(m, only)
}

func (s *Server) broadcastLocked(m json.RawMessage, only *session) {
	for st := range s.streams {
		if only == nil || st.sess == only {
			st.send(m)
		}
	}
}

// serveEvents is GET /api/events: a snapshot, then every change, until the
// page goes, the session ends or the server closes.
func (s *Server) serveEvents(w http.ResponseWriter, r *http.Request, sess *session) {
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("X-Accel-Buffering", "no")
	rc := http.NewResponseController(w)
	st := &stream{sess: sess, c: make(chan json.RawMessage, streamQueue), gone: make(chan struct{})}

	// The snapshot reads everything fresh; rebuilds that began before it
	// are not sent to this stream (they may be older than what it read).
	s.mu.Lock()
	s.state.gen++
	st.since = s.state.gen
	s.mu.Unlock()
	fresh := map[string]json.RawMessage{
		"entries": s.redact(s.entriesJSON()),
		"tools":   s.redact(s.toolsJSON()),
		"agents":  s.redact(s.agentsJSON()),
		"file":    s.redact(s.fileJSON()),
	}
	if s.o.Resources != nil {
		fresh["resources"] = s.redact(s.resourcesJSON())
	}
	if s.o.Prompts != nil {
		fresh["prompts"] = s.redact(s.promptsJSON())
	}
	s.mu.Lock()
	if s.sessions[sess.id] != sess {
		s.mu.Unlock()
		problem(w, http.StatusUnauthorized, "the session ended")
		return
	}
	snap := s.snapshotLocked(sess, fresh)
	s.streams[st] = struct{}{}
	sess.streams++
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		delete(s.streams, st)
		sess.streams--
		s.mu.Unlock()
	}()

	w.WriteHeader(http.StatusOK)
	// A browser that loses the stream tries again after a second; the new
	// stream starts with a fresh snapshot.
	if _, err := w.Write([]byte("retry: 1000\n\n")); err != nil {
		return
	}
	if !writeEvent(w, rc, snap) {
		return
	}
	tick := time.NewTicker(heartbeat)
	defer tick.Stop()
	for {
		select {
		case m := <-st.c:
			if !writeEvent(w, rc, m) {
				return
			}
		case <-tick.C:
			if _, err := w.Write([]byte(": ping\n\n")); err != nil || rc.Flush() != nil {
				return
			}
		case <-st.gone:
			return
		case <-r.Context().Done():
			return
		}
	}
}

// writeEvent writes one message as an SSE event (JSON holds no newline)
// and flushes it.
func writeEvent(w http.ResponseWriter, rc *http.ResponseController, m json.RawMessage) bool {
	buf := make([]byte, 0, len(m)+8)
	buf = append(buf, "data: "...)
	buf = append(buf, m...)
	buf = append(buf, "\n\n"...)
	if _, err := w.Write(buf); err != nil {
		return false
	}
	return rc.Flush() == nil
}

// snapshotLocked is everything a page shows, for one session: the parts
// read fresh, the reload lines and recent logs, and the session's chat and
// question.
func (s *Server) snapshotLocked(sess *session, fresh map[string]json.RawMessage) json.RawMessage {
	var logs []json.RawMessage
	if s.o.Logs != nil {
		for _, r := range s.o.Logs.recent() {
			logs = append(logs, s.redact(mustJSON(r)))
		}
	}
	m := map[string]any{
		"type":      "snapshot",
		"version":   s.o.Version,
		"config":    s.secrets.Redact(s.o.Config),
		"entries":   fresh["entries"],
		"tools":     fresh["tools"],
		"agents":    fresh["agents"],
		"file":      fresh["file"],
		"resources": fresh["resources"],
		"prompts":   fresh["prompts"],
		"events":    nonNil(s.state.events),
		"logs":      nonNil(logs),
		"chat":      s.chatSnapshotLocked(sess),
		"question":  s.questionViewLocked(sess),
		"features":  map[string]bool{"chat": s.o.Agents != nil, "resources": s.o.Resources != nil, "prompts": s.o.Prompts != nil, "login": s.o.Login != nil},
	}
	return mustJSON(m)
}

func nonNil(l []json.RawMessage) []json.RawMessage {
	if l == nil {
		return []json.RawMessage{}
	}
	return l
}
