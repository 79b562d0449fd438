package api

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/ironic-conductor-exporter/ironic-conductor-exporter/db"
)

// discardWriter is a ResponseWriter that keeps nothing, so benchmarks
// measure the handler rather than a recorder.
type discardWriter struct {
	h    http.Header
	code int
}

func (w *discardWriter) Header() http.Header         { return w.h }
func (w *discardWriter) Write(b []byte) (int, error) { return len(b), nil }
func (w *discardWriter) WriteHeader(code int)        { w.code = code }

func benchRequest(b *testing.B, h http.Handler, target string) {
	req := httptest.NewRequest(http.MethodGet, "http://ironic.example.com:6385"+target, nil)
	req.Header.Set("X-OpenStack-Ironic-API-Version", "1.49")
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		w := &discardWriter{h: http.Header{}}
		for pb.Next() {
			clear(w.h)
			h.ServeHTTP(w, req)
			if w.code != http.StatusOK {
				b.Fatalf("status %d", w.code)
			}
		}
	})
}

// BenchmarkNodeConductor is the hot path: which conductor serves a node.
func BenchmarkNodeConductor(b *testing.B) {
	f := newFixture(b, testSnapshot(db.BackendPostgreSQL), nil, Options{})
	benchRequest(b, f.h, "/v1/nodes/"+uuidN(5)+"/conductor")
}

func BenchmarkNodeShowFields(b *testing.B) {
	f := newFixture(b, testSnapshot(db.BackendPostgreSQL), nil, Options{})
	benchRequest(b, f.h, "/v1/nodes/"+uuidN(5)+"?fields=uuid,conductor")
}

func BenchmarkConductorList(b *testing.B) {
	f := newFixture(b, testSnapshot(db.BackendPostgreSQL), nil, Options{})
	benchRequest(b, f.h, "/v1/conductors?detail=True")
}

// BenchmarkTrivialHandler is the baseline: a handler that writes a fixed
// JSON document.
func BenchmarkTrivialHandler(b *testing.B) {
	body := []byte(`{"hostname": "cond-e"}`)
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusOK)
		_, _ = w.Write(body)
	})
	benchRequest(b, h, "/")
}

// bigSnapshot is a fleet of n nodes over 100 conductors in one group.
func bigSnapshot(n int) *db.Snapshot {
	s := &db.Snapshot{Backend: db.BackendPostgreSQL}
	for i := range 100 {
		s.Conductors = append(s.Conductors, db.Conductor{ID: int64(i + 1),
			Hostname: fmt.Sprintf("cond-%03d", i), Online: true, CreatedAt: testNow.Add(-time.Hour),
			UpdatedAt: testNow, Drivers: []string{"ipmi"}, HardwareTypes: []string{"ipmi"}})
	}
	for i := range n {
		s.Nodes = append(s.Nodes, db.Node{ID: int64(i + 1),
			UUID: fmt.Sprintf("%08x-0000-4000-8000-%012x", i, i), Driver: "ipmi",
			CreatedAt: testNow.Add(-time.Hour)})
	}
	return s
}

// BenchmarkNodeListByConductor100k is ?conductor= on a 100,000-node fleet:
// one conductor's ~1,000 nodes, first page and a page after a marker.
func BenchmarkNodeListByConductor100k(b *testing.B) {
	f := newFixture(b, bigSnapshot(100_000), nil, Options{})
	t := f.topology(b)
	c := &t.Conductors[42]
	mid := t.Nodes[c.Nodes[len(c.Nodes)/2]].UUID
	b.Run("first-page", func(b *testing.B) {
		benchRequest(b, f.h, "/v1/nodes?conductor="+c.Hostname+"&limit=100")
	})
	b.Run("after-marker", func(b *testing.B) {
		benchRequest(b, f.h, "/v1/nodes?conductor="+c.Hostname+"&limit=100&marker="+mid)
	})
}

// BenchmarkNodeDetailPage100k is a page of /v1/nodes/detail deep in a
// 100,000-node fleet.
func BenchmarkNodeDetailPage100k(b *testing.B) {
	f := newFixture(b, bigSnapshot(100_000), nil, Options{})
	t := f.topology(b)
	benchRequest(b, f.h, "/v1/nodes/detail?limit=100&marker="+t.Nodes[90_000].UUID)
}
