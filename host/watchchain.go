package host

import (
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/fsnotify/fsnotify"
)

// maxLinks bounds the symbolic links one resolution follows, as the kernel
// does (Linux allows 40; a higher bound only costs a few more Lstat calls).
const maxLinks = 255

// The resolution's own errors (the others are Lstat's and Readlink's).
var (
	errLinkLoop = errors.New("too many levels of symbolic links")
	errNotDir   = errors.New("not a directory")
	errNotFile  = errors.New("not a file")
)

// chain is what decides which file a path names: the directories whose
// entries take part in resolving it, and the names in them that matter.
//
// For /config/cordis.yml -> ..data/cordis.yml with ..data -> ..2026_11_01
// (a Kubernetes ConfigMap), the directories are /config and
// /config/..2026_11_01, the names /config/cordis.yml, /config/..data and
// /config/..2026_11_01/cordis.yml. A change of any of these names, or of one
// of the directories themselves, may change what the path reads.
type chain struct {
	dirs  []string        // in the order the resolution met them, each once
	names map[string]bool // every link followed, and the final or first missing name
	file  string          // the file the path resolves to; "" when err is set
	err   error           // why the resolution stopped short (a missing name, a loop, a refused Lstat)
}

func (c *chain) add(dir, name string) {
	if !slices.Contains(c.dirs, dir) {
		c.dirs = append(c.dirs, dir)
	}
	c.names[name] = true
}

// same reports whether two resolutions depend on the same directories and
// names and end in the same file.
func (c *chain) same(o *chain) bool {
	if c.file != o.file || !slices.Equal(c.dirs, o.dirs) || len(c.names) != len(o.names) {
		return false
	}
	for n := range c.names {
		if !o.names[n] {
			return false
		}
	}
	return true
}

// resolveChain follows path (absolute and clean) one name at a time, the way
// the kernel does, and records every directory and name it depends on. It
// does not fail: a name that is missing, a loop or a refused look-up ends the
// chain with err set, and the directory holding that name is the last one
// recorded — so its return, or the end of the loop, is seen.
func resolveChain(path string) *chain {
	c := &chain{names: map[string]bool{}}
	vol := filepath.VolumeName(path)
	resolved := vol + string(filepath.Separator)
	todo := splitPath(path[len(vol):])
	links := 0
	for len(todo) > 0 {
		name := todo[0]
		todo = todo[1:]
		switch name {
		case ".":
			continue
		case "..":
			// resolved holds no links, so its parent is the physical one,
			// as the kernel has it.
			resolved = filepath.Dir(resolved)
			continue
		}
		next := filepath.Join(resolved, name)
		fi, err := os.Lstat(next)
		if err != nil {
			c.add(resolved, next)
			c.err = err
			return c
		}
		if fi.Mode()&fs.ModeSymlink != 0 {
			c.add(resolved, next)
			if links++; links > maxLinks {
				c.err = &fs.PathError{Op: "resolve", Path: path, Err: errLinkLoop}
				return c
			}
			target, err := os.Readlink(next)
			if err != nil {
				c.err = err
				return c
			}
			if filepath.IsAbs(target) {
				tvol := filepath.VolumeName(target)
				resolved = tvol + string(filepath.Separator)
				target = target[len(tvol):]
			}
			todo = append(splitPath(target), todo...)
			continue
		}
		if len(todo) == 0 {
			c.add(resolved, next)
			c.file = next
			return c
		}
		if !fi.IsDir() {
			c.add(resolved, next)
			c.err = &fs.PathError{Op: "resolve", Path: next, Err: errNotDir}
			return c
		}
		resolved = next
	}
	// The path names the root (or only dots): nothing to watch for.
	c.err = &fs.PathError{Op: "resolve", Path: path, Err: errNotFile}
	return c
}

func splitPath(p string) []string {
	return strings.FieldsFunc(p, func(r rune) bool { return r < utf8.RuneSelf && os.IsPathSeparator(uint8(r)) })
}

// tracker keeps an fsnotify watcher on the chain of one path: it watches the
// chain's directories, decides which events concern the path, and re-arms
// when the chain changes or a watched directory goes away. It is used by one
// goroutine at a time.
type tracker struct {
	fw    *fsnotify.Watcher
	path  string // absolute, clean
	log   *slog.Logger
	chain *chain
	armed []string        // directories fsnotify watches for us
	names map[string]bool // the chain's names, and directories that could not be watched
	// unwatchable is the last directory that could not be watched at all
	// (not even an ancestor), logged once.
	unwatchable string
}

func newTracker(fw *fsnotify.Watcher, path string, log *slog.Logger) *tracker {
	return &tracker{fw: fw, path: path, log: log, names: map[string]bool{}}
}

// arm resolves the chain again and makes fsnotify watch exactly its
// directories. A directory that cannot be watched (its read permission
// taken, gone since the resolution) is replaced by its nearest ancestor that
// can, with the directory's own name among the names that matter: when it
// comes back, or its permission does, the ancestor sees it. It returns an
// error only when nothing at all could be watched.
//
// A name may change between the resolution and the watch that would have
// seen it change (a folder made again just then). So once the watches are
// in place the chain is resolved once more: if it is the same, any later
// change is seen; if not, it is armed again.
func (t *tracker) arm() error {
	var err error
	for range 8 {
		c := resolveChain(t.path)
		if err = t.watch(c); err != nil {
			return err
		}
		if resolveChain(t.path).same(c) {
			return nil
		}
	}
	return nil // the chain keeps moving: its next event arms it again
}

// watch makes fsnotify watch the directories of c.
func (t *tracker) watch(c *chain) error {
	t.chain = c
	names := map[string]bool{}
	for n := range c.names {
		names[n] = true
	}
	var want []string
	var lastErr error
	for _, d := range c.dirs {
		for {
			if slices.Contains(want, d) {
				break
			}
			err := error(nil)
			if !slices.Contains(t.armed, d) {
				err = t.fw.Add(d)
			}
			if err == nil {
				want = append(want, d)
				break
			}
			lastErr = err
			names[d] = true
			parent := filepath.Dir(d)
			if parent == d {
				if t.unwatchable != d {
					t.unwatchable = d
					t.log.Warn("cannot watch the configuration's folder nor any folder above it; edits are seen by a forced reload only", "file", t.path, "err", err)
				}
				break
			}
			d = parent
		}
	}
	for _, d := range t.armed {
		if !slices.Contains(want, d) {
			_ = t.fw.Remove(d) // gone already when the directory was
		}
	}
	t.armed, t.names = want, names
	if len(want) == 0 {
		return fmt.Errorf("watch %s: %w", t.path, lastErr)
	}
	return nil
}

// forget drops the watch of a directory that went away (removed, renamed)
// or was replaced: fsnotify may still hold it by path, on the old inode.
func (t *tracker) forget(dir string) {
	if i := slices.Index(t.armed, dir); i >= 0 {
		t.armed = slices.Delete(t.armed, i, i+1)
		_ = t.fw.Remove(dir)
	}
}

// reset drops every watch and arms the chain afresh: after fsnotify reports
// an error (a queue overflow loses events, a removal among them), no watch
// can be trusted to be on the directory its path names today.
func (t *tracker) reset() error {
	for _, d := range t.armed {
		_ = t.fw.Remove(d)
	}
	t.armed, t.chain = nil, nil
	return t.arm()
}

// event reports whether ev may change what the path reads, and re-arms
// first when it may change the chain itself.
func (t *tracker) event(ev fsnotify.Event) bool {
	name := filepath.Clean(ev.Name)
	dir := slices.Contains(t.armed, name)
	if !dir && !t.names[name] {
		return false
	}
	if ev.Op == fsnotify.Write && name == t.chain.file {
		return true // the file's content: the chain is unchanged
	}
	if dir && ev.Op&(fsnotify.Remove|fsnotify.Rename|fsnotify.Create) != 0 {
		// A watched directory was removed or renamed (its watch is gone
		// with it), or a new one took its name (the watch is on the old).
		t.forget(name)
	}
	if err := t.arm(); err != nil {
		t.log.Warn("watching the configuration", "file", t.path, "err", err)
	}
	return true
}
