package collector

import (
	"bytes"
	"compress/gzip"
	"context"
	"fmt"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"io"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"runtime"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/ironic-conductor-exporter/ironic-conductor-exporter/db"
	"github.com/ironic-conductor-exporter/ironic-conductor-exporter/internal/fixture"
	"github.com/ironic-conductor-exporter/ironic-conductor-exporter/topology"
)

// benchSnapshot is 300 conductors in 6 groups of 4 hardware types and n
// nodes as db's reader makes them: unique UUIDs and names, shared pointers
// for the states, an instance on a third of them.
func benchSnapshot(n int) *db.Snapshot {
	groups := []string{"", "rack1", "rack2", "rack3", "edge-a", "edge-b"}
	types := []string{"ipmi", "redfish", "idrac", "ilo"}
	rng := rand.New(rand.NewPCG(1, 2))
	snap := &db.Snapshot{Backend: db.BackendPostgreSQL}
	for i := 0; i < 300; i++ {
		snap.Conductors = append(snap.Conductors, db.Conductor{ID: int64(i + 1),
			Hostname: fmt.Sprintf("conductor-%03d.example.com", i), ConductorGroup: groups[i%6], Online: true,
			UpdatedAt: fixture.Ago(time.Duration(rng.IntN(30)) * time.Second), HardwareTypes: types})
	}
	power, active, bm := fixture.Ptr("power on"), fixture.Ptr("active"), fixture.Ptr("baremetal")
	snap.Nodes = make([]db.Node, n)
	for i := range snap.Nodes {
		nd := &snap.Nodes[i]
		nd.ID = int64(i + 1)
		nd.UUID = fmt.Sprintf("%08x-%04x-4%03x-8%03x-%012x", rng.Uint32(), rng.Uint32()&0xffff,
			rng.Uint32()&0xfff, rng.Uint32()&0xfff, rng.Uint64()&0xffffffffffff)
		nd.Name = fixture.Ptr(fmt.Sprintf("node-%d", i))
		nd.ConductorGroup, nd.Driver = groups[rng.IntN(6)], types[rng.IntN(4)]
		nd.PowerState, nd.ProvisionState, nd.ResourceClass = power, active, bm
		if i%3 == 0 {
			nd.InstanceUUID = fixture.Ptr(fmt.Sprintf("%08x-0000-4000-8000-%012x", i, i))
		}
		nd.CreatedAt, nd.UpdatedAt = fixture.Ago(time.Hour), fixture.Ago(time.Minute)
	}
	return snap
}

// benchCache is a cache over snap whose first refresh has ended: a reader
// without a deadline waits at most MaxWait for one, and under load (or
// valgrind) building a large fleet takes longer, so a benchmark would
// measure the exposition of a cache that has no topology yet.
func benchCache(b *testing.B, snap *db.Snapshot) *topology.Cache {
	c, err := topology.NewCache(topology.CacheConfig{Source: fixture.NewSource(snap), Settings: testSettings,
		MinInterval: time.Hour, Now: func() time.Time { return testNow }})
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Hour)
	defer cancel()
	if v := c.Get(ctx); v.Topology == nil || len(v.Topology.Nodes) != len(snap.Nodes) {
		b.Fatalf("the benchmark cache has no topology of %d nodes: %v", len(snap.Nodes), v.Err)
	}
	return c
}

// BenchmarkMetrics is a /metrics scrape of a cached topology over HTTP,
// plain and gzip (what Prometheus asks for), through the production handler
// with the process-wide Go and process collectors, next to its floor: the
// same server writing the same bytes from memory.
func BenchmarkMetrics(b *testing.B) {
	for _, n := range []int{100_000} {
		cache := benchCache(b, benchSnapshot(n))
		own := prometheus.NewRegistry()
		own.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
		h := NewHandler(cache, HandlerOptions{ExporterOptions: ExporterOptions{NodeInfo: true}, Gatherer: own,
			Logger: slog.New(slog.DiscardHandler)})
		srv := httptest.NewServer(h)
		b.Cleanup(srv.Close)
		get := func(b *testing.B, url, enc string) []byte {
			req, _ := http.NewRequest(http.MethodGet, url, nil)
			req.Header.Set("Accept-Encoding", enc) // set by hand: the client leaves the body as sent
			resp, err := srv.Client().Do(req)
			if err != nil {
				b.Fatal(err)
			}
			defer resp.Body.Close()
			body, err := io.ReadAll(resp.Body)
			if err != nil || resp.StatusCode != http.StatusOK {
				b.Fatalf("GET: %v, %d", err, resp.StatusCode)
			}
			return body
		}
		for _, enc := range []string{"identity", "gzip"} {
			body := get(b, srv.URL, enc) // renders what a topology's scrapes share
			text := body
			if enc == "gzip" {
				zr, err := gzip.NewReader(bytes.NewReader(body))
				if err != nil {
					b.Fatal(err)
				}
				if text, err = io.ReadAll(zr); err != nil {
					b.Fatal(err)
				}
			}
			// The floor serves these bytes: they must be the whole fleet's.
			if !bytes.Contains(text, []byte("\nironic_up 1\n")) ||
				bytes.Count(text, []byte("\nironic_node_conductor_info{")) != n {
				b.Fatalf("%s: the exposition is not that of %d nodes: %.300s", enc, n, text)
			}
			floor := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { _, _ = w.Write(body) }))
			b.Cleanup(floor.Close)
			b.Run(fmt.Sprintf("%s/nodes=%d", enc, n), func(b *testing.B) {
				for b.Loop() {
					get(b, srv.URL, enc)
				}
				b.ReportMetric(float64(len(body)), "bytes")
			})
			b.Run(fmt.Sprintf("%s-floor/nodes=%d", enc, n), func(b *testing.B) {
				for b.Loop() {
					get(b, floor.URL, enc)
				}
			})
		}
	}
}

// BenchmarkLiveHeap reports the live heap per node of everything a running
// exporter keeps for a topology (snapshot, topology, the pre-rendered
// exposition after a gzip scrape, and the plain one after a plain scrape),
// measured with runtime.ReadMemStats after a GC. It scales linearly when
// B/node stays flat from 10k to 1M.
func BenchmarkLiveHeap(b *testing.B) {
	for _, n := range []int{10_000, 100_000, 1_000_000} {
		b.Run(fmt.Sprintf("nodes=%d", n), func(b *testing.B) {
			for b.Loop() {
				var before, gz, plain runtime.MemStats
				runtime.GC()
				runtime.ReadMemStats(&before)
				cache := benchCache(b, benchSnapshot(n))
				h := NewHandler(cache, HandlerOptions{ExporterOptions: ExporterOptions{NodeInfo: true}})
				scrape := func(enc string) {
					req := httptest.NewRequest(http.MethodGet, "/metrics", nil)
					req.Header.Set("Accept-Encoding", enc)
					h.ServeHTTP(httptest.NewRecorder(), req)
				}
				scrape("gzip")
				runtime.GC()
				runtime.ReadMemStats(&gz)
				scrape("identity")
				runtime.GC()
				runtime.ReadMemStats(&plain)
				b.ReportMetric(float64(gz.HeapAlloc-before.HeapAlloc)/float64(n), "B/node")
				b.ReportMetric(float64(plain.HeapAlloc-before.HeapAlloc)/float64(n), "B/node-with-plain")
				runtime.KeepAlive(cache)
				runtime.KeepAlive(h)
			}
		})
	}
}
