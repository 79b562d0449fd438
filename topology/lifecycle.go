package topology

import (
	"time"

	"github.com/ironic-conductor-exporter/ironic-conductor-exporter/rules"
)

// What the person on call asks of a node beyond its ring: where its boot
// files are (conductor_affinity), where it is in its lifecycle (provision
// state, maintenance), and whether it is stuck on a conductor that is gone.

// ProvisionStateOther is the label of every provision state that is not in
// ProvisionStates: a state of a release newer than this list, a NULL, or
// anything else a database may hold. Labels stay bounded.
const ProvisionStateOther = "other"

// ProvisionStates are the provision state names of Ironic's state machine
// (ironic/common/states.py, the union over the releases this exporter
// reads: the service* states arrived with servicing in 2023.2, the *hold
// states with deploy and clean hold steps), in a fixed order. Their index,
// and len(ProvisionStates) for ProvisionStateOther, is what
// ConductorInfo.ProvisionStates counts by.
var ProvisionStates = []string{
	"enroll", "verifying", "manageable", "available", "active",
	"deploying", "wait call-back", "deploy failed", "deploy hold",
	"cleaning", "clean wait", "clean failed", "clean hold",
	"inspecting", "inspect wait", "inspect failed",
	"adopting", "adopt failed",
	"rescuing", "rescue wait", "rescue", "rescue failed", "unrescuing", "unrescue failed",
	"deleting", "deleted", "error",
	"servicing", "service wait", "service failed", "service hold",
}

var provisionIndex = func() map[string]int {
	m := make(map[string]int, len(ProvisionStates))
	for i, s := range ProvisionStates {
		m[s] = i
	}
	return m
}()

// ProvisionStateIndex returns the index of a provision state in
// ProvisionStates, len(ProvisionStates) for ProvisionStateOther.
func ProvisionStateIndex(state *string) int {
	if state != nil {
		if i, ok := provisionIndex[*state]; ok {
			return i
		}
	}
	return len(ProvisionStates)
}

// ProvisionStateLabel returns the bounded label of a provision state: its
// name when Ironic's state machine has it, ProvisionStateOther otherwise.
func ProvisionStateLabel(state *string) string {
	if i := ProvisionStateIndex(state); i < len(ProvisionStates) {
		return ProvisionStates[i]
	}
	return ProvisionStateOther
}

// inProgress are the states a conductor is working in or waiting in:
// Ironic's UNSTABLE_STATES (ironic/common/states.py, "states that can be
// changed without external request") and the servicing pair. A node in one
// of them needs a living conductor: the lock holder to finish the step, the
// ring's conductor to receive the ramdisk's callbacks (the *wait states).
var inProgress = map[string]bool{
	"deploying": true, "wait call-back": true, "cleaning": true, "clean wait": true,
	"verifying": true, "deleting": true, "inspecting": true, "inspect wait": true,
	"adopting": true, "rescuing": true, "rescue wait": true, "unrescuing": true,
	"servicing": true, "service wait": true,
}

// bootMatters reports whether a node in this state needs the boot
// environment its affinity conductor prepared: deployed or rescued nodes
// (they network-boot from it, and _sync_local_state takes over only
// ACTIVE nodes), held ones and those in progress. Elsewhere (available,
// manageable, failed states) the next operation prepares it anew.
func bootMatters(state *string) bool {
	if state == nil {
		return false
	}
	switch *state {
	case "active", "rescue", "deploy hold", "clean hold", "service hold":
		return true
	}
	return inProgress[*state]
}

// stepStates are the states in which a step works, holding the node's lock
// for as long as it runs: Ironic's STUCK_STATES_TREATED_AS_FAIL
// (ironic/common/states.py, commit d70db292a "Node gets stuck in ING state
// when conductor goes down"; SERVICING added by e91685f33, 29.0). Nothing
// resumes them once their worker is gone: a conductor the ring maps them
// to fails them when it starts (base_manager.py _correct_stuck_states,
// the nodes with no lock), and a peer's _check_orphan_nodes fails only
// DEPLOYING and CLEANING when it breaks a dead holder's lock. The *wait
// states, where no lock is held while the ramdisk works, are not here.
var stepStates = map[string]bool{
	"deploying": true, "cleaning": true, "verifying": true, "inspecting": true,
	"adopting": true, "rescuing": true, "unrescuing": true, "deleting": true,
	"servicing": true,
}

// InProgress reports whether a provision state is one a conductor works or
// waits in (see Stuck).
func InProgress(state *string) bool { return state != nil && inProgress[*state] }

// Affinity says where a node's boot environment is, from
// nodes.conductor_affinity: the id of the conductor that last prepared the
// node (Ironic sets it at deploy and in _do_takeover,
// ironic/conductor/manager.py). It is one byte (a NodeInfo per node);
// String gives its label value. The zero value is "not judged yet".
type Affinity uint8

// The affinity states of a node.
const (
	// AffinityNone: conductor_affinity is NULL (never prepared).
	AffinityNone Affinity = iota + 1
	// AffinityUp: the conductor that prepared it is running (alive or
	// draining).
	AffinityUp
	// AffinityNotAlive: that conductor is stopped or dead: its boot files
	// and logs are on a machine that does not answer.
	AffinityNotAlive
	// AffinityMissing: no conductor row has that id any more (the
	// conductor was unregistered and its row deleted).
	AffinityMissing
)

var affinityNames = [...]string{"", "none", "up", "not_alive", "missing"}

// String is the affinity's label value: none, up, not_alive or missing.
func (a Affinity) String() string {
	if int(a) < len(affinityNames) {
		return affinityNames[a]
	}
	return "unknown"
}

// Stuck says why a node in progress (InProgress) cannot move on. It is
// one byte (a NodeInfo per node); String gives its label value.
type Stuck uint8

// The reasons a node is stuck; NotStuck when it is not.
const (
	// NotStuck: the node can progress, or is not in progress.
	NotStuck Stuck = iota
	// StuckLockHolder: its lock (Topology.LockHolder) is held by a host
	// that is not running (stopped, dead, or no conductor of that name).
	// A peer's _check_orphan_nodes (ironic/conductor/manager.py) releases
	// the locks of get_offline_conductors() (stale heartbeat) and fails
	// DEPLOYING and CLEANING; a host with no row at all is never released
	// by it.
	StuckLockHolder
	// StuckNoConductor: no ring serves the node: nobody receives its
	// callbacks or times it out.
	StuckNoConductor
	// StuckConductorNotAlive: the ring maps it to a conductor that is not
	// running (possible only where ring membership ignores heartbeats).
	StuckConductorNotAlive
	// StuckNoWorker: in a state a step works in (stepStates) with no lock
	// for longer than rules' NoLockBound: its worker died with its
	// conductor (a SIGTERM past graceful_shutdown_timeout, a crash whose
	// lock a peer broke). It stays until a conductor the ring maps it to
	// starts (_correct_stuck_states) or an operator aborts it or sets
	// maintenance.
	StuckNoWorker
	// StuckLockNeverReleased: locked under the bare HOST of a "HOST:PORT"
	// conductor that is not running (rules.ReservationName): Ironic
	// compares exact names (rules.LockReleasable), so neither a peer nor
	// that conductor restarting ever releases it.
	StuckLockNeverReleased
)

var stuckNames = [...]string{"", "lock_holder_not_alive", "no_conductor", "conductor_not_alive",
	"no_lock_no_worker", "lock_never_released"}

// String is the reason's label value ("" when not stuck).
func (s Stuck) String() string {
	if int(s) < len(stuckNames) {
		return stuckNames[s]
	}
	return "unknown"
}

// StuckReasons lists every Stuck reason in a fixed order.
var StuckReasons = []Stuck{StuckLockHolder, StuckNoConductor, StuckConductorNotAlive,
	StuckNoWorker, StuckLockNeverReleased}

// Running reports whether a conductor is still running Ironic's conductor
// service: alive, or draining (it finishes its work and keeps
// heartbeating). Stopped and dead conductors are what Ironic's
// get_offline_conductors returns (a heartbeat older than
// heartbeat_timeout); on SQLite, where Ironic keeps no heartbeats, State
// follows online.
func (c *ConductorInfo) Running() bool {
	return c.State == rules.StateAlive || c.State == rules.StateDraining
}

// AffinityKey groups nodes whose boot environment is not reachable.
type AffinityKey struct {
	// ConductorGroup is the node's group.
	ConductorGroup string
	// Affinity is AffinityNotAlive or AffinityMissing.
	Affinity Affinity
}

// StuckKey groups stuck nodes.
type StuckKey struct {
	// ConductorGroup is the node's group.
	ConductorGroup string
	// ProvisionState is the bounded label (ProvisionStateLabel).
	ProvisionState string
	// Reason is why it is stuck.
	Reason Stuck
}

// lifecycle fills the affinity, provision state and stuck fields of t from
// its nodes, once the ring mapping is known.
func (t *Topology) lifecycle() {
	byID := make(map[int64]int, len(t.Conductors))
	for i := range t.Conductors {
		c := &t.Conductors[i]
		byID[c.ID] = i
		c.ProvisionStates = make([]int, len(ProvisionStates)+1)
	}
	t.AffinityUnavailable = map[AffinityKey]int{}
	t.Stuck = map[StuckKey]int{}
	t.Actions = map[ActionKey]int{}
	t.Faults = map[FaultKey]int{}
	t.Health = map[FaultKey]int{}
	prepared := make([]int, len(t.Conductors))
	bound := t.Rules.NoLockBound()
	for i := range t.Nodes {
		n := &t.Nodes[i]
		var owner *ConductorInfo
		if n.Conductor != "" {
			owner = &t.Conductors[t.byHost[n.Conductor]]
			owner.ProvisionStates[ProvisionStateIndex(n.ProvisionState)]++
			if n.Maintenance {
				owner.Maintenance++
			}
		}
		n.Affinity = AffinityNone
		if n.HasConductorAffinity {
			ai, ok := byID[int64(n.ConductorAffinity)]
			switch {
			case !ok:
				n.Affinity = AffinityMissing
			case t.Conductors[ai].Running():
				n.Affinity = AffinityUp
			default:
				n.Affinity = AffinityNotAlive
			}
			if ok {
				n.affinityHost = &t.Conductors[ai].Hostname
				prepared[ai]++
			}
			if n.Affinity != AffinityUp && bootMatters(n.ProvisionState) {
				t.AffinityUnavailable[AffinityKey{n.ConductorGroup, n.Affinity}]++
			}
			if owner != nil && (!ok || n.AffinityHost() != owner.Hostname) {
				owner.AffinityElsewhere++
			}
		}
		if n.Fault != nil {
			t.Faults[FaultKey{n.ConductorGroup, n.Conductor, rules.FaultLabel(*n.Fault)}]++
		}
		if n.Health != nil {
			t.Health[FaultKey{n.ConductorGroup, n.Conductor, rules.HealthLabel(*n.Health)}]++
		}
		if n.ProvisionState != nil {
			if a, ok := rules.ActionOf(*n.ProvisionState); ok {
				t.Actions[ActionKey{a, n.ConductorGroup}]++
			}
		}
		if InProgress(n.ProvisionState) {
			n.Stuck = t.stuck(n, owner, bound)
			if n.Stuck != NotStuck {
				t.Stuck[StuckKey{n.ConductorGroup, ProvisionStateLabel(n.ProvisionState), n.Stuck}]++
			}
		}
	}
	total := 0
	for _, n := range prepared {
		total += n
	}
	backing := make([]int, 0, total) // one allocation for all lists, of the nodes prepared only
	for ci := range t.Conductors {
		end := len(backing) + prepared[ci]
		t.Conductors[ci].Prepared = backing[len(backing):len(backing):end]
		backing = backing[:end]
	}
	for i := range t.Nodes {
		if n := &t.Nodes[i]; n.affinityHost != nil {
			c := &t.Conductors[t.byHost[*n.affinityHost]]
			c.Prepared = append(c.Prepared, i)
		}
	}
}

// stuck says why node n, in progress, cannot move on; owner is its ring's
// conductor (nil when none). A node in a step state with no lock that is
// not stuck yet moves noLockDeadline.
func (t *Topology) stuck(n *NodeInfo, owner *ConductorInfo, bound time.Duration) Stuck {
	if n.Reservation != nil {
		switch c, exact := t.LockHolder(*n.Reservation); {
		case c != nil && c.Running():
		case c != nil && !exact:
			return StuckLockNeverReleased
		default:
			return StuckLockHolder
		}
	}
	switch {
	case owner == nil:
		return StuckNoConductor
	case !owner.Running():
		return StuckConductorNotAlive
	case n.Reservation != nil || !stepStates[*n.ProvisionState]:
		return NotStuck
	}
	// updated_at, not provision_updated_at: it moves with every write, so
	// a node it calls unchanged has not changed state either.
	since := n.UpdatedAt.Time()
	if n.UpdatedAt.IsZero() {
		since = n.CreatedAt.Time()
	}
	deadline := since.Add(bound)
	if t.Now.After(deadline) {
		return StuckNoWorker
	}
	if t.noLockDeadline.IsZero() || deadline.Before(t.noLockDeadline) {
		t.noLockDeadline = deadline
	}
	return NotStuck
}
