package browser

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/harness-go/harness/internal/testkit/proctest"
)

var (
	repoRoot   string
	harnessBin string
	// browser is the one browser of the package; skip says why there is
	// none (outside CI).
	browser context.Context
	skip    string
)

func TestMain(m *testing.M) { os.Exit(testMain(m)) }

func testMain(m *testing.M) int {
	root, err := proctest.ModuleRoot()
	if err != nil {
		fmt.Fprintln(os.Stderr, "browser:", err)
		return 1
	}
	repoRoot = root
	exe, err := findChromium(root)
	if err != nil {
		if os.Getenv("CI") == "true" {
			fmt.Fprintln(os.Stderr, "browser: no browser, and CI needs one:", err)
			return 1
		}
		skip = "no browser: " + err.Error()
		return m.Run()
	}
	dir, err := os.MkdirTemp("", "harness-browser-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "browser:", err)
		return 1
	}
	defer os.RemoveAll(dir)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	args := []string{"build"}
	if raceEnabled {
		args = append(args, "-race")
	}
	err = proctest.GoBuild(ctx, root, append(args, "-o", filepath.Join(dir, "harness"), "./cmd/harness"))
	cancel()
	if err != nil {
		fmt.Fprintln(os.Stderr, "browser:", err)
		return 1
	}
	harnessBin = filepath.Join(dir, "harness")

	// The flags that work on this kind of machine: headless, no sandbox
	// (root), and none of Chromium's own traffic (the network is closed).
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(exe),
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.UserDataDir(filepath.Join(dir, "profile")),
		chromedp.WindowSize(1280, 800),
	)
	alloc, stopAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	b, stopBrowser := chromedp.NewContext(alloc)
	if err := chromedp.Do(b); err != nil { // starts the browser
		stopBrowser()
		stopAlloc()
		if os.Getenv("CI") == "true" {
			fmt.Fprintln(os.Stderr, "browser: starting", exe+":", err)
			return 1
		}
		skip = fmt.Sprintf("%s does not start: %v", exe, err)
		return m.Run()
	}
	browser = b
	code := m.Run()
	stopBrowser()
	stopAlloc()
	return code
}

// findChromium returns the browser to drive: $HARNESS_CHROMIUM, else
// chromium on PATH; when there is none, scripts/chromium.sh installs
// Debian's package.
func findChromium(root string) (string, error) {
	look := func() (string, error) {
		if p := os.Getenv("HARNESS_CHROMIUM"); p != "" {
			return p, nil
		}
		for _, name := range []string{"chromium", "chromium-browser"} {
			if p, err := exec.LookPath(name); err == nil {
				return p, nil
			}
		}
		return "", errors.New("chromium is not on PATH")
	}
	if p, err := look(); err == nil {
		return p, nil
	}
	out, err := exec.Command("bash", filepath.Join(root, "scripts", "chromium.sh")).CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("scripts/chromium.sh: %v: %s", err, strings.TrimSpace(string(out)))
	}
	return look()
}
