package web

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"sync"

	"github.com/harness-go/harness/internal/form"
	"github.com/harness-go/harness/plugins/tools"
)

// pageFront is the front (docs/rfc/0002) of the calls one session makes:
// what their tools ask goes to that session's page, one question at a
// time; their progress shows there.
type pageFront struct {
	s    *Server
	sess *session
}

func (s *Server) front(sess *session) *pageFront { return &pageFront{s: s, sess: sess} }

var _ tools.Front = (*pageFront)(nil)

// Offers answers forms and pages to open while the session has a page
// open; else nothing (a question is declined).
func (f *pageFront) Offers() tools.Offers {
	f.s.mu.Lock()
	defer f.s.mu.Unlock()
	if f.sess.streams == 0 {
		return tools.Offers{}
	}
	return tools.Offers{Elicitation: true, ElicitationURL: true, Progress: true}
}

// Notify shows a call's progress on the session's pages.
func (f *pageFront) Notify(_ context.Context, n tools.Notification) {
	if n.Method != tools.MethodProgress {
		return // a server's log messages reach the page through the log
	}
	var p struct {
		Progress float64  `json:"progress"`
		Total    *float64 `json:"total"`
		Message  string   `json:"message"`
	}
	if json.Unmarshal(n.Params, &p) != nil {
		return
	}
	m := f.s.redact(mustJSON(map[string]any{"type": "progress", "tool": n.Tool, "server": n.Server, "progress": p.Progress, "total": p.Total, "message": p.Message}))
	f.s.broadcast(m, f.sess)
}

// A question is one elicitation shown on a session's page.
type question struct {
	id      string
	view    json.RawMessage // what the page shows, redacted
	fields  []form.Field    // a form's fields; nil for a page to open
	url     string          // a page to open
	answers chan json.RawMessage
	once    sync.Once
	ended   chan struct{}
}

func (q *question) withdraw() { q.once.Do(func() { close(q.ended) }) }

// Ask shows an elicitation on the session's page and waits for the
// person's answer, or for the call to end. Without a page open it is
// declined at once: declining is an answer, never a wait.
func (f *pageFront) Ask(ctx context.Context, q tools.Question) (json.RawMessage, error) {
	if q.Method != tools.MethodElicit {
		return nil, tools.ErrUnsupported
	}
	var e struct {
		Mode            string          `json:"mode"`
		Message         string          `json:"message"`
		RequestedSchema json.RawMessage `json:"requestedSchema"`
		URL             string          `json:"url"`
	}
	if err := json.Unmarshal(q.Params, &e); err != nil {
		return nil, fmt.Errorf("the elicitation's params are not a JSON object: %v", err)
	}
	view := map[string]any{"who": asker(q), "message": e.Message, "mode": "form"}
	qu := &question{id: randomString(12), answers: make(chan json.RawMessage, 1), ended: make(chan struct{})}
	if e.Mode == "url" {
		u, err := url.Parse(e.URL)
		if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
			f.s.log.Warn("a page to open that is not a web address is declined", "tool", q.Tool, "url", e.URL)
			return tools.Declined(), nil
		}
		qu.url = u.String()
		view["mode"], view["url"], view["host"] = "url", qu.url, u.Hostname()
	} else {
		fields, err := form.Parse(e.RequestedSchema)
		if err != nil {
			f.s.log.Warn("a form the page cannot show is declined", "tool", q.Tool, "err", err)
			return tools.Declined(), nil
		}
		qu.fields = fields
		view["fields"] = fieldViews(fields)
	}
	view["id"] = qu.id

	s := f.s
	s.mu.Lock()
	if f.sess.streams == 0 || s.sessions[f.sess.id] != f.sess {
		s.mu.Unlock()
		s.log.Warn("a question is declined: no page of its session is open", "tool", q.Tool)
		return tools.Declined(), nil
	}
	qu.view = s.redact(mustJSON(view))
	f.sess.questions = append(f.sess.questions, qu)
	if len(f.sess.questions) == 1 {
		s.broadcastLocked(wrap("question", "question", qu.view), f.sess)
	}
	s.mu.Unlock()
	defer s.leave(f.sess, qu)

	select {
	case a := <-qu.answers:
		return a, nil
	case <-qu.ended:
		return json.RawMessage(`{"action":"cancel"}`), nil
	case <-ctx.Done():
		return nil, context.Cause(ctx)
	}
}

// leave takes a question off its session: when it was shown, the page is
// told and the next one is shown.
func (s *Server) leave(sess *session, qu *question) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for i, x := range sess.questions {
		if x != qu {
			continue
		}
		sess.questions = append(sess.questions[:i], sess.questions[i+1:]...)
		if i == 0 {
			s.broadcastLocked(mustJSON(map[string]string{"type": "question-end", "id": qu.id}), sess)
			if len(sess.questions) > 0 {
				s.broadcastLocked(wrap("question", "question", sess.questions[0].view), sess)
			}
		}
		return
	}
}

// questionViewLocked is the question a session's page shows, or nil.
func (s *Server) questionViewLocked(sess *session) json.RawMessage {
	if len(sess.questions) == 0 {
		return nil
	}
	return sess.questions[0].view
}

// answer is POST /api/answer {"id", "action", "fields"}: the person's
// answer to the question shown. An accepted form's fields are the text
// typed, checked by the console's rules (package internal/form); a field
// that does not fit is named with why, and the question stays.
func (s *Server) answer(w http.ResponseWriter, r *http.Request, sess *session) {
	var in struct {
		ID     string            `json:"id"`
		Action string            `json:"action"`
		Fields map[string]string `json:"fields"`
	}
	if err := readJSON(r, &in); err != nil {
		problem(w, http.StatusBadRequest, err.Error())
		return
	}
	s.mu.Lock()
	var qu *question
	if len(sess.questions) > 0 && sess.questions[0].id == in.ID {
		qu = sess.questions[0]
	}
	s.mu.Unlock()
	if qu == nil {
		problem(w, http.StatusGone, "the question is no longer asked (its call ended, or it was answered)")
		return
	}
	var res map[string]any
	switch in.Action {
	case "decline", "cancel":
		res = map[string]any{"action": in.Action}
	case "accept":
		res = map[string]any{"action": "accept"}
		if qu.url == "" {
			content, problems := form.Fill(qu.fields, in.Fields)
			if problems != nil {
				writeJSON(w, http.StatusUnprocessableEntity, map[string]any{"error": "some answers do not fit", "problems": problems})
				return
			}
			res["content"] = content
		}
	default:
		problem(w, http.StatusBadRequest, "action must be accept, decline or cancel, not "+quote(in.Action))
		return
	}
	select {
	case qu.answers <- mustJSON(res):
	default:
		problem(w, http.StatusGone, "the question was answered already")
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{})
}

// asker says who asks, for a person.
func asker(q tools.Question) string {
	who := "a tool"
	if q.Server != "" {
		who = "server " + quote(q.Server)
	}
	if q.Tool != "" {
		who += " (tool " + q.Tool + ")"
	}
	return who
}

// fieldView is a form's field as the page draws it.
type fieldView struct {
	Name        string        `json:"name"`
	Label       string        `json:"label"`
	Description string        `json:"description,omitempty"`
	Kind        string        `json:"kind"`
	Format      string        `json:"format,omitempty"`
	Required    bool          `json:"required"`
	Default     string        `json:"default,omitempty"`
	DefaultList []string      `json:"defaultList,omitempty"`
	Hint        string        `json:"hint"`
	Options     []form.Option `json:"options,omitempty"`
	Min         *float64      `json:"min,omitempty"`
	Max         *float64      `json:"max,omitempty"`
	MaxLength   int           `json:"maxLength,omitempty"`
}

func fieldViews(fields []form.Field) []fieldView {
	out := make([]fieldView, len(fields))
	for i, f := range fields {
		v := fieldView{Name: f.Name, Label: f.DisplayName(), Description: f.Description, Kind: f.Kind, Format: f.Format,
			Required: f.Required, Hint: f.Hint(false), Options: f.Options, Min: f.Minimum, Max: f.Maximum}
		if f.MaxLength > 0 {
			v.MaxLength = f.MaxLength
		}
		// The default as the field takes it: a choice's value (the page
		// selects it), a yes or no, the text.
		switch d := f.Default.(type) {
		case nil:
		case string:
			v.Default = d
		case bool:
			v.Default = f.DefaultText()
		case []any:
			for _, x := range d {
				v.DefaultList = append(v.DefaultList, fmt.Sprint(x))
			}
		default:
			v.Default = string(mustJSON(d))
		}
		out[i] = v
	}
	return out
}
