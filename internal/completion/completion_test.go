package completion_test

import (
	"fmt"
	"testing"

	"github.com/harness-go/harness/internal/completion"
)

func TestParams(t *testing.T) {
	t.Parallel()
	ref := map[string]string{"type": "ref/resource", "uri": "file:///{path}"}
	if got, want := string(completion.Params(ref, "path", "sr", nil)), `{"argument":{"name":"path","value":"sr"},"ref":{"type":"ref/resource","uri":"file:///{path}"}}`; got != want {
		t.Errorf("without context: %s, want %s", got, want)
	}
	if got, want := string(completion.Params(ref, "path", "", map[string]string{"owner": "me"})), `{"argument":{"name":"path","value":""},"context":{"arguments":{"owner":"me"}},"ref":{"type":"ref/resource","uri":"file:///{path}"}}`; got != want {
		t.Errorf("with context: %s, want %s", got, want)
	}
}

func TestParse(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ raw, want string }{
		{`{"completion":{"values":["a","b"],"total":9,"hasMore":true}}`, `{[a b] 9 true} <nil>`},
		{`{"completion":{}}`, `{[] 0 false} <nil>`},
		{`{}`, `{[] 0 false} <nil>`},
	} {
		r, err := completion.Parse([]byte(tc.raw))
		if got := fmt.Sprint(r, " ", err); got != tc.want || r.Values == nil {
			t.Errorf("Parse(%s) = %s, want %s (values never nil)", tc.raw, got, tc.want)
		}
	}
	if _, err := completion.Parse([]byte(`{"completion":{"values":"a"}}`)); err == nil {
		t.Error("values that are not a list parsed")
	}
}

// A request's params read back as they were made; an answer holds at most
// Max values and counts the rest.
func TestRequestAndAnswer(t *testing.T) {
	t.Parallel()
	req, err := completion.ReadParams(completion.Params(map[string]string{"type": "ref/prompt", "name": "p"}, "x", "v", map[string]string{"y": "1"}))
	if err != nil || req.Arg != "x" || req.Value != "v" || req.Given["y"] != "1" {
		t.Fatalf("ReadParams = %+v, %v", req, err)
	}
	if _, err := completion.ReadParams([]byte(`[1]`)); err == nil {
		t.Error("params that are not an object read")
	}
	many := make([]string, completion.Max+5)
	for i := range many {
		many[i] = fmt.Sprint(i)
	}
	r, err := completion.Parse(completion.Answer(many))
	if err != nil || len(r.Values) != completion.Max || r.Total != completion.Max+5 || !r.HasMore {
		t.Errorf("Answer of %d values: %d, total %d, hasMore %v, %v", len(many), len(r.Values), r.Total, r.HasMore, err)
	}
	if got := string(completion.Answer(nil)); got != `{"completion":{"values":[]}}` {
		t.Errorf("Answer(nil) = %s", got)
	}
}
