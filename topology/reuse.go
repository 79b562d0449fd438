package topology

import "github.com/ironic-conductor-exporter/ironic-conductor-exporter/db"

// reusableNodes reports whether every node-derived result of prev (built
// under the same settings and rules) is what mapNodes, assignNodes,
// lifecycle and compare would compute for t, whose conductors are judged
// and rings built (unchanged tells which rings are prev's). That holds when:
//   - t's nodes are the very slice prev's were built from (sameSlice);
//   - every ring is prev's, and there are as many: the same keys in the same
//     order, so the same byRing and node-to-conductor answers (mapNodes, the
//     orphans, the ring counts);
//   - the conductors are prev's, in the same order, with the same id and
//     hostname (assignNodes' owners, lifecycle's affinity) and the same
//     Running() (lifecycle's affinity and stuck judgements). Alive, Active,
//     State and the heartbeat are judged afresh but read by no node-derived
//     result (Active only through the rings, as is the membership of a
//     conductor named "", which is in no list: emptyHostname).
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
// Build's full path, which costs O(conductors) for them anyway.
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
