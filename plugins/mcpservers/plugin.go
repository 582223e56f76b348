package mcpservers

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"github.com/harness-go/harness/host"
	"github.com/harness-go/harness/host/conffile"
)

// Kind is the name of the plugin kind that runs the servers of a file.
const Kind = "mcp-servers"

func init() {
	host.Register(host.Kind{
		Name: Kind,
		Doc:  "the MCP servers of another client's file (.mcp.json, .cursor/mcp.json, .vscode/mcp.json, settings.json, config.toml…), each an mcp-client entry, followed live",
		New:  func() host.Plugin { return &Plugin{Format: FormatAuto} },
	})
}

// Plugin is one mcp-servers entry: it reads a client's file and makes each
// of its servers a child entry of kind mcp-client (id "<entry id>/<serverName>"),
// then follows the file: an edit restarts the servers that changed, and a
// file that no longer reads changes nothing (docs/rfc/0010-mcp-servers-files.md).
//
//  1. Apply reads the file (host/conffile: non-blocking, a regular file, at
//     most 4 MiB); one that does not read fails the entry, with the file's
//     position. Its servers, less those only and except leave out, become
//     the entry's children (host.Context.SetChildren): a server that cannot
//     run as written is a failed child saying why.
//  2. A watcher (host.NewFileWatcher: the watches, quiet period and grace of
//     cordis.yml's) reads it again on every change. New content sets the
//     children again, which the host reconciles: an unchanged server is not
//     touched. Content that does not parse is refused (host.Context.RejectChildren):
//     the servers run on, and the entry's note says why, with line:column.
//  3. Disposal ends the watcher; the host disposes the children with the
//     entry when it is removed, disabled or fails, and keeps them when an
//     edit of the entry re-creates it (they are set again, and reconciled).
type Plugin struct {
	// Path is the file to read; a relative path is cordis.yml's folder's,
	// a leading ~/ the home folder.
	Path string `yaml:"path" json:"path" desc:"The file of another MCP client to run the servers of: .mcp.json, claude_desktop_config.json, .cursor/mcp.json, .vscode/mcp.json, mcp_config.json (Windsurf), .gemini/settings.json, .codex/config.toml. Relative to cordis.yml's folder; ~/ is the home folder."`
	// Format names the file's format; auto decides by its name and shape.
	Format string `yaml:"format" json:"format,omitempty" desc:"auto (default: by the file's name and shape), claude-desktop, claude-code, cursor, vscode, windsurf, gemini or codex."`
	// Only keeps the servers named (the file's names or their serverNames).
	Only []string `yaml:"only" json:"only,omitempty" desc:"Run only these servers of the file (their names in the file)."`
	// Except leaves out the servers named.
	Except []string `yaml:"except" json:"except,omitempty" desc:"Run every server of the file but these."`

	ctx  *host.Context
	path string // resolved

	mu      sync.Mutex
	format  string   // as read (never auto)
	servers []string // the serverNames of the children, in file order
	skipped []string // left out by only and except
	notes   []string // fields with no effect here, with their positions
	unknown []string // names of only and except the file does not have
	watch   string   // why the file is not followed, if it is not
	last    string   // hash of the content last applied or refused
}

// Validate checks the configuration; the file itself is read when the
// entry is applied, so that a broken file fails this entry and no other.
func (p *Plugin) Validate() error {
	var errs []error
	if strings.TrimSpace(p.Path) == "" {
		errs = append(errs, host.FieldErrorf("path", "is required: the file of the servers (.mcp.json, .vscode/mcp.json, config.toml…)"))
	}
	if !knownFormat(p.Format) {
		errs = append(errs, host.FieldErrorf("format", "%q is not one of %s", p.Format, strings.Join(Formats, ", ")))
	}
	for _, list := range []struct {
		key   string
		names []string
	}{{"only", p.Only}, {"except", p.Except}} {
		for i, n := range list.names {
			if strings.TrimSpace(n) == "" {
				errs = append(errs, host.FieldErrorf(fmt.Sprintf("%s[%d]", list.key, i), "is empty: name a server of the file"))
			}
		}
	}
	return errors.Join(errs...)
}

// Apply reads the file, sets the children and starts following the file.
func (p *Plugin) Apply(ctx *host.Context) error {
	p.ctx = ctx
	p.path = p.Path
	if rest, ok := strings.CutPrefix(p.path, "~/"); ok {
		if home, err := os.UserHomeDir(); err == nil {
			p.path = filepath.Join(home, rest)
		}
	}
	if !filepath.IsAbs(p.path) {
		p.path = filepath.Join(ctx.Dir(), p.path)
	}
	data, err := conffile.Read(p.path)
	if err != nil {
		return fmt.Errorf("read %s: %w", p.Path, err)
	}
	f, err := Parse(p.path, data, Options{Format: p.Format, Strict: true})
	if err != nil {
		return err
	}
	p.mu.Lock()
	p.last = hash(data)
	p.mu.Unlock()
	if err := ctx.SetChildren(p.children(f)); err != nil {
		return err
	}
	w := host.NewFileWatcher(p.path, data, host.WatcherOptions{Logger: ctx.Logger()}, p.changed)
	return ctx.Go("watch "+p.Path, func(c context.Context) {
		if err := w.Run(c); err != nil && c.Err() == nil {
			ctx.Logger().Warn("the servers' file is not followed: edits need /restart of the entry", "file", p.Path, "err", err)
			p.mu.Lock()
			p.watch = err.Error()
			p.mu.Unlock()
		}
	})
}

// changed takes a new read of the file.
func (p *Plugin) changed(_ context.Context, data []byte, err error, _ bool) {
	if err != nil {
		p.ctx.RejectChildren(fmt.Errorf("read %s: %w", p.Path, err))
		return
	}
	p.mu.Lock()
	same := p.last == hash(data)
	p.last = hash(data)
	p.mu.Unlock()
	if same {
		return
	}
	f, err := Parse(p.path, data, Options{Format: p.Format, Strict: true})
	if err != nil {
		p.ctx.RejectChildren(err)
		return
	}
	if err := p.ctx.SetChildren(p.children(f)); err != nil {
		p.ctx.RejectChildren(err)
	}
}

// Selects reports whether the entry runs s: named by only, when only names
// any, and not by except (by its name in the file or its serverName).
func (p *Plugin) Selects(s *Server) bool {
	named := func(list []string) bool { return slices.Contains(list, s.Name) || slices.Contains(list, s.ServerName) }
	return (len(p.Only) == 0 || named(p.Only)) && !named(p.Except)
}

// Child is s, a server of f, as the entry's child: failed with its problems
// when it has some.
func (s *Server) Child(f *File) host.Child {
	ch := host.Child{Name: s.ServerName, Kind: ClientKind, Config: s.Config, Disabled: s.Off, Dir: f.Workspace,
		Pos: host.Pos{File: s.Pos.File, Line: s.Pos.Line, Col: s.Pos.Col}}
	if len(s.Problems) > 0 {
		errs := make([]string, len(s.Problems))
		for i, pr := range s.Problems {
			errs[i] = pr.Error()
		}
		ch.Config, ch.Err = nil, errors.New(strings.Join(errs, "; "))
	}
	return ch
}

// children are the file's servers as child entries, less those only and
// except leave out; it records what status shows.
func (p *Plugin) children(f *File) []host.Child {
	var out []host.Child
	var servers, skipped, notes []string
	seen := map[string]bool{}
	for _, n := range f.Notes {
		notes = append(notes, n.String())
	}
	for _, s := range f.Servers {
		seen[s.Name], seen[s.ServerName] = true, true
		if !p.Selects(s) {
			skipped = append(skipped, s.Name)
			continue
		}
		for _, n := range s.Notes {
			notes = append(notes, n.String())
		}
		out = append(out, s.Child(f))
		servers = append(servers, s.ServerName)
	}
	var unknown []string
	for _, n := range append(slices.Clone(p.Only), p.Except...) {
		if !seen[n] && !slices.Contains(unknown, n) {
			unknown = append(unknown, n)
		}
	}
	for _, n := range notes {
		p.ctx.Logger().Info("a field of the servers' file has no effect", "note", n)
	}
	p.mu.Lock()
	p.format, p.servers, p.skipped, p.notes, p.unknown = f.Format, servers, skipped, notes, unknown
	p.mu.Unlock()
	return out
}

// Status is what `harness status` shows of the entry; its servers are
// listed as its children.
type Status struct {
	File    string   `json:"file"`
	Format  string   `json:"format"`
	Servers []string `json:"servers"`
	Skipped []string `json:"skipped,omitempty"`
	Unknown []string `json:"unknown,omitempty"`
	Notes   []string `json:"notes,omitempty"`
	Watch   string   `json:"notFollowed,omitempty"`
}

// Status reports the file, its format and what of it runs.
func (p *Plugin) Status() any {
	p.mu.Lock()
	defer p.mu.Unlock()
	return &Status{File: p.Path, Format: p.format, Servers: slices.Clone(p.servers), Skipped: slices.Clone(p.skipped),
		Unknown: slices.Clone(p.unknown), Notes: slices.Clone(p.notes), Watch: p.watch}
}

// StatusLines renders the status for people.
func (s *Status) StatusLines() []string {
	lines := []string{fmt.Sprintf("%s (%s): %d servers", s.File, s.Format, len(s.Servers))}
	if len(s.Skipped) > 0 {
		lines = append(lines, "left out (only/except): "+strings.Join(s.Skipped, ", "))
	}
	if len(s.Unknown) > 0 {
		lines = append(lines, "only/except name servers the file does not have: "+strings.Join(s.Unknown, ", "))
	}
	for _, n := range s.Notes {
		lines = append(lines, "note: "+n)
	}
	if s.Watch != "" {
		lines = append(lines, "not followed: "+s.Watch)
	}
	return lines
}

func hash(data []byte) string {
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:])
}
