package e2e

import (
	"encoding/base64"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/harness-go/harness/internal/testkit/fakellm"
	"github.com/harness-go/harness/internal/testkit/npmtest"
)

// checkEverythingResources runs what every transport of server-everything
// must show of its resources and prompts through the commands: the
// listings, a text read, a binary one (-o and --json), a template's
// expansion, prompts rendered, the exit codes of what is unknown, and the
// counts of status.
func checkEverythingResources(t *testing.T, dir string) {
	t.Helper()
	r := harness(t, dir, "resources")
	expectCode(t, r, 0)
	for _, want := range []string{
		"ev  demo://resource/static/document/architecture.md  architecture.md  text/markdown\n",
		"ev  demo://resource/dynamic/text/{resourceId}  Dynamic Text Resource  text/plain  (template)\n",
		"ev  demo://resource/dynamic/blob/{resourceId}  Dynamic Blob Resource  application/octet-stream  (template)\n",
	} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("resources lacks %q\n%s", want, r)
		}
	}
	r = harness(t, dir, "resources", "--json")
	expectCode(t, r, 0)
	var listed struct {
		Resources []struct {
			Server, URI, Name, MimeType string
		} `json:"resources"`
		Templates []struct {
			Server, URITemplate string
		} `json:"resourceTemplates"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &listed); err != nil || len(listed.Resources) < 7 || len(listed.Templates) != 2 || listed.Resources[0].Server != "ev" {
		t.Fatalf("resources --json: %+v (%v)\n%s", listed, err, r)
	}

	r = harness(t, dir, "read", "ev", "demo://resource/dynamic/text/1")
	expectCode(t, r, 0)
	if !strings.HasPrefix(r.stdout, "Resource 1: This is a plaintext resource") {
		t.Errorf("read of a template's expansion printed %q\n%s", r.stdout, r)
	}
	// A binary content: not printed, said on stderr, exit 1; -o writes it;
	// --json carries it in base64.
	blob := "demo://resource/dynamic/blob/1"
	r = harness(t, dir, "read", "ev", blob)
	expectCode(t, r, 1)
	if r.stdout != "" || !strings.Contains(r.stderr, "is binary") || !strings.Contains(r.stderr, "use -o FILE") {
		t.Errorf("read of a blob\n%s", r)
	}
	out := filepath.Join(t.TempDir(), "blob")
	r = harness(t, dir, "read", "ev", blob, "-o", out)
	expectCode(t, r, 0)
	data, err := os.ReadFile(out)
	if err != nil || !strings.HasPrefix(string(data), "Resource 1: This is a base64 blob") {
		t.Errorf("-o wrote %q (%v)\n%s", data, err, r)
	}
	r = harness(t, dir, "read", "ev", blob, "--json")
	expectCode(t, r, 0)
	var read struct {
		Contents []struct{ URI, Blob string }
	}
	if err := json.Unmarshal([]byte(r.stdout), &read); err != nil || len(read.Contents) != 1 {
		t.Fatalf("read --json: %v\n%s", err, r)
	}
	// The server stamps each read with the time: the two reads share the rest.
	if b, _ := base64.StdEncoding.DecodeString(read.Contents[0].Blob); !strings.HasPrefix(string(b), "Resource 1: This is a base64 blob") {
		t.Errorf("read --json blob %q, -o %q", b, data)
	}
	r = harness(t, dir, "read", "ev", "demo://nothing")
	expectCode(t, r, 2)
	r = harness(t, dir, "read", "nope", "demo://nothing")
	expectCode(t, r, 2)

	r = harness(t, dir, "prompts")
	expectCode(t, r, 0)
	if !strings.Contains(r.stdout, "mcp__ev__args-prompt  A prompt with two arguments, one required and one optional\n    city (required)  Name of the city\n    state\n") {
		t.Errorf("prompts\n%s", r)
	}
	r = harness(t, dir, "prompt", "mcp__ev__args-prompt", "city=Paris")
	expectCode(t, r, 0)
	if r.stdout != "user: What's weather in Paris?\n" {
		t.Errorf("prompt printed %q\n%s", r.stdout, r)
	}
	r = harness(t, dir, "prompt", "mcp__ev__resource-prompt", `{"resourceType":"Text","resourceId":"2"}`, "--json")
	expectCode(t, r, 0)
	if !strings.Contains(r.stdout, `"type":"resource"`) || !strings.Contains(r.stdout, "demo://resource/dynamic/text/2") {
		t.Errorf("prompt --json with an embedded resource\n%s", r)
	}
	r = harness(t, dir, "prompt", "mcp__ev__args-prompt")
	expectCode(t, r, 2)
	r = harness(t, dir, "prompt", "mcp__ev__nope")
	expectCode(t, r, 2)

	r = harness(t, dir, "status", "--json")
	expectCode(t, r, 0)
	var st struct {
		Entries []struct {
			ID                            string
			Resources, Templates, Prompts int
		}
	}
	if err := json.Unmarshal([]byte(r.stdout), &st); err != nil || len(st.Entries) != 1 || st.Entries[0].Resources < 7 || st.Entries[0].Templates != 2 || st.Entries[0].Prompts < 4 {
		t.Errorf("status counts: %+v (%v)\n%s", st, err, r)
	}
}

func TestEverythingResourcesStdio(t *testing.T) {
	t.Parallel()
	bin := npmtest.Bin(t, "mcp-server-everything")
	dir := t.TempDir()
	writeConfig(t, dir, stdioEntry("ev", "mcp-client", "ev", bin, "stdio"))
	checkEverythingResources(t, dir)
}

func TestEverythingResourcesStreamableHTTP(t *testing.T) {
	t.Parallel()
	bin := npmtest.Bin(t, "mcp-server-everything")
	url := startEverythingHTTP(t, bin)
	dir := t.TempDir()
	writeConfig(t, dir, "- id: ev\n  name: mcp-client\n  config:\n    serverName: ev\n"+
		"    transport: streamable-http\n    url: "+yq(url)+"\n")
	checkEverythingResources(t, dir)
}

// On a terminal, Tab completes @server:uri in a message and a prompt's name
// and arguments after /prompt; the mention's text and the prompt's
// messages reach the model.
func TestTerminalResourcesAndPrompts(t *testing.T) {
	t.Parallel()
	srv := fakellm.Start(t, fakellm.Say("noted"), fakellm.Say("repeated"))
	dir := t.TempDir()
	writeConfig(t, dir, echoEntry+agentEntry("model", srv.URL))
	s := startTTY(t, runConfig{dir: dir, env: []string{"XDG_STATE_HOME=" + t.TempDir()}})
	s.prompt("")
	s.keys("what is in @ec")
	s.prompt("what is in @ec")
	s.keys(keyTab)
	s.prompt("what is in @echo:")
	s.keys(keyTab)
	s.prompt("what is in @echo:echo://about")
	s.keys("?" + keyEnter)
	s.waitLines("noted", 1)
	s.prompt("")

	s.keys("/prompt rep")
	s.keys(keyTab)
	s.prompt("/prompt repeat")
	s.keys(" ")
	s.keys(keyTab)
	s.prompt("/prompt repeat message=")
	s.keys("hi" + keyEnter)
	s.waitLines("repeated", 1)
	s.prompt("")
	s.quitWith("/quit"+keyEnter, "/quit")

	reqs := srv.Requests()
	if len(reqs) != 2 {
		t.Fatalf("%d requests to the model", len(reqs))
	}
	if got := reqs[0].Last().Content; !strings.HasPrefix(got, "what is in @echo:echo://about?\n\n[resource @echo:echo://about]\nThe echo plugin registers the tools echo and clock") {
		t.Errorf("the message with the mention: %q", got)
	}
	if got := reqs[1].Last().Content; got != `Call the tool echo with the message "hi", and tell me what it answered.` {
		t.Errorf("the prompt's message: %q", got)
	}
}

// The model reads a resource of server-everything through
// read_mcp_resource, as the agent offers it while resources exist.
func TestAskReadsAResource(t *testing.T) {
	t.Parallel()
	ev := npmtest.Bin(t, "mcp-server-everything")
	srv := fakellm.Start(t,
		fakellm.Call(fakellm.ToolCallSpec{ID: "r", Name: "read_mcp_resource", Arguments: `{"server":"ev","uri":"demo://resource/dynamic/text/7"}`}),
		fakellm.Say("it is resource 7"))
	dir := t.TempDir()
	writeConfig(t, dir, stdioEntry("ev", "mcp-client", "ev", ev, "stdio")+agentEntry("model", srv.URL))
	r := harness(t, dir, "ask", "read resource 7")
	expectCode(t, r, 0)
	if !strings.Contains(r.stderr, "→ read_mcp_resource {\"server\":\"ev\",\"uri\":\"demo://resource/dynamic/text/7\"}\n← Resource 7: This is a plaintext resource") {
		t.Errorf("stderr\n%s", r)
	}
	second := srv.Wait(2, waitTimeout)
	if got := second.Last().Content; !strings.HasPrefix(got, "Resource 7: This is a plaintext resource") {
		t.Errorf("the tool result the model got: %q", got)
	}
	var sent []struct {
		Function struct{ Name string } `json:"function"`
	}
	_ = json.Unmarshal(srv.Requests()[0].Tools, &sent)
	names := map[string]bool{}
	for _, f := range sent {
		names[f.Function.Name] = true
	}
	if !names["list_mcp_resources"] || !names["list_mcp_resource_templates"] || !names["read_mcp_resource"] {
		t.Errorf("the resource tools were not sent: %v", names)
	}
}

// The TypeScript SDK's client, through `harness serve` over stdio and HTTP,
// lists server-everything's resources, templates and prompts and reads and
// gets them, and sees what the same client sees talking to
// server-everything itself: the same objects (each resource under its own
// URI), the prompts under their public names (RFC 0008). What may differ:
// the order (the gateway's lists are sorted), an argument's
// "required": false (mcp-go's types leave the default out), and the time
// server-everything writes into each dynamic text.
func TestGatewayTSClientResources(t *testing.T) {
	t.Parallel()
	bin := npmtest.Bin(t, "mcp-server-everything")
	direct := startTS(t)
	direct.mustDo(map[string]any{"op": "connect", "command": bin, "args": []string{"stdio"}})
	want := map[string]map[string]any{}
	for _, op := range []string{"resources", "templates", "prompts"} {
		want[op] = direct.mustDo(map[string]any{"op": op})
	}
	wantRead := direct.mustDo(map[string]any{"op": "read", "uri": "demo://resource/dynamic/text/1"})
	wantPrompt := direct.mustDo(map[string]any{"op": "prompt", "name": "resource-prompt", "arguments": map[string]any{"resourceType": "Text", "resourceId": "2"}})
	direct.mustDo(map[string]any{"op": "close"})
	if n := len(want["resources"]["resources"].([]any)); n < 7 {
		t.Fatalf("server-everything lists %d resources itself", n)
	}
	for _, transport := range []string{"stdio", "http"} {
		t.Run(transport, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			file := writeConfig(t, dir, stdioEntry("ev", "mcp-client", "ev", bin, "stdio"))
			ts := startTS(t)
			if transport == "stdio" {
				ts.mustDo(map[string]any{"op": "connect", "command": harnessBin, "args": []string{"serve", "-c", file}, "cwd": dir, "env": raceEnv()})
			} else {
				srv := serveHTTP(t, runConfig{dir: dir}, "-c", file)
				ts.mustDo(map[string]any{"op": "connect", "url": srv.url})
			}
			for _, op := range []string{"resources", "templates"} {
				got := canonical(ts.mustDo(map[string]any{"op": op}))
				exp := canonical(want[op])
				if got != exp {
					t.Errorf("%s through the gateway:\n%s\nwant, as server-everything lists them:\n%s", op, got, exp)
				}
			}
			// The prompts: server-everything's, each under mcp__ev__<name>.
			var renamed []any
			for _, p := range want["prompts"]["prompts"].([]any) {
				obj := map[string]any{}
				for k, v := range p.(map[string]any) {
					obj[k] = v
				}
				obj["name"] = "mcp__ev__" + obj["name"].(string)
				renamed = append(renamed, obj)
			}
			got := canonical(ts.mustDo(map[string]any{"op": "prompts"})["prompts"])
			exp := canonical(renamed)
			if got != exp {
				t.Errorf("prompts through the gateway:\n%s\nwant server-everything's under their public names:\n%s", got, exp)
			}
			read := canonical(ts.mustDo(map[string]any{"op": "read", "uri": "demo://resource/dynamic/text/1"}))
			if exp := canonical(wantRead); read != exp || !strings.Contains(read, "Resource 1: This is a plaintext resource") {
				t.Errorf("a template's read through the gateway:\n%s\nwant:\n%s", read, exp)
			}
			prompt := canonical(ts.mustDo(map[string]any{"op": "prompt", "name": "mcp__ev__resource-prompt", "arguments": map[string]any{"resourceType": "Text", "resourceId": "2"}}))
			if exp := canonical(wantPrompt); prompt != exp || !strings.Contains(prompt, `"type":"resource"`) {
				t.Errorf("a prompt with an embedded resource through the gateway:\n%s\nwant:\n%s", prompt, exp)
			}
			ts.mustDo(map[string]any{"op": "close"})
		})
	}
}

// createdAt is the time server-everything writes into a dynamic text.
var createdAt = regexp.MustCompile(`created at [0-9:]+ [AP]M`)

// canonical is v as JSON with what TestGatewayTSClientResources lets
// differ taken out: the order of the lists of resources, templates and
// prompts (a list at the top, or under "resources" or
// "resourceTemplates"), "required": false, and the time of a dynamic text.
func canonical(v any) string {
	var norm func(v any, sorted bool) any
	norm = func(v any, sorted bool) any {
		switch x := v.(type) {
		case map[string]any:
			out := map[string]any{}
			for k, e := range x {
				if k == "required" && e == false {
					continue
				}
				out[k] = norm(e, k == "resources" || k == "resourceTemplates")
			}
			return out
		case []any:
			elems := make([]string, len(x))
			for i, e := range x {
				b, _ := json.Marshal(norm(e, false))
				elems[i] = string(b)
			}
			if sorted {
				slices.Sort(elems)
			}
			out := make([]any, len(elems))
			for i, e := range elems {
				out[i] = json.RawMessage(e)
			}
			return out
		case string:
			return createdAt.ReplaceAllString(x, "created at <time>")
		}
		return v
	}
	b, _ := json.Marshal(norm(v, true))
	return string(b)
}
