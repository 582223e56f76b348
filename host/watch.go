package host

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"github.com/fsnotify/fsnotify"
)

// ErrUnchanged is returned by [Host.LoadFile] when the file's content is the
// one already running (or the last one refused) and the load was not forced.
var ErrUnchanged = errors.New("configuration unchanged")

// LoadFile reads, parses and loads a cordis.yml (see [Host.Load]). Unless
// force is set, a file whose content hash equals the running configuration's
// is skipped with [ErrUnchanged]. A file that cannot be read or parsed
// changes nothing and is reported as a ReloadRejected event.
func (h *Host) LoadFile(ctx context.Context, path string, force bool) (*Plan, error) {
	data, err := os.ReadFile(path)
	return h.loadData(ctx, path, data, err, force)
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

// DefaultDebounce is how long a [Watcher] waits after the last change
// before it reloads: long enough to see an editor's save as one change,
// short enough that nobody notices.
const DefaultDebounce = 40 * time.Millisecond

// Watcher reloads a host when its cordis.yml changes.
//
// It watches the file's directory, because editors save by writing a new file
// and renaming it over the old one, which a watch on the file itself would
// lose. Changes within the debounce window coalesce into one reload of the
// latest content; reloads never overlap; content identical to what runs (or
// to the last refused file) is skipped. [Watcher.Reload] forces a reload
// that skips nothing.
type Watcher struct {
	host     *Host
	path     string
	base     string
	dir      string
	debounce time.Duration
	log      *slog.Logger
	force    chan struct{}
	lastSeen string // hash of the last content tried
}

// WatcherOptions configure a [Watcher].
type WatcherOptions struct {
	// Debounce defaults to [DefaultDebounce].
	Debounce time.Duration
	Logger   *slog.Logger
}

// NewWatcher returns a watcher of path for h. Call Run to start it.
func NewWatcher(h *Host, path string, opts WatcherOptions) *Watcher {
	abs, err := filepath.Abs(path)
	if err != nil {
		abs = path
	}
	w := &Watcher{
		host:     h,
		path:     path,
		base:     filepath.Base(abs),
		dir:      filepath.Dir(abs),
		debounce: opts.Debounce,
		log:      opts.Logger,
		force:    make(chan struct{}, 1),
	}
	if w.debounce <= 0 {
		w.debounce = DefaultDebounce
	}
	if w.log == nil {
		w.log = h.log
	}
	if f := h.File(); f != nil {
		w.lastSeen = f.Hash
	}
	return w
}

// Reload asks for a forced reload; it does not wait for it.
func (w *Watcher) Reload() {
	select {
	case w.force <- struct{}{}:
	default:
	}
}

// Run watches until ctx ends.
func (w *Watcher) Run(ctx context.Context) error {
	fw, err := fsnotify.NewWatcher()
	if err != nil {
		return fmt.Errorf("watch %s: %w", w.path, err)
	}
	defer fw.Close()
	if err := fw.Add(w.dir); err != nil {
		return fmt.Errorf("watch %s: %w", w.dir, err)
	}
	changes := make(chan struct{}, 1)
	done := make(chan struct{})
	defer close(done)
	go func() {
		for {
			select {
			case ev, ok := <-fw.Events:
				if !ok {
					return
				}
				if filepath.Base(ev.Name) != w.base || ev.Op == fsnotify.Chmod {
					continue
				}
				select {
				case changes <- struct{}{}:
				default:
				}
			case err, ok := <-fw.Errors:
				if !ok {
					return
				}
				w.log.Warn("watching the configuration", "file", w.path, "err", err)
			case <-done:
				return
			}
		}
	}()
	w.loop(ctx, changes)
	return nil
}

// loop debounces change notifications and runs reloads one at a time.
func (w *Watcher) loop(ctx context.Context, changes <-chan struct{}) {
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	for {
		select {
		case <-ctx.Done():
			timer.Stop()
			return
		case <-changes:
			timer.Reset(w.debounce)
		case <-timer.C:
			w.reload(ctx, false)
		case <-w.force:
			timer.Stop()
			w.reload(ctx, true)
		}
	}
}

func (w *Watcher) reload(ctx context.Context, force bool) {
	data, err := os.ReadFile(w.path)
	if err == nil {
		sum := hashOf(data)
		if !force && sum == w.lastSeen {
			return // the same bytes as last time: a touch, or a write of identical content
		}
		w.lastSeen = sum
	}
	plan, err := w.host.loadData(ctx, w.path, data, err, force)
	switch {
	case errors.Is(err, ErrUnchanged):
	case err != nil:
		w.log.Info("configuration change refused; the running entries are unchanged", "file", w.path, "err", err)
	case plan.Empty():
		w.log.Info("configuration reloaded; no entry changed", "file", w.path)
	}
}
