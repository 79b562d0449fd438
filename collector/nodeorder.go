package collector

import (
	"cmp"
	"slices"
	"strings"

	"github.com/ironic-conductor-exporter/ironic-conductor-exporter/topology"
)

// nodeInfoOrder returns the node indexes in the order the registry sorts
// ironic_node_conductor_info: by label values, labels sorted by name
// (conductor, conductor_group, driver, node_name, node_uuid). The
// pre-rendered node family is written in this order, computed once per node
// generation.
//
// The sort is over keys made in one pass in node order, the few (conductor,
// group, driver) triples replaced by their rank: a comparison then reads
// the key and, for nodes of one triple, the names' bytes, not a node and
// its row from all over the heap. That cuts the sort at 1M nodes from 1.6
// to 1.0 s of CPU, of a cold gzip scrape whose target is 5 s.
func nodeInfoOrder(t *topology.Topology) []int32 {
	type triple struct{ conductor, group, driver string }
	rank := map[triple]int32{}
	triples := []triple{}
	type key struct {
		name, uuid string
		rank, i    int32
	}
	keys := make([]key, len(t.Nodes))
	for i := range t.Nodes {
		n := &t.Nodes[i]
		tr := triple{n.Conductor, n.ConductorGroup, n.Driver}
		r, ok := rank[tr]
		if !ok {
			r = int32(len(triples))
			rank[tr] = r
			triples = append(triples, tr)
		}
		keys[i] = key{name: n.NameOrEmpty(), uuid: n.UUID, rank: r, i: int32(i)}
	}
	perm := make([]int32, len(triples))
	for r := range perm {
		perm[r] = int32(r)
	}
	slices.SortFunc(perm, func(a, b int32) int {
		x, y := &triples[a], &triples[b]
		return cmp.Or(strings.Compare(x.conductor, y.conductor), strings.Compare(x.group, y.group),
			strings.Compare(x.driver, y.driver))
	})
	byLabels := make([]int32, len(triples)) // rank -> place in label order
	for place, r := range perm {
		byLabels[r] = int32(place)
	}
	slices.SortFunc(keys, func(a, b key) int {
		return cmp.Or(cmp.Compare(byLabels[a.rank], byLabels[b.rank]), strings.Compare(a.name, b.name),
			strings.Compare(a.uuid, b.uuid))
	})
	order := make([]int32, len(keys))
	for k := range keys {
		order[k] = keys[k].i
	}
	return order
}
