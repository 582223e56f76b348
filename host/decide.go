package host

import "slices"

// facts are what decide needs to know of the running entries, gathered by
// Load before anything changes. Each is a set of entry ids.
type facts struct {
	// updated holds the entries of Plan.Update whose running instances took
	// the live settings. Taking them is applying them (Reconfigure), so the
	// host tries before it decides; an entry with nothing running, whose
	// configuration does not decode, or whose plugin refused is restarted
	// instead.
	updated map[string]bool
	// serving holds the entries of Plan.Replace whose instance serves
	// (ready or reconnecting): a successor can start beside it.
	serving map[string]bool
	// claimed holds the entries of Plan.Replace whose instance holds a
	// value (Uniquer) that another entry of the new file claims: that entry
	// must not find it taken, so the old instance stops first.
	claimed map[string]bool
}

// steps are what Load carries out, in this order: every stop,
// concurrently; then, in the file's order, each start and replacement.
type steps struct {
	// stop lists Plan.Stop, then the fallbacks, in the plan's order.
	stop []string
	// start holds the entries applied afresh: Plan.Start and the fallbacks.
	start map[string]bool
	// replace holds the entries whose successor starts beside the instance
	// that serves (make before break).
	replace map[string]bool
	// fallback lists the entries of Plan.Update and Plan.Replace that are
	// stopped and started instead, in the plan's order.
	fallback []string
	// keepLast holds the entries whose last plugin value stays the one the
	// status shows although their configuration changed: replaced (the
	// successor's becomes it when it takes over) or updated in place.
	keepLast map[string]bool
}

// decide turns a plan and the facts of the running entries into the steps
// of a reload (rules 10 and 11 of the package documentation). It is pure:
// what it does not know it does not do, and Load only carries its steps
// out. A live update that did not take is a restart; so is a replacement
// whose old instance does not serve, or holds a value another entry of the
// file claims.
func decide(p *Plan, f facts) steps {
	s := steps{
		stop:     slices.Clone(p.Stop),
		start:    map[string]bool{},
		replace:  map[string]bool{},
		keepLast: map[string]bool{},
	}
	for _, id := range p.Start {
		s.start[id] = true
	}
	for _, id := range p.Update {
		s.keepLast[id] = true
		if !f.updated[id] {
			s.fallback = append(s.fallback, id)
		}
	}
	for _, id := range p.Replace {
		if f.serving[id] && !f.claimed[id] {
			s.replace[id] = true
			s.keepLast[id] = true
		} else {
			s.fallback = append(s.fallback, id)
		}
	}
	for _, id := range s.fallback {
		s.stop = append(s.stop, id)
		s.start[id] = true
	}
	return s
}
