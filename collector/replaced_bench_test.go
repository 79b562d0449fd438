package collector

import (
	"context"
	"net/http"
	"net/http/httptest"
	"runtime"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ironic-conductor-exporter/ironic-conductor-exporter/db"
	"github.com/ironic-conductor-exporter/ironic-conductor-exporter/internal/fixture"
	"github.com/ironic-conductor-exporter/ironic-conductor-exporter/topology"
)

// BenchmarkLiveHeapReplaced reports the live heap per node at 100k nodes
// between a refresh that changed 1% of the nodes and the next scrape: what
// the memory row of docs/performance.md holds while nodes change, with the
// handler's rendering of the replaced topology still kept.
func BenchmarkLiveHeapReplaced(b *testing.B) {
	const n = 100_000
	for b.Loop() {
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		snap := benchSnapshot(n)
		var clock atomic.Int64
		clock.Store(testNow.UnixNano())
		src := fixture.NewSource(snap)
		c, err := topology.NewCache(topology.CacheConfig{Source: src, Settings: testSettings, MinInterval: time.Second,
			MaxWait: 10 * time.Minute, Now: func() time.Time { return time.Unix(0, clock.Load()) }})
		if err != nil {
			b.Fatal(err)
		}
		ctx := context.Background()
		if v := c.Get(ctx); v.Topology == nil {
			b.Fatal(v.Err)
		}
		h := NewHandler(c, HandlerOptions{ExporterOptions: ExporterOptions{NodeInfo: true}})
		req := httptest.NewRequest(http.MethodGet, "/metrics", nil)
		req.Header.Set("Accept-Encoding", "gzip")
		h.ServeHTTP(&discardResponse{header: http.Header{}}, req)
		next := *snap
		next.Nodes = slices.Clone(snap.Nodes)
		for i := 0; i < n; i += 100 {
			nd := *next.Nodes[i]
			nd.UpdatedAt = db.StampOf(nd.UpdatedAt.Time().Add(time.Second))
			next.Nodes[i] = &nd
		}
		src.Set(&next, nil)
		snap = nil
		clock.Add(int64(2 * time.Second))
		if v := c.Get(ctx); v.Topology == nil || v.Topology.Nodes[0].Node != next.Nodes[0] {
			b.Fatal("the refresh did not replace the nodes")
		}
		runtime.GC()
		runtime.ReadMemStats(&after)
		b.ReportMetric(float64(int64(after.HeapAlloc)-int64(before.HeapAlloc))/n, "B/node")
		runtime.KeepAlive(h)
		runtime.KeepAlive(c)
	}
}
