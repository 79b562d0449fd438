package collector

import (
	"fmt"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/ironic-conductor-exporter/ironic-conductor-exporter/topology"
)

// RefreshMetrics are the cache's own metrics: how long refreshes take and
// how many failed. Pass its Observe as topology.CacheConfig.OnRefresh.
type RefreshMetrics struct {
	duration prometheus.Histogram
	errors   prometheus.Counter
}

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
	}
	for _, c := range []prometheus.Collector{m.duration, m.errors} {
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
}
