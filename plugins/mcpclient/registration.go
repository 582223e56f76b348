package mcpclient

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"sort"
	"time"

	"github.com/harness-go/harness/internal/safe"
	"github.com/harness-go/harness/plugins/tools"
)

// The registration of an instance's tools: a listing becomes a generation,
// which replaces the previous one in one registry swap (the seeds' sync
// semantics), or waits staged for TakeOver (make before break). Every swap
// holds syncMu, so swaps never interleave and one never undoes a newer one.

// generation is the set of tools registered (or staged) from one listing.
type generation struct {
	names   []NamePair
	digest  [sha256.Size]byte
	batch   []tools.Tool
	set     *tools.Set        // nil while staged; read and written under the supervisor's syncMu
	hidden  int               // tools the filters hide
	leftOut map[string]string // tools left out, by raw name: why
}

// requestSync asks for a re-sync. Requests made while one is pending merge
// into it: a storm of notifications costs at most two listings.
func (s *supervisor) requestSync(what listKind) {
	s.pending.Or(uint32(what))
	select {
	case s.syncReq <- struct{}{}:
	default:
	}
}

// refilter applies a change of enabledTools/disabledTools to the last
// listing, without asking the server. It reads the listing under syncMu, so
// a re-sync that registers a newer one meanwhile is never undone.
func (s *supervisor) refilter(context.Context) {
	s.syncMu.Lock()
	defer s.syncMu.Unlock()
	s.mu.Lock()
	list := s.lastList
	s.mu.Unlock()
	if list == nil {
		return
	}
	if err := s.syncLocked(list); err != nil {
		s.log.Warn("applying the new tool filters failed", "err", err)
	}
}

func (s *supervisor) noteSync(err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.syncs++
	s.lastSync = time.Now()
	s.syncErr = ""
	if err != nil {
		s.syncErr = s.secrets.Redact(err.Error())
	}
}

// sync turns a listing into a generation and registers it in place of the
// current one — or stages it, for a successor before TakeOver (the seeds'
// sync semantics: an invalid listing changes nothing; a registration
// conflict leaves the server with no tools and says so loudly).
func (s *supervisor) sync(list []rawTool) error {
	s.syncMu.Lock()
	defer s.syncMu.Unlock()
	return s.syncLocked(list)
}

// syncLocked is sync, with syncMu held.
func (s *supervisor) syncLocked(list []rawTool) error {
	gen, err := s.generation(list)
	if err != nil {
		return err
	}
	for raw, why := range gen.leftOut {
		s.log.Warn("a tool is left out", "tool", safe.Line(raw), "why", safe.Line(why))
	}
	s.mu.Lock()
	s.lastList = list
	prev, staging, retired := s.gen, s.pred != nil, s.successor != nil
	if staging {
		s.staged = gen
	}
	s.mu.Unlock()
	switch {
	case staging, retired:
		return nil
	case prev != nil && prev.digest == gen.digest:
		return nil // nothing changed: the model-visible JSON stays byte-identical
	}
	var prevSet *tools.Set
	if prev != nil {
		prevSet = prev.set
	}
	// One step: readers see the previous generation or this one, never
	// neither; on a conflict the previous one is gone too (the seeds).
	if err := s.swapIn(prevSet, gen); err != nil {
		if !errors.Is(err, tools.ErrConflict) {
			return err // the instance is being disposed
		}
		err = fmt.Errorf("tool registration failed, no tools registered: %w", err)
		s.log.Error(err.Error())
		return err
	}
	s.log.Info("tools registered", "count", len(gen.batch))
	return nil
}

// swapIn makes gen the current generation in place of the registry's
// set old, in one Replace. The status shows gen before the registry does,
// so that whoever sees the new tools in the registry finds them in the
// status too; when the Replace fails, the instance has no generation.
// syncMu is held (generation.set is for its holders alone).
func (s *supervisor) swapIn(old *tools.Set, gen *generation) error {
	s.mu.Lock()
	s.gen = gen
	s.mu.Unlock()
	set, err := s.reg.Replace(s.ctx.Fiber(), old, gen.batch...)
	if err != nil {
		s.mu.Lock()
		s.gen = nil
		s.mu.Unlock()
		return err
	}
	gen.set = set
	return nil
}

// generation checks a listing and builds what it registers: every tool,
// but those the filters hide and those whose definition is invalid
// (rawTool.Invalid), which are left out alone.
func (s *supervisor) generation(list []rawTool) (*generation, error) {
	cfg := s.config()
	server := s.server
	batch := make([]tools.Tool, 0, len(list))
	names := make([]NamePair, 0, len(list))
	byPublic := make(map[string]string, len(list))
	byRaw := make(map[string]bool, len(list))
	hidden := 0
	var leftOut map[string]string
	for _, t := range list {
		if t.Name == "" {
			return nil, errors.New("invalid tool list: the server listed a tool without a name")
		}
		if byRaw[t.Name] {
			return nil, fmt.Errorf("invalid tool list: the server listed tool %q more than once", t.Name)
		}
		byRaw[t.Name] = true
		public := PublicName(server, t.Name)
		if other, dup := byPublic[public]; dup {
			return nil, fmt.Errorf("invalid tool list: the server listed tools %q and %q, which both become %q", other, t.Name, public)
		}
		byPublic[public] = t.Name
		if !cfg.exposes(t.Name) {
			hidden++
			continue // filtered out by enabledTools/disabledTools
		}
		if t.Invalid != "" {
			if leftOut == nil {
				leftOut = map[string]string{}
			}
			leftOut[t.Name] = t.Invalid
			continue
		}
		batch = append(batch, tools.Tool{Name: public, Description: t.Description, Parameters: t.InputSchema, Definition: t.Definition, AlwaysLoad: cfg.AlwaysLoad, Execute: s.executor(t.Name, public), Start: s.starter(t.Name, public)})
		names = append(names, NamePair{Public: public, Raw: t.Name})
	}
	sort.Slice(names, func(i, j int) bool { return names[i].Public < names[j].Public })
	return &generation{names: names, digest: digestTools(list, cfg), batch: batch, hidden: hidden, leftOut: leftOut}, nil
}

// digestTools identifies a listing by everything that reaches the model,
// the rest of each tool's definition (title, annotations), which the gateway
// serves, and the filters.
func digestTools(list []rawTool, cfg *Config) [sha256.Size]byte {
	h := sha256.New()
	fmt.Fprintf(h, "%q %q\n", cfg.EnabledTools, cfg.DisabledTools)
	for _, t := range list {
		fmt.Fprintf(h, "%q %q %d:", t.Name, t.Description, len(t.InputSchema))
		h.Write(t.InputSchema)
		fmt.Fprintf(h, " %d:", len(t.Definition))
		h.Write(t.Definition)
		h.Write([]byte{'\n'})
	}
	return [sha256.Size]byte(h.Sum(nil))
}

// takeOver swaps pred's registration (nil: none) for the staged generation
// in one step (rule 2). It runs on the host's goroutine: nothing here waits
// for the network.
func (s *supervisor) takeOver(pred *supervisor) error {
	if pred != nil {
		pred.syncMu.Lock()
		defer pred.syncMu.Unlock()
	}
	s.syncMu.Lock()
	defer s.syncMu.Unlock()
	s.mu.Lock()
	gen := s.staged
	s.mu.Unlock()
	if gen == nil {
		return errors.New("nothing listed to take over with")
	}
	var old *tools.Set
	if pred != nil {
		pred.mu.Lock()
		if pred.gen != nil {
			old = pred.gen.set
		}
		pred.gen, pred.successor = nil, s
		pred.bumpLocked()
		pred.mu.Unlock()
		if pred.releaseName != nil {
			pred.releaseName()
		}
	}
	if err := s.swapIn(old, gen); err != nil {
		return fmt.Errorf("tool registration failed, no tools registered: %w", err)
	}
	s.mu.Lock()
	x := s.stagedX
	s.staged, s.stagedX, s.pred = nil, nil, nil
	s.mu.Unlock()
	if x == nil {
		x = &extras{}
	}
	s.swapExtrasLocked(pred, x)
	s.log.Info("took over", "tools", len(gen.batch))
	return nil
}

// dropTools unregisters the current generation at once.
func (s *supervisor) dropTools() {
	s.syncMu.Lock()
	defer s.syncMu.Unlock()
	s.mu.Lock()
	gen := s.gen
	s.gen = nil
	s.mu.Unlock()
	if gen != nil && gen.set != nil {
		_ = gen.set.Release(context.Background())
	}
	s.dropExtrasLocked()
}

func (s *supervisor) toolCount() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.gen == nil {
		return 0
	}
	return len(s.gen.names)
}
