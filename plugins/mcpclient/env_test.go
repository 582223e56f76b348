package mcpclient

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/harness-go/harness/host/secret"
)

func TestChildEnv(t *testing.T) {
	t.Parallel()
	ambient := []string{
		"PATH=/usr/bin:/bin",
		"HOME=/home/u",
		"GITHUB_TOKEN=ghp_ambient",
		"AWS_SECRET_ACCESS_KEY=aws",
		"api_key=lower",
		"DB_PASSWORD=pw",
		"MONKEY=banana", // contains KEY: scrubbed too (substring, as in the seeds)
		"TOKENIZER_PATH=/t",
		"LANG=C.UTF-8",
		"OVERRIDE=ambient",
		"NOEQUALS",
	}
	explicit := map[string]string{
		"GITHUB_TOKEN": "ghp_explicit",
		"OVERRIDE":     "explicit",
		"Z_LAST":       "z",
		"A_FIRST":      "a",
	}
	got := childEnv(ambient, explicit, secret.New())
	want := []string{
		"PATH=/usr/bin:/bin",
		"HOME=/home/u",
		"LANG=C.UTF-8",
		"NOEQUALS",
		"A_FIRST=a",
		"GITHUB_TOKEN=ghp_explicit",
		"OVERRIDE=explicit",
		"Z_LAST=z",
	}
	if !slices.Equal(got, want) {
		t.Fatalf("childEnv:\n got %q\nwant %q", got, want)
	}
	if got := childEnv(nil, nil, nil); len(got) != 0 {
		t.Fatalf("childEnv(nil, nil) = %q", got)
	}
	// The scrub table itself is tested in host/secret; here, that the child
	// environment applies it to names and to values.
	got = childEnv([]string{"GH_PAT=ghp_x", "MYSQL_PWD=pw", "PWD=/here", "OLDPWD=/there", "REDIS_URL=redis://u:pw@h:6379", "DOCS_URL=https://example.com"}, nil, nil)
	if want := []string{"PWD=/here", "OLDPWD=/there", "DOCS_URL=https://example.com"}; !slices.Equal(got, want) {
		t.Fatalf("childEnv:\n got %q\nwant %q", got, want)
	}
	// A credential of the configuration (a gateway token !!js read from
	// GW_VALUE, say) is withheld by value, whatever the variable's name;
	// the variables the table never scrubs stay; ordinary values and what
	// the entry sets pass.
	set := secret.New()
	set.AddCredential("gw-token-from-js-0123")
	set.Add("an-env-value-0123") // a secret to print, not a credential
	got = childEnv([]string{"GW_VALUE=gw-token-from-js-0123", "HOME=gw-token-from-js-0123", "MODE=an-env-value-0123", "COPY=gw-token-from-js-0123"}, map[string]string{"COPY": "gw-token-from-js-0123"}, set)
	if want := []string{"HOME=gw-token-from-js-0123", "MODE=an-env-value-0123", "COPY=gw-token-from-js-0123"}; !slices.Equal(got, want) {
		t.Fatalf("childEnv with credentials:\n got %q\nwant %q", got, want)
	}
}

func TestLookupEnv(t *testing.T) {
	t.Parallel()
	env := []string{"A=1", "B=", "A=2", "C"}
	for _, tc := range []struct {
		name, value string
		ok          bool
	}{
		{"A", "2", true}, // the last one wins, as in exec
		{"B", "", true},
		{"C", "", false},
		{"D", "", false},
	} {
		v, ok := lookupEnv(env, tc.name)
		if v != tc.value || ok != tc.ok {
			t.Errorf("lookupEnv(%q) = %q, %v; want %q, %v", tc.name, v, ok, tc.value, tc.ok)
		}
	}
}

func TestResolveCommand(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	mk := func(rel string, mode fs.FileMode) string {
		p := filepath.Join(dir, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte("#!/bin/sh\n"), mode); err != nil {
			t.Fatal(err)
		}
		return p
	}
	tool := mk("bin/tool", 0o755)
	other := mk("other/tool", 0o755)
	mk("noexec/tool", 0o644)
	rel := mk("rel/tool", 0o755)
	if err := os.MkdirAll(filepath.Join(dir, "isdir", "tool"), 0o755); err != nil {
		t.Fatal(err)
	}
	cwdTool := mk("tool", 0o755)

	for _, tc := range []struct {
		name, command, path string
		want                string
		err                 string
	}{
		{"found in PATH", "tool", filepath.Join(dir, "bin"), tool, ""},
		{"first match wins", "tool", filepath.Join(dir, "other") + ":" + filepath.Join(dir, "bin"), other, ""},
		{"not executable is skipped", "tool", filepath.Join(dir, "noexec") + ":" + filepath.Join(dir, "bin"), tool, ""},
		{"a directory is skipped", "tool", filepath.Join(dir, "isdir") + ":" + filepath.Join(dir, "bin"), tool, ""},
		{"relative PATH entry resolves against the directory", "tool", "rel", rel, ""},
		{"empty PATH entry is the directory", "tool", ":" + filepath.Join(dir, "bin"), cwdTool, ""},
		{"not found", "tool", filepath.Join(dir, "noexec"), "", `command "tool" not found in PATH`},
		{"no PATH", "tool", "-", "", `command "tool" not found in PATH`},
		{"absolute path", tool, "", tool, ""},
		{"relative path", "./bin/tool", "", tool, ""},
		{"path to a directory", "./isdir/tool", "", "", "is a directory"},
		{"path to a non-executable", "./noexec/tool", "", "", "permission denied"},
		{"path to nothing", "./nothing", "", "", "no such file or directory"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var env []string
			if tc.path != "-" {
				env = []string{"PATH=" + tc.path}
			}
			got, err := resolveCommand(tc.command, dir, env)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("resolveCommand(%q) = %q, %v; want an error with %q", tc.command, got, err, tc.err)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("resolveCommand(%q) = %q, %v; want %q", tc.command, got, err, tc.want)
			}
		})
	}
	var nf *commandNotFoundError
	if _, err := resolveCommand("nope", dir, nil); !errors.As(err, &nf) {
		t.Fatalf("not a *commandNotFoundError: %v", err)
	}
	if _, err := resolveCommand("./isdir/tool", dir, nil); !errors.Is(err, errIsDir) {
		t.Fatalf("not errIsDir: %v", err)
	}
}
