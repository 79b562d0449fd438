package rules

import (
	"strings"
	"testing"
	"time"
)

// TestReservationName: from 23.0 a "HOST:PORT" conductor locks nodes as
// HOST (c84fe147a); other names, and every name before 23.0, as themselves.
func TestReservationName(t *testing.T) {
	r29 := New(Release{29, 0}, MySQL, Settings{})
	r21 := New(Release{21, 4}, MySQL, Settings{})
	for _, c := range []struct{ host, want29, want21 string }{
		{"127.0.0.2:8090", "127.0.0.2", "127.0.0.2:8090"},
		{"cond-1.example.org:9999", "cond-1.example.org", "cond-1.example.org:9999"},
		{"[fd00::2]:8090", "fd00::2", "[fd00::2]:8090"},
		{"fd00::2", "fd00::2", "fd00::2"}, // a bare IPv6 address: no port
		{"cond-1", "cond-1", "cond-1"},    // no port
		{"cond-1:", "cond-1:", "cond-1:"}, // empty port
		{"cond-1:a1", "cond-1:a1", "cond-1:a1"},
		{":8090", ":8090", ":8090"}, // no host
	} {
		if got := r29.ReservationName(c.host); got != c.want29 {
			t.Errorf("29.0 ReservationName(%q) = %q, want %q", c.host, got, c.want29)
		}
		if got := r21.ReservationName(c.host); got != c.want21 {
			t.Errorf("21.4 ReservationName(%q) = %q, want %q", c.host, got, c.want21)
		}
	}
	if got := New(Release{22, 1}, MySQL, Settings{}).ReservationName("h:8090"); got != "h:8090" {
		t.Errorf("22.1: %q, want the name itself (HOST:PORT names since 23.0)", got)
	}
	if got := New(Release{23, 0}, MySQL, Settings{}).ReservationName("h:8090"); got != "h" {
		t.Errorf("23.0: %q, want h", got)
	}
}

// TestLockReleasable: Ironic releases only locks that name a conductor
// exactly.
func TestLockReleasable(t *testing.T) {
	if !LockReleasable("c1", "c1") || LockReleasable("c1", "c1:8090") {
		t.Error("LockReleasable must compare exact names, as _check_orphan_nodes does")
	}
}

// TestNoLockBound: the larger of graceful_shutdown_timeout and
// heartbeat_timeout, Ironic's defaults filled in.
func TestNoLockBound(t *testing.T) {
	for _, c := range []struct {
		s    Settings
		want time.Duration
	}{
		{Settings{HeartbeatTimeout: time.Minute}, time.Minute},
		{Settings{HeartbeatTimeout: 20 * time.Second}, time.Minute}, // graceful's default
		{Settings{HeartbeatTimeout: 20 * time.Second, GracefulShutdownTimeout: 10 * time.Second}, 20 * time.Second},
		{Settings{HeartbeatTimeout: 20 * time.Second, GracefulShutdownTimeout: 5 * time.Minute}, 5 * time.Minute},
		{Settings{HeartbeatTimeout: 20 * time.Second, GracefulShutdownTimeout: -1}, 20 * time.Second}, // endless wait
	} {
		if got := New(Release{21, 4}, MySQL, c.s).NoLockBound(); got != c.want {
			t.Errorf("%+v: NoLockBound %v, want %v", c.s, got, c.want)
		}
	}
}

// TestTakeover: periodic_max_workers nodes per sync_local_state_interval.
func TestTakeover(t *testing.T) {
	def := New(Release{21, 4}, MySQL, Settings{HeartbeatTimeout: time.Minute})
	for n, want := range map[int]int{0: 0, 1: 1, 8: 1, 9: 2, 100: 13} {
		if got := def.TakeoverRounds(n); got != want {
			t.Errorf("TakeoverRounds(%d) = %d, want %d", n, got, want)
		}
	}
	if got := def.TakeoverTime(100); got != 13*180*time.Second {
		t.Errorf("TakeoverTime(100) = %v with the defaults, want 39m", got)
	}
	small := New(Release{21, 4}, MySQL, Settings{PeriodicMaxWorkers: 4, SyncLocalStateInterval: 20 * time.Second})
	if got := small.TakeoverTime(10); got != time.Minute {
		t.Errorf("TakeoverTime(10) with 4 per 20s = %v, want 1m", got)
	}
}

// TestStateMeaning: draining is told per release; dead never claims a
// crash alone.
func TestStateMeaning(t *testing.T) {
	for _, c := range []struct {
		rel   Release
		heart bool
		want  string
	}{
		{Release{21, 4}, false, "locks are already cleared"},
		{Release{22, 0}, false, "holding its locks, for up to graceful_shutdown_timeout"},
		{Release{23, 1}, true, "still heartbeating"},
		{Release{31, 0}, true, "still heartbeating"},
		{Release{32, 0}, false, "peers break them"},
		{Release{39, 0}, false, "peers break them"},
	} {
		r := New(c.rel, PostgreSQL, Settings{HeartbeatTimeout: time.Minute})
		if r.DrainHeartbeats() != c.heart {
			t.Errorf("%s: DrainHeartbeats %v, want %v", c.rel, r.DrainHeartbeats(), c.heart)
		}
		if got := r.StateMeaning(StateDraining); !strings.Contains(got, c.want) {
			t.Errorf("%s: draining means %q, want %q in it", c.rel, got, c.want)
		}
		if got := r.StateMeaning(StateDead); !strings.Contains(got, "without unregistering") {
			t.Errorf("%s: dead means %q: a SIGUSR1 stop looks the same", c.rel, got)
		}
	}
}
