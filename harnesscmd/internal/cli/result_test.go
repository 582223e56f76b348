package cli

import (
	"slices"
	"testing"

	"github.com/harness-go/harness/plugins/tools"
)

// writes records each Write as it came.
type writes []string

func (w *writes) Write(p []byte) (int, error) {
	*w = append(*w, string(p))
	return len(p), nil
}

// A result is one write, its newline included: on a terminal another
// writer (an event line) can only come before or after it, never between
// the text and its newline (it once landed on the result's line).
func TestWriteResultIsOneWrite(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		res    tools.Result
		asJSON bool
		want   []string
	}{
		{tools.Result{Text: "echo: hi"}, false, []string{"echo: hi\n"}},
		{tools.Result{Text: "two\nlines\n"}, false, []string{"two\nlines\n"}},
		{tools.Result{Text: ""}, false, []string{"\n"}},
		{tools.Result{Text: "x", IsError: true}, true, []string{`{"text":"x","isError":true}` + "\n"}},
	} {
		var w writes
		writeResult(&w, tc.res, tc.asJSON)
		if !slices.Equal(w, tc.want) {
			t.Errorf("writeResult(%+v, json=%t) wrote %q, want %q", tc.res, tc.asJSON, w, tc.want)
		}
	}
}
