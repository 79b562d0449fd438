package main

import (
	"context"
	"database/sql"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ironic-conductor-exporter/ironic-conductor-exporter/collector"
	"github.com/ironic-conductor-exporter/ironic-conductor-exporter/db"
	"github.com/ironic-conductor-exporter/ironic-conductor-exporter/dbconn"
	"github.com/ironic-conductor-exporter/ironic-conductor-exporter/internal/bench"
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
		database, err := db.Open(dsnFor("127.0.0.1:5432"), dbconn.Options{})
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

// countingSource is the database as the cache's Source, counting
// the refreshes whose probe spared the node read (unchanged), that read
// only the changed nodes (delta), and that read every node (read).
type countingSource struct {
	*db.DB
	unchanged, delta, read atomic.Int64
}

func (s *countingSource) SnapshotChanges(ctx context.Context, known *db.Known) (*db.Snapshot, error) {
	return s.count(s.DB.SnapshotChanges(ctx, known))
}

func (s *countingSource) count(snap *db.Snapshot, err error) (*db.Snapshot, error) {
	if err == nil {
		map[db.NodeRead]*atomic.Int64{db.NodeReadSkipped: &s.unchanged, db.NodeReadDelta: &s.delta,
			db.NodeReadFull: &s.read}[snap.NodeRead].Add(1)
	}
	return snap, err
}

// BenchmarkRefreshFloors is a cache refresh on PostgreSQL at 100,000 nodes
// next to its floor, in alternated rounds (ICE_BENCH_ROUNDS, see
// internal/bench): "unchanged" is a refresh when nothing changed (the
// probe vouches for the nodes: conductors read, liveness judged, the
// previous topology's node results reused), whose floor "probe" is
// db.SQLNodeProbe alone on the same server; "delta" is a refresh after one
// node changed (its driver and updated_at, as Ironic's update_node writes
// them; the write itself is not timed): the probe, the changed rows only,
// merged into the previous nodes, and the topology, next to "probe";
// "full" is a refresh that reads every node (what a changed database costs
// without the delta read: the read and the topology). The conductors' heartbeats
// are refreshed before each round and asserted alive after each
// sub-benchmark: a stale fleet would measure another path. The fleet's
// nodes were enrolled one a second up to a day before (bench-fleet.sql), so that every probe
// is one the cache trusts; the delta's writes carry updated_at a second
// apart from then on, each later than the last.
func BenchmarkRefreshFloors(b *testing.B) {
	needDB(b)
	const n = 100_000
	benchFleet(b, n)
	admin := testIronicDB.DB(b)
	ctx := context.Background()
	database, err := db.Open(dsnFor("127.0.0.1:5432"), dbconn.Options{})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = database.Close() })
	settings := topology.Settings{Settings: rules.Settings{HeartbeatTimeout: time.Minute, PartitionExponent: 5, Algorithm: ring.MD5}}
	heartbeat := func(b *testing.B) {
		if _, err := admin.Exec(`UPDATE conductors SET updated_at = now() AT TIME ZONE 'utc'`); err != nil {
			b.Fatal(err)
		}
	}
	// refresh is one refresh of cache, waited for.
	refresh := func(b *testing.B, cache *topology.Cache) *topology.Topology {
		rctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
		defer cancel()
		v := cache.Get(rctx)
		if v.Err != nil || v.Topology == nil || len(v.Topology.Nodes) != n {
			b.Fatalf("refresh: %v", v.Err)
		}
		return v.Topology
	}
	allAlive := func(b *testing.B, t *topology.Topology) {
		for _, c := range t.Conductors {
			if !c.Alive {
				b.Fatalf("conductor %s is not alive: the figures would measure a stale fleet", c.Hostname)
			}
		}
	}
	newCache := func(b *testing.B, full time.Duration) (*topology.Cache, *countingSource) {
		src := &countingSource{DB: database}
		c, err := topology.NewCache(topology.CacheConfig{Source: src, Settings: settings, FullInterval: full})
		if err != nil {
			b.Fatal(err)
		}
		refresh(b, c) // the first refresh reads everything
		return c, src
	}
	var written int // the delta's writes so far
	for range bench.Rounds(n) {
		heartbeat(b)
		b.Run(fmt.Sprintf("unchanged/nodes=%d", n), func(b *testing.B) {
			cache, src := newCache(b, time.Hour)
			var t *topology.Topology
			for b.Loop() {
				t = refresh(b, cache)
			}
			allAlive(b, t)
			if got := src.unchanged.Load(); got != int64(b.N) || src.read.Load() != 1 {
				b.Fatalf("%d of %d refreshes skipped the node read, %d read them: the probe did not vouch",
					got, b.N, src.read.Load())
			}
		})
		b.Run(fmt.Sprintf("probe/nodes=%d", n), func(b *testing.B) {
			var count int64
			for b.Loop() {
				var maxID, reserved sql.NullInt64
				var updated, created sql.NullTime
				if err := admin.QueryRowContext(ctx, db.SQLNodeProbe).Scan(&count, &maxID, &updated, &reserved, &created); err != nil {
					b.Fatal(err)
				}
			}
			if count != n {
				b.Fatalf("probe counted %d nodes", count)
			}
		})
		b.Run(fmt.Sprintf("delta/nodes=%d", n), func(b *testing.B) {
			cache, src := newCache(b, time.Hour)
			var t *topology.Topology
			for b.Loop() {
				b.StopTimer()
				written++
				if _, err := admin.ExecContext(ctx, `UPDATE nodes SET driver = $1,
       updated_at = (now() AT TIME ZONE 'utc') - interval '1 day' + $2::int * interval '1 second'
WHERE id = (SELECT id FROM nodes ORDER BY id OFFSET $3 LIMIT 1)`, []string{"ipmi", "redfish"}[written%2], written, written*7919%n); err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
				t = refresh(b, cache)
			}
			allAlive(b, t)
			if got := src.delta.Load(); got != int64(b.N) || src.read.Load() != 1 || src.unchanged.Load() != 0 {
				b.Fatalf("%d of %d refreshes read the changed nodes only, %d read them all, %d none: the delta did not work",
					got, b.N, src.read.Load(), src.unchanged.Load())
			}
		})
		b.Run(fmt.Sprintf("full/nodes=%d", n), func(b *testing.B) {
			cache, src := newCache(b, 0)
			var t *topology.Topology
			for b.Loop() {
				t = refresh(b, cache)
			}
			allAlive(b, t)
			if src.unchanged.Load() != 0 {
				b.Fatal("a full refresh skipped the node read")
			}
		})
	}
}
