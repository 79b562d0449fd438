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
	"maps"
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

// backendKind is the rules' name of a snapshot's backend.
func backendKind(b db.Backend) rules.Backend {
	switch b {
	case db.BackendMySQL:
		return rules.MySQL
	case db.BackendSQLite:
		return rules.SQLite
	}
	return rules.PostgreSQL
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
	r := rules.New(det.Release, backendKind(snap.Backend), s.Settings)
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

// ConductorNodes are a conductor's node-derived results. A rebuild that
// reuses the previous topology's node results (reuseNodes) carries them
// over whole: a result derived from the nodes belongs here, so that it
// cannot be left stale.
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
	// AffinityHost is the hostname of the conductor whose id is in
	// conductor_affinity, "" when NULL or when no such conductor exists.
	AffinityHost string
	// Affinity says whether that conductor is up, down or gone.
	Affinity Affinity
	// Stuck is why the node, in a state a conductor works or waits in,
	// cannot progress; "" when it can or is not in progress.
	Stuck Stuck
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
	Backend db.Backend
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
	// Reservations counts nodes locked by each reservation hostname, whether
	// or not a conductor of that name exists.
	Reservations map[string]int
	// AffinityUnavailable counts nodes whose boot environment was prepared
	// by a conductor that is not running or no longer exists, among the
	// nodes that need it (deployed, rescued, held or in progress).
	AffinityUnavailable map[AffinityKey]int
	// Stuck counts nodes in progress that cannot move on, by group,
	// provision state and reason.
	Stuck map[StuckKey]int
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

// Build computes the topology of snap at now. When prev is not nil, rings
// whose membership and settings are unchanged are reused, and so is the
// conductor of every node whose ring is unchanged: a rebuild over an
// unchanged snapshot hashes nothing. prev also yields Remapped.
//
// When snap.Nodes is the very slice prev was built from (the cache's
// refresh whose change probe vouched for the nodes, or a read in which no
// row changed: db.Snapshot.Nodes) and the conductors are
// judged alike in everything the node-derived results depend on (see
// reusableNodes), those results are prev's, shared: the rebuild costs
// O(conductors), not O(nodes), and liveness is still judged afresh. It
// keeps the sidecar's steady-state CPU inside its target (2% of a core at
// 100k nodes, 20% at 1M): a refresh every --refresh.min-interval over
// unchanged nodes would otherwise walk them all (at 100k nodes, 0.3% of a
// core more in make bench's unchanged phase; ten times the walk at 1M). TestRebuildOverUnchangedNodes compares
// every field, exported or not, with Build's full path. The
// topology points into snap.Nodes (NodeInfo.Node), so a snapshot's nodes
// must not be written once a topology is built from them; Build never
// writes them.
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

// newTopology is the empty topology of snap under rs, judged at now.
func newTopology(snap *db.Snapshot, s Settings, rs rules.Rules, det rules.Detection, now time.Time) *Topology {
	return &Topology{
		Settings:   s,
		Backend:    snap.Backend,
		Rules:      rs,
		Detection:  det,
		Heartbeats: rs.Heartbeats(),
		Collation: Collation{FoldCase: snap.Backend == db.BackendMySQL,
			UnicodeCI: rs.MySQLUnicodeCollation(),
			NullsLast: snap.Backend == db.BackendPostgreSQL},
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

// mapNodes is the third phase of Build: the node-to-conductor mapping, as
// get_conductor_for (the ring of "node.conductor_group:node.driver", key
// node.uuid.encode('utf-8')). It fills t.Nodes, the ring node counts,
// Reservations and the orphans no ring serves, and returns each node's
// owner: an index in t.Conductors, -1 (no ring) or unusableOwner. Nodes
// whose ring is unchanged from reuse's keep reuse's answer; the others are
// hashed in one sequential pass and then located ring by ring, so that each
// ring's tables stay in cache.
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
			t.Reservations[*n.Reservation]++
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
// (Remapped), the node generation, carried over from prev while every node
// keeps its labels in the same order, and the lookups, shared with prev
// while every node keeps its UUID and name in the same order.
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
//     (ironic/conf/default.py service_opts), so "host =" in ironic.conf is
//     accepted; BaseConductorManager.__init__ (ironic/conductor/
//     base_manager.py) falls back to CONF.host, also "", and
//     _register_and_validate_hardware_interfaces registers it.
//   - Ironic's rings take it as any other member
//     (dbapi.get_active_hardware_type_dict; hash_ring.HashRingManager adds
//     every hostname to tooz's HashRing), and get_conductor_for
//     (ironic/conductor/rpcapi.py) returns "" for the nodes it owns: the
//     API shows "conductor": "" for them. Keeping it in the rings keeps
//     every other node where Ironic puts it.
//   - But such a conductor cannot be used: get_topic_for builds the RPC
//     topic "ironic.conductor_manager." with no host (json-rpc then has no
//     host to call), /v1/conductors/{hostname} cannot name it, and Ironic's
//     own GET /v1/conductors answers 500 "'Conductor' object has no
//     attribute 'uuid'" while the row exists (api/controllers/v1/utils.py
//     object_to_dict falls back to obj.uuid when link_resource_args, the
//     hostname, is falsy; measured on 21.4.4).
//   - The metric contract uses ironic_node_conductor_info{conductor=""} for
//     "no conductor": a conductor named "" would be indistinguishable from
//     none, so it is not exported as one.
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

// nodeIndex is the UUID and name lookup of one node list: the indexes of the nodes sorted by UUID, and of the named nodes by name, each
// then by index (the first node of a value is found first). 8 bytes a node
// where two maps took 120 at 1M nodes, a fifth of the live heap target
// (600 B/node); and since it holds positions, not strings, a later
// topology that shares it (the same labels at the same indexes) keeps no
// string of the snapshot it was built from alive beside its own (64 B a
// node more at 1M).
type nodeIndex struct {
	byUUID, byName []int32
}

// index returns the node lookups, built once: Build builds them (unless
// they are prev's), so that no lookup waits for their build (at 100k nodes
// 40-55 ms, ten times that at 1M, against the 50 ms a lookup may be held);
// a Topology Build did not make builds them on first use.
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

// nodeAt finds a node of the topology by UUID, trying index i+*shift first
// since consecutive snapshots mostly list the same nodes in the same
// order, shifted by the nodes deleted before; *shift becomes that of the
// node found. A caller walking a node list starts with a shift of 0.
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
