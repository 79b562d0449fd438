package collector

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/prometheus/client_golang/prometheus/testutil/promlint"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/ironic-conductor-exporter/ironic-conductor-exporter/internal/fixture"
	"github.com/ironic-conductor-exporter/ironic-conductor-exporter/rules"
	"github.com/ironic-conductor-exporter/ironic-conductor-exporter/topology"
)

var (
	testNow      = fixture.Now
	testSettings = topology.Settings{Settings: rules.Settings{HeartbeatTimeout: 60 * time.Second, PartitionExponent: 5,
		Algorithm: fixture.Algorithm("md5")}, Release: rules.MustRelease("21.4")}
)

func newTestCache(t *testing.T, src topology.Source, minInterval time.Duration) *topology.Cache {
	t.Helper()
	c, err := topology.NewCache(topology.CacheConfig{Source: src, Settings: testSettings, MinInterval: minInterval,
		Now: func() time.Time { return testNow }})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// metricsHandler is the /metrics handler production serves, over cache.
func metricsHandler(cache *topology.Cache, opts ExporterOptions) http.Handler {
	return NewHandler(cache, HandlerOptions{ExporterOptions: opts})
}

// compareScrape scrapes h through a real HTTP server and compares the
// named families with the expected exposition.
func compareScrape(t *testing.T, h http.Handler, expected string, names ...string) error {
	t.Helper()
	srv := httptest.NewServer(h)
	defer srv.Close()
	return testutil.ScrapeAndCompare(srv.URL, strings.NewReader(expected), names...)
}

// scrapeText returns h's exposition text.
func scrapeText(t *testing.T, h http.Handler) string {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	if rec.Code != http.StatusOK {
		t.Fatalf("scrape: status %d: %s", rec.Code, rec.Body)
	}
	return rec.Body.String()
}

// countScrape counts the series of h's exposition, of the named families
// only when names are given.
func countScrape(t *testing.T, h http.Handler, names ...string) int {
	t.Helper()
	p := expfmt.NewTextParser(model.UTF8Validation)
	mfs, err := p.TextToMetricFamilies(strings.NewReader(scrapeText(t, h)))
	if err != nil {
		t.Fatalf("parsing the exposition: %v", err)
	}
	n := 0
	for name, mf := range mfs {
		if len(names) == 0 || containsString(names, name) {
			n += len(mf.GetMetric())
		}
	}
	return n
}

func containsString(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// lintScrape runs promlint over h's exposition.
func lintScrape(t *testing.T, h http.Handler) []promlint.Problem {
	t.Helper()
	problems, err := promlint.New(io.NopCloser(strings.NewReader(scrapeText(t, h)))).Lint()
	if err != nil {
		t.Fatal(err)
	}
	return problems
}

// TestExporterGolden compares the full exposition of a known topology. The
// node-to-conductor answers come from the ring the tests of package ring
// prove against tooz; here they are what Build computed, checked by name.
func TestExporterGolden(t *testing.T) {
	cache := newTestCache(t, fixture.NewSource(fixture.Golden()), time.Minute)
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
	h := metricsHandler(cache, ExporterOptions{NodeInfo: true})
	if err := compareScrape(t, h, b.String(),
		"ironic_up", "ironic_conductor_alive", "ironic_conductor_online", "ironic_conductor_state",
		"ironic_conductor_hash_ring_member", "ironic_conductor_heartbeat_timestamp_seconds",
		"ironic_conductor_hardware_type_info", "ironic_conductor_nodes", "ironic_conductor_reserved_nodes",
		"ironic_node_conductor_info", "ironic_hash_ring_conductors", "ironic_hash_ring_nodes",
		"ironic_nodes_without_conductor", "ironic_nodes", "ironic_exporter_data_age_seconds",
		"ironic_exporter_last_refresh_success_timestamp_seconds"); err != nil {
		t.Error(err)
	}
	for _, p := range lintScrape(t, h) {
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
# HELP ironic_conductor_reserved_nodes Nodes whose reservation (lock) Ironic attributes to this conductor (a HOST:PORT conductor locks as HOST), or that name this host when no conductor has it.
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
	cache := newTestCache(t, fixture.NewSource(fixture.Golden()), time.Minute)
	with := countScrape(t, metricsHandler(cache, ExporterOptions{NodeInfo: true}))
	without := countScrape(t, metricsHandler(cache, ExporterOptions{}))
	if with-without != 3 {
		t.Errorf("node info added %d series, want 3 (one per node)", with-without)
	}
	if n := countScrape(t, metricsHandler(cache, ExporterOptions{}), "ironic_node_conductor_info"); n != 0 {
		t.Errorf("%d node info series without the option", n)
	}
}

// TestCacheDownAtStart: no topology yet gives ironic_up 0 and nothing else
// from the topology; recovery is automatic on the next refresh.
func TestCacheDownAtStartThenRecovers(t *testing.T) {
	src := fixture.NewSource(nil)
	src.Set(nil, errors.New("dial tcp 127.0.0.1:5432: connect: connection refused"))
	cache := newTestCache(t, src, 0)
	if err := compareScrape(t, metricsHandler(cache, ExporterOptions{NodeInfo: true}), `# HELP ironic_up 1 when the latest refresh from Ironic's database worked, 0 otherwise.
# TYPE ironic_up gauge
ironic_up 0
`); err != nil {
		t.Error(err)
	}
	src.Set(fixture.Golden(), nil)
	if v := cache.Get(context.Background()); !v.Up() || len(v.Topology.Conductors) != 5 {
		t.Errorf("no recovery: up=%v err=%v", v.Up(), v.Err)
	}
}

// TestCacheServesLastGoodTopology: a failed refresh keeps the last good
// topology, marked down, with the error.
func TestCacheServesLastGoodTopology(t *testing.T) {
	src := fixture.NewSource(fixture.Golden())
	now := testNow
	cache, _ := topology.NewCache(topology.CacheConfig{Source: src, Settings: testSettings, Now: func() time.Time { return now }})
	good := cache.Get(context.Background())
	src.Set(nil, errors.New("database lost"))
	now = now.Add(time.Minute)
	v := cache.Get(context.Background())
	if v.Up() || v.Topology != good.Topology || v.Err == nil || !strings.Contains(v.Err.Error(), "database lost") {
		t.Fatalf("after failure: up=%v same=%v err=%v", v.Up(), v.Topology == good.Topology, v.Err)
	}
	if err := compareScrape(t, metricsHandler(cache, ExporterOptions{}),
		`# HELP ironic_up 1 when the latest refresh from Ironic's database worked, 0 otherwise.
# TYPE ironic_up gauge
ironic_up 0
# HELP ironic_exporter_data_age_seconds Age of the served topology; grows while the database cannot be read.
# TYPE ironic_exporter_data_age_seconds gauge
ironic_exporter_data_age_seconds 60
`, "ironic_up", "ironic_exporter_data_age_seconds"); err != nil {
		t.Error(err)
	}
}

// TestHandlerScrapeTimeout: the scrape deadline header bounds the wait for
// a hung database, and the scrape still answers.
func TestHandlerScrapeTimeout(t *testing.T) {
	src := fixture.NewSource(fixture.Golden())
	defer src.Block()()
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
	cache := newTestCache(t, fixture.NewSource(fixture.Golden()), time.Minute)
	if err := compareScrape(t, metricsHandler(cache, ExporterOptions{}), `
# HELP ironic_node_conductor_changes_total Nodes whose conductor changed between two refreshes since the exporter started (ring churn).
# TYPE ironic_node_conductor_changes_total counter
ironic_node_conductor_changes_total{conductor_group=""} 0
ironic_node_conductor_changes_total{conductor_group="rack2"} 0
`, "ironic_node_conductor_changes_total"); err != nil {
		t.Error(err)
	}
}

// TestNoHeartbeatsOnSQLite: the heartbeat timestamp is not exported where
// Ironic does not heartbeat (SQLite from 22.1: the schema of 22.1 tells the
// release), so no alert or panel reads a stale value.
func TestNoHeartbeatsOnSQLite(t *testing.T) {
	snap := fixture.Golden()
	snap.Backend = rules.SQLite
	snap.SchemaRevision = "d163df1bab88" // 22.1's head
	detect := testSettings
	detect.Release = rules.Release{}
	cache, err := topology.NewCache(topology.CacheConfig{Source: fixture.NewSource(snap), Settings: detect,
		MinInterval: time.Minute, Now: func() time.Time { return testNow }})
	if err != nil {
		t.Fatal(err)
	}
	h := metricsHandler(cache, ExporterOptions{})
	if n := countScrape(t, h, "ironic_conductor_heartbeat_timestamp_seconds"); n != 0 {
		t.Errorf("%d heartbeat series on SQLite", n)
	}
	// Only the two states the rules know there: alive and stopped.
	if n := countScrape(t, h, "ironic_conductor_state"); n != 10 {
		t.Errorf("%d state series, want 10", n)
	}
}

// TestNodeInfoOfAnOlderTopology: a scrape served the previous topology (its
// deadline ran out while a refresh built the next one) still gets every node
// series, whether or not that topology's family was gathered before the
// next one was built from it; a changed node list gets its own family.
func TestNodeInfoOfAnOlderTopology(t *testing.T) {
	snap := fixture.Golden()
	older, err := topology.Build(snap, testSettings, testNow, nil)
	if err != nil {
		t.Fatal(err)
	}
	newer, err := topology.Build(snap, testSettings, testNow, older)
	if err != nil {
		t.Fatal(err)
	}
	if older.NodeGeneration != newer.NodeGeneration {
		t.Fatalf("unchanged nodes got a new generation: %d, %d", older.NodeGeneration, newer.NodeGeneration)
	}
	shrunk := fixture.Golden()
	shrunk.Nodes = shrunk.Nodes[:2]
	fewer, err := topology.Build(shrunk, testSettings, testNow, newer)
	if err != nil {
		t.Fatal(err)
	}
	h := &handler{cache: newTestCache(t, fixture.NewSource(snap), time.Minute),
		opts: HandlerOptions{ExporterOptions: ExporterOptions{NodeInfo: true}, Logger: slog.New(slog.DiscardHandler)}}
	for _, step := range []struct {
		name string
		topo *topology.Topology
		want int
	}{{"the older topology, never scraped", older, 3}, {"the newer one", newer, 3},
		{"a changed node list", fewer, 2}, {"the older one again", older, 3}} {
		served := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			h.serveView(r.Context(), w, r, topology.View{Topology: step.topo, LastSuccess: testNow})
		})
		if n := countScrape(t, served, "ironic_node_conductor_info"); n != step.want {
			t.Errorf("%s: %d ironic_node_conductor_info series, want %d", step.name, n, step.want)
		}
	}
}
