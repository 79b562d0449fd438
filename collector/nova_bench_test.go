package collector

import (
	"context"
	"fmt"
	"io"
	"net/http/httptest"
	"runtime"
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
// in a new slice of a new generation each time, as a read after a write
// to them does.
type benchNovaReader struct {
	snap     *novadb.Snapshot
	changing *bool
}

func (r benchNovaReader) Read(context.Context, []string, *novadb.Known) (*novadb.Snapshot, error) {
	if r.changing != nil && *r.changing {
		for i := range r.snap.Cells {
			r.snap.Cells[i].Cell.ComputeNodes = slices.Clone(r.snap.Cells[i].Cell.ComputeNodes)
			r.snap.Cells[i].Generation.ComputeNodes++
		}
	}
	return r.snap, nil
}

// novaBenchFleet is a Nova answer over n nodes and computes ironic
// nova-computes of one cell, 72% of the nodes with an instance.
func novaBenchFleet(_ testing.TB, n, computes int) (*novacache.Cache, *bool) {
	topo := novaBenchTopology(n)
	changing := new(bool)
	c := novacache.New(novacache.Config{Reader: benchNovaReader{novaBenchSnapshot(topo, computes), changing},
		Ironic: func(context.Context) *topology.Topology { return topo }, Settings: rules.DefaultNovaSettings()})
	return c, changing
}

// novaBenchTopology is a topology of n nodes, 72% of them with an
// instance.
func novaBenchTopology(n int) *topology.Topology {
	topo := &topology.Topology{}
	for i := range n {
		node := &db.Node{ID: int64(i + 1), UUID: fmt.Sprintf("%08x-0000-4000-8000-%012x", i, i)}
		if i%100 < 72 {
			inst := fmt.Sprintf("%08x-1111-4000-8000-%012x", i, i)
			node.InstanceUUID = &inst
		}
		topo.Nodes = append(topo.Nodes, topology.NodeInfo{Node: node})
	}
	return topo
}

// novaBenchSnapshot is a read of one cell with computes ironic
// nova-computes, a compute node for each of topo's nodes and their
// instances.
func novaBenchSnapshot(topo *topology.Topology, computes int) *novadb.Snapshot {
	now := time.Now().UTC()
	cell := nova.Cell{Name: "cell1", UUID: "c1"}
	for i := range computes {
		h := fmt.Sprintf("ctl%03d-ironic", i)
		cell.Services = append(cell.Services, nova.Service{ID: int64(i + 1), Host: h, Binary: "nova-compute", LastSeenUp: now, Version: 68})
	}
	cell.ComputeNodes = make([]nova.ComputeNode, 0, len(topo.Nodes))
	for i, ni := range topo.Nodes {
		host, u := cell.Services[i%computes].Host, nova.KeyOf(ni.UUID)
		if ni.InstanceUUID != nil {
			cell.Instances = append(cell.Instances, nova.Instance{UUID: nova.KeyOf(*ni.InstanceUUID), Host: host, Node: u})
		}
		cell.ComputeNodes = append(cell.ComputeNodes, nova.ComputeNode{UUID: u, Host: host, HypervisorHostname: u})
	}
	return &novadb.Snapshot{ReadAt: now, Cells: []novadb.CellRead{{Cell: cell, ReadAt: now}}}
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
			if err := exposition.Write(httptest.NewRecorder(), format, true, nc.Pieces(context.Background())); err != nil {
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

// BenchmarkNovaLiveHeap reports the live heap per node that the Nova side
// keeps beside Ironic's topology at 100k nodes and 100 computes (the
// reader's rows, the cache's answer and Fleet), measured with
// runtime.ReadMemStats after a GC: the Nova part of the memory row with
// Nova configured (docs/performance.md).
func BenchmarkNovaLiveHeap(b *testing.B) {
	const n = 100_000
	for b.Loop() {
		var before, after runtime.MemStats
		topo := novaBenchTopology(n)
		runtime.GC()
		runtime.ReadMemStats(&before)
		c := novacache.New(novacache.Config{Reader: benchNovaReader{snap: novaBenchSnapshot(topo, 100)},
			Ironic: func(context.Context) *topology.Topology { return topo }, Settings: rules.DefaultNovaSettings()})
		c.Refresh(context.Background())
		runtime.GC()
		runtime.ReadMemStats(&after)
		b.ReportMetric(float64(int64(after.HeapAlloc)-int64(before.HeapAlloc))/n, "B/node")
		runtime.KeepAlive(c)
		runtime.KeepAlive(topo)
	}
}
