package rules

import (
	"testing"
	"time"
)

// TestStopClearsLocks: up to 21.x del_host clears the locks first; from
// 22.0 (6a9e319fb) the stop keeps them and waits for them.
func TestStopClearsLocks(t *testing.T) {
	for _, c := range []struct {
		release string
		clears  bool
	}{{"16.0", true}, {"21.4", true}, {"22.0", false}, {"29.0", false}, {"38.0", false}} {
		r := New(MustRelease(c.release), PostgreSQL, Settings{})
		if r.StopClearsLocks() != c.clears {
			t.Errorf("%s: StopClearsLocks %v, want %v", c.release, r.StopClearsLocks(), c.clears)
		}
		// live: 21.4 and 39.0 keep online=1 at a SIGUSR1 stop, 29.0 writes 0
		if keeps := c.release != "29.0"; r.StopWithoutUnregisterKeepsOnline() != keeps {
			t.Errorf("%s: StopWithoutUnregisterKeepsOnline %v, want %v", c.release, !keeps, keeps)
		}
	}
}

// TestOfflineForOrphans: get_offline_conductors is a stale heartbeat,
// online ignored; on SQLite 22.1+ online false instead.
func TestOfflineForOrphans(t *testing.T) {
	now := time.Date(2026, 12, 7, 8, 0, 0, 0, time.UTC)
	hb := 60 * time.Second
	for _, c := range []struct {
		name    string
		release string
		backend Backend
		online  bool
		age     time.Duration // of updated_at; -1: NULL
		want    bool
	}{
		{"fresh, online", "38.0", MySQL, true, hb, false},
		{"just stale, online (a crash)", "38.0", MySQL, true, hb + time.Microsecond, true},
		{"fresh, offline (draining)", "21.4", PostgreSQL, false, time.Second, false},
		{"stale, offline", "21.4", PostgreSQL, false, 2 * hb, true},
		{"NULL heartbeat", "29.0", MySQL, true, -1, false},
		{"sqlite 22.1+: online, stale", "29.0", SQLite, true, time.Hour, false},
		{"sqlite 22.1+: offline, fresh", "29.0", SQLite, false, time.Second, true},
		{"sqlite 22.0: heartbeats decide", "22.0", SQLite, true, time.Hour, true},
	} {
		r := New(MustRelease(c.release), c.backend, Settings{HeartbeatTimeout: hb})
		var at time.Time
		if c.age >= 0 {
			at = now.Add(-c.age)
		}
		if got := r.OfflineForOrphans(c.online, at, now); got != c.want {
			t.Errorf("%s: OfflineForOrphans = %v, want %v", c.name, got, c.want)
		}
	}
}

// TestOrphanFailedState: only DEPLOYING and CLEANING out of maintenance fail.
func TestOrphanFailedState(t *testing.T) {
	for _, c := range []struct {
		state, want string
		maintenance bool
	}{
		{"deploying", "deploy failed", false}, {"cleaning", "clean failed", false},
		{"deploying", "", true}, {"deleting", "", false}, {"wait call-back", "", false}, {"active", "", false},
	} {
		got, ok := OrphanFailedState(c.state, c.maintenance)
		if got != c.want || ok != (c.want != "") {
			t.Errorf("OrphanFailedState(%q, %v) = %q, %v, want %q", c.state, c.maintenance, got, ok, c.want)
		}
	}
}

// TestFailedState: the "fail" transitions out of the states no conductor
// resumes; other states are not failed at start.
func TestFailedState(t *testing.T) {
	for state, want := range map[string]string{"deleting": "error", "deploying": "deploy failed", "verifying": "enroll",
		"servicing": "service failed", "wait call-back": "", "active": "", "clean wait": ""} {
		if got, ok := FailedState(state); got != want || ok != (want != "") {
			t.Errorf("FailedState(%q) = %q, %v, want %q", state, got, ok, want)
		}
	}
}

// TestConductorObjectVersion: the versions Detect reads back.
func TestConductorObjectVersion(t *testing.T) {
	for _, c := range []struct{ release, want string }{
		{"11.1", "1.3"}, {"21.4", "1.3"}, {"24.1", "1.3"}, {"25.0", "1.4"}, {"29.0", "1.4"},
		{"32.0", "1.6"}, {Newest.String(), "1.6"}, {"99.0", "1.6"}, {"9.0", ""},
	} {
		if got := ConductorObjectVersion(MustRelease(c.release)); got != c.want {
			t.Errorf("ConductorObjectVersion(%s) = %q, want %q", c.release, got, c.want)
		}
	}
}
