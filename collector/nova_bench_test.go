package collector

import (
	"context"
	"fmt"
	"io"
	"net/http/httptest"
	"slices"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/common/expfmt"

	"github.com/ironic-conductor-exporter/ironic-conductor-exporter/db"
	"github.com/ironic-conductor-exporter/ironic-conductor-exporter/internal/exposition"
	"github.com/ironic-conductor-exporter/ironic-conductor-exporter/nova"
	"github.com/ironic-conductor-exporter/ironic-conductor-exporter/novacache"
	"github.com/ironic-conductor-exporter/ironic-conductor-exporter/novadb"
	"github.com/ironic-conductor-exporter/ironic-conductor-exporter/rules"
	"github.com/ironic-conductor-exporter/ironic-conductor-exporter/topology"
)

// benchNovaReader returns its snapshot; with changing, its compute nodes
// in a new slice each time, as a read after a write to them does.
type benchNovaReader struct {
	snap     *novadb.Snapshot
	changing *bool
}

func (r benchNovaReader) Read(context.Context, []string) (*novadb.Snapshot, error) {
	if r.changing != nil && *r.changing {
		for i := range r.snap.Cells {
			r.snap.Cells[i].Cell.ComputeNodes = slices.Clone(r.snap.Cells[i].Cell.ComputeNodes)
		}
	}
	return r.snap, nil
}

// novaBenchFleet is a Nova answer over n nodes and computes ironic
// nova-computes of one cell, 72% of the nodes with an instance.
func novaBenchFleet(_ testing.TB, n, computes int) (*novacache.Cache, *bool) {
	now := time.Now().UTC()
	topo := &topology.Topology{}
	cell := nova.Cell{Name: "cell1", UUID: "c1"}
	for i := range computes {
		h := fmt.Sprintf("ctl%03d-ironic", i)
		cell.Services = append(cell.Services, nova.Service{ID: int64(i + 1), Host: h, Binary: "nova-compute", LastSeenUp: now, Version: 68})
	}
	for i := range n {
		u := fmt.Sprintf("%08x-0000-4000-8000-%012x", i, i)
		node := &db.Node{ID: int64(i + 1), UUID: u}
		host := cell.Services[i%computes].Host
		if i%100 < 72 {
			inst := fmt.Sprintf("%08x-1111-4000-8000-%012x", i, i)
			node.InstanceUUID = &inst
			cell.Instances = append(cell.Instances, nova.Instance{UUID: inst, Host: host, Node: u})
		}
		topo.Nodes = append(topo.Nodes, topology.NodeInfo{Node: node})
		cell.ComputeNodes = append(cell.ComputeNodes, nova.ComputeNode{UUID: u, Host: host, HypervisorHostname: u})
	}
	changing := new(bool)
	c := novacache.New(novacache.Config{Reader: benchNovaReader{&novadb.Snapshot{ReadAt: now, Cells: []novadb.CellRead{{Cell: cell, ReadAt: now}}}, changing},
		Ironic: func() *topology.Topology { return topo }, Settings: rules.DefaultNovaSettings()})
	return c, changing
}

// BenchmarkNova measures, at 100k nodes and 100 computes, one Nova
// refresh (the answer over the nodes; "unchanged": the rows and states of
// the previous one, its views and Fleet kept), and what a gzip scrape adds with
// Nova configured: "scrape" the pieces rendered once per answer, as the
// text exposition writes them, beside "scrape-client_golang", the same
// families through a registry at every scrape (the floor it replaces).
func BenchmarkNova(b *testing.B) {
	c, changing := novaBenchFleet(b, 100_000, 100)
	*changing = true
	b.Run("refresh/nodes=100000", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			c.Refresh(context.Background())
		}
	})
	*changing = false
	b.Run("refresh-unchanged/nodes=100000", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			c.Refresh(context.Background())
		}
	})
	c.Refresh(context.Background())
	reg := prometheus.NewRegistry()
	reg.MustRegister(NewNovaCollector(c, ExporterOptions{NodeInfo: true}))
	nc := NewNovaCollector(c, ExporterOptions{NodeInfo: true})
	format := expfmt.NewFormat(expfmt.TypeTextPlain)
	b.Run("scrape/nodes=100000", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if err := exposition.Write(httptest.NewRecorder(), format, true, nc.Pieces()); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("scrape-client_golang/nodes=100000", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			mfs, err := reg.Gather()
			if err != nil {
				b.Fatal(err)
			}
			enc := expfmt.NewEncoder(io.Discard, expfmt.NewFormat(expfmt.TypeTextPlain))
			for _, mf := range mfs {
				if err := enc.Encode(mf); err != nil {
					b.Fatal(err)
				}
			}
		}
	})
}
