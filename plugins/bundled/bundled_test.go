package bundled_test

import (
	"slices"
	"testing"

	"github.com/harness-go/harness/host"
	_ "github.com/harness-go/harness/plugins/bundled"
)

// restart lists, per bundled kind, the top-level keys of config: whose
// edit re-creates the instance (make before break where the kind opts in);
// every other key must be in the kind's Live list, which Register checks
// against the struct. A key added to a kind's configuration fails this
// test until it is classified here or made live — an edit of it is then
// never silently a restart, nor a live key silently dropped.
var restart = map[string][]string{
	"@deepseek-ai/dsh-mcp-client": {"alwaysLoad", "args", "command", "cwd", "env", "headers", "oauth", "prompts", "protocol", "resources", "serverName", "startupTimeoutMs", "transport", "url"},
	"agent": {"alwaysLoad", "apiKey", "baseURL", "disabledTools", "enabledTools", "maxConversationBytes", "maxParallelToolCalls", "maxSteps",
		"maxTokens", "maxTools", "model", "requestTimeoutMs", "retries", "streamIdleTimeoutMs", "system", "temperature", "thinking",
		"toolResultBytes", "toolSearch", "toolSearchTokens"},
	"echo":       {"greet", "prefix", "timezone"},
	"mcp-server": {"allowHosts", "listen"},
	// Re-created, an mcp-servers entry keeps its servers: its new instance
	// lists them again and only those that changed move (host rule 13, children).
	"mcp-servers": {"except", "format", "only", "path"},
	"web":         {"allowHosts", "listen", "token"},
}

func TestEveryConfigKeyIsLiveOrRestart(t *testing.T) {
	seen := map[string]bool{}
	for _, k := range host.Kinds() {
		seen[k.Name] = true
		restarts, ok := restart[k.Name]
		if !ok {
			t.Errorf("kind %q: its config keys %q are not classified here (live or restart)", k.Name, k.ConfigKeys())
			continue
		}
		for _, key := range k.ConfigKeys() {
			live, again := slices.Contains(k.Live, key), slices.Contains(restarts, key)
			switch {
			case live && again:
				t.Errorf("kind %q: key %q is both live and restart", k.Name, key)
			case !live && !again:
				t.Errorf("kind %q: key %q is neither live (Kind.Live) nor restart (this table)", k.Name, key)
			}
		}
		for _, key := range restarts {
			if !slices.Contains(k.ConfigKeys(), key) {
				t.Errorf("kind %q: restart key %q is not a key of its configuration", k.Name, key)
			}
		}
	}
	for name := range restart {
		if !seen[name] {
			t.Errorf("kind %q is classified here but not registered", name)
		}
	}
}
