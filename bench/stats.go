package bench

import (
	"slices"
	"time"
)

// Sample is what a batch of calls measured: each call's latency, the wall
// time of the whole batch and the CPU time the client's process spent on
// it (user + system, every thread).
type Sample struct {
	Lat  []time.Duration
	Wall time.Duration
	CPU  time.Duration
}

// Add appends another batch.
func (s *Sample) Add(o Sample) {
	s.Lat = append(s.Lat, o.Lat...)
	s.Wall += o.Wall
	s.CPU += o.CPU
}

// Summary condenses a sample.
type Summary struct {
	N          int
	Median     time.Duration
	P99        time.Duration
	Throughput float64       // calls per second of wall time
	CPU        time.Duration // the client process's CPU time per call
}

// Summarize computes the median, the 99th percentile and the throughput.
func (s Sample) Summarize() Summary {
	out := Summary{N: len(s.Lat), Median: Percentile(s.Lat, 50), P99: Percentile(s.Lat, 99)}
	if s.Wall > 0 {
		out.Throughput = float64(len(s.Lat)) / s.Wall.Seconds()
	}
	if len(s.Lat) > 0 {
		out.CPU = s.CPU / time.Duration(len(s.Lat))
	}
	return out
}

// Percentile returns the p-th percentile (nearest rank) of ds.
func Percentile(ds []time.Duration, p float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	rank := int(p/100*float64(len(s))+0.5) - 1
	rank = max(0, min(rank, len(s)-1))
	return s[rank]
}

// Median is Percentile(ds, 50).
func Median(ds []time.Duration) time.Duration { return Percentile(ds, 50) }
