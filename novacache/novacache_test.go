package novacache

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/ironic-conductor-exporter/ironic-conductor-exporter/db"
	"github.com/ironic-conductor-exporter/ironic-conductor-exporter/nova"
	"github.com/ironic-conductor-exporter/ironic-conductor-exporter/novadb"
	"github.com/ironic-conductor-exporter/ironic-conductor-exporter/rules"
	"github.com/ironic-conductor-exporter/ironic-conductor-exporter/topology"
)

type fakeReader struct {
	snap *novadb.Snapshot
	err  error
}

func (f *fakeReader) Read(context.Context, []string) (*novadb.Snapshot, error) { return f.snap, f.err }

// TestRefreshKeepsAnswerOnOutage: a read answers over the topology's nodes;
// a failing nova_api keeps the last answer, marked stale.
func TestRefreshKeepsAnswerOnOutage(t *testing.T) {
	now := time.Date(2026, 12, 4, 12, 0, 0, 0, time.UTC)
	cell := nova.Cell{Name: "cell1", UUID: "c1",
		Services:     []nova.Service{{ID: 1, Host: "c-a", Binary: "nova-compute", LastSeenUp: now, Version: 68}},
		ComputeNodes: []nova.ComputeNode{{UUID: "n1", Host: "c-a", HypervisorHostname: "n1"}}}
	r := &fakeReader{snap: &novadb.Snapshot{ReadAt: now, Cells: []novadb.CellRead{{Cell: cell, ReadAt: now}}}}
	topo := &topology.Topology{}
	topo.Nodes = []topology.NodeInfo{{Node: &db.Node{UUID: "n1"}}, {Node: &db.Node{UUID: "n2"}}}
	c := New(Config{Reader: r, Ironic: func() *topology.Topology { return topo }, Now: func() time.Time { return now }})
	c.Refresh(context.Background())
	s := c.Current()
	if s.Err != nil || len(s.Cells) != 1 || s.Fleet.Len() != 2 || !s.Assumed {
		t.Fatalf("first read: %+v", s)
	}
	for i := range s.Fleet.Len() {
		if claims := slices.Collect(s.Fleet.Claims(i)); len(claims) != 1 || claims[0].Host != "c-a" {
			t.Errorf("node %d claims %+v, want c-a alone (it is its ring)", i, claims)
		}
	}
	r.err = errors.New("nova_api: connection refused")
	c.Refresh(context.Background())
	stale := c.Current()
	if stale.Err == nil || len(stale.Cells) != 1 || !stale.ReadAt.Equal(now) {
		t.Errorf("after an outage: err %v, cells %d, read at %v", stale.Err, len(stale.Cells), stale.ReadAt)
	}
	if stale.Fleet != s.Fleet || stale.Fleet.Len() != 2 {
		t.Errorf("the answer was dropped: %+v", stale.Fleet)
	}
}

// TestRefreshKeepsViewsWhileInputsHold: a refresh over the same rows,
// nodes and compute states keeps the views and Fleet and judges the
// heartbeats again; a compute going down recomputes them.
func TestRefreshKeepsViewsWhileInputsHold(t *testing.T) {
	now := time.Date(2026, 12, 4, 12, 0, 0, 0, time.UTC)
	clock := now
	cell := nova.Cell{Name: "cell1", UUID: "c1",
		Services: []nova.Service{{ID: 1, Host: "c-a", Binary: "nova-compute", LastSeenUp: now, Version: 68},
			{ID: 2, Host: "c-b", Binary: "nova-compute", LastSeenUp: now, Version: 68}},
		ComputeNodes: []nova.ComputeNode{{UUID: "n1", Host: "c-a"},
			{UUID: "n2", Host: "c-b"}}}
	snap := &novadb.Snapshot{ReadAt: now, Cells: []novadb.CellRead{{Cell: cell, ReadAt: now}}}
	topo := &topology.Topology{}
	topo.Nodes = []topology.NodeInfo{{Node: &db.Node{UUID: "n1"}}, {Node: &db.Node{UUID: "n2"}}, {Node: &db.Node{UUID: "n3"}}}
	c := New(Config{Reader: &fakeReader{snap: snap}, Ironic: func() *topology.Topology { return topo },
		Settings: rules.DefaultNovaSettings(), Now: func() time.Time { return clock }})
	c.Refresh(context.Background())
	first := c.Current()

	clock = now.Add(10 * time.Second) // a heartbeat later, both still up
	snap.Cells[0].Cell.Services[0].LastSeenUp = clock
	c.Refresh(context.Background())
	kept := c.Current()
	if kept.Fleet != first.Fleet || &kept.Cells[0].Views[0] != &first.Cells[0].Views[0] {
		t.Error("unchanged inputs: the views or Fleet were computed again")
	}
	if got := kept.Cells[0].Computes[0].Heartbeat; !got.Equal(clock) {
		t.Errorf("heartbeat %v, want the new %v", got, clock)
	}

	clock = now.Add(5 * time.Minute) // c-b's heartbeat is stale now; c-a beats
	snap.Cells[0].Cell.Services[0].LastSeenUp = clock
	c.Refresh(context.Background())
	moved := c.Current()
	if moved.Fleet == first.Fleet {
		t.Fatal("a compute went down and the Fleet was kept")
	}
	for i := range moved.Fleet.Len() {
		if claims := slices.Collect(moved.Fleet.Claims(i)); i < 2 && (len(claims) == 0 || claims[len(claims)-1].Host != "c-a" && claims[0].Host != "c-a") {
			t.Errorf("node %d: %+v, want c-a's ring to hold it", i, claims)
		}
	}
}

// TestShared: a node's uuid shares its strings; its name, or a uuid Ironic
// does not have, none.
func TestShared(t *testing.T) {
	name, inst := "rack1-n1", "i1"
	topo := &topology.Topology{}
	topo.Nodes = []topology.NodeInfo{{Node: &db.Node{UUID: "n1", Name: &name, InstanceUUID: &inst}}}
	shared := Shared(func() *topology.Topology { return topo })
	if n, i, ok := shared("n1"); !ok || n != "n1" || i != &inst {
		t.Errorf("n1: %q %v %v", n, i, ok)
	}
	for _, u := range []string{"rack1-n1", "n2"} {
		if _, _, ok := shared(u); ok {
			t.Errorf("%s shares a node's strings", u)
		}
	}
	if _, _, ok := Shared(func() *topology.Topology { return nil })("n1"); ok {
		t.Error("no topology: shared")
	}
}
