// Package mcpservers reads the lists of MCP servers that other MCP clients
// keep — Claude Desktop's claude_desktop_config.json, Claude Code's
// .mcp.json, Cursor's .cursor/mcp.json, VS Code's .vscode/mcp.json,
// Windsurf's mcp_config.json, Gemini CLI's settings.json and Codex's
// config.toml — and turns each server into the configuration of an
// mcp-client entry. `harness import` prints those entries for cordis.yml.
//
// docs/rfc/0010-mcp-servers-files.md is the design; in short:
//
//  1. Read. The file is read with host/conffile (non-blocking, a regular
//     file, at most 4 MiB). JSON may have comments and trailing commas, as
//     the editors' own files do; a key twice is refused.
//  2. Format. auto decides by the file's name and shape: *.toml is Codex; a
//     top-level "servers" is VS Code; "mcpServers" is one of the others,
//     told apart by the name (.mcp.json, claude_desktop_config.json, a
//     .cursor or .gemini folder, mcp_config.json) and then by fields only
//     one of them has (httpUrl: Gemini; serverUrl: Windsurf; type: Claude
//     Code).
//  3. Names. Each server's name becomes its serverName, normalised to the
//     serverName rules ([NormalizeServerName]); two names that become one
//     are refused, naming both.
//  4. Values. Variables (${VAR}, ${VAR:-default}, ${env:VAR}, $VAR in Gemini
//     files, ${input:ID}, ${userHome}, ${workspaceFolder}) become !!js
//     expressions, evaluated when the entry is applied — so what they read
//     is a secret, as everything !!js reads is.
//  5. OAuth settings become the entry's oauth: where they have an
//     equivalent (oauth.go); what has no meaning here (a tool approval
//     mode, trust, OAuth endpoints, envFile) is a [Note], never dropped
//     silently; what cannot run (the
//     legacy SSE transport, a server with neither command nor url) is a
//     [Problem] of that server.
package mcpservers
