package topology

import (
	"maps"
	"slices"

	"github.com/ironic-conductor-exporter/ironic-conductor-exporter/db"
)

// mapNodes is the third phase of Build: the node-to-conductor mapping, as
// get_conductor_for (the ring of "node.conductor_group:node.driver", key
// node.uuid.encode('utf-8')). It fills t.Nodes, the ring node counts,
// Reservations and Orphans, and returns each node's owner: an index in
// t.Conductors, -1 (no ring) or unusableOwner. Nodes whose ring is unchanged
// from reuse's keep reuse's answer; the others are hashed in one pass, then
// located ring by ring, so that each ring's tables stay in cache.
func (t *Topology) mapNodes(nodes []*db.Node, reuse *Topology, unchanged []bool) []int32 {
	t.Nodes = make([]NodeInfo, 0, len(nodes))
	owner := make([]int32, 0, len(nodes))
	var todo []pendingNode // not sized for every node: most keep reuse's answer
	var key []byte         // reused: converting each UUID to []byte would allocate
	shift := 0             // of reuse.nodeAt
	ungrouped := t.Rules.UngroupedRings()
	for i, n := range nodes {
		if i > 0 && n.ID == nodes[i-1].ID {
			continue // rows come ordered by id: a repeated row is adjacent
		}
		gd := GroupDriver{n.ConductorGroup, n.Driver}
		ri, served := t.byRing[t.ringOf(gd)]
		o := int32(-1)
		switch {
		case !served:
			t.Orphans[gd]++
		case unchanged[ri]:
			if old := reuse.nodeAt(len(t.Nodes), &shift, n.UUID); old != nil &&
				old.ConductorGroup == n.ConductorGroup && old.Driver == n.Driver {
				o = t.ownerIndex(old.Conductor) // "": the unusable conductor
				break
			}
			fallthrough
		default:
			key = append(key[:0], n.UUID...)
			todo = append(todo, pendingNode{prefix: t.Rings[ri].Ring.Prefix(key),
				node: int32(len(t.Nodes)), ring: int32(ri)})
		}
		if served {
			t.Rings[ri].Nodes++
			if ungrouped {
				t.Remapped[n.ConductorGroup] += 0 // the ring's group is "", not the node's
			}
		}
		if n.Reservation != nil {
			holder := *n.Reservation
			if c, _ := t.LockHolder(holder); c != nil {
				holder = c.Hostname
			}
			t.Reservations[holder]++
		}
		owner = append(owner, o)
		t.Nodes = append(t.Nodes, NodeInfo{Node: n})
	}
	t.locate(todo, owner)
	for i := range t.Rings {
		t.Remapped[t.Rings[i].ConductorGroup] += 0
	}
	for gd := range t.Orphans {
		t.Remapped[gd.ConductorGroup] += 0
	}
	t.remapGroups = slices.Sorted(maps.Keys(t.Remapped))
	return owner
}

// assignNodes is the fourth phase of Build: each node's conductor from
// owner, every conductor's node list (one backing array for all), and the
// nodes the unusable "" conductor holds counted as orphans.
func (t *Topology) assignNodes(owner []int32) {
	perConductor := make([]int, len(t.Conductors))
	for i, o := range owner {
		switch {
		case o >= 0:
			t.Nodes[i].Conductor = t.Conductors[o].Hostname
			perConductor[o]++
		case o == unusableOwner:
			// Ironic's ring hands the node to the "" conductor: no
			// conductor that can serve it (see emptyHostname).
			n := t.Nodes[i].Node
			t.Orphans[GroupDriver{n.ConductorGroup, n.Driver}]++
		}
	}
	backing := make([]int, 0, len(t.Nodes))
	for ci := range t.Conductors {
		end := len(backing) + perConductor[ci]
		t.Conductors[ci].Nodes = backing[len(backing):len(backing):end]
		backing = backing[:end]
	}
	for i, o := range owner {
		if o >= 0 {
			c := &t.Conductors[o]
			c.Nodes = append(c.Nodes, i)
		}
	}
}

// compare is the last phase of Build: the nodes that moved since prev
// (Remapped), and prev's node generation and lookups, kept while every node
// keeps its labels, and its UUID and name, in the same order.
func (t *Topology) compare(prev *Topology) {
	if prev != nil {
		sameIdents := len(prev.Nodes) == len(t.Nodes)
		sameLabels := sameIdents
		shift := 0
		for i := range t.Nodes {
			n := &t.Nodes[i]
			old := prev.nodeAt(i, &shift, n.UUID)
			if old != nil && old.Conductor != n.Conductor {
				t.Remapped[n.ConductorGroup]++
			}
			sameIdents = sameIdents && old == &prev.Nodes[i] && old.NameOrEmpty() == n.NameOrEmpty()
			sameLabels = sameLabels && sameIdents && old.Conductor == n.Conductor &&
				old.ConductorGroup == n.ConductorGroup && old.Driver == n.Driver
		}
		if sameLabels {
			t.NodeGeneration = prev.NodeGeneration
		}
		if sameIdents {
			t.idx = prev.idx
		}
	}
	if t.NodeGeneration == 0 {
		t.NodeGeneration = nodeGenerations.Add(1)
	}
}

// unusableOwner is the owner of a node that Ironic's ring maps to the
// conductor named "" (see emptyHostname); -1 is a node no ring serves.
const unusableOwner = -2

// ownerIndex is the index in Conductors of the ring member host, or
// unusableOwner for "".
func (t *Topology) ownerIndex(host string) int32 {
	if i, ok := t.byHost[host]; ok {
		return int32(i)
	}
	return unusableOwner
}

// pendingNode is a node still to be located: its key's ring prefix, its
// index in Topology.Nodes and its ring's index in Topology.Rings.
type pendingNode struct {
	prefix     uint64
	node, ring int32
}

// locate sets owner[node] for every pending node, ring by ring.
func (t *Topology) locate(todo []pendingNode, owner []int32) {
	if len(todo) == 0 {
		return
	}
	start := make([]int, len(t.Rings)+1) // counting sort by ring
	for _, p := range todo {
		start[p.ring+1]++
	}
	for ri := 1; ri < len(start); ri++ {
		start[ri] += start[ri-1]
	}
	sorted := make([]pendingNode, len(todo))
	next := slices.Clone(start[:len(t.Rings)])
	for _, p := range todo {
		sorted[next[p.ring]] = p
		next[p.ring]++
	}
	var key []byte
	for ri := range t.Rings {
		r := t.Rings[ri].Ring
		hosts := r.Hosts()
		conductorOf := make([]int32, len(hosts))
		for h, name := range hosts {
			conductorOf[h] = t.ownerIndex(name)
		}
		for _, p := range sorted[start[ri]:start[ri+1]] {
			h, tie := r.LocatePrefix(p.prefix)
			if tie {
				key = append(key[:0], t.Nodes[p.node].UUID...)
				h = r.Locate(key)
			}
			owner[p.node] = conductorOf[h]
		}
	}
}
