package cli

import (
	"errors"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"strings"

	"github.com/harness-go/harness/host/secret"
)

// Bounds of the console history.
const (
	historyLimit     = 1000     // lines kept
	historyEntryMax  = 16 << 10 // a longer line is not kept
	historyFileBytes = 2 << 20  // the file is compacted past twice this, or twice historyLimit lines
)

// historyPath is where the console keeps its history:
// $XDG_STATE_HOME/harness/history, by default ~/.local/state/harness/history
// (%LocalAppData%\harness\history on Windows). "" when there is no such
// place: the history then lasts as long as the console.
func historyPath(lookup func(string) (string, bool)) string {
	if d, ok := lookup("XDG_STATE_HOME"); ok && filepath.IsAbs(d) {
		return filepath.Join(d, "harness", "history")
	}
	if runtime.GOOS == "windows" {
		if d, ok := lookup("LocalAppData"); ok && filepath.IsAbs(d) {
			return filepath.Join(d, "harness", "history")
		}
	}
	if h, ok := lookup("HOME"); ok && filepath.IsAbs(h) {
		return filepath.Join(h, ".local", "state", "harness", "history")
	}
	return ""
}

// history is the console's line history and its file: one line per entry,
// oldest first, with "\\", "\n" and "\r" escaped so that a multi-line
// message stays one entry. It never holds a line that contains a known
// secret: such lines are not added, and lines already in the file that hold
// a secret known now are removed when the file is read. The file is private
// to the user (0600), bounded (historyLimit entries of at most
// historyEntryMax bytes), and only appended to between compactions, so two
// consoles can share it.
type history struct {
	path    string
	secrets *secret.Set
	log     *slog.Logger
	entries []string
	lines   int // lines in the file since it was last written whole
	bytes   int
	failed  bool // a write failed: said once, then the history stays in memory
}

// openHistory reads the history at path ("" for none).
func openHistory(path string, secrets *secret.Set, log *slog.Logger) *history {
	h := &history{path: path, secrets: secrets, log: log}
	if path == "" {
		return h
	}
	entries, lines, dropped, err := h.read()
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		h.fail("reading the console history", err)
		return h
	}
	h.entries = entries
	h.lines = lines
	if fi, err := os.Stat(path); err == nil {
		h.bytes = int(fi.Size())
	}
	if dropped || lines > len(entries) {
		h.rewrite()
	}
	return h
}

// keeps tells whether line may enter the history: not blank, not starting
// with a space (as in shells, a way to keep a line out), not too long, and
// holding no known secret.
func (h *history) keeps(line string) bool {
	return strings.TrimSpace(line) != "" && !strings.HasPrefix(line, " ") &&
		len(line) <= historyEntryMax && !h.secrets.Contains(line)
}

// add records line if the rules let it in; it reports whether it did.
func (h *history) add(line string) bool {
	if !h.keeps(line) {
		return false
	}
	if n := len(h.entries); n > 0 && h.entries[n-1] == line {
		return true
	}
	h.entries = append(h.entries, line)
	if len(h.entries) > historyLimit {
		h.entries = h.entries[len(h.entries)-historyLimit:]
	}
	if h.path == "" || h.failed {
		return true
	}
	enc := encodeHistory(line) + "\n"
	if err := h.appendFile(enc); err != nil {
		h.fail("saving the console history", err)
		return true
	}
	h.lines++
	h.bytes += len(enc)
	if h.lines > 2*historyLimit || h.bytes > 2*historyFileBytes {
		h.rewrite()
	}
	return true
}

func (h *history) appendFile(text string) error {
	if err := os.MkdirAll(filepath.Dir(h.path), 0o700); err != nil {
		return err
	}
	f, err := os.OpenFile(h.path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600)
	if err != nil {
		return err
	}
	_, err = f.WriteString(text)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// read returns the entries of the file that the rules keep, the newest
// historyLimit of them within historyFileBytes; the number of lines in the
// file; and whether a line was dropped for holding a secret.
func (h *history) read() (entries []string, lines int, dropped bool, err error) {
	f, err := os.Open(h.path)
	if err != nil {
		return nil, 0, false, err
	}
	defer f.Close()
	r := newLineReader(f, 2*historyEntryMax, nil) // escaped lines are longer
	for {
		line, err := r.readLine()
		var long *longLineError
		switch {
		case errors.As(err, &long):
			lines++
			continue
		case errors.Is(err, io.EOF):
			return trimHistory(entries), lines, dropped, nil
		case err != nil:
			return nil, 0, false, err
		}
		lines++
		e := decodeHistory(line)
		if h.secrets.Contains(e) {
			dropped = true
			continue
		}
		if h.keeps(e) {
			entries = append(entries, e)
		}
	}
}

// trimHistory keeps the newest entries within the bounds.
func trimHistory(entries []string) []string {
	size, i := 0, len(entries)
	for i > 0 && len(entries)-i < historyLimit {
		size += len(encodeHistory(entries[i-1])) + 1
		if size > historyFileBytes {
			break
		}
		i--
	}
	return entries[i:]
}

// rewrite writes the file whole: what is in it now (another console may
// have appended) less what the rules drop, within the bounds.
func (h *history) rewrite() {
	entries, _, _, err := h.read()
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		h.fail("compacting the console history", err)
		return
	}
	var b strings.Builder
	for _, e := range entries {
		b.WriteString(encodeHistory(e))
		b.WriteByte('\n')
	}
	if err := writeFileAtomic(h.path, b.String()); err != nil {
		h.fail("compacting the console history", err)
		return
	}
	h.lines, h.bytes = len(entries), b.Len()
}

// writeFileAtomic replaces path with text (mode 0600) by a rename, so a
// reader sees the old file or the new one.
func writeFileAtomic(path, text string) error {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(dir, ".history-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name()) // fails harmlessly after the rename
	if _, err := tmp.WriteString(text); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}

func (h *history) fail(what string, err error) {
	if !h.failed {
		h.log.Warn(what+"; the history lasts until the console ends", "file", h.path, "err", err)
	}
	h.failed = true
}

func encodeHistory(s string) string {
	if !strings.ContainsAny(s, "\\\n\r") {
		return s
	}
	return strings.NewReplacer(`\`, `\\`, "\n", `\n`, "\r", `\r`).Replace(s)
}

func decodeHistory(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != '\\' || i+1 == len(s) {
			b.WriteByte(s[i])
			continue
		}
		i++
		switch s[i] {
		case 'n':
			b.WriteByte('\n')
		case 'r':
			b.WriteByte('\r')
		case '\\':
			b.WriteByte('\\')
		default:
			b.WriteByte('\\')
			b.WriteByte(s[i])
		}
	}
	return b.String()
}
