package api

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"testing"
	"time"
)

// BenchmarkNodePage is a page of 50 nodes on fleets of 10,000 and 100,000
// nodes: ?conductor= (first page, and after a marker) and /v1/nodes/detail
// after a marker deep in the fleet. A lookup proportional to the nodes it
// returns, not to the fleet, takes the same time at both sizes.
func BenchmarkNodePage(b *testing.B) {
	const page = 50
	sizes := []int{10_000, 100_000}
	type target struct{ name, uri string }
	cases := map[int][]target{}
	fixtures := map[int]*fixture{}
	for _, n := range sizes {
		f := newFixture(b, bigSnapshot(n), nil, Options{})
		ctx, cancel := context.WithTimeout(context.Background(), time.Hour)
		v := f.cache.Get(ctx) // without a deadline Get waits 500ms at most
		cancel()
		t := v.Topology
		if t == nil || len(t.Nodes) != n {
			b.Fatalf("no topology of %d nodes: %v", n, v.Err)
		}
		c := &t.Conductors[42]
		fixtures[n] = f
		cases[n] = []target{
			{"conductor", fmt.Sprintf("/v1/nodes?conductor=%s&limit=%d", c.Hostname, page)},
			{"conductor-after-marker", fmt.Sprintf("/v1/nodes?conductor=%s&limit=%d&marker=%s",
				c.Hostname, page, t.Nodes[c.Nodes[len(c.Nodes)/4]].UUID)},
			{"detail-after-marker", fmt.Sprintf("/v1/nodes/detail?limit=%d&marker=%s", page, t.Nodes[n*9/10].UUID)},
		}
		for _, tc := range cases[n] {
			rec := f.do(http.MethodGet, tc.uri, "X-OpenStack-Ironic-API-Version: 1.49")
			var body struct{ Nodes []json.RawMessage }
			if err := json.Unmarshal(rec.Body.Bytes(), &body); err != nil || rec.Code != http.StatusOK || len(body.Nodes) != page {
				b.Fatalf("%s at %d nodes: %d, %d nodes, %v: %.300s", tc.name, n, rec.Code, len(body.Nodes), err, rec.Body.String())
			}
		}
	}
	for i := range cases[sizes[0]] {
		for _, n := range sizes {
			tc := cases[n][i]
			b.Run(fmt.Sprintf("%s/nodes=%d", tc.name, n), func(b *testing.B) {
				benchRequest(b, fixtures[n].h, tc.uri)
			})
		}
	}
}
