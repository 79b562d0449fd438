package nova

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/ironic-conductor-exporter/ironic-conductor-exporter/rules"
)

// TestAnswerPerRelease: during an upgrade each compute computes its view
// with its own release's rules (20.x keeps the host's case in the ring,
// 21.0 lowercases it): Answer equals Views run per compute with the
// release its services.version names (a down compute's by instance
// alone), and judges every ironic compute.
func TestAnswerPerRelease(t *testing.T) {
	now := time.Date(2026, 12, 4, 12, 0, 0, 0, time.UTC)
	cell := Cell{Name: "cell1", UUID: "c1", Services: []Service{
		{ID: 1, Host: "Old-A", Binary: "nova-compute", LastSeenUp: now.Add(-5 * time.Second), Version: 40},
		{ID: 2, Host: "New-B", Binary: "nova-compute", LastSeenUp: now.Add(-5 * time.Second), Version: 51},
		{ID: 3, Host: "down-c", Binary: "nova-compute", LastSeenUp: now.Add(-2 * time.Minute), Version: 51, Disabled: true},
		{ID: 4, Host: "conductor", Binary: "nova-conductor", LastSeenUp: now, Version: 51},
	}}
	for _, s := range cell.Services[:3] {
		cell.ComputeNodes = append(cell.ComputeNodes, ComputeNode{Host: s.Host})
	}
	var nodes Nodes
	for i := range 64 {
		nodes = append(nodes, IronicNode{UUID: fmt.Sprintf("00000000-0000-4000-8000-%012x", i)})
	}
	in := AnswerInput{Now: now, Backend: rules.PostgreSQL, IronicBackend: rules.PostgreSQL,
		Settings: rules.DefaultNovaSettings(), Cell: cell, Nodes: nodes}
	got := Answer(in)
	if len(got.Views) != 3 || len(got.Computes) != 3 {
		t.Fatalf("%d views, %d computes: %+v", len(got.Views), len(got.Computes), got)
	}
	for i, rel := range []rules.Release{{Major: 20}, {Major: 21}, {Major: 21}} {
		// down-c is down: viewed by instance alone.
		want := Views(Input{Now: now, Rules: rules.NewNova(rel, rules.PostgreSQL, rules.DefaultNovaSettings()),
			IronicBackend: rules.PostgreSQL, Cell: cell, Nodes: nodes, Computes: []Compute{{Host: cell.Services[i].Host}},
			InstanceOnly: i == 2})
		if diff := cmp.Diff(want[0], got.Views[i], cmp.Comparer(func(a, b error) bool { return (a == nil) == (b == nil) })); diff != "" {
			t.Errorf("compute %s with %s's rules (-want +got):\n%s", cell.Services[i].Host, rel, diff)
		}
	}
	if !slices.Contains(got.Views[0].Ring, "New-B") || !slices.Contains(got.Views[1].Ring, "new-b") {
		t.Errorf("20.0's ring keeps the case, 21.0's lowercases: %v, %v", got.Views[0].Ring, got.Views[1].Ring)
	}
	want := []ComputeState{
		{Host: "Old-A", Version: 40, Release: rules.Release{Major: 20, Minor: 0}, Up: true, UpKnown: true, Heartbeat: now.Add(-5 * time.Second), RingCandidate: true},
		{Host: "New-B", Version: 51, Release: rules.Release{Major: 21, Minor: 0}, Up: true, UpKnown: true, Heartbeat: now.Add(-5 * time.Second), RingCandidate: true},
		{Host: "down-c", Version: 51, Release: rules.Release{Major: 21, Minor: 0}, UpKnown: true, Disabled: true, Heartbeat: now.Add(-2 * time.Minute)},
	}
	if diff := cmp.Diff(want, got.Computes); diff != "" {
		t.Errorf("computes (-want +got):\n%s", diff)
	}
	managed := 0
	for _, v := range got.Views {
		managed += len(v.Nodes)
	}
	if managed < len(nodes) {
		t.Errorf("%d of %d nodes managed", managed, len(nodes))
	}
}

// TestFleetProblems: each reason counts the nodes (or rows) it names, and
// every reason is present.
func TestFleetProblems(t *testing.T) {
	nodes := Nodes{
		{UUID: "n-ok", InstanceUUID: "i-ok"},
		{UUID: "n-unclaimed", ProvisionState: "available"}, // and no compute record
		{UUID: "n-twice"},
		{UUID: "n-down"},
		{UUID: "n-moved"},
		{UUID: "n-mismatch", InstanceUUID: "i-ironic"},
	}
	cell := Cell{Name: "cell1", UUID: "c1",
		ComputeNodes: []ComputeNode{
			{UUID: KeyOf("n-ok"), Host: "a"}, {UUID: KeyOf("n-twice"), Host: "a"},
			{UUID: KeyOf("n-down"), Host: "b"}, {UUID: KeyOf("n-moved"), Host: "b"},
			{UUID: KeyOf("n-mismatch"), Host: "a"}, {UUID: KeyOf("n-gone"), Host: "a"},
		},
		SoftDeletedHosts: []string{"a"}, // a soft-deleted row is no record (and no orphan)
		Instances:        []Instance{{UUID: KeyOf("i-ok"), Host: "b", Node: KeyOf("n-ok")}, {UUID: KeyOf("i-nova"), Host: "a", Node: KeyOf("n-mismatch")}},
	}
	answer := CellAnswer{Name: "cell1", UUID: "c1",
		Computes: []ComputeState{{Host: "a", Up: true}, {Host: "b"}, {Host: "c", Up: true}},
		Views: []View{
			{Host: "a", Nodes: []Managed{{Node: 2}, {Node: 4}, {Node: 5, ByInstance: true}}}, // n-twice, n-moved, n-mismatch
			{Host: "b", Nodes: []Managed{{Node: 0, ByInstance: true}, {Node: 2}, {Node: 3}}}, // n-ok, n-twice, n-down
			{Host: "c", Nodes: []Managed{{Node: 2}}},                                         // n-twice
		}}
	f := NewFleet([]FleetCell{{Cell: cell, Answer: answer}}, nodes)
	// n-twice: a and c (up) and b (down); n-ok and n-down: b alone.
	want := map[string]int{ProblemUnclaimed: 1, ProblemClaimedTwice: 1, ProblemComputeDown: 2, ProblemNoComputeNode: 1,
		ProblemRecordHostDiffers: 1, ProblemInstanceMismatch: 1, ProblemInstanceComputeDown: 1, ProblemOrphanRecord: 1}
	if diff := cmp.Diff(want, f.Problems); diff != "" {
		t.Errorf("problems (-want +got):\n%s", diff)
	}
	if got := slices.Collect(f.Claims(2)); len(got) != 3 || got[0].Host != "a" || got[1].Host != "b" || got[2].Host != "c" || got[1].Up {
		t.Errorf("n-twice claims %+v, want a, b (down), c", got)
	}
}

// TestFleetNoComputeNode: a node without a compute record counts as one
// Nova cannot schedule only when available, not in maintenance and
// without an instance.
func TestFleetNoComputeNode(t *testing.T) {
	for _, c := range []struct {
		node IronicNode
		want int
	}{
		{IronicNode{UUID: "n", ProvisionState: "available"}, 1},
		{IronicNode{UUID: "n", ProvisionState: "available", Maintenance: true}, 0},
		{IronicNode{UUID: "n", ProvisionState: "available", InstanceUUID: "i"}, 0},
		{IronicNode{UUID: "n", ProvisionState: "active"}, 0},
		{IronicNode{UUID: "n", ProvisionState: "Available"}, 0},
		{IronicNode{UUID: "n"}, 0}, // a NULL provision state
	} {
		f := NewFleet([]FleetCell{{Cell: Cell{Name: "cell1", UUID: "c1"}}}, Nodes{c.node})
		if got := f.Problems[ProblemNoComputeNode]; got != c.want {
			t.Errorf("%+v: no_compute_node %d, want %d", c.node, got, c.want)
		}
	}
}
