package topology

// FaultKey is a conductor group, the ring conductor of the nodes ("" for
// none) and a bounded label: a fault's (Topology.Faults) or a health's
// (Topology.Health).
type FaultKey struct {
	ConductorGroup, Conductor, Fault string
}

// Unregistered counts, by driver, the nodes no ring serves (Orphans) whose
// hardware type no conductor row registers, in any group, alive or not: the
// type is enabled nowhere, or removed from Ironic
// (rules.HardwareTypeRemoved). Computed when asked: it depends on every
// conductor row, which a rebuild may change while reusing the node results.
func (t *Topology) Unregistered() map[string]int {
	registered := map[string]bool{}
	for i := range t.Conductors {
		for _, hw := range t.Conductors[i].HardwareTypes {
			registered[hw] = true
		}
	}
	out := map[string]int{}
	for k, n := range t.Orphans {
		if !registered[k.Driver] {
			out[k.Driver] += n
		}
	}
	return out
}
