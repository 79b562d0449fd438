package nova

import (
	"cmp"
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

// FleetClaim is one view's claim on a node.
type FleetClaim struct {
	Cell, Host string
	Source     string // rules.NovaSource: "instance" or "ring"
	// Up is the compute's servicegroup answer (ComputeState.Up).
	Up bool
}

// Fleet is the Nova side of every Ironic node, over all cells.
type Fleet struct {
	// Claims are, per node in the order of the nodes, the views that
	// manage it (none: unclaimed).
	Claims [][]FleetClaim
	// Problems count what is wrong, by reason (every ProblemReasons key).
	Problems map[string]int
}

// FleetCell is one cell's rows and answer.
type FleetCell struct {
	Cell   Cell
	Answer CellAnswer
}

// NewFleet joins the cells' answers over Ironic's nodes.
func NewFleet(cells []FleetCell, nodes []IronicNode) Fleet {
	f := Fleet{Claims: make([][]FleetClaim, len(nodes)), Problems: map[string]int{}}
	for _, r := range ProblemReasons {
		f.Problems[r] = 0
	}
	index := make(map[string]int, len(nodes))
	for i, n := range nodes {
		index[n.UUID] = i
	}
	type state struct{ up, disabled bool }
	computes := map[[2]string]state{} // cell uuid, host
	records := make([]string, len(nodes))
	hasRecord := make([]bool, len(nodes))
	novaInstance := make([]string, len(nodes))
	upClaims := make([]int, len(nodes)) // claims of computes that are up
	healthy := make([]bool, len(nodes)) // claimed by a compute up and enabled
	for _, c := range cells {
		for _, cs := range c.Answer.Computes {
			computes[[2]string{c.Cell.UUID, cs.Host}] = state{cs.Up, cs.Disabled}
		}
		for _, v := range c.Answer.Views {
			st := computes[[2]string{c.Cell.UUID, v.Host}]
			for u, src := range v.Nodes {
				if i, ok := index[u]; ok {
					f.Claims[i] = append(f.Claims[i], FleetClaim{Cell: c.Cell.Name, Host: v.Host, Source: string(src), Up: st.up})
					if st.up {
						upClaims[i]++
					}
					healthy[i] = healthy[i] || st.up && !st.disabled
				}
			}
		}
		for _, cn := range c.Cell.ComputeNodes {
			if cn.Deleted || cn.HypervisorType != "ironic" {
				continue
			}
			i, ok := index[cn.UUID]
			if !ok {
				i, ok = index[cn.HypervisorHostname]
			}
			if !ok {
				f.Problems[ProblemOrphanRecord]++
				continue
			}
			records[i], hasRecord[i] = cn.Host, true
		}
		for _, in := range c.Cell.Instances {
			if in.Deleted {
				continue
			}
			if i, ok := index[in.Node]; ok {
				novaInstance[i] = in.UUID
				if st, known := computes[[2]string{c.Cell.UUID, in.Host}]; known && !st.up {
					f.Problems[ProblemInstanceComputeDown]++
				}
			}
		}
	}
	for i, n := range nodes {
		claims := f.Claims[i]
		slices.SortFunc(claims, func(a, b FleetClaim) int {
			return cmp.Or(strings.Compare(a.Cell, b.Cell), strings.Compare(a.Host, b.Host))
		})
		switch {
		case len(claims) == 0:
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
			// The one compute that is up and claims the node.
			j := slices.IndexFunc(claims, func(cl FleetClaim) bool { return cl.Up })
			if claims[j].Source == string(rules.NovaSourceRing) && records[i] != claims[j].Host {
				f.Problems[ProblemRecordHostDiffers]++
			}
		}
		if n.InstanceUUID != novaInstance[i] && (n.InstanceUUID != "" || novaInstance[i] != "") {
			f.Problems[ProblemInstanceMismatch]++
		}
	}
	return f
}
