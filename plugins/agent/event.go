package agent

import (
	"bytes"
	"encoding/json"
	"time"
)

// Event types, in the order a turn produces them.
const (
	EventText       = "text"        // Delta: answer text, as it streams
	EventReasoning  = "reasoning"   // Delta: a thinking model's reasoning
	EventToolCall   = "tool_call"   // ID, Name, Arguments: a call about to run (Arguments as the model sent them when they are not JSON: the call then fails)
	EventToolResult = "tool_result" // ID, Name, Text, IsError, Duration
	EventRetry      = "retry"       // Message, Attempt, Wait: a request is sent again
	EventToolSearch = "tool_search" // Available, Sent, Loaded: a request in tool search mode is about to go
	EventUsage      = "usage"       // Usage: what the turn cost
	EventDone       = "done"        // FinishReason: the turn answered
	EventError      = "error"       // Message: the turn failed
)

// Event is what a turn reports as it runs. Its JSON form (one object per
// line for `harness ask --json`) starts with "type" and holds the fields of
// its type only:
//
//	{"type":"text","delta":"…"}
//	{"type":"reasoning","delta":"…"}
//	{"type":"tool_call","id":"…","name":"…","arguments":{…}}
//	{"type":"tool_result","id":"…","name":"…","text":"…","isError":false,"ms":12}
//	{"type":"retry","message":"…","attempt":1,"waitMs":500}
//	{"type":"tool_search","available":500,"sent":4,"loaded":3}
//	{"type":"usage","promptTokens":…,"completionTokens":…,"cacheHitTokens":…,"steps":…,"toolCalls":…,"ms":…}
//	{"type":"done","finishReason":"stop"}
//	{"type":"error","message":"…"}
type Event struct {
	Type  string
	Delta string
	// A tool call and its result.
	ID        string
	Name      string
	Arguments json.RawMessage // the JSON object sent to the tool
	Text      string
	IsError   bool
	Duration  time.Duration
	// A retry.
	Attempt int
	Wait    time.Duration
	// A step in tool search mode: the tools there are (after the filters),
	// how many the request sends (search_tools, the always-loaded ones and
	// those search_tools found) and how many of them search_tools found.
	Available, Sent, Loaded int
	// The end of a turn.
	Usage        Usage
	FinishReason string
	Message      string
}

// MarshalJSON writes the event's documented shape.
func (e Event) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	b.WriteString(`{"type":`)
	b.Write(marshal(e.Type))
	field := func(name string, v any) {
		b.WriteString(`,"` + name + `":`)
		b.Write(marshal(v))
	}
	switch e.Type {
	case EventText, EventReasoning:
		field("delta", e.Delta)
	case EventToolCall:
		field("id", e.ID)
		field("name", e.Name)
		args := e.Arguments
		if !json.Valid(args) {
			args = json.RawMessage("{}")
		}
		b.WriteString(`,"arguments":`)
		b.Write(args)
	case EventToolResult:
		field("id", e.ID)
		field("name", e.Name)
		field("text", e.Text)
		field("isError", e.IsError)
		field("ms", e.Duration.Milliseconds())
	case EventRetry:
		field("message", e.Message)
		field("attempt", e.Attempt)
		field("waitMs", e.Wait.Milliseconds())
	case EventToolSearch:
		field("available", e.Available)
		field("sent", e.Sent)
		field("loaded", e.Loaded)
	case EventUsage:
		u := e.Usage
		field("promptTokens", u.PromptTokens)
		field("completionTokens", u.CompletionTokens)
		field("cacheHitTokens", u.CacheHitTokens)
		field("steps", u.Steps)
		field("toolCalls", u.ToolCalls)
		field("ms", u.Duration.Milliseconds())
	case EventDone:
		field("finishReason", e.FinishReason)
	case EventError:
		field("message", e.Message)
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}
