package rules

import (
	"testing"
	"time"
)

// TestRowDeletion: Ironic's cleanup_stale_conductors (32.0+, 6135a00c3)
// deletes the rows of offline conductors on SQLite only; elsewhere it runs
// and fails at every run (a naive and an aware time compared, seen on a
// real 39.0 fleet on PostgreSQL); and it does not run at all when disabled
// or refused.
func TestRowDeletion(t *testing.T) {
	hb := 60 * time.Second
	stopped := time.Date(2026, 12, 7, 11, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name    string
		release string
		backend Backend
		s       Settings
		online  bool
		ok      bool
		fails   bool
	}{
		{"SQLite: an offline row at the next run", "32.0", SQLite, Settings{HeartbeatTimeout: hb}, false, true, false},
		{"SQLite: an online row never", "39.0", SQLite, Settings{HeartbeatTimeout: hb}, true, false, false},
		{"PostgreSQL: the cleanup fails, nothing deleted", "39.0", PostgreSQL, Settings{HeartbeatTimeout: hb}, false, false, true},
		{"MySQL: the same", "32.0", MySQL, Settings{HeartbeatTimeout: hb}, true, false, true},
		{"SQLite Ironic read through its file by connection string", "32.0", PostgreSQL,
			Settings{HeartbeatTimeout: hb, Connection: "sqlite:////var/lib/ironic/ironic.db"}, false, true, false},
		{"before 32.0: no cleanup", "31.0", SQLite, Settings{HeartbeatTimeout: hb}, false, false, false},
		{"interval 0 disables it", "32.0", PostgreSQL, Settings{HeartbeatTimeout: hb, ConductorCleanupInterval: -1}, false, false, false},
		{"timeout under 3x heartbeat_timeout: refused", "32.0", SQLite,
			Settings{HeartbeatTimeout: hb, ConductorCleanupTimeout: 3*hb - time.Second}, false, false, false},
		{"heartbeat_timeout 0: refused", "32.0", PostgreSQL, Settings{HeartbeatTimeout: 0}, false, false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := New(MustRelease(tc.release), tc.backend, tc.s)
			got, ok := r.RowDeletion(tc.online, stopped)
			if ok != tc.ok || (ok && !got.Equal(stopped)) {
				t.Errorf("RowDeletion = %v, %v; want ok %v", got, ok, tc.ok)
			}
			if f := r.CleanupFails(); f != tc.fails {
				t.Errorf("CleanupFails = %v, want %v", f, tc.fails)
			}
		})
	}
	if got := New(MustRelease("32.0"), PostgreSQL, Settings{}).ConductorCleanupInterval(); got != 24*time.Hour {
		t.Errorf("default interval %v, want a day", got)
	}
}
