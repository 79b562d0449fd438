package rules

import (
	"errors"
	"slices"
	"testing"
	"time"
)

func TestEffectiveServiceDownTime(t *testing.T) {
	for _, c := range []struct{ sdt, ri, want int }{
		{60, 10, 60},  // defaults
		{11, 10, 11},  // just above report_interval: kept
		{10, 10, 25},  // equal: int(2.5 * 10)
		{5, 10, 25},   // below
		{60, 60, 150}, // equal at 60
		{3, 3, 7},     // int(7.5) truncates
		{0, 0, 0},     // 0 <= 0: int(0)
		{-1, 0, 0},
		{0, 1, 2}, // int(2.5)
	} {
		if got := EffectiveServiceDownTime(c.sdt, c.ri); got != c.want {
			t.Errorf("EffectiveServiceDownTime(%d, %d) = %d, want %d", c.sdt, c.ri, got, c.want)
		}
	}
}

func TestServiceIsUp(t *testing.T) {
	now := time.Date(2026, 12, 4, 3, 0, 0, 0, time.UTC)
	created := now.Add(-time.Hour)
	s := time.Second
	for _, c := range []struct {
		name          string
		seen, created time.Time
		forced        bool
		sdt, ri       int
		want          bool
	}{
		{"fresh", now.Add(-10 * s), created, false, 60, 10, true},
		{"at the boundary", now.Add(-60 * s), created, false, 60, 10, true},
		{"a microsecond past", now.Add(-60*s - time.Microsecond), created, false, 60, 10, false},
		{"future within", now.Add(60 * s), created, false, 60, 10, true},
		{"future beyond", now.Add(60*s + time.Microsecond), created, false, 60, 10, false},
		{"forced down", now, created, true, 60, 10, false},
		{"never reported: created_at", time.Time{}, now.Add(-30 * s), false, 60, 10, true},
		{"never reported, old", time.Time{}, created, false, 60, 10, false},
		{"last_seen_up wins over a fresh created_at", now.Add(-61 * s), now, false, 60, 10, false},
		{"neither time", time.Time{}, time.Time{}, false, 60, 10, false},
		{"report_interval override: 30 <= 30 gives 75", now.Add(-75 * s), created, false, 30, 30, true},
		{"report_interval override, past 75", now.Add(-76 * s), created, false, 30, 30, false},
		{"service_down_time above report_interval kept", now.Add(-31 * s), created, false, 30, 29, false},
	} {
		if got := ServiceIsUp(now, c.seen, c.created, c.forced, c.sdt, c.ri); got != c.want {
			t.Errorf("%s: ServiceIsUp = %v, want %v", c.name, got, c.want)
		}
	}
	n := NewNova(Release{31, 0}, PostgreSQL, NovaSettings{ServiceDownTime: 20, ReportInterval: 10})
	if n.ServiceDownTime() != 20 || !n.ServiceIsUp(now, now.Add(-20*s), created, false) || n.ServiceIsUp(now, now.Add(-21*s), created, false) {
		t.Error("NovaRules.ServiceIsUp does not use its settings")
	}
}

func TestRingName(t *testing.T) {
	old, cur := NewNova(Release{20, 0}, PostgreSQL, DefaultNovaSettings()), NewNova(Release{21, 0}, PostgreSQL, DefaultNovaSettings())
	if old.RingName("Compute-A") != "Compute-A" || cur.RingName("Compute-A") != "compute-a" {
		t.Error("ring names: as stored before 21.0, lowercased from 21.0")
	}
	// Python's str.lower(), from python3 -c 'print(repr(s.lower()))'
	for in, want := range map[string]string{
		"Compute-1": "compute-1", "İSTANBUL": "i\u0307stanbul", "ΟΔΟΣ": "οδος", "ΟΔΟΣ.x": "οδοσ.x",
		"Σ": "σ", "AΣ": "aς", "AΣB": "aσb", "ǅ": "ǆ", "K": "k",
	} {
		if got := PyLower(in); got != want {
			t.Errorf("PyLower(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestSQLEqual(t *testing.T) {
	pg, my := NewNova(Release{31, 0}, PostgreSQL, DefaultNovaSettings()), NewNova(Release{31, 0}, MySQL, DefaultNovaSettings())
	for _, c := range []struct {
		a, b   string
		pg, my bool
	}{
		{"c1", "c1", true, true},
		{"C1", "c1", false, true},
		{"c1 ", "c1", false, true},
		{" c1", "c1", false, false},
		{"\u212a", "k", false, false}, // Kelvin sign: not ASCII case
		{"é", "É", false, false},      // not modelled: exact
	} {
		if pg.SQLEqual(c.a, c.b) != c.pg || my.SQLEqual(c.a, c.b) != c.my {
			t.Errorf("SQLEqual(%q, %q): postgresql %v mysql %v, want %v %v", c.a, c.b,
				pg.SQLEqual(c.a, c.b), my.SQLEqual(c.a, c.b), c.pg, c.my)
		}
	}
}

func strp(s string) *string { return &s }

func TestRingPeers(t *testing.T) {
	r29, r27 := NewNova(Release{29, 0}, PostgreSQL, DefaultNovaSettings()), NewNova(Release{27, 0}, PostgreSQL, DefaultNovaSettings())
	r18 := NewNova(Release{18, 0}, PostgreSQL, DefaultNovaSettings())
	for _, c := range []struct {
		name    string
		r       NovaRules
		c       NovaCompute
		peers   []string
		limited bool
		empty   *bool
	}{
		{"nothing set", r29, NovaCompute{Host: "a"}, nil, false, nil},
		{"peer_list alone is ignored", r29, NovaCompute{Host: "a", PeerList: []string{"a", "b"}}, nil, false, nil},
		{"group and peers", r29, NovaCompute{Host: "a", ConductorGroup: strp("g"), PeerList: []string{"a", "b"}}, []string{"a", "b"}, true, nil},
		{"the empty group is a group", r29, NovaCompute{Host: "a", ConductorGroup: strp(""), PeerList: []string{"a"}}, []string{"a"}, true, nil},
		{"group without peers", r29, NovaCompute{Host: "a", ConductorGroup: strp("g")}, nil, true, new(bool(true))},
		{"peers without the host (exact)", r29, NovaCompute{Host: "A", ConductorGroup: strp("g"), PeerList: []string{"a"}}, nil, true, new(bool(false))},
		{"shard: itself, peers ignored", r29, NovaCompute{Host: "A", Shard: "s", ConductorGroup: strp("g")}, []string{"A"}, true, nil},
		{"shard before 29.0 ignored", r27, NovaCompute{Host: "a", Shard: "s"}, nil, false, nil},
		{"shard before 29.0, group used", r27, NovaCompute{Host: "a", Shard: "s", ConductorGroup: strp("g"), PeerList: []string{"a"}}, []string{"a"}, true, nil},
		{"group before 19.0 ignored", r18, NovaCompute{Host: "a", ConductorGroup: strp("g")}, nil, false, nil},
	} {
		peers, limited, err := c.r.RingPeers(c.c)
		var ipl *InvalidPeerList
		switch {
		case c.empty == nil && err != nil:
			t.Errorf("%s: error %v", c.name, err)
		case c.empty != nil && (!errors.As(err, &ipl) || ipl.Empty != *c.empty):
			t.Errorf("%s: error %v, want InvalidPeerList empty=%v", c.name, err, *c.empty)
		case !slices.Equal(peers, c.peers) || limited != c.limited:
			t.Errorf("%s: peers %v limited %v, want %v %v", c.name, peers, limited, c.peers, c.limited)
		}
	}
	if r27.ConductorGroupOption() != "partition_key" || r29.ConductorGroupOption() != "conductor_group" {
		t.Error("ConductorGroupOption")
	}
}

func TestNodeListedAndManages(t *testing.T) {
	r := NewNova(Release{31, 0}, PostgreSQL, DefaultNovaSettings())
	c := NovaCompute{Host: "Compute-A", ConductorGroup: strp("GroupA"), Shard: "s1", PeerList: []string{"Compute-A"}}
	if r.NodeListed(c, PostgreSQL, "groupa", "s1", "") {
		t.Error("PostgreSQL Ironic compares conductor groups exactly")
	}
	if !r.NodeListed(c, MySQL, "groupa", "s1", "") {
		t.Error("MySQL Ironic compares conductor groups without case")
	}
	if r.NodeListed(c, MySQL, "groupa", "s1", "parent-uuid") {
		t.Error("children are never listed")
	}
	if r.NodeListed(c, MySQL, "groupa", "s2", "") || r.NodeListed(NovaCompute{Host: "x", Shard: "s1"}, PostgreSQL, "", "", "") {
		t.Error("the shard filters")
	}
	if !r.NodeListed(NovaCompute{Host: "x"}, PostgreSQL, "any", "", "") {
		t.Error("nothing set lists every parent node")
	}
	for _, m := range []struct {
		instance string
		own      bool
		owner    string
		want     NovaSource
	}{
		{"i1", true, "other", NovaSourceInstance},
		{"i1", false, "compute-a", NovaSourceNone}, // another host's instance
		{"", false, "compute-a", NovaSourceRing},   // ring names are lowercase
		{"", false, "Compute-A", NovaSourceNone},
		{"", false, "other", NovaSourceNone},
	} {
		if got := r.NovaManages(c, m.instance, m.own, m.owner); got != m.want {
			t.Errorf("NovaManages(%+v) = %q, want %q", m, got, m.want)
		}
	}
}

func TestNovaReleaseOfServiceVersion(t *testing.T) {
	for _, c := range []struct {
		v              int
		oldest, newest string
		ok             bool
	}{
		{64, "26.0", "26.3", true}, {66, "27.0", "28.3", true}, {67, "29.0", "30.3", true},
		{68, "31.0", "31.3", true}, {74, "34.0", "34.0", true},
		{73, "33.0", "33.0", false}, {99, "34.0", "34.0", false}, {10, "", "", false},
	} {
		o, n, ok := NovaReleaseOfServiceVersion(c.v)
		if o.String() != c.oldest || n.String() != c.newest || ok != c.ok {
			t.Errorf("NovaReleaseOfServiceVersion(%d) = %v, %v, %v; want %s, %s, %v", c.v, o, n, ok, c.oldest, c.newest, c.ok)
		}
	}
	if r, w := NovaRulesRelease(66); r.String() != "27.0" || w != "" {
		t.Errorf("NovaRulesRelease(66) = %v, %q", r, w)
	}
	if r, w := NovaRulesRelease(73); r.String() != "33.0" || w == "" {
		t.Errorf("NovaRulesRelease(73) = %v, %q", r, w)
	}
	if r, w := NovaRulesRelease(10); r.String() != "20.0" || w == "" {
		t.Errorf("NovaRulesRelease(10) = %v, %q", r, w)
	}
}

// TestServiceIsUpOtherDriver: with servicegroup_driver other than db the
// database does not say: a service not forced down is taken as up (stale
// or no heartbeat alike), one forced down is down.
func TestServiceIsUpOtherDriver(t *testing.T) {
	now := time.Date(2026, 12, 4, 9, 0, 0, 0, time.UTC)
	for _, driver := range []string{"mc", "zk"} {
		s := DefaultNovaSettings()
		s.ServicegroupDriver = driver
		r := NewNova(Release{31, 0}, MySQL, s)
		if s.LivenessKnown() || !r.ServiceIsUp(now, now.Add(-time.Hour), time.Time{}, false) || !r.ServiceIsUp(now, time.Time{}, time.Time{}, false) ||
			r.ServiceIsUp(now, now, now, true) {
			t.Errorf("%s: known %v, stale up %v, forced down up %v", driver, s.LivenessKnown(),
				r.ServiceIsUp(now, now.Add(-time.Hour), time.Time{}, false), r.ServiceIsUp(now, now, now, true))
		}
	}
	for _, driver := range []string{"", "db"} {
		s := DefaultNovaSettings()
		s.ServicegroupDriver = driver
		if !s.LivenessKnown() || NewNova(Release{31, 0}, MySQL, s).ServiceIsUp(now, now.Add(-time.Hour), time.Time{}, false) {
			t.Errorf("%q: a stale heartbeat is up, or liveness unknown", driver)
		}
	}
}
