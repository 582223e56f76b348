package cli

import (
	"errors"
	"fmt"
	"strings"

	"github.com/harness-go/harness/internal/loop"
	"github.com/harness-go/harness/internal/oauth"
	"github.com/harness-go/harness/internal/safe"
	"github.com/harness-go/harness/plugins/agent"
	"github.com/harness-go/harness/plugins/mcpserver"
	"github.com/harness-go/harness/plugins/web"
)

// The advice this command adds for people. Errors say what went wrong and
// where (docs/rfc/0001-host.md, "Messages"); what to run or to set about it
// is the front's, keyed on a state, a sentinel or a type, because only the
// front knows its own commands and flags.

// loginHint is the advice for an entry that needs a login (host.NeedsLogin).
func loginHint(id string) string {
	return "run `harness login " + safe.Line(id) + "`"
}

// keyHowTo is the one line that tells a person how to give an agent its
// key, naming the variables its apiKey reads (none: set apiKey).
func keyHowTo(id string, vars []string) string {
	if len(vars) == 0 {
		return fmt.Sprintf("agent entry %q has no API key: set apiKey in its entry in cordis.yml", id)
	}
	return fmt.Sprintf("agent entry %q has no API key: set %s (export %s=…) and run again", id, strings.Join(vars, " or "), vars[0])
}

// turnHint is the advice for the error a turn ended with ("" for none);
// console says whether the turn was the console's, which has /new.
func turnHint(err error, console bool) string {
	switch {
	case errors.Is(err, agent.ErrConversationTooLarge) && console:
		return "start a new conversation (/new) or raise maxConversationBytes"
	case errors.Is(err, agent.ErrConversationTooLarge):
		return "raise maxConversationBytes"
	case errors.Is(err, agent.ErrTooManyTools):
		return "send fewer tools: enabledTools or disabledTools on the agent's entry or on the MCP entries, fewer alwaysLoad tools, or toolSearch: auto (only search_tools and the tools it finds)"
	}
	return ""
}

// withHint is msg, then the advice for err when there is some.
func withHint(msg string, err error, console bool) string {
	if h := turnHint(err, console); h != "" {
		return msg + "; " + h
	}
	return msg
}

// loopHint is the advice for a harness refused at its start because its
// configuration would run itself, after a "; " ("" for another refusal).
func loopHint(err error) string {
	if le, ok := errors.AsType[*loop.Error](err); ok && le.Own {
		return "; remove the entry that runs `harness serve` on this file"
	}
	return ""
}

// registrationHint is the advice for a login whose authorization server
// registers no client, after a "; " ("" for another failure).
func registrationHint(err error) string {
	if errors.Is(err, oauth.ErrNoRegistration) {
		return "; register an OAuth app with it and set oauth.clientId (and oauth.clientSecret if it gives one) on the entry"
	}
	return ""
}

// listenHint is the advice for an --http address that CheckListen refused
// because other machines could reach it without a token of the person's
// (ErrNeedsToken, of serve or of web), after a "; " ("" for an address that
// does not parse: its error already says what an address looks like).
// token names the token and where it is set.
func listenHint(err error, token string) string {
	if errors.Is(err, mcpserver.ErrNeedsToken) || errors.Is(err, web.ErrNeedsToken) {
		return "; set " + token + " or listen on 127.0.0.1"
	}
	return ""
}
