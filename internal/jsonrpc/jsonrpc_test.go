package jsonrpc

import (
	"bytes"
	"encoding/json"
	"math/rand/v2"
	"reflect"
	"slices"
	"strconv"
	"testing"
)

// Scan agrees with encoding/json on every valid JSON object: the
// same raw bytes for each field it reads.
func checkScan(t *testing.T, line []byte) {
	t.Helper()
	var want struct {
		ID, Method, Params, Result, Error json.RawMessage
	}
	var obj map[string]json.RawMessage
	trimmed := bytes.TrimLeft(line, " \t\r\n")
	valid := len(trimmed) > 0 && trimmed[0] == '{' && json.Unmarshal(line, &obj) == nil && json.Unmarshal(line, &want) == nil
	got, ok := Scan(line)
	// ScanValid is Scan and Valid at once.
	gotValid, okValid := ScanValid(line)
	if okValid != (ok && Valid(line)) {
		t.Fatalf("ScanValid(%q) ok = %v; Scan says %v, Valid %v", line, okValid, ok, Valid(line))
	}
	if okValid && !reflect.DeepEqual(gotValid, got) {
		t.Fatalf("ScanValid(%q) = %+v, Scan %+v", line, gotValid, got)
	}
	if !valid {
		return // the slow path decides (and rejects) what is not JSON
	}
	if keys := topKeys(t, line); ok {
		exact := true
		count := map[string]int{}
		for _, k := range keys {
			count[k]++
			switch k {
			case "jsonrpc", "id", "method", "params", "result", "error":
				exact = exact && count[k] == 1
			default:
				exact = false
			}
		}
		if got.Exact != exact {
			t.Fatalf("Scan(%q).Exact = %v, the keys %q", line, got.Exact, keys)
		}
	}
	if !ok {
		// Keys with escapes are left to the slow path; nothing else is.
		if bytes.Contains(line, []byte(`\`)) {
			return
		}
		t.Fatalf("Scan(%q) refused a valid object", line)
	}
	// encoding/json matches keys without regard to case and takes the last
	// duplicate; the fast path reads exact keys. Compare only lines whose
	// keys are exact and unique.
	exact := map[string]bool{"id": true, "method": true, "params": true, "result": true, "error": true}
	for k := range obj {
		if !exact[k] && (bytes.EqualFold([]byte(k), []byte("id")) || bytes.EqualFold([]byte(k), []byte("method")) ||
			bytes.EqualFold([]byte(k), []byte("params")) || bytes.EqualFold([]byte(k), []byte("result")) || bytes.EqualFold([]byte(k), []byte("error"))) {
			return
		}
	}
	if bytes.Count(line, []byte(`"id"`)) > 1 || bytes.Count(line, []byte(`"result"`)) > 1 || bytes.Count(line, []byte(`"method"`)) > 1 {
		return
	}
	for _, f := range []struct {
		name      string
		got, want json.RawMessage
	}{{"id", got.ID, want.ID}, {"method", got.Method, want.Method}, {"params", got.Params, want.Params}, {"result", got.Result, want.Result}, {"error", got.Error, want.Error}} {
		if !bytes.Equal(f.got, f.want) {
			t.Fatalf("Scan(%q).%s = %q, encoding/json %q", line, f.name, f.got, f.want)
		}
	}
}

// topKeys returns the keys of the object line, in order, duplicates kept.
func topKeys(t *testing.T, line []byte) []string {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(line))
	if _, err := dec.Token(); err != nil {
		t.Fatal(err)
	}
	var keys []string
	for dec.More() {
		k, err := dec.Token()
		if err != nil {
			t.Fatal(err)
		}
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			t.Fatal(err)
		}
		keys = append(keys, k.(string))
	}
	return keys
}

var scanCases = []string{
	`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{},"Method":"x"}`,
	`{"jsonrpc":"2.0","id":1,"id":2,"method":"ping"}`,
	`{"jsonrpc":"2.0","id":1,"method":"ping","extra":[1,{"a":"\u00e9"}]}`,
	`{"jsonrpc":"2.0","id":1,"method":"ping","params":{"a":tru}}`,
	`{"jsonrpc":"2.0","id":1,"method":"ping","params":{"a":"\x"}}`,
	`{"jsonrpc":"2.0","id":1} x`,
	`{} x`,
	`{"jsonrpc":"2.0","id":"h1","result":{"content":[{"type":"text","text":"a \"q\" {[}]"}]}}`,
	`{ "result" : [1, {"a":[2]}], "id" : 7 , "jsonrpc":"2.0" }`,
	`{"jsonrpc":"2.0","method":"notifications/tools/list_changed"}`,
	`{"jsonrpc":"2.0","id":3,"method":"ping","params":{}}`,
	`{"id":null,"error":{"code":-32700,"message":"x"}}`,
	`{"id":-1.5e3,"result":true}`,
	`{}`,
	`{"id":"\u0068\u0031","result":null}`,
	`[1,2]`,
	`{"id":1,"result":tru}`,
	`{"id":1,`,
	`not json`,
}

func TestScanMessage(t *testing.T) {
	t.Parallel()
	for _, c := range scanCases {
		checkScan(t, []byte(c))
	}
	m, ok := Scan([]byte(scanCases[7]))
	if !ok || string(m.ID) != `"h1"` || m.Method != nil || !bytes.HasPrefix(m.Result, []byte(`{"content"`)) {
		t.Fatalf("Scan: %+v %v", m, ok)
	}
}

func FuzzScanMessage(f *testing.F) {
	for _, c := range scanCases {
		f.Add([]byte(c))
	}
	f.Fuzz(func(t *testing.T, line []byte) { checkScan(t, line) })
}

func TestIDKey(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		raw, want string
	}{
		{`"h1"`, "s:h1"},
		{` "h1" `, "s:h1"},
		{`"\u0068\u0031"`, "s:h1"},
		{`"a\"b"`, `s:a"b`},
		{`7`, "n:7"},
		{`7.0`, "n:7"},
		{`7e0`, "n:7"},
		{`-1`, "n:-1"},
		{`0`, "n:0"},
		{`-0`, "n:-0"},
		{`007`, "n:7"},
		{`123456789012345`, "n:123456789012345"},
		{`1234567890123456`, "n:1234567890123456"},
		{`12345678901234567890`, "n:12345678901234567000"},
		{`true`, "r:true"},
		{`"unterminated`, `r:"unterminated`},
		{"\"\xff\"", "s:\uFFFD"},
	} {
		if got := IDKey([]byte(tc.raw)); got != tc.want {
			t.Errorf("IDKey(%s) = %q, want %q", tc.raw, got, tc.want)
		}
		if got := string(AppendIDKey([]byte("x"), []byte(tc.raw))); got != "x"+tc.want {
			t.Errorf("AppendIDKey(x, %s) = %q, want %q", tc.raw, got, "x"+tc.want)
		}
	}
}

// An integer id is written as it came when that is what its float's
// shortest spelling is: the two ways agree on every integer of up to 15
// digits.
func TestIDKeyOfIntegers(t *testing.T) {
	t.Parallel()
	slow := func(raw string) string {
		n, err := strconv.ParseFloat(raw, 64)
		if err != nil {
			t.Fatal(err)
		}
		return "n:" + strconv.FormatFloat(n, 'f', -1, 64)
	}
	r := rand.New(rand.NewPCG(1, 2))
	for i := range 20000 {
		v := r.Int64N(1_000_000_000_000_000) >> (i % 50)
		if i%2 == 1 {
			v = -v
		}
		raw := strconv.FormatInt(v, 10)
		if got, want := IDKey([]byte(raw)), slow(raw); got != want {
			t.Fatalf("IDKey(%s) = %q, want %q", raw, got, want)
		}
	}
}

// A response is looked up by its key without allocating (not parallel:
// AllocsPerRun counts the whole process).
func TestAppendIDKeyAllocates(t *testing.T) {
	raw := []byte(`"h12345"`)
	if n := testing.AllocsPerRun(100, func() {
		var buf [64]byte
		_ = AppendIDKey(buf[:0], raw)
	}); n != 0 {
		t.Errorf("AppendIDKey into a buffer on the stack allocates %v times", n)
	}
}

// EachKey and EachElement hand over each key and value, or element, as
// its raw bytes, in order; they refuse what is not an object (an array),
// a key that is not plain, and stop when f says so.
func TestEachKeyAndElement(t *testing.T) {
	t.Parallel()
	type kv struct{ k, v string }
	for _, tc := range []struct {
		obj  string
		want []kv
		ok   bool
	}{
		{`{}`, nil, true},
		{` { "a" : 1 , "b":{"c":[1,"}"]},"d":"x\"y"} `, []kv{{"a", "1"}, {"b", `{"c":[1,"}"]}`}, {"d", `"x\"y"`}}, true},
		{`{"a\u0062":1}`, nil, false}, // an escaped key is not plain
		{`{"a":1,"stop":2,"c":3}`, []kv{{"a", "1"}, {"stop", "2"}}, false},
		{`[1,2]`, nil, false},
		{`{"a":`, nil, false},
	} {
		var got []kv
		ok := EachKey([]byte(tc.obj), func(k, v []byte) bool {
			got = append(got, kv{string(k), string(v)})
			return string(k) != "stop"
		})
		if ok != tc.ok || !slices.Equal(got, tc.want) {
			t.Errorf("EachKey(%s) = %v %q, want %v %q", tc.obj, ok, got, tc.ok, tc.want)
		}
	}
	for _, tc := range []struct {
		arr  string
		want []string
		ok   bool
	}{
		{`[]`, nil, true},
		{` [ 1, "a,]", {"b":[2]} ,null ]`, []string{"1", `"a,]"`, `{"b":[2]}`, "null"}, true},
		{`{"a":1}`, nil, false},
		{`[1,`, []string{"1"}, false},
	} {
		var got []string
		ok := EachElement([]byte(tc.arr), func(v []byte) bool { got = append(got, string(v)); return true })
		if ok != tc.ok || !slices.Equal(got, tc.want) {
			t.Errorf("EachElement(%s) = %v %q, want %v %q", tc.arr, ok, got, tc.ok, tc.want)
		}
	}
}
