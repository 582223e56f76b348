//go:build unix

package faults

// Row 6e: what sits at cordis.yml's path is not a file — a named pipe (a
// FIFO without a writer made open(2) wait for ever: validate, tools and
// serve hung at start, and a running harness's watcher hung, so that no
// edit applied again and /quit, SIGINT and SIGTERM never finished), a
// device that never ends (/dev/zero filled the memory: 1.5 GiB in 12 s,
// then `fatal error: out of memory`), a file over 4 MiB. Each is refused
// at once, saying what it is, and a running harness keeps running and
// stops when told.

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// notAFile makes dir/cordis.yml something that is not a configuration
// file, and returns what the refusal says about it.
type notAFile struct {
	name string
	make func(t *testing.T, path string)
	says string
}

func notFiles() []notAFile {
	return []notAFile{
		{"a named pipe", func(t *testing.T, path string) {
			if err := syscall.Mkfifo(path, 0o644); err != nil {
				t.Fatal(err)
			}
		}, "it is a named pipe (FIFO)"},
		{"a link to /dev/zero", func(t *testing.T, path string) {
			if err := os.Symlink("/dev/zero", path); err != nil {
				t.Fatal(err)
			}
		}, "it is a character device"},
		{"a 5 MiB file", func(t *testing.T, path string) {
			data := "- {id: a, name: echo, config: {prefix: a_}}\n#" + strings.Repeat("x", 5<<20) + "\n"
			if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
				t.Fatal(err)
			}
		}, "it holds 5.0 MiB (5242926 bytes); a configuration file may hold at most 4 MiB"},
	}
}

func TestConfigThatIsNotAFileAtStart(t *testing.T) {
	t.Parallel()
	for _, nf := range notFiles() {
		for _, args := range [][]string{{"validate"}, {"tools"}, {"status"}, {"call", "a_echo", "{}"}, {"serve"}, {"serve", "--http", "127.0.0.1:0"}, {"run"}} {
			t.Run(nf.name+"/"+strings.Join(args, " "), func(t *testing.T) {
				t.Parallel()
				dir := t.TempDir()
				nf.make(t, filepath.Join(dir, "cordis.yml"))
				r := oneShotWith(t, plainHarnessBin, dir, nil, args...)
				if r.code != 2 || !strings.Contains(r.stderr, "cordis.yml") || !strings.Contains(r.stderr, nf.says) {
					t.Errorf("want exit code 2 and a message saying %q\n%s", nf.says, r)
				}
				if r.took > closeBound {
					t.Errorf("refused after %s (bound %s)", r.took.Round(time.Millisecond), closeBound)
				}
			})
		}
	}
}

// A running harness whose cordis.yml is replaced by a named pipe (or the
// others): the edit is refused with what it is, a forced reload too, the
// entries keep serving, and /quit, SIGTERM and SIGINT end it at once.
func TestConfigReplacedByWhatIsNotAFile(t *testing.T) {
	t.Parallel()
	for _, nf := range notFiles() {
		for _, end := range []string{"/quit", "SIGTERM", "SIGINT"} {
			t.Run(nf.name+"/"+end, func(t *testing.T) {
				t.Parallel()
				dir := t.TempDir()
				writeConfig(t, dir, echoFile("a_"))
				s := start(t, plainHarnessBin, dir, nil)
				wantTools(t, s, "a_")
				from := s.err.Len()
				tmp := filepath.Join(dir, ".cordis.yml.tmp")
				nf.make(t, tmp)
				if err := os.Rename(tmp, filepath.Join(dir, "cordis.yml")); err != nil {
					t.Fatal(err)
				}
				i := s.waitErr(from, "refusing "+nf.name, prefix("harness: reload refused"))
				if l := s.err.From(i)[0]; !strings.Contains(l, nf.says) {
					t.Errorf("the refusal %q does not say %q", l, nf.says)
				}
				s.send("/reload\n")
				s.waitErr(i+1, "refusing the forced reload", prefix("harness: reload refused"))
				wantTools(t, s, "a_")

				at := time.Now()
				switch end {
				case "/quit":
					s.send("/quit\n")
				case "SIGTERM":
					at = s.signal(syscall.SIGTERM)
				case "SIGINT":
					at = s.signal(syscall.SIGINT)
				}
				if code := s.waitExit(); code != 0 {
					t.Errorf("%s: exit code %d\n%s", end, code, s.dump())
				}
				if took := s.exit.At().Sub(at); took > closeBound {
					t.Errorf("%s: exited after %s (bound %s)", end, took.Round(time.Millisecond), closeBound)
				}
			})
		}
	}
}

// `harness serve` whose cordis.yml becomes a named pipe: SIGHUP re-reads
// it (refused, logged), and SIGTERM ends it at once.
func TestServeWithConfigReplacedByAPipe(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	writeConfig(t, dir, echoFile("a_"))
	s := start(t, plainHarnessBin, dir, nil, "serve", "--log-level", "info")
	s.waitErr(0, "the entry ready", has("entry ready", "entry=e"))
	tmp := filepath.Join(dir, ".cordis.yml.tmp")
	if err := syscall.Mkfifo(tmp, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, filepath.Join(dir, "cordis.yml")); err != nil {
		t.Fatal(err)
	}
	i := s.waitErr(0, "refusing the pipe", has("configuration change refused", "named pipe"))
	s.signal(syscall.SIGHUP)
	s.waitErr(i+1, "refusing the pipe again", has("configuration change refused", "named pipe"))
	at := s.signal(syscall.SIGTERM)
	s.waitExit()
	if took := s.exit.At().Sub(at); took > closeBound {
		t.Errorf("SIGTERM: exited after %s (bound %s)", took.Round(time.Millisecond), closeBound)
	}
}
