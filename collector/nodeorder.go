package collector

import (
	"slices"
	"strings"

	"github.com/ironic-conductor-exporter/ironic-conductor-exporter/topology"
)

// nodeInfoOrder returns the node indexes in the order the registry sorts
// ironic_node_conductor_info: by label values, labels sorted by name
// (conductor, conductor_group, driver, node_name, node_uuid). The
// pre-rendered node family is written in this order, computed once per node
// generation.
func nodeInfoOrder(t *topology.Topology) []int32 {
	order := make([]int32, len(t.Nodes))
	for i := range order {
		order[i] = int32(i)
	}
	slices.SortFunc(order, func(a, b int32) int {
		x, y := &t.Nodes[a], &t.Nodes[b]
		if c := strings.Compare(x.Conductor, y.Conductor); c != 0 {
			return c
		}
		if c := strings.Compare(x.ConductorGroup, y.ConductorGroup); c != 0 {
			return c
		}
		if c := strings.Compare(x.Driver, y.Driver); c != 0 {
			return c
		}
		if c := strings.Compare(x.NameOrEmpty(), y.NameOrEmpty()); c != 0 {
			return c
		}
		return strings.Compare(x.UUID, y.UUID)
	})
	return order
}
