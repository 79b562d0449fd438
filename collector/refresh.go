package collector

import (
	"fmt"
	"log/slog"
	"slices"
	"sync"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/ironic-conductor-exporter/ironic-conductor-exporter/db"
	"github.com/ironic-conductor-exporter/ironic-conductor-exporter/dbconn"
	"github.com/ironic-conductor-exporter/ironic-conductor-exporter/novacache"
	"github.com/ironic-conductor-exporter/ironic-conductor-exporter/topology"
)

// RefreshMetrics are the cache's own metrics: how long refreshes take, how
// many failed, and how their snapshots read the nodes. Pass its Observe as
// topology.CacheConfig.OnRefresh.
type RefreshMetrics struct {
	duration prometheus.Histogram
	errors   prometheus.Counter
	reads    *prometheus.CounterVec
}

// nodeReadKinds are the values of ironic_exporter_node_reads_total's kind,
// each exported from the start.
var nodeReadKinds = []db.NodeRead{db.NodeReadFull, db.NodeReadDelta, db.NodeReadSkipped}

// refreshBuckets are the buckets of both refresh histograms (Ironic's and
// Nova's): from a probe that spares the reads to a full read of a large
// fleet near the refresh timeout.
var refreshBuckets = []float64{.005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30}

// NewRefreshMetrics registers the refresh metrics with reg.
func NewRefreshMetrics(reg prometheus.Registerer) (*RefreshMetrics, error) {
	m := &RefreshMetrics{
		duration: prometheus.NewHistogram(prometheus.HistogramOpts{
			Namespace: namespace, Subsystem: "exporter", Name: "refresh_duration_seconds",
			Help:    "Time taken to read the database and rebuild the topology.",
			Buckets: refreshBuckets,
		}),
		errors: prometheus.NewCounter(prometheus.CounterOpts{
			Namespace: namespace, Subsystem: "exporter", Name: "refresh_errors_total",
			Help: "Refreshes from the database that failed.",
		}),
		reads: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: namespace, Subsystem: "exporter", Name: "node_reads_total",
			Help: "Snapshots read from the database, by how they read the nodes: full (every node), " +
				"delta (only the rows changed since the last read, merged into it), skipped (the change probe said unchanged).",
		}, []string{"kind"}),
	}
	for _, k := range nodeReadKinds {
		m.reads.WithLabelValues(string(k))
	}
	for _, c := range []prometheus.Collector{m.duration, m.errors, m.reads} {
		if err := reg.Register(c); err != nil {
			return nil, fmt.Errorf("registering refresh metrics: %w", err)
		}
	}
	return m, nil
}

// Observe records one refresh.
func (m *RefreshMetrics) Observe(r topology.Refresh) {
	m.duration.Observe(r.Duration.Seconds())
	if r.Err != nil {
		m.errors.Inc()
	}
	if r.Snapshot() {
		m.reads.WithLabelValues(string(r.NodeRead)).Inc()
	}
}

var (
	lastRefreshErrorDesc = prometheus.NewDesc(namespace+"_exporter_last_refresh_error",
		"1 for the kind of error the latest refresh from the database failed with (timeout, connection, auth, schema, query, other); all 0 when it worked.",
		[]string{"kind"}, nil)
	snapshotWarningsDesc = prometheus.NewDesc(namespace+"_exporter_snapshot_warnings",
		"Rows of the latest snapshot that were kept or skipped with a warning, by table and reason (bad_json, bad_timestamp, bad_value, not_utf8, null, out_of_range, empty_hostname).",
		[]string{"table", "reason"}, nil)
)

// errorKinds are the values of the kind label, all always exported.
var errorKinds = []string{dbconn.KindTimeout, dbconn.KindConnection, dbconn.KindAuth, dbconn.KindSchema, dbconn.KindQuery, dbconn.KindOther}

// DatabaseHealth exports what the refreshes say about the database: the
// kind of the latest error and the row warnings of the latest snapshot read
// (topology.Refresh), which it also logs once each time they change.
type DatabaseHealth struct {
	logger *slog.Logger

	mu       sync.Mutex
	kind     string
	warnings []db.WarningCount
	lines    []string
	// topoWarnings and topoLines are the latest topology's own warnings
	// (topology.Topology.Warnings).
	topoWarnings []db.WarningCount
	topoLines    []string
}

var _ prometheus.Collector = (*DatabaseHealth)(nil)

// NewDatabaseHealth returns a DatabaseHealth logging to logger.
func NewDatabaseHealth(logger *slog.Logger) *DatabaseHealth {
	return &DatabaseHealth{logger: logger}
}

// Observe records one refresh; chain it into topology.CacheConfig.OnRefresh.
func (h *DatabaseHealth) Observe(r topology.Refresh) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.kind = dbconn.ErrorKind(r.Err)
	if r.Snapshot() {
		h.snapshot(r)
	}
	if r.Topology == nil || slices.Equal(h.topoLines, r.Topology.Warnings) {
		return
	}
	h.topoWarnings, h.topoLines = r.Topology.WarningCounts, slices.Clone(r.Topology.Warnings)
	for _, w := range r.Topology.Warnings {
		h.logger.Warn("snapshot row warning", "warning", w)
	}
}

// snapshot records the row warnings of the refresh's snapshot, logging
// them when they changed; h.mu is held.
func (h *DatabaseHealth) snapshot(r topology.Refresh) {
	if slices.Equal(h.lines, r.SnapshotWarnings) {
		h.warnings = r.SnapshotWarningCounts
		return
	}
	h.warnings, h.lines = r.SnapshotWarningCounts, slices.Clone(r.SnapshotWarnings)
	if len(r.SnapshotWarnings) == 0 {
		h.logger.Info("snapshot has no row warnings any more")
		return
	}
	for _, w := range r.SnapshotWarnings {
		h.logger.Warn("snapshot row warning", "warning", w)
	}
}

// Describe implements prometheus.Collector.
func (h *DatabaseHealth) Describe(ch chan<- *prometheus.Desc) {
	ch <- lastRefreshErrorDesc
	ch <- snapshotWarningsDesc
}

// Collect implements prometheus.Collector.
func (h *DatabaseHealth) Collect(ch chan<- prometheus.Metric) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, k := range errorKinds {
		v := 0.0
		if k == h.kind {
			v = 1
		}
		ch <- prometheus.MustNewConstMetric(lastRefreshErrorDesc, prometheus.GaugeValue, v, k)
	}
	// The topology's reasons are its own (empty_hostname): never the same
	// table and reason as the snapshot's.
	for _, w := range append(slices.Clip(h.warnings), h.topoWarnings...) {
		ch <- prometheus.MustNewConstMetric(snapshotWarningsDesc, prometheus.GaugeValue, float64(w.Rows), w.Table, w.Reason)
	}
}

// NovaRefreshMetrics are the Nova cache's own metrics, named and kept as
// the Ironic cache's are (RefreshMetrics, DatabaseHealth's
// last_refresh_error): how long its refreshes take, how many failed, and
// the kind of the latest error. Pass its Observe as
// novacache.Config.OnRefresh.
type NovaRefreshMetrics struct {
	duration prometheus.Histogram
	errors   prometheus.Counter

	mu   sync.Mutex
	kind string
}

var novaLastRefreshErrorDesc = prometheus.NewDesc(namespace+"_exporter_nova_last_refresh_error",
	"1 for the kind of error the latest refresh from Nova's databases failed with (timeout, connection, auth, schema, query, other; nova_api's, else the first failing cell's); all 0 when it worked.",
	[]string{"kind"}, nil)

// NewNovaRefreshMetrics registers the Nova refresh metrics with reg.
func NewNovaRefreshMetrics(reg prometheus.Registerer) (*NovaRefreshMetrics, error) {
	m := &NovaRefreshMetrics{
		duration: prometheus.NewHistogram(prometheus.HistogramOpts{
			Namespace: namespace, Subsystem: "exporter", Name: "nova_refresh_duration_seconds",
			Help:    "Time taken to read Nova's databases and compute the Nova answer.",
			Buckets: refreshBuckets,
		}),
		errors: prometheus.NewCounter(prometheus.CounterOpts{
			Namespace: namespace, Subsystem: "exporter", Name: "nova_refresh_errors_total",
			Help: "Refreshes from Nova's databases in which nova_api's read or a cell's failed.",
		}),
	}
	for _, c := range []prometheus.Collector{m.duration, m.errors, m} {
		if err := reg.Register(c); err != nil {
			return nil, fmt.Errorf("registering Nova refresh metrics: %w", err)
		}
	}
	return m, nil
}

// Observe records one refresh.
func (m *NovaRefreshMetrics) Observe(r novacache.Refresh) {
	m.duration.Observe(r.Duration.Seconds())
	if r.Err != nil {
		m.errors.Inc()
	}
	m.mu.Lock()
	m.kind = dbconn.ErrorKind(r.Err)
	m.mu.Unlock()
}

// Describe implements prometheus.Collector.
func (m *NovaRefreshMetrics) Describe(ch chan<- *prometheus.Desc) { ch <- novaLastRefreshErrorDesc }

// Collect implements prometheus.Collector: ironic_exporter_nova_last_refresh_error.
func (m *NovaRefreshMetrics) Collect(ch chan<- prometheus.Metric) {
	m.mu.Lock()
	kind := m.kind
	m.mu.Unlock()
	for _, k := range errorKinds {
		v := 0.0
		if k == kind {
			v = 1
		}
		ch <- prometheus.MustNewConstMetric(novaLastRefreshErrorDesc, prometheus.GaugeValue, v, k)
	}
}
