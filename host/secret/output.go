package secret

import (
	"context"
	"io"
	"log/slog"
)

// Handler returns a slog handler that redacts every record before h sees
// it: the message and every attribute value (errors, strings, anything that
// prints), in groups too. Attributes given to With are redacted then, with
// the secrets the set holds at that moment: give With no value that may
// become a secret later (the host gives it ids and names). Wrapping a
// handler that already redacts for s returns it unchanged.
func (s *Set) Handler(h slog.Handler) slog.Handler {
	if r, ok := h.(*handler); ok && r.set == s {
		return h
	}
	return &handler{set: s, next: h}
}

type handler struct {
	set  *Set
	next slog.Handler
}

func (h *handler) Enabled(ctx context.Context, l slog.Level) bool { return h.next.Enabled(ctx, l) }

func (h *handler) Handle(ctx context.Context, r slog.Record) error {
	if h.set.empty() {
		return h.next.Handle(ctx, r)
	}
	out := slog.NewRecord(r.Time, r.Level, h.set.Redact(r.Message), r.PC)
	r.Attrs(func(a slog.Attr) bool {
		out.AddAttrs(h.attr(a))
		return true
	})
	return h.next.Handle(ctx, out)
}

func (h *handler) WithAttrs(as []slog.Attr) slog.Handler {
	red := make([]slog.Attr, len(as))
	for i, a := range as {
		red[i] = h.attr(a)
	}
	return &handler{set: h.set, next: h.next.WithAttrs(red)}
}

func (h *handler) WithGroup(name string) slog.Handler {
	return &handler{set: h.set, next: h.next.WithGroup(name)}
}

// attr redacts one attribute. Values that are not strings are rendered
// first (an error, a Stringer, a struct), so nothing reaches the output
// unredacted; numbers, booleans, times and durations cannot hold a secret.
func (h *handler) attr(a slog.Attr) slog.Attr {
	v := a.Value.Resolve()
	switch v.Kind() {
	case slog.KindString:
		return slog.String(a.Key, h.set.Redact(v.String()))
	case slog.KindGroup:
		g := v.Group()
		red := make([]slog.Attr, len(g))
		for i, x := range g {
			red[i] = h.attr(x)
		}
		return slog.Attr{Key: a.Key, Value: slog.GroupValue(red...)}
	case slog.KindAny:
		if s := v.String(); h.set.Contains(s) {
			return slog.String(a.Key, h.set.Redact(s))
		}
	}
	return slog.Attr{Key: a.Key, Value: v}
}

// Writer returns a writer that redacts each Write before passing it to w.
// The harness writes whole lines and messages per call, so a secret never
// straddles two writes of ours.
func (s *Set) Writer(w io.Writer) io.Writer {
	return &writer{set: s, w: w}
}

type writer struct {
	set *Set
	w   io.Writer
}

func (w *writer) Write(p []byte) (int, error) {
	text := string(p)
	red := w.set.Redact(text)
	if red == text {
		return w.w.Write(p)
	}
	if _, err := io.WriteString(w.w, red); err != nil {
		return 0, err
	}
	return len(p), nil
}
