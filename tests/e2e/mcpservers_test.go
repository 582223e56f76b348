package e2e

// The mcpServers files of other clients, through the binary: an
// mcp-servers entry followed live, and harness import.

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// consolePIDs reads /status of a console: the pid of every MCP entry, by id.
func consolePIDs(t *testing.T, s *session) map[string]int {
	t.Helper()
	pids := map[string]int{}
	entry := regexp.MustCompile(`^\s*(\S+)  (\S+)  (\S+)`)
	pid := regexp.MustCompile(`^\s+pid (\d+), phase`)
	id := ""
	for _, l := range s.do("/status") {
		if m := pid.FindStringSubmatch(l); m != nil && id != "" {
			pids[id], _ = strconv.Atoi(m[1])
			continue
		}
		if m := entry.FindStringSubmatch(l); m != nil && (m[2] == "mcp-client" || m[2] == "mcp-servers") {
			id = m[1]
		}
	}
	return pids
}

// A servers file followed live through `harness run`, in each of the
// formats the issue names: the servers are child entries of the
// mcp-servers entry (listed under it, restartable by id); an edit of the
// file restarts the server that changed and no other (the pids say so); a
// broken edit changes nothing and says why with the file's line:column;
// a server added runs, one removed stops.
func TestMCPServersFileLive(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		format, file string
		servers      func(map[string]string) string // name → args JSON
		broken       string
		pos          *regexp.Regexp
	}{
		{format: "cursor", file: ".cursor/mcp.json", servers: func(s map[string]string) string {
			return jsonServers("mcpServers", s, "")
		}, broken: "{\"mcpServers\": {\n  \"alpha\": {\"command\": 1,}\n", pos: regexp.MustCompile(`mcp\.json:\d+:\d+`)},
		{format: "vscode", file: ".vscode/mcp.json", servers: func(s map[string]string) string {
			return jsonServers("servers", s, `"type": "stdio", `)
		}, broken: "{\"servers\": {\"alpha\": [}}\n", pos: regexp.MustCompile(`mcp\.json:\d+:\d+`)},
		{format: "gemini", file: ".gemini/settings.json", servers: func(s map[string]string) string {
			return jsonServers("mcpServers", s, `"timeout": 30000, `)
		}, broken: "{\"mcpServers\": {\"alpha\": {\"command\": \"x\"}, \"alpha\": {}}}\n", pos: regexp.MustCompile(`settings\.json:\d+:\d+`)},
		{format: "codex", file: ".codex/config.toml", servers: func(s map[string]string) string {
			var b strings.Builder
			for _, name := range sortedKeys(s) {
				fmt.Fprintf(&b, "[mcp_servers.%s]\ncommand = %q\nargs = %s\ntool_timeout_sec = 30\n\n", name, demoBin, s[name])
			}
			return b.String()
		}, broken: "[mcp_servers.alpha]\ncommand = \"x\nargs = []\n", pos: regexp.MustCompile(`config\.toml:\d+`)},
	} {
		t.Run(tc.format, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			path := filepath.Join(dir, tc.file)
			if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
				t.Fatal(err)
			}
			writeFile(t, path, tc.servers(map[string]string{"alpha": `[]`, "beta": `[]`}))
			writeConfig(t, dir, "- id: files\n  name: mcp-servers\n  config:\n    path: "+tc.file+"\n")
			s := startSession(t, runConfig{dir: dir})

			before := consolePIDs(t, s)
			if before["files/alpha"] == 0 || before["files/beta"] == 0 {
				t.Fatalf("the servers are not running as children: %v\n%s", before, s.dump())
			}
			if got := s.do(`/call mcp__alpha__calc {"expression":"6*7"}`); !slices.Equal(got, []string{"42"}) {
				t.Fatalf("calc through files/alpha: %q\n%s", got, s.dump())
			}

			// One server changes: it alone restarts.
			mark := s.mark()
			writeFile(t, path, tc.servers(map[string]string{"alpha": `[]`, "beta": `["--unused-flag"]`}))
			s.waitErr(mark, `"files/beta ready"`, hasPrefix("harness: files/beta ready"))
			after := consolePIDs(t, s)
			if after["files/alpha"] != before["files/alpha"] {
				t.Errorf("files/alpha restarted (pid %d → %d): only beta changed", before["files/alpha"], after["files/alpha"])
			}
			if after["files/beta"] == before["files/beta"] || after["files/beta"] == 0 {
				t.Errorf("files/beta was not restarted (pid %d → %d)", before["files/beta"], after["files/beta"])
			}

			// A broken edit changes nothing and says where.
			mark = s.mark()
			writeFile(t, path, tc.broken)
			s.waitErr(mark, "the refusal with the file's position", func(l string) bool {
				return strings.Contains(l, "its children are unchanged") && tc.pos.MatchString(l)
			})
			if kept := consolePIDs(t, s); kept["files/alpha"] != after["files/alpha"] || kept["files/beta"] != after["files/beta"] {
				t.Fatalf("a broken file moved the servers: %v, then %v\n%s", after, kept, s.dump())
			}
			if got := s.do(`/call mcp__beta__calc {"expression":"1+1"}`); !slices.Equal(got, []string{"2"}) {
				t.Fatalf("calc after the broken edit: %q\n%s", got, s.dump())
			}

			// Fixed, with gamma added and beta gone.
			mark = s.mark()
			writeFile(t, path, tc.servers(map[string]string{"alpha": `[]`, "gamma": `[]`}))
			s.waitErr(mark, `"files/gamma ready"`, hasPrefix("harness: files/gamma ready"))
			tools := toolNames(s.do("/tools"))
			if !contains(tools, "mcp__gamma__calc") || contains(tools, "mcp__beta__calc") {
				t.Fatalf("/tools after the fix: %v\n%s", tools, s.dump())
			}
			fixed := consolePIDs(t, s)
			if fixed["files/alpha"] != before["files/alpha"] {
				t.Errorf("files/alpha restarted by an edit of the others")
			}

			// A child restarts by its id.
			mark = s.mark()
			s.send("/restart files/alpha\n")
			s.waitErr(mark, `"files/alpha ready"`, hasPrefix("harness: files/alpha ready"))
			if again := consolePIDs(t, s); again["files/alpha"] == fixed["files/alpha"] || again["files/gamma"] != fixed["files/gamma"] {
				t.Errorf("/restart files/alpha: %v, then %v", fixed, again)
			}

			s.send("/quit\n")
			if code := s.waitExit(); code != 0 {
				t.Fatalf("/quit: exit code %d\n%s", code, s.dump())
			}
		})
	}
}

// jsonServers is a JSON servers file under key, each server the demo with
// args; extra goes in each definition.
func jsonServers(key string, servers map[string]string, extra string) string {
	var parts []string
	for _, name := range sortedKeys(servers) {
		parts = append(parts, fmt.Sprintf("    %q: {%s\"command\": %q, \"args\": %s}", name, extra, demoBin, servers[name]))
	}
	return "{\n  \"" + key + "\": {\n" + strings.Join(parts, ",\n") + "\n  }\n}\n"
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// harness import of each format, appended to cordis.yml, validates and
// runs: the same tools as the mcp-servers entry over the same file; an
// unset variable fails only the server that reads it, naming it.
func TestMCPServersImportRoundTrip(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ format, file, content string }{
		{"claude-code", ".mcp.json", `{"mcpServers": {"demo": {"type": "stdio", "command": "` + demoBin + `", "args": [], "env": {"LEVEL": "${DEMO_LEVEL:-info}"}},
  "needs": {"command": "` + demoBin + `", "env": {"TOKEN": "t-${E2E_UNSET_TOKEN}"}}}}`},
		{"vscode", ".vscode/mcp.json", `{"inputs": [{"id": "key", "type": "promptString", "password": true}],
  "servers": {"demo": {"type": "stdio", "command": "` + demoBin + `", "env": {"KEY": "${input:key}"}},
  "needs": {"command": "` + demoBin + `", "env": {"TOKEN": "t-${env:E2E_UNSET_TOKEN}"}}}}`},
		{"codex", ".codex/config.toml", "[mcp_servers.demo]\ncommand = \"" + demoBin + "\"\nenabled_tools = [\"calc\", \"uuid\"]\n\n[mcp_servers.needs]\nurl = \"http://127.0.0.1:9/mcp\"\nbearer_token_env_var = \"E2E_UNSET_TOKEN\"\n"},
		{"gemini", ".gemini/settings.json", `{"mcpServers": {"demo": {"command": "` + demoBin + `", "includeTools": ["calc", "uuid"], "trust": true},
  "needs": {"command": "` + demoBin + `", "env": {"TOKEN": "t-$E2E_UNSET_TOKEN"}}}}`},
	} {
		t.Run(tc.format, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			path := filepath.Join(dir, tc.file)
			if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
				t.Fatal(err)
			}
			writeFile(t, path, tc.content)
			env := runConfig{dir: dir, env: []string{"HARNESS_INPUT_KEY=k-value"}, unset: []string{"E2E_UNSET_TOKEN", "DEMO_LEVEL"}}

			// Through an mcp-servers entry.
			writeConfig(t, dir, "- id: files\n  name: mcp-servers\n  config:\n    path: "+tc.file+"\n")
			viaKind := harnessWith(t, env, "tools")
			status := harnessWith(t, env, "status")
			// Through harness import.
			imp := harnessWith(t, env, "import", tc.file)
			if imp.code != 0 || !strings.Contains(imp.stdout, "- id: demo\n  name: mcp-client\n") {
				t.Fatalf("import:\n%s", imp)
			}
			writeConfig(t, dir, imp.stdout)
			expectCode(t, harnessWith(t, env, "validate"), 0)
			viaImport := harnessWith(t, env, "tools")

			for _, r := range []result{viaKind, viaImport} {
				// needs fails (its variable is unset): exit 1, demo's tools listed.
				if r.code != 1 || !contains(toolNames(lines(r.stdout)), "mcp__demo__calc") {
					t.Fatalf("tools:\n%s", r)
				}
			}
			if a, b := toolNames(lines(viaKind.stdout)), toolNames(lines(viaImport.stdout)); !slices.Equal(a, b) {
				t.Errorf("the kind serves %v, the import %v", a, b)
			}
			if tc.format == "codex" || tc.format == "gemini" {
				if got := toolNames(lines(viaKind.stdout)); !slices.Equal(got, []string{"mcp__demo__calc", "mcp__demo__uuid"}) {
					t.Errorf("enabled/included tools: %v", got)
				}
			}
			if !strings.Contains(status.stdout, "  files/needs  mcp-client  failed: ") || !strings.Contains(status.stdout, "E2E_UNSET_TOKEN") ||
				!strings.Contains(status.stdout, "  files/demo  mcp-client  ready") {
				t.Errorf("status of the kind:\n%s", status)
			}
			if strings.Contains(status.stdout+status.stderr+viaKind.stderr, "k-value") {
				t.Errorf("the input's value was printed:\n%s", status)
			}

			// except leaves the failing server out, and status says so.
			writeConfig(t, dir, "- id: files\n  name: mcp-servers\n  config:\n    path: "+tc.file+"\n    except: [needs, nosuch]\n")
			left := harnessWith(t, env, "status")
			if left.code != 0 || strings.Contains(left.stdout, "files/needs") || !strings.Contains(left.stdout, "left out (only/except): needs") ||
				!strings.Contains(left.stdout, "only/except name servers the file does not have: nosuch") {
				t.Errorf("status with except:\n%s", left)
			}
		})
	}
}
