// Package search ranks tools for a query: BM25 (k1 = 1.2, b = 0.75) over
// each tool's name, description and parameter names. It is the one ranked
// search of the harness: the agent's search_tools (tool search, RFC 0004)
// and the gateway's meta mode (RFC 0005) both use it.
//
// A tool's document is made of words:
//
//   - its name split at "_", "-", "." and case changes, each part
//     lowercased (mcp__github__createIssue: mcp, github, create, issue),
//     plus each run between separators whole (createissue), so a query
//     written either way finds it;
//   - its description's words: runs of letters and digits, lowercased;
//   - the names of its parameters (the top level of its schema's
//     properties), split like the name.
//
// A query is split into words the way a description is; each distinct word
// counts once. No stemming and no stop words: BM25's inverse document
// frequency already weighs down words every tool has (mcp, the).
package search

import (
	"cmp"
	"encoding/json"
	"math"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/harness-go/harness/internal/safe"
	"github.com/harness-go/harness/plugins/tools"
)

// The BM25 parameters.
const (
	K1 = 1.2
	B  = 0.75
)

// Hit is one tool a search found.
type Hit struct {
	Name string
	// Line is the first line of the tool's description (safe.FirstLine:
	// every line separator ends it).
	Line  string
	Score float64
}

// Index ranks a fixed set of tools. It is immutable once built and safe for
// concurrent use; build a new one when the tools change.
type Index struct {
	docs     []doc
	postings map[string][]posting
}

type doc struct {
	name, line string
	// norm is BM25's length normalisation, k1 × (1 − b + b × len/avgLen).
	norm float64
}

type posting struct {
	doc int32
	tf  int32
}

// New indexes ts.
func New(ts []tools.Tool) *Index {
	x := &Index{docs: make([]doc, len(ts)), postings: map[string][]posting{}}
	lens := make([]int, len(ts))
	total := 0
	tf := map[string]int32{}
	var n int
	add := func(w string) {
		tf[w]++
		n++
	}
	for i, t := range ts {
		clear(tf)
		n = 0
		nameWords(t.Name, add)
		words(t.Description, add)
		for _, p := range paramNames(t.Parameters) {
			nameWords(p, add)
		}
		x.docs[i] = doc{name: t.Name, line: safe.FirstLine(t.Description)}
		lens[i] = n
		total += n
		for w, c := range tf {
			x.postings[w] = append(x.postings[w], posting{doc: int32(i), tf: c})
		}
	}
	if total > 0 {
		avg := float64(total) / float64(len(ts))
		for i := range x.docs {
			x.docs[i].norm = K1 * (1 - B + B*float64(lens[i])/avg)
		}
	}
	return x
}

// Len returns the number of tools indexed.
func (x *Index) Len() int { return len(x.docs) }

// Search returns the tools that match query, best first (ties by name), at
// most limit of them (limit ≤ 0: all), and how many matched in all. A tool
// matches when it has at least one of the query's words.
func (x *Index) Search(query string, limit int) (hits []Hit, matched int) {
	if len(x.docs) == 0 {
		return nil, 0
	}
	scores := make([]float64, len(x.docs))
	var touched []int32
	var seen []string
	n := float64(len(x.docs))
	words(query, func(w string) {
		if slices.Contains(seen, w) {
			return
		}
		seen = append(seen, w)
		ps := x.postings[w]
		if len(ps) == 0 {
			return
		}
		df := float64(len(ps))
		idf := math.Log(1 + (n-df+0.5)/(df+0.5))
		for _, p := range ps {
			if scores[p.doc] == 0 {
				touched = append(touched, p.doc)
			}
			tf := float64(p.tf)
			scores[p.doc] += idf * tf * (K1 + 1) / (tf + x.docs[p.doc].norm)
		}
	})
	better := func(a, b int32) int {
		if c := cmp.Compare(scores[b], scores[a]); c != 0 {
			return c
		}
		return strings.Compare(x.docs[a].name, x.docs[b].name)
	}
	matched = len(touched)
	if limit <= 0 || limit > matched {
		limit = matched
	}
	top := touched
	if limit == matched {
		slices.SortFunc(top, better)
	} else {
		top = x.best(touched, limit, better)
	}
	hits = make([]Hit, len(top))
	for i, d := range top {
		hits[i] = Hit{Name: x.docs[d].name, Line: x.docs[d].line, Score: scores[d]}
	}
	return hits, matched
}

// best returns the limit best of docs, sorted: one pass, without sorting
// every match.
func (x *Index) best(docs []int32, limit int, better func(a, b int32) int) []int32 {
	top := make([]int32, 0, limit)
	for _, d := range docs {
		if len(top) == limit && better(d, top[limit-1]) >= 0 {
			continue
		}
		i, _ := slices.BinarySearchFunc(top, d, better)
		if len(top) < limit {
			top = append(top, 0)
		}
		copy(top[i+1:], top[i:len(top)-1])
		top[i] = d
	}
	return top
}

// words calls add with each word of text: a run of letters and digits,
// lowercased.
func words(text string, add func(string)) {
	start := -1
	for i, r := range text {
		if unicode.IsLetter(r) || unicode.IsDigit(r) {
			if start < 0 {
				start = i
			}
			continue
		}
		if start >= 0 {
			add(strings.ToLower(text[start:i]))
			start = -1
		}
	}
	if start >= 0 {
		add(strings.ToLower(text[start:]))
	}
}

// nameWords calls add with the words of an identifier: each run between
// separators (anything but letters and digits: "_", "-", ".") whole, and,
// when case changes split it further (createIssue, HTTPServer, v2Beta),
// each part too.
func nameWords(name string, add func(string)) {
	words(name, func(run string) { add(run) })
	for _, seg := range strings.FieldsFunc(name, func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) }) {
		parts := caseParts(seg)
		if len(parts) > 1 {
			for _, p := range parts {
				add(strings.ToLower(p))
			}
		}
	}
}

// caseParts splits a run of letters and digits at its case changes:
// createIssue → create, Issue; HTTPServer → HTTP, Server; getV2 → get, V2.
func caseParts(s string) []string {
	var parts []string
	start := 0
	prev := rune(-1)
	for i, r := range s {
		if i > 0 && unicode.IsUpper(r) {
			_, size := utf8.DecodeRuneInString(s[i:])
			next, _ := utf8.DecodeRuneInString(s[i+size:])
			// aB: a new word at B; ABc: a new word at B (HTTPServer).
			if unicode.IsLower(prev) || unicode.IsDigit(prev) || (unicode.IsUpper(prev) && unicode.IsLower(next)) {
				parts = append(parts, s[start:i])
				start = i
			}
		}
		prev = r
	}
	return append(parts, s[start:])
}

// paramNames returns the names of a schema's top-level properties.
func paramNames(schema json.RawMessage) []string {
	if len(schema) == 0 {
		return nil
	}
	var s struct {
		Properties map[string]json.RawMessage `json:"properties"`
	}
	if json.Unmarshal(schema, &s) != nil {
		return nil
	}
	names := make([]string, 0, len(s.Properties))
	for k := range s.Properties {
		names = append(names, k)
	}
	slices.Sort(names)
	return names
}
