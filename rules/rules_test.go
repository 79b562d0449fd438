package rules

import (
	"slices"
	"testing"
	"time"

	"github.com/ironic-conductor-exporter/ironic-conductor-exporter/ring"
)

func TestParseRelease(t *testing.T) {
	for _, c := range []struct {
		in, want string
	}{
		{"29.0", "29.0"}, {"29.0.5", "29.0"}, {"1:29.0.5-0+deb13u3", "29.0"},
		{"2025.1", "29.0"}, {"2023.1", "21.4"}, {"antelope", "21.4"}, {"Victoria", "16.0"},
		{"2026.1", "35.0"}, {"16.0.4", "16.0"}, {" 21.4 ", "21.4"},
	} {
		got, err := ParseRelease(c.in)
		if err != nil || got.String() != c.want {
			t.Errorf("ParseRelease(%q) = %v, %v; want %s", c.in, got, err, c.want)
		}
	}
	for _, bad := range []string{"", "29", "x.y", "2099.1", "1.2.3.4", "-1.0"} {
		if r, err := ParseRelease(bad); err == nil {
			t.Errorf("ParseRelease(%q) = %v, want an error", bad, r)
		}
	}
	if !MustRelease("21.10").AtLeast(MustRelease("21.9")) || !MustRelease("9.2").Before(MustRelease("11.1")) {
		t.Error("releases order by number, not by text")
	}
}

// at builds the rules of release on backend with a 30s timeout.
func at(release string, b Backend) Rules {
	return New(MustRelease(release), b, Settings{HeartbeatTimeout: 30 * time.Second})
}

var now = time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC)

// heartbeat ages around the 30s timeout: the edges are inclusive (is_older_than
// is "older than", _filter_active_conductors is updated_at >= limit).
var (
	fresh  = now.Add(-30 * time.Second)
	stale  = now.Add(-30*time.Second - time.Microsecond)
	never  = time.Time{}
	future = now.Add(time.Second)
)

func TestAlive(t *testing.T) {
	for _, c := range []struct {
		release string
		backend Backend
		online  bool
		updated time.Time
		want    bool
	}{
		{"16.0", PostgreSQL, true, fresh, true},
		{"16.0", PostgreSQL, false, fresh, true}, // online ignored before 25.0
		{"16.0", PostgreSQL, true, stale, false},
		{"21.4", MySQL, false, fresh, true},
		{"24.1", PostgreSQL, false, fresh, true},
		{"25.0", PostgreSQL, false, fresh, false}, // 161374f76
		{"25.0", PostgreSQL, true, fresh, true},
		{"29.0", MySQL, true, stale, false},
		{"29.0", SQLite, true, stale, false}, // no heartbeats on SQLite, still not alive
		{"38.0", PostgreSQL, true, never, false},
		{"21.4", SQLite, true, stale, false},
	} {
		if got := at(c.release, c.backend).Alive(c.online, c.updated, now); got != c.want {
			t.Errorf("%s %s Alive(online=%v, age %s) = %v, want %v", c.release, c.backend, c.online, now.Sub(c.updated), got, c.want)
		}
	}
}

func TestRingMember(t *testing.T) {
	for _, c := range []struct {
		release string
		backend Backend
		timeout time.Duration
		online  bool
		updated time.Time
		want    bool
	}{
		{"11.1", PostgreSQL, 30 * time.Second, true, fresh, true},
		{"16.0", PostgreSQL, 30 * time.Second, true, stale, false},
		{"16.0", SQLite, 30 * time.Second, true, stale, false}, // SQLite heartbeats before 22.1
		{"22.0", SQLite, 30 * time.Second, true, stale, false},
		{"22.1", SQLite, 30 * time.Second, true, stale, true}, // 0099d1812
		{"22.1", SQLite, 30 * time.Second, false, fresh, false},
		{"22.1", PostgreSQL, 30 * time.Second, true, stale, false},
		{"29.0", MySQL, 30 * time.Second, false, fresh, false},
		{"29.0", SQLite, 30 * time.Second, true, never, true},
		// heartbeat_timeout <= 0: nothing is fresh before 22.1 (but the future)
		{"21.4", PostgreSQL, 0, true, fresh, false},
		{"21.4", PostgreSQL, 0, true, future, true},
		{"22.1", PostgreSQL, 0, true, stale, true},
		{"29.0", MySQL, -5 * time.Second, true, never, true},
	} {
		r := New(MustRelease(c.release), c.backend, Settings{HeartbeatTimeout: c.timeout})
		if got := r.RingMember(c.online, c.updated, now); got != c.want {
			t.Errorf("%s %s timeout %s RingMember(online=%v, age %s) = %v, want %v",
				c.release, c.backend, c.timeout, c.online, now.Sub(c.updated), got, c.want)
		}
	}
}

func TestIronicUsesSQLite(t *testing.T) {
	for _, c := range []struct {
		url  string
		want bool
	}{
		{"sqlite:////var/lib/ironic/ironic.sqlite", true},
		{"SQLITE:///x", true},
		{"postgresql+psycopg2://ironic:pw@db/ironic", false},
		{"mysql+pymysql://ironic:pw@db/ironic_sqlite_migrated", true}, // a substring test, as Ironic's
	} {
		if got := IronicUsesSQLite(c.url); got != c.want {
			t.Errorf("IronicUsesSQLite(%q) = %v", c.url, got)
		}
	}
	r := New(MustRelease("29.0"), MySQL, Settings{Connection: "mysql+pymysql://ironic:sqlitepw@db/ironic"})
	if !r.IronicUsesSQLite() || r.Heartbeats() || !r.RingMember(true, never, now) {
		t.Error("29.0 on MySQL with \"sqlite\" in its connection URL follows Ironic's SQLite rules")
	}
	r = New(MustRelease("29.0"), SQLite, Settings{Connection: "postgresql://elsewhere/ironic"})
	if r.IronicUsesSQLite() {
		t.Error("the connection Ironic has decides, not the exporter's backend")
	}
}

func TestHeartbeatsStatesAndCache(t *testing.T) {
	for _, c := range []struct {
		release    string
		backend    Backend
		heartbeats bool
		states     []State
	}{
		{"16.0", SQLite, true, []State{StateAlive, StateDraining, StateStopped, StateDead}},
		{"22.0", SQLite, true, []State{StateAlive, StateDraining, StateStopped, StateDead}},
		{"22.1", SQLite, false, []State{StateAlive, StateStopped}},
		{"29.0", SQLite, false, []State{StateAlive, StateStopped}},
		{"29.0", PostgreSQL, true, []State{StateAlive, StateDraining, StateStopped, StateDead}},
	} {
		r := at(c.release, c.backend)
		if r.Heartbeats() != c.heartbeats || !slices.Equal(r.States(), c.states) || r.RingsCachedForProcess() == c.heartbeats {
			t.Errorf("%s %s: heartbeats %v states %v cached %v", c.release, c.backend, r.Heartbeats(), r.States(), r.RingsCachedForProcess())
		}
	}
	for _, c := range []struct {
		release string
		backend Backend
		online  bool
		updated time.Time
		want    State
	}{
		{"29.0", PostgreSQL, true, fresh, StateAlive},
		{"29.0", PostgreSQL, false, fresh, StateDraining},
		{"29.0", PostgreSQL, false, stale, StateStopped},
		{"29.0", PostgreSQL, true, stale, StateDead},
		{"21.4", SQLite, true, stale, StateDead},
		{"22.1", SQLite, true, stale, StateAlive},
		{"29.0", SQLite, false, fresh, StateStopped},
	} {
		if got := at(c.release, c.backend).State(c.online, c.updated, now); got != c.want {
			t.Errorf("%s %s State(online=%v, age %s) = %s, want %s", c.release, c.backend, c.online, now.Sub(c.updated), got, c.want)
		}
	}
}

func TestRingKeyAndAlgorithm(t *testing.T) {
	for _, c := range []struct {
		release, pin, want string
	}{
		{"11.1", "", "g:ipmi"},
		{"11.1", "11.0", "ipmi"}, // RPC 1.44 < 1.47: use_groups False
		{"12.1", "queens", "ipmi"},
		{"16.0", "10.1", "ipmi"},
		{"16.0", "11.1", "g:ipmi"},
		{"16.1", "11.0", "g:ipmi"}, // f5589de02 removed use_groups
		{"29.0", "2024.1", "g:ipmi"},
	} {
		r := New(MustRelease(c.release), PostgreSQL, Settings{PinReleaseVersion: c.pin})
		if got := r.RingKey("g", "ipmi"); got != c.want {
			t.Errorf("%s pinned to %q: RingKey = %q, want %q", c.release, c.pin, got, c.want)
		}
	}
	for _, c := range []struct {
		release string
		want    ring.Algorithm
	}{{"11.1", ring.MD5}, {"15.1", ring.MD5}, {"15.2", ring.SHA256}, {"16.0", ring.SHA256}, {"29.0", ring.SHA256}} {
		r := New(MustRelease(c.release), PostgreSQL, Settings{Algorithm: ring.SHA256})
		if got := r.EffectiveAlgorithm(); got != c.want {
			t.Errorf("%s with sha256: EffectiveAlgorithm = %s, want %s", c.release, got, c.want)
		}
	}
}

func TestAPIAnswers(t *testing.T) {
	for _, c := range []struct {
		release     string
		rootHeaders bool
	}{
		{"11.1", false},
		{"24.1", false},
		{"26.0", false},
		{"26.1", true},
		{"29.0", true},
		{"37.0", true},
		{"38.0", true},
	} {
		r := at(c.release, PostgreSQL)
		if got, want := r.ConductorsVersionMessage() != "", r.Release().AtLeast(Release{38, 0}); got != want {
			t.Errorf("%s: ConductorsVersionMessage %q", c.release, r.ConductorsVersionMessage())
		}
		if r.RootVersionHeaders() != c.rootHeaders {
			t.Errorf("%s: RootVersionHeaders %v, want %v", c.release, r.RootVersionHeaders(), c.rootHeaders)
		}
	}
}

// TestMySQLUnicodeCollation: 35.0 converted the MySQL/MariaDB tables to
// utf8mb4_unicode_ci (abf2e577a); other backends compare bytes.
func TestMySQLUnicodeCollation(t *testing.T) {
	for _, c := range []struct {
		release string
		backend Backend
		want    bool
	}{
		{"21.4", MySQL, false}, {"34.0", MySQL, false}, {"35.0", MySQL, true}, {"38.0", MySQL, true},
		{"38.0", PostgreSQL, false}, {"38.0", SQLite, false},
	} {
		if got := at(c.release, c.backend).MySQLUnicodeCollation(); got != c.want {
			t.Errorf("%s on %s: MySQLUnicodeCollation %v, want %v", c.release, c.backend, got, c.want)
		}
	}
}

func TestExact(t *testing.T) {
	for _, c := range []struct {
		release  string
		backend  Backend
		replicas int
		caveats  int
	}{
		{"12.1", PostgreSQL, 1, 0},
		{"12.1", PostgreSQL, 2, 1},
		{"12.2", PostgreSQL, 2, 0}, // the option is gone (e9540f5d2)
		{"21.4", SQLite, 1, 0},
		{"22.1", SQLite, 1, 1}, // rings cached for the process life
	} {
		r := New(MustRelease(c.release), c.backend, Settings{HashDistributionReplicas: c.replicas})
		if got := r.Exact(); len(got) != c.caveats {
			t.Errorf("%s %s replicas %d: caveats %q, want %d", c.release, c.backend, c.replicas, got, c.caveats)
		}
	}
}

func TestDefaults(t *testing.T) {
	s := New(MustRelease("29.0"), PostgreSQL, Settings{}).Settings()
	if s.HeartbeatTimeout != 0 || s.PartitionExponent != 5 || s.Algorithm != ring.MD5 || s.HashDistributionReplicas != 1 {
		t.Errorf("defaults %+v", s)
	}
}

// TestSecureRBACDefaults: scope and the new defaults are enforced by default
// from 24.0 (435932355), and for an unknown release as by the newest.
func TestSecureRBACDefaults(t *testing.T) {
	for _, tc := range []struct {
		release string
		want    bool
	}{{"16.0", false}, {"21.4", false}, {"23.1", false}, {"24.0", true}, {"29.0", true}, {"", true}} {
		var r Release
		if tc.release != "" {
			var err error
			if r, err = ParseRelease(tc.release); err != nil {
				t.Fatal(err)
			}
		}
		if got := r.SecureRBACDefaults(); got != tc.want {
			t.Errorf("%q: SecureRBACDefaults() = %v, want %v", tc.release, got, tc.want)
		}
	}
}
