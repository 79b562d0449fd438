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

// RowDeletion says from when Ironic's periodic cleanup_stale_conductors
// (ironic/conductor/manager.py, 32.0+, 6135a00c3) deletes the conductor's
// row: its first run at or after that time, one every
// conductor_cleanup_interval on each conductor, deletes it. A time in the
// past means at the next run. false when Ironic does not delete it as
// things stand: a release before 32.0, the cleanup disabled (interval 0)
// or refused by Ironic (heartbeat_timeout <= 0, or conductor_cleanup_timeout
// below 3x heartbeat_timeout: the task logs a warning and returns), or the
// row is not one _cleanup_stale_conductors picks: outside SQLite, a row
// whose heartbeat (updated_at) is not older than heartbeat_timeout
// (dbapi.get_offline_conductors; online is not looked at) or NULL, deleted
// once it is older than conductor_cleanup_timeout; on SQLite, where Ironic
// keeps no heartbeats, any row with online false, at the next run.
func (r Rules) RowDeletion(online bool, updatedAt, now time.Time) (time.Time, bool) {
	s := r.s
	if r.release.Before(conductorCleanupSince) || s.ConductorCleanupInterval < 0 ||
		s.HeartbeatTimeout <= 0 || s.ConductorCleanupTimeout < 3*s.HeartbeatTimeout {
		return time.Time{}, false
	}
	if r.sqlite {
		if online {
			return time.Time{}, false
		}
		return updatedAt, true
	}
	if updatedAt.IsZero() || !updatedAt.Before(now.Add(-s.HeartbeatTimeout)) {
		return time.Time{}, false
	}
	return updatedAt.Add(s.ConductorCleanupTimeout), true
}

// ConductorCleanupInterval is how often each conductor runs the stale
// conductor cleanup ([conductor]conductor_cleanup_interval).
func (r Rules) ConductorCleanupInterval() time.Duration { return r.s.ConductorCleanupInterval }
