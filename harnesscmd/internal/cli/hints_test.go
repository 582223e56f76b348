package cli

import (
	"errors"
	"fmt"
	"testing"

	"github.com/harness-go/harness/internal/loop"
	"github.com/harness-go/harness/internal/oauth"
	"github.com/harness-go/harness/plugins/agent"
	"github.com/harness-go/harness/plugins/mcpserver"
	"github.com/harness-go/harness/plugins/web"
)

// The advice comes from the error's sentinel, wherever it sits in the
// chain, and fits the front: the console has /new, ask does not.
func TestTurnHint(t *testing.T) {
	t.Parallel()
	large := fmt.Errorf("entry %q: %w: 2 MiB", "m", agent.ErrConversationTooLarge)
	many := fmt.Errorf("entry %q: %w: 130 tools", "m", agent.ErrTooManyTools)
	for _, tc := range []struct {
		name    string
		err     error
		console bool
		want    string
	}{
		{"too large, ask", large, false, "x; raise maxConversationBytes"},
		{"too large, console", large, true, "x; start a new conversation (/new) or raise maxConversationBytes"},
		{"too many tools", many, false, "x; send fewer tools: enabledTools or disabledTools on the agent's entry or on the MCP entries, fewer alwaysLoad tools, or toolSearch: auto (only search_tools and the tools it finds)"},
		{"no advice", fmt.Errorf("entry %q: %w", "m", agent.ErrKeyRefused), true, "x"},
		{"no sentinel", errors.New("boom"), false, "x"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if got := withHint("x", tc.err, tc.console); got != tc.want {
				t.Fatalf("withHint = %q, want %q", got, tc.want)
			}
		})
	}
}

// The other advice is keyed the same way: on the error's type or sentinel,
// never on its words.
func TestErrorHints(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		got  string
		want string
	}{
		{"a configuration that runs itself", loopHint(fmt.Errorf("wrapped: %w", &loop.Error{Msg: "x", Own: true})), "; remove the entry that runs `harness serve` on this file"},
		{"another loop", loopHint(&loop.Error{Msg: "x"}), ""},
		{"no registration", registrationHint(fmt.Errorf("the authorization server x cannot register this client: y: %w", oauth.ErrNoRegistration)), "; register an OAuth app with it and set oauth.clientId (and oauth.clientSecret if it gives one) on the entry"},
		{"another login failure", registrationHint(errors.New("denied")), ""},
		{"a login", loginHint("gh"), "run `harness login gh`"},
		{"serve without a token", listenHint(mcpserver.CheckListen("0.0.0.0:8750", ""), "a token"), "; set a token or listen on 127.0.0.1"},
		{"web without a token", listenHint(web.CheckListen("0.0.0.0:8751", false), "a token"), "; set a token or listen on 127.0.0.1"},
		{"serve, not an address", listenHint(mcpserver.CheckListen("notanaddr", ""), "a token"), ""},
		{"web, not an address", listenHint(web.CheckListen("notanaddr", false), "a token"), ""},
	} {
		if tc.got != tc.want {
			t.Errorf("%s: %q, want %q", tc.name, tc.got, tc.want)
		}
	}
}
