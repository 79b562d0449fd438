package status

import (
	"cmp"
	"fmt"
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

// unregisteredProblems says which hardware types of nodes no conductor
// registers anywhere, and which of them this Ironic release removed.
func unregisteredProblems(t *topology.Topology) []string {
	var out []string
	for driver, n := range t.Unregistered() {
		text := fmt.Sprintf("%d node(s) use hardware type %s, which no conductor registers", n, driver)
		if since, removed := t.Rules.HardwareTypeRemoved(driver); removed {
			text += fmt.Sprintf(": Ironic removed it in %s; move them to another hardware type (baremetal node set --driver).", since)
		} else {
			text += ": enable it in a conductor's [DEFAULT]enabled_hardware_types."
		}
		out = append(out, text)
	}
	slices.Sort(out)
	return out
}
