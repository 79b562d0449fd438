package topology

import (
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/ironic-conductor-exporter/ironic-conductor-exporter/db"
	"github.com/ironic-conductor-exporter/ironic-conductor-exporter/internal/fixture"
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
	return &db.Snapshot{Backend: db.BackendPostgreSQL, Conductors: []db.Conductor{
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
// Ironic's _check_orphan_nodes / _check_deploying_status would look at.
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
