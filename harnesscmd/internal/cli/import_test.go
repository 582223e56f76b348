package cli

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"

	_ "github.com/harness-go/harness/plugins/mcpclient"
)

// harness import prints entries that, appended to cordis.yml, validate;
// notes and left-out servers go to stderr; the exit code says what
// happened.
func TestImport(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	write := func(name, content string) string {
		t.Helper()
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	config := write("cordis.yml", "- id: echo\n  name: echo\n")
	mcpJSON := write(".mcp.json", `{"mcpServers": {
  "gh": {"type": "stdio", "command": "npx", "args": ["-y", "server-github"], "env": {"GITHUB_TOKEN": "${GITHUB_TOKEN}"}},
  "api": {"type": "http", "url": "https://h.example/mcp", "headers": {"Authorization": "Bearer ${API_KEY:-none}"}, "oauth": {"clientId": "x"}},
  "old": {"type": "sse", "url": "https://h.example/sse"}
}}`)
	codex := write(".codex/config.toml", "[mcp_servers.docs]\ncommand = \"docs-server\"\nenabled = false\ndefault_tools_approval_mode = \"approve\"\n")
	main := func(args ...string) (int, string, string) {
		var out, errOut bytes.Buffer
		code := Main(context.Background(), append([]string{"-c", config}, args...), Env{Stdin: strings.NewReader(""), Stdout: &out, Stderr: &errOut})
		return code, out.String(), errOut.String()
	}

	code, out, errOut := main("import", mcpJSON, codex)
	if code != ExitFailure {
		t.Fatalf("exit %d, want 1 (a server left out); stderr:\n%s", code, errOut)
	}
	for _, want := range []string{
		"- id: gh\n  name: mcp-client\n  config:\n    serverName: gh\n    transport: stdio\n",
		"GITHUB_TOKEN: !!js process.env.GITHUB_TOKEN\n",
		"Authorization: !!js '`Bearer ${process.env.API_KEY ?? \"none\"}`'\n",
		"- id: docs\n  name: mcp-client\n  disabled: true # the file says enabled = false\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("stdout lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "id: old") {
		t.Errorf("the SSE server was printed:\n%s", out)
	}
	for _, want := range []string{
		`.mcp.json:3:116: server "api": oauth has no effect here: the server is given a token in the Authorization header, so the harness does not log in to it`,
		`config.toml:4:1: server "docs": default_tools_approval_mode has no effect here: tool approval is the client's`,
		`.mcp.json:4:19: server "old": type: the legacy HTTP+SSE transport is not supported`,
	} {
		if !strings.Contains(errOut, want) {
			t.Errorf("stderr lacks %q:\n%s", want, errOut)
		}
	}

	// Appended, the entries load.
	f, err := os.OpenFile(config, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString(out)
	f.Close()
	if code, out, errOut := main("validate"); code != ExitOK || out != "ok\n" {
		t.Fatalf("validate after the append: exit %d\n%s%s", code, out, errOut)
	}

	// Now the ids are taken: a second import says so.
	_, _, errOut = main("import", mcpJSON)
	if !strings.Contains(errOut, `already has an entry "gh"`) {
		t.Errorf("a second import does not warn about the taken id:\n%s", errOut)
	}

	// A file that does not load prints nothing and exits 2.
	bad := write("bad.json", `{"mcpServers": {"a": {"command": "x"},}`)
	if code, out, errOut := main("import", mcpJSON, bad); code != ExitUsage || out != "" || !strings.Contains(errOut, "bad.json:1:") {
		t.Fatalf("a bad file: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	// --format names one.
	if code, out, errOut := main("import", "--format", "codex", codex); code != ExitOK || !strings.Contains(out, "id: docs") {
		t.Fatalf("--format codex: exit %d\n%s%s", code, out, errOut)
	}
	if code, _, errOut := main("import", "--format", "zed", codex); code != ExitUsage || !strings.Contains(errOut, "--format must be one of auto, claude-desktop") {
		t.Fatalf("--format zed: exit %d\n%s", code, errOut)
	}
	if code, _, errOut := main("tools", "--format", "codex"); code != ExitUsage || !strings.Contains(errOut, "flag --format is for import, not tools") {
		t.Fatalf("--format on tools: exit %d\n%s", code, errOut)
	}
	if code, _, errOut := main("import"); code != ExitUsage || !strings.Contains(errOut, "import takes the files to read") {
		t.Fatalf("no file: exit %d\n%s", code, errOut)
	}
}

// validate reads the file of an mcp-servers entry as the entry will: a
// file that does not read, or a server that cannot run, is a warning
// (cordis.yml itself is fine: exit 0, "ok").
func TestValidateReadsServersFiles(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	config := filepath.Join(dir, "cordis.yml")
	if err := os.WriteFile(config, []byte("- id: files\n  name: mcp-servers\n  config:\n    path: .mcp.json\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	validate := func(servers string) (int, string, string) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(dir, ".mcp.json"), []byte(servers), 0o644); err != nil {
			t.Fatal(err)
		}
		var out, errOut bytes.Buffer
		code := Main(context.Background(), []string{"-c", config, "validate"}, Env{Stdin: strings.NewReader(""), Stdout: &out, Stderr: &errOut})
		return code, out.String(), errOut.String()
	}
	if code, out, errOut := validate(`{"mcpServers": {"a": {"command": "x"}}}`); code != ExitOK || out != "ok\n" || errOut != "" {
		t.Fatalf("a good file: exit %d\n%s%s", code, out, errOut)
	}
	code, out, errOut := validate("{\"mcpServers\": {\n  \"a\": {\"command\": \"x\"},\n  \"old\": {\"type\": \"sse\", \"url\": \"https://h.example/sse\"}}}")
	if code != ExitOK || out != "ok\n" || !strings.Contains(errOut, `warning: entry "files": `) || !strings.Contains(errOut, `.mcp.json:3:19: server "old": type: the legacy HTTP+SSE transport is not supported`) {
		t.Fatalf("a server that cannot run: exit %d\n%s%s", code, out, errOut)
	}
	// A variable a server needs, unset: a warning naming the child entry,
	// the variable and the line of the servers' file.
	code, out, errOut = validate("{\"mcpServers\": {\n  \"a\": {\"command\": \"x\"},\n  \"two\": {\"command\": \"x\", \"env\": {\"T\": \"${HARNESS_TEST_UNSET_VAR}\"}}}}")
	if code != ExitOK || out != "ok\n" || !strings.Contains(errOut, `.mcp.json:3:`) ||
		!strings.Contains(errOut, `entry "files/two": config.env.T: !!js: process.env.HARNESS_TEST_UNSET_VAR is not set`) {
		t.Fatalf("a server whose variable is not set: exit %d\n%s%s", code, out, errOut)
	}
	code, out, errOut = validate("{\"mcpServers\": {\n  \"a\": {\"command\": 1 2}}}")
	if code != ExitOK || out != "ok\n" || !strings.Contains(errOut, ".mcp.json:2:") || !strings.Contains(errOut, "invalid JSON") {
		t.Fatalf("a file that does not read: exit %d\n%s%s", code, out, errOut)
	}
}

// Control characters in a file's names and values reach neither the
// terminal nor cordis.yml raw: the output validates once appended and
// reads back the same values; a NUL in a command leaves that server out,
// naming it; a file whose list of servers is empty is said.
func TestImportEscapes(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	config := filepath.Join(dir, "cordis.yml")
	write := func(name, content string) string {
		t.Helper()
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	main := func(args ...string) (int, string, string) {
		var out, errOut bytes.Buffer
		code := Main(context.Background(), append([]string{"-c", config}, args...), Env{Stdin: strings.NewReader(""), Stdout: &out, Stderr: &errOut})
		return code, out.String(), errOut.String()
	}

	ctl := write("ctl.json", `{"mcpServers": {
  "t\u0007x\u001b[31m": {"command": "y", "args": ["a\u001bb", "c\u202ed"], "env": {"K\u0001": "v\u0002\n"}},
  "nul": {"command": "c\u0000d"}
}}`)
	code, out, errOut := main("import", ctl)
	if code != ExitFailure || !strings.Contains(errOut, `server "nul": command: holds a NUL byte`) || !strings.Contains(errOut, "left out") {
		t.Fatalf("exit %d, want 1 with the NUL server left out; stderr:\n%s", code, errOut)
	}
	if strings.ContainsFunc(out, func(r rune) bool { return r != '\n' && (r < 0x20 || r == 0x7f || r == 0x202e) }) {
		t.Fatalf("a raw control character in the output:\n%q", out)
	}
	if !strings.HasPrefix(out, `# t\x07x\x1b[31m: from `) || strings.Contains(out, "id: nul") {
		t.Fatalf("output:\n%s", out)
	}
	var back []struct {
		Config struct {
			Args []string
			Env  map[string]string
		}
	}
	if err := yaml.Unmarshal([]byte(out), &back); err != nil || len(back) != 1 {
		t.Fatalf("%v\n%s", err, out)
	}
	if c := back[0].Config; len(c.Args) != 2 || c.Args[0] != "a\x1bb" || c.Args[1] != "c\u202ed" || c.Env["K\x01"] != "v\x02\n" {
		t.Fatalf("read back %q", c)
	}
	write("cordis.yml", out)
	if code, vout, verr := main("validate"); code != ExitOK || vout != "ok\n" {
		t.Fatalf("validate: exit %d\n%s%s\n%s", code, vout, verr, out)
	}

	for _, empty := range []string{
		write("empty.json", `{"mcpServers": {}}`),
		write("mcp.json", `{"servers": {}}`),
		write("config.toml", "[mcp_servers]\n"),
	} {
		code, out, errOut := main("import", empty)
		if code != ExitOK || out != "" || errOut != "harness import: "+empty+" holds no MCP servers\n" {
			t.Errorf("%s: exit %d, stdout %q, stderr %q", empty, code, out, errOut)
		}
	}
}
