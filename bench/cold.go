package bench

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// ColdResult is the first five minutes of a new user, measured: what
// compiling the harness costs against compiling mcp-go's client and server,
// and the README's run command on a fresh clone with empty caches.
type ColdResult struct {
	// Harness is `go build ./cmd/harness` and MCPGo `go build` of mcp-go's
	// client and server packages, each from a build cache that holds only
	// the standard library (built once, then copied in for each).
	Harness, MCPGo time.Duration
	// StdOnly is the build of the standard library that filled that cache
	// (not part of either figure).
	StdOnly time.Duration
	// FirstRun is the README's run command, `go run ./cmd/harness` with
	// /tools typed, on a fresh clone with an empty build cache and an empty
	// module cache: from the start to the demo's tools listed.
	FirstRun time.Duration
	// FirstRunCPU is the CPU time the first run took, go run's compiles
	// included (user and system): on idle cores, the wall time's floor is
	// this divided by the cores.
	FirstRunCPU time.Duration
	// Modules is how the first run got its modules (see [RunCold]).
	Modules string
}

// Ratio is the harness's build against mcp-go's.
func (c *ColdResult) Ratio() float64 { return sec(c.Harness) / sec(c.MCPGo) }

// mcpGoPackages are what a bare mcp-go program compiles: the floor of the
// build ratio.
var mcpGoPackages = []string{"github.com/mark3labs/mcp-go/client", "github.com/mark3labs/mcp-go/server"}

// RunCold measures the cold start in dir (emptied by the caller). It
// compiles the standard library, the harness, mcp-go and, on a fresh
// clone, the harness again, each from nothing: minutes of both cores, which
// is why only benchtable runs it (the go test benchmarks leave it out).
//
// The fresh clone takes its modules from a file:// proxy made of this
// machine's module cache (GOPROXY=file://…/cache/download, GOSUMDB off:
// go.sum still checks every module), so the figure holds the extraction
// of every module and no network: a download is the network's time, not
// the harness's.
func RunCold(ctx context.Context, root, dir string, progress func(string)) (*ColdResult, error) {
	say := func(s string) {
		if progress != nil {
			progress(s)
		}
	}
	modCache, err := goEnv(ctx, root, "GOMODCACHE")
	if err != nil {
		return nil, err
	}
	res := &ColdResult{Modules: "file:// proxy of the local module cache (no network), GOSUMDB off, go.sum checked"}

	say("cold: the standard library into an empty build cache")
	std := filepath.Join(dir, "std-cache")
	start := time.Now()
	if err := goCmd(ctx, root, []string{"GOCACHE=" + std}, "build", "std"); err != nil {
		return nil, err
	}
	res.StdOnly = time.Since(start)

	build := func(name string, args ...string) (time.Duration, error) {
		cache := filepath.Join(dir, name+"-cache")
		if err := copyTree(std, cache); err != nil {
			return 0, err
		}
		defer os.RemoveAll(cache)
		start := time.Now()
		err := goCmd(ctx, root, []string{"GOCACHE=" + cache}, append([]string{"build"}, args...)...)
		return time.Since(start), err
	}
	// mcp-go first, then the harness: the harness's build is the longer, so
	// a warming machine (page cache, CPU clocks) favours it, not the floor.
	say("cold: go build of mcp-go's client and server, from the standard library's cache")
	if res.MCPGo, err = build("mcpgo", mcpGoPackages...); err != nil {
		return nil, err
	}
	say("cold: go build ./cmd/harness, from the standard library's cache")
	if res.Harness, err = build("harness", "-o", filepath.Join(dir, "harness-cold"), "./cmd/harness"); err != nil {
		return nil, err
	}
	os.RemoveAll(std)

	say("cold: a fresh clone, empty caches, `go run ./cmd/harness` until the demo's tools are listed")
	clone := filepath.Join(dir, "clone")
	if out, err := exec.CommandContext(ctx, "git", "clone", "--quiet", "--no-hardlinks", root, clone).CombinedOutput(); err != nil {
		return nil, fmt.Errorf("git clone %s: %v\n%s", root, err, strings.TrimSpace(string(out)))
	}
	env := []string{
		"GOCACHE=" + filepath.Join(dir, "first-cache"),
		"GOMODCACHE=" + filepath.Join(dir, "first-mod"),
		"GOPROXY=file://" + filepath.ToSlash(filepath.Join(modCache, "cache", "download")),
		"GOSUMDB=off",
		"GOFLAGS=-modcacherw", // so that the module cache can be removed
		"GOTOOLCHAIN=local",
	}
	res.FirstRun, res.FirstRunCPU, err = firstRun(ctx, clone, env, 10*time.Minute)
	return res, err
}

// firstRun runs the README's run command in dir, types /tools and returns
// the time until the demo's first tool is listed, and the CPU time of the
// whole run (the go command and what it waited for: compiles, the
// harness); then it ends the console (EOF) and waits for it, bounded by
// within.
func firstRun(ctx context.Context, dir string, env []string, within time.Duration) (time.Duration, time.Duration, error) {
	ctx, cancel := context.WithTimeout(ctx, within)
	defer cancel()
	cmd := exec.CommandContext(ctx, "go", "run", "./cmd/harness")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	cmd.WaitDelay = 10 * time.Second
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return 0, 0, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return 0, 0, err
	}
	var stderr tail
	cmd.Stderr = &stderr
	start := time.Now()
	if err := cmd.Start(); err != nil {
		return 0, 0, err
	}
	// The console reads its first command once every entry settled.
	_, _ = io.WriteString(stdin, "/tools\n")
	d, found := untilLine(stdout, start, func(line string) bool { return strings.HasPrefix(line, "mcp__demo__") })
	stdin.Close()
	go io.Copy(io.Discard, stdout)
	werr := cmd.Wait()
	var cpu time.Duration
	if ps := cmd.ProcessState; ps != nil {
		cpu = ps.UserTime() + ps.SystemTime() // wait4's: its children's too
	}
	switch {
	case !found && ctx.Err() != nil:
		return 0, 0, fmt.Errorf("go run ./cmd/harness listed no demo tool within %s\n%s", within, stderr.String())
	case !found:
		return 0, 0, fmt.Errorf("go run ./cmd/harness ended (%v) without listing a demo tool\n%s", werr, stderr.String())
	case werr != nil:
		return d, cpu, fmt.Errorf("go run ./cmd/harness, after listing the tools: %v\n%s", werr, stderr.String())
	}
	return d, cpu, nil
}

// untilLine reads lines until match accepts one and returns the time since
// start then; false when the stream ended first.
func untilLine(r io.Reader, start time.Time, match func(string) bool) (time.Duration, bool) {
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		if match(sc.Text()) {
			return time.Since(start), true
		}
	}
	return 0, false
}

// tail keeps the last 4 KiB written to it.
type tail struct{ b []byte }

func (t *tail) Write(p []byte) (int, error) {
	t.b = append(t.b, p...)
	if len(t.b) > 4096 {
		t.b = t.b[len(t.b)-4096:]
	}
	return len(p), nil
}

func (t *tail) String() string { return string(t.b) }

// goCmd runs the go command in dir with env added, failing with its output.
func goCmd(ctx context.Context, dir string, env []string, args ...string) error {
	cmd := exec.CommandContext(ctx, "go", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), append([]string{"GOFLAGS=-buildvcs=false"}, env...)...)
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("go %s: %v\n%s", strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return nil
}

// goEnv returns one variable of `go env`.
func goEnv(ctx context.Context, dir, name string) (string, error) {
	cmd := exec.CommandContext(ctx, "go", "env", name)
	cmd.Dir = dir
	out, err := cmd.Output()
	v := strings.TrimSpace(string(out))
	if err == nil && v == "" {
		err = errors.New("empty")
	}
	if err != nil {
		return "", fmt.Errorf("go env %s: %v", name, err)
	}
	return v, nil
}

// copyTree copies the files of src into dst (a build cache: regular files
// and folders only).
func copyTree(src, dst string) error {
	return filepath.WalkDir(src, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, path)
		to := filepath.Join(dst, rel)
		if d.IsDir() {
			return os.MkdirAll(to, 0o755)
		}
		if !d.Type().IsRegular() {
			return nil
		}
		return copyFile(path, to)
	})
}

func copyFile(from, to string) error {
	in, err := os.Open(from)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.Create(to)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}
