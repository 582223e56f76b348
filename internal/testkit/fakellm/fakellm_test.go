package fakellm

import (
	"bufio"
	"encoding/json"
	"io"
	"math/rand/v2"
	"net/http"
	"strings"
	"testing"
	"time"
)

func TestCutKeepsEveryByte(t *testing.T) {
	t.Parallel()
	s := `{"text":"naïve 😀 日本語"}`
	for seed := range uint64(200) {
		rng := rand.New(rand.NewPCG(seed, 1))
		pieces := cut(rng, s)
		if strings.Join(pieces, "") != s || len(pieces) > 8 {
			t.Fatalf("seed %d: %q", seed, pieces)
		}
		for _, p := range pieces {
			if p == "" {
				t.Fatalf("seed %d: an empty piece in %q", seed, pieces)
			}
		}
	}
}

// quote escapes what JSON needs and leaves other bytes as they are, an
// incomplete UTF-8 sequence included.
func TestQuote(t *testing.T) {
	t.Parallel()
	if got := quote("a\"b\\c\n\x01\xc3"); got != "\"a\\\"b\\\\c\\u000a\\u0001\xc3\"" {
		t.Fatalf("quote = %q", got)
	}
}

// post sends a chat request and returns the status and the stream's data
// lines.
func post(t *testing.T, s *Server, body string) (int, []string) {
	t.Helper()
	resp, err := http.Post(s.URL+"/chat/completions", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var data []string
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		if d, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
			data = append(data, d)
		}
	}
	return resp.StatusCode, data
}

func TestScriptAndRecord(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(3, 4))
	s := Start(t, Reply{Pieces: rng, Chunks: TextSplit(rng, "héllo wörld")}, Status(429, "slow down"))
	code, data := post(t, s, `{"model":"m","messages":[{"role":"user","content":"hi"}],"tools":[ {"type":"function","function":{"name":"x"}} ],"stream":true}`)
	if code != 200 || data[len(data)-1] != "[DONE]" {
		t.Fatalf("status %d, data %q", code, data)
	}
	var text []byte
	for _, d := range data[:len(data)-1] {
		// The raw bytes of each content string, as the server wrote them.
		i := strings.Index(d, `"content":"`) + len(`"content":"`)
		j := strings.LastIndex(d, `"}`)
		text = append(text, d[i:j]...)
	}
	if string(text) != "héllo wörld" {
		t.Fatalf("text %q", text)
	}
	r := s.Wait(1, time.Second)
	if r.Model != "m" || string(r.Tools) != `[ {"type":"function","function":{"name":"x"}} ]` || r.ToolNames[0] != "x" || r.Last().Content != "hi" {
		t.Fatalf("recorded %+v", r)
	}
	<-r.Done()
	if r.Cancelled() {
		t.Fatal("a complete answer counted as cancelled")
	}
	if code, _ := post(t, s, `{"model":"m","messages":[]}`); code != 429 {
		t.Fatalf("second reply: %d", code)
	}
	if code, _ := post(t, s, `{"model":"m","messages":[]}`); code != 500 {
		t.Fatalf("past the script: %d", code)
	}
	s.Forget()
	if s.Wait(1, time.Millisecond) != nil || len(s.Requests()) != 0 {
		t.Fatal("Forget kept the requests")
	}
	post(t, s, `{"model":"m","messages":[]}`)
	if r := s.Wait(4, time.Second); r == nil || r.N != 4 {
		t.Fatalf("numbering after Forget: %+v", r)
	}
}

func TestDeepSeekChecks(t *testing.T) {
	t.Parallel()
	s := Start(t, Say("ok"))
	s.RequireReasoning()
	s.MaxTools(1)
	call := `{"role":"assistant","content":"","tool_calls":[{"id":"c","type":"function","function":{"name":"x","arguments":"{}"}}]}`
	for _, tc := range []struct {
		body string
		code int
		says string
	}{
		{`{"messages":[{"role":"user","content":"q"},` + call + `]}`, 400, "Missing `reasoning_content` field in the assistant message at message index 1"},
		{`{"messages":[],"tools":[{"function":{"name":"a"}},{"function":{"name":"b"}}]}`, 400, "maximum length 1"},
		{`not json`, 400, "invalid request body"},
		{`{"messages":[` + strings.Replace(call, `"content":""`, `"content":"","reasoning_content":""`, 1) + `]}`, 200, ""},
	} {
		resp, err := http.Post(s.URL+"/v1/chat/completions", "application/json", strings.NewReader(tc.body))
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != tc.code || !strings.Contains(string(b), tc.says) {
			t.Errorf("%s: %d %s", tc.body, resp.StatusCode, b)
		}
		if tc.code != 200 && !json.Valid(b) {
			t.Errorf("error body is not JSON: %s", b)
		}
	}
}

func TestCallsSplitInterleaves(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(9, 9))
	chunks := CallsSplit(rng, ToolCallSpec{ID: "a", Name: "ta", Arguments: `{"x":"ü"}`}, ToolCallSpec{ID: "b", Name: "tb", Arguments: `{"y":2}`})
	args := map[int]string{}
	firsts := map[int]bool{}
	for _, c := range chunks {
		var v struct {
			Choices []struct {
				Delta struct {
					ToolCalls []struct {
						Index    int
						ID       string
						Function struct{ Name, Arguments string }
					} `json:"tool_calls"`
				}
			}
		}
		if err := json.Unmarshal([]byte(c), &v); err != nil {
			t.Fatalf("%s: %v", c, err)
		}
		tc := v.Choices[0].Delta.ToolCalls[0]
		if tc.ID != "" {
			if firsts[tc.Index] {
				t.Fatalf("id sent twice for call %d", tc.Index)
			}
			firsts[tc.Index] = true
		} else if !firsts[tc.Index] {
			t.Fatalf("a fragment of call %d before its first delta", tc.Index)
		}
		args[tc.Index] += tc.Function.Arguments
	}
	// Decoding a fragment alone turns a cut character into U+FFFD: call
	// 1's arguments are ASCII and must come back whole.
	if len(args) != 2 || args[1] != `{"y":2}` {
		t.Fatalf("args %v", args)
	}
}
