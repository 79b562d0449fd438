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
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	dto "github.com/prometheus/client_model/go"

	"github.com/ironic-conductor-exporter/ironic-conductor-exporter/db"
	"github.com/ironic-conductor-exporter/ironic-conductor-exporter/internal/fixture"
	"github.com/ironic-conductor-exporter/ironic-conductor-exporter/topology"
)

// prerenderFleet is a fleet whose node family takes several of
// writeNodeFamily's buffers (nodeTextFlush), with names and an unserved
// group.
func prerenderFleet(n int) *db.Snapshot {
	snap := fixture.Golden()
	snap.Nodes = nil
	rng := rand.New(rand.NewPCG(1, 2))
	for i := 0; i < n; i++ {
		nd := fixture.Node(int64(i+1), fmt.Sprintf("%08x-0000-4000-8000-%012x", rng.Uint32(), i),
			[]string{"", "rack2"}[i%2], []string{"ipmi", "redfish"}[i%3%2])
		if i%5 == 0 {
			nd.Name = fixture.Ptr(fmt.Sprintf("node-%d", i))
		}
		snap.Nodes = append(snap.Nodes, nd)
	}
	return snap
}

// TestPrerenderedIsPromhttp: the pre-rendered exposition, plain and gzip,
// is byte for byte what promhttp renders from the same collectors, across
// views of one node generation and a new one.
func TestPrerenderedIsPromhttp(t *testing.T) {
	src := fixture.NewSource(prerenderFleet(3*4096 + 17))
	cache := newTestCache(t, src, 0)
	own := prometheus.NewRegistry()
	own.MustRegister(collectors.NewGoCollector())
	refreshes, err := NewRefreshMetrics(own)
	if err != nil {
		t.Fatal(err)
	}
	opts := HandlerOptions{ExporterOptions: ExporterOptions{NodeInfo: true}, Logger: slog.New(slog.DiscardHandler)}
	h := &handler{cache: cache, opts: opts}
	// own's Go metrics change between two gatherings: compare against a
	// snapshot of them, served to both.
	for step := 0; step < 3; step++ {
		if step == 2 {
			snap := prerenderFleet(4096 + 1)
			snap.Nodes[0].Driver = "redfish"
			src.Set(snap, nil)
		}
		v := cache.Get(context.Background())
		refreshes.Observe(topology.Refresh{Duration: time.Duration(step) * time.Millisecond})
		frozen, err := own.Gather()
		if err != nil {
			t.Fatal(err)
		}
		h.opts.Gatherer = prometheus.GathererFunc(func() ([]*dto.MetricFamily, error) { return frozen, nil })
		reg := prometheus.NewRegistry()
		reg.MustRegister(viewCollector{view: v, now: cache.Now(), opts: opts.ExporterOptions})
		ref := promhttp.HandlerFor(prometheus.Gatherers{reg, h.opts.Gatherer}, promhttp.HandlerOpts{})
		for _, enc := range []string{"", "gzip"} {
			want, wantHdr := get(t, ref, enc)
			served := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { h.serveView(r.Context(), w, r, v) })
			got, gotHdr := get(t, served, enc)
			if !bytes.Equal(got, want) {
				t.Errorf("step %d, encoding %q: pre-rendered exposition (%d bytes) differs from promhttp's (%d bytes)",
					step, enc, len(got), len(want))
			}
			for _, k := range []string{"Content-Type", "Content-Encoding"} {
				if gotHdr.Get(k) != wantHdr.Get(k) {
					t.Errorf("step %d, encoding %q: %s %q, promhttp says %q", step, enc, k, gotHdr.Get(k), wantHdr.Get(k))
				}
			}
		}
	}
}

// get serves one GET with the Accept-Encoding enc and returns the body,
// decoded as one gzip member when gzip was used.
func get(t *testing.T, h http.Handler, enc string) ([]byte, http.Header) {
	t.Helper()
	req := httptest.NewRequest(http.MethodGet, "/metrics", nil)
	if enc != "" {
		req.Header.Set("Accept-Encoding", enc)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	if rec.Code != http.StatusOK {
		t.Fatalf("status %d: %s", rec.Code, rec.Body)
	}
	body := rec.Body.Bytes()
	if rec.Header().Get("Content-Encoding") == "gzip" {
		zr, err := gzip.NewReader(bytes.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		zr.Multistream(false) // one member, as every client can read
		if body, err = io.ReadAll(zr); err != nil {
			t.Fatalf("reading the gzip body: %v", err)
		}
		if rest, _ := io.ReadAll(zr); len(rest) != 0 {
			t.Fatalf("%d bytes after the gzip member", len(rest))
		}
	}
	return body, rec.Header()
}

// TestConcurrentScrapes: plain and gzip scrapes of one view, all at once on
// a node generation never rendered, each get the whole exposition (run with
// -race: the node family's order and gzip chunk are made once, shared).
func TestConcurrentScrapes(t *testing.T) {
	cache := newTestCache(t, fixture.NewSource(prerenderFleet(2*4096+5)), time.Minute)
	h := NewHandler(cache, HandlerOptions{ExporterOptions: ExporterOptions{NodeInfo: true}, Logger: slog.New(slog.DiscardHandler)})
	want, _ := get(t, h, "")
	h = NewHandler(cache, HandlerOptions{ExporterOptions: ExporterOptions{NodeInfo: true}, Logger: slog.New(slog.DiscardHandler)})
	var wg sync.WaitGroup
	bodies := make([][]byte, 8)
	for i := range bodies {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rec := httptest.NewRecorder()
			req := httptest.NewRequest(http.MethodGet, "/metrics", nil)
			if i%2 == 1 {
				req.Header.Set("Accept-Encoding", "gzip")
			}
			h.ServeHTTP(rec, req)
			bodies[i] = rec.Body.Bytes()
			if rec.Header().Get("Content-Encoding") == "gzip" {
				zr, err := gzip.NewReader(bytes.NewReader(bodies[i]))
				if err == nil {
					bodies[i], err = io.ReadAll(zr)
				}
				if err != nil {
					bodies[i] = []byte(err.Error())
				}
			}
		}()
	}
	wg.Wait()
	for i, got := range bodies {
		if !bytes.Equal(got, want) {
			t.Errorf("scrape %d (gzip %v): %d bytes differ from a lone scrape's %d", i, i%2 == 1, len(got), len(want))
		}
	}
}
