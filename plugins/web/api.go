package web

import (
	"encoding/json"
	"net/http"
	"time"

	"github.com/harness-go/harness/plugins/tools"
)

// restart is POST /api/restart {"id"}: the host restarts the entry, as
// the console's /restart does.
func (s *Server) restart(w http.ResponseWriter, r *http.Request) {
	var in struct {
		ID string `json:"id"`
	}
	if err := readJSON(r, &in); err != nil {
		problem(w, http.StatusBadRequest, err.Error())
		return
	}
	if in.ID != "" && in.ID == s.o.Self {
		problem(w, http.StatusConflict, "this page is served by entry "+quote(in.ID)+": restart it from the console (/restart) or by editing cordis.yml")
		return
	}
	if err := s.o.Host.Restart(r.Context(), in.ID); err != nil {
		problem(w, http.StatusNotFound, s.secrets.Redact(err.Error()))
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{})
}

// call is POST /api/call {"name", "arguments"}: the registry runs the
// tool, as `harness call` does, and the answer is what the model sees
// (text, isError) and what the server sent (raw). What the tool asks meanwhile goes
// to the page (the session's front); the call ends with the request (the
// page's Cancel aborts it, and the tool's server is told).
func (s *Server) call(w http.ResponseWriter, r *http.Request, sess *session) {
	var in struct {
		Name      string          `json:"name"`
		Arguments json.RawMessage `json:"arguments"`
	}
	if err := readJSON(r, &in); err != nil {
		problem(w, http.StatusBadRequest, err.Error())
		return
	}
	if _, ok := s.o.Tools.Lookup(in.Name); !ok {
		problem(w, http.StatusNotFound, "unknown tool "+quote(in.Name))
		return
	}
	ctx := tools.WithFront(r.Context(), s.front(sess))
	start := time.Now()
	res := s.o.Tools.Execute(ctx, in.Name, tools.ObjectArgs(in.Arguments))
	raw := res.Raw
	if !json.Valid(raw) {
		raw = nil
	}
	// The result is the tool's words, as `harness call` prints them: not
	// redacted.
	writeJSON(w, http.StatusOK, map[string]any{"text": res.Text, "isError": res.IsError, "raw": raw, "ms": time.Since(start).Milliseconds()})
}

// quote is s in double quotes, escaped as Go does.
func quote(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}
