package proctest_test

import (
	"strings"
	"testing"

	"github.com/harness-go/harness/internal/testkit/proctest"
)

func TestSweep(t *testing.T) {
	t.Parallel()
	var s proctest.Sweep
	a, b := s.Secret("a-"), s.Secret("b-")
	if a == b || !strings.HasPrefix(a, "a-") || len(a) != 2+24 {
		t.Fatalf("secrets %q %q", a, b)
	}
	s.Output("clean run", "nothing here\n")
	var out strings.Builder
	if code := s.Report(&out, "pkg", 0, true); code != 0 || !strings.Contains(out.String(), "compared 1 outputs with 2 secrets: none printed") {
		t.Fatalf("clean: code %d, %q", code, out.String())
	}
	s.Output("leaky run", "the key is "+b+"\x1b[0m")
	out.Reset()
	if code := s.Report(&out, "pkg", 0, false); code != 1 || !strings.Contains(out.String(), "printed by leaky run") || strings.Contains(out.String(), "\x1b") {
		t.Fatalf("leak: code %d, %q", code, out.String())
	}
	if leaks, _, _ := s.Leaks(); len(leaks) != 1 || strings.Contains(leaks[0], a) {
		t.Fatalf("leaks %q", leaks)
	}
	// Any spelling of a secret counts: its start, cut at a clip boundary.
	var c proctest.Sweep
	v := c.Secret("c-")
	c.Output("clipped run", "the key is "+v[:proctest.SpellingPrefix]+"…")
	if leaks, _, _ := c.Leaks(); len(leaks) != 1 || !strings.Contains(leaks[0], "printed by clipped run as "+`"`+v[:proctest.SpellingPrefix]+`"`) {
		t.Fatalf("a clipped secret: leaks %q", leaks)
	}
}

func TestSpellings(t *testing.T) {
	t.Parallel()
	got := proctest.Spellings(`tok "é"/+ xyz`)
	want := []string{`tok "é"/+ xyz`, `tok \"é\"/+ xyz`, `tok+%22%C3%A9%22%2F%2B+xyz`, `tok%20%22%C3%A9%22%2F+%20xyz`, `tok "é"/+ x`}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Fatalf("Spellings = %q, want %q", got, want)
	}
	if got := proctest.Spellings("abc"); len(got) != 1 || got[0] != "abc" {
		t.Fatalf("a short plain secret has one spelling, got %q", got)
	}
}
