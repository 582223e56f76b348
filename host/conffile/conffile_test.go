package conffile_test

import (
	"bytes"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/harness-go/harness/host/conffile"
)

func TestReadRegularFiles(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	write := func(name string, data []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	full := bytes.Repeat([]byte("#"), conffile.MaxBytes)
	for _, tc := range []struct {
		name string
		path string
		want []byte
	}{
		{"a small file", write("small.yml", []byte("[]\n")), []byte("[]\n")},
		{"an empty file", write("empty.yml", nil), nil},
		{"exactly the bound", write("full.yml", full), full},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := conffile.Read(tc.path)
			if err != nil || !bytes.Equal(got, tc.want) {
				t.Fatalf("Read = %d bytes, %v; want %d bytes", len(got), err, len(tc.want))
			}
		})
	}
}

func TestReadRefusesTooLarge(t *testing.T) {
	t.Parallel()
	p := filepath.Join(t.TempDir(), "big.yml")
	if err := os.WriteFile(p, make([]byte, 5<<20+1), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := conffile.Read(p)
	if !errors.Is(err, conffile.ErrTooLarge) {
		t.Fatalf("Read = %v, want ErrTooLarge", err)
	}
	for _, part := range []string{"5.0 MiB (5242881 bytes)", "at most 4 MiB"} {
		if !strings.Contains(err.Error(), part) {
			t.Errorf("the error %q does not say %q", err, part)
		}
	}
}

func TestReadMissing(t *testing.T) {
	t.Parallel()
	_, err := conffile.Read(filepath.Join(t.TempDir(), "nothing.yml"))
	if !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("Read = %v, want fs.ErrNotExist", err)
	}
}

func TestReadRefusesAFolder(t *testing.T) {
	t.Parallel()
	_, err := conffile.Read(t.TempDir())
	if !errors.Is(err, conffile.ErrNotRegular) || !strings.Contains(err.Error(), "it is a folder") {
		t.Fatalf("Read = %v, want ErrNotRegular naming a folder", err)
	}
}
