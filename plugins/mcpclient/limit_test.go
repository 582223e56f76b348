package mcpclient

import (
	"github.com/harness-go/harness/host/secret"

	"errors"
	"io"
	"strings"
	"testing"
)

func TestBoundedBody(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		body string
		max  int
		ok   bool
	}{
		{"a body within the bound", strings.Repeat("x", 100), 100, true},
		{"a body over the bound", strings.Repeat("x", 101), 100, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			// One byte reads and 7-byte reads: the bound must not depend on chunking.
			for _, chunk := range []int{1, 7, 4096} {
				b := &boundedBody{ReadCloser: io.NopCloser(&chunked{s: tc.body, n: chunk}), max: tc.max}
				_, err := io.ReadAll(b)
				if tc.ok && err != nil {
					t.Fatalf("chunk %d: %v", chunk, err)
				}
				if !tc.ok && !errors.Is(err, errTooLarge) {
					t.Fatalf("chunk %d: err = %v, want the size limit", chunk, err)
				}
			}
		})
	}
}

// chunked reads s n bytes at a time.
type chunked struct {
	s string
	n int
}

func (c *chunked) Read(p []byte) (int, error) {
	if c.s == "" {
		return 0, io.EOF
	}
	k := min(c.n, len(p), len(c.s))
	copy(p, c.s[:k])
	c.s = c.s[k:]
	return k, nil
}

func TestClippedBody(t *testing.T) {
	t.Parallel()
	secrets := secret.New()
	const key = "sk-0123456789abcdef"
	secrets.Add(key)
	for _, tc := range []struct{ in, want string }{
		{"short page", "short page"},
		{strings.Repeat("x", errorPageBytes), strings.Repeat("x", errorPageBytes)},
		{strings.Repeat("y", 10*errorPageBytes), strings.Repeat("y", errorPageBytes) + "…"},
		// A secret across the clip is redacted before the cut: no prefix leaks.
		{strings.Repeat("z", errorPageBytes-5) + key + "tail", strings.Repeat("z", errorPageBytes-5) + "<reda…"},
		{"key " + key + " echoed", "key <redacted> echoed"},
	} {
		got, err := io.ReadAll(&clippedBody{ReadCloser: io.NopCloser(&chunked{s: tc.in, n: 100}), max: errorPageBytes, secrets: secrets})
		if err != nil || string(got) != tc.want {
			t.Errorf("%.20q…: got %d bytes %.40q, err %v", tc.in, len(got), got, err)
		}
	}
}

func TestBudget(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		text string
		max  int
		want string
	}{
		{"hello", 0, "hello"},
		{"hello", 5, "hello"},
		{"hello world", 5, "hello\n[result truncated: 5 of 11 bytes shown (maxResultBytes)]"},
		{"ééé", 3, "é\n[result truncated: 2 of 6 bytes shown (maxResultBytes)]"},
		{"😀x", 2, "\n[result truncated: 0 of 5 bytes shown (maxResultBytes)]"},
	} {
		if got := budget(tc.text, tc.max); got != tc.want {
			t.Errorf("budget(%q, %d) = %q, want %q", tc.text, tc.max, got, tc.want)
		}
	}
}
