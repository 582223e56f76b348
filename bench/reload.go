package bench

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os/exec"
	"time"

	"github.com/harness-go/harness/host"
	"github.com/mark3labs/mcp-go/mcp"
)

// ReloadResult records each reload of one mcp-client entry through a real
// cordis.yml write seen by the host's watcher.
type ReloadResult struct {
	// Quiet is the watcher's quiet period during the run
	// (host.DefaultDebounce): it is part of every reload.
	Quiet time.Duration
	// Total is the last write (the rename of the new file over cordis.yml)
	// → the new tool set visible in the registry.
	Total []time.Duration
	// Server is the server's own connect + discovery, measured right after
	// each reload with hand-written lines: spawn, initialize, initialized,
	// tools/list answered.
	Server []time.Duration
	// ServerExit is the server's own exit once its stdin closes (the old
	// instance of a reload is disposed this way, after the new one took
	// over: off the path of the reload).
	ServerExit []time.Duration
	// Host is Total − Server, per reload: watch, the quiet period, parse,
	// check, reconcile, apply, our client's share of connecting, the
	// takeover.
	Host []time.Duration
	// The phases, from the host's events (make before break): write → the
	// new instance applied beside the old one (watch, quiet period, parse,
	// check, apply), → its tools visible (spawn, connect, list, takeover).
	ToReloading, ToVisible []time.Duration
}

// RunReload edits cordis.yml n times, alternating the entry's serverName,
// and measures each edit until the new tools are visible.
//
// The edits run on a [reloadRig], which a measurement of calls made while
// the entry is edited (docs/benchmarks.md, "Reload latency": 16 callers during 50 edits) can share.
func RunReload(ctx context.Context, bins *Binaries, dir string, n int, log *slog.Logger) (*ReloadResult, error) {
	r, err := newReloadRig(ctx, bins, dir, log)
	if err != nil {
		return nil, err
	}
	defer r.close()
	res := &ReloadResult{Quiet: host.DefaultDebounce}
	for i := 1; i <= n; i++ {
		e, err := r.edit(ctx, i)
		if err != nil {
			return nil, fmt.Errorf("reload %d: %w", i, err)
		}
		connect, exit, err := ServerFloor(ctx, bins.Fixture, FixtureArgs)
		if err != nil {
			return nil, err
		}
		total := e.visible.Sub(e.written)
		res.Total = append(res.Total, total)
		res.Server = append(res.Server, connect)
		res.ServerExit = append(res.ServerExit, exit)
		res.Host = append(res.Host, total-connect)
		res.ToReloading = append(res.ToReloading, e.reloading.Sub(e.written))
		res.ToVisible = append(res.ToVisible, e.visible.Sub(e.reloading))
	}
	return res, nil
}

// reloadRig is one mcp-client entry, id "reload", ready under an in-process
// host whose watcher follows its cordis.yml: what a reload measurement
// starts from. Edit i gives the entry serverName ra (even i) or rb (odd).
type reloadRig struct {
	bins *Binaries
	b    *Bridge
	sub  *host.Subscription
	stop func() // the watcher
}

const reloadID = "reload"

var reloadNames = [2]string{"ra", "rb"}

func newReloadRig(ctx context.Context, bins *Binaries, dir string, log *slog.Logger) (*reloadRig, error) {
	r := &reloadRig{bins: bins, b: NewBridge(dir, log)}
	if err := r.b.Apply(ctx, r.variant(0)); err != nil {
		r.b.Close()
		return nil, err
	}
	r.sub = r.b.Host.Subscribe()
	stop, err := startWatcher(ctx, r.b, r.sub, log)
	if err != nil {
		r.sub.Close()
		r.b.Close()
		return nil, err
	}
	r.stop = stop
	return r, nil
}

func (r *reloadRig) close() {
	r.stop()
	r.sub.Close()
	r.b.Close()
}

// variant is the file of edit i.
func (r *reloadRig) variant(i int) []Server {
	return []Server{{ID: reloadID, ServerName: reloadNames[i%2], Command: r.bins.Fixture, Args: FixtureArgs}}
}

// tool is the public name of the echo tool after edit i.
func (r *reloadRig) tool(i int) string { return "mcp__" + reloadNames[i%2] + "__echo" }

// editTimes are the moments of one edit.
type editTimes struct {
	written, reloading, visible time.Time
}

// edit writes the file of edit i and follows its reload until the
// registry holds the new tool and not the old one.
func (r *reloadRig) edit(ctx context.Context, i int) (editTimes, error) {
	return reloadOnce(ctx, r.b, r.sub, reloadID, RenderConfig(r.variant(i), fmt.Sprintf("reload %d", i)), r.tool(i), r.tool(i+1))
}

// reloadOnce writes cordis.yml and follows the reload of entry id: when the
// write ended (the rename of the new file), when the new instance started
// beside the old one, and when the registry showed want and no longer gone
// (gone may equal want's absence: "" waits only for want).
func reloadOnce(ctx context.Context, b *Bridge, sub *host.Subscription, id string, data []byte, want, gone string) (e editTimes, err error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	seen := make(chan time.Time, 1)
	go func() { seen <- waitTools(ctx, b, want, gone) }()
	if err = WriteFileAtomic(b.Config, data); err != nil {
		return
	}
	e.written = time.Now()
	for {
		select {
		case ev := <-sub.C:
			if ev.Type == host.ReloadRejected {
				err = fmt.Errorf("rejected: %v", ev.Err)
				return
			}
			if ev.Type != host.EntryChanged || ev.Entry != id {
				continue
			}
			switch {
			case ev.Reloading:
				e.reloading = ev.Time
			case ev.Note != "":
				err = errors.New(ev.Note)
				return
			case ev.State == host.Ready && !e.reloading.IsZero():
				if e.visible = <-seen; e.visible.IsZero() {
					err = ctx.Err()
				}
				return
			case ev.State == host.Failed:
				err = ev.Err
				return
			}
		case <-ctx.Done():
			err = ctx.Err()
			return
		}
	}
}

// startWatcher runs a watcher of b's cordis.yml and returns once it
// watches: a forced reload has gone through its loop.
func startWatcher(ctx context.Context, b *Bridge, sub *host.Subscription, log *slog.Logger) (stop func(), err error) {
	w := host.NewWatcher(b.Host, b.Config, host.WatcherOptions{Logger: log})
	wctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- w.Run(wctx) }()
	stop = func() { cancel(); <-done }
	w.Reload()
	for {
		select {
		case ev := <-sub.C:
			if ev.Type == host.Reloaded {
				return stop, nil
			}
		case err := <-done:
			cancel()
			return nil, fmt.Errorf("watcher: %v", err)
		case <-ctx.Done():
			stop()
			return nil, ctx.Err()
		}
	}
}

// waitTools returns the moment the registry holds want and not gone, or the
// zero time if ctx ends first.
func waitTools(ctx context.Context, b *Bridge, want, gone string) time.Time {
	for {
		ch := b.Tools.Changed()
		_, hasWant := b.Tools.Lookup(want)
		_, hasGone := b.Tools.Lookup(gone)
		hasGone = hasGone && gone != want
		if hasWant && !hasGone {
			return time.Now()
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return time.Time{}
		}
	}
}

// ServerFloor measures what any client must wait for: the server started,
// initialize answered, notifications/initialized sent, tools/list answered
// (connect), and, once its stdin is closed, the process gone (exit).
func ServerFloor(ctx context.Context, command string, args []string) (connect, exit time.Duration, err error) {
	t0 := time.Now()
	cmd := exec.CommandContext(ctx, command, args...)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return 0, 0, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return 0, 0, err
	}
	if err := cmd.Start(); err != nil {
		return 0, 0, err
	}
	out := bufio.NewReaderSize(stdout, 64<<10)
	exchange := func(msg string, answer bool) error {
		if _, err := stdin.Write([]byte(msg + "\n")); err != nil || !answer {
			return err
		}
		line, err := out.ReadSlice('\n')
		if err == nil && !bytes.Contains(line, []byte(`"result"`)) {
			err = fmt.Errorf("answered %q", line)
		}
		return err
	}
	err = errors.Join(
		exchange(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"`+mcp.LATEST_LEGACY_PROTOCOL_VERSION+`","capabilities":{},"clientInfo":{"name":"floor","version":"0"}}}`, true),
		exchange(`{"jsonrpc":"2.0","method":"notifications/initialized"}`, false),
		exchange(`{"jsonrpc":"2.0","id":2,"method":"tools/list"}`, true),
	)
	connect = time.Since(t0)
	t1 := time.Now()
	stdin.Close()
	werr := cmd.Wait()
	exit = time.Since(t1)
	if err != nil {
		return 0, 0, fmt.Errorf("server floor: %w", err)
	}
	if werr != nil {
		return 0, 0, fmt.Errorf("server floor: %w", werr)
	}
	return connect, exit, nil
}
