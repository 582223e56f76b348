package tools

import (
	"bytes"
	"encoding/json"
	"path"

	"github.com/harness-go/harness/internal/jsonrpc"
)

// ObjectArgs returns args as a tool takes them: the JSON object, trimmed,
// or {} for anything else — no arguments, or JSON that is not an object
// (the seeds: such arguments are sent as {}). Callers that must tell the
// user about text that is not JSON at all check it first.
func ObjectArgs(args json.RawMessage) json.RawMessage {
	trimmed := bytes.TrimSpace(args)
	if len(trimmed) > 0 && trimmed[0] == '{' && jsonrpc.Valid(trimmed) {
		return trimmed
	}
	return json.RawMessage("{}")
}

// ValidPattern reports whether p is a tool-name pattern: not empty, with
// path.Match's syntax (* and ? wildcards, [a-z] classes).
func ValidPattern(p string) bool {
	_, err := path.Match(p, "")
	return p != "" && err == nil
}

// Selected reports whether a tool named name passes an enabled/disabled
// filter: it matches one of enabled (when there are any) and none of
// disabled. The patterns are checked with [ValidPattern] beforehand.
func Selected(enabled, disabled []string, name string) bool {
	return (len(enabled) == 0 || matchAny(enabled, name)) && !matchAny(disabled, name)
}

func matchAny(patterns []string, name string) bool {
	for _, p := range patterns {
		if ok, _ := path.Match(p, name); ok {
			return true
		}
	}
	return false
}
