package host

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"path/filepath"
	"sync"
	"time"

	"github.com/fsnotify/fsnotify"

	"github.com/harness-go/harness/host/conffile"
)

// ErrUnchanged is returned by [Host.LoadFile] when the file's content is the
// one already running (or the last one refused) and the load was not forced.
var ErrUnchanged = errors.New("configuration unchanged")

// LoadFile reads, parses and loads a cordis.yml (see [Host.Load]). Unless
// force is set, a file whose content hash equals the running configuration's
// is skipped with [ErrUnchanged]. A file that cannot be read or parsed
// changes nothing and is reported as a ReloadRejected event. The file is
// read by [conffile.Read] (a named pipe, a device or a file over 4 MiB is
// refused), and the read gives up when ctx ends.
func (h *Host) LoadFile(ctx context.Context, path string, force bool) (*Plan, error) {
	data, err := readConfig(ctx, path)
	return h.loadData(ctx, path, data, err, force)
}

// readConfig reads a configuration file, or gives up when ctx ends. The
// read itself cannot wait for a writer (conffile opens without blocking),
// but a file system can (a network mount that stopped answering): then
// the read goes on in the background and the caller, a shutdown say, does
// not wait for it.
func readConfig(ctx context.Context, path string) ([]byte, error) {
	type read struct {
		data []byte
		err  error
	}
	done := make(chan read, 1)
	go func() {
		data, err := conffile.Read(path)
		done <- read{data, err}
	}()
	select {
	case r := <-done:
		return r.data, r.err
	case <-ctx.Done():
		return nil, context.Cause(ctx)
	}
}

func (h *Host) loadData(ctx context.Context, path string, data []byte, readErr error, force bool) (*Plan, error) {
	if readErr != nil {
		err := fmt.Errorf("read %s: %w", path, readErr)
		h.emit(Event{Type: ReloadRejected, Err: err})
		return nil, err
	}
	if !force {
		if cur := h.File(); cur != nil && cur.Hash == hashOf(data) {
			return nil, ErrUnchanged
		}
	}
	f, err := ParseFile(path, data)
	if err != nil {
		f = nil
		h.emit(Event{Type: ReloadRejected, Err: err})
		return nil, err
	}
	return h.Load(ctx, f)
}

func hashOf(data []byte) string {
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:])
}

// DefaultDebounce is the quiet period of a [Watcher]: how long the file's
// chain must see no change before it is read. See [Watcher] for why 15 ms.
const DefaultDebounce = 15 * time.Millisecond

// DefaultGrace is how long a [Watcher] waits, after the quiet period, before
// it refuses a file that is missing or empty: a non-atomic save passes
// through both states (see [Watcher]).
const DefaultGrace = 200 * time.Millisecond

// Watcher reloads a host when its cordis.yml changes.
//
// What it watches. A watch on the file itself would be lost at the first
// save (editors replace files by rename), and a watch on its directory is not
// enough when names on the way are symbolic links: a Kubernetes ConfigMap
// mounts cordis.yml -> ..data/cordis.yml with ..data -> ..2026_11_01_xx,
// and an update renames a new ..data link over the old one. So the watcher
// resolves the path one name at a time, as the kernel does, and watches every
// directory on the way: the directory of each link, the directory of each
// link's target, the directory of the final file. Any change to one of those
// names, or to one of those directories, resolves the chain again, re-arms
// the watches where it moved, and schedules a read. When a directory of the
// chain is removed or renamed (replaced by rm -rf and mkdir, or by a rename
// of a prepared folder), its watch goes with it: the resolution then stops at
// the missing name and its parent is watched until the name is back. No
// polling is needed: some ancestor always exists. An error from fsnotify (its
// queue overflowed and events were lost) drops every watch and arms them
// afresh. Directories above the chain are not watched: when one of them is
// renamed or replaced, the watches stay on the old folders until a forced
// reload re-arms them.
//
// When it reads. Every event on the chain (Chmod included, so a file whose
// read permission comes back is read again) restarts a quiet period; when it
// ends the file is read through its path. Content whose SHA-256 is the one
// last tried is skipped, so extra events cost one read. Reloads never
// overlap; a burst is one reload of the last content. A missing or empty file
// is what a save that is not atomic shows between its steps (truncate, then
// write; vim renames the old file away before it writes the new one): it is
// refused only if it is still so after [DefaultGrace], and any change meanwhile
// starts over. [Watcher.Reload] forces a reload that skips nothing and waits
// for nothing, and arms every watch afresh.
//
// Why a 15 ms quiet period. fsnotify (v1.10) offers no close-write event, so
// the end of a save is a guess. Measured on every way of saving
// (BenchmarkSavePatterns; the table is in docs/rfc/0001-host.md): programs
// that write in place finish within microseconds of the truncation, and no
// quiet period, down to 1 µs, applied a part of their file; only a writer
// that pauses with a valid part on disk can be applied half-written. A
// pause of 5 ms (the test's) was applied half-written with a quiet period of
// 5 ms or less; on a 2-core machine loaded 5 to 7 times over, the same 5 ms
// pause stretched past 10 ms in 7 % of saves and past 15 ms in 1 of 140.
// 15 ms keeps that rare and the host's share of a reload (quiet period,
// read, parse, apply) at 17 ms, under the 25 ms it may take; the 40 ms of
// the first version bought nothing the measurement could see.
type Watcher struct {
	host     *Host  // nil for a file watcher (NewFileWatcher)
	path     string // as given: read through it, named in messages
	abs      string // absolute and clean: resolved
	debounce time.Duration
	grace    time.Duration
	log      *slog.Logger
	force    chan struct{}
	rearm    chan struct{} // the forced reload's request to the watches
	lastSeen string        // hash of the last content tried
	// changed takes what a read found; NewFileWatcher's caller gives it,
	// a host's watcher loads it.
	changed func(ctx context.Context, data []byte, err error, force bool)
}

// WatcherOptions configure a [Watcher].
type WatcherOptions struct {
	// Debounce is the quiet period; it defaults to [DefaultDebounce].
	Debounce time.Duration
	// Grace is how long a missing or empty file must stay so before it is
	// refused; it defaults to [DefaultGrace].
	Grace  time.Duration
	Logger *slog.Logger
}

// NewWatcher returns a watcher of path for h. Call Run to start it.
func NewWatcher(h *Host, path string, opts WatcherOptions) *Watcher {
	if opts.Logger == nil {
		opts.Logger = h.log
	}
	w := newWatcher(path, opts)
	w.host = h
	if f := h.File(); f != nil {
		w.lastSeen = f.Hash
	}
	w.changed = w.load
	return w
}

// NewFileWatcher returns a watcher of a file other than cordis.yml that a
// plugin follows (mcp-servers follows the mcpServers file it reads): the
// same watches on the path's chain, quiet period and grace as a host's
// [Watcher]. changed receives the content of every read whose content
// differs from the last one's, or why the file could not be read — a
// missing or empty file only once it stayed so for the grace; force is set
// for a read [Watcher.Reload] asked for. seen is the content the caller
// read already (nil: none), so that the first read skips it. Call Run to
// start it; changed runs on Run's goroutine, one call at a time.
func NewFileWatcher(path string, seen []byte, opts WatcherOptions, changed func(ctx context.Context, data []byte, err error, force bool)) *Watcher {
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	w := newWatcher(path, opts)
	if seen != nil {
		w.lastSeen = hashOf(seen)
	}
	w.changed = changed
	return w
}

func newWatcher(path string, opts WatcherOptions) *Watcher {
	abs, err := filepath.Abs(path)
	if err != nil {
		abs = filepath.Clean(path)
	}
	w := &Watcher{
		path:     path,
		abs:      abs,
		debounce: opts.Debounce,
		grace:    opts.Grace,
		log:      opts.Logger,
		force:    make(chan struct{}, 1),
		rearm:    make(chan struct{}, 1),
	}
	if w.debounce <= 0 {
		w.debounce = DefaultDebounce
	}
	if w.grace <= 0 {
		w.grace = DefaultGrace
	}
	return w
}

// Reload asks for a forced reload, and for every watch to be armed afresh;
// it does not wait for either.
func (w *Watcher) Reload() {
	for _, c := range []chan struct{}{w.force, w.rearm} {
		select {
		case c <- struct{}{}:
		default:
		}
	}
}

// Run watches until ctx ends. Its first read comes one quiet period after
// the watches are armed, so an edit made after the host loaded the file and
// before Run started is applied too. It returns an error only when it cannot watch
// at all (no inotify instance left, no folder on the path that can be
// watched).
func (w *Watcher) Run(ctx context.Context) error {
	fw, err := fsnotify.NewWatcher()
	if err != nil {
		return fmt.Errorf("watch %s: %w", w.path, err)
	}
	tr := newTracker(fw, w.abs, w.log)
	if err := tr.arm(); err != nil {
		fw.Close()
		return err
	}
	// The file may have changed between its load and the watches being
	// armed (Run is started beside other work, and a loaded machine can
	// take its time): one read after the quiet period catches that edit,
	// and costs a hash when there was none.
	changes := make(chan struct{}, 1)
	changes <- struct{}{}
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() { w.follow(tr, changes, done) })
	w.loop(ctx, changes)
	close(done)
	wg.Wait()
	return fw.Close()
}

// follow turns fsnotify's events and errors into change notifications,
// keeping the watches on the chain.
func (w *Watcher) follow(tr *tracker, changes chan<- struct{}, done <-chan struct{}) {
	notify := func() {
		select {
		case changes <- struct{}{}:
		default:
		}
	}
	for {
		select {
		case ev, ok := <-tr.fw.Events:
			if !ok {
				return
			}
			if tr.event(ev) {
				notify()
			}
		case err, ok := <-tr.fw.Errors:
			if !ok {
				return
			}
			w.log.Warn("watching the configuration: events may be lost; watching again from scratch", "file", w.path, "err", err)
			if err := tr.reset(); err != nil {
				w.log.Warn("watching the configuration", "file", w.path, "err", err)
			}
			notify()
		case <-w.rearm:
			if err := tr.reset(); err != nil {
				w.log.Warn("watching the configuration", "file", w.path, "err", err)
			}
			notify()
		case <-done:
			return
		}
	}
}

// loop runs the quiet period and the grace, and reloads one at a time.
func (w *Watcher) loop(ctx context.Context, changes <-chan struct{}) {
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	graced := false // the timer runs the grace of a missing or empty file
	for {
		select {
		case <-ctx.Done():
			timer.Stop()
			return
		case <-changes:
			graced = false
			timer.Reset(w.debounce)
		case <-timer.C:
			if w.reload(ctx, false, !graced) {
				graced = true
				timer.Reset(w.grace)
				continue
			}
			graced = false
		case <-w.force:
			timer.Stop()
			graced = false
			w.reload(ctx, true, false)
		}
	}
}

// reload reads the file and loads it. A patient reload leaves a missing or
// empty file for later and reports that it did.
func (w *Watcher) reload(ctx context.Context, force, patient bool) (later bool) {
	data, err := readConfig(ctx, w.path)
	if ctx.Err() != nil {
		return false // shutting down: nothing to load
	}
	if patient && saveInProgress(data, err) {
		return true
	}
	if err == nil {
		sum := hashOf(data)
		if !force && sum == w.lastSeen {
			return false // the same bytes as last time: a touch, or a write of identical content
		}
		w.lastSeen = sum
	}
	w.changed(ctx, data, err, force)
	return false
}

// load loads what a host's watcher read.
func (w *Watcher) load(ctx context.Context, data []byte, err error, force bool) {
	plan, err := w.host.loadData(ctx, w.path, data, err, force)
	switch {
	case errors.Is(err, ErrUnchanged):
	case err != nil:
		w.log.Info("configuration change refused; the running entries are unchanged", "file", w.path, "err", err)
	case plan.Empty():
		w.log.Info("configuration reloaded; no entry changed", "file", w.path)
	}
}

// saveInProgress reports whether a read shows what a save that is not atomic
// shows between its steps: no file, or an empty one.
func saveInProgress(data []byte, err error) bool {
	if err != nil {
		return errors.Is(err, fs.ErrNotExist)
	}
	return len(bytes.TrimSpace(data)) == 0
}
