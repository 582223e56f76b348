package bench

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// FixtureArgs start the fixture server with one tool, echo {message}: every
// client of the per-call benchmarks talks to exactly this server.
var FixtureArgs = []string{"--only", "echo"}

// Binaries are the programs the suite starts, built once per run from this
// module.
type Binaries struct {
	Dir      string // the temporary folder holding them
	Root     string // the module root
	Fixture  string // tests/fixtures/mcpfixture: the stdio MCP server
	Harness  string // cmd/harness: the harness binary
	PipeEcho string // bench/internal/pipeecho: the raw pipe's far end
	Relay    string // bench/internal/relay: a process that only copies bytes, the floor of a gateway
	// JSONRelay is bench/internal/jsonrelay: a process that scans every
	// message and maps request ids, the floor of a gateway that parses.
	JSONRelay string
}

// ModuleRoot walks up from the working directory to the folder holding
// go.mod.
func ModuleRoot() (string, error) {
	wd, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for dir := wd; ; {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", fmt.Errorf("no go.mod in %s or any parent folder", wd)
		}
		dir = parent
	}
}

// Build compiles the suite's programs into a new temporary folder. Remove
// it with [Binaries.Remove].
func Build() (*Binaries, error) {
	root, err := ModuleRoot()
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "harness-bench-")
	if err != nil {
		return nil, err
	}
	cmd := exec.Command("go", "build", "-o", dir+string(filepath.Separator),
		"./tests/fixtures/mcpfixture", "./cmd/harness", "./bench/internal/pipeecho", "./bench/internal/relay", "./bench/internal/jsonrelay")
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("go build: %v\n%s", err, strings.TrimSpace(string(out)))
	}
	b := &Binaries{
		Dir:       dir,
		Root:      root,
		Fixture:   filepath.Join(dir, "mcpfixture"),
		Harness:   filepath.Join(dir, "harness"),
		PipeEcho:  filepath.Join(dir, "pipeecho"),
		Relay:     filepath.Join(dir, "relay"),
		JSONRelay: filepath.Join(dir, "jsonrelay"),
	}
	for _, p := range []string{b.Fixture, b.Harness, b.PipeEcho, b.Relay, b.JSONRelay} {
		if _, err := os.Stat(p); err != nil {
			os.RemoveAll(dir)
			return nil, errors.New("go build did not produce " + p)
		}
	}
	return b, nil
}

// Remove deletes the binaries.
func (b *Binaries) Remove() error { return os.RemoveAll(b.Dir) }
