package web

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"

	"github.com/harness-go/harness/host"
	"github.com/harness-go/harness/plugins/agent"
	"github.com/harness-go/harness/plugins/tools"
)

// chatState is a session's conversation with an agent. Like the console's,
// it belongs to the front, not to an agent instance: it survives an edit of
// the agent's entry, and New starts over. Guarded by the server's mutex;
// conv is used by the turn running only.
type chatState struct {
	conv   agent.Conversation
	agent  string // the agent talked to last
	turn   int    // turns started
	cancel context.CancelCauseFunc
	// items are what the page shows of every turn, for a page that opens
	// (or reconnects) mid-conversation; bytes is their size, bounded by
	// maxTranscript (the oldest turns go first).
	items []chatItem
	bytes int
}

// chatItem is one event of a turn as the page gets it.
type chatItem struct {
	Turn  int             `json:"turn"`
	Event json.RawMessage `json:"event"`
	text  string          // a text or reasoning event's delta, merged
	kind  string
}

// maxTranscript bounds what a session keeps of its chat for its pages.
const maxTranscript = 4 << 20

// errCancelledByPage is why a turn the page's Cancel stopped ended.
var errCancelledByPage = errors.New("cancelled on the page")

// chat is POST /api/chat {"agent", "message"}: one turn, run on the
// server's own goroutine; its events stream to the session's pages.
func (s *Server) chat(w http.ResponseWriter, r *http.Request, sess *session) {
	var in struct {
		Agent   string `json:"agent"`
		Message string `json:"message"`
	}
	if err := readJSON(r, &in); err != nil {
		problem(w, http.StatusBadRequest, err.Error())
		return
	}
	if strings.TrimSpace(in.Message) == "" {
		problem(w, http.StatusBadRequest, "the message is empty")
		return
	}
	a, err := s.pickAgent(in.Agent)
	if err != nil {
		problem(w, http.StatusConflict, s.secrets.Redact(err.Error()))
		return
	}
	s.mu.Lock()
	c := &sess.chat
	if c.cancel != nil {
		s.mu.Unlock()
		problem(w, http.StatusConflict, "a turn is running: wait for its answer, or cancel it")
		return
	}
	c.turn++
	turn := c.turn
	ctx, cancel := context.WithCancelCause(s.life)
	c.cancel, c.agent = cancel, a.ID()
	s.addItemLocked(sess, turn, mustJSON(map[string]string{"type": "user", "text": in.Message, "agent": a.ID()}), "user", "")
	s.work.Add(1)
	s.mu.Unlock()

	go func() {
		defer s.work.Done()
		defer cancel(nil)
		ctx = tools.WithFront(ctx, s.front(sess))
		_, err := a.Run(ctx, &c.conv, in.Message, func(e agent.Event) { s.chatEvent(sess, turn, e) })
		end := map[string]any{"type": "end"}
		if err != nil && ctx.Err() != nil {
			end["cancelled"] = true
			end["why"] = context.Cause(ctx).Error()
		}
		s.mu.Lock()
		c.cancel = nil
		s.addItemLocked(sess, turn, s.redact(mustJSON(end)), "end", "")
		s.mu.Unlock()
	}()
	writeJSON(w, http.StatusAccepted, map[string]any{"turn": turn, "agent": a.ID()})
}

// chatEvent passes one of a turn's events to the session's pages. The
// model's text is its own words, unredacted, as on a terminal; a tool
// call's arguments are redacted, as `ask --json` does.
func (s *Server) chatEvent(sess *session, turn int, e agent.Event) {
	if e.Type == agent.EventToolCall {
		e.Arguments = json.RawMessage(s.secrets.Redact(string(e.Arguments)))
	}
	b, err := e.MarshalJSON()
	if err != nil {
		return
	}
	if e.Type == agent.EventError || e.Type == agent.EventRetry {
		b = s.redact(b)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.addItemLocked(sess, turn, b, e.Type, e.Delta)
}

// addItemLocked keeps an item of the session's transcript and sends it.
// Deltas of text (or reasoning) in a row are kept as one item.
func (s *Server) addItemLocked(sess *session, turn int, ev json.RawMessage, kind, delta string) {
	c := &sess.chat
	s.broadcastLocked(mustJSON(chatItem{Turn: turn, Event: ev}.message()), sess)
	if n := len(c.items); n > 0 && (kind == agent.EventText || kind == agent.EventReasoning) {
		last := &c.items[n-1]
		if last.Turn == turn && last.kind == kind {
			c.bytes -= len(last.Event)
			last.text += delta
			last.Event = mustJSON(map[string]string{"type": kind, "delta": last.text})
			c.bytes += len(last.Event)
			return
		}
	}
	c.items = append(c.items, chatItem{Turn: turn, Event: ev, kind: kind, text: delta})
	c.bytes += len(ev)
	for c.bytes > maxTranscript && len(c.items) > 1 {
		first := c.items[0].Turn
		i := 0
		for i < len(c.items)-1 && c.items[i].Turn == first {
			c.bytes -= len(c.items[i].Event)
			i++
		}
		c.items = slices.Delete(c.items, 0, i)
	}
}

// message is the item as a stream message.
func (it chatItem) message() map[string]any {
	return map[string]any{"type": "chat", "turn": it.Turn, "event": it.Event}
}

// chatSnapshotLocked is the session's chat for a page that opens.
func (s *Server) chatSnapshotLocked(sess *session) map[string]any {
	c := &sess.chat
	items := make([]json.RawMessage, len(c.items))
	for i, it := range c.items {
		items[i] = mustJSON(it)
	}
	return map[string]any{"agent": c.agent, "running": c.cancel != nil, "items": items}
}

// cancelTurn is POST /api/chat/cancel: the turn running stops (its tool
// calls are cancelled, their servers told); the conversation keeps what
// completed.
func (s *Server) cancelTurn(w http.ResponseWriter, sess *session) {
	s.mu.Lock()
	cancel := sess.chat.cancel
	s.mu.Unlock()
	if cancel == nil {
		problem(w, http.StatusConflict, "no turn is running")
		return
	}
	cancel(errCancelledByPage)
	writeJSON(w, http.StatusOK, map[string]any{})
}

// newConversation is POST /api/chat/new: the next turn starts a new
// conversation.
func (s *Server) newConversation(w http.ResponseWriter, sess *session) {
	s.mu.Lock()
	defer s.mu.Unlock()
	c := &sess.chat
	if c.cancel != nil {
		problem(w, http.StatusConflict, "a turn is running: cancel it first")
		return
	}
	c.conv.Reset()
	c.items, c.bytes = nil, 0
	s.broadcastLocked(mustJSON(map[string]string{"type": "chat-new"}), sess)
	writeJSON(w, http.StatusOK, map[string]any{})
}

// pickAgent returns the agent to talk to: id, or the only agent entry —
// the rules of `ask --agent` and the console's /agent.
func (s *Server) pickAgent(id string) (*agent.Agent, error) {
	if s.o.Agents == nil {
		return nil, errors.New("this harness has no agents")
	}
	var ids []string
	var states = map[string]host.EntryStatus{}
	for _, e := range s.o.Host.Snapshot() {
		if e.Plugin == agent.KindName && e.State != host.Disabled {
			ids = append(ids, e.ID)
			states[e.ID] = e
		}
	}
	switch {
	case len(ids) == 0:
		return nil, fmt.Errorf("no agent entry in %s; add an entry with name: agent (README: \"Talk to a model\")", s.o.Config)
	case id == "" && len(ids) > 1:
		return nil, fmt.Errorf("several agent entries (%s): pick one", strings.Join(ids, ", "))
	case id == "":
		id = ids[0]
	case !slices.Contains(ids, id):
		return nil, fmt.Errorf("no agent entry %s (agent entries: %s)", quote(id), strings.Join(ids, ", "))
	}
	a, ok := s.o.Agents.Get(id)
	if !ok {
		e := states[id]
		msg := fmt.Sprintf("agent entry %s is %s", quote(id), e.State)
		if e.Error != "" {
			msg += ": " + e.Error
		}
		return nil, errors.New(msg)
	}
	// A keyless agent's turn fails at once, with its error event naming
	// the variable to set.
	return a, nil
}
