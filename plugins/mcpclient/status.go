package mcpclient

import (
	"fmt"
	"maps"
	"net/url"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/harness-go/harness/host/secret"
	"github.com/harness-go/harness/internal/oauth"
	"github.com/harness-go/harness/internal/safe"
	"github.com/harness-go/harness/plugins/tools"
)

// NamePair maps a public tool name to the server's own.
type NamePair struct {
	Public string `json:"public"`
	Raw    string `json:"raw"`
}

// Status describes the server for `harness status`. Values of env and
// headers are never shown.
type Status struct {
	ServerName string            `json:"serverName"`
	Transport  string            `json:"transport"`
	Command    string            `json:"command,omitempty"`
	Args       []string          `json:"args,omitempty"`
	Cwd        string            `json:"cwd,omitempty"`
	URL        string            `json:"url,omitempty"`
	Env        map[string]string `json:"env,omitempty"`
	Headers    map[string]string `json:"headers,omitempty"`
	Protocol   string            `json:"protocol"`
	// The live settings, as they apply now.
	ToolCallTimeoutMs int       `json:"toolCallTimeoutMs"`
	MaxResultBytes    int       `json:"maxResultBytes,omitempty"`
	EnabledTools      []string  `json:"enabledTools,omitempty"`
	DisabledTools     []string  `json:"disabledTools,omitempty"`
	Reconnect         Reconnect `json:"reconnect"`
	Roots             []string  `json:"roots,omitempty"`

	// Phase is configured (not applied yet), connecting, connected,
	// reconnecting, lost (replaced: a successor serves), failed or stopped
	// (disposed). Failed and stopped show no pid, connection or tools.
	Phase           string  `json:"phase"`
	PID             int     `json:"pid,omitempty"`
	Server          *Server `json:"server,omitempty"`
	ProtocolVersion string  `json:"protocolVersion,omitempty"`
	// Revision says how the session speaks: "2025-11-25 (initialize
	// handshake)" or "2026-07-28 (stateless)".
	Revision    string `json:"revision,omitempty"`
	ToolCount   int    `json:"toolCount"`
	HiddenTools int    `json:"hiddenTools,omitempty"` // left out by enabledTools/disabledTools
	// LeftOut are the tools left out because their definition is invalid
	// (an x-mcp-header that breaks SEP-2243's rules), by the server's name:
	// why.
	LeftOut map[string]string `json:"leftOut,omitempty"`
	Tools   map[string]string `json:"tools"` // public name → the server's name
	// Resources, Templates and Prompts count what the server's resources
	// and prompts registered (docs/rfc/0008-resources-prompts.md).
	Resources int        `json:"resources"`
	Templates int        `json:"templates"`
	Prompts   int        `json:"prompts"`
	Syncs     int        `json:"syncs"`
	LastSync  *time.Time `json:"lastSync,omitempty"`
	SyncError string     `json:"syncError,omitempty"`
	Stderr    []string   `json:"stderr,omitempty"`

	// Connection history.
	ConnectedSince *time.Time `json:"connectedSince,omitempty"`
	Reconnects     int        `json:"reconnects"`
	// While reconnecting: the attempt under way or next, of how many, when
	// the next starts, and why the last one failed (or why the connection
	// was lost).
	Attempt     int        `json:"attempt,omitempty"`
	MaxAttempts int        `json:"maxAttempts,omitempty"`
	NextTry     *time.Time `json:"nextTry,omitempty"`
	LastError   string     `json:"lastError,omitempty"`

	// OAuth is the login of an entry that uses OAuth (nil: none).
	OAuth *OAuthStatus `json:"oauth,omitempty"`
}

// Server is what a server says about itself.
type Server struct {
	Name    string `json:"name"`
	Version string `json:"version"`
}

// Status reports the live state of the instance. Values of env and headers
// are never shown, and every string is redacted with the host's secret set:
// a secret may sit in the command line, the URL, the server's own words
// (serverInfo, a sync error, stderr).
func (p *Plugin) Status() any {
	s := p.sup.Load()
	cfg := &p.Config
	red := secret.New() // before apply: the entry's own secrets
	red.Add(slices.Collect(maps.Values(p.Env))...)
	red.Add(slices.Collect(maps.Values(p.Headers))...)
	if s != nil {
		cfg, red = s.config(), s.secrets
	}
	args := secret.RedactArgs(cfg.Args) // a short credential too, by its place
	for i, a := range args {
		args[i] = red.Redact(a)
	}
	st := &Status{
		ServerName:        cfg.ServerName,
		Transport:         cfg.Transport,
		Command:           red.Redact(cfg.Command),
		Args:              args,
		Cwd:               red.Redact(cfg.Cwd),
		Env:               redacted(cfg.Env),
		Headers:           redacted(cfg.Headers),
		Protocol:          cfg.Protocol,
		ToolCallTimeoutMs: cfg.ToolCallTimeoutMs,
		MaxResultBytes:    cfg.MaxResultBytes,
		EnabledTools:      cfg.EnabledTools,
		DisabledTools:     cfg.DisabledTools,
		Reconnect:         cfg.Reconnect,
		Roots:             cfg.Roots,
		Phase:             "configured",
		Tools:             map[string]string{},
	}
	if u, err := url.Parse(cfg.URL); err == nil && cfg.URL != "" {
		st.URL = red.Redact(secret.RedactURL(u.Redacted()))
	}
	if s != nil {
		s.status(st, red)
		if st.OAuth = s.auth.status(cfg, st.Phase == phaseNeedsLogin.String()); st.OAuth != nil {
			st.OAuth.LastRefreshError = red.Redact(st.OAuth.LastRefreshError)
			st.OAuth.Note = red.Redact(st.OAuth.Note)
		}
	}
	return st
}

// oauthLine shows the login of an OAuth entry.
func (s *Status) oauthLine() string {
	o := s.OAuth
	if !o.LoggedIn {
		line := "oauth: not logged in"
		switch o.Grant {
		case oauth.GrantClientCredentials:
			line = "oauth: client credentials, no token yet"
		case oauth.GrantJWTBearer:
			line = "oauth: workload identity (jwt bearer), no token yet"
			if o.IdP != "" {
				line = "oauth: enterprise-managed (through the IdP " + safe.Line(o.IdP) + "), no token yet"
			}
		}
		if o.Issuer != "" {
			line += " (issuer " + safe.Line(o.Issuer) + ")"
		}
		line += o.idpLoginPart()
		if o.LastRefreshError != "" {
			line += "; last refresh error: " + safe.Line(o.LastRefreshError)
		}
		if o.Note != "" {
			line += "; " + safe.Line(o.Note)
		}
		return line
	}
	line := "oauth: logged in at " + safe.Line(o.Issuer)
	switch o.Grant {
	case oauth.GrantClientCredentials:
		line = "oauth: a client credentials token of " + safe.Line(o.Issuer)
	case oauth.GrantJWTBearer:
		line = "oauth: a workload identity token of " + safe.Line(o.Issuer)
		if o.IdP != "" {
			line = "oauth: an enterprise-managed token of " + safe.Line(o.Issuer) + " (through the IdP " + safe.Line(o.IdP) + ")"
		}
	}
	if len(o.Scopes) > 0 {
		line += ", scopes " + safe.Line(strings.Join(o.Scopes, " "))
	}
	if o.DPoP {
		line += ", DPoP-bound"
	}
	switch {
	case o.Expiry == nil:
		line += ", the token does not expire"
	case o.Expiry.Before(time.Now()):
		line += ", the token expired at " + o.Expiry.Local().Format(time.DateTime)
	default:
		line += ", the token expires at " + o.Expiry.Local().Format(time.DateTime)
	}
	if o.Refreshable {
		line += " (refreshable)"
	}
	line += o.idpLoginPart()
	if o.LastRefreshError != "" {
		line += "; last refresh error: " + safe.Line(o.LastRefreshError)
	}
	if o.Note != "" {
		line += "; " + safe.Line(o.Note)
	}
	return line
}

// settingsLine shows the live settings (Live), as the instance uses them
// now: an edit of them shows here without a restart.
func (s *Status) settingsLine() string {
	line := fmt.Sprintf("settings: toolCallTimeoutMs %d", s.ToolCallTimeoutMs)
	if s.MaxResultBytes > 0 {
		line += fmt.Sprintf(", maxResultBytes %d", s.MaxResultBytes)
	}
	for _, f := range []struct {
		key      string
		patterns []string
	}{{"enabledTools", s.EnabledTools}, {"disabledTools", s.DisabledTools}} {
		if len(f.patterns) > 0 {
			line += fmt.Sprintf(", %s %s", f.key, safe.Line(strings.Join(f.patterns, " ")))
		}
	}
	if r := s.Reconnect; r.Enabled {
		line += fmt.Sprintf(", reconnect %d attempts, %d–%d ms apart", r.MaxAttempts, r.InitialDelayMs, r.MaxDelayMs)
	} else {
		line += ", reconnect off"
	}
	return line
}

// StatusLines renders the status for people, with everything that came from
// the server escaped.
func (s *Status) StatusLines() []string {
	where := s.URL
	if s.Transport == TransportStdio {
		where = strings.TrimSpace(s.Command + " " + strings.Join(s.Args, " "))
	}
	lines := []string{fmt.Sprintf("server %s via %s: %s", s.ServerName, s.Transport, safe.Line(where))}
	if s.Server != nil {
		lines = append(lines, fmt.Sprintf("serverInfo: %s %s, protocol %s", safe.Line(s.Server.Name), safe.Line(s.Server.Version), revision(s.ProtocolVersion)))
	}
	for _, m := range []struct {
		label string
		keys  map[string]string
	}{{"env", s.Env}, {"headers", s.Headers}} {
		if len(m.keys) > 0 {
			keys := make([]string, 0, len(m.keys))
			for k := range m.keys {
				keys = append(keys, safe.Line(k)+"=<redacted>")
			}
			sort.Strings(keys)
			lines = append(lines, m.label+": "+strings.Join(keys, " "))
		}
	}
	lines = append(lines, s.settingsLine())
	if s.OAuth != nil {
		lines = append(lines, s.oauthLine())
	}
	if s.PID != 0 {
		lines = append(lines, fmt.Sprintf("pid %d, phase %s", s.PID, s.Phase))
	} else {
		lines = append(lines, "phase "+s.Phase)
	}
	if s.Attempt > 0 {
		line := fmt.Sprintf("reconnecting: attempt %d of %d", s.Attempt, s.MaxAttempts)
		if s.NextTry != nil {
			line += ", next at " + s.NextTry.Format(time.TimeOnly)
		}
		if s.LastError != "" {
			line += "; last error: " + safe.Line(s.LastError)
		}
		lines = append(lines, line)
	}
	if s.Reconnects > 0 || s.ConnectedSince != nil {
		line := fmt.Sprintf("reconnects: %d", s.Reconnects)
		if s.ConnectedSince != nil {
			line += ", connected since " + s.ConnectedSince.Format(time.DateTime)
		}
		lines = append(lines, line)
	}
	for _, raw := range sortedKeys(s.LeftOut) {
		lines = append(lines, fmt.Sprintf("left out: %s: %s", safe.Line(raw), safe.Line(s.LeftOut[raw])))
	}
	if s.HiddenTools > 0 {
		lines = append(lines, fmt.Sprintf("tools: %d (%d more left out by enabledTools/disabledTools)", len(s.Tools), s.HiddenTools))
	} else {
		lines = append(lines, fmt.Sprintf("tools: %d", len(s.Tools)))
	}
	if s.Resources > 0 || s.Templates > 0 || s.Prompts > 0 {
		lines = append(lines, fmt.Sprintf("resources: %d, templates: %d, prompts: %d", s.Resources, s.Templates, s.Prompts))
	}
	publics := make([]string, 0, len(s.Tools))
	for p := range s.Tools {
		publics = append(publics, p)
	}
	sort.Strings(publics)
	for _, p := range publics {
		if raw := s.Tools[p]; p == PublicPlain(s.ServerName, raw) {
			lines = append(lines, "  "+p)
		} else {
			lines = append(lines, fmt.Sprintf("  %s ← %s", p, safe.Line(raw)))
		}
	}
	if s.SyncError != "" {
		lines = append(lines, "last sync failed: "+safe.Line(s.SyncError))
	}
	if len(s.Stderr) > 0 {
		lines = append(lines, "stderr (last lines):")
		for _, l := range s.Stderr {
			lines = append(lines, "  "+safe.Line(l))
		}
	}
	return lines
}

// status fills the live part of st.
func (s *supervisor) status(st *Status, red *secret.Set) {
	s.mu.Lock()
	defer s.mu.Unlock()
	st.Phase = s.phase.String()
	st.Syncs = s.syncs
	st.SyncError = red.Redact(s.syncErr)
	if !s.lastSync.IsZero() {
		t := s.lastSync
		st.LastSync = &t
	}
	// What runs and what is registered: nothing once the instance has
	// failed or was disposed (the last words, stderr, stay below).
	live := s.phase != phaseFailed && s.phase != phaseStopped
	if s.gen != nil && live {
		for _, n := range s.gen.names {
			st.Tools[n.Public] = n.Raw
		}
		st.ToolCount = len(s.gen.names)
		st.HiddenTools = s.gen.hidden
		st.LeftOut = s.gen.leftOut
	}
	if live {
		// From the registries, as they are now: what readers see.
		if s.resSet != nil {
			st.Resources, st.Templates = s.resReg.Counts(s.server)
		}
		if s.promptSet != nil {
			st.Prompts = s.promptReg.Count(s.server)
		}
	}
	st.Reconnects = s.reconnects
	if s.sess != nil && live {
		t := s.since
		st.ConnectedSince = &t
	}
	if s.phase == phaseReconnecting && s.attempt > 0 {
		st.Attempt, st.MaxAttempts = s.attempt, st.Reconnect.MaxAttempts
		if !s.nextTry.IsZero() && s.nextTry.After(time.Now()) {
			t := s.nextTry
			st.NextTry = &t
		}
	}
	if s.sess == nil && s.lastErr != "" {
		st.LastError = red.Redact(s.lastErr)
	}
	sess := s.last
	if sess == nil {
		return
	}
	if info, proto := sess.serverInfo(); proto != "" && s.sess != nil {
		st.Server = &Server{Name: red.Redact(info.Name), Version: red.Redact(info.Version)}
		st.ProtocolVersion = red.Redact(proto)
		st.Revision = revision(proto)
	}
	if sess.stdio != nil {
		if s.sess != nil && live {
			st.PID = sess.pid() // a lost or stopped server's pid is gone, or someone else's
		}
		st.Stderr = sess.stderr() // redacted as it was read; a lost server's last words
	}
}

// revision names how a protocol version is spoken.
func revision(proto string) string {
	if mcp.IsModernProtocol(proto) {
		return proto + " (stateless)"
	}
	return proto + " (initialize handshake)"
}

// ClaimTool tells the CLI, of a tool that is not registered, whether it
// would be this entry's (see [tools.Claimer]).
func (s *Status) ClaimTool(name string) (who string, mine bool) {
	server, ok := ServerOf(name)
	if !ok {
		return "", false
	}
	return fmt.Sprintf("serverName %q", server), server == s.ServerName
}

var _ tools.Claimer = (*Status)(nil)

// idpLoginPart is what an oauth line says of the harness's own login at
// the IdP ("" when the entry gives its own ID token).
func (o *OAuthStatus) idpLoginPart() string {
	l := o.IdPLogin
	switch {
	case l == nil:
		return ""
	case l.User == "" && l.LastRefreshError != "":
		return "; nobody is logged in at the IdP (" + safe.Line(l.LastRefreshError) + ")"
	case l.User == "":
		return "; nobody is logged in at the IdP"
	}
	part := "; at the IdP as " + safe.Line(l.User)
	if l.Refreshable {
		part += " (refreshable)"
	} else if l.Expiry != nil {
		part += ", until " + l.Expiry.Local().Format(time.DateTime)
	}
	return part
}
