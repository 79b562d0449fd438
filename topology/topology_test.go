package topology

import (
	"fmt"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/ironic-conductor-exporter/ironic-conductor-exporter/db"
	"github.com/ironic-conductor-exporter/ironic-conductor-exporter/internal/fixture"
	"github.com/ironic-conductor-exporter/ironic-conductor-exporter/ring"
	"github.com/ironic-conductor-exporter/ironic-conductor-exporter/rules"
)

var (
	testNow = fixture.Now
	// Ironic 24.1: alive ignores online (before 25.0), rings follow 22.1's
	// SQLite and timeout rules; TestRulesByRelease covers the others.
	testSettings = Settings{Settings: rules.Settings{HeartbeatTimeout: 60 * time.Second, PartitionExponent: 5, Algorithm: mustAlg("md5")},
		Release: rules.MustRelease("24.1")}

	mustAlg = fixture.Algorithm
	ptr     = fixture.Ptr
	ago     = fixture.Ago
	cond    = fixture.Conductor
	node    = fixture.Node
)

func mustBuild(t *testing.T, snap *db.Snapshot, s Settings, prev *Topology) *Topology {
	t.Helper()
	topo, err := Build(snap, s, testNow, prev)
	if err != nil {
		t.Fatalf("Build: %v", err)
	}
	return topo
}

// TestAliveMirrorsConductorAPI mirrors convert_with_links in
// ironic/api/controllers/v1/conductor.py: alive = not
// timeutils.is_older_than(updated_at, heartbeat_timeout), online ignored.
func TestAliveMirrorsConductorAPI(t *testing.T) {
	cases := []struct {
		name      string
		online    bool
		heartbeat time.Time
		timeout   time.Duration
		want      bool
	}{
		{"fresh online", true, ago(10 * time.Second), time.Minute, true},
		{"exactly at the timeout is not older", true, ago(time.Minute), time.Minute, true},
		{"one microsecond past the timeout", true, ago(time.Minute + time.Microsecond), time.Minute, false},
		{"offline but fresh is alive for the API", false, ago(time.Second), time.Minute, true},
		{"offline and stale", false, ago(time.Hour), time.Minute, false},
		{"heartbeat in the future", true, testNow.Add(time.Minute), time.Minute, true},
		{"NULL updated_at", true, time.Time{}, time.Minute, false},
		{"zero timeout, heartbeat now", true, testNow, 0, true},
		{"zero timeout, heartbeat a second ago", true, ago(time.Second), 0, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := testSettings
			s.HeartbeatTimeout = tc.timeout
			topo := mustBuild(t, &db.Snapshot{Backend: rules.PostgreSQL,
				Conductors: []db.Conductor{cond(1, "c1", "", tc.online, tc.heartbeat, "ipmi")}}, s, nil)
			if got := topo.Conductors[0].Alive; got != tc.want {
				t.Errorf("alive = %v, want %v", got, tc.want)
			}
		})
	}
}

// TestActiveMirrorsFilterActiveConductors mirrors _filter_active_conductors
// in ironic/db/sqlalchemy/api.py (current Ironic): online is required; the
// heartbeat check applies unless the database is SQLite or the timeout <= 0.
func TestActiveMirrorsFilterActiveConductors(t *testing.T) {
	cases := []struct {
		name      string
		backend   rules.Backend
		online    bool
		heartbeat time.Time
		timeout   time.Duration
		want      bool
	}{
		{"postgres online fresh", rules.PostgreSQL, true, ago(time.Second), time.Minute, true},
		{"postgres updated_at == limit is >= limit", rules.PostgreSQL, true, ago(time.Minute), time.Minute, true},
		{"postgres online stale", rules.PostgreSQL, true, ago(time.Minute + time.Microsecond), time.Minute, false},
		{"postgres offline fresh", rules.PostgreSQL, false, ago(time.Second), time.Minute, false},
		{"postgres NULL updated_at", rules.PostgreSQL, true, time.Time{}, time.Minute, false},
		{"mysql online stale", rules.MySQL, true, ago(time.Hour), time.Minute, false},
		{"sqlite online stale: time check disabled", rules.SQLite, true, ago(time.Hour), time.Minute, true},
		{"sqlite offline fresh", rules.SQLite, false, ago(time.Second), time.Minute, false},
		{"timeout 0: online only", rules.PostgreSQL, true, ago(time.Hour), 0, true},
		{"negative timeout: online only", rules.MySQL, true, ago(time.Hour), -time.Second, true},
		{"timeout 0 offline", rules.PostgreSQL, false, ago(time.Second), 0, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := testSettings
			s.HeartbeatTimeout = tc.timeout
			topo := mustBuild(t, &db.Snapshot{Backend: tc.backend,
				Conductors: []db.Conductor{cond(1, "c1", "g", tc.online, tc.heartbeat, "ipmi")}}, s, nil)
			if got := topo.Conductors[0].Active; got != tc.want {
				t.Errorf("active = %v, want %v", got, tc.want)
			}
			_, inRing := topo.Ring("g", "ipmi")
			if inRing != tc.want {
				t.Errorf("ring g:ipmi exists = %v, want %v", inRing, tc.want)
			}
		})
	}
}

// TestStates checks the four states of the metric contract
// (ironic_conductor_state): alive, draining, stopped, dead.
func TestStates(t *testing.T) {
	cases := []struct {
		online    bool
		heartbeat time.Time
		want      rules.State
	}{
		{true, ago(time.Second), rules.StateAlive},
		{false, ago(time.Second), rules.StateDraining},
		{false, ago(time.Hour), rules.StateStopped},
		{true, ago(time.Hour), rules.StateDead},
		{true, time.Time{}, rules.StateDead},
		{false, time.Time{}, rules.StateStopped},
	}
	for _, tc := range cases {
		t.Run(fmt.Sprintf("online=%v,age=%v", tc.online, testNow.Sub(tc.heartbeat)), func(t *testing.T) {
			topo := mustBuild(t, &db.Snapshot{Conductors: []db.Conductor{cond(1, "c", "", tc.online, tc.heartbeat)}}, testSettings, nil)
			if got := topo.Conductors[0].State; got != tc.want {
				t.Errorf("state = %q, want %q", got, tc.want)
			}
		})
	}
}

// TestRingsMirrorGetActiveHardwareTypeDict mirrors
// get_active_hardware_type_dict(use_groups=True) in
// ironic/db/sqlalchemy/api.py: one set of hostnames per
// "conductor_group:hardware_type" over active conductors.
func TestRingsMirrorGetActiveHardwareTypeDict(t *testing.T) {
	fresh := ago(5 * time.Second)
	snap := &db.Snapshot{Backend: rules.PostgreSQL, Conductors: []db.Conductor{
		cond(1, "a", "", true, fresh, "ipmi", "redfish"),
		cond(2, "b", "", true, fresh, "ipmi"),
		cond(3, "c", "Rack1", true, fresh, "ipmi"),
		cond(4, "d", "rack1", true, fresh, "ipmi", "ipmi"), // duplicate type from a join
		cond(5, "e", "", true, ago(time.Hour), "ipmi"),     // stale: not a member
		cond(6, "f", "", false, fresh, "redfish"),          // offline: not a member
		cond(7, "g", "", true, fresh),                      // no hardware types: in no ring
		cond(8, "h:6385", "rack1", true, fresh, "idrac"),
	}}
	topo := mustBuild(t, snap, testSettings, nil)
	got := map[string][]string{}
	for _, r := range topo.Rings {
		got[r.Key()] = r.Ring.Hosts()
	}
	want := map[string][]string{
		":ipmi":       {"a", "b"},
		":redfish":    {"a"},
		"Rack1:ipmi":  {"c"},
		"rack1:ipmi":  {"d"},
		"rack1:idrac": {"h:6385"},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("rings = %v, want %v", got, want)
	}
	var keys []string
	for _, r := range topo.Rings {
		keys = append(keys, r.Key())
	}
	if !slices.IsSorted(keys) {
		t.Errorf("rings not sorted by key: %v", keys)
	}
}

// TestMappingMirrorsGetConductorFor mirrors get_conductor_for in
// ironic/conductor/rpcapi.py: the ring of "node.conductor_group:node.driver"
// hashes node.uuid; no ring means NoValidHost (no conductor).
func TestMappingMirrorsGetConductorFor(t *testing.T) {
	fresh := ago(5 * time.Second)
	snap := &db.Snapshot{Backend: rules.PostgreSQL, Conductors: []db.Conductor{
		cond(1, "a", "", true, fresh, "ipmi"),
		cond(2, "b", "", true, fresh, "ipmi"),
		cond(3, "c", "g1", true, fresh, "redfish"),
		cond(4, "dead", "g2", true, ago(time.Hour), "ipmi"),
	}}
	var uuids []string
	for i := 0; i < 200; i++ {
		u := fmt.Sprintf("%08x-0000-4000-8000-%012x", i*7919, i)
		uuids = append(uuids, u)
		snap.Nodes = append(snap.Nodes, node(int64(i+1), u, "", "ipmi"))
	}
	snap.Nodes = append(snap.Nodes,
		node(1001, "10000000-0000-4000-8000-000000000001", "g1", "redfish"),
		node(1002, "10000000-0000-4000-8000-000000000002", "g1", "ipmi"),    // group g1 has no ipmi conductor
		node(1003, "10000000-0000-4000-8000-000000000003", "g2", "ipmi"),    // only conductor is dead
		node(1004, "10000000-0000-4000-8000-000000000004", "G1", "redfish"), // case matters
	)
	topo := mustBuild(t, snap, testSettings, nil)

	ref, err := ring.New([]string{"b", "a"}, testSettings.PartitionExponent, testSettings.Algorithm)
	if err != nil {
		t.Fatal(err)
	}
	perHost := map[string]int{}
	for i, u := range uuids {
		want, _ := ref.Get([]byte(u))
		if got := topo.Nodes[i].Conductor; got != want {
			t.Errorf("node %s: conductor %q, want %q", u, got, want)
		}
		perHost[want]++
	}
	if perHost["a"] == 0 || perHost["b"] == 0 {
		t.Errorf("200 nodes all on one conductor: %v", perHost)
	}
	for _, h := range []string{"a", "b"} {
		c, _ := topo.Conductor(h)
		if len(c.Nodes) != perHost[h] {
			t.Errorf("conductor %s has %d nodes, want %d", h, len(c.Nodes), perHost[h])
		}
	}
	tail := map[string]string{}
	for _, n := range topo.Nodes[200:] {
		tail[n.UUID] = n.Conductor
	}
	wantTail := map[string]string{
		"10000000-0000-4000-8000-000000000001": "c",
		"10000000-0000-4000-8000-000000000002": "",
		"10000000-0000-4000-8000-000000000003": "",
		"10000000-0000-4000-8000-000000000004": "",
	}
	if !reflect.DeepEqual(tail, wantTail) {
		t.Errorf("conductors = %v, want %v", tail, wantTail)
	}
	wantOrphans := map[GroupDriver]int{{"g1", "ipmi"}: 1, {"g2", "ipmi"}: 1, {"G1", "redfish"}: 1}
	if !reflect.DeepEqual(topo.Orphans, wantOrphans) {
		t.Errorf("orphans = %v, want %v", topo.Orphans, wantOrphans)
	}
	r, _ := topo.Ring("", "ipmi")
	if r.Nodes != 200 {
		t.Errorf("ring :ipmi serves %d nodes, want 200", r.Nodes)
	}
}

// TestRebuildReusesUnchangedRings checks that a rebuild with the previous
// topology gives the same answers as one from scratch, reuses rings whose
// membership is unchanged, and counts remapped nodes per group.
func TestRebuildReusesUnchangedRings(t *testing.T) {
	fresh := ago(5 * time.Second)
	snap := &db.Snapshot{Backend: rules.PostgreSQL, Conductors: []db.Conductor{
		cond(1, "a", "", true, fresh, "ipmi"),
		cond(2, "b", "", true, fresh, "ipmi"),
		cond(3, "c", "", true, fresh, "ipmi"),
		cond(4, "x", "g", true, fresh, "redfish"),
	}}
	for i := 0; i < 300; i++ {
		snap.Nodes = append(snap.Nodes, node(int64(i), fmt.Sprintf("%036d", i), "", "ipmi"))
		snap.Nodes = append(snap.Nodes, node(int64(1000+i), fmt.Sprintf("g%035d", i), "g", "redfish"))
	}
	first := mustBuild(t, snap, testSettings, nil)
	again := mustBuild(t, snap, testSettings, first)
	for i := range first.Rings {
		if first.Rings[i].Ring != again.Rings[i].Ring {
			t.Errorf("ring %s rebuilt although unchanged", first.Rings[i].Key())
		}
	}
	if want := map[string]int{"": 0, "g": 0}; !reflect.DeepEqual(again.Remapped, want) {
		t.Errorf("remapped %v on an unchanged snapshot, want %v", again.Remapped, want)
	}

	// Conductor c dies: ring ":ipmi" changes, ring "g:redfish" does not.
	changed := *snap
	changed.Conductors = slices.Clone(snap.Conductors)
	changed.Conductors[2].UpdatedAt = ago(time.Hour)
	incremental := mustBuild(t, &changed, testSettings, again)
	scratch := mustBuild(t, &changed, testSettings, nil)
	moved := 0
	for i := range scratch.Nodes {
		if incremental.Nodes[i].Conductor != scratch.Nodes[i].Conductor {
			t.Fatalf("node %s: incremental %q, from scratch %q", scratch.Nodes[i].UUID,
				incremental.Nodes[i].Conductor, scratch.Nodes[i].Conductor)
		}
		if again.Nodes[i].Conductor != scratch.Nodes[i].Conductor {
			moved++
			if again.Nodes[i].Conductor != "c" {
				t.Errorf("node %s moved from %q although only c left", scratch.Nodes[i].UUID, again.Nodes[i].Conductor)
			}
		}
	}
	if moved == 0 {
		t.Fatal("no node moved when conductor c died")
	}
	if want := map[string]int{"": moved, "g": 0}; !reflect.DeepEqual(incremental.Remapped, want) {
		t.Errorf("remapped = %v, want %v", incremental.Remapped, want)
	}
	gi, _ := incremental.Ring("g", "redfish")
	ga, _ := again.Ring("g", "redfish")
	if gi.Ring != ga.Ring {
		t.Error("unchanged ring g:redfish was rebuilt")
	}

	// Other settings: nothing may be reused.
	s := testSettings
	s.PartitionExponent = 6
	other := mustBuild(t, snap, s, first)
	if r, _ := other.Ring("", "ipmi"); r.Ring == first.Rings[0].Ring {
		t.Error("ring reused across a change of hash_partition_exponent")
	}
}

// TestNodeLookupsCarriedOver: a topology whose nodes keep their UUIDs and
// names in the same order shares the node lookups its predecessor built,
// whether or not the node generation carries over (a node moved to another
// conductor); once a node is renamed, they are built anew, by Build, and
// find the new names.
func TestNodeLookupsCarriedOver(t *testing.T) {
	fresh := ago(5 * time.Second)
	snap := &db.Snapshot{Backend: rules.PostgreSQL, Conductors: []db.Conductor{
		cond(1, "a", "", true, fresh, "ipmi"), cond(2, "b", "", true, fresh, "ipmi")}}
	for i := range 50 {
		n := node(int64(i+1), fmt.Sprintf("%036d", i), "", "ipmi")
		n.Name = ptr(fmt.Sprintf("n%d", i))
		snap.Nodes = append(snap.Nodes, n)
	}
	lookup := func(topo *Topology, ident, uuid string) {
		t.Helper()
		if n, ok := topo.Node(ident); !ok || n.UUID != uuid {
			t.Fatalf("Node(%q) = %v, %v; want %s", ident, n, ok, uuid)
		}
	}
	first := mustBuild(t, snap, testSettings, nil)
	unlooked := mustBuild(t, snap, testSettings, first)
	if unlooked.idx != first.idx { // the same node slice: Build's reuse path
		t.Error("lookups of the very same nodes not shared")
	}
	lookup(first, "n7", snap.Nodes[7].UUID)
	// A heartbeat, and the same nodes read again (a copy: Build's full
	// path, where compare finds the labels unchanged).
	changed := *snap
	changed.Conductors = slices.Clone(snap.Conductors)
	changed.Conductors[1].UpdatedAt = ago(time.Second)
	changed.Nodes = copyNodes(snap.Nodes)
	again := mustBuild(t, &changed, testSettings, first)
	if again.NodeGeneration != first.NodeGeneration || again.idx != first.idx {
		t.Fatal("the lookups of unchanged nodes were not carried over")
	}
	lookup(again, snap.Nodes[9].UUID, snap.Nodes[9].UUID)
	lookup(again, "n9", snap.Nodes[9].UUID)
	// A node renamed: new lookups.
	renamed := changed
	renamed.Nodes = copyNodes(snap.Nodes)
	renamed.Nodes[9].Name = ptr("renamed")
	third := mustBuild(t, &renamed, testSettings, again)
	if third.NodeGeneration == again.NodeGeneration || third.idx == again.idx {
		t.Fatal("lookups carried over across a rename")
	}
	if third.idx == nil || third.idx.byName == nil {
		t.Fatal("Build left the new lookups to the first lookup")
	}
	lookup(third, "renamed", snap.Nodes[9].UUID)
	if _, ok := third.Node("n9"); ok {
		t.Error("the old name is still found")
	}
	lookup(again, "n9", snap.Nodes[9].UUID)
	// Conductor b dies: nodes move (a new node generation), their UUIDs and
	// names stay: the same lookups.
	moved := renamed
	moved.Conductors = slices.Clone(renamed.Conductors)
	moved.Conductors[1].UpdatedAt = ago(time.Hour)
	fourth := mustBuild(t, &moved, testSettings, third)
	if fourth.NodeGeneration == third.NodeGeneration || fourth.idx != third.idx {
		t.Errorf("conductor b dead: generation %d (was %d), lookups shared %v; want a new generation, shared lookups",
			fourth.NodeGeneration, third.NodeGeneration, fourth.idx == third.idx)
	}
	lookup(fourth, "renamed", snap.Nodes[9].UUID)
}

// TestDuplicatesAndReservations checks that rows a join could repeat are
// counted once, and that reservations count per host even for hosts that
// are not conductors.
func TestDuplicatesAndReservations(t *testing.T) {
	fresh := ago(time.Second)
	n1 := node(1, "u1", "", "ipmi")
	n1.Reservation = ptr("a")
	n1.Name = ptr("one")
	n2 := node(2, "u2", "", "ipmi")
	n2.Reservation = ptr("gone-host")
	snap := &db.Snapshot{Conductors: []db.Conductor{
		cond(1, "a", "", true, fresh, "ipmi"),
		cond(1, "a", "", true, fresh, "ipmi"),
	}, Nodes: []*db.Node{n1, n1, n2}}
	topo := mustBuild(t, snap, testSettings, nil)
	if len(topo.Conductors) != 1 || len(topo.Nodes) != 2 {
		t.Fatalf("got %d conductors and %d nodes, want 1 and 2", len(topo.Conductors), len(topo.Nodes))
	}
	if c, _ := topo.Conductor("a"); len(c.Nodes) != 2 {
		t.Errorf("conductor a has %d nodes, want 2", len(c.Nodes))
	}
	if want := map[string]int{"a": 1, "gone-host": 1}; !reflect.DeepEqual(topo.Reservations, want) {
		t.Errorf("reservations = %v, want %v", topo.Reservations, want)
	}
	for _, ident := range []string{"u1", "one"} {
		if n, ok := topo.Node(ident); !ok || n.UUID != "u1" {
			t.Errorf("Node(%q) = %v, %v", ident, n, ok)
		}
	}
	if _, ok := topo.Node("missing"); ok {
		t.Error("Node(missing) found")
	}
}

func TestBuildRejectsBadInput(t *testing.T) {
	if _, err := Build(nil, testSettings, testNow, nil); err == nil {
		t.Error("nil snapshot accepted")
	}
	s := testSettings
	s.PartitionExponent = -1
	snap := &db.Snapshot{Conductors: []db.Conductor{cond(1, "a", "", true, ago(time.Second), "ipmi")}}
	if _, err := Build(snap, s, testNow, nil); err == nil {
		t.Error("negative exponent accepted")
	}
}

// TestStatesOnSQLite: Ironic on SQLite does not heartbeat
// (_conductor_service_record_keepalive in ironic/conductor/base_manager.py
// returns at once), so the state follows online alone: a running
// conductor with an old updated_at is alive, never dead. Ironic's API
// "alive" is still computed from updated_at, as Ironic does.
func TestStatesOnSQLite(t *testing.T) {
	snap := &db.Snapshot{Backend: rules.SQLite, Conductors: []db.Conductor{
		cond(1, "up", "", true, ago(24*time.Hour), "ipmi"),
		cond(2, "down", "", false, ago(time.Second), "ipmi"),
	}}
	topo := mustBuild(t, snap, testSettings, nil)
	for i, want := range []rules.State{rules.StateAlive, rules.StateStopped} {
		if got := topo.Conductors[i].State; got != want {
			t.Errorf("%s: state %q, want %q", topo.Conductors[i].Hostname, got, want)
		}
	}
	if topo.Conductors[0].Alive || !topo.Conductors[0].Active {
		t.Errorf("up: alive=%v (Ironic's API: false) active=%v (ring: true)", topo.Conductors[0].Alive, topo.Conductors[0].Active)
	}
}

// TestRulesByRelease: the release is told by each snapshot, and the
// topology follows its rules: a draining conductor (offline, fresh) is
// alive for 21.4's API, not for 29.0's; a registered SQLite conductor with
// an old updated_at serves nodes on 22.1+, not on 21.4; 16.0 pinned to 11.0
// serves every group from one ring per hardware type.
func TestRulesByRelease(t *testing.T) {
	s := testSettings
	s.Release = rules.Release{}
	for _, c := range []struct {
		name    string
		backend rules.Backend
		rev     string
		version string
		pin     string
		online  bool
		age     time.Duration
		release string
		alive   bool
		member  bool
		state   rules.State
	}{
		{"21.4 draining", rules.PostgreSQL, "4dbec778866e", "1.3", "", false, time.Second, "21.4", true, false, rules.StateDraining},
		{"29.0 draining", rules.PostgreSQL, "21c48150dea9", "1.4", "", false, time.Second, "29.0", false, false, rules.StateDraining},
		{"21.4 SQLite stale", rules.SQLite, "4dbec778866e", "1.3", "", true, time.Hour, "21.4", false, false, rules.StateDead},
		{"29.0 SQLite stale", rules.SQLite, "21c48150dea9", "1.4", "", true, time.Hour, "29.0", false, true, rules.StateAlive},
		{"16.0 MySQL fresh", rules.MySQL, "cf1a80fdb352", "1.3", "", true, time.Second, "16.0", true, true, rules.StateAlive},
	} {
		snap := &db.Snapshot{Backend: c.backend, SchemaRevision: c.rev,
			Conductors: []db.Conductor{cond(1, "c1", "g", c.online, ago(c.age), "ipmi")},
			Nodes:      []*db.Node{node(1, "u1", "g", "ipmi")}}
		snap.Conductors[0].Version = c.version
		ss := s
		ss.PinReleaseVersion = c.pin
		topo := mustBuild(t, snap, ss, nil)
		ci := topo.Conductors[0]
		if topo.Detection.Release.String() != c.release || ci.Alive != c.alive || ci.Active != c.member || ci.State != c.state {
			t.Errorf("%s: release %s (from %s), alive %v, member %v, state %s; want %s, %v, %v, %s", c.name,
				topo.Detection.Release, topo.Detection.From, ci.Alive, ci.Active, ci.State, c.release, c.alive, c.member, c.state)
		}
	}
	// pin_release_version 11.0 on 16.0: one ring for groups g and h
	snap := &db.Snapshot{Backend: rules.PostgreSQL, SchemaRevision: "cf1a80fdb352",
		Conductors: []db.Conductor{cond(1, "c1", "g", true, ago(time.Second), "ipmi")},
		Nodes:      []*db.Node{node(1, "u1", "h", "ipmi")}}
	ss := s
	ss.PinReleaseVersion = "11.0"
	if topo := mustBuild(t, snap, ss, nil); topo.Nodes[0].Conductor != "c1" || len(topo.Rings) != 1 {
		t.Errorf("16.0 pinned to 11.0: node of group h on %q, %d rings", topo.Nodes[0].Conductor, len(topo.Rings))
	}
	ss.PinReleaseVersion = ""
	if topo := mustBuild(t, snap, ss, nil); topo.Nodes[0].Conductor != "" {
		t.Errorf("16.0 unpinned: node of group h on %q", topo.Nodes[0].Conductor)
	}
	// a schema without conductor_group
	if _, err := Build(&db.Snapshot{Backend: rules.PostgreSQL, SchemaRevision: "b9117ac17882"}, s, testNow, nil); err == nil {
		t.Error("a 11.0 schema builds")
	}
}

// TestEmptyHostname: a conductor row whose hostname is "" ([DEFAULT]host =
// "" is accepted by Ironic's StrOpt) stays in the ring Ironic builds, so
// every other node keeps the conductor tooz gives it, but it is not a
// conductor of the topology: the nodes the ring hands to it have no
// conductor and count as without conductor, and one warning names the row.
func TestEmptyHostname(t *testing.T) {
	var nodes []*db.Node
	for i := range 64 {
		nodes = append(nodes, node(int64(i+1), fmt.Sprintf("%08x-1111-4111-8111-111111111111", i), "", "ipmi"))
	}
	snap := &db.Snapshot{Backend: rules.PostgreSQL,
		Conductors: []db.Conductor{cond(1, "", "", true, ago(time.Second), "ipmi"),
			cond(2, "c2", "", true, ago(time.Second), "ipmi")},
		Nodes: nodes}
	r, err := ring.New([]string{"", "c2"}, testSettings.PartitionExponent, testSettings.Algorithm)
	if err != nil {
		t.Fatal(err)
	}
	for _, prev := range []*Topology{nil, mustBuild(t, snap, testSettings, nil)} {
		topo := mustBuild(t, snap, testSettings, prev)
		if len(topo.Conductors) != 1 || topo.Conductors[0].Hostname != "c2" {
			t.Fatalf("conductors: %+v, want only c2", topo.Conductors)
		}
		if _, ok := topo.Conductor(""); ok {
			t.Error(`Conductor("") found`)
		}
		toEmpty := 0
		for _, n := range topo.Nodes {
			want := r.Hosts()[r.Locate([]byte(n.UUID))]
			if want == "" {
				toEmpty++
			}
			if n.Conductor != want {
				t.Errorf("node %s: conductor %q, tooz says %q", n.UUID, n.Conductor, want)
			}
		}
		if toEmpty == 0 || toEmpty == len(nodes) {
			t.Fatalf("%d of %d nodes on the \"\" conductor: the fixture tests nothing", toEmpty, len(nodes))
		}
		if got := topo.Orphans[GroupDriver{"", "ipmi"}]; got != toEmpty {
			t.Errorf("nodes without conductor: %d, want the %d mapped to \"\"", got, toEmpty)
		}
		if got := len(topo.Conductors[0].Nodes); got != len(nodes)-toEmpty {
			t.Errorf("c2 serves %d nodes, want %d", got, len(nodes)-toEmpty)
		}
		want := []db.WarningCount{{Table: "conductors", Reason: ReasonEmptyHostname, Rows: 1}}
		if !reflect.DeepEqual(topo.WarningCounts, want) || len(topo.Warnings) != 1 {
			t.Errorf("warnings %q %+v, want one for conductor id 1", topo.Warnings, topo.WarningCounts)
		}
	}
}

// TestRemappedHasEveryGroupUngrouped: where Ironic's rings ignore groups
// (Rules.UngroupedRings), a group whose nodes a group-less ring serves is
// in Remapped from the first topology on, with 0, as Remapped promises for
// every group that has nodes (the counter built from it must start at 0).
func TestRemappedHasEveryGroupUngrouped(t *testing.T) {
	s := testSettings
	s.Release = rules.MustRelease("16.0")
	s.PinReleaseVersion = "11.0"
	snap := &db.Snapshot{Backend: rules.PostgreSQL, Conductors: []db.Conductor{
		cond(1, "a", "rack1", true, ago(5*time.Second), "ipmi")}}
	snap.Nodes = []*db.Node{node(1, "n1", "rack1", "ipmi"), node(2, "n2", "rack2", "ipmi"), node(3, "n3", "", "redfish")}
	topo := mustBuild(t, snap, s, nil)
	if !topo.Rules.UngroupedRings() {
		t.Fatal("the settings do not give ungrouped rings")
	}
	if want := map[string]int{"": 0, "rack1": 0, "rack2": 0}; !reflect.DeepEqual(topo.Remapped, want) {
		t.Errorf("remapped %v, want %v", topo.Remapped, want)
	}
}
