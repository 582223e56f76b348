package mcpservers

import (
	"bytes"
	"fmt"
	"unicode"
	"unicode/utf8"

	"gopkg.in/yaml.v3"

	"github.com/harness-go/harness/internal/safe"
)

// ClientKind is the kind of the entries a server becomes.
const ClientKind = "mcp-client"

// Entries renders the servers of files as cordis.yml entries, one
// mcp-client entry each, with id and serverName the server's serverName: a
// YAML sequence that can be appended to a cordis.yml. A server the file
// switches off is written with disabled: true. A server with problems is
// left out, and so is one whose serverName an earlier server of files
// took; problems says why for each. The output holds no raw control or
// format character: the comments escape them as [safe.Line] does, and a
// value with one is a double-quoted YAML string that escapes it, so the
// file loads, reads back the same values and prints inertly.
func Entries(files []*File) (out []byte, problems []Problem) {
	seq := &yaml.Node{Kind: yaml.SequenceNode}
	taken := map[string]*Server{}
	for _, f := range files {
		for _, s := range f.Servers {
			if len(s.Problems) > 0 {
				problems = append(problems, s.Problems...)
				continue
			}
			if first, dup := taken[s.ServerName]; dup {
				problems = append(problems, Problem{Pos: s.Pos, Server: s.Name,
					Msg: fmt.Sprintf("its serverName %q is that of server %q (%s): rename one", s.ServerName, first.Name, first.Pos)})
				continue
			}
			taken[s.ServerName] = s
			seq.Content = append(seq.Content, entry(f, s))
		}
	}
	if len(seq.Content) == 0 {
		return nil, problems
	}
	var b bytes.Buffer
	enc := yaml.NewEncoder(&b)
	enc.SetIndent(2)
	if err := enc.Encode(seq); err != nil {
		// The nodes are ours; a failure is a bug, said as one.
		panic(fmt.Sprintf("mcpservers: encoding entries: %v", err))
	}
	_ = enc.Close()
	return escapeFormat(b.Bytes()), problems
}

// entry is one server's cordis.yml entry.
func entry(f *File, s *Server) *yaml.Node {
	str := func(v string) *yaml.Node { return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: v} }
	e := &yaml.Node{Kind: yaml.MappingNode, HeadComment: fmt.Sprintf("%s: from %s (%s)", safe.Line(s.Name), safe.Line(f.Path), f.Format)}
	e.Content = append(e.Content, str("id"), str(s.ServerName), str("name"), str(ClientKind))
	if s.Off {
		d := &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!bool", Value: "true", LineComment: "the file says " + safe.Line(s.Why)}
		e.Content = append(e.Content, str("disabled"), d)
	}
	e.Content = append(e.Content, str("config"), unpositioned(s.Config))
	return e
}

// unpositioned copies a configuration without the file's positions, so
// that the encoder lays it out itself. A scalar with a character
// [safe.Text] escapes is double-quoted: the encoder then escapes the
// control characters and line separators (\a, \e, \0, \L…) and
// escapeFormat the rest.
func unpositioned(n *yaml.Node) *yaml.Node {
	out := &yaml.Node{Kind: n.Kind, Tag: n.Tag, Value: n.Value}
	if n.Kind == yaml.ScalarNode && safe.Text(n.Value) != n.Value {
		out.Style = yaml.DoubleQuotedStyle
	}
	for _, c := range n.Content {
		out.Content = append(out.Content, unpositioned(c))
	}
	return out
}

// escapeFormat escapes the format characters (the bidirectional overrides,
// U+200B, U+FEFF…; not the joiner U+200D, as safe keeps it) that the
// encoder writes raw even in a double-quoted string. Every one of them in
// out is in such a string (unpositioned), where \uXXXX reads back as the
// same character.
func escapeFormat(out []byte) []byte {
	format := func(r rune) bool { return unicode.Is(unicode.Cf, r) && r != 0x200d }
	if bytes.IndexFunc(out, format) < 0 {
		return out
	}
	var b bytes.Buffer
	for len(out) > 0 {
		r, size := utf8.DecodeRune(out)
		switch {
		case !format(r):
			b.Write(out[:size])
		case r > 0xffff:
			fmt.Fprintf(&b, `\U%08X`, r)
		default:
			fmt.Fprintf(&b, `\u%04X`, r)
		}
		out = out[size:]
	}
	return b.Bytes()
}
