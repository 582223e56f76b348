package host

import "slices"

// stopPlan is what stopping a set of entries takes, computed by planStop.
type stopPlan struct {
	// Layers are disposed one after another; the instances of one layer
	// together. Whoever injects a service of an entry stands in an earlier
	// layer than that entry. Within a layer, entries are in reverse file
	// order.
	Layers [][]string
	// Dependents are the entries added to the set because they inject a
	// service that an entry of the set provides; they go back to pending.
	Dependents []string
}

// planStop closes targets over their dependents and peels the result into
// layers. It is a pure function of the file order, the running dependencies
// (providers[x] lists the entries whose services x injects; only running
// instances count) and the entries to stop. An id of targets that is no
// longer in order (a reload replaced the table) goes in the first layer.
func planStop(order []string, providers map[string][]string, targets []string) stopPlan {
	in := map[string]bool{}
	for _, id := range targets {
		in[id] = true
	}
	var p stopPlan
	for grew := true; grew; {
		grew = false
		for _, id := range order {
			if in[id] {
				continue
			}
			for _, prov := range providers[id] {
				if in[prov] {
					in[id] = true
					p.Dependents = append(p.Dependents, id)
					grew = true
					break
				}
			}
		}
	}
	var remaining []string
	for i := len(order) - 1; i >= 0; i-- {
		if in[order[i]] {
			remaining = append(remaining, order[i])
		}
	}
	for _, id := range targets {
		if !slices.Contains(order, id) && !slices.Contains(remaining, id) {
			remaining = append(remaining, id)
		}
	}
	// An entry goes once no remaining entry injects from it.
	for len(remaining) > 0 {
		var layer, rest []string
		for _, x := range remaining {
			needed := false
			for _, y := range remaining {
				if y != x && slices.Contains(providers[y], x) {
					needed = true
					break
				}
			}
			if needed {
				rest = append(rest, x)
			} else {
				layer = append(layer, x)
			}
		}
		if len(layer) == 0 { // a cycle cannot run, but never loop for ever
			layer, rest = rest, nil
		}
		p.Layers = append(p.Layers, layer)
		remaining = rest
	}
	return p
}
