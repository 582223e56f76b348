package host

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/harness-go/harness/host/conffile"
	"github.com/harness-go/harness/host/jsexpr"
)

// Aliases may multiply a file's size by aliasRatio, plus aliasSlack nodes;
// more is an alias bomb, refused before any walk follows the aliases.
const (
	aliasRatio = 10
	aliasSlack = 10_000
)

// maxCount caps expandedSize's count, far above any bound it is compared to.
const maxCount = 1 << 40

// expandedSize counts the nodes under n with aliases expanded, remembering
// each node's count, so it runs in time linear in the file (memo ends up
// with one key per node). It reports false for an alias cycle.
func expandedSize(n *yaml.Node, memo map[*yaml.Node]int) (int, bool) {
	if size, done := memo[n]; done {
		return size, size >= 0
	}
	memo[n] = -1 // in progress: meeting it again is a cycle
	size := 1
	if n.Kind == yaml.AliasNode && n.Alias != nil {
		sub, ok := expandedSize(n.Alias, memo)
		if !ok {
			return 0, false
		}
		size = sub
	}
	for _, c := range n.Content {
		sub, ok := expandedSize(c, memo)
		if !ok {
			return 0, false
		}
		size = min(size+sub, maxCount)
	}
	memo[n] = size
	return size, true
}

// jsTag is the YAML tag whose scalar holds an expression of the supported
// JavaScript subset (see package jsexpr).
const jsTag = "!!js"

// jsOnlyInConfig is the problem of a !!js outside config.
const jsOnlyInConfig = "!!js is evaluated only below config: write the value out"

// File is a parsed cordis.yml: the entries in file order, their
// configuration kept as YAML nodes with !!js expressions parsed but not
// evaluated.
type File struct {
	// Path is the file's path as given (used in messages).
	Path string
	// Dir is the absolute directory of the file; relative paths in entries
	// resolve against it.
	Dir string
	// Hash is the SHA-256 of the content, hex-encoded.
	Hash string
	// Entries are the entries in file order.
	Entries []*Entry
}

// Entry is one plugin instance as written in cordis.yml.
type Entry struct {
	ID       string
	Name     string // the plugin kind, as written
	Disabled bool
	// Config is the `config:` mapping, or nil when absent. Nodes tagged !!js
	// are kept as written; see [Entry.Exprs].
	Config *yaml.Node
	// Pos is where the entry starts.
	Pos Pos

	file    string
	dir     string
	exprs   map[*yaml.Node]*jsexpr.Expr
	digest  string // kind and configuration, canonical
	restart string // the same without the kind's live keys (Kind.Live)
	namePos Pos
	fault   error // a child that cannot run: why (Child.Err)
}

// Pos is a position in a file.
type Pos struct {
	File      string
	Line, Col int
}

func (p Pos) String() string {
	switch {
	case p.Line == 0:
		return p.File
	case p.Col == 0:
		return fmt.Sprintf("%s:%d", p.File, p.Line)
	}
	return fmt.Sprintf("%s:%d:%d", p.File, p.Line, p.Col)
}

// Problem is one thing wrong in a cordis.yml, with where it is.
type Problem struct {
	Pos   Pos
	Entry string // the entry id, when known
	Field string // the config path, e.g. "config.serverName"
	Msg   string
}

func (p Problem) Error() string {
	var b strings.Builder
	b.WriteString(p.Pos.String())
	b.WriteString(": ")
	if p.Entry != "" {
		fmt.Fprintf(&b, "entry %q: ", p.Entry)
	}
	if p.Field != "" {
		b.WriteString(p.Field)
		b.WriteString(": ")
	}
	b.WriteString(p.Msg)
	return b.String()
}

// LoadError lists every problem that stops a cordis.yml from loading.
type LoadError struct {
	Problems []Problem
}

func (e *LoadError) Error() string {
	if len(e.Problems) == 1 {
		return e.Problems[0].Error()
	}
	lines := make([]string, len(e.Problems))
	for i, p := range e.Problems {
		lines[i] = "  " + p.Error()
	}
	return fmt.Sprintf("%d problems:\n%s", len(e.Problems), strings.Join(lines, "\n"))
}

// ReadFile reads and parses a cordis.yml. The error, when the file is read but
// does not parse, is a *LoadError. The file is read by [conffile.Read]: a
// named pipe, a device or a file over 4 MiB is refused, never waited for.
func ReadFile(path string) (*File, error) {
	data, err := conffile.Read(path)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	return ParseFile(path, data)
}

var idPattern = regexp.MustCompile(`^[^\s\x00-\x1f\x7f]{1,128}$`)

// ParseFile parses the content of a cordis.yml: the entry structure, the
// !!js expressions (syntax only) and the uniqueness of ids. Plugin kinds and
// their configurations are checked later, by [Check] and the host.
//
// On a *LoadError about some entries, the returned File still holds the
// entries that parsed (for reporting; never load it). When the YAML itself
// does not parse, the File is nil.
func ParseFile(path string, data []byte) (*File, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, fmt.Errorf("resolve %s: %w", path, err)
	}
	sum := sha256.Sum256(data)
	f := &File{Path: path, Dir: filepath.Dir(abs), Hash: hex.EncodeToString(sum[:])}
	p := &parser{file: f}

	if len(bytes.TrimSpace(data)) == 0 {
		// An empty file is far more often a save in progress than a wish to
		// stop everything: refuse it, and say how to ask for nothing.
		p.add(Pos{File: path}, "", "", "the file is empty; write [] to run no entries")
		return nil, p.err()
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		p.add(yamlErrPos(path, err), "", "", yamlErrMsg(err))
		return nil, p.err()
	}
	root := &doc
	if root.Kind == yaml.DocumentNode && len(root.Content) == 1 {
		root = root.Content[0]
	}
	if root.Kind != yaml.SequenceNode {
		p.add(p.pos(root), "", "", "the file must be a YAML sequence of entries (- id: …, name: …, config: …)")
		return nil, p.err()
	}
	// Aliases let a few hundred bytes name billions of nodes; every walk
	// below follows them, so bound the expanded size first.
	memo := map[*yaml.Node]int{}
	if size, ok := expandedSize(root, memo); !ok || size > aliasRatio*len(memo)+aliasSlack {
		p.add(p.pos(root), "", "", fmt.Sprintf("aliases expand the file to %d times its %d YAML nodes or more (or an alias refers to itself); write the values out", aliasRatio, len(memo)))
		return nil, p.err()
	}
	seen := map[string]Pos{}
	for _, n := range root.Content {
		e := p.entry(n)
		if e == nil {
			continue
		}
		if prev, dup := seen[e.ID]; dup {
			p.add(e.Pos, e.ID, "id", fmt.Sprintf("duplicate id (first used at %s)", prev))
			continue
		}
		seen[e.ID] = e.Pos
		f.Entries = append(f.Entries, e)
	}
	if err := p.err(); err != nil {
		// The entries that did parse come back too, so that a checker can
		// report their problems as well: every problem at once.
		return f, err
	}
	return f, nil
}

type parser struct {
	file     *File
	problems []Problem
}

func (p *parser) pos(n *yaml.Node) Pos { return Pos{File: p.file.Path, Line: n.Line, Col: n.Column} }

func (p *parser) add(pos Pos, entry, field, msg string) {
	p.problems = append(p.problems, Problem{Pos: pos, Entry: entry, Field: field, Msg: msg})
}

func (p *parser) err() error {
	if len(p.problems) == 0 {
		return nil
	}
	return &LoadError{Problems: p.problems}
}

func (p *parser) entry(n *yaml.Node) *Entry {
	if n.Kind != yaml.MappingNode {
		p.add(p.pos(n), "", "", "an entry must be a mapping with id, name and optionally config and disabled")
		return nil
	}
	e := &Entry{Pos: p.pos(n), file: p.file.Path, dir: p.file.Dir, exprs: map[*yaml.Node]*jsexpr.Expr{}}
	before := len(p.problems)
	var idNode *yaml.Node
	keys := map[string]*yaml.Node{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		// YAML forbids a key twice in one mapping, and yaml.v3 keeps the
		// last: a second id or name would silently win.
		if first, dup := keys[k.Value]; dup {
			p.add(p.pos(k), "", "", fmt.Sprintf("duplicate key %q in this entry (first at %s): keep one", k.Value, p.pos(first)))
			continue
		}
		keys[k.Value] = k
		switch k.Value {
		case "id":
			idNode = v
		case "name":
			if v.ShortTag() == jsTag {
				p.add(p.pos(v), "", "name", jsOnlyInConfig)
			} else if v.Kind != yaml.ScalarNode || v.ShortTag() != "!!str" || v.Value == "" {
				p.add(p.pos(v), "", "name", "must be a plugin name (a non-empty string)")
			}
			e.Name = v.Value
			e.namePos = p.pos(v)
		case "config":
			switch {
			case v.ShortTag() == "!!null":
			case v.Kind == yaml.MappingNode:
				e.Config = v
			default:
				p.add(p.pos(v), "", "config", "must be a mapping")
			}
		case "disabled":
			b, err := strconv.ParseBool(v.Value)
			if v.ShortTag() == jsTag {
				p.add(p.pos(v), "", "disabled", jsOnlyInConfig)
			} else if v.Kind != yaml.ScalarNode || v.ShortTag() != "!!bool" || err != nil {
				p.add(p.pos(v), "", "disabled", "must be true or false")
			}
			e.Disabled = b
		default:
			p.add(p.pos(k), "", "", fmt.Sprintf("unknown entry key %q (an entry has id, name, config, disabled)", k.Value))
		}
	}
	switch {
	case idNode == nil:
		p.add(e.Pos, "", "id", "is required")
	case idNode.ShortTag() == jsTag:
		p.add(p.pos(idNode), "", "id", jsOnlyInConfig)
	case idNode.Kind != yaml.ScalarNode || !idPattern.MatchString(idNode.Value):
		p.add(p.pos(idNode), "", "id", "must be a non-empty string without spaces or control characters (at most 128 bytes)")
	default:
		e.ID = idNode.Value
	}
	if e.Name == "" && e.namePos.Line == 0 {
		p.add(e.Pos, e.ID, "name", "is required (the plugin kind)")
	}
	// Tag the problems found so far with the id, now that it is known.
	for i := before; i < len(p.problems); i++ {
		p.problems[i].Entry = e.ID
	}
	if e.Config != nil {
		p.walkExprs(e, e.Config, "config")
	}
	if len(p.problems) > before {
		return nil
	}
	e.digest = digest(e, nil)
	e.restart = e.digest
	if k, ok := LookupKind(e.Name); ok && len(k.Live) > 0 {
		e.restart = digest(e, k.live)
	}
	return e
}

// walkExprs parses every !!js scalar under n and rejects other custom tags.
func (p *parser) walkExprs(e *Entry, n *yaml.Node, path string) {
	switch n.Kind {
	case yaml.MappingNode:
		for i := 0; i+1 < len(n.Content); i += 2 {
			p.walkExprs(e, n.Content[i+1], path+"."+n.Content[i].Value)
		}
	case yaml.SequenceNode:
		for i, c := range n.Content {
			p.walkExprs(e, c, fmt.Sprintf("%s[%d]", path, i))
		}
	case yaml.AliasNode:
		if n.Alias != nil {
			p.walkExprs(e, n.Alias, path)
		}
	case yaml.ScalarNode:
		tag := n.Tag
		if tag == jsTag {
			x, err := jsexpr.Parse(n.Value)
			if err != nil {
				pos := p.pos(n)
				msg := err.Error()
				if se, ok := err.(*jsexpr.SyntaxError); ok {
					pos = exprPos(pos, n, se)
					msg = se.Msg + "; supported: " + jsexpr.Supported
				}
				p.add(pos, e.ID, path, "!!js: "+msg)
				return
			}
			e.exprs[n] = x
			return
		}
		if isCustomTag(tag) {
			p.add(p.pos(n), e.ID, path, fmt.Sprintf("unsupported tag %s (only !!js is understood)", tag))
		}
	}
}

// exprPos maps a position inside an expression to the file. The node's
// column is that of its tag; the value starts after the tag, a space and,
// when quoted, the quote.
func exprPos(base Pos, n *yaml.Node, se *jsexpr.SyntaxError) Pos {
	if se.Line > 1 {
		return Pos{File: base.File, Line: base.Line + se.Line - 1, Col: se.Column}
	}
	col := base.Col + len(jsTag) + 1
	if n.Style&(yaml.SingleQuotedStyle|yaml.DoubleQuotedStyle) != 0 {
		col++
	}
	return Pos{File: base.File, Line: base.Line, Col: col + se.Column - 1}
}

func isCustomTag(tag string) bool {
	switch tag {
	case "", "!!str", "!!int", "!!float", "!!bool", "!!null", "!!binary", "!!timestamp", "!!map", "!!seq", "!!merge", "!":
		return false
	}
	return true
}

var yamlLine = regexp.MustCompile(`^yaml: line (\d+): `)

func yamlErrPos(path string, err error) Pos {
	if m := yamlLine.FindStringSubmatch(err.Error()); m != nil {
		line, _ := strconv.Atoi(m[1])
		return Pos{File: path, Line: line}
	}
	return Pos{File: path}
}

func yamlErrMsg(err error) string {
	msg := yamlLine.ReplaceAllString(err.Error(), "")
	msg = strings.TrimPrefix(msg, "yaml: ")
	return "invalid YAML: " + msg
}

// digest is the canonical form of what makes an instance: its kind and its
// configuration. Comments, key order, quoting and layout do not count; a !!js
// expression counts as its source, not its value. The top-level config keys
// for which skip reports true are left out (nil: none).
func digest(e *Entry, skip func(key string) bool) string {
	var b strings.Builder
	b.WriteString(strconv.Quote(e.Name))
	b.WriteByte(' ')
	if e.Config != nil {
		c := e.Config
		if skip != nil && c.Kind == yaml.MappingNode {
			kept := *c
			kept.Content = nil
			for i := 0; i+1 < len(c.Content); i += 2 {
				if !skip(c.Content[i].Value) {
					kept.Content = append(kept.Content, c.Content[i], c.Content[i+1])
				}
			}
			c = &kept
		}
		canonical(&b, c, e.exprs)
	}
	return b.String()
}

func canonical(b *strings.Builder, n *yaml.Node, exprs map[*yaml.Node]*jsexpr.Expr) {
	switch n.Kind {
	case yaml.AliasNode:
		canonical(b, n.Alias, exprs)
	case yaml.MappingNode:
		type kv struct {
			k string
			v *yaml.Node
		}
		pairs := make([]kv, 0, len(n.Content)/2)
		for i := 0; i+1 < len(n.Content); i += 2 {
			pairs = append(pairs, kv{n.Content[i].Value, n.Content[i+1]})
		}
		sort.SliceStable(pairs, func(i, j int) bool { return pairs[i].k < pairs[j].k })
		b.WriteByte('{')
		for _, p := range pairs {
			b.WriteString(strconv.Quote(p.k))
			b.WriteByte(':')
			canonical(b, p.v, exprs)
			b.WriteByte(',')
		}
		b.WriteByte('}')
	case yaml.SequenceNode:
		b.WriteByte('[')
		for _, c := range n.Content {
			canonical(b, c, exprs)
			b.WriteByte(',')
		}
		b.WriteByte(']')
	case yaml.ScalarNode:
		if x, ok := exprs[n]; ok {
			b.WriteString("js(")
			b.WriteString(x.String())
			b.WriteByte(')')
			return
		}
		b.WriteString(n.ShortTag())
		b.WriteString(strconv.Quote(n.Value))
	}
}
