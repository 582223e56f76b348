package cli

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/harness-go/harness/host"
	"github.com/harness-go/harness/host/jsexpr"
	"github.com/harness-go/harness/host/secret"
	"github.com/harness-go/harness/internal/safe"
	"github.com/harness-go/harness/plugins/mcpservers"
)

const importHelp = `Usage: harness import FILE... [--format FORMAT]

Prints the cordis.yml entries of the MCP servers another client's
configuration file lists, one mcp-client entry per server, so that

  harness import .mcp.json >> cordis.yml

adds them. It reads Claude Desktop's claude_desktop_config.json, Claude
Code's .mcp.json, Cursor's .cursor/mcp.json, VS Code's .vscode/mcp.json,
Windsurf's mcp_config.json, Gemini CLI's settings.json and Codex's
config.toml; --format names one (claude-desktop, claude-code, cursor,
vscode, windsurf, gemini, codex) instead of auto, which decides by the
file's name and shape.

A variable the file reads (${VAR}, ${VAR:-default}, ${env:VAR}, Gemini's
$VAR, a VS Code ${input:ID} as $HARNESS_INPUT_<ID>) becomes !!js
process.env.VAR (with a default, ?? "default"), read when the entry starts.
Fields with no meaning here (trust, tool approval modes, OAuth settings,
envFile) are named on stderr. A server the file switches off is written
with disabled: true. To follow the file itself as it changes, use an
mcp-servers entry instead (README).

Exits 0 (a file whose list of servers is empty is said on stderr); 1 when
a server was left out (it cannot run as written: stderr says why); 2 on a
usage error or a file that does not load.
`

// importServers prints the entries of the servers of the files named.
func importServers(o *options, env Env) error {
	var files []*mcpservers.File
	var failed []string
	for _, path := range o.args {
		f, err := mcpservers.Read(path, mcpservers.Options{Format: o.format})
		if err != nil {
			failed = append(failed, safe.Line(err.Error()))
			continue
		}
		files = append(files, f)
	}
	if len(failed) > 0 {
		// A file that does not load is not half imported: nothing is
		// printed, so that an append adds nothing.
		return exit(ExitUsage, "harness import: %s", strings.Join(failed, "\nharness import: "))
	}
	out, problems := mcpservers.Entries(files)
	for _, f := range files {
		if len(f.Servers) == 0 {
			// Not an error (the list is there, and empty), but an
			// append that adds nothing should not pass unnoticed.
			say(env.Stderr, o, "warn", "harness import: "+safe.Line(f.Path)+" holds no MCP servers")
		}
		for _, n := range f.Notes {
			say(env.Stderr, o, "warn", "harness import: "+safe.Line(n.String()))
		}
		for _, s := range f.Servers {
			for _, n := range s.Notes {
				say(env.Stderr, o, "warn", "harness import: "+safe.Line(n.String()))
			}
		}
	}
	for _, p := range problems {
		say(env.Stderr, o, "error", "harness import: "+safe.Line(p.Error())+" — left out")
	}
	warnTaken(o, env, files)
	if _, err := env.Stdout.Write(out); err != nil {
		return err
	}
	if len(problems) > 0 {
		return exit(ExitFailure, "")
	}
	return nil
}

// warnTaken says which ids and serverNames of the output the configuration
// (-c, by default ./cordis.yml) already has: appended as they are, the file
// would not load.
func warnTaken(o *options, env Env, files []*mcpservers.File) {
	if _, err := os.Stat(o.config); err != nil {
		return
	}
	cfg, err := host.ReadFile(o.config)
	if cfg == nil || err != nil {
		return
	}
	ids := map[string]host.Pos{}
	names := map[string]string{}
	for _, e := range cfg.Entries {
		ids[e.ID] = e.Pos
		if e.Config == nil {
			continue
		}
		for i := 0; i+1 < len(e.Config.Content); i += 2 {
			if e.Config.Content[i].Value == "serverName" {
				names[e.Config.Content[i+1].Value] = e.ID
			}
		}
	}
	for _, f := range files {
		for _, s := range f.Servers {
			if s.Config == nil {
				continue
			}
			if pos, ok := ids[s.ServerName]; ok {
				say(env.Stderr, o, "warn", fmt.Sprintf("harness import: %s already has an entry %q (%s): rename one before appending", o.config, s.ServerName, pos))
			} else if id, ok := names[s.ServerName]; ok {
				say(env.Stderr, o, "warn", fmt.Sprintf("harness import: serverName %q is already entry %q's in %s: rename one before appending", s.ServerName, id, o.config))
			}
		}
	}
}

// serversWarnings reads the file of every enabled mcp-servers entry of f,
// as the entry will: what would fail the entry (the file does not read)
// or one of its servers (it cannot run as written) is a warning of
// validate, which checks cordis.yml — the servers' file is read again
// whenever it changes, and a broken one fails that entry alone.
func serversWarnings(f *host.File, env jsexpr.Env, secrets *secret.Set) []string {
	if f == nil {
		return nil
	}
	var out []string
	for _, e := range f.Entries {
		if e.Disabled || e.Config == nil {
			continue
		}
		if k, ok := host.LookupKind(e.Name); !ok || k.Name != mcpservers.Kind {
			continue
		}
		var c mcpservers.Plugin
		if e.Config.Decode(&c) != nil || c.Path == "" {
			continue // the entry's own check says what is wrong
		}
		path := c.Path
		if rest, ok := strings.CutPrefix(path, "~/"); ok {
			if home, err := os.UserHomeDir(); err == nil {
				path = filepath.Join(home, rest)
			}
		}
		if !filepath.IsAbs(path) {
			path = filepath.Join(f.Dir, path)
		}
		sf, err := mcpservers.Read(path, mcpservers.Options{Format: c.Format, Strict: true})
		if err != nil {
			out = append(out, fmt.Sprintf("entry %q: %v", e.ID, err))
			continue
		}
		var children []host.Child
		for _, s := range sf.Servers {
			for _, p := range s.Problems {
				out = append(out, fmt.Sprintf("entry %q: %s", e.ID, p.Error()))
			}
			if !s.Off && c.Selects(s) {
				children = append(children, s.Child(sf)) // one with problems is left out: they are said above
			}
		}
		// Each server as its child entry will be checked: a variable
		// it needs that is not set, a value of the wrong kind.
		r := host.CheckChildren(e, children, env, secrets)
		for _, p := range append(r.Errors, r.Warnings...) {
			out = append(out, p.Error())
		}
	}
	return out
}
