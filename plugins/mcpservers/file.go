package mcpservers

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/harness-go/harness/host"
	"github.com/harness-go/harness/host/conffile"
)

// Formats: the configuration files of MCP clients that this package reads.
// docs/rfc/0010-mcp-servers-files.md describes each.
const (
	FormatAuto          = "auto"
	FormatClaudeDesktop = "claude-desktop" // claude_desktop_config.json: mcpServers, command/args/env
	FormatClaudeCode    = "claude-code"    // .mcp.json: mcpServers, type stdio/http
	FormatCursor        = "cursor"         // .cursor/mcp.json: mcpServers, ${env:VAR}
	FormatVSCode        = "vscode"         // .vscode/mcp.json: servers and inputs
	FormatWindsurf      = "windsurf"       // mcp_config.json: mcpServers, serverUrl
	FormatGemini        = "gemini"         // .gemini/settings.json: mcpServers, httpUrl, includeTools…
	FormatCodex         = "codex"          // config.toml: [mcp_servers.NAME]
)

// Formats lists every format a file may be read as, auto first.
var Formats = []string{FormatAuto, FormatClaudeDesktop, FormatClaudeCode, FormatCursor, FormatVSCode, FormatWindsurf, FormatGemini, FormatCodex}

// Pos is a position in a file, as the host writes one for cordis.yml; Line
// and Col are 0 when the format gives none.
type Pos = host.Pos

// Problem is one thing wrong with a file or one of its servers.
type Problem struct {
	Pos    Pos
	Server string // the file's name for the server, when it is about one
	Field  string // the field of that server, e.g. "args[1]"
	Msg    string
}

func (p Problem) Error() string {
	var b strings.Builder
	b.WriteString(p.Pos.String())
	b.WriteString(": ")
	if p.Server != "" {
		fmt.Fprintf(&b, "server %q: ", p.Server)
	}
	if p.Field != "" {
		b.WriteString(p.Field)
		b.WriteString(": ")
	}
	b.WriteString(p.Msg)
	return b.String()
}

// fileError is a file that cannot be read as a list of servers at all.
type fileError struct{ problems []Problem }

func (e *fileError) Error() string { return joinProblems(e.problems) }

// Problems returns what is wrong, each with its position.
func (e *fileError) Problems() []Problem { return e.problems }

func joinProblems(ps []Problem) string {
	if len(ps) == 1 {
		return ps[0].Error()
	}
	lines := make([]string, len(ps))
	for i, p := range ps {
		lines[i] = "  " + p.Error()
	}
	return fmt.Sprintf("%d problems:\n%s", len(ps), strings.Join(lines, "\n"))
}

// Note is a field of the file that has no meaning in the harness: it is
// read past, and said so (harness import names it on stderr, an
// mcp-servers entry logs it and shows it in status), never dropped
// silently.
type Note struct {
	Pos    Pos
	Server string
	Field  string
	Msg    string // why it has no effect, e.g. "tool approval is the client's"
}

// String says where the field is, that it has no effect, and why:
// `.mcp.json:7:9: server "gh": trust has no effect here: …`.
func (n Note) String() string {
	var b strings.Builder
	b.WriteString(n.Pos.String())
	b.WriteString(": ")
	if n.Server != "" {
		fmt.Fprintf(&b, "server %q: ", n.Server)
	}
	fmt.Fprintf(&b, "%s has no effect here: %s", n.Field, n.Msg)
	return b.String()
}

// File is a client's configuration file read as a list of servers, each
// translated into the configuration of an mcp-client entry.
type File struct {
	// Path is the file's path as given.
	Path string
	// Format is the format it was read as (never auto).
	Format string
	// Workspace is ${workspaceFolder}: the folder that holds the file's
	// project (the parent of .vscode, .cursor, .gemini or .codex), else the
	// file's folder.
	Workspace string
	// Servers are the file's servers in file order (Codex: sorted by name,
	// as TOML tables have no order worth keeping).
	Servers []*Server
	// Notes are fields of the file, outside any server, that have no
	// effect here.
	Notes []Note
}

// Server is one server of a file.
type Server struct {
	// Name is the file's name for it.
	Name string
	// ServerName is Name normalised to the rules of an mcp-client
	// serverName ([NormalizeServerName]).
	ServerName string
	// Pos is where its definition starts.
	Pos Pos
	// Off says the file switches it off (Codex enabled = false, a
	// "disabled": true); Why says how.
	Off bool
	Why string
	// Config is the mcp-client configuration: a YAML mapping whose values
	// that read the environment are !!js expressions, with the positions
	// of the file (so a problem found when the entry is checked points at
	// the file's line). Nil when Problems is not empty.
	Config *yaml.Node
	// Notes are its fields that have no effect here.
	Notes []Note
	// Problems say why this server cannot run as written.
	Problems []Problem
}

// Options change how a file is read.
type Options struct {
	// Format is one of Formats; "" is auto.
	Format string
	// Strict makes every variable reference without a default required:
	// an unset variable fails the server, naming it, wherever it stands
	// (the mcp-servers kind). Without it (harness import), a value of env
	// or headers that is one variable alone becomes !!js process.env.VAR,
	// which leaves the key out when the variable is unset, as cordis.yml
	// writes it.
	Strict bool
	// Home is ${userHome} (and a leading ~/ of the path); "" is the
	// user's home folder.
	Home string
}

// Read reads the file at path with conffile.Read (non-blocking, a regular
// file, at most 4 MiB) and parses it (see [Parse]).
func Read(path string, o Options) (*File, error) {
	data, err := conffile.Read(path)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	return Parse(path, data, o)
}

// Parse reads data, the content of the file at path, as o.Format says (auto:
// by the file's name and shape). An error means the file cannot be read as
// a list of servers at all — it does not parse, or holds no list of
// servers, or two of its names become the same serverName — and every
// problem it lists has the file's position. A server that is only wrong in
// itself carries its own Problems in the File instead.
func Parse(path string, data []byte, o Options) (*File, error) {
	if o.Format == "" {
		o.Format = FormatAuto
	}
	if !knownFormat(o.Format) {
		return nil, fmt.Errorf("format %q is not one of %s", o.Format, strings.Join(Formats, ", "))
	}
	if o.Home == "" {
		o.Home, _ = os.UserHomeDir()
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, fmt.Errorf("resolve %s: %w", path, err)
	}
	f := &File{Path: path, Workspace: workspace(abs)}
	if len(strings.TrimSpace(string(data))) == 0 {
		// As for cordis.yml: an empty file is far more often a save in
		// progress than a wish to run nothing.
		return nil, &fileError{[]Problem{{Pos: Pos{File: path}, Msg: "the file is empty"}}}
	}
	r := &reader{file: f, opts: o, data: data}
	if o.Format == FormatCodex || (o.Format == FormatAuto && strings.EqualFold(filepath.Ext(path), ".toml")) {
		f.Format = FormatCodex
		err = r.codex()
	} else {
		err = r.json()
	}
	if err != nil {
		return nil, err
	}
	if err := r.names(); err != nil {
		return nil, err
	}
	return f, nil
}

func knownFormat(f string) bool {
	for _, k := range Formats {
		if f == k {
			return true
		}
	}
	return false
}

// workspace is the folder of the project a file belongs to: the parent of
// a client's folder (.vscode, .cursor, .gemini, .codex, .claude), else the
// file's own folder.
func workspace(abs string) string {
	dir := filepath.Dir(abs)
	switch filepath.Base(dir) {
	case ".vscode", ".cursor", ".gemini", ".codex", ".claude":
		return filepath.Dir(dir)
	}
	return dir
}

// reader holds what reading one file needs.
type reader struct {
	file *File
	opts Options
	data []byte
}

// names fills in each server's serverName and refuses two servers whose
// names become the same one: their entries would have the same id.
func (r *reader) names() error {
	var problems []Problem
	seen := map[string]*Server{}
	for _, s := range r.file.Servers {
		name, ok := NormalizeServerName(s.Name)
		if !ok {
			problems = append(problems, Problem{Pos: s.Pos, Server: s.Name, Msg: "the name has no letter or digit to make a serverName of: rename it"})
			continue
		}
		s.ServerName = name
		if first, dup := seen[name]; dup {
			problems = append(problems, Problem{Pos: s.Pos, Server: s.Name,
				Msg: fmt.Sprintf("its serverName would be %q, as that of server %q (%s): rename one", name, first.Name, lineCol(first.Pos))})
			continue
		}
		seen[name] = s
		if s.Config != nil {
			setServerName(s.Config, name, s.Pos)
		}
	}
	if len(problems) > 0 {
		return &fileError{problems}
	}
	return nil
}

// NormalizeServerName makes a server's name in a client's file a valid
// mcp-client serverName ([A-Za-z0-9_-]{1,32}, no "__", not starting or
// ending with "_"): every other character becomes "_", runs of "_" become
// one, "_" is trimmed from both ends, and the name is cut at 32 characters.
// ok is false when nothing is left.
func NormalizeServerName(name string) (string, bool) {
	var b strings.Builder
	for _, c := range name {
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9', c == '-':
			b.WriteRune(c)
		default:
			if s := b.String(); !strings.HasSuffix(s, "_") {
				b.WriteByte('_')
			}
		}
	}
	out := strings.Trim(b.String(), "_")
	if len(out) > 32 {
		out = strings.TrimRight(out[:32], "_")
	}
	return out, out != ""
}
