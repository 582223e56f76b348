package agent

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"time"
	"unicode/utf8"
)

// What one model response may hold, assembled from its stream: a stream
// that brings more fails the turn with [ErrTooLarge], at once (the bytes
// over the bound are not kept) and without sending the request again. The
// bounds are 16 MiB, as for a line of the console or a message to the
// gateway: far above any context window (DeepSeek's 128K tokens are under
// 1 MiB of text), far below what would hurt the process.
const (
	// MaxReplyTextBytes bounds the text of one response: its answer and its
	// reasoning together.
	MaxReplyTextBytes = 16 << 20
	// MaxReplyCallBytes bounds the tool calls of one response: their
	// arguments, names and ids together.
	MaxReplyCallBytes = 16 << 20
	// MaxReplyToolCalls bounds how many tool calls one response makes.
	MaxReplyToolCalls = 1000
)

// reply is what one model request produced, assembled from its stream.
type reply struct {
	content   []byte
	reasoning []byte
	calls     []*callBuf // in the order of their index
	callBytes int        // the calls' arguments, names and ids together
	finish    string
	usage     Usage
	// emitted says text or reasoning reached the caller: from then on the
	// request is never sent again (the caller would see the text twice).
	emitted bool
	// How much of content and reasoning was emitted: an incomplete UTF-8
	// sequence at the end is held back until the next delta completes it.
	sentText, sentReasoning int
}

// callBuf is one tool call being assembled from its deltas.
type callBuf struct {
	index    int64
	id, name string
	args     []byte
}

// streamOnce sends one request and reads its stream to the end. Text and
// reasoning are emitted as they arrive, whole characters only (a character
// whose bytes two deltas split is emitted once complete).
func (a *Agent) streamOnce(ctx context.Context, body []byte, emit func(Event)) (*reply, error) {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	r := &reply{}
	resp, err := a.post(ctx, body)
	if err != nil {
		return r, err
	}
	defer resp.Body.Close()
	// The headers are in: from now on the stream may be silent for at most
	// the idle timeout between two events.
	idle := a.cfg.idleTimeout()
	timer := time.AfterFunc(idle, func() { cancel(errIdle) })
	defer timer.Stop()
	events := newEventReader(resp.Body)
	var tooLarge, readErr error
	for tooLarge == nil {
		data, err := events.next()
		if err != nil {
			readErr = err
			break
		}
		if data == nil || bytes.HasPrefix(data, doneEvent) {
			break // the end of the stream
		}
		timer.Reset(idle)
		var c chunk
		if err := json.Unmarshal(data, &c); err != nil {
			readErr = fmt.Errorf("a stream event is not a chat completion chunk: %w", err)
			break
		}
		if len(c.Error) > 0 && !bytes.Equal(c.Error, jsonNull) {
			readErr = &streamError{data: data}
			break
		}
		tooLarge = r.absorb(&c, emit)
	}
	r.flush(emit)
	if tooLarge != nil {
		return r, tooLarge // the deferred Close ends the stream
	}
	if cause := context.Cause(ctx); errors.Is(cause, errIdle) {
		return r, errIdle
	}
	if readErr != nil {
		return r, readErr
	}
	switch r.finish {
	case "":
		return r, errTruncated
	case finishNoResource:
		return r, errNoResource
	}
	return r, nil
}

// post sends body to the endpoint's /chat/completions and returns the
// response once its headers are in; a status of 400 or more is an
// [*httpError], its body read (bounded) and closed.
func (a *Agent) post(ctx context.Context, body []byte) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, a.url, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "text/event-stream")
	if a.cfg.APIKey != "" {
		req.Header.Set("Authorization", "Bearer "+a.cfg.APIKey)
	}
	resp, err := a.http.Do(req)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode >= 400 {
		defer resp.Body.Close()
		b, _ := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
		return nil, newHTTPError(resp, b)
	}
	return resp, nil
}

// chunk is one event of a chat completion stream: the fields the loop
// reads. Text fields keep their bytes as sent (see [rawString]).
type chunk struct {
	Choices []struct {
		Index int `json:"index"`
		Delta struct {
			Content   rawString `json:"content"`
			Reasoning rawString `json:"reasoning_content"` // DeepSeek's thinking
			ToolCalls []struct {
				Index    *int64 `json:"index"` // nil: the server numbers no call
				ID       string `json:"id"`
				Function struct {
					Name      string    `json:"name"`
					Arguments rawString `json:"arguments"`
				} `json:"function"`
			} `json:"tool_calls"`
		} `json:"delta"`
		FinishReason string `json:"finish_reason"`
	} `json:"choices"`
	Usage *struct {
		PromptTokens     int64 `json:"prompt_tokens"`
		CompletionTokens int64 `json:"completion_tokens"`
		// DeepSeek says prompt_cache_hit_tokens; OpenAI cached_tokens.
		PromptCacheHitTokens *int64 `json:"prompt_cache_hit_tokens"`
		PromptTokensDetails  struct {
			CachedTokens int64 `json:"cached_tokens"`
		} `json:"prompt_tokens_details"`
	} `json:"usage"`
	// Error, when not null, is an error the endpoint sent inside the stream.
	Error json.RawMessage `json:"error"`
}

var (
	doneEvent = []byte("[DONE]")
	jsonNull  = []byte("null")
)

// absorb adds one chunk of the stream; an error (wrapping [ErrTooLarge])
// when the response would hold more than its bounds allow.
func (r *reply) absorb(c *chunk, emit func(Event)) error {
	if u := c.Usage; u != nil {
		r.usage.PromptTokens, r.usage.CompletionTokens = u.PromptTokens, u.CompletionTokens
		if u.PromptCacheHitTokens != nil {
			r.usage.CacheHitTokens = *u.PromptCacheHitTokens
		} else {
			r.usage.CacheHitTokens = u.PromptTokensDetails.CachedTokens
		}
	}
	for i := range c.Choices {
		choice := &c.Choices[i]
		if choice.Index != 0 {
			continue // n is always 1: another choice is not ours
		}
		d := &choice.Delta
		if len(d.Reasoning) > 0 {
			if err := r.textFits(len(d.Reasoning)); err != nil {
				return err
			}
			r.reasoning = append(r.reasoning, d.Reasoning...)
			r.sentReasoning = r.emitWhole(EventReasoning, r.reasoning, r.sentReasoning, emit)
		}
		if len(d.Content) > 0 {
			if err := r.textFits(len(d.Content)); err != nil {
				return err
			}
			r.content = append(r.content, d.Content...)
			r.sentText = r.emitWhole(EventText, r.content, r.sentText, emit)
		}
		for j := range d.ToolCalls {
			tc := &d.ToolCalls[j]
			if err := r.callDelta(tc.Index, tc.ID, tc.Function.Name, tc.Function.Arguments); err != nil {
				return err
			}
		}
		if choice.FinishReason != "" {
			r.finish = choice.FinishReason
		}
	}
	return nil
}

// textFits says whether n more bytes of text or reasoning stay within
// MaxReplyTextBytes.
func (r *reply) textFits(n int) error {
	if len(r.content)+len(r.reasoning)+n > MaxReplyTextBytes {
		return fmt.Errorf("%w: its text and reasoning passed %d MiB, the most one response may carry", ErrTooLarge, MaxReplyTextBytes>>20)
	}
	return nil
}

// emitWhole emits buf from sent up to its last complete character and
// returns the new sent offset.
func (r *reply) emitWhole(typ string, buf []byte, sent int, emit func(Event)) int {
	end := wholeEnd(buf, sent)
	if end > sent {
		r.emitted = true
		emit(Event{Type: typ, Delta: string(buf[sent:end])})
	}
	return max(end, sent)
}

// wholeEnd returns the end of buf without an incomplete UTF-8 sequence at
// its end; bytes that can never complete (invalid ones) are not held.
func wholeEnd(buf []byte, from int) int {
	end := len(buf)
	// An incomplete sequence starts at most 3 bytes before the end.
	for i := end - 1; i >= from && i >= end-3; i-- {
		if utf8.RuneStart(buf[i]) {
			if !utf8.FullRune(buf[i:end]) {
				return i
			}
			break
		}
	}
	return end
}

// flush emits what is held back at the end of a stream, as it is.
func (r *reply) flush(emit func(Event)) {
	if r.sentReasoning < len(r.reasoning) {
		r.emitted = true
		emit(Event{Type: EventReasoning, Delta: string(r.reasoning[r.sentReasoning:])})
		r.sentReasoning = len(r.reasoning)
	}
	if r.sentText < len(r.content) {
		r.emitted = true
		emit(Event{Type: EventText, Delta: string(r.content[r.sentText:])})
		r.sentText = len(r.content)
	}
}

// callDelta adds a tool-call delta: the call is keyed by its index; its id
// and name come with its first delta, its arguments in fragments to
// concatenate. A server that numbers no call (no index) starts a new call
// with each new id. A delta that would take the calls past
// MaxReplyCallBytes or MaxReplyToolCalls is an error.
func (r *reply) callDelta(numbered *int64, id, name string, args []byte) error {
	var index int64
	switch last := len(r.calls) - 1; {
	case numbered != nil:
		index = *numbered
	case last >= 0 && (id == "" || id == r.calls[last].id):
		index = r.calls[last].index
	default:
		index = int64(len(r.calls))
		for _, c := range r.calls {
			index = max(index, c.index+1)
		}
	}
	var c *callBuf
	for _, x := range r.calls {
		if x.index == index {
			c = x
			break
		}
	}
	if c == nil {
		if len(r.calls) >= MaxReplyToolCalls {
			return fmt.Errorf("%w: it made more than %d tool calls, the most one response may make", ErrTooLarge, MaxReplyToolCalls)
		}
		c = &callBuf{index: index}
		r.calls = append(r.calls, c)
		slices.SortStableFunc(r.calls, func(a, b *callBuf) int { return cmp.Compare(a.index, b.index) })
	}
	n := len(args)
	if c.id == "" {
		n += len(id)
	}
	if c.name == "" {
		n += len(name)
	}
	if r.callBytes+n > MaxReplyCallBytes {
		return fmt.Errorf("%w: its tool calls' arguments passed %d MiB, the most one response may carry", ErrTooLarge, MaxReplyCallBytes>>20)
	}
	r.callBytes += n
	if c.id == "" {
		c.id = id
	}
	if c.name == "" {
		c.name = name
	}
	c.args = append(c.args, args...)
	return nil
}

// toolCalls returns the assembled calls; a call the server gave no id gets
// one, so its result can answer it.
func (r *reply) toolCalls(step int) []ToolCall {
	if len(r.calls) == 0 {
		return nil
	}
	out := make([]ToolCall, len(r.calls))
	for i, c := range r.calls {
		id := c.id
		if id == "" {
			id = fmt.Sprintf("call_%d_%d", step, c.index)
		}
		out[i] = ToolCall{ID: id, Name: c.name, Arguments: string(c.args)}
	}
	return out
}
