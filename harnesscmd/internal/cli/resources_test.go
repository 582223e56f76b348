package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const echoConfig = "- id: echo\n  name: echo\n"

// TestResourceCommands runs resources, read, prompts and prompt against the
// echo plugin's resource and prompt: what prints, --json, and the exit
// codes of what is unknown.
func TestResourceCommands(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		args   []string
		code   int
		stdout string // a part of stdout ("" for empty)
		stderr string // a part of stderr
	}{
		{"resources", []string{"resources"}, 0, "echo  echo://about  about  text/plain\n", ""},
		{"resources json", []string{"resources", "--json"}, 0, `{"resources":[{"server":"echo","uri":"echo://about","name":"about","title":"About the echo plugin","description":"What the echo plugin offers.","mimeType":"text/plain"}],"resourceTemplates":[]}`, ""},
		{"read", []string{"read", "echo", "echo://about"}, 0, "The echo plugin registers the tools echo and clock", ""},
		{"read json", []string{"read", "echo", "echo://about", "--json"}, 0, `{"contents":[{"uri":"echo://about","mimeType":"text/plain","text":"The echo plugin`, ""},
		{"read an unknown server", []string{"read", "nope", "x://y"}, 2, "", `no server "nope" has resources; servers with resources: echo`},
		{"read an unknown uri", []string{"read", "echo", "echo://nothing"}, 2, "", `echo has no resource "echo://nothing"`},
		{"read without a uri", []string{"read", "echo"}, 2, "", "read takes a server and a resource uri"},
		{"prompts", []string{"prompts"}, 0, "repeat  Ask the model to repeat a message through the echo tool.\n    message (required)  What to repeat.\n", ""},
		{"prompts json", []string{"prompts", "--json"}, 0, `[{"name":"repeat","description":"Ask the model to repeat a message through the echo tool.","arguments":[{"name":"message","description":"What to repeat.","required":true}]}]`, ""},
		{"prompt", []string{"prompt", "repeat", "message=hi there"}, 0, "user: Call the tool echo with the message \"hi there\", and tell me what it answered.\n", ""},
		{"prompt json args", []string{"prompt", "repeat", `{"message":"hi"}`, "--json"}, 0, `{"messages":[{"role":"user","content":{"text":"Call the tool echo with the message \"hi\", and tell me what it answered.","type":"text"}}]}`, ""},
		{"prompt missing argument", []string{"prompt", "repeat"}, 2, "", `repeat needs the argument "message"`},
		{"prompt unknown argument", []string{"prompt", "repeat", "message=a", "tone=b"}, 2, "", `takes no argument "tone" (it takes message)`},
		{"prompt not key=value", []string{"prompt", "repeat", "hello"}, 2, "", `argument "hello" is not key=value`},
		{"unknown prompt", []string{"prompt", "nope"}, 2, "", `unknown prompt "nope"; prompts: repeat`},
		{"-o is for read", []string{"prompts", "-o", "x"}, 2, "", "is for read, not prompts"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r := runMain(t, echoConfig, nil, false, nil, tc.args...)
			if r.code != tc.code || !strings.Contains(r.stdout, tc.stdout) || !strings.Contains(r.stderr, tc.stderr) {
				t.Fatalf("want exit %d, stdout with %q, stderr with %q; got\n%s", tc.code, tc.stdout, tc.stderr, r)
			}
			if tc.stdout == "" && r.stdout != "" {
				t.Fatalf("stdout is not empty:\n%s", r)
			}
		})
	}
}

// TestReadToAFile: -o writes the bytes and prints nothing.
func TestReadToAFile(t *testing.T) {
	t.Parallel()
	out := filepath.Join(t.TempDir(), "about.txt")
	r := runMain(t, echoConfig, nil, false, nil, "read", "echo", "echo://about", "-o", out)
	if r.code != 0 || r.stdout != "" {
		t.Fatalf("%s", r)
	}
	data, err := os.ReadFile(out)
	if err != nil || !strings.HasPrefix(string(data), "The echo plugin registers") {
		t.Fatalf("the file holds %q (%v)", data, err)
	}
}
