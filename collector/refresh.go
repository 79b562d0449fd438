package collector

import (
	"fmt"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/ironic-conductor-exporter/ironic-conductor-exporter/db"
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

// NewRefreshMetrics registers the refresh metrics with reg.
func NewRefreshMetrics(reg prometheus.Registerer) (*RefreshMetrics, error) {
	m := &RefreshMetrics{
		duration: prometheus.NewHistogram(prometheus.HistogramOpts{
			Namespace: namespace, Subsystem: "exporter", Name: "refresh_duration_seconds",
			Help:    "Time taken to read the database and rebuild the topology.",
			Buckets: []float64{.005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30},
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
