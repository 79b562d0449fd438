package collector

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"
)

// BenchmarkFirstScrape is the render of a topology's exposition: the first
// scrape of a cached topology by a new handler, which renders every family
// (the node family, one series per node, being nearly all of it), plain and
// gzip (what Prometheus asks for), at 100,000 and 1,000,000 nodes. The
// exposition scales linearly when ns/node stays flat between the sizes.
func BenchmarkFirstScrape(b *testing.B) {
	for _, n := range []int{100_000, 1_000_000} {
		cache := benchCache(b, benchSnapshot(n))
		for _, enc := range []string{"identity", "gzip"} {
			b.Run(fmt.Sprintf("%s/nodes=%d", enc, n), func(b *testing.B) {
				req := httptest.NewRequest(http.MethodGet, "/metrics", nil)
				req.Header.Set("Accept-Encoding", enc)
				var size int
				for b.Loop() {
					h := NewHandler(cache, HandlerOptions{ExporterOptions: ExporterOptions{NodeInfo: true}})
					w := &countingWriter{h: http.Header{}}
					h.ServeHTTP(w, req)
					if w.code != 0 && w.code != http.StatusOK {
						b.Fatalf("status %d", w.code)
					}
					size = w.n
				}
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(n), "ns/node")
				b.ReportMetric(float64(size)/float64(n), "B/node-sent")
			})
		}
	}
}

// countingWriter is a ResponseWriter that keeps only the count of bytes
// written, so that the benchmark measures the render, not a recorder.
type countingWriter struct {
	h    http.Header
	code int
	n    int
}

func (w *countingWriter) Header() http.Header { return w.h }
func (w *countingWriter) Write(p []byte) (int, error) {
	w.n += len(p)
	return len(p), nil
}
func (w *countingWriter) WriteHeader(code int) { w.code = code }
