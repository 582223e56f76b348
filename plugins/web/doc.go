// Package web serves the harness as a page in a browser: the entries and
// their servers, the tools (with a form to try each), the agent's chat, the
// events and logs as they come, and cordis.yml with the last load's
// problems. `harness web` runs a host and serves it; the kind `web` serves
// it beside the console of `harness run` or the gateway of `harness serve`.
// docs/rfc/0009-web.md says why it is built as it is; the rules:
//
//  1. Who may look. The server listens on loopback unless a token was set
//     for it (a non-loopback address needs one). Every request's Host must
//     be a loopback name, the bound IP or an allowed name (DNS rebinding),
//     and a request that carries an Origin must come from the page's own
//     origin. The token is printed once, in the URL's fragment, which the
//     browser never sends; the page trades it, with a POST, for a session
//     cookie (HttpOnly, SameSite=Strict) and a CSRF token that every POST
//     must carry. Every state change is a POST.
//  2. What runs in the page. Only the embedded assets: the
//     Content-Security-Policy is default-src 'self' (images of tool
//     results as data: URLs besides), with no inline script or style, and
//     the page builds its DOM with textContent, never with HTML from data.
//  3. What it shows is live. One server-sent-events stream per page: a
//     snapshot first, then every change — entries (from the host's events,
//     the registry's changes and the logs of an entry, coalesced), tools,
//     agents, reload lines, log records, the file, and the session's own
//     chat, questions and progress. A page that reconnects gets a fresh
//     snapshot; a stream that cannot keep up is closed, and the browser
//     reconnects to one.
//  4. No second way to change state. Restart is [host.Host.Restart], a call
//     is [tools.Registry.Execute], a chat turn is [agent.Agent.Run]: the
//     functions the CLI uses.
//  5. Secrets. Everything of ours the page receives — entries, errors,
//     logs, events, the file, the agents, tool names and descriptions, a
//     chat's tool arguments — is redacted with the host's secret set. Tool
//     results and the model's text are their authors' words, as on the
//     command line.
//  6. The page is a front (docs/rfc/0002): what a tool asks during a call
//     the page made — a form call or a chat turn — is shown on the page of
//     that session, one question at a time, with the form's fields checked
//     by the rules the console uses (package internal/form); a page to
//     open is shown with its host and opened only after a yes. Without a
//     page open, the question is declined. A call's progress shows beside
//     it.
package web
