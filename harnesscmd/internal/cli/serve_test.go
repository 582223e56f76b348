package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/harness-go/harness/internal/loop"
)

func TestServeFlags(t *testing.T) {
	t.Parallel()
	o, err := parse([]string{"serve", "--http", "127.0.0.1:0", "--tools", "meta", "--allow-host", "a.example", "--allow-host=b.example", "--token=t0ken-value"})
	if err != nil {
		t.Fatal(err)
	}
	f := o.serve
	if o.command != "serve" || f.http != "127.0.0.1:0" || f.tools != "meta" || strings.Join(f.allowHosts, ",") != "a.example,b.example" || f.token != "t0ken-value" {
		t.Fatalf("parsed %+v", f)
	}
	for _, tc := range []struct {
		args []string
		want string
		code int
	}{
		{[]string{"tools", "--http", "127.0.0.1:0"}, "flag --http is for serve and web, not tools", 2},
		{[]string{"serve", "--tools", "some"}, "--tools must be full or meta", 2},
		{[]string{"serve", "--token", "t0ken-value"}, "--token and --allow-host go with --http", 2},
		{[]string{"serve", "extra"}, "serve takes no arguments", 2},
		{[]string{"serve", "--json"}, "flag --json is for ask, tools, call, resources, read, prompts, prompt, status and login, not serve", 2},
		{[]string{"serve", "--http", "0.0.0.0:8750"}, "without a token", 2},
		{[]string{"help", "serve"}, "", 0},
	} {
		var out, errOut bytes.Buffer
		code := Main(context.Background(), tc.args, Env{Stdin: strings.NewReader(""), Stdout: &out, Stderr: &errOut})
		if code != tc.code || !strings.Contains(errOut.String(), tc.want) {
			t.Errorf("%v: exit %d, stderr %q; want %d and %q", tc.args, code, errOut.String(), tc.code, tc.want)
		}
	}
}

// serveConfig writes a cordis.yml with one echo entry in a new folder.
func serveConfig(t *testing.T) string {
	t.Helper()
	file := filepath.Join(t.TempDir(), "cordis.yml")
	if err := os.WriteFile(file, []byte("- id: echo\n  name: echo\n- id: gw\n  name: mcp-server\n  config: {listen: \"127.0.0.1:0\"}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return file
}

// harness serve over stdio: stdout holds protocol messages only, and the
// end of stdin ends it with exit 0, every answer written.
func TestServeStdio(t *testing.T) {
	t.Parallel()
	file := serveConfig(t)
	in := strings.Join([]string{
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"0"}}}`,
		`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
		`{"jsonrpc":"2.0","id":2,"method":"tools/list"}`,
		`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"echo","arguments":{"message":"hi"}}}`,
	}, "\n") + "\n"
	var out, errOut bytes.Buffer
	code := Main(context.Background(), []string{"serve", "-c", file, "--log-level", "info"}, Env{Stdin: strings.NewReader(in), Stdout: &out, Stderr: &errOut})
	if code != 0 {
		t.Fatalf("exit %d\nstdout %s\nstderr %s", code, out.String(), errOut.String())
	}
	answers := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(out.String()), "\n") {
		var m struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
			Result json.RawMessage `json:"result"`
		}
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("stdout holds a line that is not JSON-RPC: %q", line)
		}
		if m.Method == "" {
			answers[string(m.ID)] = string(m.Result)
		}
	}
	if !strings.Contains(answers["2"], `"name":"echo"`) || strings.Contains(answers["2"], "mcp-server") {
		t.Fatalf("tools/list: %s", answers["2"])
	}
	if answers["3"] != `{"content":[{"type":"text","text":"hi"}]}` {
		t.Fatalf("tools/call: %s", answers["3"])
	}
	// The mcp-server entry of the file does not listen: serve is the server.
	if !strings.Contains(errOut.String(), "mcp-server entry ignored") {
		t.Fatalf("stderr does not say the mcp-server entry was ignored:\n%s", errOut.String())
	}
}

// A harness started by a harness that runs the same cordis.yml refuses to
// start: it would start itself again, without end.
func TestServeRefusesALoop(t *testing.T) {
	t.Parallel()
	file := serveConfig(t)
	parent := loop.New(file, "")
	env := Env{
		Stdin: strings.NewReader(""), Stdout: io.Discard,
		Lookup: func(k string) (string, bool) {
			if k == loop.EnvVar {
				return parent.Next(), true
			}
			return "", false
		},
	}
	var errOut bytes.Buffer
	env.Stderr = &errOut
	if code := Main(context.Background(), []string{"serve", "-c", file}, env); code != ExitUsage {
		t.Fatalf("exit %d, stderr %s", code, errOut.String())
	}
	if !strings.Contains(errOut.String(), "harness: refusing to start: harness loop: "+file+" is already run by a harness in front of this one") ||
		!strings.HasSuffix(errOut.String(), "without end; remove the entry that runs `harness serve` on this file\n") {
		t.Fatalf("stderr %q", errOut.String())
	}
}
