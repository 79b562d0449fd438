package collector

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/ironic-conductor-exporter/ironic-conductor-exporter/db"
	"github.com/ironic-conductor-exporter/ironic-conductor-exporter/topology"
)

// referenceNodeOrder is the order nodeInfoOrder must give, as one plain
// comparison sort of the five label values.
func referenceNodeOrder(t *topology.Topology) []int32 {
	order := make([]int32, len(t.Nodes))
	for i := range order {
		order[i] = int32(i)
	}
	slices.SortFunc(order, func(a, b int32) int {
		x, y := &t.Nodes[a], &t.Nodes[b]
		for _, c := range [][2]string{{x.Conductor, y.Conductor}, {x.ConductorGroup, y.ConductorGroup},
			{x.Driver, y.Driver}, {x.NameOrEmpty(), y.NameOrEmpty()}, {x.UUID, y.UUID}} {
			if r := strings.Compare(c[0], c[1]); r != 0 {
				return r
			}
		}
		return 0
	})
	return order
}

// TestNodeInfoOrder holds nodeInfoOrder to a plain sort of the labels on
// awkward fleets: names that differ only past 16 bytes, at
// exactly 16 and 17, by a trailing NUL (the keys' padding), not at all
// (nil, "", duplicates); UUIDs sharing their first 8 bytes; bytes above
// 0x7f; many small buckets and a few large ones, and the "" conductor.
func TestNodeInfoOrder(t *testing.T) {
	names := []string{"", "a", "a\x00", "a\x00\x00", "ab", "node-1", "node-10", "node-2",
		"0123456789abcdef", "0123456789abcdef\x00", "0123456789abcdefg", "0123456789abcdefG",
		"0123456789abcdeff", strings.Repeat("x", 40), strings.Repeat("x", 40) + "a", strings.Repeat("x", 39) + "y",
		"é", "e\u0301", "\xff", "\x7f", "Z", "z"}
	uuids := []string{"00000000-", "00000000-0000", "00000000-0001", "0000000", "ffffffff-ffff", "fffffff", "é0000000"}
	for seed := range uint64(40) {
		rng := rand.New(rand.NewPCG(seed, 7))
		conductors := []string{"", "c1", "c2", "c10", "C1"}[:1+rng.IntN(5)]
		groups := []string{"", "g", "G", "g\x00"}[:1+rng.IntN(4)]
		drivers := []string{"ipmi", "redfish"}[:1+rng.IntN(2)]
		n := 1 + rng.IntN(3000)
		topo := &topology.Topology{NodeResults: topology.NodeResults{Nodes: make([]topology.NodeInfo, n)}}
		for i := range topo.Nodes {
			var name *string
			if k := rng.IntN(len(names) + 1); k < len(names) {
				s := names[k]
				if rng.IntN(3) == 0 {
					s += fmt.Sprint(rng.IntN(50))
				}
				name = &s
			}
			uuid := uuids[rng.IntN(len(uuids))] + fmt.Sprintf("%d", i) // each UUID once
			topo.Nodes[i] = topology.NodeInfo{Conductor: conductors[rng.IntN(len(conductors))],
				Node: &db.Node{ID: int64(i + 1), UUID: uuid, Name: name,
					ConductorGroup: groups[rng.IntN(len(groups))], Driver: drivers[rng.IntN(len(drivers))]}}
		}
		got, want := nodeInfoOrder(topo), referenceNodeOrder(topo)
		if !slices.Equal(got, want) {
			for k := range want {
				if got[k] != want[k] {
					g, w := &topo.Nodes[got[k]], &topo.Nodes[want[k]]
					t.Fatalf("seed %d, %d nodes: position %d holds %q %q %q %q %q, want %q %q %q %q %q", seed, n, k,
						g.Conductor, g.ConductorGroup, g.Driver, g.NameOrEmpty(), g.UUID,
						w.Conductor, w.ConductorGroup, w.Driver, w.NameOrEmpty(), w.UUID)
				}
			}
		}
	}
	if got := nodeInfoOrder(&topology.Topology{}); len(got) != 0 {
		t.Errorf("no nodes: %v", got)
	}
}
