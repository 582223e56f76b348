package cli

import (
	"fmt"
	"io"
	"strings"
)

// flagHelp is a line per flag of flagTable that has help, in its order:
// "-c, --config FILE" (or "    --wait DURATION") in a column of 25, then
// the help, then the commands the flag is for (none: every command).
func flagHelp() string {
	var b strings.Builder
	for _, f := range flagTable {
		if f.help == "" {
			continue
		}
		left := "    "
		if len(f.names) > 1 {
			left = "-" + f.names[0] + ", "
		}
		left += "--" + f.long()
		if f.arg != "" {
			left += " " + f.arg
		}
		help := f.help
		if cmds := flagCommands(f.long()); len(cmds) > 0 {
			help += " (" + strings.Join(cmds, ", ") + ")"
		}
		fmt.Fprintf(&b, "  %-25s%s\n", left, help)
	}
	return b.String()
}

// commandLines is a line per row of commandTable, in its order: its usage
// in a column of 36, then what it does.
func commandLines() string {
	var b strings.Builder
	for _, c := range commandTable {
		fmt.Fprintf(&b, "  %-36s%s\n", "harness "+c.synopsis, c.summary)
	}
	return b.String()
}

// usage is the general help: the commands and the flags that have help,
// from their tables.
var usage = usageHead + "Usage:\n" + commandLines() + "\nFlags (anywhere on the line):\n" + flagHelp() + "\n" + usageTail

const usageHead = `harness runs the plugins listed in cordis.yml — MCP servers among them — and
lets people and scripts list and call the tools a model would see, and talk to
a model that uses them.

`

const usageTail = `Exit codes: 0 success; 1 a tool returned an error result, or an entry failed or
did not settle within --wait, or (ask) the model's API failed; 2 a usage error,
an unknown tool, server, resource or prompt, arguments that are not JSON, a
configuration that does not load, or (ask) no agent entry or no API key; 130
ask ended by a signal (Ctrl-C, SIGTERM, SIGHUP); 141 the reader of stdout went
away (every server was stopped first).

Results go to stdout; logs, progress and reload events to stderr.
`

// The help of each command (harness help NAME); the command table
// (cli.go) points at them.

const runHelp = `Usage: harness [run] [flags]

Boots every entry of cordis.yml, waits until they settle (bounded by --wait),
then reads console commands from stdin while watching cordis.yml: an edit
re-creates only the entries that changed; a bad edit changes nothing.

Console commands:
  TEXT                talk to the agent: a line not starting with / is a message
  /new                start a new conversation
  /agent [ID]         show the agents, the model, endpoint, tools and usage so
                      far; with ID, talk to that agent (the conversation stays)
  /tools              list the tools
  /call NAME [JSON]   call a tool
  /status             show every entry
  /restart ID         restart an entry (re-reading its environment)
  /reload             re-read cordis.yml now, even if it looks unchanged
  /help               list the commands
  /quit               shut down (so do EOF, SIGINT and SIGTERM)

SIGHUP reloads like /reload. On a terminal, Ctrl-C cancels the call or the
answer in flight, and quits when nothing runs. The conversation lasts as long
as the console: an edit of cordis.yml changes the tools of the next step, an
edit of the agent's entry the agent, never the conversation. Exits 0 when told to stop, whatever
state the entries are in, and 2 when cordis.yml cannot be loaded at start.
`

const askHelp = `Usage: harness ask PROMPT|- [flags] [--json] [--agent ID] [--show-reasoning]

Boots every entry of cordis.yml, waits until they settle (bounded by --wait;
entries that fail are reported, and the tools that exist are sent), then runs
one turn with the agent entry (--agent ID when there are several): the model
gets the tools, its tool calls run, their results go back, until it answers.
- reads the prompt from stdin.

stdout: the answer, streamed. stderr: one line per tool call (→ NAME ARGS) and
result (← TEXT), clipped; the reasoning of a thinking model with
--show-reasoning; a usage line. --json: stdout is one JSON object per event
(text, reasoning, tool_call, tool_result, usage, done, error) and stderr holds
logs only.

Exits 0 when the model answered; 1 when the model's API failed or the turn
reached maxSteps; 2 on a usage error, a configuration that does not load, no
agent entry, or no API key where the endpoint needs one (it says how to set
it); 130 when a signal (Ctrl-C, SIGTERM or SIGHUP) ended it.
`

const toolsHelp = `Usage: harness tools [flags] [--json]

Waits until every entry settles (bounded by --wait), then prints one line per
tool: its name and the first line of its description. --json prints exactly
the array the model receives ({"type":"function","function":{...}} per tool).
Failed and pending entries are reported on stderr; the exit code is 1 if an
entry failed or did not settle.
`

const callHelp = `Usage: harness call NAME [JSON|-] [flags] [--json]

Waits until NAME is registered or every entry has settled (bounded by --wait),
calls it with the JSON arguments (default {}, and so is an empty text; - reads
them from stdin; JSON that is not an object is sent as {}), and prints the text
the model would see.
An error result prints "Error: ..." and exits 1. --json prints
{"text": ..., "isError": ...}. An unknown tool exits 2.
`

const resourcesHelp = `Usage: harness resources [flags] [--json]

Waits until every entry settles (bounded by --wait), then prints one line per
resource: its server, uri, name (or title) and mimeType; then one per resource
template, its uriTemplate in place of the uri, marked (template). --json
prints {"resources": [...], "resourceTemplates": [...]}: the objects as the
servers listed them, each with "server". Failed and pending entries are
reported on stderr; the exit code is 1 if an entry failed or did not settle.
`

const readHelp = `Usage: harness read SERVER URI [flags] [-o FILE] [--json]

Waits until SERVER offers resources or every entry has settled (bounded by
--wait), reads URI (a listed resource, or one a template describes) and prints
its text unchanged; several contents print in order, separated by a blank
line. A binary content is not printed (a note on stderr says its type and
size, exit 1): -o FILE writes every content's bytes to FILE, --json prints the
server's result ({"contents": [...]}, binary ones in base64). An unknown
server, or a uri the server does not know, exits 2.
`

const promptsHelp = `Usage: harness prompts [flags] [--json]

Waits until every entry settles (bounded by --wait), then prints one line per
prompt: its public name (mcp__<serverName>__<prompt>) and the first line of its
description, and under it one line per argument (required ones marked).
--json prints the prompt objects under their public names, each with
"server".
`

const promptHelp = `Usage: harness prompt NAME [key=value ...|JSON] [flags] [--json]

Waits until NAME is registered or every entry has settled (bounded by --wait),
renders the prompt with the arguments (key=value words, or one JSON object)
and prints its messages, "<role>: <text>", separated by a blank line. --json
prints the server's result ({"description", "messages"}). An unknown prompt, a
missing required argument or one the prompt does not take exits 2.
`

const statusHelp = `Usage: harness status [flags] [--json]

Waits until every entry settles (bounded by --wait), then prints each entry:
id, plugin, state, the reason of a failure, and for MCP servers the transport,
the server's name and version, the protocol version, the tools (public name ←
server's name when they differ) and the last lines of its stderr. Values of
env and headers print as <redacted>. Exits 1 if an entry failed or did not
settle.
`

const loginHelp = `Usage: harness login ID [--no-browser] [--json] [flags]

Logs in to the remote MCP server of entry ID (a streamable-http entry whose
server asks for OAuth). Opens the system browser at the authorization
server's login page and waits for its redirect on 127.0.0.1 (a free port, or
the entry's oauth.callbackPort); the token goes into the store,
$XDG_STATE_HOME/harness/oauth (default ~/.local/state/harness/oauth), where a
running harness picks it up: the entry connects and its tools appear.

With --no-browser, over SSH (SSH_CONNECTION) or without a display, it prints
the address instead: open it in any browser; when that browser cannot reach
this machine's 127.0.0.1, paste the address it ends on here. --json prints
one JSON object per line: {"type":"authorize","url":…}, then
{"type":"done",…} or {"type":"error","message":…}. Exits 0 once logged in, 1
when the login failed, 2 when ID is not an entry that logs in with OAuth.
`

const logoutHelp = `Usage: harness logout ID [flags]

Deletes the tokens of entry ID from the store, and revokes them where the
authorization server offers revocation (RFC 7009). A running harness finds
out at its next request: the entry needs a login again.
`

const validateHelp = `Usage: harness validate [flags]

Checks cordis.yml without starting anything: YAML, entry structure, plugin
names, strict decoding of each config, the !!js subset, duplicate ids and
duplicate values that must be unique (an MCP serverName). Unset environment
variables are warnings. Prints "ok" and exits 0, or every problem with
file:line:column and exits 2.
`

const schemaHelp = `Usage: harness schema

Prints a JSON Schema (draft 2020-12) of cordis.yml generated from the plugin
kinds built into this binary. Point your editor's YAML support at it, and
declare the custom tag "!!js scalar".
`

const versionHelp = "Usage: harness version\n\nPrints the version.\n"

const helpHelp = "Usage: harness help [COMMAND]\n\nPrints help on the harness or one command.\n"

// commandUsage is the help of cmd, or the general help.
func commandUsage(cmd string) string {
	if c, ok := lookupCommand(cmd); ok {
		return c.help
	}
	return usage
}

func printHelp(stdout, stderr io.Writer, topic string) int {
	c, known := lookupCommand(topic)
	switch {
	case topic == "":
		fmt.Fprint(stdout, usage)
	case known:
		fmt.Fprint(stdout, c.help)
	default:
		fmt.Fprintf(stderr, "harness help: unknown command %q\n\n%s", topic, usage)
		return ExitUsage
	}
	return ExitOK
}
