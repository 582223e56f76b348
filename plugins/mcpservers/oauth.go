package mcpservers

import (
	"fmt"
	"net"
	"net/url"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"
)

// OAuth settings of a client's file, mapped to the mcp-client entry's
// oauth: key (docs/rfc/0007-oauth.md, docs/rfc/0010-mcp-servers-files.md,
// "OAuth"): what has an equivalent there is written there; the rest (the
// endpoints, which the harness finds in the authorization server's
// metadata, audiences, token parameter names) is a note.

// oauthConfig is a server's OAuth settings in the entry's terms.
type oauthConfig struct {
	field     string // where the file says it: oauth, or Codex's scopes
	pos       Pos
	off       bool   // oauth: false
	strs      []pair // clientId, clientSecret, clientMetadataUrl, authServerMetadataUrl
	scopes    []string
	scopesPos Pos
	port      int // callbackPort
}

func (o *oauthConfig) empty() bool {
	return o == nil || (!o.off && len(o.strs) == 0 && len(o.scopes) == 0 && o.port == 0)
}

// oauthString are the fields whose value is the entry's string of the same
// name, by their name in the files (camelCase in the JSON formats,
// snake_case in Codex's).
var oauthString = map[string]string{
	"clientId": "clientId", "client_id": "clientId",
	"clientSecret": "clientSecret", "client_secret": "clientSecret",
	"clientMetadataUrl": "clientMetadataUrl", "client_metadata_url": "clientMetadataUrl",
	"authServerMetadataUrl": "authServerMetadataUrl", "auth_server_metadata_url": "authServerMetadataUrl",
}

// oauthNotes are OAuth fields with no equivalent, and why.
var oauthNotes = map[string]string{
	"authorizationUrl": "the harness finds the endpoints in the authorization server's metadata; if it must be told where that is, set authServerMetadataUrl in the entry's oauth:",
	"tokenUrl":         "the harness finds the endpoints in the authorization server's metadata; if it must be told where that is, set authServerMetadataUrl in the entry's oauth:",
	"registrationUrl":  "the harness registers where the authorization server's metadata says",
	"issuer":           "the harness takes the issuer from the authorization server's metadata",
	"audiences":        "the harness asks for a token for the server itself (its resource), not for other audiences",
	"tokenParamName":   "the harness sends the token in the Authorization header only",
}

// setScopes records scopes given as a list, or as one string of
// space-separated scopes.
func (o *oauthConfig) setScopes(scopes []string, pos Pos) {
	for _, s := range scopes {
		o.scopes = append(o.scopes, strings.Fields(s)...)
	}
	o.scopesPos = pos
}

// setRedirect takes the port of a loopback redirect URI as the callback
// port; another redirect has no equivalent (the harness's redirect is
// always a loopback one).
func (sv *server) setRedirect(o *oauthConfig, field string, v *value) {
	u, err := url.Parse(v.text)
	host := ""
	if err == nil {
		host = u.Hostname()
	}
	ip := net.ParseIP(host)
	loopback := host == "localhost" || (ip != nil && ip.IsLoopback())
	port, perr := strconv.Atoi(u.Port())
	if err != nil || !loopback || perr != nil || port < 1 || port > 65535 {
		sv.note(v.pos, field, "the harness's login redirect is always to a loopback port (callbackPort in the entry's oauth:); %q is not one, so it is not used", v.text)
		return
	}
	if u.Path != "" && u.Path != "/" && u.Path != "/callback" {
		sv.note(v.pos, field, "only its port is used (callbackPort %d): the harness's redirect path is its own", port)
	}
	o.port = port
}

// oauthNode is the entry's oauth: value.
func (sv *server) oauthNode(o *oauthConfig) *yaml.Node {
	if o.off {
		return plain("!!bool", "false", o.pos)
	}
	m := &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map", Line: o.pos.Line, Column: o.pos.Col}
	add := func(key string, v *yaml.Node) {
		m.Content = append(m.Content, plain("!!str", key, Pos{Line: v.Line, Col: v.Column}), v)
	}
	for _, key := range []string{"clientId", "clientSecret", "clientMetadataUrl", "authServerMetadataUrl"} {
		for _, p := range o.strs {
			if p.key != key {
				continue
			}
			n, err := sv.scalar(p.val, false)
			if err != nil {
				sv.problem(p.val.pos, "oauth."+key, "%v", err)
				continue
			}
			add(key, n)
		}
	}
	if len(o.scopes) > 0 {
		add("scopes", stringList(o.scopes, o.scopesPos))
	}
	if o.port > 0 {
		add("callbackPort", plain("!!int", strconv.Itoa(o.port), o.pos))
	}
	return m
}

// addOAuth writes the server's OAuth settings into its entry, when it
// has any: only a server reached by URL logs in.
func (sv *server) addOAuth(add func(string, *yaml.Node)) {
	o := sv.oauth
	if o.empty() {
		return
	}
	if sv.transport != "streamable-http" {
		sv.note(o.pos, o.field, "a stdio server does not log in by OAuth: its OAuth settings are not used")
		return
	}
	if !o.off {
		for _, h := range sv.headers {
			if strings.EqualFold(h.key, "Authorization") {
				// mcp-client refuses both: a login's token would replace
				// the header's.
				sv.note(o.pos, o.field, "the server is given a token in the Authorization header, so the harness does not log in to it: its OAuth settings are not used")
				return
			}
		}
	}
	add("oauth", sv.oauthNode(o))
}

// jsonOAuth reads the oauth object of a JSON server: Claude Code's
// (clientId, callbackPort, authServerMetadataUrl), VS Code's and Gemini
// CLI's (enabled, clientId, clientSecret, scopes, redirectUri, and the
// endpoints, which are notes).
func (f *fields) jsonOAuth() {
	n := f.get("oauth")
	if n == nil {
		return
	}
	sv := f.sv
	o := &oauthConfig{field: "oauth", pos: f.r.pos(n.off)}
	for _, m := range f.n.members {
		if m.key == "oauth" {
			o.pos = f.r.pos(m.keyOff) // notes point at the key, as the others do
		}
	}
	sv.oauth = o
	switch n.kind {
	case jBool:
		o.off = n.text == "false"
		return
	case jObject:
	default:
		f.wrong(n, "oauth", "an object (or false)")
		return
	}
	for _, m := range n.members {
		field, v, at := "oauth."+m.key, m.val, f.r.pos(m.val.off)
		if v.kind == jNull {
			continue
		}
		str := func() *value {
			if v.kind != jString {
				f.wrong(v, field, "a string")
				return nil
			}
			return &value{text: v.text, pos: at}
		}
		switch key, ok := oauthString[m.key]; {
		case ok:
			if s := str(); s != nil {
				o.strs = append(o.strs, pair{key: key, val: s})
			}
		case m.key == "enabled":
			if v.kind != jBool {
				f.wrong(v, field, "true or false")
				continue
			}
			o.off = v.text == "false"
		case m.key == "callbackPort":
			port, err := strconv.Atoi(v.text)
			if v.kind != jNumber || err != nil || port < 1 || port > 65535 {
				sv.problem(at, field, "must be a port, 1 to 65535")
				continue
			}
			o.port = port
		case m.key == "scopes":
			switch v.kind {
			case jString:
				o.setScopes([]string{v.text}, at)
			case jArray:
				var list []string
				for i, e := range v.elems {
					if e.kind != jString {
						f.wrong(e, fmt.Sprintf("%s[%d]", field, i), "a string")
						continue
					}
					list = append(list, e.text)
				}
				o.setScopes(list, at)
			default:
				f.wrong(v, field, "an array of strings")
			}
		case m.key == "redirectUri":
			if s := str(); s != nil {
				sv.setRedirect(o, field, s)
			}
		default:
			why, known := oauthNotes[m.key]
			if !known {
				why = "it is not an OAuth setting the harness knows"
			}
			sv.note(f.r.pos(m.keyOff), field, "%s", why)
		}
	}
	if o.off && (len(o.strs) > 0 || len(o.scopes) > 0 || o.port > 0) {
		o.strs, o.scopes, o.port = nil, nil, 0 // off wins, as in the clients
	}
}
