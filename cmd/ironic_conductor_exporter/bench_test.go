package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ironic-conductor-exporter/ironic-conductor-exporter/collector"
	"github.com/ironic-conductor-exporter/ironic-conductor-exporter/db"
	"github.com/ironic-conductor-exporter/ironic-conductor-exporter/ring"
	"github.com/ironic-conductor-exporter/ironic-conductor-exporter/rules"
	"github.com/ironic-conductor-exporter/ironic-conductor-exporter/topology"
)

// benchFleet fills the test database with scripts/bench-fleet.sql: 300
// conductors in 6 groups, each registering 4 hardware types, and n nodes.
func benchFleet(b *testing.B, n int) {
	b.Helper()
	sqlText, err := os.ReadFile(filepath.Join("..", "..", "scripts", "bench-fleet.sql"))
	if err != nil {
		b.Fatal(err)
	}
	d := testIronicDB.DB(b)
	if _, err := d.Exec(strings.ReplaceAll(string(sqlText), ":nodes", strconv.Itoa(n))); err != nil {
		b.Fatalf("bench-fleet.sql: %v", err)
	}
}

// BenchmarkRefresh is one full refresh as a scrape sees it: the database
// snapshot, the topology and the whole /metrics exposition. "cold" builds
// every ring and hashes every node; "steady" is the usual case of a
// database that did not change since the previous refresh.
func BenchmarkRefresh(b *testing.B) {
	needDB(b)
	for _, n := range []int{10_000, 100_000} {
		benchFleet(b, n)
		database, err := db.Open(dsnFor("127.0.0.1:5432"), db.Options{})
		if err != nil {
			b.Fatal(err)
		}
		settings := topology.Settings{Settings: rules.Settings{HeartbeatTimeout: time.Minute, PartitionExponent: 5, Algorithm: ring.MD5}}
		scrape := func(cache *topology.Cache) {
			rec := httptest.NewRecorder()
			collector.NewHandler(cache, collector.HandlerOptions{ExporterOptions: collector.ExporterOptions{NodeInfo: true}}).
				ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
			if rec.Code != http.StatusOK || !strings.Contains(rec.Body.String(), "ironic_up 1") {
				b.Fatalf("scrape failed: %d %.300s", rec.Code, rec.Body.String())
			}
			_, _ = io.Copy(io.Discard, rec.Body)
		}
		newCache := func() *topology.Cache {
			c, err := topology.NewCache(topology.CacheConfig{Source: database, Settings: settings})
			if err != nil {
				b.Fatal(err)
			}
			return c
		}
		b.Run(fmt.Sprintf("cold/nodes=%d", n), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				scrape(newCache())
			}
		})
		b.Run(fmt.Sprintf("steady/nodes=%d", n), func(b *testing.B) {
			cache := newCache()
			scrape(cache)
			b.ReportAllocs()
			for b.Loop() {
				scrape(cache)
			}
		})
		b.Run(fmt.Sprintf("snapshot-only/nodes=%d", n), func(b *testing.B) {
			for b.Loop() {
				if _, err := database.Snapshot(context.Background()); err != nil {
					b.Fatal(err)
				}
			}
		})
		database.Close()
	}
}
