package rules

// Ironic refuses a new deploy, tear-down or cleaning (ConcurrentActionLimit)
// when too many nodes are already in that kind of work: mass provisioning
// then stalls with every conductor alive. ConductorManager.
// _concurrent_action_limit (ironic/conductor/manager.py), added in 21.1 by
// commit 9a8b1d149, counts the nodes in the action's provision states with
// dbapi.count_nodes_in_provision_state and refuses once the count reaches
// [conductor]max_concurrent_deploy or max_concurrent_clean. From 35.0
// (commit 6aa99fb66) [conductor]max_concurrent_per_conductor_group counts
// only the nodes of the conductor's own group.

// Action is a kind of work whose concurrency Ironic limits.
type Action uint8

const (
	// ActionDeploy is do_node_deploy: nodes deploying or in wait call-back
	// count against [conductor]max_concurrent_deploy.
	ActionDeploy Action = iota
	// ActionClean is do_node_tear_down and do_node_clean: nodes deleting,
	// cleaning or in clean wait count against [conductor]max_concurrent_clean.
	ActionClean
)

// Actions are the limited actions, in the order of their labels.
var Actions = []Action{ActionDeploy, ActionClean}

// String is the action's label value.
func (a Action) String() string {
	if a == ActionDeploy {
		return "deploy"
	}
	return "clean"
}

// ActionOf reports which limited action a node in provision state counts
// against, as _concurrent_action_limit lists the states: DEPLOYING and
// DEPLOYWAIT for provisioning; DELETING, CLEANING and CLEANWAIT for
// unprovisioning and cleaning.
func ActionOf(provisionState string) (Action, bool) {
	switch provisionState {
	case "deploying", "wait call-back":
		return ActionDeploy, true
	case "deleting", "cleaning", "clean wait":
		return ActionClean, true
	}
	return 0, false
}

// Default limits of [conductor]max_concurrent_deploy and
// max_concurrent_clean (ironic/conf/conductor.py, both with min=1).
const (
	DefaultMaxConcurrentDeploy = 250
	DefaultMaxConcurrentClean  = 50
)

var concurrencySince = Release{21, 1}         // commit 9a8b1d149
var concurrencyPerGroupSince = Release{35, 0} // commit 6aa99fb66

// ConcurrencyLimits are the limits Ironic applies to new actions.
type ConcurrencyLimits struct {
	// Deploy and Clean are the limits of ActionDeploy and ActionClean.
	Deploy, Clean int
	// PerGroup: each conductor counts only the nodes of its own conductor
	// group; otherwise the count is over every node.
	PerGroup bool
}

// Limit is the limit of action a.
func (l ConcurrencyLimits) Limit(a Action) int {
	if a == ActionDeploy {
		return l.Deploy
	}
	return l.Clean
}

// ConcurrencyLimits returns the limits this release applies, and false for
// a release before 21.1, which has none. A limit of the settings below 1
// (unset) is Ironic's default; max_concurrent_per_conductor_group is
// honoured from 35.0.
func (r Rules) ConcurrencyLimits() (ConcurrencyLimits, bool) {
	if !r.release.AtLeast(concurrencySince) {
		return ConcurrencyLimits{}, false
	}
	l := ConcurrencyLimits{Deploy: r.s.MaxConcurrentDeploy, Clean: r.s.MaxConcurrentClean,
		PerGroup: r.s.MaxConcurrentPerConductorGroup && r.release.AtLeast(concurrencyPerGroupSince)}
	if l.Deploy < 1 {
		l.Deploy = DefaultMaxConcurrentDeploy
	}
	if l.Clean < 1 {
		l.Clean = DefaultMaxConcurrentClean
	}
	return l, true
}
