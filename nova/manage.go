package nova

import (
	"fmt"
	"slices"
	"strings"

	"github.com/ironic-conductor-exporter/ironic-conductor-exporter/ring"
	"github.com/ironic-conductor-exporter/ironic-conductor-exporter/rules"
)

// Nova's ring: tooz HashRing(services, partitions=2**5), tooz's default
// md5, weight 1 (nova/virt/ironic/driver.py _HASH_RING_PARTITIONS, commit
// 91243e3e10 "Move to tooz hash ring implementation", 16.0); no option
// changes it.
const (
	partitionExponent = 5
	algorithm         = ring.MD5
)

// View is one nova-compute's answer, as its _refresh_cache computes it now.
type View struct {
	// Host is the compute's CONF.host.
	Host string
	// Ring is its hash ring's members (ring names), sorted.
	Ring []string
	// Err is set when the compute cannot refresh (rules.InvalidPeerList):
	// it then manages what it managed before, which the database does not
	// tell; Nodes is empty.
	Err error
	// Nodes are the nodes the compute manages, each once, and why: indexes
	// into the nodes the view was computed over (Input.Nodes), not their
	// uuids, so that a cached answer holds no pointer per node for the
	// garbage collector to follow at each cycle (the CPU row with Nova
	// while nodes change, docs/performance.md).
	Nodes []Managed
	// ByInstance and ByRing count Nodes by why.
	ByInstance, ByRing int
}

// Managed is a node a compute manages.
type Managed struct {
	// Node is the node's index in Input.Nodes.
	Node int32
	// ByInstance: its instance is one of the compute's
	// (rules.NovaSourceInstance), else it is the compute's on its ring
	// (rules.NovaSourceRing).
	ByInstance bool
}

// Source is why the compute manages the node.
func (m Managed) Source() rules.NovaSource {
	if m.ByInstance {
		return rules.NovaSourceInstance
	}
	return rules.NovaSourceRing
}

// counted returns v with its counts.
func (v View) counted() View {
	for _, m := range v.Nodes {
		if m.ByInstance {
			v.ByInstance++
		} else {
			v.ByRing++
		}
	}
	return v
}

// Managed returns the uuids of the nodes the compute manages, sorted;
// uuid gives those of the nodes the view was computed over (Nodes.UUID,
// novacache.State.UUID).
func (v View) Managed(uuid func(i int) string) []string {
	out := make([]string, len(v.Nodes))
	for j, m := range v.Nodes {
		out[j] = uuid(int(m.Node))
	}
	slices.Sort(out)
	return out
}

// RingCandidates are the hosts of the services that
// objects.ServiceList.get_all_computes_by_hv_type(ctxt, 'ironic') returns
// (nova/db/main/api.py service_get_all_computes_by_hv_type,
// include_disabled=False, commit 6047d790a3, 14.0): deleted = 0, binary =
// 'nova-compute', disabled = false, joined to compute_nodes on host with
// hypervisor_type = 'ironic', compute_nodes.deleted not looked at (a service
// whose compute nodes are all soft-deleted stays a candidate), compared as
// the cell's database compares; a NULL host (read as "") joins nothing.
// In the order of cell.Services, one entry per service row.
func RingCandidates(r rules.NovaRules, cell Cell) []Service {
	ironic := ironicHosts(r, cell)
	var out []Service
	for _, s := range cell.Services {
		if !s.Deleted && !s.Disabled && r.SQLEqual(s.Binary, "nova-compute") && ironic[r.SQLKey(s.Host)] {
			out = append(out, s)
		}
	}
	return out
}

// ironicHosts are the SQLKeys of the (ironic) compute_nodes hosts,
// whatever their deleted: the other side of
// the join of service_get_all_computes_by_hv_type. "" is a NULL host (the
// reader's), which joins nothing.
func ironicHosts(r rules.NovaRules, cell Cell) map[string]bool {
	ironic := map[string]bool{}
	for _, cn := range cell.ComputeNodes {
		if cn.Host != "" {
			ironic[r.SQLKey(cn.Host)] = true
		}
	}
	for _, h := range cell.SoftDeletedHosts {
		if h != "" {
			ironic[r.SQLKey(h)] = true
		}
	}
	return ironic
}

// RingMembers is the members of compute c's ring (_refresh_hash_ring):
// each candidate that c's peers allow (exact host, rules.RingPeers) and
// that is up (rules.NovaRules.ServiceIsUp at now), and c itself whatever
// its state, by ring name (rules.NovaRules.RingName); sorted, unique.
func RingMembers(in Input, candidates []Service, c Compute) ([]string, error) {
	peers, limited, err := in.Rules.RingPeers(c)
	if err != nil {
		return nil, err
	}
	members := []string{in.Rules.RingName(c.Host)}
	for _, s := range candidates {
		if limited && !slices.Contains(peers, s.Host) {
			continue
		}
		if in.Rules.ServiceIsUp(in.Now, s.LastSeenUp, s.CreatedAt, s.ForcedDown) {
			members = append(members, in.Rules.RingName(s.Host))
		}
	}
	slices.Sort(members)
	return slices.Compact(members), nil
}

// Views computes, for each compute of in.Computes (in that order), the
// nodes it manages now, exactly as Nova's IronicDriver._refresh_cache does
// on that compute: the nodes its node list holds
// (rules.NovaRules.NodeListed) whose instance is one of its instances, or
// that have no instance and map to it on its own ring
// (rules.NovaRules.NovaManages).
//
// Computes with the same ring and the same node filters share one pass
// over the nodes, bucketed by ring owner: one pass, not one per compute
// (the steady-state CPU row of docs/performance.md).
func Views(in Input) []View {
	candidates := RingCandidates(in.Rules, in.Cell)
	own := map[string][]int32{} // instances.host -> indexes in in.Cell.Instances
	for j, i := range in.Cell.Instances {
		own[i.Host] = append(own[i.Host], int32(j))
	}
	// Ironic instance_uuid -> node: one node at most, as the nodes table's
	// uniq_nodes0instance_uuid (alembic 3bea56f25597) has it.
	byInstance := newKeyIndex(len(in.Cell.Instances))
	for i, n := range in.Nodes {
		if n.InstanceUUID != "" {
			byInstance.set(KeyOf(n.InstanceUUID), int32(i))
		}
	}
	owners := newOwners(in.Nodes)
	passes := map[string]map[string][]int{} // ring and filters -> owner -> nodes without instance
	views := make([]View, 0, len(in.Computes))
	for _, c := range in.Computes {
		v := View{Host: c.Host}
		listed := func(n IronicNode) bool {
			return in.Rules.NodeListed(c, in.IronicBackend, n.ConductorGroup, n.Shard, n.ParentNode)
		}
		if in.InstanceOnly {
			v.Nodes = addInstances(in, v, own[c.Host], byInstance, listed)
			views = append(views, v.counted())
			continue
		}
		members, err := RingMembers(in, candidates, c)
		if err != nil {
			v.Err = err
			views = append(views, v)
			continue
		}
		v.Ring = members
		key := filterKey(in.Rules, c) + "\x01" + strings.Join(members, "\x00")
		buckets, ok := passes[key]
		if !ok {
			locate := owners.of(members)
			buckets = map[string][]int{}
			for i, n := range in.Nodes {
				if n.InstanceUUID == "" && listed(n) {
					o := locate(i)
					buckets[o] = append(buckets[o], i)
				}
			}
			passes[key] = buckets
		}
		mine := buckets[in.Rules.RingName(c.Host)]
		v.Nodes = make([]Managed, 0, len(mine)+len(own[c.Host]))
		for _, i := range mine {
			if src := in.Rules.NovaManages(c, "", false, in.Rules.RingName(c.Host)); src != rules.NovaSourceNone {
				v.Nodes = append(v.Nodes, Managed{Node: int32(i)})
			}
		}
		v.Nodes = addInstances(in, v, own[c.Host], byInstance, listed)
		views = append(views, v.counted())
	}
	return views
}

// addInstances returns v's nodes and the listed nodes whose instance is one
// of the compute's (own: its instances, by index in in.Cell.Instances, each
// uuid once, as instances.uuid is unique: a node has one instance_uuid, so
// it comes at most once, and never among the nodes of its ring, which have
// none).
func addInstances(in Input, v View, own []int32, byInstance keyIndex, listed func(IronicNode) bool) []Managed {
	c := Compute{Host: v.Host}
	for _, j := range own {
		i, ok := byInstance.get(in.Cell.Instances[j].UUID)
		if !ok {
			continue
		}
		if n := in.Nodes[i]; listed(n) {
			if src := in.Rules.NovaManages(c, n.InstanceUUID, true, ""); src != rules.NovaSourceNone {
				v.Nodes = append(v.Nodes, Managed{Node: i, ByInstance: true})
			}
		}
	}
	return v.Nodes
}

// filterKey says which nodes compute c's node list holds: computes with
// equal keys list the same nodes.
func filterKey(r rules.NovaRules, c Compute) string {
	k := "-"
	if r.UsesConductorGroup(c) {
		k = "g" + *c.ConductorGroup
	}
	if r.UsesShard(c) {
		k += "\x02s" + c.Shard
	}
	return k
}

// owners maps nodes to their owners on rings, hashing each node's uuid
// once and locating it once per distinct ring.
type owners struct {
	nodes  Nodes
	prefix []uint64
	hashed []bool
	cache  *ring.HostCache
}

func newOwners(nodes Nodes) *owners {
	c, err := ring.NewHostCache(partitionExponent, algorithm)
	if err != nil {
		panic(err) // constants
	}
	return &owners{nodes: nodes, prefix: make([]uint64, len(nodes)), hashed: make([]bool, len(nodes)), cache: c}
}

// of returns the owner of node i on the ring of members (not empty).
func (o *owners) of(members []string) func(int) string {
	r, err := o.cache.New(members)
	if err != nil {
		panic(fmt.Sprintf("nova: ring of %d members: %v", len(members), err))
	}
	hosts := r.Hosts()
	return func(i int) string {
		key := []byte(o.nodes[i].UUID)
		if !o.hashed[i] {
			o.prefix[i], o.hashed[i] = r.Prefix(key), true
		}
		h, tie := r.LocatePrefix(o.prefix[i])
		if tie {
			h = r.Locate(key)
		}
		return hosts[h]
	}
}

// Claim is one compute's claim on a node.
type Claim struct {
	Host   string
	Source rules.NovaSource
}

// Claims inverts views: for each node uuid, the computes that manage it,
// in the order of views. A node absent from the map is claimed by no view;
// one with two claims is managed twice (views that disagree). uuid is as
// View.Managed's.
func Claims(views []View, uuid func(i int) string) map[string][]Claim {
	out := map[string][]Claim{}
	for _, v := range views {
		for _, m := range v.Nodes {
			u := uuid(int(m.Node))
			out[u] = append(out[u], Claim{Host: v.Host, Source: m.Source()})
		}
	}
	return out
}

// DefaultComputes are the computes whose views to compute when no file
// gives their settings: one per live nova-compute service row
// (deleted = 0) that has an ironic compute_nodes row (joined as
// RingCandidates joins, the disabled ones too: a disabled compute still
// runs and manages its nodes), with no [ironic] option set. The answer is
// then exact only for computes whose nova.conf sets none (say so).
func DefaultComputes(r rules.NovaRules, cell Cell) []Compute {
	ironic := ironicHosts(r, cell)
	var out []Compute
	seen := map[string]bool{}
	for _, s := range cell.Services {
		if !s.Deleted && r.SQLEqual(s.Binary, "nova-compute") && ironic[r.SQLKey(s.Host)] && !seen[s.Host] {
			seen[s.Host] = true
			out = append(out, Compute{Host: s.Host})
		}
	}
	return out
}
