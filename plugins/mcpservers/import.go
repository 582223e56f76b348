package mcpservers

import (
	"bytes"
	"fmt"

	"gopkg.in/yaml.v3"
)

// ClientKind is the kind of the entries a server becomes.
const ClientKind = "mcp-client"

// Entries renders the servers of files as cordis.yml entries, one
// mcp-client entry each, with id and serverName the server's serverName: a
// YAML sequence that can be appended to a cordis.yml. A server the file
// switches off is written with disabled: true. A server with problems is
// left out, and so is one whose serverName an earlier server of files
// took; problems says why for each.
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
	return b.Bytes(), problems
}

// entry is one server's cordis.yml entry.
func entry(f *File, s *Server) *yaml.Node {
	str := func(v string) *yaml.Node { return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: v} }
	e := &yaml.Node{Kind: yaml.MappingNode, HeadComment: fmt.Sprintf("%s: from %s (%s)", s.Name, f.Path, f.Format)}
	e.Content = append(e.Content, str("id"), str(s.ServerName), str("name"), str(ClientKind))
	if s.Off {
		d := &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!bool", Value: "true", LineComment: "the file says " + s.Why}
		e.Content = append(e.Content, str("disabled"), d)
	}
	e.Content = append(e.Content, str("config"), unpositioned(s.Config))
	return e
}

// unpositioned copies a configuration without the file's positions, so
// that the encoder lays it out itself.
func unpositioned(n *yaml.Node) *yaml.Node {
	out := &yaml.Node{Kind: n.Kind, Tag: n.Tag, Value: n.Value}
	for _, c := range n.Content {
		out.Content = append(out.Content, unpositioned(c))
	}
	return out
}
