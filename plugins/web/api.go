package web

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"time"

	"github.com/harness-go/harness/internal/completion"
	"github.com/harness-go/harness/plugins/prompts"
	"github.com/harness-go/harness/plugins/resources"
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

// read is POST /api/read {"server", "uri"}: the resource's contents, as
// `harness read` gives them (text, or a blob in base64), and how long the
// read took. The contents are the server's words: not redacted.
func (s *Server) read(w http.ResponseWriter, r *http.Request) {
	if s.o.Resources == nil {
		problem(w, http.StatusNotFound, "this page has no resources")
		return
	}
	var in struct {
		Server string `json:"server"`
		URI    string `json:"uri"`
	}
	if err := readJSON(r, &in); err != nil {
		problem(w, http.StatusBadRequest, err.Error())
		return
	}
	if in.URI == "" {
		problem(w, http.StatusBadRequest, "a read needs a uri")
		return
	}
	if !s.o.Resources.Has(in.Server) {
		problem(w, http.StatusNotFound, "no server "+quote(in.Server)+" offers resources")
		return
	}
	start := time.Now()
	res, err := s.o.Resources.Read(r.Context(), in.Server, in.URI)
	if err != nil {
		problem(w, http.StatusBadGateway, s.secrets.Redact(err.Error()))
		return
	}
	contents := res.Contents
	if contents == nil {
		contents = []resources.Content{}
	}
	writeJSON(w, http.StatusOK, map[string]any{"contents": contents, "ms": time.Since(start).Milliseconds()})
}

// completeTimeout bounds a server's suggestions for a field being typed:
// later ones are of a value the person has gone on typing.
const completeTimeout = 2 * time.Second

// completePrompt is POST /api/prompt/complete {"name", "argument",
// "value", "arguments"}: the values the prompt's server suggests for the
// argument (completion/complete, the other arguments as its context), as
// {"values", "total", "hasMore"}; none from a prompt that offers none.
func (s *Server) completePrompt(w http.ResponseWriter, r *http.Request) {
	if s.o.Prompts == nil {
		problem(w, http.StatusNotFound, "this page has no prompts")
		return
	}
	var in struct {
		Name      string            `json:"name"`
		Argument  string            `json:"argument"`
		Value     string            `json:"value"`
		Arguments map[string]string `json:"arguments"`
	}
	if err := readJSON(r, &in); err != nil {
		problem(w, http.StatusBadRequest, err.Error())
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), completeTimeout)
	defer cancel()
	c, err := s.o.Prompts.CompleteArgument(ctx, in.Name, in.Argument, in.Value, in.Arguments)
	s.writeCompletion(w, c, err, errors.Is(err, prompts.ErrUnknown), "unknown prompt "+quote(in.Name))
}

// completeTemplate is POST /api/template/complete {"server",
// "uriTemplate", "argument", "value", "arguments"}: the values the server
// suggests for a variable of its template (completion/complete, the other
// variables as its context), as {"values", "total", "hasMore"}; none from
// a server that offers none.
func (s *Server) completeTemplate(w http.ResponseWriter, r *http.Request) {
	if s.o.Resources == nil {
		problem(w, http.StatusNotFound, "this page has no resources")
		return
	}
	var in struct {
		Server      string            `json:"server"`
		URITemplate string            `json:"uriTemplate"`
		Argument    string            `json:"argument"`
		Value       string            `json:"value"`
		Arguments   map[string]string `json:"arguments"`
	}
	if err := readJSON(r, &in); err != nil {
		problem(w, http.StatusBadRequest, err.Error())
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), completeTimeout)
	defer cancel()
	c, err := s.o.Resources.CompleteTemplate(ctx, in.Server, in.URITemplate, in.Argument, in.Value, in.Arguments)
	s.writeCompletion(w, c, err, errors.Is(err, resources.ErrUnknownServer), "unknown server "+quote(in.Server))
}

// writeCompletion answers a completion: c, or the page's error for err
// (unknown: a 404 saying notFound).
func (s *Server) writeCompletion(w http.ResponseWriter, c completion.Result, err error, unknown bool, notFound string) {
	switch {
	case unknown:
		problem(w, http.StatusNotFound, notFound)
	case err != nil:
		problem(w, http.StatusBadGateway, s.secrets.Redact(err.Error()))
	default:
		writeJSON(w, http.StatusOK, c)
	}
}

// prompt is POST /api/prompt {"name", "arguments"}: the prompt's messages
// for those arguments, as `harness prompt` gives them. A missing required
// argument is the page's error, naming it, before the server is asked.
func (s *Server) prompt(w http.ResponseWriter, r *http.Request) {
	if s.o.Prompts == nil {
		problem(w, http.StatusNotFound, "this page has no prompts")
		return
	}
	var in struct {
		Name      string            `json:"name"`
		Arguments map[string]string `json:"arguments"`
	}
	if err := readJSON(r, &in); err != nil {
		problem(w, http.StatusBadRequest, err.Error())
		return
	}
	p, ok := s.o.Prompts.Lookup(in.Name)
	if !ok {
		problem(w, http.StatusNotFound, "unknown prompt "+quote(in.Name))
		return
	}
	for _, a := range p.Arguments {
		if a.Required && in.Arguments[a.Name] == "" {
			problem(w, http.StatusBadRequest, "the prompt "+quote(in.Name)+" needs the argument "+quote(a.Name))
			return
		}
	}
	start := time.Now()
	res, err := s.o.Prompts.Get(r.Context(), in.Name, in.Arguments)
	if err != nil {
		problem(w, http.StatusBadGateway, s.secrets.Redact(err.Error()))
		return
	}
	msgs := res.Messages
	if msgs == nil {
		msgs = []prompts.Message{}
	}
	writeJSON(w, http.StatusOK, map[string]any{"description": res.Description, "messages": msgs, "ms": time.Since(start).Milliseconds()})
}
