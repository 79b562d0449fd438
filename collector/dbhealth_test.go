package collector

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/prometheus/common/promslog"

	"github.com/ironic-conductor-exporter/ironic-conductor-exporter/db"
	"github.com/ironic-conductor-exporter/ironic-conductor-exporter/internal/fixture"
	"github.com/ironic-conductor-exporter/ironic-conductor-exporter/rules"
	"github.com/ironic-conductor-exporter/ironic-conductor-exporter/topology"
)

// TestEmptyHostnameMetrics: a conductor named "" has no per-conductor
// series, its nodes are conductor="" and counted without conductor, and
// the row is counted in ironic_exporter_snapshot_warnings.
func TestEmptyHostnameMetrics(t *testing.T) {
	snap := &db.Snapshot{Backend: rules.PostgreSQL,
		Conductors: []db.Conductor{fixture.Conductor(1, "", "", true, fixture.Ago(time.Second), "ipmi"),
			fixture.Conductor(2, "c2", "", true, fixture.Ago(time.Second), "ipmi")}}
	for i := range 32 {
		snap.Nodes = append(snap.Nodes, fixture.Node(int64(i+1), fmt.Sprintf("%08x-1111-4111-8111-111111111111", i), "", "ipmi"))
	}
	health := NewDatabaseHealth(promslog.NewNopLogger())
	cache, err := topology.NewCache(topology.CacheConfig{Source: fixture.NewSource(snap), Settings: testSettings,
		MinInterval: time.Minute, Now: func() time.Time { return testNow }, OnRefresh: health.Observe})
	if err != nil {
		t.Fatal(err)
	}
	topo := cache.Get(context.Background()).Topology
	if topo == nil {
		t.Fatal("no topology")
	}
	served := len(topo.Conductors[0].Nodes)
	text := scrapeText(t, metricsHandler(cache, ExporterOptions{NodeInfo: true}))
	if strings.Contains(text, `hostname=""`) {
		t.Errorf(`a series with hostname="":\n%s`, text)
	}
	without := strings.Count(text, `conductor="",`) + strings.Count(text, `conductor=""}`)
	if without != len(snap.Nodes)-served || without == 0 {
		t.Errorf(`%d nodes with conductor="", want %d`, without, len(snap.Nodes)-served)
	}
	want := fmt.Sprintf("ironic_nodes_without_conductor{conductor_group=\"\",driver=\"ipmi\"} %d", without)
	if !strings.Contains(text, want) {
		t.Errorf("no %q in\n%s", want, text)
	}
	wantSnapshotWarnings(t, health, `ironic_exporter_snapshot_warnings{reason="empty_hostname",table="conductors"} 1`)
}

// probing is a Source that records the probe it is asked about and
// answers "nodes unchanged" once it was given one.
type probing struct {
	*fixture.Source
	asked []*db.NodeProbe
}

func (p *probing) SnapshotChanges(ctx context.Context, k *db.Known) (*db.Snapshot, error) {
	var known *db.NodeProbe
	if k != nil {
		known = &k.Probe
	}
	p.asked = append(p.asked, known)
	snap, err := p.Snapshot(ctx)
	if err != nil || known == nil {
		return snap, err
	}
	unchanged := *snap
	unchanged.Nodes, unchanged.NodeRead = nil, db.NodeReadSkipped
	return &unchanged, nil
}

// TestHealthKeepsTheProbe: the database's row warnings reach DatabaseHealth
// through the cache's refresh reports, so the cache reads the database
// itself and keeps its change probe (a wrapper around the Source must not
// hide it, or every refresh reads every node); the warnings of a snapshot
// that skipped the unchanged nodes are still exported.
func TestHealthKeepsTheProbe(t *testing.T) {
	snap := fixture.Golden()
	snap.Warnings = []string{"nodes row 7 (id 7): conductor_group NULL, kept as \"\""}
	snap.WarningCounts = []db.WarningCount{{Table: "nodes", Reason: "null", Rows: 1}}
	inner := &probing{Source: fixture.NewSource(snap)}
	health := NewDatabaseHealth(promslog.NewNopLogger())
	now := testNow
	cache, err := topology.NewCache(topology.CacheConfig{Source: inner, Settings: testSettings,
		MinInterval: time.Nanosecond, FullInterval: time.Hour,
		Now: func() time.Time { return now }, OnRefresh: health.Observe})
	if err != nil {
		t.Fatal(err)
	}
	for range 2 {
		now = now.Add(time.Second)
		if v := cache.Get(context.Background()); v.Err != nil {
			t.Fatal(v.Err)
		}
	}
	if len(inner.asked) != 2 || inner.asked[1] == nil {
		t.Fatalf("the source was asked %v, want the known probe at the second refresh", inner.asked)
	}
	wantSnapshotWarnings(t, health, `ironic_exporter_snapshot_warnings{reason="null",table="nodes"} 1`)
}

// wantSnapshotWarnings checks that health exports exactly the series of
// ironic_exporter_snapshot_warnings given.
func wantSnapshotWarnings(t *testing.T, health *DatabaseHealth, series string) {
	t.Helper()
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(health)
	if err := testutil.GatherAndCompare(reg, strings.NewReader(`
# HELP ironic_exporter_snapshot_warnings Rows of the latest snapshot that were kept or skipped with a warning, by table and reason (bad_json, bad_timestamp, bad_value, not_utf8, null, out_of_range, empty_hostname).
# TYPE ironic_exporter_snapshot_warnings gauge
`+series+"\n"), "ironic_exporter_snapshot_warnings"); err != nil {
		t.Error(err)
	}
}
