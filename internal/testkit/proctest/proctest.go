// Package proctest helps tests that run programs: build the module's
// binaries, wait for a line a process writes (with a deadline and no
// sleeps), check a package's outputs for secrets, and check on processes a
// test did not start (Linux: /proc; that alone polls, having no event).
package proctest

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// ModuleRoot returns the directory of the go.mod the tests run in.
func ModuleRoot() (string, error) {
	out, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		return "", fmt.Errorf("go env GOMOD: %v", err)
	}
	gomod := strings.TrimSpace(string(out))
	if gomod == "" || gomod == os.DevNull {
		return "", errors.New("not inside a module")
	}
	return filepath.Dir(gomod), nil
}

// GoBuild runs `go <args>` for each build, concurrently, in dir.
func GoBuild(ctx context.Context, dir string, builds ...[]string) error {
	errs := make([]error, len(builds))
	var wg sync.WaitGroup
	for i, args := range builds {
		wg.Add(1)
		go func() {
			defer wg.Done()
			cmd := exec.CommandContext(ctx, "go", args...)
			cmd.Dir = dir
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

// Lines collects what a process writes to one pipe, line by line, and lets a
// test wait for a line.
type Lines struct {
	mu     sync.Mutex
	all    []string
	closed bool
	wake   chan struct{} // closed and replaced at every change
}

// ReadLines reads r until it ends. maxLine > 0 keeps at most that many bytes
// of a line (a longer one is cut, with a note of its length), so a program
// that prints a huge text does not make the test hold it.
func ReadLines(r io.Reader, maxLine int) *Lines {
	l := &Lines{wake: make(chan struct{})}
	go func() {
		br := bufio.NewReaderSize(r, 64<<10)
		for {
			s, err := readLine(br, maxLine)
			l.mu.Lock()
			if s != "" {
				l.all = append(l.all, strings.TrimSuffix(s, "\n"))
			}
			if err != nil {
				l.closed = true
			}
			close(l.wake)
			l.wake = make(chan struct{})
			l.mu.Unlock()
			if err != nil {
				return
			}
		}
	}()
	return l
}

// readLine reads one line, keeping at most n bytes of it when n > 0.
func readLine(br *bufio.Reader, n int) (string, error) {
	var kept []byte
	total := 0
	for {
		chunk, err := br.ReadSlice('\n')
		total += len(chunk)
		if room := n - len(kept); n <= 0 || room > 0 {
			if n > 0 {
				chunk = chunk[:min(room, len(chunk))]
			}
			kept = append(kept, chunk...)
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		if n > 0 && total > n {
			return fmt.Sprintf("%s… (a line of %d bytes)", strings.TrimSuffix(string(kept), "\n"), total), err
		}
		return string(kept), err
	}
}

// Len is the number of lines read so far.
func (l *Lines) Len() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.all)
}

// Text is every line read so far, joined by newlines.
func (l *Lines) Text() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Join(l.all, "\n")
}

// Slice returns lines [from, to).
func (l *Lines) Slice(from, to int) []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.all[from:to]...)
}

// From returns the lines from index from on.
func (l *Lines) From(from int) []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.all[min(from, len(l.all)):]...)
}

// Find returns the index of the first line at or after from that matches,
// waiting up to d. ok is false if the time ran out or the pipe closed first.
func (l *Lines) Find(from int, d time.Duration, match func(string) bool) (int, bool) {
	timer := time.NewTimer(d)
	defer timer.Stop()
	for {
		l.mu.Lock()
		for i := from; i < len(l.all); i++ {
			if match(l.all[i]) {
				l.mu.Unlock()
				return i, true
			}
		}
		from = max(from, len(l.all))
		closed, wake := l.closed, l.wake
		l.mu.Unlock()
		if closed {
			return -1, false
		}
		select {
		case <-wake:
		case <-timer.C:
			return -1, false
		}
	}
}

// WaitClosed waits up to d for the writer side to close, and reports
// whether it did.
func (l *Lines) WaitClosed(d time.Duration) bool {
	l.Find(0, d, func(string) bool { return false })
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.closed
}

// Start starts cmd with its stdout and stderr read line by line (see
// ReadLines for maxLine). Set up stdin before. The read ends are closed at
// cleanup, after the cleanups registered later (which stop the process).
func Start(t testing.TB, cmd *exec.Cmd, maxLine int) (stdout, stderr *Lines) {
	t.Helper()
	outR, outW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	errR, errW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout, cmd.Stderr = outW, errW
	err = cmd.Start()
	outW.Close()
	errW.Close()
	t.Cleanup(func() {
		outR.Close()
		errR.Close()
	})
	if err != nil {
		t.Fatal(err)
	}
	return ReadLines(outR, maxLine), ReadLines(errR, maxLine)
}

// ReadPIDs reads a pid file: pids separated by white space.
func ReadPIDs(t testing.TB, path string) []int {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("pid file: %v", err)
	}
	var pids []int
	for _, f := range strings.Fields(string(data)) {
		pid, err := strconv.Atoi(f)
		if err != nil {
			t.Fatalf("pid file %s: %q is not a pid", path, f)
		}
		pids = append(pids, pid)
	}
	return pids
}
