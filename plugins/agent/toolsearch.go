package agent

import (
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/harness-go/harness/plugins/tools"
	"github.com/harness-go/harness/plugins/tools/search"
)

// Tool search (RFC 0004, "Tool search"): instead of every tool's schema, a
// step sends the always-loaded tools, search_tools and the tools search_tools
// found earlier in the conversation; the model searches for what it needs,
// and what it finds is in its tools from the next step on.
const (
	// SearchToolName is the agent's own tool in tool search mode.
	SearchToolName = "search_tools"
	// DefaultSearchLimit is how many tools search_tools answers when the
	// model names no limit.
	DefaultSearchLimit = 8
	// maxSearchLimit bounds the limit the model may ask for.
	maxSearchLimit = 50
)

// toolSet is the registry's tools as the agent sees them (after its
// filters) at one version of the registry: what deciding on tool search and
// answering search_tools need, built once per change of the tools.
type toolSet struct {
	version uint64
	list    []tools.Tool // sorted by name
	tokens  int          // their schemas in the model's list: encoded JSON bytes / 4
	visible map[string]bool
	always  map[string]bool
	pinned  []string // the always-loaded, sorted
	def     []byte   // search_tools' element of the model's list

	once  sync.Once
	index *search.Index // built at the first search
}

// toolSet returns the tools at the registry's current version.
func (a *Agent) toolSet() *toolSet {
	v := a.reg.Version()
	a.setMu.Lock()
	defer a.setMu.Unlock()
	if s := a.set; s != nil && s.version == v {
		return s
	}
	// Read after the version: a change in between makes this set newer
	// than its version says, and the next step builds it again.
	s := &toolSet{version: v, visible: map[string]bool{}, always: map[string]bool{}}
	for _, t := range a.reg.List() {
		// A tool of the registry named search_tools is hidden by ours in
		// search mode (two tools of one name would be refused).
		if a.keep != nil && !a.keep(t.Name) || t.Name == SearchToolName {
			continue
		}
		s.list = append(s.list, t)
		s.visible[t.Name] = true
		if t.AlwaysLoad || len(a.cfg.AlwaysLoad) > 0 && tools.Selected(a.cfg.AlwaysLoad, nil, t.Name) {
			s.always[t.Name] = true
			s.pinned = append(s.pinned, t.Name)
		}
	}
	b, _ := a.reg.ModelSubset(a.keep)
	s.tokens = len(b) / 4
	s.def = searchToolDef(len(s.list))
	a.set = s
	return s
}

func (s *toolSet) search(query string, limit int) ([]search.Hit, int) {
	s.once.Do(func() { s.index = search.New(s.list) })
	return s.index.Search(query, limit)
}

// searching reports whether a step with these tools uses tool search, and
// why, in words for people.
func (a *Agent) searching(s *toolSet) (bool, string) {
	switch a.cfg.ToolSearch {
	case ToolSearchOn:
		return true, "toolSearch: on"
	case ToolSearchOff:
		return false, ""
	}
	switch {
	case len(s.list) > a.cfg.MaxTools:
		return true, fmt.Sprintf("%d tools, more than maxTools (%d)", len(s.list), a.cfg.MaxTools)
	case s.tokens > a.cfg.ToolSearchTokens:
		return true, fmt.Sprintf("their schemas take about %d tokens, more than toolSearchTokens (%d)", s.tokens, a.cfg.ToolSearchTokens)
	}
	return false, ""
}

// stepTools is what one step sends: the model's list, its count, and in
// tool search mode what the tool_search event says.
type stepTools struct {
	list   []byte
	n      int
	set    *toolSet // nil: every tool, no search
	loaded int      // tools found by search_tools among those sent
	own    int      // the resource tools among those sent (always loaded)
}

// stepTools returns the tools of the next request of conv.
func (a *Agent) stepTools(conv *Conversation) (stepTools, error) {
	if a.cfg.ToolSearch != ToolSearchOff {
		set := a.toolSet()
		if on, _ := a.searching(set); on {
			return a.searchStep(conv, set)
		}
	}
	offered := a.offeredResourceTools()
	list, n := a.reg.ModelSubset(a.keepRegistry(offered))
	list, n = withResourceTools(list, n, offered)
	if n > a.cfg.MaxTools {
		return stepTools{}, a.tooManyTools(n)
	}
	return stepTools{list: list, n: n}, nil
}

// searchStep is a step in tool search mode: search_tools first (its bytes
// change only with the number of tools), then the always-loaded tools and
// those search_tools found, in the registry's order.
func (a *Agent) searchStep(conv *Conversation, set *toolSet) (stepTools, error) {
	names := slices.Clip(set.pinned) // appending copies: the set stays as it is
	for _, name := range conv.loadOrder {
		if set.visible[name] && !set.always[name] {
			names = append(names, name)
		}
	}
	loaded := len(names) - len(set.pinned)
	offered := a.offeredResourceTools()
	// Ours hide the registry's tools of their names.
	names = slices.DeleteFunc(slices.Clone(names), func(n string) bool { return slices.Contains(offered, n) })
	list, n := a.reg.ModelOf(names) // a tool gone since is left out
	// The resource tools go with search_tools, always: they are few, and
	// the model cannot search for what it does not know exists.
	list, n = withResourceTools(list, n, offered)
	if n+1 > a.cfg.MaxTools {
		return stepTools{}, fmt.Errorf("entry %q: %w: tool search would send %d always-loaded tools and search_tools, and the model takes at most %d (maxTools)",
			a.id, ErrTooManyTools, n, a.cfg.MaxTools)
	}
	b := make([]byte, 0, len(list)+len(set.def)+1)
	b = append(b, '[')
	b = append(b, set.def...)
	if n > 0 {
		b = append(b, ',')
		b = append(b, list[1:]...) // without its [
	} else {
		b = append(b, ']')
	}
	return stepTools{list: b, n: n + 1, set: set, loaded: loaded, own: len(offered)}, nil
}

// searchToolDef is search_tools' element of the model's list.
func searchToolDef(available int) []byte {
	desc := fmt.Sprintf("Search the %d tools you can use: only some are loaded now. "+
		"Returns the best matches for your words (ranked by BM25 over tool names, descriptions and parameter names), "+
		"one line each: the name, the score and the first line of its description. "+
		"Every tool found is loaded from your next step on, with its full parameters, for the rest of the conversation: then call it by its name. "+
		"Search before you conclude that no tool does what you need.", available)
	return marshal(map[string]any{
		"type": "function",
		"function": map[string]any{
			"name":        SearchToolName,
			"description": desc,
			"parameters": json.RawMessage(`{"type":"object","properties":{` +
				`"query":{"type":"string","description":"Words for what you need: what the tool does, its object, its parameters (for example: create github issue)."},` +
				`"limit":{"type":"integer","minimum":1,"maximum":` + strconv.Itoa(maxSearchLimit) + `,"description":"How many tools to answer (default ` + strconv.Itoa(DefaultSearchLimit) + `)."}},` +
				`"required":["query"]}`),
		},
	})
}

// loader merges what the calls of one step load into the conversation:
// the tools search_tools found and tools the model called without having
// them (it knew the name). The calls of a step run concurrently.
type loader struct {
	mu    sync.Mutex
	a     *Agent
	conv  *Conversation
	set   *toolSet
	limit int // how many tools may be loaded at once: maxTools less search_tools and the always-loaded
}

func (a *Agent) newLoader(conv *Conversation, st stepTools) *loader {
	if st.set == nil {
		return nil
	}
	return &loader{a: a, conv: conv, set: st.set, limit: max(0, a.cfg.MaxTools-1-len(st.set.pinned))}
}

// load adds names (best first) to the conversation's loaded tools; when
// they would pass the limit, the longest loaded go first. It returns the
// names it added and those it unloaded.
func (l *loader) load(names []string) (added, dropped []string) {
	c := l.conv
	if c.loaded == nil {
		c.loaded = map[string]bool{}
	}
	for _, n := range names {
		if l.set.always[n] || c.loaded[n] || len(added) >= l.limit {
			continue
		}
		added = append(added, n)
	}
	for len(c.loadOrder)+len(added) > l.limit {
		old := c.loadOrder[0]
		c.loadOrder = c.loadOrder[1:]
		delete(c.loaded, old)
		dropped = append(dropped, old)
	}
	for _, n := range added {
		c.loaded[n] = true
		c.loadOrder = append(c.loadOrder, n)
	}
	return added, dropped
}

// searchTools answers a call of search_tools.
func (l *loader) searchTools(args json.RawMessage) tools.Result {
	var in struct {
		Query string `json:"query"`
		Limit int    `json:"limit"`
	}
	if err := json.Unmarshal(args, &in); err != nil {
		return tools.Result{Text: `Error: search_tools takes {"query": "words", "limit": 8}: ` + err.Error(), IsError: true}
	}
	if strings.TrimSpace(in.Query) == "" {
		return tools.Result{Text: `Error: search_tools needs a query: words for what you need, such as {"query": "create github issue"}`, IsError: true}
	}
	limit := in.Limit
	if limit <= 0 {
		limit = DefaultSearchLimit
	}
	limit = min(limit, maxSearchLimit)
	hits, matched := l.set.search(in.Query, limit)
	if len(hits) == 0 {
		return tools.Result{Text: fmt.Sprintf("No tool matches %q among the %d tools. Try other words: what the tool does, its object, its parameters.", in.Query, len(l.set.list))}
	}
	names := make([]string, len(hits))
	for i, h := range hits {
		names[i] = h.Name
	}
	l.mu.Lock()
	_, dropped := l.load(names)
	l.mu.Unlock()
	var b strings.Builder
	fmt.Fprintf(&b, "%d of %d matching tools, best first; they are loaded from your next step on: call them by name.\n", len(hits), matched)
	for _, h := range hits {
		fmt.Fprintf(&b, "%s  (%.2f)  %s\n", h.Name, h.Score, h.Line)
	}
	if len(dropped) > 0 {
		fmt.Fprintf(&b, "To stay within maxTools (%d), these are no longer loaded (search again to load them): %s\n", l.a.cfg.MaxTools, strings.Join(dropped, ", "))
	}
	return tools.Result{Text: strings.TrimSuffix(b.String(), "\n")}
}

// called notes a call of a tool the step did not send: the model knew its
// name; it is loaded from the next step on.
func (l *loader) called(name string) {
	if l == nil || name == SearchToolName {
		return
	}
	if _, ok := l.a.reg.Lookup(name); !ok {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.load([]string{name})
}
