package mcpserver

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/harness-go/harness/plugins/tools"
)

// Questions of a call from a 2026-07-28 client (SEP-2322, multi round-trip
// requests). That revision has no server-to-client requests: a server that
// needs input answers the call with an input_required result, and the
// client calls again with the answers and the result's requestState. The
// gateway's call, meanwhile, is waiting in its tool's Ask — an MCP backend
// waits for the bridge's answer to its own elicitation — so the call is
// parked rather than ended:
//
//  1. A tools/call without requestState starts the call (on the gateway's
//     lifetime, not the request's) with a parked front. When the call
//     finishes, its result is the answer; when its tool asks, the answer is
//     input_required with the questions pending (keyed by Question.ID when
//     the asker named them) and a requestState that names the call.
//  2. The state is signed (HMAC-SHA-256 with a key each gateway draws at
//     start) over the call's id, the round, the tool and an expiry: a state
//     that was changed, belongs to another tool, to an earlier round, or has
//     expired is refused with -32602, as is a call that has ended.
//  3. The retry answers the questions it has answers for (each checked: a
//     JSON object, an elicitation's action one of accept/decline/cancel),
//     extra keys are ignored, and the call goes on: what it asks next, or a
//     question still unanswered, is a new input_required; its end is the
//     result.
//  4. A parked call that nobody resumes within Options.InputTimeout is
//     cancelled (its backend is told), and so is one whose client went away
//     while it waited on it, and every one when the gateway stops. At most
//     Options.MaxParked wait at once.
//  5. A prompts/get is parked the same way (its prompt may ask: a native
//     prompt through tools.Ask, a server's prompt with its server's
//     input_required), its requestState naming the prompt: a tool's state
//     does not resume a prompt, nor the other way round
//     (docs/rfc/0008-resources-prompts.md, "Through the gateway").

// DefaultInputTimeout is how long a call that asked its 2026-07-28 client
// for input waits for the client's retry.
const DefaultInputTimeout = 10 * time.Minute

// DefaultMaxParked bounds the calls waiting for a client's input at once.
const DefaultMaxParked = 1000

// parkedCalls are the calls waiting for their client's input.
type parkedCalls struct {
	key []byte // signs requestState

	mu      sync.Mutex
	calls   map[string]*parked
	stopped bool           // stopAll began: calls started now are not waited for
	wg      sync.WaitGroup // every call started before, until it returns
}

func newParkedCalls() *parkedCalls {
	key := make([]byte, 32)
	if _, err := rand.Read(key); err != nil {
		panic("gateway: no randomness for the requestState key: " + err.Error())
	}
	return &parkedCalls{key: key, calls: map[string]*parked{}}
}

// parked is one call of a 2026-07-28 client whose tool (or prompt) may
// ask.
type parked struct {
	id      string
	subject string // what runs: `tool "x"`, `prompt "x"`; the requestState names it
	cancel  context.CancelCauseFunc
	done    chan struct{} // closed when the call returned; result is set then
	result  any           // what run returned

	mu       sync.Mutex
	round    int
	caps     mcp.ClientCapabilities     // of the request that waits, or waited last
	missing  string                     // a capability a question needed and the client lacked
	pending  map[string]*question       // asked, not answered
	order    []string                   // pending keys, as asked
	asked    chan struct{}              // closed (and replaced) when questions are added
	waiter   context.Context            // the request waiting on the call: where notifications go
	token    mcp.ProgressToken          // its progressToken
	expiry   time.Time                  // of the state the client holds
	timer    *time.Timer                // ends the call when no retry comes in time
	listed   bool                       // in parkedCalls.calls
	sequence int                        // numbers keys the askers did not name
	given    map[string]json.RawMessage // answers the first request carried, by key
}

// question is a question waiting for the client's answer.
type question struct {
	key    string
	q      tools.Question
	answer chan json.RawMessage // buffered: the retry never waits for the asker
}

// executeModern serves a tools/call of a 2026-07-28 client.
func (g *Gateway) executeModern(ctx context.Context, req mcp.CallToolRequest, name string, args json.RawMessage) (*mcp.CallToolResult, error) {
	run := func(ctx context.Context) any { return g.reg.Execute(tools.WithRawResult(ctx), name, args) }
	p, err := g.resumeOrStart(ctx, toolSubject(name), req.Params.MultiRoundTripParams, progressToken(req), run)
	if err != nil {
		return nil, err
	}
	more, err := g.await(ctx, p)
	if err != nil {
		return nil, err
	}
	if more != nil {
		return &mcp.CallToolResult{
			Result:               mcp.Result{ResultType: mcp.ResultTypeInputRequired},
			MultiRoundTripResult: *more,
			Content:              []mcp.Content{},
		}, nil
	}
	res := p.result.(tools.Result)
	if err := g.missingCapability(ctx, p, res.IsError); err != nil {
		return nil, err
	}
	return toResult(res), nil
}

func toolSubject(name string) string   { return fmt.Sprintf("tool %q", name) }
func promptSubject(name string) string { return fmt.Sprintf("prompt %q", name) }

// resumeOrStart is the parked call a 2026-07-28 request of subject goes
// on: the one its requestState names, with its answers given, or a new
// one that runs run. An error is the request's -32602.
func (g *Gateway) resumeOrStart(ctx context.Context, subject string, mr mcp.MultiRoundTripParams, token mcp.ProgressToken, run func(context.Context) any) (*parked, error) {
	caps := mcp.ClientCapabilities{}
	if info := server.RequestProtocolInfoFromContext(ctx); info != nil && info.ClientCapabilities != nil {
		caps = *info.ClientCapabilities
	}
	if mr.RequestState == "" {
		return g.parked.start(g, ctx, subject, run, caps, token, mr.InputResponses), nil
	}
	p, err := g.parked.resume(mr.RequestState, subject)
	if err != nil {
		return nil, g.fail(ctx, mcp.INVALID_PARAMS, err.Error(), nil)
	}
	if !p.attach(ctx, caps, token) {
		return nil, g.fail(ctx, mcp.INVALID_PARAMS, "requestState: another request is already resuming this call", nil)
	}
	if err := p.answer(mr.InputResponses); err != nil {
		p.detach(g, p.expiry) // the state the client holds stays good
		return nil, g.fail(ctx, mcp.INVALID_PARAMS, "inputResponses: "+err.Error(), nil)
	}
	return p, nil
}

// start runs run (a tool's call, a prompt's rendering) in a call of its
// own, parked when it asks; the request rctx waits on it from the start
// (what the call reports at once reaches it). Answers the first request
// already carries (a client that answers without a requestState, as to a
// server that keeps none) answer the questions whose asker named them so,
// as they are asked.
func (pc *parkedCalls) start(g *Gateway, rctx context.Context, subject string, run func(context.Context) any, caps mcp.ClientCapabilities, token mcp.ProgressToken, given mcp.InputResponses) *parked {
	idb := make([]byte, 16)
	_, _ = rand.Read(idb)
	p := &parked{
		id:      hex.EncodeToString(idb),
		subject: subject,
		done:    make(chan struct{}),
		caps:    caps,
		pending: map[string]*question{},
		asked:   make(chan struct{}),
		given:   map[string]json.RawMessage{},
		waiter:  rctx,
		token:   token,
	}
	for key, r := range given {
		if raw, err := json.Marshal(r); err == nil {
			p.given[key] = raw
		}
	}
	ctx, cancel := context.WithCancelCause(g.life)
	p.cancel = cancel
	ctx = tools.WithFront(ctx, &parkedFront{g: g, p: p})
	pc.mu.Lock()
	counted := !pc.stopped // a call that starts as the gateway stops ends at once (its context)
	if counted {
		pc.wg.Add(1)
	}
	pc.mu.Unlock()
	go func() {
		if counted {
			defer pc.wg.Done()
		}
		defer cancel(nil)
		p.result = run(ctx)
		close(p.done)
	}()
	return p
}

// await waits on p for the request ctx: nil when the call ended (its
// result is p.result), or its pending questions, for an input_required
// result.
func (g *Gateway) await(ctx context.Context, p *parked) (*mcp.MultiRoundTripResult, error) {
	for {
		p.mu.Lock()
		asked, pending := p.asked, len(p.pending)
		p.mu.Unlock()
		if pending > 0 {
			select {
			case <-p.done: // it ended while a question was pending (its context)
			default:
				return g.inputRequired(ctx, p)
			}
		}
		select {
		case <-p.done:
			g.parked.remove(p)
			p.mu.Lock()
			p.waiter = nil
			p.mu.Unlock()
			return nil, nil
		case <-asked:
		case <-ctx.Done():
			// The client went away, or cancelled, while it waited: the
			// call ends with its request.
			p.cancel(fmt.Errorf("the client's request ended: %w", context.Cause(ctx)))
			g.parked.remove(p)
			<-p.done
			return nil, context.Cause(ctx)
		}
	}
}

// missingCapability is -32021 for a call that ended failed after a
// question the client had not declared the capability for; nil otherwise.
func (g *Gateway) missingCapability(ctx context.Context, p *parked, failed bool) error {
	p.mu.Lock()
	missing := p.missing
	p.mu.Unlock()
	if missing != "" && failed {
		return g.fail(ctx, mcp.MISSING_REQUIRED_CLIENT_CAPABILITY,
			fmt.Sprintf("the tool needs the client capability %q, which this request did not declare (_meta %s)", missing, mcp.MetaKeyClientCapabilities),
			// requiredCapabilities as the specification's error has it;
			// capability as mcp-go's client reads it.
			map[string]any{"requiredCapabilities": map[string]any{missing: map[string]any{}}, "capability": missing})
	}
	return nil
}

// inputRequired returns the questions pending on p, with the state of the
// round, and parks it until the retry.
func (g *Gateway) inputRequired(ctx context.Context, p *parked) (*mcp.MultiRoundTripResult, error) {
	if !g.parked.list(p, g.opts.MaxParked) {
		p.cancel(errors.New("too many calls wait for their client's input"))
		<-p.done
		return nil, g.fail(ctx, mcp.INTERNAL_ERROR, fmt.Sprintf("the gateway has %d calls waiting for their clients' input, the most it keeps: answer or cancel those first", g.opts.MaxParked), nil)
	}
	p.mu.Lock()
	requests := make(mcp.InputRequests, len(p.pending))
	for _, key := range p.order {
		q := p.pending[key]
		ir, err := inputRequest(q.q)
		if err != nil {
			// The asker's params do not make a request: the question
			// fails, not the call.
			delete(p.pending, key)
			q.answer <- nil
			continue
		}
		requests[key] = ir
	}
	p.order = keepPending(p.pending, p.order)
	p.round++
	round := p.round
	p.mu.Unlock()
	if len(requests) == 0 {
		return g.await(ctx, p)
	}
	expiry := time.Now().Add(g.opts.InputTimeout)
	state := g.parked.sign(p.id, round, p.subject, expiry)
	p.detach(g, expiry)
	return &mcp.MultiRoundTripResult{InputRequests: requests, RequestState: state}, nil
}

// keepPending keeps the keys of order still in pending.
func keepPending(pending map[string]*question, order []string) []string {
	out := order[:0]
	for _, k := range order {
		if _, ok := pending[k]; ok {
			out = append(out, k)
		}
	}
	return out
}

// inputRequest is the MCP input request for q.
func inputRequest(q tools.Question) (mcp.InputRequest, error) {
	switch q.Method {
	case tools.MethodElicit:
		p, err := elicitParams(q.Params)
		if err != nil {
			return mcp.InputRequest{}, err
		}
		return mcp.NewElicitationInputRequest(p), nil
	case tools.MethodSample:
		var p mcp.CreateMessageParams
		if err := json.Unmarshal(q.Params, &p); err != nil {
			return mcp.InputRequest{}, err
		}
		return mcp.NewSamplingInputRequest(p), nil
	case tools.MethodRoots:
		return mcp.NewRootsInputRequest(), nil
	}
	return mcp.InputRequest{}, fmt.Errorf("no input request for %q", q.Method)
}

// attach makes the request ctx the one waiting on p (notifications go to
// it); false if another request waits already.
func (p *parked) attach(ctx context.Context, caps mcp.ClientCapabilities, token mcp.ProgressToken) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.waiter != nil {
		return false
	}
	if p.timer != nil {
		p.timer.Stop()
		p.timer = nil
	}
	p.waiter, p.caps, p.token = ctx, caps, token
	return true
}

// detach parks p: no request waits on it, and it ends unless one comes
// back before expiry.
func (p *parked) detach(g *Gateway, expiry time.Time) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.waiter, p.token, p.expiry = nil, nil, expiry
	if p.timer != nil {
		p.timer.Stop()
	}
	p.timer = time.AfterFunc(time.Until(expiry), func() {
		p.cancel(fmt.Errorf("the client did not come back with its input within %s", g.opts.InputTimeout))
		g.parked.remove(p)
	})
}

// answer delivers the client's answers to the questions they name; keys
// that name none are ignored. An answer that does not fit its question
// refuses them all.
func (p *parked) answer(responses mcp.InputResponses) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	got := map[string]json.RawMessage{}
	for key, q := range p.pending {
		r, ok := responses[key]
		if !ok {
			continue
		}
		raw, err := json.Marshal(r)
		if err != nil {
			return fmt.Errorf("%q: %w", key, err)
		}
		if err := checkAnswer(q.q.Method, raw); err != nil {
			return fmt.Errorf("%q: %w", key, err)
		}
		got[key] = raw
	}
	for key, raw := range got {
		p.pending[key].answer <- raw
		delete(p.pending, key)
	}
	p.order = keepPending(p.pending, p.order)
	return nil
}

// checkAnswer checks that raw can answer a question of method.
func checkAnswer(method string, raw json.RawMessage) error {
	var obj map[string]json.RawMessage
	if json.Unmarshal(raw, &obj) != nil || obj == nil {
		return errors.New("not a JSON object")
	}
	switch method {
	case tools.MethodElicit:
		var a struct {
			Action string `json:"action"`
		}
		_ = json.Unmarshal(raw, &a)
		if a.Action != "accept" && a.Action != "decline" && a.Action != "cancel" {
			return fmt.Errorf("an elicitation result's action must be accept, decline or cancel, not %q", a.Action)
		}
	case tools.MethodRoots:
		if _, ok := obj["roots"]; !ok {
			return errors.New("a roots/list result needs roots")
		}
	case tools.MethodSample:
		if _, ok := obj["content"]; !ok {
			return errors.New("a sampling result needs content")
		}
	}
	return nil
}

// list records p among the parked calls, unless max are there already.
func (pc *parkedCalls) list(p *parked, max int) bool {
	pc.mu.Lock()
	defer pc.mu.Unlock()
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.listed {
		return true
	}
	if len(pc.calls) >= max {
		return false
	}
	pc.calls[p.id], p.listed = p, true
	return true
}

// remove takes p off the parked calls.
func (pc *parkedCalls) remove(p *parked) {
	pc.mu.Lock()
	defer pc.mu.Unlock()
	if pc.calls[p.id] == p {
		delete(pc.calls, p.id)
	}
	p.mu.Lock()
	if p.timer != nil {
		p.timer.Stop()
		p.timer = nil
	}
	p.mu.Unlock()
}

// stopAll cancels every parked call and waits for every call started.
func (pc *parkedCalls) stopAll(cause error) {
	pc.mu.Lock()
	pc.stopped = true
	calls := make([]*parked, 0, len(pc.calls))
	for _, p := range pc.calls {
		calls = append(calls, p)
	}
	pc.mu.Unlock()
	for _, p := range calls {
		p.cancel(cause)
		pc.remove(p)
	}
	pc.wg.Wait()
}

// stateClaims is what a requestState says.
type stateClaims struct {
	Call    string `json:"c"`
	Round   int    `json:"r"`
	Subject string `json:"t"` // toolSubject, promptSubject
	Expiry  int64  `json:"x"` // Unix milliseconds
}

// sign returns the requestState of round of call id, of subject.
func (pc *parkedCalls) sign(id string, round int, subject string, expiry time.Time) string {
	payload, _ := json.Marshal(stateClaims{Call: id, Round: round, Subject: subject, Expiry: expiry.UnixMilli()})
	mac := hmac.New(sha256.New, pc.key)
	mac.Write(payload)
	enc := base64.RawURLEncoding
	return enc.EncodeToString(payload) + "." + enc.EncodeToString(mac.Sum(nil))
}

// Errors of a requestState that is refused.
var (
	errStateTampered = errors.New("requestState failed its integrity check: it was not issued by this gateway, or it was changed")
	errStateExpired  = errors.New("requestState has expired: the call it belongs to waited too long and was cancelled; call the tool again")
	errStateEnded    = errors.New("requestState names a call that has ended; call the tool again")
)

// resume returns the parked call state names, after checking the state
// (of subject).
func (pc *parkedCalls) resume(state, subject string) (*parked, error) {
	payloadText, sigText, ok := strings.Cut(state, ".")
	enc := base64.RawURLEncoding
	payload, err1 := enc.DecodeString(payloadText)
	sig, err2 := enc.DecodeString(sigText)
	if !ok || err1 != nil || err2 != nil {
		return nil, errStateTampered
	}
	mac := hmac.New(sha256.New, pc.key)
	mac.Write(payload)
	if !hmac.Equal(sig, mac.Sum(nil)) {
		return nil, errStateTampered
	}
	var c stateClaims
	dec := json.NewDecoder(bytes.NewReader(payload))
	if err := dec.Decode(&c); err != nil {
		return nil, errStateTampered
	}
	if c.Subject != subject {
		return nil, fmt.Errorf("requestState belongs to a call of %s, not of %s", c.Subject, subject)
	}
	if time.Now().UnixMilli() > c.Expiry {
		return nil, errStateExpired
	}
	pc.mu.Lock()
	p := pc.calls[c.Call]
	pc.mu.Unlock()
	if p == nil {
		return nil, errStateEnded
	}
	p.mu.Lock()
	round := p.round
	p.mu.Unlock()
	if c.Round != round {
		return nil, fmt.Errorf("requestState is of round %d of its call, which is at round %d: send the latest one", c.Round, round)
	}
	return p, nil
}

// parkedFront is the front of a parked call: questions wait for the
// client's retry.
type parkedFront struct {
	g *Gateway
	p *parked
}

var _ tools.BatchFront = (*parkedFront)(nil)

func (f *parkedFront) Offers() tools.Offers {
	f.p.mu.Lock()
	defer f.p.mu.Unlock()
	o := offersOf(f.p.caps)
	// The request that started the call decides: a server is asked for
	// progress once, when the call starts; when that request had no
	// progressToken, a later round's token gets none (progress is a hint).
	o.Progress = f.p.token != nil
	return o
}

func (f *parkedFront) Ask(ctx context.Context, q tools.Question) (json.RawMessage, error) {
	a := f.AskAll(ctx, []tools.Question{q})[0]
	return a.Result, a.Err
}

// AskAll puts the questions the client can answer in front of it at once
// (one input_required result) and waits for the answers.
func (f *parkedFront) AskAll(ctx context.Context, qs []tools.Question) []tools.Answer {
	p := f.p
	out := make([]tools.Answer, len(qs))
	waiting := make([]*question, len(qs))
	p.mu.Lock()
	for i, q := range qs {
		if a, decided := p.decide(q); decided {
			out[i] = a
			continue
		}
		if raw, ok := p.given[q.ID]; ok && q.ID != "" {
			delete(p.given, q.ID)
			if checkAnswer(q.Method, raw) == nil {
				out[i].Result = raw
				continue
			}
		}
		key := q.ID
		if _, taken := p.pending[key]; key == "" || taken {
			p.sequence++
			key = fmt.Sprintf("%s-%d", methodWord(q.Method), p.sequence)
		}
		w := &question{key: key, q: q, answer: make(chan json.RawMessage, 1)}
		p.pending[key] = w
		p.order = append(p.order, key)
		waiting[i] = w
	}
	close(p.asked)
	p.asked = make(chan struct{})
	p.mu.Unlock()
	for i, w := range waiting {
		if w == nil {
			continue
		}
		select {
		case raw := <-w.answer:
			if raw == nil {
				out[i].Err = fmt.Errorf("gateway: the %s params do not make an MCP input request", w.q.Method)
				continue
			}
			out[i].Result = raw
		case <-ctx.Done():
			p.mu.Lock()
			for _, w := range waiting {
				if w != nil && p.pending[w.key] == w {
					delete(p.pending, w.key)
				}
			}
			p.order = keepPending(p.pending, p.order)
			p.mu.Unlock()
			for j := i; j < len(out); j++ {
				if waiting[j] != nil {
					out[j].Err = context.Cause(ctx)
				}
			}
			return out
		}
	}
	return out
}

// decide answers q at once when the client cannot: an elicitation it did
// not declare is declined; sampling or roots it did not declare is
// unsupported, and remembered (the call may then answer -32021).
func (p *parked) decide(q tools.Question) (tools.Answer, bool) {
	switch q.Method {
	case tools.MethodElicit:
		var mode struct {
			Mode string `json:"mode"`
		}
		_ = json.Unmarshal(q.Params, &mode)
		if !offersElicitation(p.caps, mode.Mode) {
			return tools.Answer{Result: tools.Declined()}, true
		}
	case tools.MethodSample:
		if p.caps.Sampling == nil {
			p.missing = "sampling"
			return tools.Answer{Err: tools.ErrUnsupported}, true
		}
	case tools.MethodRoots:
		if p.caps.Roots == nil {
			p.missing = "roots"
			return tools.Answer{Err: tools.ErrUnsupported}, true
		}
	default:
		return tools.Answer{Err: tools.ErrUnsupported}, true
	}
	return tools.Answer{}, false
}

// methodWord names keys the askers did not: elicitation-1, sampling-2.
func methodWord(method string) string {
	word, _, _ := strings.Cut(method, "/")
	return word
}

// Notify passes a notification to the request waiting on the call, if
// one does (between rounds nobody listens: progress is a hint).
func (f *parkedFront) Notify(_ context.Context, n tools.Notification) {
	f.p.mu.Lock()
	w, token := f.p.waiter, f.p.token
	f.p.mu.Unlock()
	if w != nil {
		f.g.notify(w, token, n)
	}
}
