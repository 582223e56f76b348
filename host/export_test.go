package host

import "context"

// Loop runs the watcher's debounce loop on a given change channel, so tests
// can drive it without a file system watcher.
func (w *Watcher) Loop(ctx context.Context, changes <-chan struct{}) { w.loop(ctx, changes) }
