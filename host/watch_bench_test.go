package host_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/harness-go/harness/host"
	"github.com/harness-go/harness/plugins/tools"
)

// A savePattern saves data to path the way one family of editors does, and
// returns when the last byte of the content was written.
type savePattern struct {
	name string
	save func(path string, data []byte) (last time.Time, err error)
}

// savePatterns are the ways programs save a file, from the system calls
// they make (strace): the pauses between the calls are those of this
// program, except where a pattern names one.
var savePatterns = []savePattern{
	// JetBrains' safe write, sed -i, kubectl's and most tools' atomic save:
	// the reader sees the old file or the new one, never a part.
	{"temp+rename", func(path string, data []byte) (time.Time, error) {
		tmp := path + ".tmp"
		if err := os.WriteFile(tmp, data, 0o644); err != nil {
			return time.Time{}, err
		}
		err := os.Rename(tmp, path)
		return time.Now(), err
	}},
	// VS Code, nano, vim with backupcopy=yes, a shell's `>`: open with
	// O_TRUNC, one write.
	{"in-place", func(path string, data []byte) (time.Time, error) {
		err := os.WriteFile(path, data, 0o644)
		return time.Now(), err
	}},
	// A buffered writer (C stdio, bufio, cp and tar of a larger file): the
	// file grows by 4 KiB writes.
	{"in-place-4KiB", func(path string, data []byte) (time.Time, error) {
		f, err := os.OpenFile(path, os.O_WRONLY|os.O_TRUNC, 0)
		if err != nil {
			return time.Time{}, err
		}
		for len(data) > 0 && err == nil {
			n := min(len(data), 4096)
			_, err = f.Write(data[:n])
			data = data[n:]
		}
		last := time.Now()
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		return last, err
	}},
	// vim by default (backupcopy=auto, writebackup), emacs: the file is
	// renamed to a backup, written anew, synced; vim then removes the
	// backup.
	{"vim", func(path string, data []byte) (time.Time, error) {
		if err := os.Rename(path, path+"~"); err != nil {
			return time.Time{}, err
		}
		f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
		if err != nil {
			return time.Time{}, err
		}
		_, err = f.Write(data)
		last := time.Now()
		if err == nil {
			err = f.Sync()
		}
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err == nil {
			err = os.Remove(path + "~")
		}
		return last, err
	}},
	// A slow editor: truncated, written 5 ms later (the test's gap).
	{"truncate-5ms-write", func(path string, data []byte) (time.Time, error) {
		if err := os.Truncate(path, 0); err != nil {
			return time.Time{}, err
		}
		time.Sleep(5 * time.Millisecond)
		f, err := os.OpenFile(path, os.O_WRONLY, 0)
		if err != nil {
			return time.Time{}, err
		}
		_, err = f.Write(data)
		last := time.Now()
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		return last, err
	}},
	// A slow writer whose first part is a valid file: the entries up to
	// the middle, the rest 5 ms later.
	{"half-5ms-rest", func(path string, data []byte) (time.Time, error) {
		f, err := os.OpenFile(path, os.O_WRONLY|os.O_TRUNC, 0)
		if err != nil {
			return time.Time{}, err
		}
		defer f.Close()
		mid := strings.Index(string(data[len(data)/2:]), "\n- ") + len(data)/2 + 1
		if _, err := f.Write(data[:mid]); err != nil {
			return time.Time{}, err
		}
		time.Sleep(5 * time.Millisecond)
		_, err = f.Write(data[mid:])
		return time.Now(), err
	}},
}

// saveContent is save k of a 12 KiB file: entry a changes each time; the
// 150 others do not, and any prefix of the file that parses lacks some.
func saveContent(k int) []byte {
	var b strings.Builder
	fmt.Fprintf(&b, "- id: a\n  name: probe\n  config:\n    label: save-%d\n", k)
	for i := range 150 {
		fmt.Fprintf(&b, "- id: e%03d\n  name: probe\n  config:\n    label: constant\n", i)
	}
	return []byte(b.String())
}

// BenchmarkSavePatterns measures, for each way of saving and each quiet
// period, with and without the grace for a missing or empty file, what the
// watcher makes of a save: half/op is the share of saves of which a
// content that was not the final one was applied, refused/op the share
// refused on the way, ms-p50 the median from the last write to the final
// content loaded.
//
//	go test -run '^$' -bench SavePatterns -benchtime 40x ./host
func BenchmarkSavePatterns(b *testing.B) {
	quiets := []time.Duration{time.Microsecond, time.Millisecond, 2 * time.Millisecond, 5 * time.Millisecond,
		10 * time.Millisecond, 15 * time.Millisecond, 20 * time.Millisecond, 40 * time.Millisecond}
	for _, p := range savePatterns {
		for _, q := range quiets {
			for _, grace := range []time.Duration{time.Nanosecond, host.DefaultGrace} {
				g := "none"
				if grace > time.Nanosecond {
					g = grace.String()
				}
				b.Run(fmt.Sprintf("%s/quiet=%s/grace=%s", p.name, q, g), func(b *testing.B) {
					benchSaves(b, p, host.WatcherOptions{Debounce: q, Grace: grace})
				})
			}
		}
	}
}

func benchSaves(b *testing.B, p savePattern, opts host.WatcherOptions) {
	dir := b.TempDir()
	path := filepath.Join(dir, "cordis.yml")
	if err := os.WriteFile(path, saveContent(0), 0o644); err != nil {
		b.Fatal(err)
	}
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	h := host.New(host.Options{Logger: log})
	h.Provide(recorderService, newRecorder())
	h.Provide(tools.Service, tools.New())
	defer h.Close(context.Background())
	if _, err := h.LoadFile(context.Background(), path, false); err != nil {
		b.Fatal(err)
	}
	sub := h.Subscribe()
	defer sub.Close()
	opts.Logger = log
	w := host.NewWatcher(h, path, opts)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- w.Run(ctx) }()
	defer func() { cancel(); <-done }()
	// Watching once a forced reload is through; that reload is not counted.
	w.Reload()
	next := func() host.Event {
		select {
		case ev := <-sub.C:
			return ev
		case <-time.After(10 * time.Second):
			b.Fatal("no event for 10 s")
			return host.Event{}
		}
	}
	for ev := next(); ev.Type != host.Reloaded; ev = next() {
	}

	// A load of a part of the file removes some of the constant entries:
	// its plan is the only one with removals. Events are counted wherever
	// they arrive; a save ends when the host holds its content.
	var halves, refused int
	var lat []time.Duration
	count := func(ev host.Event) {
		switch {
		case ev.Type == host.Reloaded && len(ev.Plan.Removed) > 0:
			halves++
		case ev.Type == host.ReloadRejected:
			refused++
		}
	}
	b.ResetTimer()
	for i := 1; i <= b.N; i++ {
		data := saveContent(i)
		want := hashOfContent(data)
		last, err := p.save(path, data)
		if err != nil {
			b.Fatal(err)
		}
		for {
			count(next())
			if f := h.File(); f != nil && f.Hash == want {
				lat = append(lat, time.Since(last))
				break
			}
		}
	}
	b.StopTimer()
	// The last events come before those of a forced reload, whose plan
	// alone is empty.
	w.Reload()
	for ev := next(); ev.Type != host.Reloaded || !ev.Plan.Empty(); ev = next() {
		count(ev)
	}
	b.ReportMetric(float64(halves)/float64(b.N), "half/op")
	b.ReportMetric(float64(refused)/float64(b.N), "refused/op")
	slices.Sort(lat)
	b.ReportMetric(float64(lat[len(lat)/2])/float64(time.Millisecond), "ms-p50")
}

func hashOfContent(data []byte) string {
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:])
}
