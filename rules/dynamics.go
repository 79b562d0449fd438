package rules

import "time"

// What a conductor writes over time, by release: how it stops, how its peers
// break the locks of a conductor gone offline. The demo's simulated
// conductors follow these (demo/events.go); the states and stuck reasons
// the exporter derives from what they write are in rules.go and locks.go.

// locksKeptAtStopSince: commit 6a9e319fb "On rpc service stop, wait for
// node reservation release" (22.0).
var locksKeptAtStopSince = Release{22, 0}

// StopClearsLocks reports whether a conductor that stops (SIGTERM, or
// SIGUSR1 and SIGTERM without unregistering) clears its locks at once,
// before it waits up to graceful_shutdown_timeout for its workers, which
// then go on without locks: up to 21.x (ironic/conductor/base_manager.py
// del_host calls clear_node_reservations_for_conductor first). From 22.0
// (commit 6a9e319fb) RPCService.stop calls del_host with
// clear_node_reservations=False and waits until its reservations are
// released (has_reserved) or graceful_shutdown_timeout has passed: the
// locks of workers still running when it exits stay, until its peers break
// them (OfflineForOrphans).
func (r Rules) StopClearsLocks() bool { return r.release.Before(locksKeptAtStopSince) }

// StopWithoutUnregisterKeepsOnline reports whether a conductor stopped
// without unregistering (SIGUSR1, then SIGTERM: del_host(deregister=False))
// leaves online=true: its keepalive stops at once up to 23.0 (del_host
// sets _keepalive_evt first) and from 32.0 (keepalive_halt in del_host,
// bbf57b1c2). On 23.1-31.x (3f9151163) the keepalive goes on until the
// process exits writing online=not self._shutdown, that is false
// (DrainHeartbeats): there the stop reads as draining, then stopped.
func (r Rules) StopWithoutUnregisterKeepsOnline() bool { return !r.DrainHeartbeats() }

// OfflineForOrphans reports whether Ironic's get_offline_conductors
// (ironic/db/sqlalchemy/api.py) returns the conductor, so that its peers'
// _check_orphan_nodes (ironic/conductor/manager.py, commit 5694b98fc, 11.0;
// the peer itself excluded, 4cf0147e8) release the nodes it reserved (by
// its exact name: LockReleasable) and fail those in OrphanFailedState:
// updated_at older than heartbeat_timeout, online ignored (a NULL
// updated_at is never older); on SQLite from 22.1 (commit 0099d1812, no
// heartbeats there) online false instead.
func (r Rules) OfflineForOrphans(online bool, updatedAt, now time.Time) bool {
	if r.sqlite && r.release.AtLeast(sqliteSince) {
		return !online
	}
	return !updatedAt.IsZero() && updatedAt.Before(now.Add(-r.s.HeartbeatTimeout))
}

// OrphanFailedState is the state _check_orphan_nodes
// (ironic/conductor/manager.py, 5694b98fc) moves a node to once it broke
// the lock of an offline holder: DEPLOYING to "deploy failed", CLEANING to
// "clean failed" (and maintenance), both only out of maintenance; every
// other state stays as it is (false), with no lock: a step state then has
// no worker (see NoLockBound) until a conductor mapping the node starts.
func OrphanFailedState(provisionState string, maintenance bool) (string, bool) {
	if maintenance {
		return "", false
	}
	switch provisionState {
	case "deploying":
		return "deploy failed", true
	case "cleaning":
		return "clean failed", true
	}
	return "", false
}

// failedStates are the "fail" transitions of Ironic's provision state
// machine (ironic/common/states.py; state_machine.py in newer releases)
// out of STUCK_STATES_TREATED_AS_FAIL,
// the states no conductor resumes after the one working in them is gone
// (SERVICING among them from 29.0, commit e91685f33).
var failedStates = map[string]string{
	"deploying": "deploy failed", "cleaning": "clean failed", "verifying": "enroll",
	"inspecting": "inspect failed", "adopting": "adopt failed", "rescuing": "rescue failed",
	"unrescuing": "unrescue failed", "deleting": "error", "servicing": "service failed",
}

// FailedState is the state a starting conductor moves an unlocked node in
// provisionState to, for the nodes its rings map to it, when no conductor
// can resume that state (ironic/conductor/base_manager.py init_host calls
// _fail_transient_state for each of STUCK_STATES_TREATED_AS_FAIL), and
// false for the other states.
func FailedState(provisionState string) (string, bool) {
	to, ok := failedStates[provisionState]
	return to, ok
}

// ConductorObjectVersion is the Conductor object version the conductors of
// release r write into conductors.version (ironic/common/release_mappings.py,
// as releases.tsv records it; Detect reads it back): "1.3" for 11.1-24.x,
// "1.4" for 25.0-31.x, "1.6" from 32.0. A release newer than the newest
// known writes the newest's; one older than the oldest known, "".
func ConductorObjectVersion(r Release) string {
	best, version := Release{}, ""
	for v, rels := range objVersions {
		for _, rel := range rels {
			if !rel.Before(best) && !r.Before(rel) {
				best, version = rel, v
			}
		}
	}
	return version
}
