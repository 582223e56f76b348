package e2e

// What servers and configurations must not be able to do through our
// output: leak a secret, or drive the terminal.

import (
	"slices"
	"strings"
	"testing"
)

// collect gathers every output of several harness runs and sessions, so a
// check can look at all of it.
type collect struct {
	runs []result
}

func (c *collect) add(r result) result { c.runs = append(c.runs, r); return r }

func (c *collect) addSession(name string, s *session) {
	c.runs = append(c.runs, result{args: []string{name}, stdout: s.out.Text(), stderr: s.err.Text(), code: s.code})
}

// Secret values from env and headers — literal, substituted by !!js, or in a
// !!js template — appear in none of our output, even when a server prints
// them on its stderr or fails with them in its last words.
func TestSecretsNeverPrinted(t *testing.T) {
	t.Parallel()
	litTok := secret(t, "lit-")
	jsTok := secret(t, "js-")
	httpTok := secret(t, "http-")
	hdrTok := secret(t, "hdr-")
	badTok := secret(t, "bad-")
	secrets := []string{litTok, jsTok, httpTok, hdrTok, badTok}

	url := startFixtureHTTP(t, "--only", "echo,headers",
		"--require-header", "Authorization: Bearer "+httpTok, "--require-header", "X-Api-Key: "+hdrTok)

	// The stdio servers print their secrets on stderr: the shell expands
	// them from the environment the harness gave it, so they appear in no
	// argument of ours.
	leaky := func(id, extra string) string {
		script := "exec " + shq(fixtureBin) + ` --only echo,env --stderr "leak: $LIT_TOKEN $JS_TOKEN $JS_TEMPLATE\n" ` + extra
		return stdioEntry(id, "mcp-client", id, "/bin/sh", "-c", script) +
			"    env:\n" +
			"      LIT_TOKEN: " + yq(litTok) + "\n" +
			"      JS_TOKEN: !!js process.env.E2E_JS_SECRET\n" +
			"      JS_TEMPLATE: !!js '`token=${process.env.E2E_JS_SECRET}`'\n"
	}
	dir := t.TempDir()
	writeConfig(t, dir, leaky("fx", "")+
		leaky("crash", "--exit-on initialize")+
		"- id: web\n  name: mcp-client\n  config:\n    serverName: web\n    transport: streamable-http\n    url: "+yq(url)+"\n"+
		"    headers:\n"+
		"      Authorization: !!js '`Bearer ${process.env.E2E_HTTP_SECRET}`'\n"+
		"      X-Api-Key: "+yq(hdrTok)+"\n"+
		"- id: web-bad\n  name: mcp-client\n  config:\n    serverName: webbad\n    transport: streamable-http\n    url: "+yq(url)+"\n"+
		"    headers:\n"+
		"      Authorization: !!js '`Bearer ${process.env.E2E_BAD_SECRET}`'\n")
	rc := runConfig{dir: dir, env: []string{"E2E_JS_SECRET=" + jsTok, "E2E_HTTP_SECRET=" + httpTok, "E2E_BAD_SECRET=" + badTok}}

	var all collect
	// The setup works: the servers saw the secrets (their stderr is
	// redacted, not empty), the HTTP server accepted the headers, and the
	// entries meant to fail did.
	st := all.add(harnessWith(t, rc, "status", "--json"))
	doc := parseStatus(t, st)
	fx, web := doc.entry(t, "fx"), doc.entry(t, "web")
	if fx.State != "ready" || web.State != "ready" {
		t.Fatalf("fx %q, web %q: want both ready\n%s", fx.State, web.State, st)
	}
	if !slices.ContainsFunc(fx.Stderr, func(l string) bool { return strings.HasPrefix(l, "leak: <redacted> <redacted> ") }) {
		t.Errorf("fx's stderr should show the printed secrets redacted: %q\n%s", fx.Stderr, st)
	}
	for k, v := range fx.Env {
		if v != "<redacted>" {
			t.Errorf("env %s = %q in status --json, want <redacted>", k, v)
		}
	}
	for k, v := range web.Headers {
		if v != "<redacted>" {
			t.Errorf("header %s = %q in status --json, want <redacted>", k, v)
		}
	}
	if c := doc.entry(t, "crash"); c.State != "failed" || !strings.Contains(c.Error+strings.Join(c.Stderr, "\n"), "<redacted>") {
		t.Errorf("crash: state %q error %q stderr %q: want failed, its last stderr redacted", c.State, c.Error, c.Stderr)
	}
	if b := doc.entry(t, "web-bad"); b.State != "failed" {
		t.Errorf("web-bad: state %q, want failed (wrong token)", b.State)
	}

	all.add(harnessWith(t, rc, "status"))
	all.add(harnessWith(t, rc, "status", "--log-level", "debug"))
	all.add(harnessWith(t, rc, "status", "--json", "--log-level", "debug", "--log-format", "json"))
	all.add(harnessWith(t, rc, "validate"))
	all.add(harnessWith(t, rc, "validate", "--log-level", "debug"))
	all.add(harnessWith(t, rc, "tools", "--log-level", "debug"))
	all.add(harnessWith(t, rc, "tools", "--json", "--log-level", "debug"))
	all.add(harnessWith(t, rc, "call", "mcp__web__echo", `{"message":"x"}`, "--log-level", "debug"))
	all.add(harnessWith(t, rc, "call", "mcp__webbad__echo", `{"message":"x"}`, "--log-level", "debug"))
	all.add(harnessWith(t, rc, "call", "mcp__crash__echo", `{"message":"x"}`, "--log-level", "debug"))

	s := startSession(t, rc, "--log-level", "debug")
	s.do("/status")
	s.do("/tools")
	mark := s.mark()
	s.do("/restart fx")
	s.waitErr(mark, `"fx ready"`, hasPrefix("harness: fx ready"))
	s.do("/status")
	s.send("/quit\n")
	if code := s.waitExit(); code != 0 {
		t.Errorf("/quit: exit code %d\n%s", code, s.dump())
	}
	all.addSession("run --log-level debug", s)

	for _, r := range all.runs {
		assertNoSecret(t, r, secrets...)
	}
}

// A secret value that also stands in the server's arguments (here the
// fixture is told to print it with --stderr) is still ours to hide: status
// and the logs print the command line.
func TestSecretEchoedInArgsIsRedacted(t *testing.T) {
	t.Parallel()
	tok := secret(t, "argtok-")
	dir := t.TempDir()
	writeConfig(t, dir, fixtureEntry("fx", "fx", "--only", "echo", "--stderr", "leak "+tok+`\n`)+
		"    env:\n      MY_TOKEN: "+yq(tok)+"\n")
	for _, args := range [][]string{
		{"status"},
		{"status", "--json"},
		{"tools", "--log-level", "debug"},
	} {
		r := harness(t, dir, args...)
		expectCode(t, r, 0)
		assertNoSecret(t, r, tok)
	}
}

// shq quotes s for /bin/sh.
func shq(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

// Text from a server — a tool description, a tool name, its serverInfo
// name, its stderr — is printed with control characters escaped: no raw
// ESC or BEL reaches the terminal from `tools` or `status`.
func TestServerTextCannotDriveTerminal(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	// YAML double quotes: the fixture gets raw escape bytes in its
	// arguments, and so does its stderr.
	writeConfig(t, dir, `- id: fx
  name: mcp-client
  config:
    serverName: fx
    transport: stdio
    command: `+yq(fixtureBin)+`
    args: ["--only", "echo,ansi", "--raw-name", "evil\x1b[2Jname", "--name", "\x1b[1mbold-server", "--stderr", "\x1b[31mred stderr\x1b[0m \x1b]0;title\x07\n"]
`)
	var all collect
	tools := all.add(harness(t, dir, "tools"))
	expectCode(t, tools, 0)
	if !strings.Contains(tools.stdout, `mcp__fx__ansi  \x1b[31mRed\x1b[0m description`) {
		t.Errorf("tools should show the ansi tool's description with ESC escaped\n%s", tools)
	}
	if !strings.Contains(tools.stdout, publicName("fx", "evil\x1b[2Jname")) {
		t.Errorf("tools lacks the rewritten name of the tool whose name holds ESC\n%s", tools)
	}
	status := all.add(harness(t, dir, "status"))
	expectCode(t, status, 0)
	for _, want := range []string{`\x1b[31mred stderr\x1b[0m \x1b]0;title\x07`, `\x1b[1mbold-server`, `← evil\x1b[2Jname`} {
		if !strings.Contains(status.stdout, want) {
			t.Errorf("status should show %q\n%s", want, status)
		}
	}
	all.add(harness(t, dir, "tools", "--json"))
	all.add(harness(t, dir, "status", "--json"))
	all.add(harness(t, dir, "status", "--log-level", "debug"))

	s := startSession(t, runConfig{dir: dir})
	s.do("/tools")
	s.do("/status")
	s.send("/quit\n")
	if code := s.waitExit(); code != 0 {
		t.Errorf("/quit: exit code %d\n%s", code, s.dump())
	}
	all.addSession("run", s)

	for _, r := range all.runs {
		for stream, out := range map[string]string{"stdout": r.stdout, "stderr": r.stderr} {
			for _, c := range []string{"\x1b", "\x07", "\u009b"} {
				if i := strings.Index(out, c); i >= 0 {
					lo, hi := max(0, i-40), min(len(out), i+40)
					t.Errorf("harness %s: raw %q on %s: …%q…", strings.Join(r.args, " "), c, stream, out[lo:hi])
				}
			}
		}
	}
}
