package mcpclient

import (
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/harness-go/harness/host/secret"
)

// childEnv returns the environment of a stdio server: the ambient variables
// that do not look like credentials (the scrub table) and do not hold one
// of the configuration's (secrets.Withheld: the variable a !!js expression
// read a token from), then the configured ones on top — explicit values
// always pass.
func childEnv(ambient []string, explicit map[string]string, secrets *secret.Set) []string {
	out := make([]string, 0, len(ambient)+len(explicit))
	for _, kv := range ambient {
		name, value, _ := strings.Cut(kv, "=")
		if secrets.Withheld(name, value) {
			continue
		}
		if _, overridden := explicit[name]; overridden {
			continue
		}
		out = append(out, kv)
	}
	keys := make([]string, 0, len(explicit))
	for k := range explicit {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		out = append(out, k+"="+explicit[k])
	}
	return out
}

// lookupEnv finds name in an environment list.
func lookupEnv(env []string, name string) (string, bool) {
	for i := len(env) - 1; i >= 0; i-- {
		if k, v, ok := strings.Cut(env[i], "="); ok && k == name {
			return v, true
		}
	}
	return "", false
}

// resolveCommand finds the executable like a shell does: a name with a slash
// is a path (relative to the child's directory), anything else is looked up
// in the PATH the child will have.
func resolveCommand(command, dir string, env []string) (string, error) {
	if strings.Contains(command, "/") {
		if !filepath.IsAbs(command) {
			command = filepath.Join(dir, command)
		}
		return command, executable(command)
	}
	path, _ := lookupEnv(env, "PATH")
	for _, d := range filepath.SplitList(path) {
		if d == "" {
			d = "."
		}
		if !filepath.IsAbs(d) {
			d = filepath.Join(dir, d)
		}
		candidate := filepath.Join(d, command)
		if executable(candidate) == nil {
			return candidate, nil
		}
	}
	return "", &commandNotFoundError{command: command}
}

type commandNotFoundError struct{ command string }

func (e *commandNotFoundError) Error() string {
	return "command " + strconv.Quote(e.command) + " not found in PATH"
}

func executable(path string) error {
	fi, err := os.Stat(path)
	if err != nil {
		return err
	}
	if fi.IsDir() {
		return &os.PathError{Op: "exec", Path: path, Err: errIsDir}
	}
	if fi.Mode()&0o111 == 0 {
		return &os.PathError{Op: "exec", Path: path, Err: os.ErrPermission}
	}
	return nil
}

type constErr string

func (e constErr) Error() string { return string(e) }

const errIsDir = constErr("is a directory")
