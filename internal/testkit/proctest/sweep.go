package proctest

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"sync"
)

// Sweep checks, once a package's tests have run, that no secret a test made
// appears in anything the harness processes of those tests printed. A test
// that checks its own output checks where it thought to look; the sweep
// covers every output of every test. Tool results are the server's words
// and may hold a secret: a value a test lets a tool answer with is not made
// with [Sweep.Secret].
//
// A package keeps one Sweep for its whole run (a variable beside its
// TestMain) and calls [Sweep.Leaks] after m.Run.
type Sweep struct {
	mu      sync.Mutex
	secrets []string
	outputs []sweptOutput
}

type sweptOutput struct{ what, text string }

// Secret returns a new random value that starts with prefix, and remembers it.
func (s *Sweep) Secret(prefix string) string {
	b := make([]byte, 12)
	_, _ = rand.Read(b) // never fails (crypto/rand)
	v := prefix + hex.EncodeToString(b)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.secrets = append(s.secrets, v)
	return v
}

// Output records what one process printed; what names it in a report.
func (s *Sweep) Output(what, text string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.outputs = append(s.outputs, sweptOutput{what, text})
}

// Leaks returns one line per secret found in an output, in any of its
// [Spellings], and how many outputs and secrets were compared.
func (s *Sweep) Leaks() (leaks []string, outputs, secrets int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, o := range s.outputs {
		for _, v := range s.secrets {
			for _, f := range Spellings(v) {
				if i := strings.Index(o.text, f); i >= 0 {
					as := ""
					if f != v {
						as = fmt.Sprintf(" as %q", f)
					}
					from, to := max(0, i-80), min(len(o.text), i+len(f)+80)
					leaks = append(leaks, fmt.Sprintf("secret %q printed by %s%s: %q", v, o.what, as, o.text[from:to]))
					break
				}
			}
		}
	}
	return leaks, len(s.outputs), len(s.secrets)
}

// SpellingPrefix is how many bytes of a secret's start [Spellings] counts as
// the secret: a secret cut at a clip boundary must not leak its start.
const SpellingPrefix = 12

// Spellings returns every form in which secret counts as printed: as is,
// escaped inside a JSON string, URL-encoded (query and path) and its first
// [SpellingPrefix] bytes. The raw form comes first; no form is repeated.
func Spellings(secret string) []string {
	q, _ := json.Marshal(secret) // a string always marshals
	var forms []string
	for _, f := range []string{secret, string(q[1 : len(q)-1]), url.QueryEscape(secret), url.PathEscape(secret), secret[:min(len(secret), SpellingPrefix)]} {
		if !slices.Contains(forms, f) {
			forms = append(forms, f)
		}
	}
	return forms
}

// Report prints the leaks to w (with the counts when verbose) and returns
// the exit code of a TestMain that ran code: 1 on a leak.
func (s *Sweep) Report(w interface{ Write([]byte) (int, error) }, pkg string, code int, verbose bool) int {
	leaks, outputs, secrets := s.Leaks()
	if len(leaks) > 0 {
		fmt.Fprintf(w, "%s: the sweep found secrets in the harness's output:\n", pkg)
		for _, l := range leaks {
			fmt.Fprintf(w, "  %s\n", l)
		}
		return 1
	}
	if verbose {
		fmt.Fprintf(w, "%s: the sweep compared %d outputs with %d secrets: none printed\n", pkg, outputs, secrets)
	}
	return code
}
