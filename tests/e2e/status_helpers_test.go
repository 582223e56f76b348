package e2e

import (
	"encoding/json"
	"testing"
)

// statusDoc is `harness status --json`.
type statusDoc struct {
	Config  string        `json:"config"`
	Tools   int           `json:"tools"`
	Entries []statusEntry `json:"entries"`
}

// statusEntry holds the fields of one entry the tests look at; MCP entries
// carry the server's fields flattened in.
type statusEntry struct {
	ID              string            `json:"id"`
	Plugin          string            `json:"plugin"`
	State           string            `json:"state"`
	Settled         bool              `json:"settled"`
	Error           string            `json:"error"`
	ServerName      string            `json:"serverName"`
	Transport       string            `json:"transport"`
	Server          *serverInfo       `json:"server"`
	ProtocolVersion string            `json:"protocolVersion"`
	ToolCount       int               `json:"toolCount"`
	RawTools        json.RawMessage   `json:"tools"` // MCP: public → raw; echo: a list
	Stderr          []string          `json:"stderr"`
	Env             map[string]string `json:"env"`
	Headers         map[string]string `json:"headers"`
	PID             int               `json:"pid"`
	SyncError       string            `json:"syncError"`

	Tools map[string]string `json:"-"`
}

type serverInfo struct {
	Name    string `json:"name"`
	Version string `json:"version"`
}

func parseStatus(t *testing.T, r result) statusDoc {
	t.Helper()
	var doc statusDoc
	if err := json.Unmarshal([]byte(r.stdout), &doc); err != nil {
		t.Fatalf("status --json does not parse: %v\n%s", err, r)
	}
	for i := range doc.Entries {
		e := &doc.Entries[i]
		if len(e.RawTools) > 0 && e.RawTools[0] == '{' {
			if err := json.Unmarshal(e.RawTools, &e.Tools); err != nil {
				t.Fatalf("status --json: entry %q: tools: %v\n%s", e.ID, err, r)
			}
		}
	}
	return doc
}

func (d statusDoc) entry(t *testing.T, id string) statusEntry {
	t.Helper()
	for _, e := range d.Entries {
		if e.ID == id {
			return e
		}
	}
	t.Fatalf("status --json has no entry %q: %+v", id, d.Entries)
	return statusEntry{}
}
