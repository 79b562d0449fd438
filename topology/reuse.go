package topology

import "github.com/ironic-conductor-exporter/ironic-conductor-exporter/db"

// reusableNodes reports whether every node-derived result of prev (built
// under the same settings and rules) is what mapNodes, assignNodes,
// lifecycle and compare would compute for t, whose conductors are judged
// and rings built, unchanged telling which rings are prev's. That holds
// when:
//   - t's nodes are the very slice prev's were built from (same array,
//     same length, not empty: a snapshot's nodes are never written once
//     built from);
//   - every ring is prev's, with the same members, and there are as many:
//     the same keys in the same order, so the same byRing and the same
//     node-to-conductor answers (mapNodes, the orphans, the ring counts);
//   - the conductors are prev's, in the same order, with the same id and
//     hostname (the owner indexes and hostnames of assignNodes, the
//     affinity of lifecycle) and the same Running() (lifecycle's affinity
//     and stuck judgements). Alive, Active, State and the heartbeat are
//     judged afresh but read by no node-derived result (Active only
//     through the rings).
//
// A conductor named "" is in no list (see emptyHostname); its ring
// membership is in the rings.
func (t *Topology) reusableNodes(prev *Topology, unchanged []bool) bool {
	if !sameSlice(t.nodesFrom, prev.nodesFrom) || len(t.Rings) != len(prev.Rings) ||
		len(t.Conductors) != len(prev.Conductors) {
		return false
	}
	for _, u := range unchanged {
		if !u {
			return false
		}
	}
	for i := range t.Conductors {
		c, p := &t.Conductors[i], &prev.Conductors[i]
		if c.ID != p.ID || c.Hostname != p.Hostname || c.Running() != p.Running() {
			return false
		}
	}
	return true
}

// sameSlice reports whether a and b are the same non-empty slice: the same
// length and backing array, from the same element. Empty node lists take
// Build's full path, which costs O(conductors) for them anyway (and a
// Topology Build did not make has no nodesFrom).
func sameSlice(a, b []*db.Node) bool {
	return len(a) > 0 && len(a) == len(b) && &a[0] == &b[0]
}

// reuseNodes is Build's path for nodes and conductors that reusableNodes
// found alike: prev's node-derived results, shared (a Topology is never
// written after Build), and Remapped with 0 for each of the groups mapNodes
// gave an entry, as compare finds when no node moved (prev's own Remapped
// may also hold groups whose nodes moved in prev).
func (t *Topology) reuseNodes(prev *Topology) {
	t.NodeResults = prev.NodeResults
	for i := range t.Conductors {
		t.Conductors[i].ConductorNodes = prev.Conductors[i].ConductorNodes
	}
	for i := range t.Rings {
		t.Rings[i].RingNodes = prev.Rings[i].RingNodes
	}
	for _, g := range t.remapGroups {
		t.Remapped[g] = 0
	}
}
