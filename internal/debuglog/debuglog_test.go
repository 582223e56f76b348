package debuglog_test

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"

	"github.com/harness-go/harness/internal/debuglog"
)

func TestRecordsArriveAtDebugLevel(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		level slog.Level
		want  string
	}{
		{slog.LevelDebug, `level=DEBUG msg=lost entry=e part.http=x part.n=1`},
		{slog.LevelInfo, ``}, // an error record of the library stays out
	} {
		var buf bytes.Buffer
		opts := &slog.HandlerOptions{Level: tc.level, ReplaceAttr: noTime}
		log := slog.New(debuglog.Handler(slog.NewTextHandler(&buf, opts))).
			With("entry", "e").WithGroup("part").With("http", "x")
		log.Error("lost", "n", 1)
		if got := strings.TrimSpace(buf.String()); got != tc.want {
			t.Errorf("handler at %v wrote %q, want %q", tc.level, got, tc.want)
		}
	}
}

func noTime(_ []string, a slog.Attr) slog.Attr {
	if a.Key == slog.TimeKey {
		return slog.Attr{}
	}
	return a
}
