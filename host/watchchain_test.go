package host

import (
	"errors"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestResolveChain builds each layout in a fresh folder and checks which
// folders and names the resolution of its path depends on. In the
// expectations, "@/" stands for that folder.
func TestResolveChain(t *testing.T) {
	t.Parallel()
	type layout struct {
		dirs  []string
		files []string
		links [][2]string // name, target ("@/" expanded)
	}
	cases := []struct {
		name   string
		layout layout
		path   string
		dirs   []string
		names  []string
		file   string
		err    error
	}{
		{
			name:   "a plain file",
			layout: layout{files: []string{"cordis.yml"}},
			path:   "cordis.yml",
			dirs:   []string{"@"}, names: []string{"@/cordis.yml"}, file: "@/cordis.yml",
		},
		{
			name:   "a link in the same folder",
			layout: layout{files: []string{"real.yml"}, links: [][2]string{{"cordis.yml", "real.yml"}}},
			path:   "cordis.yml",
			dirs:   []string{"@"}, names: []string{"@/cordis.yml", "@/real.yml"}, file: "@/real.yml",
		},
		{
			name:   "an absolute link to a file in another folder",
			layout: layout{dirs: []string{"a", "b"}, files: []string{"b/real.yml"}, links: [][2]string{{"a/cordis.yml", "@/b/real.yml"}}},
			path:   "a/cordis.yml",
			dirs:   []string{"@/a", "@/b"}, names: []string{"@/a/cordis.yml", "@/b/real.yml"}, file: "@/b/real.yml",
		},
		{
			name:   "a relative link to a file in another folder",
			layout: layout{dirs: []string{"a", "b"}, files: []string{"b/real.yml"}, links: [][2]string{{"a/cordis.yml", "../b/./real.yml"}}},
			path:   "a/cordis.yml",
			dirs:   []string{"@/a", "@/b"}, names: []string{"@/a/cordis.yml", "@/b/real.yml"}, file: "@/b/real.yml",
		},
		{
			name: "a Kubernetes ConfigMap",
			layout: layout{dirs: []string{"..2026_11_01_xx.123"}, files: []string{"..2026_11_01_xx.123/cordis.yml"},
				links: [][2]string{{"..data", "..2026_11_01_xx.123"}, {"cordis.yml", "..data/cordis.yml"}}},
			path:  "cordis.yml",
			dirs:  []string{"@", "@/..2026_11_01_xx.123"},
			names: []string{"@/cordis.yml", "@/..data", "@/..2026_11_01_xx.123/cordis.yml"},
			file:  "@/..2026_11_01_xx.123/cordis.yml",
		},
		{
			name:   "a symlinked folder",
			layout: layout{dirs: []string{"v1"}, files: []string{"v1/cordis.yml"}, links: [][2]string{{"conf", "v1"}}},
			path:   "conf/cordis.yml",
			dirs:   []string{"@", "@/v1"}, names: []string{"@/conf", "@/v1/cordis.yml"}, file: "@/v1/cordis.yml",
		},
		{
			name:   "a link to a link in a linked folder",
			layout: layout{dirs: []string{"a", "b", "c"}, files: []string{"c/real.yml"}, links: [][2]string{{"a/cordis.yml", "../b/mid.yml"}, {"b/mid.yml", "../lc/real.yml"}, {"lc", "c"}}},
			path:   "a/cordis.yml",
			dirs:   []string{"@/a", "@/b", "@", "@/c"},
			names:  []string{"@/a/cordis.yml", "@/b/mid.yml", "@/lc", "@/c/real.yml"},
			file:   "@/c/real.yml",
		},
		{
			// U+012F: its low byte is '/'.
			name:   "a folder whose name is not ASCII",
			layout: layout{dirs: []string{"d\u012fr"}, files: []string{"d\u012fr/cordis.yml"}},
			path:   "d\u012fr/cordis.yml",
			dirs:   []string{"@/d\u012fr"}, names: []string{"@/d\u012fr/cordis.yml"}, file: "@/d\u012fr/cordis.yml",
		},
		{
			name:   "a missing file",
			layout: layout{},
			path:   "cordis.yml",
			dirs:   []string{"@"}, names: []string{"@/cordis.yml"}, err: fs.ErrNotExist,
		},
		{
			name:   "a missing folder",
			layout: layout{},
			path:   "conf/deeper/cordis.yml",
			dirs:   []string{"@"}, names: []string{"@/conf"}, err: fs.ErrNotExist,
		},
		{
			name:   "a dangling link",
			layout: layout{links: [][2]string{{"cordis.yml", "gone/real.yml"}}},
			path:   "cordis.yml",
			dirs:   []string{"@"}, names: []string{"@/cordis.yml", "@/gone"}, err: fs.ErrNotExist,
		},
		{
			name:   "a loop of links",
			layout: layout{links: [][2]string{{"cordis.yml", "b"}, {"b", "cordis.yml"}}},
			path:   "cordis.yml",
			dirs:   []string{"@"}, names: []string{"@/cordis.yml", "@/b"}, err: errLinkLoop,
		},
		{
			name:   "a file where a folder should be",
			layout: layout{files: []string{"conf"}},
			path:   "conf/cordis.yml",
			dirs:   []string{"@"}, names: []string{"@/conf"}, err: errNotDir,
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			// The temporary folder's own path may hold links (macOS: /var).
			root, err := filepath.EvalSymlinks(t.TempDir())
			if err != nil {
				t.Fatal(err)
			}
			at := func(s string) string { return filepath.FromSlash(strings.Replace(s, "@", root, 1)) }
			for _, d := range tc.layout.dirs {
				if err := os.MkdirAll(filepath.Join(root, d), 0o755); err != nil {
					t.Fatal(err)
				}
			}
			for _, f := range tc.layout.files {
				if err := os.WriteFile(filepath.Join(root, f), []byte("[]\n"), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			for _, l := range tc.layout.links {
				if err := os.Symlink(at(l[1]), filepath.Join(root, l[0])); err != nil {
					t.Fatal(err)
				}
			}
			c := resolveChain(filepath.Join(root, tc.path))
			var dirs, names []string
			for _, d := range tc.dirs {
				dirs = append(dirs, at(d))
			}
			for _, n := range tc.names {
				names = append(names, at(n))
			}
			if !slices.Equal(c.dirs, dirs) {
				t.Errorf("dirs = %q, want %q", c.dirs, dirs)
			}
			if got := slices.Sorted(maps.Keys(c.names)); !slices.Equal(got, slices.Sorted(slices.Values(names))) {
				t.Errorf("names = %q, want %q", got, slices.Sorted(slices.Values(names)))
			}
			wantFile := ""
			if tc.file != "" {
				wantFile = at(tc.file)
			}
			if c.file != wantFile {
				t.Errorf("file = %q, want %q", c.file, wantFile)
			}
			if (tc.err == nil) != (c.err == nil) || tc.err != nil && !errors.Is(c.err, tc.err) {
				t.Errorf("err = %v, want %v", c.err, tc.err)
			}
		})
	}
}
