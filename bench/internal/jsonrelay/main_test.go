package main

import (
	"bytes"
	"strings"
	"testing"
)

func TestRequestsGoUnderOurIDsAndAnswersComeBackUnderTheClients(t *testing.T) {
	m := &ids{client: map[int64][]byte{}}
	var toServer bytes.Buffer
	relay(strings.NewReader(strings.Join([]string{
		`{"jsonrpc":"2.0","id":"a-1","method":"tools/call","params":{"name":"echo","arguments":{}}}`,
		`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
		`{"jsonrpc":"2.0","id":7,"method":"ping"}`,
		`not json`,
	}, "\n")+"\n"), &toServer, m.request)
	want := strings.Join([]string{
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{}}}`,
		`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
		`{"jsonrpc":"2.0","id":2,"method":"ping"}`,
		`not json`,
	}, "\n") + "\n"
	if toServer.String() != want {
		t.Fatalf("to the server:\n%s\nwant:\n%s", toServer.String(), want)
	}

	var toClient bytes.Buffer
	relay(strings.NewReader(strings.Join([]string{
		`{"jsonrpc":"2.0","id":2,"result":{}}`,
		`{"jsonrpc":"2.0","id":1,"error":{"code":-32602,"message":"no"}}`,
		`{"jsonrpc":"2.0","id":1,"result":{}}`, // answered already: passes as it came
		`{"jsonrpc":"2.0","id":"s1","method":"roots/list"}`,
	}, "\n")+"\n"), &toClient, m.answer)
	want = strings.Join([]string{
		`{"jsonrpc":"2.0","id":7,"result":{}}`,
		`{"jsonrpc":"2.0","id":"a-1","error":{"code":-32602,"message":"no"}}`,
		`{"jsonrpc":"2.0","id":1,"result":{}}`,
		`{"jsonrpc":"2.0","id":"s1","method":"roots/list"}`,
	}, "\n") + "\n"
	if toClient.String() != want {
		t.Fatalf("to the client:\n%s\nwant:\n%s", toClient.String(), want)
	}
	if len(m.client) != 0 {
		t.Fatalf("ids left after every answer: %v", m.client)
	}
}

func TestALineLongerThanTheBufferIsRelayedWhole(t *testing.T) {
	m := &ids{client: map[int64][]byte{}}
	text := strings.Repeat("x", 200<<10)
	var out bytes.Buffer
	relay(strings.NewReader(`{"jsonrpc":"2.0","id":"big","method":"tools/call","params":{"text":"`+text+`"}}`+"\n"), &out, m.request)
	want := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"text":"` + text + `"}}` + "\n"
	if out.String() != want {
		t.Fatalf("got %d bytes, want %d", out.Len(), len(want))
	}
}
