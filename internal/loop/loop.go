// Package loop keeps harnesses from serving themselves: who this harness is
// as a gateway, the chain of harnesses that led to it, and the checks that
// stop a harness from connecting to itself, directly or around a circle.
// docs/rfc/0005-gateway.md gives the reasoning; in short:
//
//  1. Every host has a [Self]: a random id, the identity of the
//     configuration it runs (a digest of cordis.yml's resolved path), and
//     the chain that started it (HARNESS_CHAIN in its environment).
//  2. A harness puts its chain plus itself in the environment of every
//     stdio server it starts ([EnvVar]) and in a header of every HTTP
//     request ([Header]).
//  3. A harness refuses to start when its chain already holds its own
//     configuration — `command: harness serve` on the same file would
//     start itself again, without end — or is [MaxDepth] long
//     ([Self.CheckStart]). Nothing is started before that check, so no
//     process is left behind.
//  4. A gateway refuses a request whose chain holds its own id
//     ([Self.CheckRequest]): an HTTP client entry pointing at its own
//     harness.
//  5. A gateway reports, in the experimental capabilities of its
//     initialize result ([Capability]), its id, its configuration and the
//     ids of the harnesses it reaches; an mcp-client entry fails when the
//     server is its own harness, reaches back to it, or runs its
//     configuration ([Self.CheckServer]).
package loop

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"github.com/harness-go/harness/host"
)

const (
	// EnvVar carries the chain to stdio servers. Its name does not look
	// like a credential, so the environment scrub keeps it.
	EnvVar = "HARNESS_CHAIN"
	// Header carries the chain over HTTP.
	Header = "Harness-Chain"
	// Capability is the key, in the experimental capabilities of an
	// initialize result, under which a gateway describes itself.
	Capability = "harness/gateway"
	// MaxDepth is how many harnesses may stand in front of one: a bound
	// for circles that no rule above catches (copies of one file under
	// several paths). A deeper chain is refused.
	MaxDepth = 5
)

// Hop is one harness of a chain.
type Hop struct {
	ID     string // the harness's random id
	Config string // the identity of the configuration it runs ("" if unknown)
}

func (h Hop) String() string {
	if h.Config == "" {
		return h.ID
	}
	return h.ID + "/" + h.Config
}

// Chain is the harnesses a process or request came through, the first
// one first.
type Chain []Hop

// Parse reads a chain as [Chain.String] writes it: hops separated by
// commas, each "id/config". It never fails: a hop it cannot read keeps its
// text as an id, so it still counts toward [MaxDepth].
func Parse(s string) Chain {
	var c Chain
	for part := range strings.SplitSeq(s, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		id, cfg, _ := strings.Cut(part, "/")
		c = append(c, Hop{ID: id, Config: cfg})
	}
	return c
}

func (c Chain) String() string {
	parts := make([]string, len(c))
	for i, h := range c {
		parts[i] = h.String()
	}
	return strings.Join(parts, ",")
}

// HasID reports whether a hop of c is the harness id.
func (c Chain) HasID(id string) bool {
	return slices.ContainsFunc(c, func(h Hop) bool { return h.ID == id })
}

// HasConfig reports whether a hop of c runs the configuration cfg.
func (c Chain) HasConfig(cfg string) bool {
	return cfg != "" && slices.ContainsFunc(c, func(h Hop) bool { return h.Config == cfg })
}

// Self is one harness as a gateway. It is safe for concurrent use.
type Self struct {
	// ID is random, fresh for every host.
	ID string
	// Config identifies the configuration the host runs ("" if none).
	Config string
	// Path is the configuration's path, for messages.
	Path string
	// Up is the chain that started this harness.
	Up Chain

	mu     sync.Mutex
	behind map[any][]string // per mcp-client instance: the harness ids its server reaches
}

// New returns the identity of a harness that runs the configuration at path
// ("" for none) and was started with chain (the value of [EnvVar]).
func New(path, chain string) *Self {
	var b [8]byte
	_, _ = rand.Read(b[:])
	s := &Self{ID: hex.EncodeToString(b[:]), Path: path, Up: Parse(chain), behind: map[any][]string{}}
	if path != "" {
		s.Config = ConfigID(path)
	}
	return s
}

// ConfigID identifies the configuration at path: a digest of its absolute
// path with symbolic links resolved, so that every way of naming one file
// gives the same identity.
func ConfigID(path string) string {
	p, err := filepath.Abs(path)
	if err == nil {
		if real, err := filepath.EvalSymlinks(p); err == nil {
			p = real
		}
	} else {
		p = path
	}
	sum := sha256.Sum256([]byte(p))
	return hex.EncodeToString(sum[:6])
}

// Hop is this harness as a hop of a chain.
func (s *Self) Hop() Hop { return Hop{ID: s.ID, Config: s.Config} }

// Next is the chain this harness hands on: the one that started it, then
// itself. It is the value of [EnvVar] for stdio servers and of [Header]
// for HTTP requests.
func (s *Self) Next() string {
	return append(slices.Clone(s.Up), s.Hop()).String()
}

// Error is a refused loop.
type Error struct {
	Msg string
	// Own is set when the configuration would run itself: an entry of it
	// runs `harness serve` on the same file (a front says what to remove).
	Own bool
}

func (e *Error) Error() string { return "harness loop: " + e.Msg }

// CheckStart refuses to start a harness that is its own ancestor: one
// whose chain holds the configuration it is about to run, or a chain of
// MaxDepth harnesses already.
func (s *Self) CheckStart() error {
	if s.Up.HasConfig(s.Config) {
		return &Error{Msg: fmt.Sprintf("%s is already run by a harness in front of this one (%s=%s): a harness serving its own configuration would start itself again without end", s.describePath(), EnvVar, s.Up), Own: true}
	}
	if len(s.Up) >= MaxDepth {
		return &Error{Msg: fmt.Sprintf("%d harnesses already stand in front of this one (%s=%s), the most allowed is %d", len(s.Up), EnvVar, s.Up, MaxDepth)}
	}
	return nil
}

func (s *Self) describePath() string {
	if s.Path == "" {
		return "this configuration"
	}
	return s.Path
}

// CheckRequest refuses a request that came through this harness already
// (its chain, the value of [Header], holds this harness) or through
// MaxDepth harnesses.
func (s *Self) CheckRequest(chain string) error {
	c := Parse(chain)
	if c.HasID(s.ID) {
		return &Error{Msg: fmt.Sprintf("this request came from this harness itself (%s: %s): an mcp-client entry of its configuration points at its own gateway", Header, c)}
	}
	if len(c) >= MaxDepth {
		return &Error{Msg: fmt.Sprintf("this request came through %d harnesses (%s: %s), the most allowed is %d", len(c), Header, c, MaxDepth)}
	}
	return nil
}

// Info is what a gateway says about itself in its initialize result.
type Info struct {
	ID     string   `json:"id"`
	Config string   `json:"config,omitempty"`
	Reach  []string `json:"reach"` // the ids of the harnesses it reaches, itself first
}

// Info describes this harness for its initialize result.
func (s *Self) Info() Info {
	s.mu.Lock()
	defer s.mu.Unlock()
	reach := []string{s.ID}
	for _, ids := range s.behind {
		for _, id := range ids {
			if !slices.Contains(reach, id) {
				reach = append(reach, id)
			}
		}
	}
	slices.Sort(reach[1:])
	return Info{ID: s.ID, Config: s.Config, Reach: reach}
}

// ServerInfo reads what a server said about itself in the experimental
// capabilities of its initialize result (the [Info] of [Capability], as
// JSON decoded it): ok is false for a server that is not a harness gateway.
func ServerInfo(experimental map[string]any) (info Info, ok bool) {
	v, ok := experimental[Capability]
	if !ok {
		return Info{}, false
	}
	b, err := json.Marshal(v)
	if err != nil || json.Unmarshal(b, &info) != nil {
		return Info{}, false
	}
	return info, info.ID != ""
}

// CheckServer refuses a server that is this harness, reaches back to it,
// or runs this harness's configuration.
func (s *Self) CheckServer(server Info) error {
	switch {
	case server.ID == s.ID:
		return &Error{Msg: "the server is this harness's own gateway"}
	case slices.Contains(server.Reach, s.ID):
		return &Error{Msg: fmt.Sprintf("the server is harness %s, which reaches back to this harness (%s): the two would list each other's tools without end", server.ID, s.ID)}
	case s.Config != "" && server.Config == s.Config:
		return &Error{Msg: fmt.Sprintf("the server is harness %s running this same configuration (%s): it would run this entry too", server.ID, s.describePath())}
	}
	return nil
}

// Reaches records the harnesses that the server of one mcp-client
// instance (owner) reaches, until [Self.Forget]. A gateway reports them
// ([Self.Info]).
func (s *Self) Reaches(owner any, ids []string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.behind[owner] = slices.Clone(ids)
}

// Forget drops what [Self.Reaches] recorded for owner.
func (s *Self) Forget(owner any) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.behind, owner)
}

// SelfKey is where a program provides the identity of its host: what
// [From] returns to its plugins. Provide it once, before loading a
// configuration (a second is an error, and so is one after a plugin went
// on with a fresh identity).
var SelfKey = host.NewKey[*Self]("harness.self")

// freshKey keeps, in the per-host store, the identity of a host whose
// program provided none.
type freshKey struct{}

// From returns the identity of the plugin's host: the one its program
// provided ([SelfKey]), or else a fresh one, with no configuration and an
// empty chain, the same for every plugin of the host (two hosts in one
// test process are two harnesses).
func From(ctx *host.Context) (*Self, error) {
	s, ok, err := SelfKey.Provided(ctx)
	if err != nil || ok {
		return s, err
	}
	return ctx.PerHost(freshKey{}, func() any { return New("", "") }).(*Self), nil
}

// FromHost is [From] for the program that runs h.
func FromHost(h *host.Host) (*Self, error) {
	s, ok, err := SelfKey.ProvidedBy(h)
	if err != nil || ok {
		return s, err
	}
	return h.PerHost(freshKey{}, func() any { return New("", "") }).(*Self), nil
}
