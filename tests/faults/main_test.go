package faults

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"
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
	out, err := exec.Command("go", "env", "GOMOD").Output()
	gomod := strings.TrimSpace(string(out))
	if err != nil || gomod == "" || gomod == os.DevNull {
		fmt.Fprintln(os.Stderr, "faults: not inside the harness module:", err)
		return 1
	}
	repoRoot = filepath.Dir(gomod)
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
	if err := goBuild(builds); err != nil {
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
	return code
}

// goBuild runs the builds concurrently in the module root.
func goBuild(builds [][]string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	errs := make([]error, len(builds))
	var wg sync.WaitGroup
	for i, args := range builds {
		wg.Add(1)
		go func() {
			defer wg.Done()
			cmd := exec.CommandContext(ctx, "go", args...)
			cmd.Dir = repoRoot
			var out bytes.Buffer
			cmd.Stdout, cmd.Stderr = &out, &out
			if err := cmd.Run(); err != nil {
				errs[i] = fmt.Errorf("go %s: %v\n%s", strings.Join(args, " "), err, out.Bytes())
			}
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}
