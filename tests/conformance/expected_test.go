package conformance_test

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"
)

// expectedFile is the one file of expected failures, passed to the suite
// as its --expected-failures baseline.
const expectedFile = "expected-failures.yml"

// mayFail reports whether the client leg may list scenario: an OAuth
// scenario that is neither a core one nor one of the extensions the
// harness offers (all of which pass). Today none is listed.
func mayFail(scenario string) bool {
	return strings.HasPrefix(scenario, "auth/") && !slices.Contains(slices.Concat(authScenarios20260728, authScenarios20251125, authScenarios20250326, authExtensionScenarios), scenario)
}

// expected are the scenarios of one leg ("client", "server") expected to
// fail, each with its reason.
type expected map[string]string

// loadExpected reads expectedFile: per leg, the scenarios and their
// reasons (the comment of each line). An entry without a reason, a leg the
// suite does not know, or a client entry that is not an OAuth extension
// the harness leaves out (mayFail: every other client scenario passes)
// fails the test.
func loadExpected(t *testing.T) (path string, legs map[string]expected) {
	t.Helper()
	path, err := filepath.Abs(expectedFile)
	if err != nil {
		t.Fatal(err)
	}
	src, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	legs, err = parseExpected(src)
	if err != nil {
		t.Fatalf("%s: %v", expectedFile, err)
	}
	return path, legs
}

func parseExpected(src []byte) (map[string]expected, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal(src, &doc); err != nil {
		return nil, err
	}
	legs := map[string]expected{}
	if len(doc.Content) == 0 {
		return legs, nil
	}
	root := doc.Content[0]
	if root.Kind != yaml.MappingNode {
		return nil, fmt.Errorf("line %d: want a mapping of client: and server: lists", root.Line)
	}
	var problems []string
	for i := 0; i+1 < len(root.Content); i += 2 {
		key, list := root.Content[i], root.Content[i+1]
		if key.Value != "client" && key.Value != "server" {
			problems = append(problems, fmt.Sprintf("line %d: %q is not a leg of the suite (client, server)", key.Line, key.Value))
			continue
		}
		if list.Kind != yaml.SequenceNode {
			problems = append(problems, fmt.Sprintf("line %d: %s: want a list of scenarios", list.Line, key.Value))
			continue
		}
		leg := expected{}
		for _, e := range list.Content {
			why := strings.TrimSpace(strings.TrimPrefix(e.LineComment, "#"))
			switch {
			case e.Kind != yaml.ScalarNode || e.Value == "":
				problems = append(problems, fmt.Sprintf("line %d: want a scenario name", e.Line))
			case why == "":
				problems = append(problems, fmt.Sprintf("line %d: %s has no reason (a comment on its line)", e.Line, e.Value))
			case key.Value == "client" && !mayFail(e.Value):
				problems = append(problems, fmt.Sprintf("line %d: %s: the client leg may list only OAuth extensions the harness does not offer", e.Line, e.Value))
			case leg[e.Value] != "":
				problems = append(problems, fmt.Sprintf("line %d: %s is listed twice", e.Line, e.Value))
			default:
				leg[e.Value] = why
			}
		}
		legs[key.Value] = leg
	}
	if len(problems) > 0 {
		return nil, fmt.Errorf("%s", strings.Join(problems, "; "))
	}
	return legs, nil
}

func TestParseExpected(t *testing.T) {
	good := "client:\n  - auth/some-new-extension # not offered\nserver:\n  - ping # a reason\n"
	legs, err := parseExpected([]byte(good))
	if err != nil {
		t.Fatal(err)
	}
	if legs["client"]["auth/some-new-extension"] != "not offered" || legs["server"]["ping"] != "a reason" {
		t.Errorf("parseExpected = %v", legs)
	}
	for name, src := range map[string]string{
		"no reason":        "server:\n  - ping\n",
		"client not auth":  "client:\n  - tools_call # why\n",
		"client core auth": "client:\n  - auth/basic-cimd # why\n",
		"client offered":   "client:\n  - auth/dpop # why\n",
		"unknown leg":      "clients:\n  - auth/x # why\n",
		"twice":            "server:\n  - ping # a\n  - ping # b\n",
		"not a list":       "server: ping\n",
	} {
		if _, err := parseExpected([]byte(src)); err == nil {
			t.Errorf("%s: parseExpected(%q) = nil error", name, src)
		}
	}
	// The file itself.
	loadExpected(t)
}
