package agent

import (
	"bytes"
	"encoding/json"
	"time"
)

// Roles of the messages of a conversation.
const (
	RoleUser      = "user"
	RoleAssistant = "assistant"
	RoleTool      = "tool"
)

// Message is one message of a conversation, in the chat-completions shape.
type Message struct {
	Role string
	// Content is the text of a user or assistant message, or a tool's
	// result as the model reads it.
	Content string
	// Reasoning is what a thinking model produced before its answer. It is
	// sent back on assistant messages that carry tool calls (DeepSeek's
	// thinking mode refuses a tool-call history without it).
	Reasoning string
	// ToolCalls are the calls an assistant message asks for.
	ToolCalls []ToolCall
	// ToolCallID and Name say which call a tool message answers.
	ToolCallID string
	Name       string

	// wire caches the message's encoding; emptyReasoning is the variant it
	// was encoded for (see Config.sendsEmptyReasoning).
	wire           []byte
	emptyReasoning bool
}

// ToolCall is one call an assistant message asks for.
type ToolCall struct {
	ID   string
	Name string
	// Arguments is the JSON text the model produced, as it produced it.
	Arguments string
}

// Conversation is the history of a chat: what the user said, what the model
// answered, the calls it made and their results. It belongs to whoever talks
// (the CLI keeps one per console), not to an agent instance, so it survives
// an edit of the agent's entry and can move from one agent to another.
//
// A Conversation is not safe for concurrent use: run one turn at a time.
type Conversation struct {
	msgs  []Message
	usage Usage
	turns int
	// loaded are the tools search_tools found (tool search mode), sent
	// from then on; loadOrder is the order they were loaded in, the oldest
	// first to go when maxTools leaves no room.
	loaded    map[string]bool
	loadOrder []string
}

// Messages returns the messages so far. The caller must not modify them.
func (c *Conversation) Messages() []Message { return c.msgs }

// Len returns the number of messages.
func (c *Conversation) Len() int { return len(c.msgs) }

// Turns returns the number of turns started.
func (c *Conversation) Turns() int { return c.turns }

// Usage returns the usage of every turn so far, added up.
func (c *Conversation) Usage() Usage { return c.usage }

// Loaded returns the tools search_tools loaded in this conversation, in
// the order they were loaded (tool search mode sends them at every step).
func (c *Conversation) Loaded() []string { return append([]string(nil), c.loadOrder...) }

// Reset forgets everything: the next turn starts a new conversation.
func (c *Conversation) Reset() { *c = Conversation{} }

func (c *Conversation) add(m Message) { c.msgs = append(c.msgs, m) }

// wireBytes is what the messages take in a request, encoded (the commas
// between them included), each encoding cached for the next request.
func (c *Conversation) wireBytes(emptyReasoning bool) int {
	n := 0
	for i := range c.msgs {
		n += len(c.msgs[i].encode(emptyReasoning)) + 1
	}
	return n
}

// Usage is what a turn (or a conversation) cost.
type Usage struct {
	PromptTokens     int64
	CompletionTokens int64
	// CacheHitTokens are prompt tokens the provider served from its cache
	// (DeepSeek's prompt_cache_hit_tokens, OpenAI's cached_tokens).
	CacheHitTokens int64
	Steps          int // model requests that answered
	ToolCalls      int
	Duration       time.Duration
}

func (u *Usage) add(o Usage) {
	u.PromptTokens += o.PromptTokens
	u.CompletionTokens += o.CompletionTokens
	u.CacheHitTokens += o.CacheHitTokens
	u.Steps += o.Steps
	u.ToolCalls += o.ToolCalls
	u.Duration += o.Duration
}

// wireToolCall is a tool call as the API takes it.
type wireToolCall struct {
	ID       string `json:"id"`
	Type     string `json:"type"`
	Function struct {
		Name      string `json:"name"`
		Arguments string `json:"arguments"`
	} `json:"function"`
}

// encode returns the message as the API takes it, cached.
func (m *Message) encode(emptyReasoning bool) []byte {
	if m.wire != nil && m.emptyReasoning == emptyReasoning {
		return m.wire
	}
	type wire struct {
		Role       string         `json:"role"`
		Content    string         `json:"content"`
		Reasoning  *string        `json:"reasoning_content,omitempty"`
		ToolCalls  []wireToolCall `json:"tool_calls,omitempty"`
		ToolCallID string         `json:"tool_call_id,omitempty"`
	}
	w := wire{Role: m.Role, Content: m.Content, ToolCallID: m.ToolCallID}
	if len(m.ToolCalls) > 0 {
		w.ToolCalls = make([]wireToolCall, len(m.ToolCalls))
		for i, tc := range m.ToolCalls {
			w.ToolCalls[i].ID, w.ToolCalls[i].Type = tc.ID, "function"
			w.ToolCalls[i].Function.Name, w.ToolCalls[i].Function.Arguments = tc.Name, tc.Arguments
		}
		if m.Reasoning != "" || emptyReasoning {
			r := m.Reasoning
			w.Reasoning = &r
		}
	}
	m.wire, m.emptyReasoning = marshal(w), emptyReasoning
	return m.wire
}

// marshal encodes v without HTML escaping and without a trailing newline.
func marshal(v any) []byte {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(v) // our own types: cannot fail
	return bytes.TrimSuffix(b.Bytes(), []byte("\n"))
}
