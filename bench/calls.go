package bench

import (
	"context"
	"fmt"
	"time"
)

// CallOptions size the per-call measurement.
type CallOptions struct {
	Rounds  int // interleaved rounds
	Warmup  int // sequential calls per client before the first round, not recorded
	Seq     int // sequential calls per client per round
	Callers int // concurrent callers
	ParN    int // calls per concurrent caller per round
}

// CallResult is one client's record over all rounds.
type CallResult struct {
	Name string
	Seq  Sample
	Par  Sample
	// RoundMedians are the medians of each round's sequential batch: a
	// client's share is the median over rounds of its round median minus
	// the raw client's, so that slow drifts of the machine cancel out.
	RoundMedians []time.Duration
	// RoundThroughputs are the calls per second of each round's
	// concurrent batch: what a round-by-round ratio is read from.
	RoundThroughputs []float64
}

// RunCalls measures every client in rounds: in each round every client makes
// its sequential batch, then every client its concurrent batch, the order
// of the clients rotating from round to round, so that a noisy moment of
// the machine is shared out rather than landing on one client.
func RunCalls(ctx context.Context, clients []Client, o CallOptions, progress func(string)) ([]*CallResult, error) {
	out := make([]*CallResult, len(clients))
	for i, c := range clients {
		out[i] = &CallResult{Name: c.Name()}
		if o.Warmup > 0 {
			if _, err := c.Seq(ctx, o.Warmup); err != nil {
				return nil, err
			}
			if _, err := c.Par(ctx, o.Callers, max(1, o.Warmup/o.Callers)); err != nil {
				return nil, err
			}
		}
	}
	for r := range o.Rounds {
		if progress != nil {
			progress(fmt.Sprintf("calls: round %d/%d", r+1, o.Rounds))
		}
		for k := range clients {
			i := (r + k) % len(clients)
			s, err := clients[i].Seq(ctx, o.Seq)
			if err != nil {
				return nil, err
			}
			out[i].Seq.Add(s)
			out[i].RoundMedians = append(out[i].RoundMedians, Median(s.Lat))
		}
		for k := range clients {
			i := (r + k) % len(clients)
			s, err := clients[i].Par(ctx, o.Callers, o.ParN)
			if err != nil {
				return nil, err
			}
			out[i].Par.Add(s)
			out[i].RoundThroughputs = append(out[i].RoundThroughputs, s.Summarize().Throughput)
		}
		if err := ctx.Err(); err != nil {
			return nil, err
		}
	}
	return out, nil
}
