package collector

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"runtime"
	"runtime/debug"
	"slices"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ironic-conductor-exporter/ironic-conductor-exporter/db"
	"github.com/ironic-conductor-exporter/ironic-conductor-exporter/internal/fixture"
	"github.com/ironic-conductor-exporter/ironic-conductor-exporter/internal/memlimit"
	"github.com/ironic-conductor-exporter/ironic-conductor-exporter/topology"
)

// BenchmarkPeakRSS is the peak RSS row of docs/performance.md in process:
// at 100k nodes, 20 refreshes each changing 1% of the nodes, each followed
// by a gzip scrape, with the binary's memory policy (memlimit.Settle after
// each refresh that replaced the nodes) or without it (the runtime's default
// pacing); it reports the peak RSS (VmHWM, reset before the cache is made)
// over the live heap at the end. Run one sub-benchmark per process: the
// memory limit Settle sets stays with the process.
func BenchmarkPeakRSS(b *testing.B) {
	const n, cycles = 100_000, 20
	for _, settle := range []bool{true, false} {
		b.Run(fmt.Sprintf("settle=%t", settle), func(b *testing.B) {
			for b.Loop() {
				debug.SetMemoryLimit(math.MaxInt64)
				snap := benchSnapshot(n)
				runtime.GC()
				debug.FreeOSMemory()
				if err := os.WriteFile("/proc/self/clear_refs", []byte("5"), 0); err != nil {
					b.Skip("cannot reset VmHWM:", err)
				}
				var clock atomic.Int64
				clock.Store(testNow.UnixNano())
				src := fixture.NewSource(snap)
				cfg := topology.CacheConfig{Source: src, Settings: testSettings, MinInterval: time.Second,
					MaxWait: 10 * time.Minute, Now: func() time.Time { return time.Unix(0, clock.Load()) }}
				if settle {
					cfg.NodesReplaced = memlimit.Settle
				}
				c, err := topology.NewCache(cfg)
				if err != nil {
					b.Fatal(err)
				}
				h := NewHandler(c, HandlerOptions{ExporterOptions: ExporterOptions{NodeInfo: true}})
				req := httptest.NewRequest(http.MethodGet, "/metrics", nil)
				req.Header.Set("Accept-Encoding", "gzip")
				c.Get(context.Background())
				h.ServeHTTP(&discardResponse{header: http.Header{}}, req)
				for k := range cycles {
					next := *snap
					next.Nodes = slices.Clone(snap.Nodes)
					for i := k; i < n; i += 100 {
						nd := *next.Nodes[i]
						nd.UpdatedAt = db.StampOf(nd.UpdatedAt.Time().Add(time.Second))
						next.Nodes[i] = &nd
					}
					snap = &next
					src.Set(snap, nil)
					clock.Add(int64(2 * time.Second))
					c.Get(context.Background())
					h.ServeHTTP(&discardResponse{header: http.Header{}}, req)
				}
				hwm := vmHWM(b)
				runtime.GC()
				var ms runtime.MemStats
				runtime.ReadMemStats(&ms)
				b.ReportMetric(float64(hwm)/float64(ms.HeapAlloc), "peak-RSS/live-heap")
				b.ReportMetric(float64(hwm)/n, "peak-RSS-B/node")
				b.ReportMetric(float64(ms.HeapAlloc)/n, "live-B/node")
				runtime.KeepAlive(h)
			}
		})
	}
}

// vmHWM is the process's peak RSS in bytes.
func vmHWM(b *testing.B) int64 {
	status, err := os.ReadFile("/proc/self/status")
	if err != nil {
		b.Fatal(err)
	}
	for line := range bytes.Lines(status) {
		if f := bytes.Fields(line); len(f) == 3 && string(f[0]) == "VmHWM:" {
			kb, err := strconv.ParseInt(string(f[1]), 10, 64)
			if err != nil {
				b.Fatal(err)
			}
			return kb << 10
		}
	}
	b.Fatal("no VmHWM")
	return 0
}
