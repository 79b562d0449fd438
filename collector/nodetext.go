package collector

import (
	"cmp"
	"encoding/binary"
	"io"
	"slices"
	"strings"

	"github.com/ironic-conductor-exporter/ironic-conductor-exporter/internal/exposition"
	"github.com/ironic-conductor-exporter/ironic-conductor-exporter/topology"
)

// The node family, ironic_node_conductor_info, one series per node, is
// nearly all of /metrics on a large fleet. It is written straight from the
// topology, without a dto.Metric per node or a registry, in the bytes
// client_golang writes for it (TestNodeFamilyIsClientGolang and
// FuzzNodeFamily hold the two side by side): HELP and TYPE, then one line
// per node in the registry's order (nodeInfoOrder), label pairs by name,
// values escaped as expfmt escapes them, and " 1"; nothing, not even HELP,
// without nodes (a registry gathers no empty family). Label values need no
// other care: db guarantees valid UTF-8 (invalid bytes read as U+FFFD),
// which client_golang requires.

const nodeInfoName = "ironic_node_conductor_info"

const nodeInfoHelp = "1 per node; conductor is the hostname the hash ring maps it to, empty when no conductor can serve it."

// writeNodeFamily writes the node family of t to w, the nodes in order (t's
// nodeInfoOrder), with an exposition.SeriesWriter.
func writeNodeFamily(w io.Writer, t *topology.Topology, order []int32) error {
	sw := exposition.NewSeriesWriter(w, &nodeInfoFamily.Family)
	for _, i := range order {
		n := &t.Nodes[i]
		sw.Series(1, n.Conductor, n.ConductorGroup, n.Driver, n.NameOrEmpty(), n.UUID)
	}
	return sw.Close()
}

// nodeInfoOrder returns the node indexes in the order the registry sorts
// ironic_node_conductor_info: by label values, labels sorted by name
// (conductor, conductor_group, driver, node_name, node_uuid); computed once
// per node generation. The keys sorted hold the rank of the few (conductor,
// group, driver) triples and a name's first 16 bytes: a comparison reads the
// key alone unless two names share those, and a swap, with no pointer in
// the keys, costs no write barrier while a collection runs: the cold gzip
// scrape row at 1M nodes.
func nodeInfoOrder(t *topology.Topology) []int32 {
	type triple struct{ conductor, group, driver string }
	rank := map[triple]int32{}
	triples := []triple{}
	type key struct {
		name    [2]uint64 // the name's first 16 bytes, big-endian, zero-padded
		rank, i int32
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
		var b [16]byte
		copy(b[:], n.NameOrEmpty())
		keys[i] = key{name: [2]uint64{binary.BigEndian.Uint64(b[:8]), binary.BigEndian.Uint64(b[8:])}, rank: r, i: int32(i)}
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
		if c := cmp.Or(cmp.Compare(byLabels[a.rank], byLabels[b.rank]), cmp.Compare(a.name[0], b.name[0]),
			cmp.Compare(a.name[1], b.name[1])); c != 0 {
			return c
		}
		x, y := &t.Nodes[a.i], &t.Nodes[b.i]
		return cmp.Or(strings.Compare(x.NameOrEmpty(), y.NameOrEmpty()), strings.Compare(x.UUID, y.UUID))
	})
	order := make([]int32, len(keys))
	for k := range keys {
		order[k] = keys[k].i
	}
	return order
}
