package status

import (
	"cmp"
	"slices"
	"strings"

	"github.com/ironic-conductor-exporter/ironic-conductor-exporter/topology"
)

// faultRow counts the nodes Ironic put in maintenance itself, by group, ring
// conductor and fault.
type faultRow struct {
	Group, Conductor, Fault string
	Nodes                   int
}

// faultRows are t's faulted nodes, most first.
func faultRows(t *topology.Topology) []faultRow {
	var out []faultRow
	for k, n := range t.Faults {
		out = append(out, faultRow{Group: k.ConductorGroup, Conductor: k.Conductor, Fault: k.Fault, Nodes: n})
	}
	slices.SortFunc(out, func(a, b faultRow) int {
		return cmp.Or(b.Nodes-a.Nodes, strings.Compare(a.Group, b.Group), strings.Compare(a.Conductor, b.Conductor),
			strings.Compare(a.Fault, b.Fault))
	})
	return out
}
