package mcpdemo

import (
	"encoding/json"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"
)

// fixedTime is a Tuesday; Unix 1715671800, 0x018f760218c0 milliseconds.
var fixedTime = time.Date(2024, 5, 14, 7, 30, 0, 0, time.UTC)

func fixedClock() time.Time { return fixedTime }

// newTestClient starts an in-process MCP client, initialised against a
// fresh demo server, so tests exercise the real protocol path: JSON
// encoding, tool lookup, argument decoding and result encoding.
func newTestClient(t *testing.T, clock func() time.Time) *client.Client {
	t.Helper()
	c, err := client.NewInProcessClient(newServer(clock))
	if err != nil {
		t.Fatalf("NewInProcessClient: %v", err)
	}
	t.Cleanup(func() { _ = c.Close() })
	if err := c.Start(t.Context()); err != nil {
		t.Fatalf("Start: %v", err)
	}
	var req mcp.InitializeRequest
	req.Params.ProtocolVersion = mcp.LATEST_PROTOCOL_VERSION
	req.Params.ClientInfo = mcp.Implementation{Name: "mcp-demo-test", Version: "0"}
	res, err := c.Initialize(t.Context(), req)
	if err != nil {
		t.Fatalf("Initialize: %v", err)
	}
	if res.ServerInfo.Name != serverName || res.ServerInfo.Version != serverVersion {
		t.Fatalf("server info = %+v, want %s %s", res.ServerInfo, serverName, serverVersion)
	}
	return c
}

// callTool calls a tool and returns its text content and isError flag. A
// protocol-level error fails the test: every tool failure must be an
// isError result.
func callTool(t *testing.T, c *client.Client, name string, args any) (string, bool) {
	t.Helper()
	var req mcp.CallToolRequest
	req.Params.Name = name
	req.Params.Arguments = args
	res, err := c.CallTool(t.Context(), req)
	if err != nil {
		t.Fatalf("CallTool(%s, %v): %v", name, args, err)
	}
	var texts []string
	for _, content := range res.Content {
		tc, ok := mcp.AsTextContent(content)
		if !ok {
			t.Fatalf("CallTool(%s): non-text content %T", name, content)
		}
		texts = append(texts, tc.Text)
	}
	if len(texts) != 1 {
		t.Fatalf("CallTool(%s): got %d content items, want 1", name, len(texts))
	}
	return texts[0], res.IsError
}

type toolCase struct {
	name    string
	args    any
	want    string                         // exact text of a successful result (unless check is set)
	wantErr string                         // if set, an isError result containing this
	check   func(t *testing.T, got string) // custom check of a successful result
}

// runToolCases runs each case as a parallel subtest against one shared
// client, which also exercises concurrent calls.
func runToolCases(t *testing.T, clock func() time.Time, tool string, cases []toolCase) {
	t.Helper()
	c := newTestClient(t, clock)
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, isErr := callTool(t, c, tool, tc.args)
			switch {
			case tc.wantErr != "":
				if !isErr || !strings.Contains(got, tc.wantErr) {
					t.Errorf("%s(%v) = %q (isError %v), want error containing %q", tool, tc.args, got, isErr, tc.wantErr)
				}
			case isErr:
				t.Errorf("%s(%v) = error %q, want success", tool, tc.args, got)
			case tc.check != nil:
				tc.check(t, got)
			case got != tc.want:
				t.Errorf("%s(%v) = %q, want %q", tool, tc.args, got, tc.want)
			}
		})
	}
}

func TestListTools(t *testing.T) {
	t.Parallel()
	c := newTestClient(t, fixedClock)
	res, err := c.ListTools(t.Context(), mcp.ListToolsRequest{})
	if err != nil {
		t.Fatalf("ListTools: %v", err)
	}
	var names []string
	for _, tool := range res.Tools {
		names = append(names, tool.Name)
	}
	slices.Sort(names)
	want := slices.Sorted(slices.Values(toolNames))
	if !slices.Equal(names, want) {
		t.Fatalf("tools = %v, want %v", names, want)
	}
	required := map[string][]string{
		"now": nil, "calc": {"expression"}, "hash": {"text"}, "uuid": nil,
		"base64": {"text", "mode"}, "wordcount": {"text"},
	}
	for _, tool := range res.Tools {
		t.Run(tool.Name, func(t *testing.T) {
			t.Parallel()
			first, details, ok := strings.Cut(tool.Description, "\n\n")
			if !ok || first == "" || strings.Contains(first, "\n") || !strings.HasSuffix(first, ".") || details == "" {
				t.Errorf("description should be one sentence line, a blank line, then details: %q", tool.Description)
			}
			a := tool.Annotations
			if a.Title == "" || a.ReadOnlyHint == nil || !*a.ReadOnlyHint || a.DestructiveHint == nil || *a.DestructiveHint ||
				a.OpenWorldHint == nil || *a.OpenWorldHint {
				t.Errorf("annotations = %+v, want a titled read-only, non-destructive, closed-world tool", a)
			}
			if !slices.Equal(tool.InputSchema.Required, required[tool.Name]) {
				t.Errorf("required = %v, want %v", tool.InputSchema.Required, required[tool.Name])
			}
			for prop, schema := range tool.InputSchema.Properties {
				m, _ := schema.(map[string]any)
				if d, _ := m["description"].(string); d == "" {
					t.Errorf("property %q has no description", prop)
				}
			}
			raw, err := json.Marshal(tool.InputSchema)
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(string(raw), `"additionalProperties":false`) {
				t.Errorf("input schema %s should forbid additional properties", raw)
			}
		})
	}
}

func TestArgumentChecks(t *testing.T) {
	t.Parallel()
	c := newTestClient(t, fixedClock)
	cases := []struct {
		name, tool string
		args       any
		wantErr    string
	}{
		{"unknown argument", "calc", map[string]any{"expression": "1", "precision": 3}, `unknown argument(s) "precision"; calc accepts: expression`},
		{"several unknown arguments sorted", "wordcount", map[string]any{"text": "x", "zz": 1, "aa": 2}, `unknown argument(s) "aa", "zz"`},
		{"arguments not an object", "hash", []any{"abc"}, "arguments must be a JSON object"},
		{"missing arguments", "calc", nil, `missing required argument "expression"`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, isErr := callTool(t, c, tc.tool, tc.args)
			if !isErr || !strings.Contains(got, tc.wantErr) {
				t.Errorf("%s(%v) = %q (isError %v), want error containing %q", tc.tool, tc.args, got, isErr, tc.wantErr)
			}
		})
	}
}

func TestNowTool(t *testing.T) {
	t.Parallel()
	runToolCases(t, fixedClock, "now", []toolCase{
		{name: "defaults to UTC RFC 3339", args: map[string]any{}, want: "2024-05-14T07:30:00Z"},
		{name: "no arguments at all", args: nil, want: "2024-05-14T07:30:00Z"},
		{name: "zone with summer time", args: map[string]any{"timezone": "Europe/Paris"}, want: "2024-05-14T09:30:00+02:00"},
		{name: "negative offset", args: map[string]any{"timezone": "America/New_York", "format": "rfc3339"}, want: "2024-05-14T03:30:00-04:00"},
		{name: "unix ignores zone", args: map[string]any{"timezone": "Asia/Tokyo", "format": "unix"}, want: "1715671800"},
		{name: "human UTC", args: map[string]any{"format": "human"}, want: "Tuesday, 14 May 2024, 07:30:00 UTC (UTC+00:00)"},
		{name: "human names the zone", args: map[string]any{"timezone": "Asia/Tokyo", "format": "human"}, want: "Tuesday, 14 May 2024, 16:30:00 JST (UTC+09:00, Asia/Tokyo)"},
		{name: "human across midnight", args: map[string]any{"timezone": "Pacific/Kiritimati", "format": "human"}, want: "Tuesday, 14 May 2024, 21:30:00 +14 (UTC+14:00, Pacific/Kiritimati)"},
		{name: "lower-case utc and format", args: map[string]any{"timezone": "utc", "format": " HUMAN "}, want: "Tuesday, 14 May 2024, 07:30:00 UTC (UTC+00:00)"},
		{name: "empty timezone means UTC", args: map[string]any{"timezone": ""}, want: "2024-05-14T07:30:00Z"},
		{name: "null timezone means UTC", args: map[string]any{"timezone": nil}, want: "2024-05-14T07:30:00Z"},
		{name: "unknown timezone", args: map[string]any{"timezone": "Mars/Olympus_Mons"}, wantErr: `unknown timezone "Mars/Olympus_Mons"`},
		{name: "path-like timezone", args: map[string]any{"timezone": "../../etc/passwd"}, wantErr: "unknown timezone"},
		{name: "unknown format", args: map[string]any{"format": "iso8601"}, wantErr: `unknown format "iso8601"`},
		{name: "timezone not a string", args: map[string]any{"timezone": 2}, wantErr: `argument "timezone" must be a string`},
		{name: "format not a string", args: map[string]any{"format": true}, wantErr: `argument "format" must be a string`},
	})
}

func TestNowToolUsesRealClock(t *testing.T) {
	t.Parallel()
	c := newTestClient(t, time.Now)
	before := time.Now().Truncate(time.Second)
	got, isErr := callTool(t, c, "now", map[string]any{})
	after := time.Now()
	ts, err := time.Parse(time.RFC3339, got)
	if isErr || err != nil || ts.Before(before) || ts.After(after) {
		t.Errorf("now = %q (isError %v, parse error %v), want a time between %v and %v", got, isErr, err, before, after)
	}
}

func TestCalcTool(t *testing.T) {
	t.Parallel()
	runToolCases(t, fixedClock, "calc", []toolCase{
		{name: "integer result has no fraction", args: map[string]any{"expression": "6*7"}, want: "42"},
		{name: "large integer in plain notation", args: map[string]any{"expression": "1000 * 1000"}, want: "1000000"},
		{name: "shortest exact decimal", args: map[string]any{"expression": "0.1 + 0.2"}, want: "0.30000000000000004"},
		{name: "functions and constants", args: map[string]any{"expression": "round(sqrt(2) * 100, 2) / 2 + cos(pi)"}, want: "69.71"},
		{name: "division by zero", args: map[string]any{"expression": "1 / (2 - 2)"}, wantErr: "division by zero at position 3"},
		{name: "syntax error", args: map[string]any{"expression": "2 +* 3"}, wantErr: `syntax error: unexpected "*", expected a number, name or "(" at position 4`},
		{name: "empty", args: map[string]any{"expression": ""}, wantErr: "empty expression at position 1"},
		{name: "missing expression", args: map[string]any{}, wantErr: `missing required argument "expression"`},
		{name: "expression not a string", args: map[string]any{"expression": 12}, wantErr: `argument "expression" must be a string`},
	})
}

func TestHashTool(t *testing.T) {
	t.Parallel()
	runToolCases(t, fixedClock, "hash", []toolCase{
		{name: "sha256 by default", args: map[string]any{"text": "abc"}, want: "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"},
		{name: "sha256 of empty text", args: map[string]any{"text": "", "algorithm": "sha256"}, want: "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"},
		{name: "sha256 hashes UTF-8 bytes", args: map[string]any{"text": "héllo"}, want: "3c48591d8d098a4538f5e013dfcf406e948eac4d3277b10bf614e295d6068179"},
		{name: "sha1", args: map[string]any{"text": "abc", "algorithm": "sha1"}, want: "a9993e364706816aba3e25717850c26c9cd0d89d"},
		{name: "md5", args: map[string]any{"text": "abc", "algorithm": "md5"}, want: "900150983cd24fb0d6963f7d28e17f72"},
		{name: "sha512", args: map[string]any{"text": "abc", "algorithm": "sha512"}, want: "ddaf35a193617abacc417349ae20413112e6fa4e89a97ea20a9eeee64b55d39a2192992a274fc1a836ba3c23a3feebbd454d4423643ce80e2a9ac94fa54ca49f"},
		{name: "spelling SHA-1 accepted", args: map[string]any{"text": "abc", "algorithm": "SHA-1"}, want: "a9993e364706816aba3e25717850c26c9cd0d89d"},
		{name: "unknown algorithm", args: map[string]any{"text": "abc", "algorithm": "crc32"}, wantErr: `unknown algorithm "crc32"`},
		{name: "missing text", args: map[string]any{"algorithm": "md5"}, wantErr: `missing required argument "text"`},
		{name: "text not a string", args: map[string]any{"text": []any{"a"}}, wantErr: `argument "text" must be a string`},
		{name: "algorithm not a string", args: map[string]any{"text": "a", "algorithm": 256}, wantErr: `argument "algorithm" must be a string`},
	})
}

var (
	uuidV4Re = regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`)
	uuidV7Re = regexp.MustCompile(`^018f7602-18c0-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`) // fixedTime's milliseconds
)

// uuidLines checks that got holds n distinct UUIDs matching re, optionally
// in strictly increasing order.
func uuidLines(n int, re *regexp.Regexp, sorted bool) func(*testing.T, string) {
	return func(t *testing.T, got string) {
		t.Helper()
		lines := strings.Split(got, "\n")
		if len(lines) != n {
			t.Fatalf("got %d lines, want %d: %q", len(lines), n, got)
		}
		seen := map[string]bool{}
		for i, l := range lines {
			if !re.MatchString(l) {
				t.Errorf("line %d = %q, does not match %s", i+1, l, re)
			}
			if seen[l] {
				t.Errorf("duplicate UUID %s", l)
			}
			seen[l] = true
			if sorted && i > 0 && l <= lines[i-1] {
				t.Errorf("UUID %d (%s) does not sort after %s", i+1, l, lines[i-1])
			}
		}
	}
}

func TestUUIDTool(t *testing.T) {
	t.Parallel()
	runToolCases(t, fixedClock, "uuid", []toolCase{
		{name: "one v4 by default", args: map[string]any{}, check: uuidLines(1, uuidV4Re, false)},
		{name: "several v4", args: map[string]any{"version": 4, "count": 10}, check: uuidLines(10, uuidV4Re, false)},
		{name: "maximum count of v7 is time-ordered", args: map[string]any{"version": 7, "count": 100}, check: uuidLines(100, uuidV7Re, true)},
		{name: "numeric strings accepted", args: map[string]any{"version": "7", "count": " 3"}, check: uuidLines(3, uuidV7Re, true)},
		{name: "null count means 1", args: map[string]any{"count": nil}, check: uuidLines(1, uuidV4Re, false)},
		{name: "unsupported version", args: map[string]any{"version": 5}, wantErr: "unsupported UUID version 5: use 4 or 7"},
		{name: "count zero", args: map[string]any{"count": 0}, wantErr: "count must be from 1 to 100, got 0"},
		{name: "count too large", args: map[string]any{"count": 101}, wantErr: "count must be from 1 to 100, got 101"},
		{name: "fractional count", args: map[string]any{"count": 2.5}, wantErr: `argument "count" must be an integer`},
		{name: "huge count", args: map[string]any{"count": 1e12}, wantErr: `argument "count" must be an integer`},
		{name: "version word", args: map[string]any{"version": "seven"}, wantErr: `argument "version" must be an integer`},
		{name: "version boolean", args: map[string]any{"version": true}, wantErr: `argument "version" must be an integer`},
	})
}

func TestUUIDv7Counter(t *testing.T) {
	t.Parallel()
	now := fixedTime
	g := &uuidGen{clock: func() time.Time { return now }}
	cases := []struct {
		name    string
		prepare func()
		wantTS  string // first 13 characters: 48-bit milliseconds
	}{
		{"fresh millisecond", func() {}, "018f7602-18c0"},
		{"counter exhausted borrows next millisecond", func() { g.seq = 0x0fff }, "018f7602-18c1"},
		{"clock moving backwards keeps order", func() { now = fixedTime.Add(-time.Hour) }, "018f7602-18c1"},
		{"clock catching up", func() { now = fixedTime.Add(time.Second) }, "018f7602-1ca8"},
	}
	// Sequential on purpose: each case builds on the generator's state.
	prev := ""
	for _, tc := range cases {
		tc.prepare()
		got := g.v7()
		if !strings.HasPrefix(got, tc.wantTS) || got[14] != '7' || !strings.ContainsRune("89ab", rune(got[19])) {
			t.Errorf("%s: v7() = %s, want prefix %s, version 7 and RFC 9562 variant", tc.name, got, tc.wantTS)
		}
		if got <= prev {
			t.Errorf("%s: v7() = %s, not after %s", tc.name, got, prev)
		}
		prev = got
	}
}

func TestBase64Tool(t *testing.T) {
	t.Parallel()
	runToolCases(t, fixedClock, "base64", []toolCase{
		{name: "encode", args: map[string]any{"text": "hello", "mode": "encode"}, want: "aGVsbG8="},
		{name: "encode empty", args: map[string]any{"text": "", "mode": "encode"}, want: ""},
		{name: "encode UTF-8", args: map[string]any{"text": "héllo", "mode": "encode"}, want: "aMOpbGxv"},
		{name: "encode standard alphabet", args: map[string]any{"text": "??>", "mode": "encode", "urlSafe": false}, want: "Pz8+"},
		{name: "encode URL-safe alphabet", args: map[string]any{"text": "??>", "mode": "encode", "urlSafe": true}, want: "Pz8-"},
		{name: "mode is case-insensitive", args: map[string]any{"text": "hi", "mode": "Encode"}, want: "aGk="},
		{name: "decode padded", args: map[string]any{"text": "aGVsbG8=", "mode": "decode"}, want: "hello"},
		{name: "decode unpadded", args: map[string]any{"text": "aGVsbG8", "mode": "decode"}, want: "hello"},
		{name: "decode ignores line breaks and outer space", args: map[string]any{"text": "  aGVs\r\nbG8=\n", "mode": "decode"}, want: "hello"},
		{name: "decode URL-safe", args: map[string]any{"text": "Pz8-", "mode": "decode", "urlSafe": "true"}, want: "??>"},
		{name: "decode empty", args: map[string]any{"text": "", "mode": "decode"}, want: ""},
		{name: "decode binary as hex", args: map[string]any{"text": "/w==", "mode": "decode"}, want: "decoded 1 bytes that are not valid UTF-8 text; hex: ff"},
		{name: "decode URL-safe input without urlSafe", args: map[string]any{"text": "Pz8-", "mode": "decode"}, wantErr: `unexpected character '-' at byte offset 3 (this looks like URL-safe base64; set urlSafe to true)`},
		{name: "decode standard input with urlSafe", args: map[string]any{"text": "Pz8+", "mode": "decode", "urlSafe": true}, wantErr: `unexpected character '+' at byte offset 3 (this looks like standard base64; set urlSafe to false)`},
		{name: "decode inner space reports original offset", args: map[string]any{"text": " aGVs bG8=", "mode": "decode"}, wantErr: "unexpected character ' ' at byte offset 5"},
		{name: "decode non-ASCII character", args: map[string]any{"text": "aGé=", "mode": "decode"}, wantErr: "unexpected character 'é' at byte offset 2"},
		{name: "decode truncated", args: map[string]any{"text": "aGVsb", "mode": "decode"}, wantErr: "input ends early"},
		{name: "unknown mode", args: map[string]any{"text": "x", "mode": "rot13"}, wantErr: `unknown mode "rot13": use encode or decode`},
		{name: "missing mode", args: map[string]any{"text": "x"}, wantErr: `missing required argument "mode"`},
		{name: "missing text", args: map[string]any{"mode": "encode"}, wantErr: `missing required argument "text"`},
		{name: "urlSafe not a boolean", args: map[string]any{"text": "x", "mode": "encode", "urlSafe": "sometimes"}, wantErr: `argument "urlSafe" must be true or false`},
	})
}

func TestWordcountTool(t *testing.T) {
	t.Parallel()
	runToolCases(t, fixedClock, "wordcount", []toolCase{
		{name: "empty", args: map[string]any{"text": ""}, want: "lines: 0, words: 0, characters: 0, bytes: 0"},
		{name: "one line without newline", args: map[string]any{"text": "hello world"}, want: "lines: 1, words: 2, characters: 11, bytes: 11"},
		{name: "trailing newline is not an extra line", args: map[string]any{"text": "a b\nc\n"}, want: "lines: 2, words: 3, characters: 6, bytes: 6"},
		{name: "blank lines", args: map[string]any{"text": "\n\n"}, want: "lines: 2, words: 0, characters: 2, bytes: 2"},
		{name: "any whitespace separates words", args: map[string]any{"text": "  spaced \t out\u00a0here  "}, want: "lines: 1, words: 3, characters: 21, bytes: 22"},
		{name: "characters are runes, bytes are UTF-8", args: map[string]any{"text": "héllo wörld 🙂\n"}, want: "lines: 1, words: 3, characters: 14, bytes: 19"},
		{name: "missing text", args: map[string]any{}, wantErr: `missing required argument "text"`},
		{name: "text not a string", args: map[string]any{"text": 3}, wantErr: `argument "text" must be a string`},
	})
}
