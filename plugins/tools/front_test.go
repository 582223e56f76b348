package tools_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"

	"github.com/harness-go/harness/plugins/tools"
)

// recordingFront answers every question with its answer and keeps what it
// was told.
type recordingFront struct {
	answer json.RawMessage
	asked  []tools.Question
	told   []tools.Notification
	offers tools.Offers
}

func (f *recordingFront) Ask(_ context.Context, q tools.Question) (json.RawMessage, error) {
	f.asked = append(f.asked, q)
	return f.answer, nil
}

func (f *recordingFront) Notify(_ context.Context, n tools.Notification) { f.told = append(f.told, n) }
func (f *recordingFront) Offers() tools.Offers                           { return f.offers }

func TestWithoutAFrontElicitationsAreDeclined(t *testing.T) {
	ctx := context.Background()
	got, err := tools.Ask(ctx, tools.Question{Method: tools.MethodElicit, Params: json.RawMessage(`{"message":"name?"}`)})
	if err != nil || string(got) != `{"action":"decline"}` {
		t.Fatalf("Ask = %s, %v; want a decline", got, err)
	}
	if _, err := tools.Ask(ctx, tools.Question{Method: tools.MethodSample}); !errors.Is(err, tools.ErrUnsupported) {
		t.Fatalf("sampling without a front: err = %v, want ErrUnsupported", err)
	}
	tools.Notify(ctx, tools.Notification{Method: tools.MethodProgress}) // dropped, no panic
	if o := tools.OffersOf(ctx); o != (tools.Offers{}) {
		t.Fatalf("OffersOf without a front = %+v, want nothing", o)
	}
	// The decline is a fresh copy each time: a caller may change it.
	a := tools.Declined()
	a[0] = 'x'
	if string(tools.Declined()) != `{"action":"decline"}` {
		t.Fatal("Declined shares its bytes between callers")
	}
}

func TestTheFrontOfTheCallAnswers(t *testing.T) {
	f := &recordingFront{answer: json.RawMessage(`{"action":"accept","content":{"name":"Ada"}}`), offers: tools.Offers{Elicitation: true}}
	reg := tools.New()
	ctx := tools.WithFront(context.Background(), f)
	if tools.FrontOf(ctx) != f {
		t.Fatal("FrontOf does not return the front WithFront set")
	}
	// A native tool asks through the context its call received.
	release, err := reg.Register(newFiber(t, "asker"), tools.Tool{
		Name: "ask_name",
		Execute: func(ctx context.Context, _ json.RawMessage) (tools.Result, error) {
			tools.Notify(ctx, tools.Notification{Tool: "ask_name", Method: tools.MethodProgress, Params: json.RawMessage(`{"progress":1}`)})
			answer, err := tools.Ask(ctx, tools.Question{Tool: "ask_name", Method: tools.MethodElicit, Params: json.RawMessage(`{"message":"name?"}`)})
			if err != nil {
				return tools.Result{}, err
			}
			return tools.Result{Text: string(answer)}, nil
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer release(context.Background())
	res := reg.Execute(ctx, "ask_name", nil)
	if res.IsError || res.Text != string(f.answer) {
		t.Fatalf("result = %+v, want the front's answer", res)
	}
	if len(f.asked) != 1 || f.asked[0].Method != tools.MethodElicit || f.asked[0].Tool != "ask_name" {
		t.Fatalf("asked = %+v", f.asked)
	}
	if len(f.told) != 1 || f.told[0].Method != tools.MethodProgress {
		t.Fatalf("told = %+v", f.told)
	}
	if !tools.OffersOf(ctx).Elicitation {
		t.Fatal("OffersOf does not report the front's offers")
	}
}

// batchFront takes questions at once.
type batchFront struct {
	recordingFront
	batches [][]tools.Question
}

func (f *batchFront) AskAll(_ context.Context, qs []tools.Question) []tools.Answer {
	f.batches = append(f.batches, qs)
	out := make([]tools.Answer, len(qs))
	for i, q := range qs {
		out[i].Result = json.RawMessage(`"` + q.ID + `"`)
	}
	return out
}

func TestAskAll(t *testing.T) {
	qs := []tools.Question{
		{ID: "a", Method: tools.MethodElicit},
		{ID: "b", Method: tools.MethodSample},
		{ID: "c", Method: tools.MethodRoots},
	}
	// A front that takes a batch gets it whole.
	bf := &batchFront{}
	got := tools.AskAll(tools.WithFront(context.Background(), bf), qs)
	if len(bf.batches) != 1 || len(bf.batches[0]) != 3 || len(bf.asked) != 0 {
		t.Fatalf("batches %v, asked %v: want one batch of three", bf.batches, bf.asked)
	}
	if string(got[2].Result) != `"c"` {
		t.Fatalf("answers %+v", got)
	}
	// Any other front is asked one after the other, in order.
	rf := &recordingFront{answer: json.RawMessage(`{"action":"accept"}`)}
	got = tools.AskAll(tools.WithFront(context.Background(), rf), qs)
	if len(rf.asked) != 3 || rf.asked[0].ID != "a" || rf.asked[2].ID != "c" {
		t.Fatalf("asked %+v: want a, b, c in order", rf.asked)
	}
	// Without a front: the elicitation is declined, the rest unsupported.
	got = tools.AskAll(context.Background(), qs)
	if string(got[0].Result) != `{"action":"decline"}` || !errors.Is(got[1].Err, tools.ErrUnsupported) || !errors.Is(got[2].Err, tools.ErrUnsupported) {
		t.Fatalf("without a front: %+v", got)
	}
}
