package rules

import "time"

// conductorCleanupSince: ConductorManager.cleanup_stale_conductors, commit
// 6135a00c3 "Add periodic cleanup of stale conductors" (32.0).
var conductorCleanupSince = Release{32, 0}

// Ironic's defaults of [conductor]conductor_cleanup_interval (86400) and
// conductor_cleanup_timeout (1209600: two weeks), 6135a00c3.
const (
	defaultCleanupInterval = 24 * time.Hour
	defaultCleanupTimeout  = 14 * 24 * time.Hour
)

// cleanupRuns reports whether Ironic's periodic cleanup_stale_conductors
// (ironic/conductor/manager.py, 32.0+, 6135a00c3) runs and gets past its
// checks: enabled (conductor_cleanup_interval > 0), heartbeat_timeout > 0
// and conductor_cleanup_timeout at least 3x heartbeat_timeout (else it logs
// a warning and returns).
func (r Rules) cleanupRuns() bool {
	s := r.s
	return !r.release.Before(conductorCleanupSince) && s.ConductorCleanupInterval > 0 &&
		s.HeartbeatTimeout > 0 && s.ConductorCleanupTimeout >= 3*s.HeartbeatTimeout
}

// RowDeletion says from when Ironic's stale conductor cleanup deletes the
// conductor's row: its first run at or after that time (one every
// conductor_cleanup_interval on each conductor) deletes it; a time in the
// past means at the next run. It does so only where Ironic runs on SQLite:
// _cleanup_stale_conductors takes every row with online false there
// (dbapi.get_offline_conductors). On every other database it compares the
// object's updated_at, timezone-aware, with timeutils.utcnow(), naive:
// Python raises TypeError, the task logs "Encountered error while cleaning
// up stale conductors" and deletes nothing, on every release from 32.0 to
// the newest read (39.0, and openstack/ironic at 7bc6aba7d): see
// CleanupFails. false when Ironic does not delete the row.
func (r Rules) RowDeletion(online bool, updatedAt time.Time) (time.Time, bool) {
	if !r.cleanupRuns() || !r.sqlite || online {
		return time.Time{}, false
	}
	return updatedAt, true
}

// CleanupFails reports whether Ironic's stale conductor cleanup runs and
// fails at every run, deleting nothing (RowDeletion): 32.0+ outside SQLite,
// the cleanup enabled and its settings accepted.
func (r Rules) CleanupFails() bool { return r.cleanupRuns() && !r.sqlite }

// ConductorCleanupInterval is how often each conductor runs the stale
// conductor cleanup ([conductor]conductor_cleanup_interval; negative when
// disabled).
func (r Rules) ConductorCleanupInterval() time.Duration { return r.s.ConductorCleanupInterval }
