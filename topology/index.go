package topology

import (
	"cmp"
	"slices"
	"strings"
)

// nodeIndex is the UUID and name lookup of one node list: the indexes of the
// nodes sorted by UUID, and of the named nodes by name, then by index (the
// first node of a value is found first). 8 bytes a node where two maps took
// 120 at 1M nodes, a fifth of the live heap target (600 B/node); and as it
// holds positions, not strings, a later topology sharing it keeps no string
// of an older snapshot alive beside its own (64 B a node more at 1M).
type nodeIndex struct {
	byUUID, byName []int32
}

// index returns the node lookups, built once: by Build (unless they are
// prev's), so that no lookup waits for them (at 100k nodes 40-55 ms, ten
// times that at 1M, against the 50 ms a lookup may be held), or on first use.
func (t *Topology) index() *nodeIndex {
	t.indexOnce.Do(func() {
		if t.idx == nil {
			t.idx = &nodeIndex{byUUID: sortedBy(t.Nodes, nodeUUID, false),
				byName: sortedBy(t.Nodes, (*NodeInfo).NameOrEmpty, true)}
		}
	})
	return t.idx
}

// sortedBy returns the indexes of the nodes (with named, only those whose
// key is not ""), sorted by key and then by index. The keys are sorted
// beside the indexes: a comparison then reads no node.
func sortedBy(nodes []NodeInfo, key func(*NodeInfo) string, named bool) []int32 {
	type entry struct {
		key string
		i   int32
	}
	entries := make([]entry, 0, len(nodes))
	for i := range nodes {
		if k := key(&nodes[i]); k != "" || !named {
			entries = append(entries, entry{k, int32(i)})
		}
	}
	slices.SortFunc(entries, func(a, b entry) int { return cmp.Or(strings.Compare(a.key, b.key), cmp.Compare(a.i, b.i)) })
	out := make([]int32, len(entries))
	for j, e := range entries {
		out[j] = e.i
	}
	return out
}

// find returns the index of the first node of sorted (an index of t, see
// sortedBy) whose key is k.
func (t *Topology) find(sorted []int32, key func(*NodeInfo) string, k string) (int, bool) {
	j, ok := slices.BinarySearchFunc(sorted, k, func(i int32, k string) int { return strings.Compare(key(&t.Nodes[i]), k) })
	if !ok {
		return 0, false
	}
	return int(sorted[j]), true
}

// nodeAt finds a node of the topology by UUID, trying index i+*shift first:
// consecutive snapshots mostly list the same nodes in the same order, shifted
// by the nodes deleted before. *shift becomes the node's (start with 0).
func (t *Topology) nodeAt(i int, shift *int, uuid string) *NodeInfo {
	if j := i + *shift; j >= 0 && j < len(t.Nodes) && t.Nodes[j].UUID == uuid {
		return &t.Nodes[j]
	}
	j, ok := t.find(t.index().byUUID, nodeUUID, uuid)
	if !ok {
		return nil
	}
	*shift = j - i
	return &t.Nodes[j]
}

func nodeUUID(n *NodeInfo) string { return n.UUID }

// Conductor returns the conductor with the given hostname.
func (t *Topology) Conductor(hostname string) (*ConductorInfo, bool) {
	i, ok := t.byHost[hostname]
	if !ok {
		return nil, false
	}
	return &t.Conductors[i], true
}

// Node returns the node with the given UUID or, failing that, name, as
// Ironic resolves a node_ident.
func (t *Topology) Node(ident string) (*NodeInfo, bool) {
	x := t.index()
	i, ok := t.find(x.byUUID, nodeUUID, ident)
	if !ok {
		i, ok = t.find(x.byName, (*NodeInfo).NameOrEmpty, ident)
	}
	if !ok {
		return nil, false
	}
	return &t.Nodes[i], true
}

// Ring returns the ring for a conductor group and hardware type.
func (t *Topology) Ring(group, hardwareType string) (*RingInfo, bool) {
	i, ok := t.byRing[t.ringOf(GroupDriver{group, hardwareType})]
	if !ok {
		return nil, false
	}
	return &t.Rings[i], true
}
