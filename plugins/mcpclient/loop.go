package mcpclient

import (
	"context"
	"fmt"
	"strings"

	"github.com/harness-go/harness/internal/loop"
)

// withChain returns cfg with this harness's chain (package loop) added: in
// the environment of a stdio server, in a header over HTTP. It replaces a
// value the configuration sets under the same name: the chain is what
// keeps a harness from starting itself without end.
func withChain(cfg Config, self *loop.Self) Config {
	chain := self.Next()
	switch cfg.Transport {
	case TransportStdio:
		env := make(map[string]string, len(cfg.Env)+1)
		for k, v := range cfg.Env {
			if !strings.EqualFold(k, loop.EnvVar) {
				env[k] = v
			}
		}
		env[loop.EnvVar] = chain
		cfg.Env = env
	case TransportHTTP:
		headers := make(map[string]string, len(cfg.Headers)+1)
		for k, v := range cfg.Headers {
			if !strings.EqualFold(k, loop.Header) {
				headers[k] = v
			}
		}
		headers[loop.Header] = chain
		cfg.Headers = headers
	}
	return cfg
}

// checkLoop fails the connection when the server is a harness gateway that
// is this harness, reaches back to it, or runs its configuration; otherwise
// it records which harnesses the server reaches, until the instance ends,
// so that this harness's own gateway reports them.
func (rt *runtime) checkLoop(sess *session) error {
	sess.mu.Lock()
	init := sess.init
	sess.mu.Unlock()
	if init == nil {
		return nil
	}
	info, ok := loop.ServerInfo(init.Capabilities.Experimental)
	if !ok {
		return nil
	}
	if err := rt.self.CheckServer(info); err != nil {
		return fmt.Errorf("mcp-client(%s): %w", rt.cfg.ServerName, err)
	}
	rt.self.Reaches(rt, info.Reach)
	_, err := rt.ctx.Defer("forget the harnesses behind the server", func(context.Context) error {
		rt.self.Forget(rt)
		return nil
	})
	return err
}
