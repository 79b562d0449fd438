package collector

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/ironic-conductor-exporter/ironic-conductor-exporter/db"
)

// fakeSource serves a fixed snapshot or error and counts reads; block, when
// set, holds each read until it is closed.
type fakeSource struct {
	mu    sync.Mutex
	snap  *db.Snapshot
	err   error
	block chan struct{}
	reads atomic.Int32
}

func (f *fakeSource) Snapshot(ctx context.Context) (*db.Snapshot, error) {
	f.reads.Add(1)
	f.mu.Lock()
	block, snap, err := f.block, f.snap, f.err
	f.mu.Unlock()
	if block != nil {
		select {
		case <-block:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	return snap, err
}

func (f *fakeSource) set(snap *db.Snapshot, err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.snap, f.err = snap, err
}

// goldenSnapshot has one conductor in each state, a ring with two members,
// an orphan node, and a lock held by a host that is not a conductor.
func goldenSnapshot() *db.Snapshot {
	n1 := node(1, "11111111-1111-4111-8111-111111111111", "", "ipmi")
	n1.Name = ptr("node-1")
	n1.Reservation = ptr("c-alive")
	n2 := node(2, "22222222-2222-4222-8222-222222222222", "", "ipmi")
	n2.Reservation = ptr("gone:6385")
	n3 := node(3, "33333333-3333-4333-8333-333333333333", "rack2", "redfish")
	return &db.Snapshot{Backend: db.BackendPostgreSQL, Conductors: []db.Conductor{
		cond(1, "c-alive", "", true, ago(10*time.Second), "ipmi", "redfish"),
		cond(2, "c-draining", "", false, ago(10*time.Second), "ipmi"),
		cond(3, "c-stopped", "rack2", false, ago(time.Hour), "redfish"),
		cond(4, "c-dead", "rack2", true, ago(time.Hour), "redfish"),
		cond(5, "c-two", "", true, ago(20*time.Second), "ipmi"),
	}, Nodes: []db.Node{n1, n2, n3}}
}

func newTestCache(t *testing.T, src Source, minInterval time.Duration) *Cache {
	t.Helper()
	c, err := NewCache(CacheConfig{Source: src, Settings: testSettings, MinInterval: minInterval,
		Now: func() time.Time { return testNow }})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// TestExporterGolden compares the full exposition of a known topology. The
// node-to-conductor answers come from the ring the tests of package ring
// prove against tooz; here they are what Build computed, checked by name.
func TestExporterGolden(t *testing.T) {
	cache := newTestCache(t, &fakeSource{snap: goldenSnapshot()}, time.Minute)
	topo := cache.Get(context.Background()).Topology
	n1, _ := topo.Node("node-1")
	n2, _ := topo.Node("22222222-2222-4222-8222-222222222222")
	count := map[string]int{n1.Conductor: 1}
	count[n2.Conductor]++
	if n1.Conductor == "" || n2.Conductor == "" {
		t.Fatalf("nodes unmapped: %q %q", n1.Conductor, n2.Conductor)
	}
	var b strings.Builder
	b.WriteString(`# HELP ironic_conductor_nodes Nodes the hash rings map to this conductor now.
# TYPE ironic_conductor_nodes gauge
ironic_conductor_nodes{conductor_group="",hostname="c-alive"} ` + strconv.Itoa(count["c-alive"]) + `
ironic_conductor_nodes{conductor_group="",hostname="c-draining"} 0
ironic_conductor_nodes{conductor_group="",hostname="c-two"} ` + strconv.Itoa(count["c-two"]) + `
ironic_conductor_nodes{conductor_group="rack2",hostname="c-dead"} 0
ironic_conductor_nodes{conductor_group="rack2",hostname="c-stopped"} 0
# HELP ironic_node_conductor_info 1 per node; conductor is the hostname the hash ring maps it to, empty when no conductor can serve it.
# TYPE ironic_node_conductor_info gauge
ironic_node_conductor_info{conductor="` + n1.Conductor + `",conductor_group="",driver="ipmi",node_name="node-1",node_uuid="11111111-1111-4111-8111-111111111111"} 1
ironic_node_conductor_info{conductor="` + n2.Conductor + `",conductor_group="",driver="ipmi",node_name="",node_uuid="22222222-2222-4222-8222-222222222222"} 1
ironic_node_conductor_info{conductor="",conductor_group="rack2",driver="redfish",node_name="",node_uuid="33333333-3333-4333-8333-333333333333"} 1
`)
	b.WriteString(goldenStatic)
	exp := NewExporter(context.Background(), cache, ExporterOptions{NodeInfo: true})
	if err := testutil.CollectAndCompare(exp, strings.NewReader(b.String()),
		"ironic_up", "ironic_conductor_alive", "ironic_conductor_online", "ironic_conductor_state",
		"ironic_conductor_hash_ring_member", "ironic_conductor_heartbeat_timestamp_seconds",
		"ironic_conductor_hardware_type_info", "ironic_conductor_nodes", "ironic_conductor_reserved_nodes",
		"ironic_node_conductor_info", "ironic_hash_ring_conductors", "ironic_hash_ring_nodes",
		"ironic_nodes_without_conductor", "ironic_nodes", "ironic_exporter_data_age_seconds",
		"ironic_exporter_last_refresh_success_timestamp_seconds"); err != nil {
		t.Error(err)
	}
	problems, err := testutil.CollectAndLint(exp)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Errorf("promlint: %s: %s", p.Metric, p.Text)
	}
}

// goldenStatic is the part of the golden exposition that does not depend on
// the ring's answers. testNow is 1796040000 (2026-11-30T12:00:00Z).
const goldenStatic = `# HELP ironic_up 1 when the latest refresh from Ironic's database worked, 0 otherwise.
# TYPE ironic_up gauge
ironic_up 1
# HELP ironic_conductor_alive Ironic's API 'alive' for the conductor: its heartbeat is not older than heartbeat_timeout (1) or is (0).
# TYPE ironic_conductor_alive gauge
ironic_conductor_alive{conductor_group="",hostname="c-alive"} 1
ironic_conductor_alive{conductor_group="",hostname="c-draining"} 1
ironic_conductor_alive{conductor_group="",hostname="c-two"} 1
ironic_conductor_alive{conductor_group="rack2",hostname="c-dead"} 0
ironic_conductor_alive{conductor_group="rack2",hostname="c-stopped"} 0
# HELP ironic_conductor_online The conductor's online column: 1 while registered, 0 after a clean stop.
# TYPE ironic_conductor_online gauge
ironic_conductor_online{conductor_group="",hostname="c-alive"} 1
ironic_conductor_online{conductor_group="",hostname="c-draining"} 0
ironic_conductor_online{conductor_group="",hostname="c-two"} 1
ironic_conductor_online{conductor_group="rack2",hostname="c-dead"} 1
ironic_conductor_online{conductor_group="rack2",hostname="c-stopped"} 0
# HELP ironic_conductor_hash_ring_member 1 when the conductor is a member of its hash rings (online with a heartbeat Ironic accepts), 0 otherwise.
# TYPE ironic_conductor_hash_ring_member gauge
ironic_conductor_hash_ring_member{conductor_group="",hostname="c-alive"} 1
ironic_conductor_hash_ring_member{conductor_group="",hostname="c-draining"} 0
ironic_conductor_hash_ring_member{conductor_group="",hostname="c-two"} 1
ironic_conductor_hash_ring_member{conductor_group="rack2",hostname="c-dead"} 0
ironic_conductor_hash_ring_member{conductor_group="rack2",hostname="c-stopped"} 0
# HELP ironic_conductor_state 1 for the conductor's current state (alive, draining, stopped, dead), 0 for the others.
# TYPE ironic_conductor_state gauge
ironic_conductor_state{conductor_group="",hostname="c-alive",state="alive"} 1
ironic_conductor_state{conductor_group="",hostname="c-alive",state="dead"} 0
ironic_conductor_state{conductor_group="",hostname="c-alive",state="draining"} 0
ironic_conductor_state{conductor_group="",hostname="c-alive",state="stopped"} 0
ironic_conductor_state{conductor_group="",hostname="c-draining",state="alive"} 0
ironic_conductor_state{conductor_group="",hostname="c-draining",state="dead"} 0
ironic_conductor_state{conductor_group="",hostname="c-draining",state="draining"} 1
ironic_conductor_state{conductor_group="",hostname="c-draining",state="stopped"} 0
ironic_conductor_state{conductor_group="",hostname="c-two",state="alive"} 1
ironic_conductor_state{conductor_group="",hostname="c-two",state="dead"} 0
ironic_conductor_state{conductor_group="",hostname="c-two",state="draining"} 0
ironic_conductor_state{conductor_group="",hostname="c-two",state="stopped"} 0
ironic_conductor_state{conductor_group="rack2",hostname="c-dead",state="alive"} 0
ironic_conductor_state{conductor_group="rack2",hostname="c-dead",state="dead"} 1
ironic_conductor_state{conductor_group="rack2",hostname="c-dead",state="draining"} 0
ironic_conductor_state{conductor_group="rack2",hostname="c-dead",state="stopped"} 0
ironic_conductor_state{conductor_group="rack2",hostname="c-stopped",state="alive"} 0
ironic_conductor_state{conductor_group="rack2",hostname="c-stopped",state="dead"} 0
ironic_conductor_state{conductor_group="rack2",hostname="c-stopped",state="draining"} 0
ironic_conductor_state{conductor_group="rack2",hostname="c-stopped",state="stopped"} 1
# HELP ironic_conductor_heartbeat_timestamp_seconds The conductor's last heartbeat (updated_at) as a Unix timestamp.
# TYPE ironic_conductor_heartbeat_timestamp_seconds gauge
ironic_conductor_heartbeat_timestamp_seconds{conductor_group="",hostname="c-alive"} 1.79603999e+09
ironic_conductor_heartbeat_timestamp_seconds{conductor_group="",hostname="c-draining"} 1.79603999e+09
ironic_conductor_heartbeat_timestamp_seconds{conductor_group="",hostname="c-two"} 1.79603998e+09
ironic_conductor_heartbeat_timestamp_seconds{conductor_group="rack2",hostname="c-dead"} 1.7960364e+09
ironic_conductor_heartbeat_timestamp_seconds{conductor_group="rack2",hostname="c-stopped"} 1.7960364e+09
# HELP ironic_conductor_hardware_type_info 1 for each hardware type the conductor registered.
# TYPE ironic_conductor_hardware_type_info gauge
ironic_conductor_hardware_type_info{conductor_group="",hardware_type="ipmi",hostname="c-alive"} 1
ironic_conductor_hardware_type_info{conductor_group="",hardware_type="redfish",hostname="c-alive"} 1
ironic_conductor_hardware_type_info{conductor_group="",hardware_type="ipmi",hostname="c-draining"} 1
ironic_conductor_hardware_type_info{conductor_group="",hardware_type="ipmi",hostname="c-two"} 1
ironic_conductor_hardware_type_info{conductor_group="rack2",hardware_type="redfish",hostname="c-dead"} 1
ironic_conductor_hardware_type_info{conductor_group="rack2",hardware_type="redfish",hostname="c-stopped"} 1
# HELP ironic_conductor_reserved_nodes Nodes whose reservation (lock) names this host, whether or not a conductor of that name exists.
# TYPE ironic_conductor_reserved_nodes gauge
ironic_conductor_reserved_nodes{hostname="c-alive"} 1
ironic_conductor_reserved_nodes{hostname="gone:6385"} 1
# HELP ironic_hash_ring_conductors Active conductors in the hash ring of a conductor group and hardware type.
# TYPE ironic_hash_ring_conductors gauge
ironic_hash_ring_conductors{conductor_group="",hardware_type="ipmi"} 2
ironic_hash_ring_conductors{conductor_group="",hardware_type="redfish"} 1
# HELP ironic_hash_ring_nodes Nodes served by the hash ring of a conductor group and hardware type.
# TYPE ironic_hash_ring_nodes gauge
ironic_hash_ring_nodes{conductor_group="",hardware_type="ipmi"} 2
ironic_hash_ring_nodes{conductor_group="",hardware_type="redfish"} 0
# HELP ironic_nodes_without_conductor Nodes that no hash ring can serve, by conductor group and driver.
# TYPE ironic_nodes_without_conductor gauge
ironic_nodes_without_conductor{conductor_group="rack2",driver="redfish"} 1
# HELP ironic_nodes Nodes in Ironic's database.
# TYPE ironic_nodes gauge
ironic_nodes 3
# HELP ironic_exporter_data_age_seconds Age of the served topology; grows while the database cannot be read.
# TYPE ironic_exporter_data_age_seconds gauge
ironic_exporter_data_age_seconds 0
# HELP ironic_exporter_last_refresh_success_timestamp_seconds When the served topology was read from the database, as a Unix timestamp.
# TYPE ironic_exporter_last_refresh_success_timestamp_seconds gauge
ironic_exporter_last_refresh_success_timestamp_seconds 1.79604e+09
`

// TestExporterWithoutNodeInfo checks --no-collector.node-info drops exactly
// the per-node series.
func TestExporterWithoutNodeInfo(t *testing.T) {
	cache := newTestCache(t, &fakeSource{snap: goldenSnapshot()}, time.Minute)
	with := testutil.CollectAndCount(NewExporter(context.Background(), cache, ExporterOptions{NodeInfo: true}))
	without := testutil.CollectAndCount(NewExporter(context.Background(), cache, ExporterOptions{}))
	if with-without != 3 {
		t.Errorf("node info added %d series, want 3 (one per node)", with-without)
	}
	if n := testutil.CollectAndCount(NewExporter(context.Background(), cache, ExporterOptions{}), "ironic_node_conductor_info"); n != 0 {
		t.Errorf("%d node info series without the option", n)
	}
}

// TestCacheDownAtStart: no topology yet gives ironic_up 0 and nothing else
// from the topology; recovery is automatic on the next refresh.
func TestCacheDownAtStartThenRecovers(t *testing.T) {
	src := &fakeSource{err: errors.New("dial tcp 127.0.0.1:5432: connect: connection refused")}
	cache := newTestCache(t, src, 0)
	exp := NewExporter(context.Background(), cache, ExporterOptions{NodeInfo: true})
	if err := testutil.CollectAndCompare(exp, strings.NewReader(`# HELP ironic_up 1 when the latest refresh from Ironic's database worked, 0 otherwise.
# TYPE ironic_up gauge
ironic_up 0
`)); err != nil {
		t.Error(err)
	}
	src.set(goldenSnapshot(), nil)
	if v := cache.Get(context.Background()); !v.Up() || len(v.Topology.Conductors) != 5 {
		t.Errorf("no recovery: up=%v err=%v", v.Up(), v.Err)
	}
}

// TestCacheServesLastGoodTopology: a failed refresh keeps the last good
// topology, marked down, with the error.
func TestCacheServesLastGoodTopology(t *testing.T) {
	src := &fakeSource{snap: goldenSnapshot()}
	now := testNow
	cache, _ := NewCache(CacheConfig{Source: src, Settings: testSettings, Now: func() time.Time { return now }})
	good := cache.Get(context.Background())
	src.set(nil, errors.New("database lost"))
	now = now.Add(time.Minute)
	v := cache.Get(context.Background())
	if v.Up() || v.Topology != good.Topology || v.Err == nil || !strings.Contains(v.Err.Error(), "database lost") {
		t.Fatalf("after failure: up=%v same=%v err=%v", v.Up(), v.Topology == good.Topology, v.Err)
	}
	if err := testutil.CollectAndCompare(NewExporter(context.Background(), cache, ExporterOptions{}),
		strings.NewReader(`# HELP ironic_up 1 when the latest refresh from Ironic's database worked, 0 otherwise.
# TYPE ironic_up gauge
ironic_up 0
# HELP ironic_exporter_data_age_seconds Age of the served topology; grows while the database cannot be read.
# TYPE ironic_exporter_data_age_seconds gauge
ironic_exporter_data_age_seconds 60
`), "ironic_up", "ironic_exporter_data_age_seconds"); err != nil {
		t.Error(err)
	}
}

// TestCacheSharesOneRefresh: concurrent callers wait for one read, and a
// caller whose context ends gets the current view instead of blocking.
func TestCacheSharesOneRefresh(t *testing.T) {
	src := &fakeSource{snap: goldenSnapshot(), block: make(chan struct{})}
	cache := newTestCache(t, src, time.Hour)
	var wg sync.WaitGroup
	results := make([]View, 8)
	for i := range results {
		wg.Add(1)
		go func() { defer wg.Done(); results[i] = cache.Get(context.Background()) }()
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	if v := cache.Get(ctx); v.Topology != nil || v.Err != ErrNoData {
		t.Errorf("impatient caller got %+v, want the empty view", v)
	}
	close(src.block)
	wg.Wait()
	if n := src.reads.Load(); n != 1 {
		t.Errorf("%d database reads for concurrent callers, want 1", n)
	}
	for i, v := range results {
		if !v.Up() {
			t.Errorf("caller %d: not up: %v", i, v.Err)
		}
	}
	cache.Get(context.Background())
	if n := src.reads.Load(); n != 1 {
		t.Errorf("read again within min interval (%d reads)", n)
	}
}

// TestHandlerScrapeTimeout: the scrape deadline header bounds the wait for
// a hung database, and the scrape still answers.
func TestHandlerScrapeTimeout(t *testing.T) {
	src := &fakeSource{snap: goldenSnapshot(), block: make(chan struct{})}
	defer close(src.block)
	cache := newTestCache(t, src, 0)
	reg := prometheus.NewRegistry()
	h := NewHandler(cache, HandlerOptions{Gatherer: reg})
	req := httptest.NewRequest(http.MethodGet, "/metrics", nil)
	req.Header.Set("X-Prometheus-Scrape-Timeout-Seconds", "0.6")
	rec := httptest.NewRecorder()
	start := time.Now()
	h.ServeHTTP(rec, req)
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("scrape took %v despite a 0.6s scrape timeout", d)
	}
	if rec.Code != http.StatusOK || !strings.Contains(rec.Body.String(), "ironic_up 0") {
		t.Errorf("status %d body %q", rec.Code, rec.Body.String())
	}
}

// TestChangesCounterStartsAtZero: every group with nodes has its churn
// counter from the first refresh, so that increase() sees the first remap.
func TestChangesCounterStartsAtZero(t *testing.T) {
	cache := newTestCache(t, &fakeSource{snap: goldenSnapshot()}, time.Minute)
	if err := testutil.CollectAndCompare(NewExporter(context.Background(), cache, ExporterOptions{}), strings.NewReader(`
# HELP ironic_node_conductor_changes_total Nodes whose conductor changed between two refreshes since the exporter started (ring churn).
# TYPE ironic_node_conductor_changes_total counter
ironic_node_conductor_changes_total{conductor_group=""} 0
ironic_node_conductor_changes_total{conductor_group="rack2"} 0
`), "ironic_node_conductor_changes_total"); err != nil {
		t.Error(err)
	}
}

// TestNoHeartbeatsOnSQLite: the heartbeat timestamp is not exported where
// Ironic does not heartbeat, so no alert or panel reads a stale value.
func TestNoHeartbeatsOnSQLite(t *testing.T) {
	snap := goldenSnapshot()
	snap.Backend = db.BackendSQLite
	cache := newTestCache(t, &fakeSource{snap: snap}, time.Minute)
	exp := NewExporter(context.Background(), cache, ExporterOptions{})
	if n := testutil.CollectAndCount(exp, "ironic_conductor_heartbeat_timestamp_seconds"); n != 0 {
		t.Errorf("%d heartbeat series on SQLite", n)
	}
	if n := testutil.CollectAndCount(exp, "ironic_conductor_state"); n != 20 {
		t.Errorf("%d state series, want 20", n)
	}
}
