// Package conffile reads configuration files: cordis.yml, and the files an
// entry names (a token file, another program's list of MCP servers).
//
// A configuration path is given by a person, and what sits there is not
// always a file: a named pipe (open(2) waits for a writer, for ever),
// /dev/zero or /dev/urandom (a read never ends, and would fill the memory),
// a socket, a folder. [Read] refuses each of these at once, with a message
// that says what it found:
//
//  1. The path is opened without blocking (O_NONBLOCK where the system has
//     it; on the others it is checked with Stat before it is opened), so a
//     named pipe or a device cannot make the open wait.
//  2. What was opened must be a regular file. Symbolic links are followed:
//     a link to a regular file is fine (a Kubernetes ConfigMap is links).
//  3. At most [MaxBytes] are read; a file larger than that is refused with
//     its size, and so is one that grows past it while it is read.
package conffile

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
)

// MaxBytes is the most a configuration file may hold: 4 MiB, a thousand
// times a large cordis.yml.
const MaxBytes = 4 << 20

// The reasons [Read] refuses a file; its errors wrap one of them.
var (
	// ErrNotRegular: the path names a named pipe, a device, a socket or a
	// folder, not a regular file.
	ErrNotRegular = errors.New("not a regular file")
	// ErrTooLarge: the file holds more than MaxBytes.
	ErrTooLarge = errors.New("too large for a configuration file")
)

// Read returns the content of the configuration file at path (see the
// package comment). The errors of the system (a missing file, a refused
// permission) are the *fs.PathError of os.Open, which names the path; its
// own refusals, which wrap [ErrNotRegular] or [ErrTooLarge], do not repeat
// the path: the caller says which file it read, as for every error here.
func Read(path string) ([]byte, error) {
	f, err := open(path)
	if err != nil {
		// A socket cannot be opened at all (ENXIO): say what it is.
		if fi, serr := os.Stat(path); serr == nil && !fi.Mode().IsRegular() {
			return nil, regular(fi.Mode())
		}
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if err := regular(fi.Mode()); err != nil {
		return nil, err
	}
	if fi.Size() > MaxBytes {
		return nil, tooLarge(fi.Size(), false)
	}
	var buf bytes.Buffer
	buf.Grow(int(fi.Size()) + bytes.MinRead)
	n, err := buf.ReadFrom(io.LimitReader(f, MaxBytes+1))
	if err != nil {
		return nil, fmt.Errorf("read: %w", err)
	}
	if n > MaxBytes {
		return nil, tooLarge(n, true)
	}
	return buf.Bytes(), nil
}

// regular refuses a mode that is not a regular file's, saying what it is.
func regular(m fs.FileMode) error {
	if m.IsRegular() {
		return nil
	}
	what := "an irregular file"
	switch {
	case m.IsDir():
		what = "a folder"
	case m&fs.ModeNamedPipe != 0:
		what = "a named pipe (FIFO)"
	case m&fs.ModeSocket != 0:
		what = "a socket"
	case m&fs.ModeCharDevice != 0:
		what = "a character device"
	case m&fs.ModeDevice != 0:
		what = "a block device"
	}
	return fmt.Errorf("%w: it is %s; a configuration must be a regular file (or a symbolic link to one)", ErrNotRegular, what)
}

func tooLarge(size int64, grew bool) error {
	if grew {
		return fmt.Errorf("%w: it grew past %s while it was read (at least %d bytes); a configuration file may hold at most %s", ErrTooLarge, mib(MaxBytes), size, mib(MaxBytes))
	}
	return fmt.Errorf("%w: it holds %s (%d bytes); a configuration file may hold at most %s", ErrTooLarge, mib(size), size, mib(MaxBytes))
}

func mib(n int64) string {
	if n%(1<<20) == 0 {
		return fmt.Sprintf("%d MiB", n>>20)
	}
	return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
}
