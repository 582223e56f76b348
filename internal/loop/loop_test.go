package loop

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestParseAndString(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, in, out string
		hops          int
	}{
		{"empty", "", "", 0},
		{"one hop", "aaaa/cfg1", "aaaa/cfg1", 1},
		{"two hops", "aaaa/cfg1,bbbb/cfg2", "aaaa/cfg1,bbbb/cfg2", 2},
		{"a hop without configuration", "aaaa", "aaaa", 1},
		{"blanks and empty parts", " aaaa/c , ,bbbb/d,", "aaaa/c,bbbb/d", 2},
		{"garbage still counts", "x y z,???", "x y z,???", 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := Parse(tc.in)
			if len(c) != tc.hops || c.String() != tc.out {
				t.Fatalf("Parse(%q) = %q (%d hops), want %q (%d hops)", tc.in, c, len(c), tc.out, tc.hops)
			}
		})
	}
}

func TestNewAndNext(t *testing.T) {
	t.Parallel()
	a := New("", "")
	b := New("", "")
	if len(a.ID) != 16 || a.ID == b.ID {
		t.Fatalf("ids %q and %q: want two different random 16-digit ids", a.ID, b.ID)
	}
	c := New("", a.Next())
	if want := a.ID; len(c.Up) != 1 || c.Up[0].ID != want {
		t.Fatalf("a child's chain = %q, want the parent %s", c.Up, want)
	}
	if got := c.Next(); got != a.ID+","+c.ID {
		t.Fatalf("the child hands on %q", got)
	}
}

func TestConfigIDNamesAFileHoweverItIsNamed(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	file := filepath.Join(dir, "cordis.yml")
	if err := os.WriteFile(file, []byte("[]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "link.yml")
	if err := os.Symlink(file, link); err != nil {
		t.Fatal(err)
	}
	other := filepath.Join(dir, "other.yml")
	if err := os.WriteFile(other, []byte("[]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	id := ConfigID(file)
	if ConfigID(link) != id || ConfigID(filepath.Join(dir, ".", "cordis.yml")) != id {
		t.Fatal("a symbolic link or another spelling of the path gives another identity")
	}
	if ConfigID(other) == id {
		t.Fatal("two files share an identity")
	}
	if len(id) != 12 || strings.ContainsAny(id, ",/") {
		t.Fatalf("identity %q must be 12 hex digits", id)
	}
}

func TestCheckStart(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	mine, other := filepath.Join(dir, "mine.yml"), filepath.Join(dir, "other.yml")
	parent := New(mine, "")
	deep := New(other, "")
	for range MaxDepth - 1 {
		deep = New(other+deep.ID, deep.Next())
	}
	for _, tc := range []struct {
		name  string
		self  *Self
		wants string // "" for no error
	}{
		{"no chain", New(mine, ""), ""},
		{"a parent running another file", New(mine, New(other, "").Next()), ""},
		{"a parent running the same file", New(mine, parent.Next()), "is already run by a harness in front of this one"},
		{"an ancestor running the same file", New(mine, New(other, parent.Next()).Next()), "is already run by a harness in front of this one"},
		{"a chain at the bound", New(mine, deep.Next()), "harnesses already stand in front of this one"},
		{"one below the bound", New(mine, New(other, "").Next()+",x,y,z"), ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.self.CheckStart()
			switch {
			case tc.wants == "" && err != nil:
				t.Fatalf("CheckStart: %v", err)
			case tc.wants != "" && (err == nil || !strings.Contains(err.Error(), tc.wants)):
				t.Fatalf("CheckStart = %v, want an error containing %q", err, tc.wants)
			}
			var le *Error
			if err != nil && (!errors.As(err, &le) || !strings.HasPrefix(err.Error(), "harness loop: ")) {
				t.Fatalf("CheckStart error %v is not a named loop error", err)
			}
			if own := strings.Contains(tc.wants, "is already run"); err != nil && le.Own != own {
				t.Fatalf("CheckStart error %v: Own is %v", err, le.Own)
			}
		})
	}
}

func TestCheckRequest(t *testing.T) {
	t.Parallel()
	s := New("", "")
	other := New("", "")
	for _, tc := range []struct {
		name, chain, wants string
	}{
		{"no header", "", ""},
		{"another harness", other.Next(), ""},
		{"itself", s.Next(), "came from this harness itself"},
		{"itself behind another", New("", s.Next()).Next(), "came from this harness itself"},
		{"too deep", "a,b,c,d,e", "came through 5 harnesses"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := s.CheckRequest(tc.chain)
			if (tc.wants == "") != (err == nil) || err != nil && !strings.Contains(err.Error(), tc.wants) {
				t.Fatalf("CheckRequest(%q) = %v, want %q", tc.chain, err, tc.wants)
			}
		})
	}
}

func TestServerInfoAndCheckServer(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	s := New(filepath.Join(dir, "a.yml"), "")
	peer := New(filepath.Join(dir, "b.yml"), "")
	same := New(filepath.Join(dir, "a.yml"), "")
	back := New(filepath.Join(dir, "c.yml"), "")
	back.Reaches("entry", []string{s.ID, "zzz"})

	roundTrip := func(x *Self) Info {
		t.Helper()
		// What mcp-go hands the client: the Info as JSON decoded into any.
		b, err := json.Marshal(x.Info())
		if err != nil {
			t.Fatal(err)
		}
		var raw any
		if err := json.Unmarshal(b, &raw); err != nil {
			t.Fatal(err)
		}
		info, ok := ServerInfo(map[string]any{Capability: raw, "other": true})
		if !ok {
			t.Fatal("ServerInfo does not read a gateway's capability")
		}
		return info
	}
	for _, tc := range []struct {
		name   string
		server Info
		wants  string
	}{
		{"another harness", roundTrip(peer), ""},
		{"itself", roundTrip(s), "the server is this harness's own gateway"},
		{"the same configuration", roundTrip(same), "running this same configuration"},
		{"reaching back", roundTrip(back), "which reaches back to this harness"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := s.CheckServer(tc.server)
			if (tc.wants == "") != (err == nil) || err != nil && !strings.Contains(err.Error(), tc.wants) {
				t.Fatalf("CheckServer(%+v) = %v, want %q", tc.server, err, tc.wants)
			}
		})
	}
	if _, ok := ServerInfo(map[string]any{"x": 1}); ok {
		t.Fatal("a server without the capability reads as a gateway")
	}
	if _, ok := ServerInfo(nil); ok {
		t.Fatal("no capabilities read as a gateway")
	}
}

func TestReachesAndForget(t *testing.T) {
	t.Parallel()
	s := New("", "")
	s.Reaches("a", []string{"p", "q"})
	s.Reaches("b", []string{"q", "r"})
	if got := s.Info().Reach; !slices.Equal(got, []string{s.ID, "p", "q", "r"}) {
		t.Fatalf("reach = %q", got)
	}
	s.Forget("a")
	if got := s.Info().Reach; !slices.Equal(got, []string{s.ID, "q", "r"}) {
		t.Fatalf("reach after Forget = %q", got)
	}
}
