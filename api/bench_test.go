package api

import (
	"net/http"
	"net/http/httptest"
	"testing"

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
