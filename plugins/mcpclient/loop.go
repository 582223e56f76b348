package mcpclient

import (
	"strings"

	"github.com/harness-go/harness/internal/loop"
)

// withChain returns cfg with this harness's chain (package loop) added: in
// the environment of a stdio server, in a header over HTTP. It replaces a
// value the configuration sets under the same name: the chain is what
// keeps a harness from starting itself without end.
func withChain(cfg Config, self *loop.Self) Config {
	if self == nil {
		return cfg
	}
	chain := self.Next()
	switch cfg.Transport {
	case TransportStdio:
		cfg.Env = withKey(cfg.Env, loop.EnvVar, chain)
	case TransportHTTP:
		cfg.Headers = withKey(cfg.Headers, loop.Header, chain)
	}
	return cfg
}

// withKey returns a copy of m where key (in any case) has value v.
func withKey(m map[string]string, key, v string) map[string]string {
	out := make(map[string]string, len(m)+1)
	for k, x := range m {
		if !strings.EqualFold(k, key) {
			out[k] = x
		}
	}
	out[key] = v
	return out
}

// checkLoop fails the connection when the server is a harness gateway that
// is this harness, reaches back to it, or runs its configuration; otherwise
// it records which harnesses the server reaches (this harness's own gateway
// reports them) until the instance ends — the supervisor forgets them then.
func (s *supervisor) checkLoop(sess *session) error {
	if s.self == nil {
		return nil
	}
	info, ok := loop.ServerInfo(sess.capabilities().Experimental)
	if !ok {
		return nil
	}
	if err := s.self.CheckServer(info); err != nil {
		return err
	}
	s.self.Reaches(s, info.Reach)
	return nil
}
