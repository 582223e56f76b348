package proctest_test

import (
	"io"
	"strings"
	"testing"
	"time"

	"github.com/harness-go/harness/internal/testkit/proctest"
)

func TestLines(t *testing.T) {
	t.Parallel()
	r, w := io.Pipe()
	l := proctest.ReadLines(r, 8)
	go func() {
		io.WriteString(w, "one\ntwo\n")
		io.WriteString(w, strings.Repeat("x", 20)+"\nlast")
		w.Close()
	}()
	i, ok := l.Find(0, 10*time.Second, func(s string) bool { return s == "two" })
	if !ok || i != 1 {
		t.Fatalf("Find = %d, %v", i, ok)
	}
	if !l.WaitClosed(10 * time.Second) {
		t.Fatal("the pipe closed but WaitClosed says not")
	}
	want := []string{"one", "two", "xxxxxxxx… (a line of 21 bytes)", "last"}
	if got := l.From(0); strings.Join(got, "|") != strings.Join(want, "|") || l.Len() != 4 {
		t.Fatalf("lines %q, want %q", got, want)
	}
	if got := l.Slice(1, 2); len(got) != 1 || got[0] != "two" || l.Text() != strings.Join(want, "\n") {
		t.Fatalf("Slice %q, Text %q", got, l.Text())
	}
	if _, ok := l.Find(0, time.Second, func(string) bool { return false }); ok {
		t.Fatal("Find matched nothing but said ok")
	}
}

func TestLinesUncapped(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("y", 200<<10)
	l := proctest.ReadLines(strings.NewReader(long+"\n"), 0)
	if !l.WaitClosed(10*time.Second) || l.Text() != long {
		t.Fatalf("an uncapped line of %d bytes came back as %d", len(long), len(l.Text()))
	}
}
