// Package topology turns database snapshots into Ironic's conductor topology
// (liveness, hash rings, node-to-conductor mapping) and caches it with its
// refresh policy. Build is pure (no I/O, no clock: now is given); the Cache
// reads through the Source it is given and keeps the latest topology. It
// knows nothing of Prometheus or HTTP; the metrics (collector), the JSON
// API (api) and the status page (status) are all rendered from the
// Topology it builds.
package topology

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ironic-conductor-exporter/ironic-conductor-exporter/db"
	"github.com/ironic-conductor-exporter/ironic-conductor-exporter/ring"
	"github.com/ironic-conductor-exporter/ironic-conductor-exporter/rules"
)

// Settings are the Ironic options that decide liveness and the rings
// (rules.Settings: they must equal the deployment's ironic.conf for the
// answers to be Ironic's) and the topology's own release override.
type Settings struct {
	rules.Settings
	// Release, when not zero, overrides the release detected from each
	// snapshot (--ironic.release).
	Release rules.Release
}

// Rules detects the release that wrote snap (unless s.Release overrides it)
// and returns Ironic's rules for it, the detection and an error for a
// database older than Ironic 11.1.
func Rules(snap *db.Snapshot, s Settings) (rules.Rules, rules.Detection, error) {
	var det rules.Detection
	if s.Release.IsZero() {
		versions := make([]string, 0, len(snap.Conductors))
		for _, c := range snap.Conductors {
			versions = append(versions, c.Version)
		}
		var err error
		if det, err = rules.Detect(snap.SchemaRevision, versions); err != nil {
			return rules.Rules{}, det, fmt.Errorf("telling the Ironic release: %w", err)
		}
	} else {
		det = rules.Detection{Release: s.Release, Min: s.Release, Max: s.Release,
			SchemaRevision: snap.SchemaRevision, From: "flag"}
	}
	r := rules.New(det.Release, snap.Backend, s.Settings)
	return r, det, nil
}

// ConductorInfo is a conductor row with what the topology derives from it.
type ConductorInfo struct {
	db.Conductor
	// Alive is the "alive" field of Ironic's API: the heartbeat is not
	// older than heartbeat_timeout. Like Ironic (convert_with_links in
	// ironic/api/controllers/v1/conductor.py) it ignores the online column.
	Alive bool
	// Active is ring membership as in Ironic's _filter_active_conductors
	// (ironic/db/sqlalchemy/api.py).
	Active bool
	// State is the derived operational state.
	State rules.State
	// ConductorNodes are what the conductor's nodes say of it.
	ConductorNodes
}

// ConductorNodes are a conductor's node-derived results, carried over whole
// as NodeResults are.
type ConductorNodes struct {
	// Nodes are indexes into Topology.Nodes of the nodes mapped here, in
	// node id order.
	Nodes []int
	// ProvisionStates counts the nodes mapped here by provision state,
	// indexed as ProvisionStateIndex (the last entry is "other").
	ProvisionStates []int
	// Maintenance counts the nodes mapped here that are in maintenance.
	Maintenance int
	// AffinityElsewhere counts the nodes mapped here whose boot
	// environment another conductor (or a conductor now gone) prepared.
	AffinityElsewhere int
	// Prepared are indexes into Topology.Nodes of the nodes whose
	// conductor_affinity is this conductor (it holds their boot files), in
	// node id order.
	Prepared []int
}

// NodeInfo is a node row with the conductor the rings map it to.
type NodeInfo struct {
	*db.Node
	// Conductor is the hostname Ironic's get_conductor_for returns, or ""
	// when no ring serves the node's group and driver (NoValidHost).
	Conductor string
	// affinityHost is the Hostname, in this topology's Conductors, of the
	// conductor whose id is in conductor_affinity; nil when NULL or when no
	// such conductor exists.
	affinityHost *string
	// Affinity says whether that conductor is up, down or gone.
	Affinity Affinity
	// Stuck is why the node, in a state a conductor works or waits in,
	// cannot progress; "" when it can or is not in progress.
	Stuck Stuck
}

// AffinityHost is the hostname of the conductor whose id is in
// conductor_affinity, "" when NULL or when no such conductor exists.
func (n *NodeInfo) AffinityHost() string {
	if n.affinityHost == nil {
		return ""
	}
	return *n.affinityHost
}

// NameOrEmpty returns the node's name, "" when it has none.
func (n *NodeInfo) NameOrEmpty() string {
	if n.Name == nil {
		return ""
	}
	return *n.Name
}

// RingInfo describes one hash ring, keyed "<conductor_group>:<hardware_type>".
type RingInfo struct {
	// ConductorGroup and HardwareType make up the ring key.
	ConductorGroup, HardwareType string
	// Ring holds the active conductors registered for the key.
	Ring *ring.Ring
	// RingNodes are what the nodes say of the ring, carried over whole as
	// ConductorNodes are.
	RingNodes
}

// RingNodes are a ring's node-derived results.
type RingNodes struct {
	// Nodes is the number of nodes the ring serves.
	Nodes int
}

// Key returns the ring key as Ironic formats it: "%s:%s" % (group, type).
func (r *RingInfo) Key() string { return ringKey(r.ConductorGroup, r.HardwareType) }

// GroupDriver is a conductor group and driver pair.
type GroupDriver struct {
	ConductorGroup, Driver string
}

// Topology is the state of one Ironic deployment at one instant. It is
// immutable once built and safe for concurrent readers.
type Topology struct {
	// Settings are the Ironic options the topology was computed with.
	Settings Settings
	// Backend is the database kind, which changes ring membership.
	Backend rules.Backend
	// Rules are Ironic's rules the topology was judged by, of the release
	// in Detection.
	Rules rules.Rules
	// Detection is what the snapshot told of the Ironic release.
	Detection rules.Detection
	// Heartbeats is false where Ironic keeps no heartbeats (SQLite):
	// updated_at is then the registration time, says nothing of liveness,
	// and is neither exported nor shown as a heartbeat age.
	Heartbeats bool
	// Collation is how the database compares the text columns that Ironic
	// filters and sorts in SQL.
	Collation Collation
	// Now is the instant liveness was judged at.
	Now time.Time
	// Conductors in id order.
	Conductors []ConductorInfo
	// Rings sorted by key.
	Rings []RingInfo
	// NodeResults are the nodes and what Build derives from them.
	NodeResults
	// Remapped counts, per node conductor group, the nodes present in the
	// previous topology whose conductor changed in this one. Every group
	// that has nodes is present, with 0 when nothing moved, so that the
	// counter built from it starts at 0 and increase() sees its first move.
	Remapped map[string]int
	// Warnings are the topology's own row warnings (see emptyHostname),
	// one line each, and WarningCounts count them by table and reason as
	// db.Snapshot.WarningCounts does; both nil when there are none.
	Warnings      []string
	WarningCounts []db.WarningCount

	byHost map[string]int
	// byLock is the conductor, an index in Conductors, of each reservation
	// name that differs from the hostname it belongs to (lockName).
	byLock map[string]int
	byRing map[GroupDriver]int // the ring of a node's (conductor_group, driver)

	// nodesFrom is the snapshot's node slice Nodes were built from: a
	// rebuild over the very same slice may reuse every node-derived result
	// (see reusableNodes).
	nodesFrom []*db.Node
	// indexOnce builds NodeResults.idx on first use when Build did not
	// (see index).
	indexOnce sync.Once

	// hostCache holds the active conductors' partition digests, shared by
	// the rings of a group and carried to the next topology.
	hostCache *ring.HostCache
}

// NodeResults are the topology's nodes and what Build derives from them
// (mapNodes, assignNodes, lifecycle, compare, index), beside the
// per-conductor and per-ring results (ConductorNodes, RingNodes). A rebuild
// over the very nodes of the previous topology, its rings and conductors
// alike (reusableNodes), carries them over whole (reuseNodes): a result
// derived from the nodes belongs here, so that it cannot be left stale.
type NodeResults struct {
	// Nodes in id order, each UUID once.
	Nodes []NodeInfo
	// Orphans counts nodes no ring can serve, by group and driver.
	Orphans map[GroupDriver]int
	// Reservations counts locked nodes by the conductor Ironic's locks are
	// attributed to (LockHolder: a "HOST:PORT" conductor's locks name
	// HOST), or by the reservation's name when no conductor has it.
	Reservations map[string]int
	// AffinityUnavailable counts nodes whose boot environment was prepared
	// by a conductor that is not running or no longer exists, among the
	// nodes that need it (deployed, rescued, held or in progress).
	AffinityUnavailable map[AffinityKey]int
	// Stuck counts nodes in progress that cannot move on, by group,
	// provision state and reason.
	Stuck map[StuckKey]int
	// Actions counts, by limited action and conductor group, the nodes in
	// the provision states that action's limit counts (rules.ActionOf),
	// whatever their conductor: what count_nodes_in_provision_state counts.
	Actions map[ActionKey]int
	// Faults counts the nodes Ironic put in maintenance itself (a fault
	// set), by group, ring conductor ("" when none) and bounded fault label
	// (rules.FaultLabel).
	Faults map[FaultKey]int
	// Health counts the nodes with a hardware health (nodes.health, 34.0+)
	// by group, ring conductor and bounded label (rules.HealthLabel), in
	// FaultKey's Fault.
	Health map[FaultKey]int
	// History is the window of node_history's events the cache read
	// after the snapshot (CacheConfig.HistoryWindow); nil when none is
	// read or the schema has no node_history (before Ironic 18.2).
	History *History
	// noLockDeadline is the first instant at which a node now in a state a
	// step works in, with no lock, not yet stuck, turns StuckNoWorker
	// (its change plus rules' NoLockBound); zero when there is none. A
	// rebuild over the same nodes at or after it judges them afresh.
	noLockDeadline time.Time
	// NodeGeneration identifies the nodes' labels: it is carried over from
	// the previous topology while every node keeps its UUID, name, group,
	// driver and conductor in the same order, and is new otherwise. Renderers
	// key what they derive from the node list alone (the per-node metric
	// family) by it, so that it is computed once per change, not per build.
	NodeGeneration uint64

	// idx is the UUID and name lookup of Nodes, built once (see index) and
	// shared by the topologies whose nodes have the same UUIDs and names in
	// the same order.
	idx *nodeIndex
	// remapGroups are the groups mapNodes gives a Remapped entry (those of
	// the rings and of the nodes no ring serves), before compare counts
	// the nodes that moved.
	remapGroups []string
}

// nodeGenerations hands out NodeGeneration values, unique in the process.
var nodeGenerations atomic.Uint64

// Collation is how a database compares text in the queries Ironic runs for
// the API: its filters and sort orders.
type Collation struct {
	// FoldCase: equality and order ignore case (MySQL/MariaDB's
	// utf8mb3_general_ci tables).
	FoldCase bool
	// UnicodeCI: with FoldCase, the order is utf8mb4_unicode_ci's (UCA
	// primary weights) rather than case-folded code points
	// (rules.Rules.MySQLUnicodeCollation).
	UnicodeCI bool
	// NullsLast: NULL sorts after every value in ascending order
	// (PostgreSQL); elsewhere it sorts first.
	NullsLast bool
}

func ringKey(group, hardwareType string) string { return group + ":" + hardwareType }

// ringOf is the (group, hardware type) of the ring that serves gd's nodes:
// gd itself, or the group-less ring where Ironic ignores groups
// (rules.Rules.UngroupedRings).
func (t *Topology) ringOf(gd GroupDriver) GroupDriver {
	if t.Rules.UngroupedRings() {
		gd.ConductorGroup = ""
	}
	return gd
}

// nodeIndex is the UUID and name lookup of one node list: the indexes of the
// nodes sorted by UUID, and of the named nodes by name, then by index (the
// first node of a value is found first): positions, not maps of strings,
// for the live heap row, and so that a later topology sharing it keeps no
// string of an older snapshot alive.
type nodeIndex struct {
	byUUID, byName []int32
}

// index returns the node lookups, built once: by Build (unless they are
// prev's), so that no lookup waits for them, or on first use.
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

// LockHolder returns the conductor a node's reservation belongs to: the
// conductor of that exact hostname when it runs, else a running conductor
// that locks nodes under that name (rules.ReservationName: "HOST:PORT"
// locks as HOST), else the exact one, else a non-running one of that lock
// name. exact tells whether the hostname is the reservation itself: only
// then can Ironic release the lock once its holder is gone
// (rules.LockReleasable). nil when no conductor has the name.
func (t *Topology) LockHolder(reservation string) (c *ConductorInfo, exact bool) {
	c, exact = t.Conductor(reservation)
	if exact && c.Running() {
		return c, true
	}
	if i, ok := t.byLock[reservation]; ok && (!exact || t.Conductors[i].Running()) {
		return &t.Conductors[i], false
	}
	return c, exact
}

// lockName records the reservation name of conductor c, at index i in
// Conductors, when it is not its hostname; of several conductors with the
// same lock name, a running one.
func (t *Topology) lockName(c *ConductorInfo, i int) {
	name := t.Rules.ReservationName(c.Hostname)
	if name == c.Hostname {
		return
	}
	if t.byLock == nil {
		t.byLock = map[string]int{}
	}
	if j, ok := t.byLock[name]; !ok || (!t.Conductors[j].Running() && c.Running()) {
		t.byLock[name] = i
	}
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
