package e2e

// What servers and configurations must not be able to do through our
// output: leak a secret, or drive the terminal.

import (
	"encoding/json"
	"net/url"
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
	c.runs = append(c.runs, result{args: []string{name}, stdout: s.out.Text(), stderr: s.err.Text(), code: s.exit.Code()})
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

// Redaction keeps ordinary words: an env value that is not named like a
// credential and does not look like one prints (a hostile test: `env:
// {FIXTURE_MODE: stubborn}` listed the server's tools as
// mcp__<redacted>__echo, and NODE_ENV: production would have hidden the
// word in every description). A value named like a credential, or shaped
// like a token, is still hidden.
func TestOrdinaryEnvValuesPrint(t *testing.T) {
	t.Parallel()
	tok := secret(t, "Tok0")
	dir := t.TempDir()
	writeConfig(t, dir, fixtureEntry("stubborn", "stubborn", "--only", "echo", "--stderr", "mode stubborn production, build "+tok+`\n`)+
		"    env:\n      FIXTURE_MODE: stubborn\n      NODE_ENV: production\n      BUILD_ID: "+yq(tok)+"\n")
	r := harness(t, dir, "tools")
	expectCode(t, r, 0)
	if !strings.HasPrefix(r.stdout, "mcp__stubborn__echo ") {
		t.Fatalf("tools printed %q, want mcp__stubborn__echo", r.stdout)
	}
	r = harness(t, dir, "status")
	expectCode(t, r, 0)
	assertNoSecret(t, r, tok)
	if !strings.Contains(r.stdout, "mode stubborn production, build <redacted>") {
		t.Fatalf("status does not show the server's stderr with only the token hidden:\n%s", r)
	}
}

// A credential of the configuration is kept from stdio servers by value:
// the variable a !!js expression read the gateway's token from is not
// inherited, whatever its name (GW_VALUE is not in the scrub table; a
// hostile test saw the server receive it); an ordinary variable is.
func TestCredentialVariablesAreNotInherited(t *testing.T) {
	t.Parallel()
	tok := secret(t, "gw-")
	dir := t.TempDir()
	writeConfig(t, dir, "- id: gw\n  name: mcp-server\n  config: {listen: \"127.0.0.1:0\", token: !!js process.env.GW_VALUE}\n"+
		fixtureEntry("fx", "fx", "--only", "env"))
	rc := runConfig{dir: dir, env: []string{"GW_VALUE=" + tok, "PLAIN_VALUE=an ordinary value"}}
	for name, want := range map[string]string{"GW_VALUE": "<unset>", "PLAIN_VALUE": "an ordinary value"} {
		r := harnessWith(t, rc, "call", "mcp__fx__env", `{"name":"`+name+`"}`)
		expectCode(t, r, 0)
		if got := strings.TrimSpace(r.stdout); got != want {
			t.Errorf("the server's %s: %q, want %q", name, got, want)
		}
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

// The findings of a hostile day (docs/RELIABILITY.md): secrets that reached our
// output through a server's own words — its tools/list error (first listing
// and re-sync), its serverInfo, its stderr — through another entry than the
// one that holds them, JSON-escaped, URL-encoded, or cut at a clip boundary.
// The secret set is one per host, and every output path uses it.
func TestHostileSecretsNeverPrinted(t *testing.T) {
	t.Parallel()
	listTok := secret(t, "list-")
	resyncTok := secret(t, "resync-")
	infoTok := secret(t, "info-")
	crossTok := secret(t, "cross-")
	quoteTok := `q"uo\te-` + secret(t, "")
	urlTok := "u rl/tok+" + secret(t, "")
	clipTok := secret(t, "clip-")
	pyTok := "py tok/+" + secret(t, "")
	pem1, pem2 := secret(t, "pem1-"), secret(t, "pem2-")
	pemKey := "-----BEGIN PRIVATE KEY-----\n" + pem1 + "\n" + pem2 + "\n-----END PRIVATE KEY-----\n"
	nameTok := secret(t, "name-")
	argTok := secret(t, "arg-")
	secrets := []string{listTok, resyncTok, infoTok, crossTok, quoteTok, urlTok, clipTok, pyTok, pem1, pem2, nameTok, argTok}

	// Each server is a shell that expands the secret from the environment the
	// harness gave it, so the secret stands in no argument of ours — except
	// where a test wants it there.
	sh := func(id, script string, env map[string]string) string {
		before, args, _ := strings.Cut(script, "|") // "shell commands|fixture arguments"
		if args == "" {
			before, args = "", script
		}
		e := stdioEntry(id, "mcp-client", id, "/bin/sh", "-c", before+"exec "+shq(fixtureBin)+" "+args)
		if len(env) > 0 {
			e += "    env:\n"
			for k, v := range env {
				q, _ := json.Marshal(v) // a YAML double-quoted string: keeps line breaks
				e += "      " + k + ": " + string(q) + "\n"
			}
		}
		return e
	}
	// A line longer than the stderr clip (2 KiB) with the secret across the cut.
	long := strings.Repeat("x", 2048-6)
	dir := t.TempDir()
	writeConfig(t, dir,
		sh("listfail", `--only echo --list-error "tools/list denied for $LIST_TOKEN"`, map[string]string{"LIST_TOKEN": listTok})+
			sh("resync", `--only echo --list-changed-on-start --list-error-after 1 --list-error "re-list denied for $RESYNC_TOKEN"`, map[string]string{"RESYNC_TOKEN": resyncTok})+
			sh("info", `--only echo --name "srv-$INFO_TOKEN" --version "v-$INFO_TOKEN"`, map[string]string{"INFO_TOKEN": infoTok})+
			// holder has the secret; other prints it (literally, from its
			// arguments) without having it: redaction is per host, not per entry.
			sh("holder", `--only echo`, map[string]string{"CROSS_TOKEN": crossTok})+
			sh("other", `--only echo --stderr `+shq("other saw "+crossTok+`\n`), nil)+
			sh("quote", `printf 'quoted: %s\n' "$QUOTE_TOKEN" >&2; |--only echo`, map[string]string{"QUOTE_TOKEN": quoteTok})+
			sh("urlenc", `--only echo --stderr `+shq("GET https://example.com/?k="+url.QueryEscape(urlTok)+" path /"+url.PathEscape(urlTok)+`\n`), map[string]string{"URL_TOKEN": urlTok})+
			sh("clip", `--only echo --stderr "`+long+`$CLIP_TOKEN tail\n"`, map[string]string{"CLIP_TOKEN": clipTok})+
			// Python's quote keeps "/" and writes lower-case hex here.
			sh("pyquote", `--only echo --stderr `+shq("GET /?k="+strings.ReplaceAll(strings.ReplaceAll(pyTok, " ", "%20"), "+", "%2b")+`\n`), map[string]string{"PY_TOKEN": pyTok})+
			// A key of several lines, printed line by line.
			sh("pem", `printf '%s\n' "$PEM_KEY" >&2; |--only echo`, map[string]string{"PEM_KEY": pemKey})+
			// A tool named after a secret: the tool list is our output too.
			sh("named", `--only echo --raw-name "t-$NAME_TOKEN"`, map[string]string{"NAME_TOKEN": nameTok})+
			// A literal credential in args (the shell ignores "$1").
			stdioEntry("literal", "mcp-client", "literal", "/bin/sh", "-c", "exec "+shq(fixtureBin)+" --only echo", "sh", "--api-key="+argTok))

	rc := runConfig{dir: dir}
	var all collect
	st := all.add(harnessWith(t, rc, "status", "--json"))
	doc := parseStatus(t, st)
	// The setup did what it should: the secrets really reached our output
	// paths, redacted.
	if e := doc.entry(t, "listfail"); e.State != "failed" || !strings.Contains(e.Error, "tools/list denied for <redacted>") {
		t.Errorf("listfail: state %q error %q, want failed with the redacted server error\n%s", e.State, e.Error, st)
	}
	if e := doc.entry(t, "info"); e.Server == nil || e.Server.Name != "srv-<redacted>" || e.Server.Version != "v-<redacted>" {
		t.Errorf("info: serverInfo %+v, want the secret redacted\n%s", e.Server, st)
	}
	for id, want := range map[string]string{
		"other":   "other saw <redacted>",
		"quote":   "quoted: <redacted>",
		"urlenc":  "GET https://example.com/?k=<redacted> path /<redacted>",
		"pyquote": "GET /?k=<redacted>",
		"pem":     "<redacted>",
	} {
		if e := doc.entry(t, id); !slices.Contains(e.Stderr, want) {
			t.Errorf("%s: stderr %q, want the line %q\n%s", id, e.Stderr, want, st)
		}
	}
	if out := all.add(harnessWith(t, rc, "status")).stdout; !strings.Contains(out, "--api-key=<redacted>") {
		t.Errorf("status: the literal credential in args is not shown redacted:\n%s", out)
	}
	if e := doc.entry(t, "clip"); len(e.Stderr) == 0 || !strings.HasPrefix(e.Stderr[0], long+"<red") {
		t.Errorf("clip: stderr %q, want the long line redacted then cut", e.Stderr)
	}

	// The re-sync fails after the first listing, so a one-shot command may
	// end before it: the console waits for it. The default log level shows
	// it (a WARN record), and /status says so.
	rs := startSession(t, rc)
	rs.waitErr(0, `"re-sync failed"`, containsAll("re-sync failed", "resync"))
	if out := strings.Join(rs.do("/status"), "\n"); !strings.Contains(out, "last sync failed: tools/list: re-list denied for <redacted>") {
		t.Errorf("resync: /status does not show the redacted sync error:\n%s", out)
	}
	rs.send("/quit\n")
	if code := rs.waitExit(); code != 0 {
		t.Errorf("/quit: exit code %d\n%s", code, rs.dump())
	}
	all.addSession("run", rs)
	all.add(harnessWith(t, rc, "status"))
	all.add(harnessWith(t, rc, "status", "--log-level", "debug"))
	all.add(harnessWith(t, rc, "status", "--json", "--log-level", "debug", "--log-format", "json"))
	all.add(harnessWith(t, rc, "tools", "--log-level", "debug", "--log-format", "json"))
	all.add(harnessWith(t, rc, "tools", "--json"))
	if out := all.add(harnessWith(t, rc, "tools")).stdout; !strings.Contains(out, "mcp__named__t-<redacted>") {
		t.Errorf("tools: the secret tool name is not shown redacted:\n%s", out)
	}
	all.add(harnessWith(t, rc, "call", "mcp__listfail__echo", `{"message":"x"}`))
	all.add(harnessWith(t, rc, "validate"))

	s := startSession(t, rc, "--log-level", "debug")
	s.do("/status")
	s.do("/tools")
	s.send("/quit\n")
	if code := s.waitExit(); code != 0 {
		t.Errorf("/quit: exit code %d\n%s", code, s.dump())
	}
	all.addSession("run --log-level debug", s)

	for _, r := range all.runs {
		assertNoSecret(t, r, secrets...)
	}
}
