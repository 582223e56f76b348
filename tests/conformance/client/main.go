// Command client is an MCP conformance client built on harness's mcp-client
// plugin. The conformance suite (@modelcontextprotocol/conformance) runs it
// as `<command> <server URL>`:
//
//	client [-deadline 20s] [-log-level info] URL
//
// It boots a host with the tools service, loads an in-memory cordis.yml with
// one mcp-client entry (streamable-http to URL, serverName "conformance"),
// waits for it to settle, and then works through the tools registry only, as
// a model would: it prints the model-visible tool list and calls every tool
// once with arguments made up from its JSON Schema. Results go to stdout,
// logs to stderr.
//
// What the suite tells its client in the environment is used as a real
// client of the suite would use it: the revision it runs at
// (MCP_CONFORMANCE_PROTOCOL_VERSION: 2026-07-28 → protocol modern, any
// other → auto, unless -protocol says), the calls a scenario wants made,
// with their arguments (MCP_CONFORMANCE_CONTEXT's toolCalls: only those are
// made), the client it names (its client_id, client_secret and
// private_key_pem: see oauthFromContext), and the scenario
// (MCP_CONFORMANCE_SCENARIO: the client credentials scenarios make a
// machine client; json-schema-2020-12-preservation echoes the schema it was
// listed back to the scenario's echo tool).
//
// Every call runs with a test-only front (tools.Front): it accepts every
// elicitation, its form filled with the defaults of the requested schema
// (SEP-1034), and offers nothing else. It stands in for a person at the
// console who presses enter on every field.
//
// The exit status is 0 when the entry became ready and every call came back
// with a result (an error result counts: the server decides what its tools
// answer) before the deadline, and 1 otherwise; 2 is a usage error. The
// whole run, closing the host included, is bounded by -deadline; if closing
// hangs past it, the process exits anyway.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"sort"
	"strings"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/harness-go/harness/host"
	"github.com/harness-go/harness/internal/oauth"
	"github.com/harness-go/harness/plugins/mcpclient"
	"github.com/harness-go/harness/plugins/prompts"
	"github.com/harness-go/harness/plugins/resources"
	"github.com/harness-go/harness/plugins/tools"
)

const (
	entryID    = "conformance"
	serverName = "conformance"
	// closeGrace is how long closing the host may take beyond the deadline
	// before the process gives up on it.
	closeGrace = 5 * time.Second
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// options are the command line.
type options struct {
	url      string
	deadline time.Duration
	level    slog.Level
	protocol string
}

func parseArgs(args []string, stderr io.Writer) (options, error) {
	fs := flag.NewFlagSet("client", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: client [-deadline 20s] [-log-level debug|info|warn|error] URL")
		fs.PrintDefaults()
	}
	o := options{}
	fs.DurationVar(&o.deadline, "deadline", 20*time.Second, "bound of the whole run")
	fs.StringVar(&o.protocol, "protocol", "", "the entry's protocol (auto, legacy, modern); default: modern when the suite runs at 2026-07-28, else auto")
	level := fs.String("log-level", "info", "log level: debug, info, warn or error")
	if len(args) == 0 {
		fs.Usage()
		return o, errors.New("the server URL is missing")
	}
	// The suite appends the URL as the last argument; flags come before it.
	if err := fs.Parse(args[:len(args)-1]); err != nil {
		return o, err
	}
	if fs.NArg() > 0 {
		fs.Usage()
		return o, fmt.Errorf("unexpected arguments before the URL: %q", fs.Args())
	}
	o.url = args[len(args)-1]
	if u, err := url.Parse(o.url); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return o, fmt.Errorf("%q is not an http:// or https:// URL", o.url)
	}
	if o.deadline <= 0 {
		return o, errors.New("-deadline must be positive")
	}
	if err := o.level.UnmarshalText([]byte(*level)); err != nil {
		return o, fmt.Errorf("-log-level: %v", err)
	}
	if o.protocol == "" {
		o.protocol = "auto"
		if os.Getenv("MCP_CONFORMANCE_PROTOCOL_VERSION") == "2026-07-28" {
			o.protocol = "modern"
		}
	}
	return o, nil
}

// entryConfig is the one cordis.yml entry.
type entryConfig struct {
	ID     string    `yaml:"id"`
	Name   string    `yaml:"name"`
	Config mcpConfig `yaml:"config"`
}

type mcpConfig struct {
	ServerName        string       `yaml:"serverName"`
	Transport         string       `yaml:"transport"`
	URL               string       `yaml:"url"`
	Protocol          string       `yaml:"protocol"`
	StartupTimeoutMs  int          `yaml:"startupTimeoutMs"`
	ToolCallTimeoutMs int          `yaml:"toolCallTimeoutMs"`
	OAuth             *oauthConfig `yaml:"oauth,omitempty"`
}

// oauthConfig is the entry's oauth key: the suite's Client ID Metadata
// Document URL (the one its scenarios expect), and the pre-registered
// client its context names, if any; or, for the client credentials and
// workload identity scenarios, the machine client of the context.
type oauthConfig struct {
	Grant             string     `yaml:"grant,omitempty"`
	ClientID          string     `yaml:"clientId,omitempty"`
	ClientSecret      string     `yaml:"clientSecret,omitempty"`
	PrivateKey        string     `yaml:"privateKey,omitempty"`
	Assertion         string     `yaml:"assertion,omitempty"`
	IdP               *idpConfig `yaml:"idp,omitempty"`
	ClientMetadataURL string     `yaml:"clientMetadataUrl,omitempty"`
}

// idpConfig is oauth.idp: the IdP of the enterprise-managed scenario.
type idpConfig struct {
	TokenEndpoint string `yaml:"tokenEndpoint"`
	ClientID      string `yaml:"clientId"`
	IDToken       string `yaml:"idToken"`
}

// clientMetadataURL is the Client ID Metadata Document the suite's CIMD
// scenario expects a client to use.
const clientMetadataURL = "https://conformance-test.local/client-metadata.json"

// oauthFromContext reads the pre-registered client of the suite's context
// (client_id, client_secret), if it names one. A context with a private key
// (private_key_pem), and the client credentials scenarios, make a machine
// client (grant client_credentials), as a person configuring a service
// account would: what the suite's context cannot say is whether a client
// id and secret are a person's app or a service's. A context with a
// workload's token (valid_jwt, the workload identity scenario) makes a
// jwt_bearer client presenting it; one with an IdP's ID token
// (idp_id_token, the enterprise-managed scenario), a jwt_bearer client
// whose assertion is exchanged at that IdP.
func oauthFromContext(scenario, suiteContext string) *oauthConfig {
	o := &oauthConfig{ClientMetadataURL: clientMetadataURL}
	var c struct {
		ClientID     string `json:"client_id"`
		ClientSecret string `json:"client_secret"`
		PrivateKey   string `json:"private_key_pem"`
		Workload     string `json:"valid_jwt"`
		IDToken      string `json:"idp_id_token"`
		IdPClientID  string `json:"idp_client_id"`
		IdPToken     string `json:"idp_token_endpoint"`
	}
	if suiteContext != "" && json.Unmarshal([]byte(suiteContext), &c) == nil {
		o.ClientID, o.ClientSecret = c.ClientID, c.ClientSecret
	}
	if c.PrivateKey != "" || strings.HasPrefix(scenario, "auth/client-credentials-") {
		o.Grant, o.PrivateKey, o.ClientMetadataURL = "client_credentials", c.PrivateKey, ""
	}
	if c.Workload != "" {
		o.Grant, o.Assertion, o.ClientMetadataURL = "jwt_bearer", c.Workload, ""
	}
	if c.IDToken != "" {
		o.Grant, o.ClientMetadataURL = "jwt_bearer", ""
		o.IdP = &idpConfig{TokenEndpoint: c.IdPToken, ClientID: c.IdPClientID, IDToken: c.IDToken}
	}
	return o
}

// cordisYML is the configuration the client runs: one mcp-client entry whose
// timeouts fit in the deadline.
func cordisYML(serverURL, protocol string, deadline time.Duration, oauth *oauthConfig) ([]byte, error) {
	startup := min(10*time.Second, deadline/2)
	call := min(10*time.Second, deadline/2)
	return yaml.Marshal([]entryConfig{{
		ID:   entryID,
		Name: "mcp-client",
		Config: mcpConfig{
			ServerName:        serverName,
			Transport:         "streamable-http",
			URL:               serverURL,
			Protocol:          protocol,
			StartupTimeoutMs:  max(1, int(startup/time.Millisecond)),
			ToolCallTimeoutMs: max(1, int(call/time.Millisecond)),
			OAuth:             oauth,
		},
	}})
}

func run(args []string, stdout, stderr io.Writer) int {
	o, err := parseArgs(args, stderr)
	if err != nil {
		if !errors.Is(err, flag.ErrHelp) {
			fmt.Fprintln(stderr, "client:", err)
		}
		return 2
	}
	start := time.Now()
	// The watchdog ends the process if closing the host hangs past the
	// deadline: the suite waits for our pipes to close.
	watchdog := time.AfterFunc(o.deadline+closeGrace, func() {
		fmt.Fprintf(stderr, "client: still running %s after the start; exiting\n", o.deadline+closeGrace)
		os.Exit(1)
	})
	defer watchdog.Stop()

	ctx, cancel := context.WithTimeoutCause(context.Background(), o.deadline, fmt.Errorf("the client's deadline of %s passed", o.deadline))
	defer cancel()

	log := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: o.level}))
	reg := tools.New()
	h := host.New(host.Options{Logger: log, DisposeTimeout: closeGrace})
	h.Provide(tools.Service, reg)
	h.Provide(resources.Service, resources.New())
	h.Provide(prompts.Service, prompts.New())
	store, err := os.MkdirTemp("", "conformance-oauth-")
	if err != nil {
		fmt.Fprintln(stderr, "client:", err)
		return 1
	}
	defer os.RemoveAll(store)
	if err := mcpclient.OAuthKey.ProvideBy(h, mcpclient.OAuthOptions{StoreDir: store, Authorize: authorizeHeadless}); err != nil {
		fmt.Fprintln(stderr, "client:", err)
		return 1
	}

	code := exercise(ctx, o, h, reg, stdout, stderr)

	cctx, ccancel := context.WithTimeout(context.Background(), closeGrace)
	defer ccancel()
	if err := h.Close(cctx); err != nil {
		fmt.Fprintln(stderr, "client: closing the host:", err)
		code = 1
	}
	fmt.Fprintf(stderr, "client: done in %s, exit status %d\n", time.Since(start).Round(time.Millisecond), code)
	return code
}

// exercise loads the configuration, waits for the entry, lists the tools and
// calls each once. It returns the exit status.
func exercise(ctx context.Context, o options, h *host.Host, reg *tools.Registry, stdout, stderr io.Writer) int {
	src, err := cordisYML(o.url, o.protocol, o.deadline, oauthFromContext(os.Getenv("MCP_CONFORMANCE_SCENARIO"), os.Getenv("MCP_CONFORMANCE_CONTEXT")))
	if err != nil {
		fmt.Fprintln(stderr, "client: building cordis.yml:", err)
		return 1
	}
	f, err := host.ParseFile("cordis.yml", src)
	if err != nil {
		fmt.Fprintln(stderr, "client: parsing the generated cordis.yml:", err)
		return 1
	}
	if _, err := h.Load(ctx, f); err != nil {
		fmt.Fprintln(stderr, "client: loading the generated cordis.yml:", err)
		return 1
	}
	if err := h.Settle(ctx); err != nil {
		fmt.Fprintln(stderr, "client: the entry did not settle:", err)
		return 1
	}
	st, ok := entryStatus(h.Snapshot(), entryID)
	if !ok {
		fmt.Fprintln(stderr, "client: the entry is missing from the host")
		return 1
	}
	if st.State != host.Ready {
		fmt.Fprintf(stderr, "client: the entry is %s: %s\n", st.State, st.Error)
		return 1
	}

	model := reg.ModelJSON()
	fmt.Fprintf(stdout, "tools: %s\n", model)
	var list []struct {
		Function struct {
			Name       string          `json:"name"`
			Parameters json.RawMessage `json:"parameters"`
		} `json:"function"`
	}
	if err := json.Unmarshal(model, &list); err != nil {
		fmt.Fprintln(stderr, "client: the model-visible tool list is not JSON:", err)
		return 1
	}
	schemas := map[string]json.RawMessage{}
	for _, t := range list {
		schemas[t.Function.Name] = t.Function.Parameters
	}
	calls, err := planCalls(os.Getenv("MCP_CONFORMANCE_SCENARIO"), os.Getenv("MCP_CONFORMANCE_CONTEXT"), schemas)
	if err != nil {
		fmt.Fprintln(stderr, "client:", err)
		return 1
	}
	if calls == nil {
		for _, t := range list {
			calls = append(calls, call{t.Function.Name, argsFromSchema(t.Function.Parameters)})
		}
	}
	code := 0
	fctx := tools.WithFront(ctx, defaultsFront{})
	for _, c := range calls {
		if _, ok := schemas[c.tool]; !ok {
			fmt.Fprintf(stderr, "client: %s is not a registered tool\n", c.tool)
			code = 1
			continue
		}
		res := reg.Execute(fctx, c.tool, c.args)
		out, _ := json.Marshal(res)
		fmt.Fprintf(stdout, "call %s %s -> %s\n", c.tool, c.args, out)
		if ctx.Err() != nil {
			fmt.Fprintf(stderr, "client: calling %s: %v\n", c.tool, context.Cause(ctx))
			return 1
		}
	}
	// The entry must still be up: a connection lost during the calls fails
	// it.
	if st, ok := entryStatus(h.Snapshot(), entryID); !ok || st.State != host.Ready {
		fmt.Fprintf(stderr, "client: after the calls the entry is %s: %s\n", st.State, st.Error)
		code = 1
	}
	return code
}

func entryStatus(snap []host.EntryStatus, id string) (host.EntryStatus, bool) {
	for _, e := range snap {
		if e.ID == id {
			return e, true
		}
	}
	return host.EntryStatus{}, false
}

// argsFromSchema makes up the arguments of a call from a tool's JSON Schema: each
// required property gets a value of its type, numbers 2, 3, … in the order
// the schema lists them as required, strings "test", booleans true, anything
// else {}. Properties that are not required are left out.
func argsFromSchema(schema json.RawMessage) json.RawMessage {
	var s struct {
		Properties map[string]struct {
			Type json.RawMessage `json:"type"`
		} `json:"properties"`
		Required []string `json:"required"`
	}
	if json.Unmarshal(schema, &s) != nil {
		return json.RawMessage(`{}`)
	}
	var b strings.Builder
	b.WriteByte('{')
	next := 2
	seen := map[string]bool{}
	for _, name := range s.Required {
		if seen[name] {
			continue
		}
		seen[name] = true
		key, _ := json.Marshal(name)
		if b.Len() > 1 {
			b.WriteByte(',')
		}
		b.Write(key)
		b.WriteByte(':')
		switch schemaType(s.Properties[name].Type) {
		case "number", "integer":
			fmt.Fprintf(&b, "%d", next)
			next++
		case "string":
			b.WriteString(`"test"`)
		case "boolean":
			b.WriteString("true")
		default:
			b.WriteString("{}")
		}
	}
	b.WriteByte('}')
	return json.RawMessage(b.String())
}

// schemaType reads a schema's "type": a string, or the first non-null entry
// of an array of types.
func schemaType(raw json.RawMessage) string {
	var one string
	if json.Unmarshal(raw, &one) == nil {
		return one
	}
	var many []string
	if json.Unmarshal(raw, &many) == nil {
		for _, t := range many {
			if t != "null" {
				return t
			}
		}
	}
	return ""
}

// call is one call the client makes.
type call struct {
	tool string          // the public name
	args json.RawMessage // the arguments
}

// planCalls returns the calls a scenario wants made, or nil for the default
// (every tool once, arguments made up from its schema): the toolCalls of the
// suite's context, with their arguments; for
// json-schema-2020-12-preservation, every tool, the echo tool getting the
// schema the focal tool was listed with (as the registry holds it).
func planCalls(scenario, suiteContext string, schemas map[string]json.RawMessage) ([]call, error) {
	public := func(raw string) string { return mcpclient.PublicName(serverName, raw) }
	if suiteContext != "" {
		var c struct {
			ToolCalls []struct {
				Name      string          `json:"name"`
				Arguments json.RawMessage `json:"arguments"`
			} `json:"toolCalls"`
		}
		if err := json.Unmarshal([]byte(suiteContext), &c); err != nil {
			return nil, fmt.Errorf("MCP_CONFORMANCE_CONTEXT is not JSON: %v", err)
		}
		if len(c.ToolCalls) > 0 {
			calls := make([]call, 0, len(c.ToolCalls))
			for _, tc := range c.ToolCalls {
				args := tc.Arguments
				if len(args) == 0 {
					args = json.RawMessage(`{}`)
				}
				calls = append(calls, call{public(tc.Name), args})
			}
			return calls, nil
		}
	}
	if scenario == "json-schema-2020-12-preservation" {
		focal, echo := public("json_schema_2020_12_tool"), public("json_schema_echo")
		schema, ok := schemas[focal]
		if !ok {
			return nil, fmt.Errorf("the scenario's tool %s is not registered", focal)
		}
		calls := []call{}
		for _, name := range sortedNames(schemas) {
			args := argsFromSchema(schemas[name])
			if name == echo {
				args, _ = json.Marshal(map[string]json.RawMessage{"schema": schema})
			}
			calls = append(calls, call{name, args})
		}
		return calls, nil
	}
	return nil, nil
}

func sortedNames(m map[string]json.RawMessage) []string {
	names := make([]string, 0, len(m))
	for n := range m {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// redirectURI is the conformance client's redirect URI: nothing listens
// there; the client reads the redirect from the authorization endpoint's
// Location.
const redirectURI = "http://127.0.0.1:8976/callback"

// authorizeHeadless runs the flow without a person, as the SDKs'
// conformance clients do: it fetches the authorization URL with redirects
// off and takes the redirect back from its Location (the suite's
// authorization server approves at once).
func authorizeHeadless(ctx context.Context, f *oauth.Flow, ch *oauth.Challenge) error {
	p, err := f.Begin(ctx, ch, redirectURI)
	if err != nil {
		return err
	}
	c := &http.Client{
		Timeout:       10 * time.Second,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, p.URL, nil)
	if err != nil {
		return err
	}
	resp, err := c.Do(req)
	if err != nil {
		return err
	}
	resp.Body.Close()
	loc, err := resp.Location()
	if err != nil {
		return fmt.Errorf("the authorization endpoint answered HTTP %d without a redirect", resp.StatusCode)
	}
	_, err = f.Finish(ctx, p, loc)
	return err
}

// defaultsFront is the test-only front of the conformance client: every
// elicitation is accepted, each field of a form given its schema's default
// (SEP-1034; a field without one is left out), a URL-mode one as if the
// person had opened the URL. It offers no sampling.
type defaultsFront struct{}

func (defaultsFront) Ask(_ context.Context, q tools.Question) (json.RawMessage, error) {
	if q.Method != tools.MethodElicit {
		return nil, tools.ErrUnsupported
	}
	var p struct {
		Mode            string `json:"mode"`
		RequestedSchema struct {
			Properties map[string]struct {
				Default json.RawMessage `json:"default"`
			} `json:"properties"`
		} `json:"requestedSchema"`
	}
	if err := json.Unmarshal(q.Params, &p); err != nil {
		return nil, fmt.Errorf("the elicitation does not decode: %w", err)
	}
	if p.Mode == "url" {
		return json.RawMessage(`{"action":"accept"}`), nil
	}
	content := map[string]json.RawMessage{}
	for name, prop := range p.RequestedSchema.Properties {
		if len(prop.Default) > 0 {
			content[name] = prop.Default
		}
	}
	return json.Marshal(map[string]any{"action": "accept", "content": content})
}

func (defaultsFront) Notify(context.Context, tools.Notification) {}

func (defaultsFront) Offers() tools.Offers {
	return tools.Offers{Elicitation: true, ElicitationURL: true}
}
