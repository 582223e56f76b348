package mcpclient

import (
	"fmt"
	"net/url"
	"path/filepath"
	"strings"
)

// rootURIs turns the entry's roots into the file:// URIs roots/list
// answers: a path is made absolute against dir (cordis.yml's folder) and
// cleaned; a file:// URI is kept as written.
func rootURIs(roots []string, dir string) []string {
	out := make([]string, 0, len(roots))
	for _, r := range roots {
		if isFileURI(r) {
			out = append(out, r)
			continue
		}
		p := r
		if !filepath.IsAbs(p) {
			p = filepath.Join(dir, p)
		}
		u := url.URL{Scheme: "file", Path: filepath.ToSlash(filepath.Clean(p))}
		if !strings.HasPrefix(u.Path, "/") {
			u.Path = "/" + u.Path // a Windows drive letter: file:///C:/…
		}
		out = append(out, u.String())
	}
	return out
}

func isFileURI(s string) bool { return strings.HasPrefix(strings.ToLower(s), "file://") }

// checkRoot says what is wrong with one entry of roots, or "".
func checkRoot(r string) string {
	switch {
	case strings.TrimSpace(r) == "":
		return "is empty"
	case isFileURI(r):
		u, err := url.Parse(r)
		if err != nil || u.Path == "" {
			return fmt.Sprintf("%q is not a valid file:// URI", r)
		}
	case strings.Contains(r, "://"):
		return fmt.Sprintf("%q is neither a path nor a file:// URI", r)
	case strings.ContainsRune(r, 0):
		return fmt.Sprintf("%q holds a NUL byte", r)
	}
	return ""
}
