package agent

import (
	"errors"
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/harness-go/harness/host"
	"github.com/harness-go/harness/plugins/tools"
)

// Defaults of the configuration (docs/rfc/0004-agent.md, "Kind,
// configuration, directory"; the README's agent reference).
const (
	DefaultBaseURL              = "https://api.deepseek.com"
	DefaultModel                = "deepseek-v4-flash"
	DefaultMaxSteps             = 50
	DefaultMaxParallelToolCalls = 10
	DefaultToolResultBytes      = 100_000
	DefaultMaxTools             = 128
	DefaultRequestTimeout       = 60 * time.Second
	DefaultStreamIdleTimeout    = 300 * time.Second
	DefaultRetries              = 5
	// DefaultMaxConversationBytes bounds the encoded messages one request
	// carries: 16 MiB, as for one response, a console line or a prompt
	// from stdin.
	DefaultMaxConversationBytes = 16 << 20
	// DefaultToolSearchTokens is where toolSearch: auto turns tool search
	// on: the tools' schemas would take more of a step's prompt than this
	// (tokens estimated as encoded JSON bytes / 4).
	DefaultToolSearchTokens = 10_000
)

// Tool search modes (toolSearch).
const (
	// ToolSearchAuto turns tool search on when the tools' schemas would
	// take more than toolSearchTokens of a step, or there are more than
	// maxTools.
	ToolSearchAuto = "auto"
	ToolSearchOn   = "on"  // always: the always-loaded tools, search_tools and what it found
	ToolSearchOff  = "off" // never: every tool, each step (more than maxTools is an error)
)

// Thinking modes. Unset sends no thinking field (the provider's default).
const (
	ThinkingOff = "off" // thinking disabled
	ThinkingOn  = "on"  // thinking enabled at the provider's default effort
	// ThinkingLow, ThinkingHigh and ThinkingMax enable thinking at that effort.
	ThinkingLow  = "low"
	ThinkingHigh = "high"
	ThinkingMax  = "max"
)

// deprecatedModels maps DeepSeek's deprecated model names to what replaced
// them; they still work and are sent as written.
var deprecatedModels = map[string]string{
	"deepseek-chat":     "deepseek-v4-flash with thinking off",
	"deepseek-reasoner": "deepseek-v4-flash with thinking on",
}

// Config is the configuration of one agent entry: one model endpoint.
type Config struct {
	// BaseURL is the endpoint; requests go to BaseURL + "/chat/completions".
	BaseURL string `yaml:"baseURL" json:"baseURL" secret:"url" desc:"The endpoint (default https://api.deepseek.com); any OpenAI-compatible /chat/completions works: vLLM, Ollama, LM Studio."`
	// Model is the model name sent with every request.
	Model string `yaml:"model" json:"model" desc:"The model (default deepseek-v4-flash; deepseek-chat and deepseek-reasoner are deprecated aliases)."`
	// APIKey is sent as a Bearer token. It is a secret: never printed.
	APIKey string `yaml:"apiKey" json:"-" secret:"true" desc:"The API key, usually !!js process.env.DEEPSEEK_API_KEY; never printed. Empty sends no Authorization (local servers)."`
	// System is the system prompt, sent first in every request.
	System string `yaml:"system" json:"system,omitempty" desc:"The system prompt."`
	// Thinking is off, on, or an effort: low, high, max. Unset sends nothing.
	Thinking string `yaml:"thinking" json:"thinking,omitempty" enum:"off,on,low,high,max" desc:"Thinking mode: off, on, or an effort (low, high, max). Unset: the provider's default."`
	// MaxTokens bounds one answer; 0 leaves it to the provider.
	MaxTokens int `yaml:"maxTokens" json:"maxTokens,omitempty" desc:"The most tokens one model request may produce (default: the provider's)."`
	// Temperature is sent when set.
	Temperature *float64 `yaml:"temperature" json:"temperature,omitempty" desc:"Sampling temperature, 0 to 2 (default: the provider's; ignored in thinking mode)."`
	// MaxSteps bounds the model requests of one turn.
	MaxSteps int `yaml:"maxSteps" json:"maxSteps" desc:"The most model requests in one turn (default 50); reaching it is an error."`
	// MaxParallelToolCalls bounds the tool calls of one step run at once.
	MaxParallelToolCalls int `yaml:"maxParallelToolCalls" json:"maxParallelToolCalls" desc:"The most tool calls of one step that run at once (default 10)."`
	// ToolResultBytes bounds what one tool result puts into the
	// conversation; a longer result is cut, with a note saying so.
	ToolResultBytes int `yaml:"toolResultBytes" json:"toolResultBytes" desc:"The most bytes one tool result puts into the conversation (default 100000); longer results are cut with a note."`
	// MaxTools is the most tools one request may carry, counted after the
	// filters; more is an error, never a silent cut.
	MaxTools int `yaml:"maxTools" json:"maxTools" desc:"The most tools one request may carry, after the filters (default 128, DeepSeek's limit); more is an error."`
	// EnabledTools, when set, sends only the tools whose public names match
	// one of these patterns (* and ? wildcards).
	EnabledTools []string `yaml:"enabledTools" json:"enabledTools,omitempty" desc:"Send only the tools whose public names match one of these patterns (* and ? wildcards)."`
	// DisabledTools never sends the tools that match, after EnabledTools.
	DisabledTools []string `yaml:"disabledTools" json:"disabledTools,omitempty" desc:"Never send the tools whose public names match one of these patterns (applied after enabledTools)."`
	// RequestTimeoutMs bounds the wait for a response's headers.
	RequestTimeoutMs int `yaml:"requestTimeoutMs" json:"requestTimeoutMs" desc:"Timeout until the response headers arrive, in milliseconds (default 60000)."`
	// StreamIdleTimeoutMs bounds the silence between two events of a stream.
	StreamIdleTimeoutMs int `yaml:"streamIdleTimeoutMs" json:"streamIdleTimeoutMs" desc:"The longest silence inside a stream, in milliseconds (default 300000); longer is an error."`
	// Retries is how often a request is sent again, with backoff, when it
	// failed with 429 or 5xx, a reset, a stream that ended without a finish
	// reason, an overload error inside the stream or
	// insufficient_system_resource, as long as nothing of the answer
	// arrived.
	Retries int `yaml:"retries" json:"retries" desc:"Retries of a request refused with 429 or 5xx, reset, ended without a finish reason, or cut for overload or insufficient_system_resource, before any of the answer arrived (default 5; backoff 500 ms doubling to 10 s, with jitter)."`
	// MaxConversationBytes bounds the messages of one request, encoded
	// (the system prompt included): the step that would pass it ends the
	// turn with ErrConversationTooLarge.
	MaxConversationBytes int `yaml:"maxConversationBytes" json:"maxConversationBytes" desc:"The most bytes of encoded messages one request may carry (default 16777216, 16 MiB); the step that would pass it ends the turn with an error saying so."`
	// ToolSearch is auto, on or off: whether a step sends every tool, or
	// only the always-loaded ones, search_tools and the tools it found.
	ToolSearch string `yaml:"toolSearch" json:"toolSearch" enum:"auto,on,off" desc:"Tool search: auto (default) sends only the always-loaded tools, search_tools and the tools it found when every schema would take more than toolSearchTokens of a step or there are more than maxTools; on always does; off never does."`
	// ToolSearchTokens is auto's threshold: the tools' schemas, encoded
	// JSON bytes / 4.
	ToolSearchTokens int `yaml:"toolSearchTokens" json:"toolSearchTokens" desc:"toolSearch auto turns tool search on above this many tokens of tool schemas in a step (default 10000; tokens = encoded JSON bytes / 4)."`
	// AlwaysLoad are patterns of public names sent with every request in
	// tool search mode, beside search_tools.
	AlwaysLoad []string `yaml:"alwaysLoad" json:"alwaysLoad,omitempty" desc:"In tool search mode, always send the tools whose public names match one of these patterns (* and ? wildcards), as for an MCP entry with alwaysLoad: true."`
}

// DefaultConfig returns the configuration before cordis.yml is applied.
func DefaultConfig() Config {
	return Config{
		BaseURL:              DefaultBaseURL,
		Model:                DefaultModel,
		MaxSteps:             DefaultMaxSteps,
		MaxParallelToolCalls: DefaultMaxParallelToolCalls,
		ToolResultBytes:      DefaultToolResultBytes,
		MaxTools:             DefaultMaxTools,
		RequestTimeoutMs:     int(DefaultRequestTimeout / time.Millisecond),
		StreamIdleTimeoutMs:  int(DefaultStreamIdleTimeout / time.Millisecond),
		Retries:              DefaultRetries,
		MaxConversationBytes: DefaultMaxConversationBytes,
		ToolSearch:           ToolSearchAuto,
		ToolSearchTokens:     DefaultToolSearchTokens,
	}
}

// Validate checks the configuration; every problem is reported, each with
// the key it is about.
func (c *Config) Validate() error {
	var errs []error
	bad := func(field, format string, args ...any) {
		errs = append(errs, host.FieldErrorf(field, format, args...))
	}
	if u, err := url.Parse(c.BaseURL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		bad("baseURL", "%q is not an http:// or https:// URL", c.BaseURL)
	} else if u.User != nil {
		bad("baseURL", "must not carry credentials; use apiKey")
	} else if u.RawQuery != "" || u.Fragment != "" {
		bad("baseURL", "must not have a query or fragment")
	}
	if strings.TrimSpace(c.Model) == "" {
		bad("model", "must not be empty")
	}
	if strings.ContainsAny(c.APIKey, "\r\n") {
		bad("apiKey", "must be one line")
	}
	switch c.Thinking {
	case "", ThinkingOff, ThinkingOn, ThinkingLow, ThinkingHigh, ThinkingMax:
	default:
		bad("thinking", "%q is not one of off, on, low, high, max", c.Thinking)
	}
	if c.MaxTokens < 0 {
		bad("maxTokens", "must not be negative")
	}
	if c.Temperature != nil && (*c.Temperature < 0 || *c.Temperature > 2) {
		bad("temperature", "%v is outside 0 to 2", *c.Temperature)
	}
	atLeast := func(field string, v, min int) {
		if v < min {
			bad(field, "must be at least %d", min)
		}
	}
	atLeast("maxSteps", c.MaxSteps, 1)
	atLeast("maxParallelToolCalls", c.MaxParallelToolCalls, 1)
	atLeast("toolResultBytes", c.ToolResultBytes, 1)
	atLeast("maxTools", c.MaxTools, 1)
	atLeast("requestTimeoutMs", c.RequestTimeoutMs, 1)
	atLeast("streamIdleTimeoutMs", c.StreamIdleTimeoutMs, 1)
	atLeast("retries", c.Retries, 0)
	atLeast("maxConversationBytes", c.MaxConversationBytes, 1024)
	atLeast("toolSearchTokens", c.ToolSearchTokens, 1)
	switch c.ToolSearch {
	case ToolSearchAuto, ToolSearchOn, ToolSearchOff:
	default:
		bad("toolSearch", "%q is not one of auto, on, off", c.ToolSearch)
	}
	for _, list := range []struct {
		field    string
		patterns []string
	}{{"enabledTools", c.EnabledTools}, {"disabledTools", c.DisabledTools}, {"alwaysLoad", c.AlwaysLoad}} {
		for i, pat := range list.patterns {
			if !tools.ValidPattern(pat) {
				bad(fmt.Sprintf("%s[%d]", list.field, i), "%q is not a valid pattern (* and ? wildcards)", pat)
			}
		}
	}
	return errors.Join(errs...)
}

// NeedsKey reports whether the endpoint refuses requests without an API
// key: DeepSeek's own API does; a local server usually does not.
func (c *Config) NeedsKey() bool {
	u, err := url.Parse(c.BaseURL)
	if err != nil {
		return false
	}
	h := strings.ToLower(u.Hostname())
	return h == "api.deepseek.com" || strings.HasSuffix(h, ".deepseek.com")
}

// MissingKey reports whether the endpoint needs an API key and the entry
// has none: a turn is then refused ([ErrNoKey]).
func (c *Config) MissingKey() bool { return c.APIKey == "" && c.NeedsKey() }

// exposes reports whether the agent sends the tool with this public name to
// the model: it matches enabledTools (when set) and no disabledTools.
func (c *Config) exposes(name string) bool {
	return tools.Selected(c.EnabledTools, c.DisabledTools, name)
}

func (c *Config) filtered() bool { return len(c.EnabledTools)+len(c.DisabledTools) > 0 }

func (c *Config) requestTimeout() time.Duration {
	return time.Duration(c.RequestTimeoutMs) * time.Millisecond
}

func (c *Config) idleTimeout() time.Duration {
	return time.Duration(c.StreamIdleTimeoutMs) * time.Millisecond
}

// endpoint is BaseURL without a trailing slash.
func (c *Config) endpoint() string { return strings.TrimRight(c.BaseURL, "/") }

// sendsEmptyReasoning reports whether an assistant message with tool calls
// carries reasoning_content even when the model produced none: DeepSeek in
// thinking mode refuses a tool-call history without it (a 400), while
// other OpenAI-compatible servers may refuse the unknown field, so it is
// sent as "" only to DeepSeek's API or when thinking is asked for.
func (c *Config) sendsEmptyReasoning() bool {
	return c.NeedsKey() || (c.Thinking != "" && c.Thinking != ThinkingOff)
}
