package novacache

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/ironic-conductor-exporter/ironic-conductor-exporter/db"
	"github.com/ironic-conductor-exporter/ironic-conductor-exporter/nova"
	"github.com/ironic-conductor-exporter/ironic-conductor-exporter/novadb"
	"github.com/ironic-conductor-exporter/ironic-conductor-exporter/topology"
)

type fakeReader struct {
	snap *novadb.Snapshot
	err  error
}

func (f *fakeReader) Read(context.Context, []string) (*novadb.Snapshot, error) { return f.snap, f.err }

// TestRefreshKeepsAnswerOnOutage: a read answers over the topology's nodes;
// a failing nova_api keeps the last answer, marked stale and counted.
func TestRefreshKeepsAnswerOnOutage(t *testing.T) {
	now := time.Date(2026, 12, 4, 12, 0, 0, 0, time.UTC)
	cell := nova.Cell{Name: "cell1", UUID: "c1",
		Services:     []nova.Service{{ID: 1, Host: "c-a", Binary: "nova-compute", LastSeenUp: now, Version: 68}},
		ComputeNodes: []nova.ComputeNode{{ID: 1, UUID: "n1", Host: "c-a", HypervisorHostname: "n1", HypervisorType: "ironic"}}}
	r := &fakeReader{snap: &novadb.Snapshot{ReadAt: now, Cells: []novadb.CellRead{{Cell: cell, ReadAt: now}}}}
	topo := &topology.Topology{}
	topo.Nodes = []topology.NodeInfo{{Node: &db.Node{UUID: "n1"}}, {Node: &db.Node{UUID: "n2"}}}
	c := New(Config{Reader: r, Ironic: func() *topology.Topology { return topo }, Now: func() time.Time { return now }})
	c.Refresh(context.Background())
	s := c.Current()
	if s.Err != nil || len(s.Cells) != 1 || len(s.Nodes) != 2 || !s.Assumed {
		t.Fatalf("first read: %+v", s)
	}
	for i, claims := range s.Fleet.Claims {
		if len(claims) != 1 || claims[0].Host != "c-a" {
			t.Errorf("node %d claims %+v, want c-a alone (it is its ring)", i, claims)
		}
	}
	r.err = errors.New("nova_api: connection refused")
	c.Refresh(context.Background())
	stale := c.Current()
	if stale.Err == nil || stale.Failures != 1 || stale.Attempts != 2 || len(stale.Cells) != 1 || !stale.ReadAt.Equal(now) {
		t.Errorf("after an outage: err %v, failures %d, attempts %d, cells %d, read at %v", stale.Err, stale.Failures,
			stale.Attempts, len(stale.Cells), stale.ReadAt)
	}
	if len(stale.Fleet.Claims) != 2 {
		t.Errorf("the answer was dropped: %+v", stale.Fleet)
	}
}
