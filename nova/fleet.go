package nova

import (
	"cmp"
	"iter"
	"slices"
	"strings"

	"github.com/ironic-conductor-exporter/ironic-conductor-exporter/rules"
)

// The reasons of Fleet.Problems, a bounded set (a label value each).
const (
	// ProblemUnclaimed: an Ironic node that no compute's view manages (no
	// compute's node list holds it, or its ring owner is not up to claim it).
	ProblemUnclaimed = "node_unclaimed"
	// ProblemClaimedTwice: a node the views of two computes that are up
	// manage (views that disagree; a down compute's view is its last, which
	// its process may no longer act on).
	ProblemClaimedTwice = "node_claimed_twice"
	// ProblemComputeDown: a node that only computes that are down or
	// disabled manage: its instance cannot be rebuilt, rebooted or deleted
	// until the compute is back, a node without instance until the rings
	// move it.
	ProblemComputeDown = "node_compute_down"
	// ProblemNoComputeNode: an available node, without instance and not in
	// maintenance, with no live compute_nodes row: Nova cannot schedule to it.
	ProblemNoComputeNode = "node_no_compute_record"
	// ProblemRecordHostDiffers: the node's live compute_nodes row names a
	// host other than the one compute that is up and manages it on its
	// ring: a rebalance pending or stuck.
	ProblemRecordHostDiffers = "compute_record_host_differs"
	// ProblemInstanceMismatch: Ironic's instance_uuid of a node differs from
	// the live Nova instance on it (instances.node), or one side has none.
	ProblemInstanceMismatch = "instance_mismatch"
	// ProblemInstanceComputeDown: a live instance on a node whose host
	// (instances.host) is a compute that is down.
	ProblemInstanceComputeDown = "instance_compute_down"
	// ProblemOrphanRecord: a live ironic compute_nodes row for a node gone
	// from Ironic.
	ProblemOrphanRecord = "compute_record_orphan"
)

// ProblemReasons are every reason of Fleet.Problems, so that each series
// exists, at 0 when nothing is wrong.
var ProblemReasons = []string{ProblemUnclaimed, ProblemClaimedTwice, ProblemComputeDown, ProblemNoComputeNode,
	ProblemRecordHostDiffers, ProblemInstanceMismatch, ProblemInstanceComputeDown, ProblemOrphanRecord}

// FleetClaim is one view's claim on a node: what the metrics, the JSON
// API's exporter_nova_computes and the status page's lookup show of it.
type FleetClaim struct {
	Cell, Host string
	Source     string // rules.NovaSource: "instance" or "ring"
	// Up is the compute's servicegroup answer (ComputeState.Up); UpKnown
	// whether the database says it (ComputeState.UpKnown): else Up is
	// assumed, and the outputs say "unknown".
	Up, UpKnown bool
}

// Fleet is the Nova side of every Ironic node, over all cells.
//
// The claims are kept node by node as indexes into the distinct claims (a
// few per compute), not a slice of claims per node: that takes 80 B/node
// more (BenchmarkNovaLiveHeap), and with it the live heap with Nova at 100k
// nodes exceeds its 800 B/node row of docs/performance.md.
type Fleet struct {
	// Problems count what is wrong, by reason (every ProblemReasons key).
	Problems map[string]int
	// distinct are the distinct claims, sorted by cell and host; node i's
	// are those of claims[start[i]:start[i+1]].
	distinct []FleetClaim
	claims   []int32
	start    []int32
}

// Len is how many nodes the fleet covers (those given to NewFleet).
func (f *Fleet) Len() int { return max(len(f.start)-1, 0) }

// Claims are the views that manage the node of index i (in the order of
// the nodes given to NewFleet), sorted by cell and host; none: unclaimed.
func (f *Fleet) Claims(i int) iter.Seq[FleetClaim] {
	return func(yield func(FleetClaim) bool) {
		for _, j := range f.claims[f.start[i]:f.start[i+1]] {
			if !yield(f.distinct[j]) {
				return
			}
		}
	}
}

// FleetCell is one cell's rows and answer.
type FleetCell struct {
	Cell   Cell
	Answer CellAnswer
}

// NewFleet joins the cells' answers over Ironic's nodes, those their views
// were computed over.
func NewFleet(cells []FleetCell, nodes Nodes) *Fleet {
	f := &Fleet{Problems: map[string]int{}}
	for _, r := range ProblemReasons {
		f.Problems[r] = 0
	}
	index := newKeyIndex(len(nodes))
	for i, n := range nodes {
		index.set(KeyOf(n.UUID), int32(i))
	}
	type state struct{ up, upKnown, disabled bool }
	computes := map[[2]string]state{} // cell uuid, host
	records := make([]string, len(nodes))
	hasRecord := make([]bool, len(nodes))
	// novaInstance: the node's live Nova instance (the last of the rows
	// naming it) is none (0), Ironic's instance_uuid (1) or another (2).
	novaInstance := make([]uint8, len(nodes))
	upClaims := make([]int, len(nodes)) // claims of computes that are up
	healthy := make([]bool, len(nodes)) // claimed by a compute up and enabled
	distinct := map[FleetClaim]int32{}
	var claims []nodeClaim
	for _, c := range cells {
		for _, cs := range c.Answer.Computes {
			computes[[2]string{c.Cell.UUID, cs.Host}] = state{cs.Up, cs.UpKnown, cs.Disabled}
		}
		for _, v := range c.Answer.Views {
			st := computes[[2]string{c.Cell.UUID, v.Host}]
			of := map[rules.NovaSource]int32{}
			for _, src := range []rules.NovaSource{rules.NovaSourceInstance, rules.NovaSourceRing} {
				fc := FleetClaim{Cell: c.Cell.Name, Host: v.Host, Source: string(src), Up: st.up, UpKnown: st.upKnown}
				j, ok := distinct[fc]
				if !ok {
					j = int32(len(f.distinct))
					distinct[fc] = j
					f.distinct = append(f.distinct, fc)
				}
				of[src] = j
			}
			for _, m := range v.Nodes {
				i := m.Node
				claims = append(claims, nodeClaim{i, of[m.Source()]})
				if st.up {
					upClaims[i]++
				}
				healthy[i] = healthy[i] || st.up && !st.disabled
			}
		}
		for _, cn := range c.Cell.ComputeNodes {
			i, ok := index.get(cn.UUID)
			if !ok {
				i, ok = index.get(cn.HypervisorHostname)
			}
			if !ok {
				f.Problems[ProblemOrphanRecord]++
				continue
			}
			records[i], hasRecord[i] = cn.Host, true
		}
		for _, in := range c.Cell.Instances {
			if i, ok := index.get(in.Node); ok {
				novaInstance[i] = 2
				if in.UUID == KeyOf(nodes[i].InstanceUUID) {
					novaInstance[i] = 1
				}
				if st, known := computes[[2]string{c.Cell.UUID, in.Host}]; known && !st.up {
					f.Problems[ProblemInstanceComputeDown]++
				}
			}
		}
	}
	f.place(len(nodes), claims)
	for i, n := range nodes {
		switch {
		case f.start[i] == f.start[i+1]:
			f.Problems[ProblemUnclaimed]++
		case !healthy[i]:
			f.Problems[ProblemComputeDown]++
		}
		if upClaims[i] >= 2 {
			f.Problems[ProblemClaimedTwice]++
		}
		if !hasRecord[i] && n.ProvisionState == "available" && n.InstanceUUID == "" && !n.Maintenance {
			f.Problems[ProblemNoComputeNode]++
		}
		if hasRecord[i] && upClaims[i] == 1 {
			for cl := range f.Claims(i) {
				if cl.Up && cl.Source == string(rules.NovaSourceRing) && records[i] != cl.Host {
					f.Problems[ProblemRecordHostDiffers]++
				}
			}
		}
		if novaInstance[i] == 2 || novaInstance[i] == 0 && n.InstanceUUID != "" {
			f.Problems[ProblemInstanceMismatch]++
		}
	}
	return f
}

// nodeClaim is a claim on a node: the node's index and the claim's in
// Fleet.distinct.
type nodeClaim struct{ node, claim int32 }

// place sorts f.distinct by cell and host and lays out claims node by
// node, each node's in the order of f.distinct.
func (f *Fleet) place(nodes int, claims []nodeClaim) {
	order := make([]int32, len(f.distinct))
	for j := range order {
		order[j] = int32(j)
	}
	slices.SortFunc(order, func(a, b int32) int {
		x, y := f.distinct[a], f.distinct[b]
		return cmp.Or(strings.Compare(x.Cell, y.Cell), strings.Compare(x.Host, y.Host), strings.Compare(x.Source, y.Source), rules.CompareBool(x.Up, y.Up))
	})
	rank := make([]int32, len(order))
	sorted := make([]FleetClaim, len(order))
	for r, j := range order {
		rank[j], sorted[r] = int32(r), f.distinct[j]
	}
	f.distinct = sorted
	f.start = make([]int32, nodes+1)
	for _, c := range claims {
		f.start[c.node+1]++
	}
	for i := range nodes {
		f.start[i+1] += f.start[i]
	}
	f.claims = make([]int32, len(claims))
	next := slices.Clone(f.start[:nodes])
	for _, c := range claims {
		f.claims[next[c.node]] = rank[c.claim]
		next[c.node]++
	}
	for i := range nodes {
		slices.Sort(f.claims[f.start[i]:f.start[i+1]])
	}
}
