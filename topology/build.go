package topology

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/ironic-conductor-exporter/ironic-conductor-exporter/db"
	"github.com/ironic-conductor-exporter/ironic-conductor-exporter/ring"
	"github.com/ironic-conductor-exporter/ironic-conductor-exporter/rules"
)

// Build computes the topology of snap at now. When prev is not nil, rings
// whose membership and settings are unchanged are reused, and so is the
// conductor of every node whose ring is unchanged: a rebuild over an
// unchanged snapshot hashes nothing. prev also yields Remapped.
//
// When snap.Nodes is the very slice prev was built from (a refresh whose
// probe vouched for the nodes, or a read in which no row changed) and the
// conductors are alike in all the node-derived results depend on
// (reusableNodes), those results are prev's, shared: the rebuild costs
// O(conductors), and liveness is still judged afresh: the steady-state CPU
// row of docs/performance.md.
// TestRebuildOverUnchangedNodes compares every field, exported or not, with
// Build's full path. The topology points into snap.Nodes, which Build never
// writes (db.Node is frozen).
func Build(snap *db.Snapshot, s Settings, now time.Time, prev *Topology) (*Topology, error) {
	if snap == nil {
		return nil, fmt.Errorf("building topology: nil snapshot")
	}
	rs, det, err := Rules(snap, s)
	if err != nil {
		return nil, err
	}
	t := newTopology(snap, s, rs, det, now)
	reuse := prev // what prev's rings and digests can give, under the same settings
	if prev != nil && (prev.Settings != s || prev.Rules != rs) {
		reuse = nil
	}
	members, emptyActive := t.judgeConductors(snap.Conductors)
	unchanged, err := t.buildRings(members, reuse)
	if err != nil {
		return nil, err
	}
	t.hostCache.Retain(func(host string) bool {
		if host == "" {
			return emptyActive
		}
		c, ok := t.Conductor(host)
		return ok && c.Active
	})
	t.nodesFrom = snap.Nodes
	if reuse != nil && t.reusableNodes(reuse, unchanged) {
		t.reuseNodes(reuse)
		return t, nil
	}
	t.assignNodes(t.mapNodes(snap.Nodes, reuse, unchanged))
	t.lifecycle()
	t.compare(prev)
	t.index() // here, not on the first lookup: a lookup is never held by it
	return t, nil
}

// newTopology is the empty topology of snap under rs, judged at now.
func newTopology(snap *db.Snapshot, s Settings, rs rules.Rules, det rules.Detection, now time.Time) *Topology {
	return &Topology{
		Settings:   s,
		Backend:    snap.Backend,
		Rules:      rs,
		Detection:  det,
		Heartbeats: rs.Heartbeats(),
		Collation: Collation{FoldCase: snap.Backend == rules.MySQL,
			UnicodeCI: rs.MySQLUnicodeCollation(),
			NullsLast: snap.Backend == rules.PostgreSQL},
		Now:         now,
		Conductors:  make([]ConductorInfo, 0, len(snap.Conductors)),
		NodeResults: NodeResults{Orphans: map[GroupDriver]int{}, Reservations: map[string]int{}},
		Remapped:    map[string]int{},
		byHost:      make(map[string]int, len(snap.Conductors)),
		byRing:      map[GroupDriver]int{},
	}
}

// ringMembers are the hosts of one ring, "group:hardware_type".
type ringMembers struct {
	group, hw string
	hosts     []string
}

// judgeConductors is the first phase of Build: each conductor's liveness
// and state, and ring membership as get_active_hardware_type_dict builds it
// (every (active conductor, hardware type) pair adds the hostname to the set
// for "group:hardware_type"). emptyActive tells whether the unusable ""
// conductor is a member of some ring.
func (t *Topology) judgeConductors(conductors []db.Conductor) (members map[string]*ringMembers, emptyActive bool) {
	rs, now := t.Rules, t.Now
	members = map[string]*ringMembers{}
	byPair := map[GroupDriver]*ringMembers{} // RingKey's string made once per pair, not per conductor
	for _, c := range conductors {
		if _, dup := t.byHost[c.Hostname]; dup {
			continue // hostname is unique in Ironic's schema; never trust a join
		}
		ci := ConductorInfo{Conductor: c}
		ci.HardwareTypes = nil
		if len(c.HardwareTypes) > 0 { // sorted, each once, in a slice of its own
			ci.HardwareTypes = slices.Clone(c.HardwareTypes)
			slices.Sort(ci.HardwareTypes)
			ci.HardwareTypes = slices.Compact(ci.HardwareTypes)
		}
		ci.Alive = rs.Alive(c.Online, c.UpdatedAt, now)
		ci.Active = rs.RingMember(c.Online, c.UpdatedAt, now)
		ci.State = rs.State(c.Online, c.UpdatedAt, now)
		if c.Hostname == "" {
			t.emptyHostname(c, ci.Active)
			emptyActive = emptyActive || ci.Active
		} else {
			t.byHost[c.Hostname] = len(t.Conductors)
			t.Conductors = append(t.Conductors, ci)
			t.lockName(&ci, len(t.Conductors)-1)
		}
		if !ci.Active {
			continue
		}
		group := c.ConductorGroup
		if rs.UngroupedRings() {
			group = "" // one ring per hardware type, whatever the group
		}
		for _, hw := range ci.HardwareTypes {
			m := byPair[GroupDriver{group, hw}]
			if m == nil {
				k := rs.RingKey(group, hw)
				if m = members[k]; m == nil {
					m = &ringMembers{group: group, hw: hw}
					members[k] = m
				}
				byPair[GroupDriver{group, hw}] = m
			}
			m.hosts = append(m.hosts, c.Hostname)
		}
	}
	return members, emptyActive
}

// buildRings is the second phase of Build: the rings of members, sorted by
// key. Rings with the same members are the same ring (a ring depends only
// on its hosts, the exponent and the algorithm): the rings of a group whose
// conductors all enable the same hardware types are built once. reuse, when
// not nil, is a topology built under the same settings and rules: its
// digests are carried over, and so is each ring whose members did not
// change; unchanged tells those rings, by index in t.Rings.
func (t *Topology) buildRings(members map[string]*ringMembers, reuse *Topology) (unchanged []bool, err error) {
	keys := slices.Sorted(maps.Keys(members))
	unchanged = make([]bool, len(keys))
	if reuse != nil && reuse.hostCache != nil {
		t.hostCache = reuse.hostCache
	} else if t.hostCache, err = ring.NewHostCache(t.Rules.PartitionExponent(), t.Rules.EffectiveAlgorithm()); err != nil {
		return nil, fmt.Errorf("building hash rings: %w", err)
	}
	byMembers := map[string]*ring.Ring{}
	for _, k := range keys {
		m := members[k]
		slices.Sort(m.hosts)
		hosts := slices.Compact(m.hosts)
		membersKey := strings.Join(hosts, "\x00")
		r := byMembers[membersKey]
		if reuse != nil {
			if i, ok := reuse.byRing[GroupDriver{m.group, m.hw}]; ok && slices.Equal(reuse.Rings[i].Ring.Hosts(), hosts) {
				r = reuse.Rings[i].Ring
				unchanged[len(t.Rings)] = true
			}
		}
		if r == nil {
			if r, err = t.hostCache.New(hosts); err != nil {
				return nil, fmt.Errorf("building hash ring %q: %w", k, err)
			}
		}
		byMembers[membersKey] = r
		t.byRing[GroupDriver{m.group, m.hw}] = len(t.Rings)
		t.Rings = append(t.Rings, RingInfo{ConductorGroup: m.group, HardwareType: m.hw, Ring: r})
	}
	return unchanged, nil
}

// emptyHostname records a conductor row whose hostname is "". It is not
// exported as a conductor (no per-conductor series, not in the JSON list or
// on the page), but stays in the rings Ironic builds, and the nodes those
// rings hand to it have no conductor: conductor="" in
// ironic_node_conductor_info, null in the JSON, counted in
// ironic_nodes_without_conductor. One warning per row, counted in
// ironic_exporter_snapshot_warnings{table="conductors",reason="empty_hostname"}.
//
// Why, from Ironic (checked on 21.4.4, unchanged on master):
//   - Ironic can write such a row: [DEFAULT]host is a cfg.StrOpt
//     (ironic/conf/default.py service_opts) that "host =" sets to "";
//     BaseConductorManager.__init__ (ironic/conductor/base_manager.py) falls
//     back to it, and _register_and_validate_hardware_interfaces registers it.
//   - Ironic's rings take it as any other member
//     (dbapi.get_active_hardware_type_dict, hash_ring.HashRingManager), and
//     get_conductor_for (ironic/conductor/rpcapi.py) returns "" for its
//     nodes (the API shows "conductor": ""); keeping it in the rings keeps
//     every other node where Ironic puts it.
//   - But it cannot be used: get_topic_for builds the RPC topic
//     "ironic.conductor_manager." with no host, /v1/conductors/{hostname}
//     cannot name it, and Ironic's GET /v1/conductors answers 500
//     "'Conductor' object has no attribute 'uuid'" while the row exists
//     (api/controllers/v1/utils.py object_to_dict falls back to obj.uuid when
//     link_resource_args, the hostname, is falsy; measured on 21.4.4).
//   - The metric contract's ironic_node_conductor_info{conductor=""} means
//     "no conductor": a conductor named "" would be indistinguishable.
func (t *Topology) emptyHostname(c db.Conductor, active bool) {
	w := fmt.Sprintf("conductor id %d has an empty hostname ([DEFAULT]host = \"\"): not exported as a conductor", c.ID)
	if active {
		w += "; the nodes Ironic's rings map to it are counted as without conductor"
	}
	t.Warnings = append(t.Warnings, w)
	if len(t.WarningCounts) == 0 {
		t.WarningCounts = []db.WarningCount{{Table: "conductors", Reason: ReasonEmptyHostname}}
	}
	t.WarningCounts[0].Rows++
}

// ReasonEmptyHostname is the snapshot-warning reason of a conductor row
// whose hostname is "" (see Topology.Warnings).
const ReasonEmptyHostname = "empty_hostname"

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
	// a node's lock-less time may have passed NoLockBound since prev
	return prev.noLockDeadline.IsZero() || t.Now.Before(prev.noLockDeadline)
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
