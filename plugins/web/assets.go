package web

import (
	"embed"
	"io/fs"
	"mime"
	"net/http"
	"path"
	"strings"
)

// The page: plain HTML, CSS and JavaScript modules, embedded in the
// binary; no build step (docs/rfc/0009-web.md, "The page").
//
//go:embed assets
var assets embed.FS

// serveAsset serves the page's files: / is index.html. A file the page
// does not have is a 404.
func (s *Server) serveAsset(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		problem(w, http.StatusMethodNotAllowed, "the page's files are read with GET")
		return
	}
	name := strings.TrimPrefix(path.Clean(r.URL.Path), "/")
	if name == "" {
		name = "index.html"
	}
	b, err := fs.ReadFile(assets, "assets/"+name)
	if err != nil || strings.HasPrefix(name, ".") {
		http.Error(w, "404 page not found", http.StatusNotFound)
		return
	}
	ct := mime.TypeByExtension(path.Ext(name))
	switch path.Ext(name) {
	case ".js":
		ct = "text/javascript; charset=utf-8"
	case ".svg":
		ct = "image/svg+xml"
	}
	h := w.Header()
	h.Set("Content-Type", ct)
	// The files change with the binary: the browser asks again each time
	// (cheap on loopback) rather than run an old page against a new server.
	h.Set("Cache-Control", "no-cache")
	if r.Method == http.MethodHead {
		return
	}
	w.Write(b)
}
