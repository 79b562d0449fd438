package topology

import (
	"reflect"
	"testing"

	"github.com/ironic-conductor-exporter/ironic-conductor-exporter/rules"
)

// TestConcurrency: the nodes each limited action counts, per group, and
// the count each group's conductors compare with the limit: every group's
// before 35.0 or without max_concurrent_per_conductor_group, the group's
// own with it; nothing before 21.1.
func TestConcurrency(t *testing.T) {
	snap := lifecycleSnapshot()
	extra := lifecycleSnapshot().Nodes
	for i, n := range extra[:5] {
		n.ID, n.UUID = int64(100+i), "22222222-0000-4000-8000-00000000000"+string(rune('0'+i))
		n.ProvisionState, n.ConductorGroup = ptr([]string{"deleting", "cleaning", "clean wait", "deploying", "clean failed"}[i]), "rack9"
	}
	snap.Nodes = append(snap.Nodes, extra[:5]...)
	// group "": wait call-back and deploying (deploy 2); rack9: clean wait,
	// deleting, cleaning, clean wait (clean 4) and deploying (deploy 1).
	type row struct {
		action            rules.Action
		group             string
		inFlight, counted int
		limit             int
	}
	rowsOf := func(s Settings) []row {
		var out []row
		for _, c := range mustBuild(t, snap, s, nil).Concurrency() {
			out = append(out, row{c.Action, c.ConductorGroup, c.InFlight, c.Counted, c.Limit})
		}
		return out
	}
	s := testSettings
	s.MaxConcurrentDeploy, s.MaxConcurrentClean, s.MaxConcurrentPerConductorGroup = 3, 4, true
	want := []row{{rules.ActionDeploy, "", 2, 3, 3}, {rules.ActionDeploy, "rack9", 1, 3, 3},
		{rules.ActionClean, "", 0, 4, 4}, {rules.ActionClean, "rack9", 4, 4, 4}}
	if got := rowsOf(s); !reflect.DeepEqual(got, want) {
		t.Errorf("24.1, per group asked (ignored): %v, want %v", got, want)
	}
	s.Release = rules.MustRelease("35.0")
	want = []row{{rules.ActionDeploy, "", 2, 2, 3}, {rules.ActionDeploy, "rack9", 1, 1, 3},
		{rules.ActionClean, "", 0, 0, 4}, {rules.ActionClean, "rack9", 4, 4, 4}}
	got := mustBuild(t, snap, s, nil).Concurrency()
	if rows := rowsOf(s); !reflect.DeepEqual(rows, want) {
		t.Errorf("35.0 per group: %v, want %v", rows, want)
	}
	if got[3].Headroom() != 0 || got[0].Headroom() != 1 {
		t.Errorf("headroom %d %d, want 0 1", got[3].Headroom(), got[0].Headroom())
	}
	s.Release = rules.MustRelease("21.0")
	if got := mustBuild(t, snap, s, nil).Concurrency(); got != nil {
		t.Errorf("21.0: %v, want none", got)
	}
}

// TestFaults: the nodes Ironic faulted, by group, ring conductor and
// bounded fault label.
func TestFaults(t *testing.T) {
	snap := lifecycleSnapshot()
	snap.Nodes[0].Fault = ptr("power failure")             // c-up
	snap.Nodes[1].Fault = ptr("power failure")             // c-up
	snap.Nodes[4].Fault = ptr("clean failure")             // rack9: no conductor
	snap.Nodes[5].Fault = ptr("a fault of a newer Ironic") // c-up
	snap.Nodes[0].Health = ptr("Critical")
	snap.Nodes[4].Health = ptr("OK")
	topo := mustBuild(t, snap, testSettings, nil)
	want := map[FaultKey]int{{"", "c-up", "power failure"}: 2, {"rack9", "", "clean failure"}: 1, {"", "c-up", "other"}: 1}
	if !reflect.DeepEqual(topo.Faults, want) {
		t.Errorf("Faults %v, want %v", topo.Faults, want)
	}
	if want := map[FaultKey]int{{"", "c-up", "Critical"}: 1, {"rack9", "", "OK"}: 1}; !reflect.DeepEqual(topo.Health, want) {
		t.Errorf("Health %v, want %v", topo.Health, want)
	}
}

// TestUnregistered: orphans whose hardware type no conductor row has, in
// any group or state.
func TestUnregistered(t *testing.T) {
	snap := lifecycleSnapshot()
	snap.Nodes[0].Driver = "ilo"     // no conductor has it
	snap.Nodes[4].Driver = "redfish" // rack9, no conductor there; nobody has redfish either
	snap.Nodes[5].ConductorGroup = "rack9"
	topo := mustBuild(t, snap, testSettings, nil)
	if got, want := topo.Unregistered(), map[string]int{"ilo": 1, "redfish": 1}; !reflect.DeepEqual(got, want) {
		t.Errorf("Unregistered %v, want %v (node 6 is ipmi in rack9: a group without conductor, not an unregistered type)", got, want)
	}
}
