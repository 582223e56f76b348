package mcpclient

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"sort"
	"strings"
	"time"

	"github.com/harness-go/harness/host"
	"github.com/harness-go/harness/plugins/tools"
)

// Transports.
const (
	TransportStdio = "stdio"
	TransportHTTP  = "streamable-http"
)

// Protocol strategies (docs/rfc/0003-mcp-client.md, "Protocol strategy").
const (
	// ProtocolAuto performs the initialize handshake (protocol 2025-11-25,
	// which every server of that era answers at once) and falls back to the
	// stateless protocol of 2026-07-28 (server/discover) when the server
	// refuses the handshake: a JSON-RPC error saying the method, the
	// request or its version is not what it serves, or an HTTP 4xx whose
	// body is not JSON-RPC. A transport failure is not a refusal.
	ProtocolAuto = "auto"
	// ProtocolLegacy performs the initialize handshake only.
	ProtocolLegacy = "legacy"
	// ProtocolModern probes with server/discover first and falls back to
	// the handshake when the server refuses it.
	ProtocolModern = "modern"
)

// Defaults.
const (
	DefaultToolCallTimeout = 60 * time.Second
	DefaultStartupTimeout  = 30 * time.Second
)

var (
	serverNamePattern = regexp.MustCompile(`^[A-Za-z0-9_-]{1,32}$`)
	headerName        = regexp.MustCompile("^[!#$%&'*+.^_`|~0-9A-Za-z-]+$")
)

// Config is the configuration of one MCP server, as in the seeds' table, plus
// two keys of ours (startupTimeoutMs, protocol). Which keys apply depends on
// transport; a key of the other transport is an error.
type Config struct {
	// Transport is "stdio" or "streamable-http".
	Transport string `yaml:"transport" json:"transport" required:"true" enum:"stdio,streamable-http" desc:"How to reach the server."`
	// ServerName namespaces the server's tools: mcp__<serverName>__<tool>.
	ServerName string `yaml:"serverName" json:"serverName" required:"true" desc:"Namespace of the server's tools (mcp__<serverName>__<tool>): [A-Za-z0-9_-]{1,32}, no __, no leading or trailing _, unique among live instances."`

	// Command is the executable of a stdio server, looked up on PATH.
	Command string `yaml:"command" json:"command,omitempty" desc:"stdio: the executable, looked up on PATH."`
	// Args are passed to Command.
	Args []string `yaml:"args" json:"args,omitempty" secret:"args" desc:"stdio: arguments of the command."`
	// Env is added on top of the scrubbed ambient environment.
	Env map[string]string `yaml:"env" json:"-" secret:"env" desc:"stdio: variables added on top of the ambient environment, from which every variable that looks like a credential is removed (README: the scrub table)."`
	// Cwd is the child's working directory; relative to cordis.yml's
	// directory; empty means the harness's working directory.
	Cwd string `yaml:"cwd" json:"cwd,omitempty" desc:"stdio: working directory; relative to cordis.yml's directory; empty means the harness's working directory."`

	// URL is the endpoint of a Streamable HTTP server.
	URL string `yaml:"url" json:"url,omitempty" secret:"url" desc:"streamable-http: the server's endpoint."`
	// Headers are sent with every request.
	Headers map[string]string `yaml:"headers" json:"-" secret:"headers" desc:"streamable-http: headers sent with every request (e.g. Authorization)."`
	// OAuth is how the entry logs in to a server that asks for OAuth
	// (oauth.go): absent, on when a 401 carries OAuth metadata; false,
	// off.
	OAuth OAuth `yaml:"oauth" json:"oauth,omitzero" desc:"streamable-http: OAuth login (harness login ID): false turns it off; a mapping of grant, clientId, clientSecret, privateKey, privateKeyFile, clientMetadataUrl, scopes, callbackPort, authServerMetadataUrl; absent: on when the server's 401 carries OAuth metadata."`

	// ToolCallTimeoutMs bounds one tools/call (default 60000).
	ToolCallTimeoutMs int `yaml:"toolCallTimeoutMs" json:"toolCallTimeoutMs" desc:"Timeout of one tool call in milliseconds (default 60000)."`
	// StartupTimeoutMs bounds connecting and the first listing (default
	// 30000).
	StartupTimeoutMs int `yaml:"startupTimeoutMs" json:"startupTimeoutMs" desc:"Timeout of each connection (connecting and its tools/list, at start and at each reconnect) and of each re-listing, in milliseconds (default 30000)."`
	// Protocol is the handshake strategy: auto (default), legacy or modern.
	Protocol string `yaml:"protocol" json:"protocol" enum:"auto,legacy,modern" desc:"Which MCP revision to speak: auto (the initialize handshake of 2025-11-25, and 2026-07-28's server/discover when the server refuses it), legacy (initialize only) or modern (server/discover first, initialize when refused)."`
	// Roots are the folders the server may work in, answered to
	// roots/list: paths (relative to cordis.yml's folder) or file:// URIs.
	// None: the capability is not declared.
	Roots []string `yaml:"roots" json:"roots,omitempty" desc:"Folders the server may work in, answered to its roots/list: paths relative to cordis.yml's folder, or file:// URIs (none: roots are not offered). Live: an edit tells the server."`

	// EnabledTools, when set, registers only the tools whose raw names match
	// one of these patterns (path.Match syntax: * and ? wildcards).
	EnabledTools []string `yaml:"enabledTools" json:"enabledTools,omitempty" desc:"Register only the server's tools whose names match one of these patterns (* and ? wildcards)."`
	// DisabledTools never registers the tools that match, after EnabledTools.
	DisabledTools []string `yaml:"disabledTools" json:"disabledTools,omitempty" desc:"Never register the server's tools whose names match one of these patterns (* and ? wildcards)."`
	// MaxResultBytes cuts a tool result's text to this many bytes, with a
	// note saying so; 0 keeps results whole.
	MaxResultBytes int `yaml:"maxResultBytes" json:"maxResultBytes,omitempty" desc:"Cut a tool result's text to this many bytes, with a note saying so (0: no limit)."`
	// Reconnect says whether and how a server that was ready and went away
	// is connected again.
	Reconnect Reconnect `yaml:"reconnect" json:"reconnect" desc:"Connect again to a server that was ready and went away (a stdio server that exited, an HTTP server that refused or reset)."`
	// AlwaysLoad marks every tool of the server so that an agent in tool
	// search mode sends it with every request (tools.Tool.AlwaysLoad).
	AlwaysLoad bool `yaml:"alwaysLoad" json:"alwaysLoad,omitempty" desc:"An agent in tool search mode always sends this server's tools, instead of waiting for search_tools to find them (default false)."`
	// Resources says whether the server's resources and templates are
	// bridged to the resources service; unset: when the server declares
	// them.
	Resources *bool `yaml:"resources" json:"resources,omitempty" desc:"Bridge the server's resources and resource templates (true|false; default: when the server declares them)."`
	// Prompts says whether the server's prompts are bridged to the prompts
	// service; unset: when the server declares them.
	Prompts *bool `yaml:"prompts" json:"prompts,omitempty" desc:"Bridge the server's prompts as mcp__<serverName>__<prompt> (true|false; default: when the server declares them)."`

	// wrap, when set, wraps the HTTP client's transport (the entry's OAuth,
	// set per connection by the supervisor).
	wrap func(http.RoundTripper) http.RoundTripper
}

// Reconnect is the reconnect policy of one server: after a loss, attempt n
// waits initialDelayMs × 2^(n−1), at most maxDelayMs; after maxAttempts
// failed attempts the entry fails. A connection that stays up maxDelayMs
// starts the count again.
type Reconnect struct {
	Enabled        bool `yaml:"enabled" json:"enabled" desc:"Reconnect at all (default true); false: the entry fails when its server goes away."`
	InitialDelayMs int  `yaml:"initialDelayMs" json:"initialDelayMs" desc:"Wait before the first attempt, in milliseconds (default 500); doubled at each attempt."`
	MaxDelayMs     int  `yaml:"maxDelayMs" json:"maxDelayMs" desc:"The longest wait between attempts, in milliseconds (default 30000); a connection up that long starts the count again."`
	MaxAttempts    int  `yaml:"maxAttempts" json:"maxAttempts" desc:"Attempts before the entry fails (default 10)."`
}

// Live are the keys that apply to a running instance without a restart.
var Live = []string{"toolCallTimeoutMs", "maxResultBytes", "enabledTools", "disabledTools", "reconnect", "roots"}

// defaultConfig returns the configuration before cordis.yml is applied.
func defaultConfig() Config {
	return Config{
		ToolCallTimeoutMs: int(DefaultToolCallTimeout / time.Millisecond),
		StartupTimeoutMs:  int(DefaultStartupTimeout / time.Millisecond),
		Protocol:          ProtocolAuto,
		Reconnect:         Reconnect{Enabled: true, InitialDelayMs: 500, MaxDelayMs: 30000, MaxAttempts: 10},
	}
}

// Validate checks the configuration; every problem is reported, each with the
// key it is about.
func (c *Config) Validate() error {
	var errs []error
	bad := func(field, format string, args ...any) {
		errs = append(errs, host.FieldErrorf(field, format, args...))
	}

	switch {
	case c.ServerName == "":
		bad("serverName", "is required")
	case !serverNamePattern.MatchString(c.ServerName):
		bad("serverName", "%q must match ^[A-Za-z0-9_-]{1,32}$", c.ServerName)
	case strings.Contains(c.ServerName, "__"):
		bad("serverName", "%q must not contain \"__\": it separates the server from the tool in mcp__<server>__<tool>", c.ServerName)
	case strings.HasPrefix(c.ServerName, "_") || strings.HasSuffix(c.ServerName, "_"):
		bad("serverName", "%q must not start or end with \"_\": mcp__<server>__<tool> would be ambiguous", c.ServerName)
	}

	stdioOnly := map[string]bool{"command": c.Command != "", "args": len(c.Args) > 0, "env": len(c.Env) > 0, "cwd": c.Cwd != ""}
	httpOnly := map[string]bool{"url": c.URL != "", "headers": len(c.Headers) > 0}
	misplaced := func(keys map[string]bool, transport string) {
		names := make([]string, 0, len(keys))
		for k, set := range keys {
			if set {
				names = append(names, k)
			}
		}
		sort.Strings(names)
		for _, k := range names {
			bad(k, "is only for transport %q", transport)
		}
	}

	switch c.Transport {
	case TransportStdio:
		if c.OAuth.Set {
			bad("oauth", "is only for transport %q", TransportHTTP)
		}
		if c.Command == "" {
			bad("command", "is required for transport %q", TransportStdio)
		}
		for k := range c.Env {
			if k == "" || strings.ContainsAny(k, "=\x00") {
				bad("env", "%q is not a valid environment variable name", k)
			}
		}
		misplaced(httpOnly, TransportHTTP)
	case TransportHTTP:
		if c.URL == "" {
			bad("url", "is required for transport %q", TransportHTTP)
		} else if u, err := url.Parse(c.URL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			bad("url", "%q is not an http:// or https:// URL", c.URL)
		}
		for k, v := range c.Headers {
			if !headerName.MatchString(k) {
				bad("headers", "%q is not a valid header name", k)
			}
			if strings.ContainsAny(v, "\r\n\x00") {
				bad("headers."+k, "the value must not contain line breaks")
			}
		}
		misplaced(stdioOnly, TransportStdio)
		c.OAuth.validate(c, bad)
	case "":
		bad("transport", "is required: %q or %q", TransportStdio, TransportHTTP)
	default:
		bad("transport", "%q is not supported; use %q or %q (the legacy HTTP+SSE transport is not)", c.Transport, TransportStdio, TransportHTTP)
	}

	if c.ToolCallTimeoutMs <= 0 {
		bad("toolCallTimeoutMs", "must be a positive number of milliseconds")
	}
	if c.StartupTimeoutMs <= 0 {
		bad("startupTimeoutMs", "must be a positive number of milliseconds")
	}
	for _, f := range []struct {
		key      string
		patterns []string
	}{{"enabledTools", c.EnabledTools}, {"disabledTools", c.DisabledTools}} {
		for i, pat := range f.patterns {
			if !tools.ValidPattern(pat) {
				bad(fmt.Sprintf("%s[%d]", f.key, i), "%q is not a valid name pattern (* and ? wildcards, [a-z] classes)", pat)
			}
		}
	}
	if r := c.Reconnect; r.Enabled {
		if r.InitialDelayMs <= 0 {
			bad("reconnect.initialDelayMs", "must be a positive number of milliseconds")
		} else if r.MaxDelayMs < r.InitialDelayMs {
			bad("reconnect.maxDelayMs", "must be at least initialDelayMs (%d)", r.InitialDelayMs)
		}
		if r.MaxAttempts <= 0 {
			bad("reconnect.maxAttempts", "must be at least 1 (set enabled: false to never reconnect)")
		}
	}
	for i, r := range c.Roots {
		if why := checkRoot(r); why != "" {
			bad(fmt.Sprintf("roots[%d]", i), "%s", why)
		}
	}
	if c.MaxResultBytes < 0 {
		bad("maxResultBytes", "must not be negative (0 keeps results whole)")
	}
	switch c.Protocol {
	case ProtocolAuto, ProtocolLegacy, ProtocolModern:
	default:
		bad("protocol", "%q is not one of %q, %q, %q", c.Protocol, ProtocolAuto, ProtocolLegacy, ProtocolModern)
	}
	return errors.Join(errs...)
}

// exposes reports whether the filters let the tool with this raw name through.
func (c *Config) exposes(raw string) bool {
	return tools.Selected(c.EnabledTools, c.DisabledTools, raw)
}

// Unique reports the value that must be unique among enabled entries.
func (c *Config) Unique() map[string]string {
	return map[string]string{"serverName": c.ServerName}
}

func (c *Config) toolCallTimeout() time.Duration {
	return time.Duration(c.ToolCallTimeoutMs) * time.Millisecond
}

func (c *Config) startupTimeout() time.Duration {
	return time.Duration(c.StartupTimeoutMs) * time.Millisecond
}

// redacted returns the keys of m with every value replaced, for status.
func redacted(m map[string]string) map[string]string {
	if len(m) == 0 {
		return nil
	}
	out := make(map[string]string, len(m))
	for k := range m {
		out[k] = "<redacted>"
	}
	return out
}

// describe is a short human description of where the server is.
func (c *Config) describe() string {
	if c.Transport == TransportHTTP {
		return c.URL
	}
	return strings.TrimSpace(fmt.Sprintf("%s %s", c.Command, strings.Join(c.Args, " ")))
}
