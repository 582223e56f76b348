package tools

import (
	"context"
	"encoding/json"
	"errors"
)

// A Front is whoever a call works for: the console (a person at a terminal),
// the gateway (its MCP client), a one-shot command (a script). A tool that
// needs something of that person or program while it runs — an MCP server's
// elicitation or sampling request, a native tool asking for a confirmation —
// asks the Front its call's context carries ([WithFront], [Ask]); what a call
// reports on the way (progress, log messages) goes there too ([Notify]).
//
// The rules (docs/rfc/0002):
//
//  1. The caller of [Registry.Execute] sets the front with [WithFront]; a
//     context without one answers every question with a decline
//     ([Declined]) and drops notifications. Declining is an answer, never a
//     timeout.
//  2. Ask blocks until the front answers or ctx ends. A front shows at most
//     one question at a time; others wait in order. A question never blocks
//     a reload or a shutdown: the call's context ends them.
//  3. A front that does not know a method answers [ErrUnsupported]; the
//     bridge then answers the server's request with JSON-RPC -32601.
//  4. Notify never blocks the call for long: a front that cannot keep up
//     drops notifications (progress is a hint, not a record).
type Front interface {
	// Ask answers q with the result of the MCP request it stands for,
	// encoded (an ElicitResult for elicitation/create, a CreateMessageResult
	// for sampling/createMessage).
	Ask(ctx context.Context, q Question) (json.RawMessage, error)
	// Notify passes on a notification of the call in flight.
	Notify(ctx context.Context, n Notification)
	// Offers says which questions the front can answer other than by
	// declining (the bridge declares capabilities to servers from it).
	Offers() Offers
}

// Question is a request for input, in MCP's terms.
type Question struct {
	// Server is the serverName of the MCP server that asks, or "" when a
	// native tool asks.
	Server string
	// Tool is the public name of the tool whose call the question belongs
	// to, when known.
	Tool string
	// Method is the MCP method of the request: MethodElicit, MethodSample
	// or MethodRoots.
	Method string
	// Params are the request's params as the server sent them.
	Params json.RawMessage
	// ID names the question among those of one call, when the asker has a
	// name for it (the key of an MCP input_required result's inputRequests,
	// which a front that relays such a result keeps); "" lets the front
	// choose one.
	ID string
}

// Notification is what a call in flight reports, in MCP's terms.
type Notification struct {
	// Server and Tool are as in Question.
	Server, Tool string
	// Method is the MCP method: MethodProgress or MethodLog.
	Method string
	// Params are the notification's params as the server sent them (for
	// progress, the progressToken is the bridge's own; a front that relays
	// it substitutes its client's).
	Params json.RawMessage
}

// Offers are the kinds of question a front answers other than by declining.
type Offers struct {
	// Elicitation: form-mode elicitation/create (and, with ElicitationURL,
	// URL mode).
	Elicitation, ElicitationURL bool
	// Sampling: sampling/createMessage (the harness's own fronts have no
	// model of their own to offer; the gateway relays to a client that
	// declared it).
	Sampling bool
	// Progress: the front shows or passes on a call's progress. A server
	// is asked for progress (MCP's progressToken) only for such a front:
	// an unasked-for token costs the server work, and its notifications
	// would go nowhere.
	Progress bool
}

// The MCP methods of questions and notifications.
const (
	MethodElicit   = "elicitation/create"
	MethodSample   = "sampling/createMessage"
	MethodRoots    = "roots/list"
	MethodProgress = "notifications/progress"
	MethodLog      = "notifications/message"
)

// ErrUnsupported is the error of a front asked a method it does not answer.
var ErrUnsupported = errors.New("the front does not answer this request")

// declined is the answer of a front that declines an elicitation.
var declined = json.RawMessage(`{"action":"decline"}`)

// Declined returns the decline of an elicitation (a fresh copy).
func Declined() json.RawMessage { return append(json.RawMessage(nil), declined...) }

type frontKey struct{}

// WithFront returns ctx carrying f: questions and notifications of the calls
// made with it go to f.
func WithFront(ctx context.Context, f Front) context.Context {
	return context.WithValue(ctx, frontKey{}, f)
}

// FrontOf returns the front ctx carries, or nil.
func FrontOf(ctx context.Context) Front {
	f, _ := ctx.Value(frontKey{}).(Front)
	return f
}

// Ask asks the front of ctx. Without one, an elicitation is declined and any
// other question is unsupported.
func Ask(ctx context.Context, q Question) (json.RawMessage, error) {
	if f := FrontOf(ctx); f != nil {
		return f.Ask(ctx, q)
	}
	if q.Method == MethodElicit {
		return Declined(), nil
	}
	return nil, ErrUnsupported
}

// An Answer is what a front answered one question of a batch ([AskAll]):
// the encoded result, or the error Ask would have returned.
type Answer struct {
	Result json.RawMessage
	Err    error
}

// A BatchFront is a Front that takes questions that belong together at
// once: a gateway relays them to its client in one MCP input_required
// result, as a 2026-07-28 server asked them.
type BatchFront interface {
	Front
	// AskAll answers every question of qs, in their order.
	AskAll(ctx context.Context, qs []Question) []Answer
}

// AskAll asks the front of ctx the questions of qs, which belong together
// (the inputRequests of one input_required result): at once when the front
// is a [BatchFront], else one after the other, as [Ask] would. The answers
// are in the order of qs.
func AskAll(ctx context.Context, qs []Question) []Answer {
	if bf, ok := FrontOf(ctx).(BatchFront); ok {
		return bf.AskAll(ctx, qs)
	}
	out := make([]Answer, len(qs))
	for i, q := range qs {
		out[i].Result, out[i].Err = Ask(ctx, q)
	}
	return out
}

// Notify tells the front of ctx, if there is one.
func Notify(ctx context.Context, n Notification) {
	if f := FrontOf(ctx); f != nil {
		f.Notify(ctx, n)
	}
}

// OffersOf returns what the front of ctx offers (nothing without one).
func OffersOf(ctx context.Context) Offers {
	if f := FrontOf(ctx); f != nil {
		return f.Offers()
	}
	return Offers{}
}
