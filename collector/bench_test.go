package collector

import (
	"bytes"
	"compress/gzip"
	"context"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"runtime"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/ironic-conductor-exporter/ironic-conductor-exporter/db"
	"github.com/ironic-conductor-exporter/ironic-conductor-exporter/internal/fixture"
	"github.com/ironic-conductor-exporter/ironic-conductor-exporter/rules"
	"github.com/ironic-conductor-exporter/ironic-conductor-exporter/topology"
)

// benchSnapshot is 300 conductors in 6 groups of 4 hardware types and n
// nodes as db's reader makes them: unique UUIDs and names, shared pointers
// for the states, an instance on a third of them.
func benchSnapshot(n int) *db.Snapshot {
	groups := []string{"", "rack1", "rack2", "rack3", "edge-a", "edge-b"}
	types := []string{"ipmi", "redfish", "idrac", "ilo"}
	rng := rand.New(rand.NewPCG(1, 2))
	snap := &db.Snapshot{Backend: rules.PostgreSQL}
	for i := 0; i < 300; i++ {
		snap.Conductors = append(snap.Conductors, db.Conductor{ID: int64(i + 1),
			Hostname: fmt.Sprintf("conductor-%03d.example.com", i), ConductorGroup: groups[i%6], Online: true,
			UpdatedAt: fixture.Ago(time.Duration(rng.IntN(30)) * time.Second), HardwareTypes: types})
	}
	power, active, bm := fixture.Ptr("power on"), fixture.Ptr("active"), fixture.Ptr("baremetal")
	snap.Nodes = make([]*db.Node, n)
	for i := range snap.Nodes {
		nd := new(db.Node) // one allocation a node, as db's reads do
		snap.Nodes[i] = nd
		nd.ID = int64(i + 1)
		nd.UUID = fmt.Sprintf("%08x-%04x-4%03x-8%03x-%012x", rng.Uint32(), rng.Uint32()&0xffff,
			rng.Uint32()&0xfff, rng.Uint32()&0xfff, rng.Uint64()&0xffffffffffff)
		nd.Name = fixture.Ptr(fmt.Sprintf("node-%d", i))
		nd.ConductorGroup, nd.Driver = groups[rng.IntN(6)], types[rng.IntN(4)]
		nd.PowerState, nd.ProvisionState, nd.ResourceClass = power, active, bm
		if i%3 == 0 {
			nd.InstanceUUID = fixture.Ptr(fmt.Sprintf("%08x-0000-4000-8000-%012x", i, i))
		}
		nd.CreatedAt, nd.UpdatedAt = db.StampOf(fixture.Ago(time.Hour)), db.StampOf(fixture.Ago(time.Minute))
	}
	return snap
}

// benchCache is a cache over snap whose first refresh is done: Get waits
// for a refresh only DefaultMaxWait without a deadline, less than a large
// fleet's build takes, and a scrape would serve no topology.
func benchCache(b *testing.B, snap *db.Snapshot) *topology.Cache {
	c, err := topology.NewCache(topology.CacheConfig{Source: fixture.NewSource(snap), Settings: testSettings,
		MinInterval: time.Hour, Now: func() time.Time { return testNow }})
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	if v := c.Get(ctx); v.Topology == nil || len(v.Topology.Nodes) != len(snap.Nodes) {
		b.Fatalf("the first refresh: %v", v.Err)
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
		do := func(b *testing.B, url, enc string, read func(io.Reader) error) {
			req, _ := http.NewRequest(http.MethodGet, url, nil)
			req.Header.Set("Accept-Encoding", enc) // set by hand: the client leaves the body as sent
			resp, err := srv.Client().Do(req)
			if err != nil {
				b.Fatal(err)
			}
			defer resp.Body.Close()
			if err := read(resp.Body); err != nil || resp.StatusCode != http.StatusOK {
				b.Fatalf("GET: %v, %d", err, resp.StatusCode)
			}
		}
		get := func(b *testing.B, url, enc string) []byte {
			var body []byte
			do(b, url, enc, func(r io.Reader) (err error) { body, err = io.ReadAll(r); return err })
			return body
		}
		// The timed scrapes read the body into a reused buffer, so that the
		// client's own copying and allocation (io.ReadAll's growing buffer)
		// does not hide the server's cost in both figures.
		sink := make([]byte, 64<<10)
		drain := func(b *testing.B, url, enc string, want int) {
			do(b, url, enc, func(r io.Reader) error {
				n := 0
				for {
					k, err := r.Read(sink)
					n += k
					if err == io.EOF {
						break
					}
					if err != nil {
						return err
					}
				}
				if n < want-16<<10 || n > want+16<<10 { // the per-scrape families vary a little
					return fmt.Errorf("%d bytes, want about %d", n, want)
				}
				return nil
			})
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
				cpu := processCPU()
				for b.Loop() {
					drain(b, srv.URL, enc, len(body))
				}
				reportCPU(b, cpu)
				b.ReportMetric(float64(len(body)), "bytes")
			})
			b.Run(fmt.Sprintf("%s-floor/nodes=%d", enc, n), func(b *testing.B) {
				cpu := processCPU()
				for b.Loop() {
					drain(b, floor.URL, enc, len(body))
				}
				reportCPU(b, cpu)
			})
		}
	}
}

// processCPU is the CPU time (user and system) the process has used: on a
// shared machine a ratio of CPU times varies less than one of wall times,
// which include the waits for a core.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// reportCPU reports the process CPU time per iteration since start (client,
// server and garbage collector together), as cpu-ns/op.
func reportCPU(b *testing.B, start time.Duration) {
	if b.N > 0 {
		b.ReportMetric(float64(processCPU()-start)/float64(b.N), "cpu-ns/op")
	}
}

// BenchmarkLiveHeap reports the live heap per node of everything a running
// exporter keeps for a topology (snapshot, topology, the pre-rendered
// exposition after a gzip scrape, and after a plain scrape too), measured
// with runtime.ReadMemStats after a GC, and the CPU time per node of the
// first gzip scrape (which renders and compresses the node family) and of
// a plain scrape (which writes it). It scales linearly when the figures
// stay flat from 10k to 1M.
func BenchmarkLiveHeap(b *testing.B) {
	for _, n := range []int{10_000, 100_000, 1_000_000} {
		b.Run(fmt.Sprintf("nodes=%d", n), func(b *testing.B) {
			var gzCPU, plainCPU time.Duration
			for b.Loop() {
				var before, gz, plain runtime.MemStats
				runtime.GC()
				runtime.ReadMemStats(&before)
				cache := benchCache(b, benchSnapshot(n))
				h := NewHandler(cache, HandlerOptions{ExporterOptions: ExporterOptions{NodeInfo: true}})
				scrape := func(enc string, least int) time.Duration {
					req := httptest.NewRequest(http.MethodGet, "/metrics", nil)
					req.Header.Set("Accept-Encoding", enc)
					w := &discardResponse{header: http.Header{}}
					start := processCPU()
					h.ServeHTTP(w, req)
					if w.n < least {
						b.Fatalf("%s scrape: %d bytes, less than the node family's %d", enc, w.n, least)
					}
					return processCPU() - start
				}
				gzCPU += scrape("gzip", 20*n) // about 27 bytes a node
				runtime.GC()
				runtime.ReadMemStats(&gz)
				plainCPU += scrape("identity", 150*n) // about 182 bytes a node
				runtime.GC()
				runtime.ReadMemStats(&plain)
				b.ReportMetric(float64(gz.HeapAlloc-before.HeapAlloc)/float64(n), "B/node")
				b.ReportMetric(float64(plain.HeapAlloc-before.HeapAlloc)/float64(n), "B/node-with-plain")
				runtime.KeepAlive(cache)
				runtime.KeepAlive(h)
			}
			b.ReportMetric(float64(gzCPU)/float64(b.N)/float64(n), "gzip-first-cpu-ns/node")
			b.ReportMetric(float64(plainCPU)/float64(b.N)/float64(n), "plain-cpu-ns/node")
		})
	}
}

// discardResponse is an http.ResponseWriter that counts the body and keeps
// none of it.
type discardResponse struct {
	header http.Header
	n      int
}

func (w *discardResponse) Header() http.Header         { return w.header }
func (w *discardResponse) WriteHeader(int)             {}
func (w *discardResponse) Write(p []byte) (int, error) { w.n += len(p); return len(p), nil }
