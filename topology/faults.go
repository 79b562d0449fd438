package topology

// FaultKey is a conductor group, the ring conductor of the nodes ("" for
// none) and a bounded label: a fault's (Topology.Faults) or a health's
// (Topology.Health).
type FaultKey struct {
	ConductorGroup, Conductor, Fault string
}
