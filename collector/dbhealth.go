package collector

import (
	"context"

	"log/slog"
	"slices"
	"sync"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/ironic-conductor-exporter/ironic-conductor-exporter/db"
	"github.com/ironic-conductor-exporter/ironic-conductor-exporter/topology"
)

var (
	lastRefreshErrorDesc = prometheus.NewDesc(namespace+"_exporter_last_refresh_error",
		"1 for the kind of error the latest refresh from the database failed with (timeout, connection, auth, schema, query, other); all 0 when it worked.",
		[]string{"kind"}, nil)
	snapshotWarningsDesc = prometheus.NewDesc(namespace+"_exporter_snapshot_warnings",
		"Rows of the latest snapshot that were kept or skipped with a warning, by table and reason (bad_json, bad_timestamp, not_utf8, null, empty_hostname).",
		[]string{"table", "reason"}, nil)
)

// errorKinds are the values of the kind label, all always exported.
var errorKinds = []string{db.KindTimeout, db.KindConnection, db.KindAuth, db.KindSchema, db.KindQuery, db.KindOther}

// DatabaseHealth exports what the refreshes say about the database: the
// kind of the latest error and the row warnings of the latest snapshot,
// which it also logs once each time they change.
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
	h.kind = db.ErrorKind(r.Err)
	if r.Topology == nil || slices.Equal(h.topoLines, r.Topology.Warnings) {
		return
	}
	h.topoWarnings, h.topoLines = r.Topology.WarningCounts, slices.Clone(r.Topology.Warnings)
	for _, w := range r.Topology.Warnings {
		h.logger.Warn("snapshot row warning", "warning", w)
	}
}

// Source wraps src to see the warnings of each snapshot.
func (h *DatabaseHealth) Source(src topology.Source) topology.Source { return healthSource{src, h} }

type healthSource struct {
	topology.Source
	h *DatabaseHealth
}

// SnapshotSince keeps the change probe of a ProbingSource working through
// the wrapper (without it the cache would read every node at every
// refresh); a Source that cannot probe reads a full snapshot.
func (s healthSource) SnapshotSince(ctx context.Context, known *db.NodeProbe) (*db.Snapshot, error) {
	ps, ok := s.Source.(topology.ProbingSource)
	if !ok {
		return s.Snapshot(ctx)
	}
	snap, err := ps.SnapshotSince(ctx, known)
	if err == nil && snap != nil {
		s.h.snapshot(snap)
	}
	return snap, err
}

func (s healthSource) Snapshot(ctx context.Context) (*db.Snapshot, error) {
	snap, err := s.Source.Snapshot(ctx)
	if err == nil && snap != nil {
		s.h.snapshot(snap)
	}
	return snap, err
}

func (h *DatabaseHealth) snapshot(snap *db.Snapshot) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if slices.Equal(h.lines, snap.Warnings) {
		h.warnings = snap.WarningCounts
		return
	}
	h.warnings, h.lines = snap.WarningCounts, slices.Clone(snap.Warnings)
	if len(snap.Warnings) == 0 {
		h.logger.Info("snapshot has no row warnings any more")
		return
	}
	for _, w := range snap.Warnings {
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
