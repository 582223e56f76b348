package web

import (
	"encoding/json"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/harness-go/harness/internal/testkit/npmtest"
)

// The page's expansion of a resource template (assets/resources.js,
// expand), run in node on the page's own module: the examples of RFC 6570
// §1.2 for levels 1 to 3 (a field left empty is unset: the form has no way
// to tell an empty value from none), and values that a naive string
// replacement would mangle.
func TestURITemplateExpand(t *testing.T) {
	t.Parallel()
	node := npmtest.Node(t)
	dir := t.TempDir()
	sub, err := fs.Sub(assets, "assets")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.CopyFS(dir, sub); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "package.json"), []byte(`{"type":"module"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	vars := map[string]string{"var": "value", "hello": "Hello World!", "path": "/foo/bar", "x": "1024", "y": "768", "empty": "",
		"dollar": "a$&b$1", "brace": "{var}", "pct": "50%"}
	cases := map[string]string{
		// Level 1.
		"{var}":   "value",
		"{hello}": "Hello%20World%21",
		"{undef}": "",
		// Level 2.
		"{+var}":           "value",
		"{+hello}":         "Hello%20World!",
		"{+path}/here":     "/foo/bar/here",
		"here?ref={+path}": "here?ref=/foo/bar",
		"X{#var}":          "X#value",
		"X{#hello}":        "X#Hello%20World!",
		// Level 3.
		"map?{x,y}":      "map?1024,768",
		"{x,hello,y}":    "1024,Hello%20World%21,768",
		"{+x,hello,y}":   "1024,Hello%20World!,768",
		"{+path,x}/here": "/foo/bar,1024/here",
		"{#x,hello,y}":   "#1024,Hello%20World!,768",
		"{#path,x}/here": "#/foo/bar,1024/here",
		"X{.var}":        "X.value",
		"X{.x,y}":        "X.1024.768",
		"{/var}":         "/value",
		"{/var,x}/here":  "/value/1024/here",
		"{;x,y}":         ";x=1024;y=768",
		"{;x,y,empty}":   ";x=1024;y=768",
		"{?x,y}":         "?x=1024&y=768",
		"{?x,y,undef}":   "?x=1024&y=768",
		"?fixed=yes{&x}": "?fixed=yes&x=1024",
		"{&x,y,empty}":   "&x=1024&y=768",
		"{?undef}":       "",
		// Level 4: a prefix; an explode of a string is the string.
		"{var:3}":             "val",
		"{hello:5}/{+path:4}": "Hello//foo",
		"{?hello:5,x:2}":      "?hello=Hello&x=10",
		"{/path*}":            "/%2Ffoo%2Fbar",
		// Values that are not text to paste in.
		"{+dollar}":           "a$&b$1",
		"{dollar}/{+dollar}":  "a%24%26b%241/a$&b$1",
		"{brace}/{var}":       "%7Bvar%7D/value",
		"{+brace}":            "%7Bvar%7D",
		"{pct}":               "50%25",
		"file:///{+path}{?x}": "file:////foo/bar?x=1024",
	}
	var templates []string
	for tpl := range cases {
		templates = append(templates, tpl)
	}
	in, _ := json.Marshal(map[string]any{"vars": vars, "templates": templates})
	script := `import { expand } from './resources.js';
const { vars, templates } = JSON.parse(process.argv[2]);
console.log(JSON.stringify(Object.fromEntries(templates.map((t) => [t, expand(t, vars)]))));`
	if err := os.WriteFile(filepath.Join(dir, "expand_test.js"), []byte(script), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(node, "expand_test.js", string(in))
	cmd.Dir = dir
	out, err := cmd.Output()
	if err != nil {
		var stderr []byte
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = ee.Stderr
		}
		t.Fatalf("node: %v\n%s", err, stderr)
	}
	var got map[string]string
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatalf("node printed %q: %v", out, err)
	}
	for tpl, want := range cases {
		if got[tpl] != want {
			t.Errorf("expand(%q) = %q, want %q", tpl, got[tpl], want)
		}
	}
}
