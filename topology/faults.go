package topology

// FaultKey is a conductor group, the ring conductor of the nodes ("" for
// none) and a bounded fault label.
type FaultKey struct {
	ConductorGroup, Conductor, Fault string
}
