package topology

import (
	"fmt"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/ironic-conductor-exporter/ironic-conductor-exporter/db"
	"github.com/ironic-conductor-exporter/ironic-conductor-exporter/internal/fixture"
	"github.com/ironic-conductor-exporter/ironic-conductor-exporter/rules"
)

// lifecycleSnapshot: c-up (alive) and c-down (dead) serve group ""; c-gone
// was id 9 and its row is deleted. Nodes prepared by each, in states that
// are stuck or not.
func lifecycleSnapshot() *db.Snapshot {
	mk := func(id int64, uuid, group, driver, state string, affinity int32, reservation string, maint bool) *db.Node {
		n := node(id, uuid, group, driver)
		if state != "" {
			n.ProvisionState = ptr(state)
		}
		fixture.SetAffinity(n, affinity)
		if reservation != "" {
			n.Reservation = ptr(reservation)
		}
		n.Maintenance = maint
		return n
	}
	return &db.Snapshot{Backend: rules.PostgreSQL, Conductors: []db.Conductor{
		cond(1, "c-up", "", true, ago(5*time.Second), "ipmi"),
		cond(2, "c-down", "", true, ago(time.Hour), "ipmi"),
		cond(3, "c-drain", "", false, ago(5*time.Second), "ipmi"),
	}, Nodes: []*db.Node{
		mk(1, "11111111-0000-4000-8000-000000000001", "", "ipmi", "active", 1, "", false),
		mk(2, "11111111-0000-4000-8000-000000000002", "", "ipmi", "active", 2, "", false),
		mk(3, "11111111-0000-4000-8000-000000000003", "", "ipmi", "wait call-back", 2, "c-down", false),
		mk(4, "11111111-0000-4000-8000-000000000004", "", "ipmi", "deploying", 9, "c-drain", true),
		mk(5, "11111111-0000-4000-8000-000000000005", "rack9", "ipmi", "clean wait", 0, "", false),
		mk(6, "11111111-0000-4000-8000-000000000006", "", "ipmi", "some future state", 0, "ghost", false),
		mk(7, "11111111-0000-4000-8000-000000000007", "", "ipmi", "", 3, "", false),
	}}
}

func TestProvisionStateLabel(t *testing.T) {
	for in, want := range map[string]string{"active": "active", "wait call-back": "wait call-back",
		"service hold": "service hold", "Active": "other", "": "other", "unknown-state": "other"} {
		if got := ProvisionStateLabel(ptr(in)); got != want {
			t.Errorf("%q: %q, want %q", in, got, want)
		}
	}
	if got := ProvisionStateLabel(nil); got != ProvisionStateOther {
		t.Errorf("NULL: %q", got)
	}
	if len(provisionIndex) != len(ProvisionStates) {
		t.Error("a provision state is listed twice")
	}
}

// TestLifecycle: affinity host and its state per node, per conductor
// provision states, maintenance and affinity elsewhere, and the stuck nodes
// Ironic's _check_orphan_nodes would look at.
func TestLifecycle(t *testing.T) {
	topo := mustBuild(t, lifecycleSnapshot(), testSettings, nil)
	type want struct {
		host     string
		affinity Affinity
		stuck    Stuck
	}
	wants := []want{
		{"c-up", AffinityUp, NotStuck},
		{"c-down", AffinityNotAlive, NotStuck},
		{"c-down", AffinityNotAlive, StuckLockHolder},
		{"", AffinityMissing, NotStuck}, // the lock holder drains: still running
		{"", AffinityNone, StuckNoConductor},
		{"", AffinityNone, NotStuck}, // not a state Ironic works in
		{"c-drain", AffinityUp, NotStuck},
	}
	for i, w := range wants {
		n := &topo.Nodes[i]
		if n.AffinityHost() != w.host || n.Affinity != w.affinity || n.Stuck != w.stuck {
			t.Errorf("node %d: affinity %q %s, stuck %q; want %q %s, %q", n.ID, n.AffinityHost(), n.Affinity, n.Stuck,
				w.host, w.affinity, w.stuck)
		}
	}
	if want := map[AffinityKey]int{{"", AffinityNotAlive}: 2, {"", AffinityMissing}: 1}; !reflect.DeepEqual(topo.AffinityUnavailable, want) {
		t.Errorf("AffinityUnavailable %v, want %v", topo.AffinityUnavailable, want)
	}
	if want := map[StuckKey]int{{"", "wait call-back", StuckLockHolder}: 1, {"rack9", "clean wait", StuckNoConductor}: 1}; !reflect.DeepEqual(topo.Stuck, want) {
		t.Errorf("Stuck %v, want %v", topo.Stuck, want)
	}
	up, _ := topo.Conductor("c-up")
	down, _ := topo.Conductor("c-down")
	drain, _ := topo.Conductor("c-drain")
	if len(up.Nodes) != 6 || len(down.Nodes) != 0 || len(drain.Nodes) != 0 {
		t.Fatalf("ring: c-up %d nodes, c-down %d, c-drain %d", len(up.Nodes), len(down.Nodes), len(drain.Nodes))
	}
	counts := map[string]int{}
	for i, n := range up.ProvisionStates {
		if n > 0 {
			label := ProvisionStateOther
			if i < len(ProvisionStates) {
				label = ProvisionStates[i]
			}
			counts[label] = n
		}
	}
	if want := map[string]int{"active": 2, "wait call-back": 1, "deploying": 1, "other": 2}; !reflect.DeepEqual(counts, want) {
		t.Errorf("c-up provision states %v, want %v", counts, want)
	}
	if up.Maintenance != 1 || up.AffinityElsewhere != 4 {
		t.Errorf("c-up: maintenance %d, affinity elsewhere %d; want 1, 4", up.Maintenance, up.AffinityElsewhere)
	}
	if !slices.Equal(down.Prepared, []int{1, 2}) || !slices.Equal(up.Prepared, []int{0}) || !slices.Equal(drain.Prepared, []int{6}) {
		t.Errorf("prepared: c-up %v, c-down %v, c-drain %v", up.Prepared, down.Prepared, drain.Prepared)
	}
}

// TestStuckNoWorker: a node in a state a step works in
// (STUCK_STATES_TREATED_AS_FAIL) with no lock is stuck once unchanged for
// longer than NoLockBound (here graceful_shutdown_timeout's 60s); wait
// states hold no lock and are never stuck so; a rebuild over the same nodes
// judges them afresh once the bound passes.
func TestStuckNoWorker(t *testing.T) {
	mk := func(id int64, state string, changed time.Duration, reservation string) *db.Node {
		n := node(id, fmt.Sprintf("22222222-0000-4000-8000-%012d", id), "", "fake-hardware")
		n.ProvisionState = ptr(state)
		n.UpdatedAt = db.StampOf(testNow.Add(-changed))
		if reservation != "" {
			n.Reservation = ptr(reservation)
		}
		return n
	}
	snap := &db.Snapshot{Backend: rules.MySQL, Conductors: []db.Conductor{
		cond(1, "c1", "", true, ago(time.Second), "fake-hardware"),
	}, Nodes: []*db.Node{
		mk(1, "deleting", 2*time.Minute, ""),
		mk(2, "deleting", 30*time.Second, ""), // a stopping conductor's worker may still be at it
		mk(3, "deploying", 2*time.Minute, "c1"),
		mk(4, "wait call-back", time.Hour, ""), // the ramdisk works: no lock
		mk(5, "clean wait", time.Hour, ""),
		mk(6, "verifying", time.Hour, ""),
		mk(7, "active", time.Hour, ""),
		mk(8, "servicing", 61*time.Second, ""),
	}}
	topo := mustBuild(t, snap, testSettings, nil)
	want := []Stuck{StuckNoWorker, NotStuck, NotStuck, NotStuck, NotStuck, StuckNoWorker, NotStuck, StuckNoWorker}
	for i, w := range want {
		if got := topo.Nodes[i].Stuck; got != w {
			t.Errorf("node %d (%s): stuck %q, want %q", i+1, *topo.Nodes[i].ProvisionState, got, w)
		}
	}
	if want := map[StuckKey]int{{"", "deleting", StuckNoWorker}: 1, {"", "verifying", StuckNoWorker}: 1,
		{"", "servicing", StuckNoWorker}: 1}; !reflect.DeepEqual(topo.Stuck, want) {
		t.Errorf("Stuck %v, want %v", topo.Stuck, want)
	}
	if got, want := topo.noLockDeadline, testNow.Add(30*time.Second); !got.Equal(want) {
		t.Errorf("noLockDeadline %v, want %v (node 2's)", got, want)
	}
	// the same snapshot 10s later: reused; 31s later: node 2 is stuck too
	later, err := Build(snap, testSettings, testNow.Add(10*time.Second), topo)
	if err != nil || later.Nodes[1].Stuck != NotStuck || &later.Nodes[0] != &topo.Nodes[0] {
		t.Fatalf("10s later: %v, node 2 %q, reused %v", err, later.Nodes[1].Stuck, &later.Nodes[0] == &topo.Nodes[0])
	}
	past, err := Build(snap, testSettings, testNow.Add(31*time.Second), later)
	if err != nil || past.Nodes[1].Stuck != StuckNoWorker || past.Stuck[StuckKey{"", "deleting", StuckNoWorker}] != 2 {
		t.Fatalf("31s later: %v, node 2 %q, stuck %v", err, past.Nodes[1].Stuck, past.Stuck)
	}
	// a longer graceful_shutdown_timeout waits longer
	slow := testSettings
	slow.GracefulShutdownTimeout = 5 * time.Minute
	if topo := mustBuild(t, snap, slow, nil); !reflect.DeepEqual(topo.Stuck, map[StuckKey]int{{"", "verifying", StuckNoWorker}: 1}) {
		t.Errorf("graceful_shutdown_timeout 5m: stuck %v, want the node unchanged for an hour only", topo.Stuck)
	}
	// no ring, and a ring conductor not running, are said first
	snap.Conductors[0] = cond(1, "c1", "", true, ago(time.Hour), "fake-hardware")
	if topo := mustBuild(t, snap, testSettings, nil); topo.Nodes[0].Stuck != StuckNoConductor {
		t.Errorf("c1 dead: node 1 stuck %q, want %q", topo.Nodes[0].Stuck, StuckNoConductor)
	}
}

// TestLockHolderHostPort: from 23.0 a conductor registered as "HOST:PORT"
// locks nodes as HOST (rules.ReservationName). Its locks are its own while
// it runs (not stuck, counted under its name); once it is not running they
// are locks Ironic never releases. Before 23.0 the names are compared as
// they are.
func TestLockHolderHostPort(t *testing.T) {
	mk := func(id int64, reservation string) *db.Node {
		n := node(id, fmt.Sprintf("33333333-0000-4000-8000-%012d", id), "", "fake-hardware")
		n.ProvisionState = ptr("deploying")
		n.UpdatedAt = db.StampOf(testNow)
		n.Reservation = ptr(reservation)
		return n
	}
	snap := func() *db.Snapshot {
		return &db.Snapshot{Backend: rules.PostgreSQL, Conductors: []db.Conductor{
			cond(1, "127.0.0.2:8090", "", true, ago(time.Second), "fake-hardware"),
			cond(2, "127.0.0.3:8090", "", true, ago(time.Hour), "fake-hardware"),
			cond(3, "127.0.0.4", "", false, ago(time.Hour), "fake-hardware"),
		}, Nodes: []*db.Node{mk(1, "127.0.0.2"), mk(2, "127.0.0.3"), mk(3, "127.0.0.4"), mk(4, "elsewhere")}}
	}
	s29 := testSettings
	s29.Release = rules.MustRelease("29.0")
	topo := mustBuild(t, snap(), s29, nil)
	want := []Stuck{NotStuck, StuckLockNeverReleased, StuckLockHolder, StuckLockHolder}
	for i, w := range want {
		if got := topo.Nodes[i].Stuck; got != w {
			t.Errorf("29.0 node %d locked by %s: stuck %q, want %q", i+1, *topo.Nodes[i].Reservation, got, w)
		}
	}
	if want := map[string]int{"127.0.0.2:8090": 1, "127.0.0.3:8090": 1, "127.0.0.4": 1, "elsewhere": 1}; !reflect.DeepEqual(topo.Reservations, want) {
		t.Errorf("29.0 Reservations %v, want %v", topo.Reservations, want)
	}
	if c, exact := topo.LockHolder("127.0.0.2"); c == nil || c.Hostname != "127.0.0.2:8090" || exact {
		t.Errorf("LockHolder(127.0.0.2) = %v, %v", c, exact)
	}
	// a conductor moved from port 8089 to 8090: the old HOST row is
	// stopped, HOST:PORT runs and locks as HOST
	moved := snap()
	moved.Conductors[2] = cond(3, "127.0.0.2", "", false, ago(time.Hour), "fake-hardware")
	if topo := mustBuild(t, moved, s29, nil); topo.Nodes[0].Stuck != NotStuck {
		t.Errorf("moved port: node 1 stuck %q, want held by the running 127.0.0.2:8090", topo.Nodes[0].Stuck)
	}
	s22 := testSettings
	s22.Release = rules.MustRelease("22.1")
	topo = mustBuild(t, snap(), s22, nil)
	for i := range 4 {
		if got := topo.Nodes[i].Stuck; got != StuckLockHolder {
			t.Errorf("22.1 node %d: stuck %q, want %q (no HOST:PORT names before 23.0)", i+1, got, StuckLockHolder)
		}
	}
}
