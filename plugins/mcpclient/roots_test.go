package mcpclient

import (
	"path/filepath"
	"runtime"
	"slices"
	"testing"
)

func TestRootURIs(t *testing.T) {
	t.Parallel()
	if runtime.GOOS == "windows" {
		t.Skip("paths of this table are unix paths")
	}
	got := rootURIs([]string{"src", "../up", "/abs/dir/", "file:///srv/data", "FILE:///kept/as/written", "with space"}, "/home/me/proj")
	want := []string{"file:///home/me/proj/src", "file:///home/me/up", "file:///abs/dir", "file:///srv/data", "FILE:///kept/as/written", "file:///home/me/proj/with%20space"}
	if !slices.Equal(got, want) {
		t.Fatalf("rootURIs = %q\nwant %q", got, want)
	}
	if got := rootURIs(nil, filepath.Join("/x")); len(got) != 0 {
		t.Fatalf("no roots: %q", got)
	}
}
