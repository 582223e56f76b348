package mcpclient

import "github.com/harness-go/harness/internal/mcpname"

// Prefix starts every public name of an MCP tool.
const Prefix = mcpname.Prefix

// PublicName returns the model-visible name of tool rawName on server
// serverName: "mcp__<serverName>__<rawName>", normalized to the function-name
// contract ([A-Za-z0-9_-], at most 64 characters). When normalizing changes
// anything, a hash of (serverName, rawName) is appended, so two different
// tools never share a name by accident. The algorithm (internal/mcpname) is
// the one prompts are published under too.
//
// It reproduces the TypeScript original exactly, including JavaScript's
// UTF-16 semantics: every UTF-16 code unit outside the allowed set becomes
// one "_", so a character above U+FFFF (two code units) becomes "__".
func PublicName(serverName, rawName string) string { return mcpname.Public(serverName, rawName) }

// ServerOf returns the serverName part of a public MCP tool name. Our
// hardening of serverName (no "__", no leading or trailing "_", at most 32
// characters) makes the first "__" after the prefix the separator, and
// keeps it inside the 51 characters that survive truncation.
func ServerOf(public string) (string, bool) { return mcpname.ServerOf(public) }
