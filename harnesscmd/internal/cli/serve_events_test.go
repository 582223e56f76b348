package cli

import (
	"context"
	"io"
	"os"
	"strings"
	"testing"
)

// After its start, harness serve says on stderr what an edit of cordis.yml
// did — refused, an entry that failed, what a reload changed — as run does
// in a pipe: its client keeps stderr in its log, and stdout stays the
// protocol's.
func TestServeReportsReloads(t *testing.T) {
	t.Parallel()
	file := serveConfig(t)
	if err := os.WriteFile(file, []byte("- id: echo\n  name: echo\n- id: gone\n  name: mcp-client\n  config: {serverName: gone, transport: stdio, command: no-such-command-here}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	inR, inW := io.Pipe()
	out, errOut := newLines(), newLines()
	done := make(chan int, 1)
	go func() {
		done <- Main(context.Background(), []string{"serve", "-c", file}, Env{Stdin: inR, Stdout: out, Stderr: errOut})
	}()
	io.WriteString(inW, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"0"}}}`+"\n")
	out.waitFor(t, `"id":1`)
	errOut.waitFor(t, `entry "gone" failed`) // the start's report is out: what follows is events

	if err := os.WriteFile(file, []byte("- id: echo\n  name: echo\n  config: [\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	errOut.waitFor(t, "harness: reload refused, nothing changed: ")
	if err := os.WriteFile(file, []byte("- id: echo\n  name: echo\n- id: bad\n  name: mcp-client\n  config: {serverName: bad, transport: stdio, command: no-such-command-here}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	errOut.waitFor(t, "reloaded: ")
	errOut.waitFor(t, `harness: bad failed: connect: command "no-such-command-here" not found`)
	inW.Close()
	if code := <-done; code != 0 {
		t.Fatalf("exit %d\n%s", code, errOut.String())
	}
	for _, line := range strings.Split(strings.TrimSpace(out.String()), "\n") {
		if !strings.HasPrefix(line, `{"jsonrpc":"2.0"`) {
			t.Fatalf("stdout holds %q", line)
		}
	}
}
