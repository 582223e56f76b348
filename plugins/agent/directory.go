package agent

import (
	"context"
	"fmt"
	"sort"
	"sync"

	"github.com/harness-go/harness/fiber"
	"github.com/harness-go/harness/host"
)

// DirectoryService is the name under which the harness provides the
// [Directory]: each agent instance registers itself there under its entry
// id, and whoever talks to a model (the CLI) finds it there.
const DirectoryService = "agents"

// DirectoryKey is the directory's service key.
var DirectoryKey = host.NewKey[*Directory](DirectoryService)

// Directory holds the running agents by entry id. It is safe for
// concurrent use. Its changes go on the stream of the host it is provided
// to (host.ServiceChanged, with the entry ids added and removed).
type Directory struct {
	mu      sync.Mutex
	agents  map[string]*Agent
	changes host.Changes
}

// NewDirectory returns an empty directory.
func NewDirectory() *Directory {
	return &Directory{agents: map[string]*Agent{}}
}

// DirectoryFrom returns the directory injected into a plugin instance.
func DirectoryFrom(ctx *host.Context) (*Directory, error) {
	return DirectoryKey.From(ctx)
}

// Register adds a under id until f is disposed.
func (d *Directory) Register(f *fiber.Fiber, id string, a *Agent) error {
	d.mu.Lock()
	if _, taken := d.agents[id]; taken {
		d.mu.Unlock()
		return fmt.Errorf("agent %q is already registered", id)
	}
	d.agents[id] = a
	d.changes.Record([]string{id}, nil)
	d.mu.Unlock()
	_, err := f.Defer("unregister agent "+id, func(context.Context) error {
		d.mu.Lock()
		defer d.mu.Unlock()
		if d.agents[id] == a {
			delete(d.agents, id)
			d.changes.Record(nil, []string{id})
		}
		return nil
	})
	return err
}

// Get returns the agent registered under id.
func (d *Directory) Get(id string) (*Agent, bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	a, ok := d.agents[id]
	return a, ok
}

// IDs returns the ids of the registered agents, sorted.
func (d *Directory) IDs() []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	ids := make([]string, 0, len(d.agents))
	for id := range d.agents {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	return ids
}

// Changes is the directory's change record (see [host.Changes]).
func (d *Directory) Changes() *host.Changes { return &d.changes }

// Changed returns a channel closed at the next registration or removal.
func (d *Directory) Changed() <-chan struct{} { return d.changes.Changed() }
