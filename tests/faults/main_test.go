//go:build unix

package faults

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/harness-go/harness/internal/testkit/proctest"
)

// The binaries TestMain builds.
var (
	repoRoot string
	// harnessBin is cmd/harness, built with -race when the tests run with it.
	harnessBin string
	// plainHarnessBin is cmd/harness without the race detector, whose
	// shadow memory would hide what the harness itself holds. It is
	// harnessBin when the tests run without -race.
	plainHarnessBin string
	// fixtureBin is tests/fixtures/mcpfixture.
	fixtureBin string
)

func TestMain(m *testing.M) {
	if os.Getenv(fakeServerEnv) != "" {
		os.Exit(fakeStdioServer()) // the test binary run as a server
	}
	os.Exit(testMain(m))
}

func testMain(m *testing.M) int {
	root, err := proctest.ModuleRoot()
	if err != nil {
		fmt.Fprintln(os.Stderr, "faults:", err)
		return 1
	}
	repoRoot = root
	dir, err := os.MkdirTemp("", "harness-faults-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "faults:", err)
		return 1
	}
	defer os.RemoveAll(dir)
	harnessBin = filepath.Join(dir, "harness")
	plainHarnessBin = harnessBin
	fixtureBin = filepath.Join(dir, "mcpfixture")

	builds := [][]string{
		{"build", "-o", fixtureBin, "./tests/fixtures/mcpfixture"},
	}
	if raceEnabled {
		plainHarnessBin = filepath.Join(dir, "harness-plain")
		builds = append(builds,
			[]string{"build", "-race", "-o", harnessBin, "./cmd/harness"},
			[]string{"build", "-o", plainHarnessBin, "./cmd/harness"})
	} else {
		builds = append(builds, []string{"build", "-o", harnessBin, "./cmd/harness"})
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	if err := proctest.GoBuild(ctx, repoRoot, builds...); err != nil {
		fmt.Fprintln(os.Stderr, "faults:", err)
		return 1
	}
	code := m.Run()
	// The in-process tests close their hosts: nothing of theirs may be
	// left running.
	if code == 0 {
		if err := goleak.Find(); err != nil {
			fmt.Fprintf(os.Stderr, "faults: goroutines left after the tests: %v\n", err)
			code = 1
		}
	}
	return printed.Report(os.Stderr, "faults", code, testing.Verbose())
}

// printed is the sweep of the package: every secret made with
// secretValue, every output of a harness process (internal/testkit/proctest.Sweep).
var printed proctest.Sweep
