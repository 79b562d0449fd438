package api

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/ironic-conductor-exporter/ironic-conductor-exporter/auth"
	"github.com/ironic-conductor-exporter/ironic-conductor-exporter/auth/policy"
	"github.com/ironic-conductor-exporter/ironic-conductor-exporter/db"
	"github.com/ironic-conductor-exporter/ironic-conductor-exporter/internal/limit"
	"github.com/ironic-conductor-exporter/ironic-conductor-exporter/rules"
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
	f := newFixture(b, testSnapshot(rules.PostgreSQL), nil, Options{})
	benchRequest(b, f.h, "/v1/nodes/"+uuidN(5)+"/conductor")
}

// BenchmarkNodeConductorPolicy is the lookup under Keystone's policy
// (auth_strategy keystone, Ironic's newest defaults): a system reader, whose
// token the middleware validated already.
func BenchmarkNodeConductorPolicy(b *testing.B) {
	enf, err := policy.New(policy.Options{Release: policy.ReleaseNewest})
	if err != nil {
		b.Fatal(err)
	}
	reader := persona(nil, "all", "reader")
	f := newFixture(b, testSnapshot(rules.PostgreSQL), nil, Options{Access: func(*http.Request) Access {
		return auth.NewAccess(enf, reader)
	}})
	benchRequest(b, f.h, "/v1/nodes/"+uuidN(5)+"/conductor")
}

func BenchmarkNodeShowFields(b *testing.B) {
	f := newFixture(b, testSnapshot(rules.PostgreSQL), nil, Options{})
	benchRequest(b, f.h, "/v1/nodes/"+uuidN(5)+"?fields=uuid,conductor")
}

func BenchmarkConductorList(b *testing.B) {
	f := newFixture(b, testSnapshot(rules.PostgreSQL), nil, Options{})
	benchRequest(b, f.h, "/v1/conductors?detail=True")
}

// trivialBody is what the floors write.
var trivialBody = []byte(`{"hostname": "cond-e"}`)

// BenchmarkTrivialHandler is the baseline: a handler that writes a fixed
// JSON document.
func BenchmarkTrivialHandler(b *testing.B) {
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusOK)
		_, _ = w.Write(trivialBody)
	})
	benchRequest(b, h, "/")
}

// serverChain mounts h as the binary mounts the API (cmd's routes) with its
// default flags: behind --web.max-requests (40 at once, waiting up to 1 s:
// internal/limit) and the auth middleware of --auth.strategy=noauth.
func serverChain(h http.Handler) http.Handler {
	return limit.Concurrent(auth.Middleware(nil, h), 40, time.Second, "requests")
}

// chainFloor is the API's own front with a trivial resource behind it:
// what handler.ServeHTTP does (the request id, the method, the path and
// its segments, the microversion headers; recovering a panic) but, where
// it routes to a resource, a reply of trivialBody (Content-Type and
// Content-Length, as every answer).
type chainFloor struct{ h *handler }

func (f chainFloor) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	rq := request{h: f.h, w: w, r: r}
	defer rq.recoverPanic()
	if _, ok := rq.front(); ok {
		rq.reply(trivialBody)
	}
}

// BenchmarkNodeConductorChain is BenchmarkNodeConductor behind the
// server's chain (serverChain), next to its floor BenchmarkChainFloor.
func BenchmarkNodeConductorChain(b *testing.B) {
	f := newFixture(b, testSnapshot(rules.PostgreSQL), nil, Options{})
	benchRequest(b, serverChain(f.h), "/v1/nodes/"+uuidN(5)+"/conductor")
}

// BenchmarkChainFloor is the fairer floor of the lookup: the same request
// through the same chain and the API's front (chainFloor), answered with a
// fixed document instead of the lookup. Next to BenchmarkTrivialHandler it
// tells what the chain costs; next to BenchmarkNodeConductorChain what the
// lookup itself does.
func BenchmarkChainFloor(b *testing.B) {
	f := newFixture(b, testSnapshot(rules.PostgreSQL), nil, Options{})
	benchRequest(b, serverChain(chainFloor{f.h.(*handler)}), "/v1/nodes/"+uuidN(5)+"/conductor")
}

// bigSnapshot is a fleet of n nodes over 100 conductors in one group.
func bigSnapshot(n int) *db.Snapshot {
	s := &db.Snapshot{Backend: rules.PostgreSQL}
	for i := range 100 {
		s.Conductors = append(s.Conductors, db.Conductor{ID: int64(i + 1),
			Hostname: fmt.Sprintf("cond-%03d", i), Online: true, CreatedAt: testNow.Add(-time.Hour),
			UpdatedAt: testNow, Drivers: []string{"ipmi"}, HardwareTypes: []string{"ipmi"}})
	}
	for i := range n {
		s.Nodes = append(s.Nodes, &db.Node{ID: int64(i + 1),
			UUID: fmt.Sprintf("%08x-0000-4000-8000-%012x", i, i), Driver: "ipmi",
			CreatedAt: db.StampOf(testNow.Add(-time.Hour))})
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
