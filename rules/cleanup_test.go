package rules

import (
	"testing"
	"time"
)

// TestRowDeletion: when Ironic's cleanup_stale_conductors (32.0+,
// 6135a00c3) deletes a conductor's row, as _cleanup_stale_conductors and
// dbapi.get_offline_conductors pick rows, and when it never does.
func TestRowDeletion(t *testing.T) {
	now := time.Date(2026, 12, 7, 12, 0, 0, 0, time.UTC)
	hb := 60 * time.Second
	day := 24 * time.Hour
	for _, tc := range []struct {
		name      string
		release   string
		backend   Backend
		s         Settings
		online    bool
		updatedAt time.Time
		want      time.Time
		ok        bool
	}{
		{"stale offline row, defaults: two weeks after its heartbeat", "32.0", PostgreSQL, Settings{HeartbeatTimeout: hb},
			false, now.Add(-time.Hour), now.Add(-time.Hour + 14*day), true},
		{"online is not looked at: a dead conductor's row too", "39.0", MySQL, Settings{HeartbeatTimeout: hb},
			true, now.Add(-time.Hour), now.Add(-time.Hour + 14*day), true},
		{"past due: at the next run", "32.0", PostgreSQL, Settings{HeartbeatTimeout: hb, ConductorCleanupTimeout: 3 * hb},
			false, now.Add(-time.Hour), now.Add(-time.Hour + 3*hb), true},
		{"a fresh heartbeat is not offline", "32.0", PostgreSQL, Settings{HeartbeatTimeout: hb},
			false, now.Add(-30 * time.Second), time.Time{}, false},
		{"NULL updated_at is never offline", "32.0", PostgreSQL, Settings{HeartbeatTimeout: hb},
			false, time.Time{}, time.Time{}, false},
		{"before 32.0: never", "31.0", PostgreSQL, Settings{HeartbeatTimeout: hb},
			false, now.Add(-time.Hour), time.Time{}, false},
		{"interval 0 disables it", "32.0", PostgreSQL, Settings{HeartbeatTimeout: hb, ConductorCleanupInterval: -1},
			false, now.Add(-time.Hour), time.Time{}, false},
		{"timeout under 3x heartbeat_timeout: Ironic refuses", "32.0", PostgreSQL,
			Settings{HeartbeatTimeout: hb, ConductorCleanupTimeout: 3*hb - time.Second}, false, now.Add(-time.Hour), time.Time{}, false},
		{"heartbeat_timeout 0: Ironic refuses", "32.0", PostgreSQL, Settings{HeartbeatTimeout: 0},
			false, now.Add(-time.Hour), time.Time{}, false},
		{"SQLite: any offline row at the next run", "32.0", SQLite, Settings{HeartbeatTimeout: hb},
			false, now.Add(-time.Second), now.Add(-time.Second), true},
		{"SQLite: an online row never", "32.0", SQLite, Settings{HeartbeatTimeout: hb},
			true, now.Add(-time.Hour), time.Time{}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := New(MustRelease(tc.release), tc.backend, tc.s)
			got, ok := r.RowDeletion(tc.online, tc.updatedAt, now)
			if ok != tc.ok || !got.Equal(tc.want) {
				t.Errorf("RowDeletion = %v, %v; want %v, %v", got, ok, tc.want, tc.ok)
			}
		})
	}
	if got := New(MustRelease("32.0"), PostgreSQL, Settings{}).ConductorCleanupInterval(); got != day {
		t.Errorf("default interval %v, want a day", got)
	}
}
