package agent

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/harness-go/harness/internal/safe"
	"github.com/harness-go/harness/plugins/tools"
)

// Run runs one turn of conv: prompt becomes the user's message; then, step
// by step, the model is asked with the tools the registry holds at that
// moment, the tool calls it makes run (concurrently, bounded by
// maxParallelToolCalls) and their results go back to it, until it answers
// without calling a tool. emit receives the turn's events, one at a time,
// ending with usage and then done or error.
//
// On failure the error names the entry and the cause, and wraps one of the
// Err values of this package; the conversation keeps what completed (a
// cancelled step's calls answered "Error: cancelled", the text the user saw).
// The turn ends early when ctx does ([ErrCancelled]) or when the agent's
// entry is disposed ([ErrStopped]).
func (a *Agent) Run(ctx context.Context, conv *Conversation, prompt string, emit func(Event)) (Usage, error) {
	var mu sync.Mutex
	emitOne := func(e Event) {
		mu.Lock()
		defer mu.Unlock()
		emit(e)
	}
	start := time.Now()
	var u Usage
	fail := func(err error) (Usage, error) {
		err = a.secrets.Err(err)
		u.Duration = time.Since(start)
		conv.usage.add(u)
		emitOne(Event{Type: EventUsage, Usage: u})
		emitOne(Event{Type: EventError, Message: err.Error()})
		return u, err
	}
	if a.cfg.MissingKey() {
		return fail(fmt.Errorf("entry %q: %w: %s needs one and %s", a.id, ErrNoKey, a.cfg.endpoint(), a.noKey()))
	}
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	stop := context.AfterFunc(a.life, func() { cancel(ErrStopped) })
	defer stop()

	conv.turns++
	mark := conv.Len()
	conv.add(Message{Role: RoleUser, Content: prompt})
	for step := 1; ; step++ {
		if step > a.cfg.MaxSteps {
			return fail(fmt.Errorf("entry %q: %w: the model made %d requests in this turn without answering (maxSteps)", a.id, ErrMaxSteps, a.cfg.MaxSteps))
		}
		if size := a.messageBytes(conv); size > a.cfg.MaxConversationBytes {
			keepSeen(conv, mark, nil)
			return fail(a.conversationTooLarge("the next request would carry", size, ""))
		}
		st, err := a.stepTools(conv)
		if err != nil {
			keepSeen(conv, mark, nil)
			return fail(err)
		}
		if st.set != nil {
			emitOne(Event{Type: EventToolSearch, Available: len(st.set.list) + st.own, Sent: st.n, Loaded: st.loaded})
		}
		r, err := a.request(ctx, a.body(conv, st.list, st.n), emitOne)
		u.PromptTokens += r.usage.PromptTokens
		u.CompletionTokens += r.usage.CompletionTokens
		u.CacheHitTokens += r.usage.CacheHitTokens
		if err != nil {
			keepSeen(conv, mark, r)
			return fail(err)
		}
		u.Steps++
		msg := Message{Role: RoleAssistant, Content: string(r.content), Reasoning: string(r.reasoning), ToolCalls: r.toolCalls(step)}
		if len(msg.ToolCalls) > 0 {
			// Calls whose results could never be sent are not run.
			if size := a.messageBytes(conv) + len(msg.encode(a.cfg.sendsEmptyReasoning())) + 1; size > a.cfg.MaxConversationBytes {
				keepSeen(conv, mark, r)
				return fail(a.conversationTooLarge("the model's tool calls would take the messages to", size, "; its calls did not run"))
			}
		}
		conv.add(msg)
		if len(msg.ToolCalls) == 0 {
			u.Duration = time.Since(start)
			conv.usage.add(u)
			emitOne(Event{Type: EventUsage, Usage: u})
			emitOne(Event{Type: EventDone, FinishReason: r.finish})
			return u, nil
		}
		u.ToolCalls += len(msg.ToolCalls)
		for _, res := range a.runCalls(ctx, msg.ToolCalls, a.newLoader(conv, st), emitOne) {
			conv.add(res)
		}
		if ctx.Err() != nil {
			return fail(a.classify(ctx, ctx.Err()).err)
		}
	}
}

// keepSeen leaves the conversation of a turn that failed with what the
// user saw: the text of the failed step r (nil: none) as the assistant's
// message; a turn that produced nothing leaves no dangling question.
func keepSeen(conv *Conversation, mark int, r *reply) {
	switch {
	case r != nil && len(r.content) > 0:
		conv.add(Message{Role: RoleAssistant, Content: string(r.content)})
	case conv.Len() == mark+1:
		conv.msgs = conv.msgs[:mark]
	}
}

// messageBytes is what the conversation's messages, the system prompt
// first, take in a request.
func (a *Agent) messageBytes(conv *Conversation) int {
	n := conv.wireBytes(a.cfg.sendsEmptyReasoning())
	if len(a.system) > 0 {
		n += len(a.system) + 1
	}
	return n
}

func (a *Agent) conversationTooLarge(what string, size int, after string) error {
	have, most := byteSize(size), byteSize(a.cfg.MaxConversationBytes)
	if have == most { // rounded alike: say how far apart
		have, most = strconv.Itoa(size)+" bytes", strconv.Itoa(a.cfg.MaxConversationBytes)+" bytes"
	}
	return fmt.Errorf("entry %q: %w: %s %s of messages, more than maxConversationBytes (%s)%s",
		a.id, ErrConversationTooLarge, what, have, most, after)
}

// byteSize writes n for people: bytes, KiB or MiB.
func byteSize(n int) string {
	switch {
	case n >= 1<<20:
		return strconv.FormatFloat(float64(n)/(1<<20), 'f', 1, 64) + " MiB"
	case n >= 1<<10:
		return strconv.FormatFloat(float64(n)/(1<<10), 'f', 1, 64) + " KiB"
	}
	return strconv.Itoa(n) + " bytes"
}

func (a *Agent) tooManyTools(n int) error {
	return fmt.Errorf("entry %q: %w: %d tools would be sent and the model takes at most %d (maxTools)", a.id, ErrTooManyTools, n, a.cfg.MaxTools)
}

// body encodes one request: the messages from the cache of each, the tools
// exactly as the registry holds them.
func (a *Agent) body(conv *Conversation, tools []byte, n int) []byte {
	empty := a.cfg.sendsEmptyReasoning()
	size := len(tools) + 256 + a.messageBytes(conv)
	b := bytes.NewBuffer(make([]byte, 0, size)) // one allocation: the body is sent as it is
	b.WriteString(`{"stream":true,"stream_options":{"include_usage":true},"model":`)
	b.Write(marshal(a.cfg.Model))
	b.WriteString(`,"messages":[`)
	first := true
	if len(a.system) > 0 {
		b.Write(a.system)
		first = false
	}
	for i := range conv.msgs {
		if !first {
			b.WriteByte(',')
		}
		first = false
		b.Write(conv.msgs[i].encode(empty))
	}
	b.WriteByte(']')
	if n > 0 {
		b.WriteString(`,"tools":`)
		b.Write(tools) // byte for byte: no re-encoding of any schema
	}
	if a.cfg.MaxTokens > 0 {
		b.WriteString(`,"max_tokens":` + strconv.Itoa(a.cfg.MaxTokens))
	}
	if t := a.cfg.Temperature; t != nil {
		b.WriteString(`,"temperature":` + strconv.FormatFloat(*t, 'g', -1, 64))
	}
	switch a.cfg.Thinking {
	case ThinkingOff:
		b.WriteString(`,"thinking":{"type":"disabled"}`)
	case ThinkingOn:
		b.WriteString(`,"thinking":{"type":"enabled"}`)
	case ThinkingLow, ThinkingHigh, ThinkingMax:
		b.WriteString(`,"thinking":{"type":"enabled"},"reasoning_effort":"` + a.cfg.Thinking + `"`)
	}
	b.WriteByte('}')
	return b.Bytes()
}

// request sends one step's request, again after a failure that may pass
// (429, 5xx, a reset, insufficient_system_resource) as long as nothing of
// the answer reached the caller, up to retries times with backoff.
func (a *Agent) request(ctx context.Context, body []byte, emit func(Event)) (*reply, error) {
	for attempt := 0; ; attempt++ {
		r, err := a.streamOnce(ctx, body, emit)
		if err == nil {
			return r, nil
		}
		f := a.classify(ctx, err)
		if !f.retry || r.emitted || attempt >= a.cfg.Retries {
			return r, f.err
		}
		wait := a.backoff(attempt)
		if f.after > wait {
			wait = min(f.after, time.Minute)
		}
		msg := a.secrets.Redact(f.err.Error())
		a.log.Info("model request failed; sending it again", "attempt", attempt+1, "retries", a.cfg.Retries, "in", wait, "err", msg)
		emit(Event{Type: EventRetry, Message: msg, Attempt: attempt + 1, Wait: wait})
		t := time.NewTimer(wait)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return r, a.classify(ctx, ctx.Err()).err
		}
	}
}

// runCalls runs the calls of one step, at most maxParallelToolCalls at once,
// and returns their results in the order of the calls.
func (a *Agent) runCalls(ctx context.Context, calls []ToolCall, ld *loader, emit func(Event)) []Message {
	out := make([]Message, len(calls))
	args := make([]json.RawMessage, len(calls))
	argErrs := make([]error, len(calls))
	// Every call is announced before any result: a reader of the events
	// knows how many calls the step made.
	for i, c := range calls {
		args[i], argErrs[i] = normalizeArgs(c.Arguments)
		shown := args[i]
		if argErrs[i] != nil {
			// What the model sent, for the transcript; the call is not
			// made (and a JSON event carries {}).
			shown = json.RawMessage(c.Arguments)
		}
		emit(Event{Type: EventToolCall, ID: c.ID, Name: c.Name, Arguments: shown})
	}
	sem := make(chan struct{}, a.cfg.MaxParallelToolCalls)
	var wg sync.WaitGroup
	for i, c := range calls {
		wg.Add(1)
		go func() {
			defer wg.Done()
			start := time.Now()
			res, ran := tools.Result{}, false
			select {
			case sem <- struct{}{}:
				res, ran = a.call(ctx, c.Name, args[i], argErrs[i], ld), true
				<-sem
			case <-ctx.Done():
			}
			// A call the cancel kept from running, or cut short (its error
			// is the cancel's), answers so; one that finished as the
			// cancel landed keeps its result.
			if ctx.Err() != nil && (!ran || res.IsError) {
				res = tools.Result{Text: "Error: cancelled", IsError: true}
			}
			text := a.budget(res.Text)
			out[i] = Message{Role: RoleTool, ToolCallID: c.ID, Name: c.Name, Content: text}
			emit(Event{Type: EventToolResult, ID: c.ID, Name: c.Name, Text: text, IsError: res.IsError, Duration: time.Since(start)})
		}()
	}
	wg.Wait()
	return out
}

// call runs one tool through the registry. A tool the agent's filters hide
// is unknown to it; arguments that are not JSON are the model's to fix. In
// tool search mode (ld not nil) search_tools is the agent's own, and a tool
// called without having been sent is loaded from the next step on.
func (a *Agent) call(ctx context.Context, name string, args json.RawMessage, argErr error, ld *loader) tools.Result {
	switch {
	case argErr != nil:
		return tools.Result{Text: "Error: the arguments are not valid JSON (" + argErr.Error() + "); send one JSON object", IsError: true}
	case ld != nil && name == SearchToolName:
		return ld.searchTools(args)
	case a.isResourceTool(name):
		return a.resourceCall(ctx, name, args)
	case a.keep != nil && !a.keep(name):
		return tools.Result{Text: fmt.Sprintf("Error: unknown tool %q", name), IsError: true}
	}
	ld.called(name)
	return a.reg.Execute(ctx, name, args)
}

// normalizeArgs returns the arguments to send: "" or JSON that is not an
// object becomes {} (as `harness call` does); text that is not JSON is an
// error.
func normalizeArgs(s string) (json.RawMessage, error) {
	b := bytes.TrimSpace([]byte(s))
	if len(b) == 0 {
		return json.RawMessage("{}"), nil
	}
	if !json.Valid(b) {
		var v any
		err := json.Unmarshal(b, &v)
		if err == nil {
			err = errors.New("invalid JSON")
		}
		return json.RawMessage("{}"), err
	}
	return tools.ObjectArgs(b), nil
}

// budget cuts a result longer than toolResultBytes, at a character
// boundary, and says so.
func (a *Agent) budget(text string) string {
	max := a.cfg.ToolResultBytes
	if len(text) <= max {
		return text
	}
	cut := safe.Cut(text, max)
	return cut + fmt.Sprintf("\n[the agent cut this result to %d of its %d bytes (toolResultBytes)]", len(cut), len(text))
}
