package rules

import (
	"strings"
	"time"
)

// hostPortSince is the release from which a JSON-RPC conductor whose
// [json_rpc]port is not 8089 registers as "HOST:PORT" (commit c84fe147a
// "Utilize the JSON-RPC port", 23.0.0).
var hostPortSince = Release{23, 0}

// ReservationName is the name a conductor registered as hostname writes
// into nodes.reservation when it locks a node. From 23.0 (commit c84fe147a,
// ironic/conductor/base_manager.py prepare_host) a JSON-RPC conductor whose
// [json_rpc]port is not 8089 registers as "HOST:PORT" (an IPv6 HOST in
// brackets, netutils.escape_ipv6), while its locks keep CONF.host, the bare
// HOST (ironic/conductor/task_manager.py: Node.reserve(context, CONF.host,
// ...)). Any other hostname, and every hostname before 23.0, reserves as
// itself.
func (r Rules) ReservationName(hostname string) string {
	if r.release.Before(hostPortSince) {
		return hostname
	}
	i := strings.LastIndexByte(hostname, ':')
	if i <= 0 || i == len(hostname)-1 || strings.Trim(hostname[i+1:], "0123456789") != "" {
		return hostname
	}
	host := hostname[:i]
	if len(host) > 2 && host[0] == '[' && host[len(host)-1] == ']' {
		return host[1 : len(host)-1]
	}
	if strings.Contains(host, ":") {
		return hostname // a bare IPv6 address, not HOST:PORT
	}
	return host
}

// LockReleasable reports whether Ironic ever releases, by itself, a lock
// whose reservation names reservation and that is attributed to the
// conductor registered as hostname once that conductor is gone. Every
// release compares the exact names: a peer's _check_orphan_nodes releases
// the nodes reserved_by_any_of get_offline_conductors()' hostnames
// (ironic/conductor/manager.py, commit 5694b98fc, which replaced
// _check_deploying_status in 11.0), and a restarting conductor clears the
// reservations of its own registered name (base_manager.py prepare_host,
// clear_node_reservations_for_conductor(self.host)). So the bare HOST lock
// of a "HOST:PORT" conductor (ReservationName) is released only by the
// worker that holds it: after a crash nothing releases it.
func LockReleasable(reservation, hostname string) bool { return reservation == hostname }

// NoLockBound is how long a node may stay in a state a step works in
// (STUCK_STATES_TREATED_AS_FAIL) without a lock while a worker may still be
// at it: a stopping conductor's workers live at most
// graceful_shutdown_timeout after the stop (21.x clears its locks first:
// base_manager.py del_host; from 22.0, commit 6a9e319fb, the locks are kept
// until the workers end or that timeout), and peers judge it offline
// heartbeat_timeout after its last heartbeat. Past the larger of the two,
// a node in such a state with no lock has no worker: it stays there until
// a conductor the ring maps it to starts (base_manager.py
// _correct_stuck_states fails it) or an operator acts.
func (r Rules) NoLockBound() time.Duration {
	return max(r.s.GracefulShutdownTimeout, r.s.HeartbeatTimeout)
}

// TakeoverRounds is how many sync_local_state_interval periods Ironic
// needs to take over n nodes that one conductor now serves and another
// prepared: _sync_local_state (ironic/conductor/manager.py, commit
// cf1b42ea3 "Add a helper for node-based periodics", 19.0, limit =
// periodic_max_workers) takes over at most periodic_max_workers nodes per
// run.
func (r Rules) TakeoverRounds(n int) int {
	if n <= 0 {
		return 0
	}
	return (n + r.s.PeriodicMaxWorkers - 1) / r.s.PeriodicMaxWorkers
}

// TakeoverTime is about how long Ironic needs to take over n nodes of one
// conductor (TakeoverRounds periods of sync_local_state_interval).
func (r Rules) TakeoverTime(n int) time.Duration {
	return time.Duration(r.TakeoverRounds(n)) * r.s.SyncLocalStateInterval
}
